import type { Deployment } from '../../deployment.js';
import type { DpopVerifier } from '../../auth/dpop.js';
import { oauthError } from '../oauth/errors.js';
import { NO_STORE, noStoreHeader, oauthErrorAnswer, verifyTokenEndpointProof } from '../oauth/token-endpoint.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import { absoluteUrl } from '../../http/origin.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import type { DeviceCodeService } from './device-code.js';
import { requireShownAsIs } from './requester-text.js';
import {
  DEVICE_CODE_GRANT_TYPE,
  deviceCodeAnswerSchema,
  deviceCodeRequestSchema,
  deviceTokenRequestSchema,
  tokenAnswerSchema,
} from './schemas.js';

/**
 * The device authorization grant (RFC 8628) as the spec's relay routes (4.6): a device asks for
 * a code, a person approves it in the console, the device polls for its tokens.
 */

/** Offices put many devices behind one address, and all of them may enrol on the same morning. */
export const DEVICE_CODE_RATE_LIMIT: RateLimitRule = { name: 'device-code-address', by: 'address', limit: 60, windowMs: 60_000 };
/** A device polls every 5 seconds (12 a minute): room for 50 polling devices behind one address. */
export const DEVICE_TOKEN_RATE_LIMIT: RateLimitRule = { name: 'device-token-address', by: 'address', limit: 600, windowMs: 60_000 };

/** RFC 8628 3.1 clients send forms; the spec's clients send JSON. */
const FORM_OR_JSON = ['application/json', 'application/x-www-form-urlencoded'] as const;


export interface DeviceCodeRouteOptions {
  deviceCodes: DeviceCodeService;
  dpop: DpopVerifier;
  config: { deployment: Deployment };
}

