/**
 * The HTTP side of refusals: writing JSON answers, and reading a library's 4xx error as the
 * API's refusal. The error type itself (`ApiError`) is transport-free, in src/errors.ts, so
 * services, policies and adapters throw it without importing HTTP. An error of a library that
 * carries a 4xx status (body parsing and decompression, path parameter decoding) keeps that
 * status (`clientErrorOf`); anything else that reaches the edge is a 500 `internal_error` with no
 * detail.
 */

import type { Response } from 'express';
import type { ErrorCode } from '../error-codes.js';
import { ApiError } from '../errors.js';

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

/**
 * The code of each 4xx status an error of a library may carry (section 7 style); any other 4xx
 * status keeps its number with `invalid_request` (the request could not be read). (Node answers a
 * late head, an over-long URI or head itself, before any of this runs.)
 */
const CODE_BY_STATUS: Partial<Record<number, ErrorCode>> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'too_many_requests',
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
