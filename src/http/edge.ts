import { randomUUID } from 'node:crypto';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
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
  // A failed query carries its bound values; they may hold what a request sent.
  'err.parameters',
  'error.parameters',
  ...[
    'access_token', 'refresh_token', 'id_token', 'device_code', 'user_code', 'code', 'code_verifier', 'key',
    'password', 'secret', 'client_secret', 'token', 'assertion', 'ticket', 'link',
  ].flatMap((field) => [`body.${field}`, `req.body.${field}`, `*.${field}`]),
];

/** Query parameters that carry secrets through a browser's address bar (sign-in answers, user codes). */
const SECRET_QUERY_PARAMETERS = new Set(['code', 'state', 'user_code', 'access_token', 'id_token', 'token', 'code_verifier', 'link']);

/** The service's own secrets by their shape (`platform_iv_…` in an invitation's path). */
const PLATFORM_SECRET = /platform_([a-z]{2})_[A-Za-z0-9_-]+/g;

/** A request URL as logs may show it: the service's secrets in its path and values of secret-bearing query parameters replaced. */
export function redactUrl(raw: string): string {
  const url = raw.replace(PLATFORM_SECRET, 'platform_$1_[Redacted]');
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

/**
 * One log line per request, when it finishes: `debug` for successes, `info` for refusals,
 * `error` for failures. The entry (and its redaction) is only built when its level is enabled,
 * so a busy service logging at `info` spends nothing on the requests that went well.
 */
export function requestLogger(logger: Logger): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    req.log = logger;
    res.once('finish', () => {
      const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'debug';
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          req: {
            id: req.context?.requestId,
            method: req.method,
            url: redactUrl(req.originalUrl),
            headers: req.headers,
            remoteAddress: req.socket.remoteAddress,
          },
          res: { statusCode: res.statusCode },
          responseTime: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        },
        'request completed',
      );
    });
    next();
  };
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
      logger.error({ err: error, requestId: req.context?.requestId }, 'unexpected failure');
      apiError = new ApiError(500, 'internal_error', 'something went wrong on our side; quote the X-Request-Id when reporting it');
    }
    if (res.headersSent) return;
    res.status(apiError.status).set(apiError.headers).json(apiError.toJSON());
  };
}
