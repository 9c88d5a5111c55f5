import { randomUUID } from 'node:crypto';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { ApiError, invalidRequest, notFound, payloadTooLarge } from './errors.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** `X-Request-Id`: a well-formed one from the caller is kept, anything else replaced; always echoed. */
export function requestId(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    req.context = { requestId: id, tenant: undefined, principal: undefined };
    res.setHeader('X-Request-Id', id);
    next();
  };
}

/**
 * Request logs. pino's own redaction removes credentials wherever they would appear: headers
 * (`Authorization`, `DPoP`, cookies) and token-like fields of any body or error object logged.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.dpop',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  ...[
    'access_token', 'refresh_token', 'id_token', 'device_code', 'user_code', 'code', 'code_verifier', 'key',
    'password', 'secret', 'client_secret', 'token', 'assertion', 'ticket',
  ].flatMap((field) => [`body.${field}`, `req.body.${field}`, `*.${field}`]),
];

/** Query parameters that carry secrets through a browser's address bar (sign-in answers, user codes). */
const SECRET_QUERY_PARAMETERS = new Set(['code', 'state', 'user_code', 'access_token', 'id_token', 'token', 'code_verifier']);

/** A request URL as logs may show it: values of secret-bearing query parameters replaced. */
export function redactUrl(url: string): string {
  const index = url.indexOf('?');
  if (index < 0) return url;
  const query = url
    .slice(index + 1)
    .split('&')
    .map((pair) => {
      const name = pair.split('=')[0] ?? '';
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // A malformed name is logged as it came.
      }
      return SECRET_QUERY_PARAMETERS.has(decoded.toLowerCase()) ? `${name}=[Redacted]` : pair;
    });
  return `${url.slice(0, index)}?${query.join('&')}`;
}

export function requestLogger(logger: Logger): RequestHandler {
  return pinoHttp({
    logger,
    genReqId: (req) => (req as Request).context?.requestId ?? randomUUID(),
    customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'debug'),
    serializers: {
      req: (req: { id: string; method: string; url: string; headers: Record<string, unknown>; remoteAddress?: string }) => ({
        id: req.id,
        method: req.method,
        url: redactUrl(req.url),
        headers: req.headers,
        remoteAddress: req.remoteAddress,
      }),
    },
    // The error handler already logs failures with their stack; avoid a second copy.
    customAttributeKeys: { err: 'error' },
  }) as unknown as RequestHandler;
}

export function notFoundHandler(): RequestHandler {
  return (_req: Request, _res: Response, next: NextFunction) => next(notFound('no such route'));
}

interface BodyParserError extends Error {
  type?: string;
  status?: number;
  limit?: number;
}

/** The last layer: every error becomes the spec's error body; nothing internal leaks. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    let apiError: ApiError;
    const parserError = error as BodyParserError;
    if (error instanceof ApiError) {
      apiError = error;
    } else if (parserError?.type === 'entity.too.large') {
      apiError = payloadTooLarge(parserError.limit ?? 0);
    } else if (parserError?.type === 'parameters.too.many') {
      apiError = new ApiError(413, 'payload_too_large', 'the form body has too many fields');
    } else if (parserError?.type === 'entity.parse.failed') {
      apiError = invalidRequest('the request body is not valid JSON', { field: 'body' });
    } else if (parserError?.type === 'encoding.unsupported' || parserError?.type === 'charset.unsupported') {
      apiError = new ApiError(415, 'unsupported_media_type', 'the request body encoding is not supported');
    } else if (parserError?.type === 'request.aborted') {
      apiError = new ApiError(400, 'invalid_request', 'the request was aborted');
    } else {
      (req.log ?? logger).error({ err: error, requestId: req.context?.requestId }, 'unexpected failure');
      apiError = new ApiError(500, 'internal_error', 'something went wrong on our side; quote the X-Request-Id when reporting it');
    }
    if (res.headersSent) return;
    res.status(apiError.status).set(apiError.headers).json(apiError.toJSON());
  };
}