export function deviceCodeRoutes({ deviceCodes, dpop, config }: DeviceCodeRouteOptions): RouteDefinition[] {
  return [
    defineRoute({
      method: 'post',
      path: '/relay/v1/device/code',
      operationId: 'startDeviceCode',
      permission: 'public',
      summary: 'Ask to enrol a device (device-code flow, RFC 8628)',
      description:
        'Answers a `device_code` to poll with and a `user_code` for a person to approve at `verification_uri`. ' +
        'Self-hosted: the code belongs to the organisation at this host name; Cloud: to the organisation of the person who approves it. ' +
        'With `dpop_jkt` the tokens are bound to that key and every poll must carry a DPoP proof signed by it. ' +
        'The name, the workspace and the User-Agent are shown to the person approving as the device gave them: one holding a control, format (bidirectional, zero-width), private-use or blank character is refused, 400 `invalid_request` naming the field. ' +
        `Rate limited per network address (${DEVICE_CODE_RATE_LIMIT.limit} a minute).`,
      tag: 'Devices',
      tenant: true,
      auth: 'public',
      rateLimits: [DEVICE_CODE_RATE_LIMIT],
      mediaTypes: FORM_OR_JSON,
      schemas: { body: deviceCodeRequestSchema },
      responses: {
        200: { description: 'The codes, where to approve them, and how often to poll.', schema: deviceCodeAnswerSchema, headers: noStoreHeader },
      },
      handler: async ({ body, tenant, req }) => {
        requireShownAsIs(body.name, 'body.name');
        requireShownAsIs(body.workspaceId, 'body.workspaceId');
        requireShownAsIs(req.get('user-agent'), 'headers.user-agent');
        const started = await deviceCodes.start({
          organisationId: config.deployment === 'cloud' ? null : tenant!.id,
          workspaceId: body.workspaceId,
          name: body.name.trim(),
          kind: body.kind ?? 'workbench',
          dpopJkt: body.dpop_jkt,
          requesterAddress: req.ip,
          requesterUserAgent: req.get('user-agent'),
        });
        // Cloud: the one public address; self-hosted: the organisation's own host name.
        const uri = absoluteUrl(req, '/device');
        return {
          status: 200,
          headers: NO_STORE,
          body: {
            device_code: started.deviceCode,
            user_code: started.userCode,
            verification_uri: uri,
            verification_uri_complete: `${uri}?user_code=${encodeURIComponent(started.userCode)}`,
            interval: started.interval,
            expires_in: started.expiresIn,
          },
        };
      },
    }),

    defineRoute({
      method: 'post',
      path: '/relay/v1/device/token',
      operationId: 'pollDeviceToken',
      permission: 'public',
      summary: 'Poll for the tokens of an approved device code',
      description:
        'Poll every `interval` seconds. A code asked for with `dpop_jkt` needs a `DPoP` proof header signed by that key ' +
        '(`htm` POST, `htu` this URL, no `ath`); a proof sent with an unbound code binds the tokens to its key. ' +
        'Refusals are OAuth errors (RFC 6749 5.2) with `error_description`, all 400: ' +
        '`authorization_pending` (not approved yet), `slow_down` (polled too fast: wait 5 seconds longer from now on), ' +
        '`expired_token` (ask for a new code), `access_denied` (denied, or the approver may no longer approve it), ' +
        '`invalid_grant` (unknown code, or already exchanged: the tokens it issued are then revoked), ' +
        '`invalid_dpop_proof` (proof missing or not valid for the bound key), `use_dpop_nonce` (retry with the nonce of the `DPoP-Nonce` header), ' +
        '`unsupported_grant_type` (a `grant_type` other than the device-code grant), `invalid_request` (malformed body, naming the field). ' +
        `Rate limited per network address (${DEVICE_TOKEN_RATE_LIMIT.limit} a minute).`,
      tag: 'Devices',
      tenant: true,
      auth: 'public',
      rateLimits: [DEVICE_TOKEN_RATE_LIMIT],
      mediaTypes: FORM_OR_JSON,
      headers: {
        DPoP: {
          description: 'DPoP proof (RFC 9449) signed by the key the code is bound to; required when the code was asked for with `dpop_jkt`.',
          schema: { type: 'string' },
        },
      },
      schemas: { body: deviceTokenRequestSchema },
      responses: {
        200: { description: 'The device is enrolled: its tokens (`token_type` `DPoP` when bound to a key).', schema: tokenAnswerSchema, headers: noStoreHeader },
        400: oauthErrorAnswer('not approved yet, polled too fast, an expired, denied, unknown or already exchanged code, a missing or wrong proof, another grant type, a malformed body.'),
      },
      errors: {
        400: [
          'authorization_pending',
          'slow_down',
          'expired_token',
          'access_denied',
          'invalid_grant',
          'invalid_dpop_proof',
          'use_dpop_nonce',
          'unsupported_grant_type',
          'invalid_request',
        ],
      },
      handler: async ({ body, tenant, req }) => {
        if (body.grant_type !== undefined && body.grant_type !== DEVICE_CODE_GRANT_TYPE) {
          throw oauthError('unsupported_grant_type', `this endpoint only serves the grant type ${DEVICE_CODE_GRANT_TYPE}`);
        }
        const record = await deviceCodes.findByDeviceCode(body.device_code);
        // Self-hosted, a code is redeemed only at the host of the organisation it was asked at.
        if (config.deployment === 'self-hosted' && record.organisationId !== tenant?.id) {
          throw oauthError('invalid_grant', 'the device code is not valid');
        }
        // The proof comes before anything about the code's state: without the key, a stolen
        // bound code tells its holder nothing, and cannot end the tokens it already issued.
        const proofJkt =
          record.dpopJkt !== null || req.headers.dpop !== undefined
            ? await verifyTokenEndpointProof(dpop, req, record.dpopJkt ?? undefined)
            : undefined;
        const answer = await deviceCodes.poll(record, proofJkt);
        return { status: 200, headers: NO_STORE, body: answer };
      },
    }),
  ];
}
