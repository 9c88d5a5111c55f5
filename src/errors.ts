/**
 * One error type for every refusal the API makes. Services, policies and adapters throw these;
 * the edge turns them into the spec's error body (2.1): `{ error, message }`, plus
 * `error_description` on OAuth token endpoints (src/http/errors.ts writes them). Transport-free:
 * nothing here knows HTTP beyond the status number it carries. A code is an `ErrorCode` of the
 * catalogue (error-codes.ts): a misspelt one does not compile.
 */

import type { ErrorCode } from './error-codes.js';

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
    readonly code: ErrorCode,
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

export const conflict = (code: ErrorCode, message: string, extra?: Record<string, unknown>): ApiError =>
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

