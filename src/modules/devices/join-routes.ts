import { EXAMPLE } from '../../http/examples.js';
import type { DpopVerifier } from '../../auth/dpop.js';
import { invalidRequest } from '../../errors.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import type { JoinKeyService } from './join-keys.js';
import { requireShownAsIs } from './requester-text.js';
import { tokenAnswerSchema } from './schemas.js';
import { dpopProofHeader, NO_STORE, noStoreHeader, oauthErrorAnswer, verifyTokenEndpointProof } from '../oauth/token-endpoint.js';

/**
 * Joining with a key (spec 3, 4.6): a node presents a join key an owner or admin created and is
 * enrolled at once, its approver the key's creator.
 */

/** A fleet rolled out behind one address joins a node or two a second at most. */
export const DEVICE_JOIN_RATE_LIMIT: RateLimitRule = { name: 'device-join-address', by: 'address', limit: 60, windowMs: 60_000 };

/** Fields beyond those of spec 2.11 are accepted but not kept; this bounds what a node may send. */
export const MANIFEST_MAX_BYTES = 16 * 1024;
const MANIFEST_MAX_PROPERTIES = 64;
/** A join body is a key, a name and a small manifest: tighter JSON limits than other bodies. */
const JOIN_JSON_LIMITS = { maxDepth: 16, maxKeys: 1_000, maxStringLength: MANIFEST_MAX_BYTES } as const;

/** RFC 7638 SHA-256 thumbprint, base64url without padding: 32 bytes are 43 characters. */
const JWK_THUMBPRINT = '^[A-Za-z0-9_-]{43}$';

export const deviceManifestSchema = {
  type: 'object',
  description:
    'Device manifest (spec 2.11). Further fields are allowed (at most 64 top-level fields, 16 KiB in all) and are not kept.',
  required: ['schemaVersion', 'nodeId', 'name', 'kind', 'owner'],
  properties: {
    schemaVersion: { const: 1, description: 'Manifest schema version: `1`.' },
    nodeId: { type: 'string', minLength: 1, maxLength: 200, pattern: '^\\S(.*\\S)?$', description: "The node's own id; kept on the device." },
    name: { type: 'string', minLength: 1, maxLength: 200, description: "The node's name in its manifest." },
    kind: { const: 'node', description: 'What joins: `node` (a join key enrols nodes only).' },
    owner: {
      type: 'object',
      description: 'Who owns the node.',
      required: ['type'],
      properties: { type: { const: 'user', description: 'Owner type: `user`.' } },
      maxProperties: 16,
    },
  },
  maxProperties: MANIFEST_MAX_PROPERTIES,
} as const;

const joinRequestSchema = {
  type: 'object',
  description: 'A node joins with a join key (spec 4.6).',
  required: ['key', 'manifest', 'name'],
  properties: {
    key: { type: 'string', minLength: 1, maxLength: 200, description: 'The join key (`platform_jk_…`) an owner or admin created.' },
    manifest: deviceManifestSchema,
    name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S', description: 'The device name shown to administrators.' },
    dpop_jkt: {
      type: 'string',
      pattern: JWK_THUMBPRINT,
      description:
        'Extension: RFC 7638 SHA-256 thumbprint of the key to bind the tokens to. The request must then carry a DPoP proof signed by that key.',
    },
  },
  additionalProperties: false,
  examples: [
    {
      key: EXAMPLE.joinKey,
      name: 'build-runner-3',
      manifest: { schemaVersion: 1, nodeId: 'node-7f3a9c', name: 'build-runner-3', kind: 'node', owner: { type: 'user' }, os: 'linux', arch: 'x64' },
    },
  ],
} as const;

export function joinRoutes(options: { joinKeys: JoinKeyService; dpop: DpopVerifier }): RouteDefinition[] {
  const { joinKeys, dpop } = options;
  return [
    defineRoute({
      method: 'post',
      path: '/relay/v1/device/join',
      operationId: 'joinWithKey',
      permission: 'public',
      summary: 'Enrol a node with a join key',
      description:
        "Enrols a node at once; the key's creator is recorded as its approver and must still be an owner or admin of the organisation. " +
        'A single-use key works once, even when the node it enrolled is later revoked; a reusable key works until it expires or is revoked. ' +
        'A request that carries a DPoP proof (RFC 9449; `htm` POST, `htu` this URL) gets tokens bound to the proof\'s key (`token_type` `DPoP`); ' +
        'with `dpop_jkt` the proof is required and must be signed by that key. A refused proof leaves the key unused. ' +
        'Refusals are OAuth errors (RFC 6749 5.2), all 400: `invalid_grant` (unknown, used, expired or revoked key, a key of another organisation, ' +
        'or a creator who may no longer enrol nodes), `invalid_dpop_proof`, `use_dpop_nonce` (retry with the nonce of the `DPoP-Nonce` header), ' +
        '`invalid_request` (malformed body or manifest, naming the field; also a name or node id holding a control, format (bidirectional, zero-width), private-use or blank character, which administrators would not see as it is). ' +
        `Rate limited per network address (${DEVICE_JOIN_RATE_LIMIT.limit} a minute).`,
      tag: 'Devices',
      tenant: true,
      auth: 'public',
      rateLimits: [DEVICE_JOIN_RATE_LIMIT],
      jsonLimits: JOIN_JSON_LIMITS,
      headers: dpopProofHeader('required with `dpop_jkt`; without it, a proof binds the tokens to its key'),
      schemas: { body: joinRequestSchema },
      responses: {
        200: { description: 'The node is enrolled: its tokens.', schema: tokenAnswerSchema, headers: noStoreHeader },
        400: oauthErrorAnswer('a key that cannot enrol (unknown, used, expired, revoked, another organisation\'s, or its creator may no longer enrol nodes), a missing or wrong proof, a malformed body or manifest.'),
      },
      errors: { 400: ['invalid_grant', 'invalid_dpop_proof', 'use_dpop_nonce', 'invalid_request'] },
      handler: async ({ body, req, tenant }) => {
        if (Buffer.byteLength(JSON.stringify(body.manifest), 'utf8') > MANIFEST_MAX_BYTES) {
          throw invalidRequest(`body.manifest must be at most ${MANIFEST_MAX_BYTES} bytes`, { field: 'body.manifest' });
        }
        // Shown to administrators as the node gave them.
        requireShownAsIs(body.name, 'body.name');
        requireShownAsIs(body.manifest.nodeId, 'body.manifest.nodeId');
        requireShownAsIs(body.manifest.name, 'body.manifest.name');
        // Self-hosted: the key must be one of this host's organisation. Cloud: the key decides.
        const key = await joinKeys.usableKey(body.key, tenant?.id);
        const proofSent = req.headers.dpop !== undefined;
        const jkt = body.dpop_jkt !== undefined || proofSent ? await verifyTokenEndpointProof(dpop, req, body.dpop_jkt) : undefined;
        const answer = await joinKeys.enrol(key, { name: body.name.trim(), nodeId: body.manifest.nodeId, dpopJkt: jkt });
        return { status: 200, headers: NO_STORE, body: answer };
      },
    }),
  ];
}
