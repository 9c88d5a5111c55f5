import type { ErrorCode } from '../../error-codes.js';
import { ApiError } from '../../errors.js';

/** A token endpoint's refusal (RFC 6749 5.2, RFC 8628 3.5): 400 with `error` and `error_description`. Services throw it; it names no transport. */
export const oauthError = (code: ErrorCode, message: string): ApiError => new ApiError(400, code, message, { oauth: true });
