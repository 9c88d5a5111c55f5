/**
 * One error type for every refusal the API makes. Services throw these; the edge turns them
 * into the spec's error body (2.1): `{ error, message }`, plus `error_description` on OAuth
 * token endpoints. An error of a library that carries a 4xx status (body parsing and
 * decompression, path parameter decoding) keeps that status (`clientErrorOf`); anything else
 * that reaches the edge is a 500 `internal_error` with no detail.
 */

import type { Response } from 'express';

/**
 * Writes a JSON answer with exactly this status. Not `res.json()`: Express would turn any 2xx
 * answer to a GET with `If-None-Match: *` into a bodiless 304 (its `req.fresh`), an answer the
 * route never declared. The operations that honour conditional requests answer 304 themselves.
 */
export function sendJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.status(status).set('Content-Type', 'application/json; charset=utf-8').set('Content-Length', String(Buffer.byteLength(text, 'utf8')));
  res.end(text);
}

/** `sendJson` for a body serialised beforehand (built once, sent many times). */
export function sendSerialisedJson(res: Response, status: number, body: Buffer): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

export interface ErrorBody {
  error: string;
  message?: string;
  error_description?: string;
  [extra: string]: unknown;
}

export class ApiError extends Error {
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options: { headers?: Record<string, string>; extra?: Record<string, unknown>; oauth?: boolean } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.headers = options.headers ?? {};
    this.extra = options.extra ?? {};
    this.oauth = options.oauth ?? false;
  }

  /** OAuth endpoints (RFC 6749 5.2, RFC 8628 3.5) also carry `error_description`. */
  readonly oauth: boolean;

  toJSON(): ErrorBody {
    const body: ErrorBody = { error: this.code, message: this.message, ...this.extra };
    if (this.oauth) body.error_description = this.message;
    return body;
  }
}

export const invalidRequest = (message: string, extra?: Record<string, unknown>): ApiError =>
  new ApiError(400, 'invalid_request', message, extra ? { extra } : {});

export const unauthorized = (message = 'a valid access token is required', wwwAuthenticate?: string): ApiError =>
  new ApiError(401, 'unauthorized', message, {
    headers: { 'WWW-Authenticate': wwwAuthenticate ?? 'Bearer realm="platform"' },
  });

export const forbidden = (message = 'your role does not allow this'): ApiError => new ApiError(403, 'forbidden', message);

export const notFound = (message = 'not found'): ApiError => new ApiError(404, 'not_found', message);

export const unknownTenant = (): ApiError =>
  new ApiError(404, 'unknown_tenant', 'no organisation is served at this host name');

export const conflict = (code: string, message: string, extra?: Record<string, unknown>): ApiError =>
  new ApiError(409, code, message, extra ? { extra } : {});

export const payloadTooLarge = (limitBytes: number): ApiError =>
  new ApiError(413, 'payload_too_large', `the request body is larger than ${limitBytes} bytes`);

export const unsupportedMediaType = (accepted: readonly string[]): ApiError =>
  new ApiError(415, 'unsupported_media_type', `the request body must be ${accepted.join(' or ')}`);

export const methodNotAllowed = (allowed: readonly string[]): ApiError =>
  new ApiError(405, 'method_not_allowed', 'this method is not allowed on this path', {
    headers: { Allow: allowed.join(', ') },
  });

export const notReady = (message: string, extra: Record<string, unknown>): ApiError =>
  new ApiError(503, 'not_ready', message, { extra });

/**
 * A dependency (the database, Redis) cannot answer just now: refuse (never skip a security check,
 * never a 500), and say when to try again. The one code of every dependency outage.
 */
export const unavailable = (what: string): ApiError =>
  new ApiError(503, 'unavailable', `${what} is not reachable just now; try again shortly`, {
    headers: { 'Retry-After': '1' },
  });

/**
 * The database's schema is older than this build (migrations pending, or a table missing): the
 * same refusal as an outage, with a longer wait, since an upgrade takes longer than a reconnect.
 */
export const schemaNotMigrated = (): ApiError =>
  new ApiError(503, 'unavailable', 'the service is being upgraded (its database migrations have not run yet); try again shortly', {
    headers: { 'Retry-After': '5' },
  });

/** The code of each 4xx status an error of a library may carry (section 7 style). */
const CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  411: 'length_required',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  429: 'too_many_requests',
  431: 'request_header_fields_too_large',
};

interface StatusCarrier {
  status?: unknown;
  statusCode?: unknown;
  /** body-parser's kind of failure (`entity.parse.failed`, `encoding.unsupported`, …). */
  type?: unknown;
  /** zlib's error code (`Z_DATA_ERROR`, `ERR__ERROR_FORMAT_PADDING_1` for brotli, …). */
  code?: unknown;
  /** body-parser's limit, bytes, on `entity.too.large`. */
  limit?: unknown;
}

/** Short, fixed messages: a library's own message may quote what the client sent. */
function messageFor(status: number, carrier: StatusCarrier, error: unknown): { message: string; field?: string } {
  switch (carrier.type) {
    case 'entity.parse.failed':
      return { message: 'the request body is not valid JSON or form data', field: 'body' };
    case 'entity.too.large':
      return { message: typeof carrier.limit === 'number' ? `the request body is larger than ${carrier.limit} bytes` : 'the request body is too large' };
    case 'parameters.too.many':
      return { message: 'the form body has too many fields' };
    case 'encoding.unsupported':
      return { message: 'the request body\'s Content-Encoding is not supported (gzip, deflate, br or none)' };
    case 'charset.unsupported':
      return { message: 'the request body\'s charset is not supported (utf-8)' };
    case 'request.aborted':
      return { message: 'the request was aborted before its body arrived' };
    case 'request.size.invalid':
      return { message: 'the request body is not as long as its Content-Length says' };
    default:
  }
  if (error instanceof URIError) return { message: 'a path parameter is not valid percent-encoding', field: 'params' };
  if (typeof carrier.code === 'string' && (carrier.code.startsWith('Z_') || carrier.code.startsWith('ERR__'))) {
    return { message: 'the request body could not be decompressed', field: 'body' };
  }
  return { message: status === 400 ? 'the request could not be read' : 'the request was refused' };
}

/**
 * An error that carries a 4xx status (`status` or `statusCode`, as http-errors, body-parser and
 * Express's router set them) as the API's refusal with that status; undefined for anything else.
 */
export function clientErrorOf(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error.status < 500 ? error : undefined;
  if (error === null || typeof error !== 'object') return undefined;
  const carrier = error as StatusCarrier;
  const status = typeof carrier.status === 'number' ? carrier.status : carrier.statusCode;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 499) return undefined;
  const { message, field } = messageFor(status, carrier, error);
  return new ApiError(status, CODE_BY_STATUS[status] ?? 'invalid_request', message, field ? { extra: { field } } : {});
}
