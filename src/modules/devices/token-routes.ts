import { EXAMPLE } from '../../http/examples.js';
import { DpopError, type DpopVerifier } from '../../auth/dpop.js';
import { ApiError } from '../../errors.js';
import { dpopProofHeader, NO_STORE, noStoreHeader, oauthErrorAnswer, proofRefusal, verifyTokenEndpointProof } from '../oauth/token-endpoint.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { tokenAnswerSchema } from './schemas.js';
import type { DeviceTokenService } from './tokens.js';

/**
 * The device refresh endpoint (spec 4.6, RFC 6749 6): a refresh token for a new pair, rotated on
 * every use. A device bound to a key (DPoP) proves that key on every refresh (RFC 9449 5).
 */

/** An access token lives an hour by default: a few refreshes a minute cover a large office. */
export const DEVICE_REFRESH_RATE_LIMIT: RateLimitRule = { name: 'device-refresh-address', by: 'address', limit: 120, windowMs: 60_000 };

export const REFRESH_GRANT_TYPE = 'refresh_token';

const refreshRequestSchema = {
  type: 'object',
  description: 'A refresh (spec 4.6). JSON or `application/x-www-form-urlencoded` (RFC 6749 6), with the same fields.',
  required: ['refresh_token'],
  properties: {
    refresh_token: { type: 'string', minLength: 1, maxLength: 200, description: 'The refresh token (`platform_rt_…`) of the current pair.' },
    grant_type: {
      type: 'string',
      maxLength: 200,
      description: `Optional; when sent it must be \`${REFRESH_GRANT_TYPE}\` (otherwise \`unsupported_grant_type\`).`,
    },
    client_id: {
      type: 'string',
      maxLength: 200,
      description: 'Accepted for OAuth clients that always send one; this service registers no clients and does not read it.',
    },
  },
  additionalProperties: false,
  examples: [{ grant_type: REFRESH_GRANT_TYPE, refresh_token: EXAMPLE.refreshToken }],
} as const;

export function tokenRoutes(options: { tokens: DeviceTokenService; dpop: DpopVerifier }): RouteDefinition[] {
  const { tokens, dpop } = options;
  return [
    defineRoute({
      method: 'post',
      path: '/relay/v1/token',
      operationId: 'refreshDeviceToken',
      permission: 'public',
      summary: 'Exchange a device refresh token for a new pair',
      description:
        'Every use rotates the refresh token. Presenting a replaced refresh token again ends every token of the device ' +
        '(it must enrol again), except within a few seconds (`DEVICE_REFRESH_GRACE_SECONDS`) of its exchange, when a concurrent ' +
        'refresh of the same token by the same device gets the same new pair. ' +
        'A device bound to a key must send a DPoP proof signed by that key; a proof sent for an unbound device is refused, ' +
        'since binding later would let whoever holds a stolen refresh token lock the device out. ' +
        'Refusals are OAuth errors (RFC 6749 5.2), all 400: `invalid_grant` (unknown, used, expired or revoked refresh token), ' +
        '`invalid_dpop_proof` (proof missing, not valid, or not by the bound key), `use_dpop_nonce` (retry with the nonce of the `DPoP-Nonce` header), ' +
        '`unsupported_grant_type`, `invalid_request` (malformed body, naming the field). ' +
        `Rate limited per network address (${DEVICE_REFRESH_RATE_LIMIT.limit} a minute).`,
      tag: 'Devices',
      tenant: true,
      auth: 'public',
      rateLimits: [DEVICE_REFRESH_RATE_LIMIT],
      mediaTypes: ['application/json', 'application/x-www-form-urlencoded'],
      headers: dpopProofHeader('required when the device is bound to a key, refused otherwise'),
      schemas: { body: refreshRequestSchema },
      responses: {
        200: { description: 'A new pair (`token_type` `DPoP` when bound to a key).', schema: tokenAnswerSchema, headers: noStoreHeader },
        400: oauthErrorAnswer('a wrong, used, expired or revoked refresh token, a missing or wrong proof, a grant type other than `refresh_token`, a malformed body.'),
      },
      errors: { 400: ['invalid_grant', 'invalid_dpop_proof', 'use_dpop_nonce', 'unsupported_grant_type', 'invalid_request'] },
      handler: async ({ body, req, tenant }) => {
        if (body.grant_type !== undefined && body.grant_type !== REFRESH_GRANT_TYPE) {
          throw new ApiError(400, 'unsupported_grant_type', `this endpoint only serves the grant type ${REFRESH_GRANT_TYPE}`, { oauth: true });
        }
        // Self-hosted: only this host's organisation's devices refresh here (Cloud has no tenant here).
        const device = await tokens.deviceOfRefreshToken(body.refresh_token, tenant?.id);
        // The proof comes before anything about the token's state: without the key, a stolen
        // bound refresh token tells its holder nothing and cannot end the device's tokens.
        if (device.dpopJkt !== null) await verifyTokenEndpointProof(dpop, req, device.dpopJkt);
        else if (req.headers.dpop !== undefined) {
          throw proofRefusal(new DpopError('invalid_dpop_proof', 'this device is not bound to a key; send the refresh without a DPoP proof'));
        }
        const answer = await tokens.refresh(body.refresh_token);
        return { status: 200, headers: NO_STORE, body: answer };
      },
    }),
  ];
}
