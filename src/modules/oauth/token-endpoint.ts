import type { Request } from 'express';
import { DpopError, requestHtu, type DpopVerifier } from '../../auth/dpop.js';
import { ApiError } from '../../errors.js';

/**
 * What the token endpoints share, sign-in's (`/auth/v1/token`) and the devices' (device-code
 * poll, join, refresh): their OAuth error answers (the errors themselves are in errors.ts),
 * `Cache-Control: no-store`, and DPoP proofs checked as a token endpoint checks them. Each
 * module serves its own grants on its own path; neither imports the other.
 */

export const NO_STORE = { 'Cache-Control': 'no-store' };

export const noStoreHeader = { 'Cache-Control': { description: '`no-store`: the answer holds secrets.', schema: { type: 'string' } } } as const;

export const dpopProofHeader = (when: string) =>
  ({ DPoP: { description: `DPoP proof (RFC 9449; \`htm\` POST, \`htu\` this URL, no \`ath\`), ${when}.`, schema: { type: 'string' } } }) as const;

/** RFC 9449 5 and 8: at a token endpoint a refused proof is a 400 OAuth error, never a 401. */
export function proofRefusal(error: DpopError): ApiError {
  return new ApiError(400, error.code, error.message, { oauth: true, headers: error.nonce ? { 'DPoP-Nonce': error.nonce } : {} });
}

/** Verifies the request's DPoP proof for a token endpoint; the thumbprint of its key. */
export async function verifyTokenEndpointProof(dpop: DpopVerifier, req: Request, boundJkt: string | undefined): Promise<string> {
  const proof = req.headers.dpop;
  try {
    const { jkt } = await dpop.verify(typeof proof === 'string' ? proof : undefined, { method: 'POST', url: requestHtu(req), boundJkt });
    return jkt;
  } catch (error) {
    if (error instanceof DpopError) throw proofRefusal(error);
    throw error;
  }
}

/** The 400 answer of a token endpoint: an OAuth error (RFC 6749 5.2, with `error_description`)
 * in the spec's error body; its codes are the route's `errors[400]`. */
export function oauthErrorAnswer(description: string) {
  return {
    description: `OAuth error (RFC 6749 5.2) with \`error_description\`: ${description}`,
    headers: { 'DPoP-Nonce': { description: 'With `use_dpop_nonce`: the nonce the next proof must carry.', schema: { type: 'string' } } },
  } as const;
}
