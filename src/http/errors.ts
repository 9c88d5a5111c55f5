/**
 * One error type for every refusal the API makes. Services throw these; the edge turns them
 * into the spec's error body (2.1): `{ error, message }`, plus `error_description` on OAuth
 * token endpoints. Anything else that reaches the edge is a 500 `internal_error` with no detail.
 */

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

/** A shared dependency (Redis) did not answer: refuse rather than skip a security check. */
export const temporarilyUnavailable = (what: string): ApiError =>
  new ApiError(503, 'temporarily_unavailable', `${what} is not reachable just now; try again shortly`, {
    headers: { 'Retry-After': '1' },
  });
