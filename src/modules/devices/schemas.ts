import { EXAMPLE } from '../../http/examples.js';
import { named, timestampSchema } from '../../http/schema.js';
import { USER_CODE_ALPHABET } from './device-code.js';

/** The device token answer (spec 2.10), shared by the poll, join and refresh operations. */
export const tokenAnswerSchema = named('DeviceTokenAnswer', {
  type: 'object',
  description: 'Device token answer (spec 2.10). Only hashes of the tokens are stored by the service.',
  required: ['access_token', 'refresh_token', 'expires_in', 'token_type', 'device_id', 'scope'],
  properties: {
    access_token: { type: 'string', pattern: '^platform_at_', description: 'Access token, prefix `platform_at_`.' },
    refresh_token: { type: 'string', pattern: '^platform_rt_', description: 'Refresh token, prefix `platform_rt_`; rotates on every use.' },
    expires_in: { type: 'integer', minimum: 1, description: 'Lifetime of the access token in seconds.' },
    token_type: { type: 'string', enum: ['Bearer', 'DPoP'], description: '`DPoP` when the tokens are bound to a key.' },
    device_id: { type: 'string', description: 'The device id (`dev_…`).' },
    scope: {
      type: 'string',
      description:
        'Scopes granted, space-separated. A workbench: `organisation:read policy:read ingest:write relay:connect cloud-agents:write pictures:read pictures:write`; a node: `organisation:read policy:read ingest:write relay:connect`.',
    },
  },
  additionalProperties: false,
  examples: [
    {
      access_token: EXAMPLE.accessToken,
      refresh_token: EXAMPLE.refreshToken,
      expires_in: 3600,
      token_type: 'DPoP',
      device_id: EXAMPLE.deviceId,
      scope: 'organisation:read policy:read ingest:write relay:connect cloud-agents:write pictures:read pictures:write',
    },
  ],
} as const);

// Device-code enrolment (RFC 8628) and its approval in the console ------------------------

/** RFC 7638 SHA-256 thumbprint, base64url without padding: 32 bytes are 43 characters. */
const JWK_THUMBPRINT = '^[A-Za-z0-9_-]{43}$';

export const DEVICE_CODE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';

export const deviceCodeRequestSchema = {
  type: 'object',
  description:
    'A device asks to enrol (spec 4.6). JSON or `application/x-www-form-urlencoded` (RFC 8628 3.1), with the same fields.',
  required: ['workspaceId', 'name'],
  properties: {
    workspaceId: { type: 'string', minLength: 1, maxLength: 200, description: 'The workspace the device works in.' },
    name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S', description: 'The device name shown to the person approving it.' },
    dpop_jkt: {
      type: 'string',
      pattern: JWK_THUMBPRINT,
      description:
        'RFC 7638 SHA-256 thumbprint (base64url, 43 characters) of the key the tokens will be bound to; the poll must then carry a DPoP proof signed by that key.',
    },
    kind: {
      type: 'string',
      enum: ['workbench', 'node'],
      description: 'Extension: `workbench` (default) or `node`. A node is approved only by owners and admins and gets fewer scopes.',
    },
    client_id: {
      type: 'string',
      maxLength: 200,
      description: 'Accepted for RFC 8628 clients that always send one; this service registers no clients and does not read it.',
    },
  },
  additionalProperties: false,
  examples: [{ workspaceId: EXAMPLE.workspaceId, name: "Ana's laptop", kind: 'workbench' }],
} as const;

export const deviceCodeAnswerSchema = named('DeviceAuthorization', {
  type: 'object',
  description: 'Device authorization answer (spec 4.6, RFC 8628 3.2).',
  required: ['device_code', 'user_code', 'verification_uri', 'verification_uri_complete', 'interval', 'expires_in'],
  properties: {
    device_code: { type: 'string', pattern: '^platform_dc_', description: 'Secret the device polls with; prefix `platform_dc_`. Stored only as a hash.' },
    user_code: {
      type: 'string',
      pattern: `^[${USER_CODE_ALPHABET}]{4}-[${USER_CODE_ALPHABET}]{4}$`,
      description: 'Code the person enters, `XXXX-XXXX` of consonants without look-alikes; matched ignoring case and dashes.',
    },
    verification_uri: { type: 'string', format: 'uri', description: 'Where the person approves the device: `<origin>/device`.' },
    verification_uri_complete: { type: 'string', format: 'uri', description: '`verification_uri` with `?user_code=XXXX-XXXX` filled in.' },
    interval: { type: 'integer', minimum: 1, description: 'Seconds to wait between polls.' },
    expires_in: { type: 'integer', minimum: 1, description: 'Seconds until `device_code` and `user_code` expire.' },
  },
  additionalProperties: false,
  examples: [
    {
      device_code: EXAMPLE.deviceCode,
      user_code: EXAMPLE.userCode,
      verification_uri: 'https://api.platform.example/device',
      verification_uri_complete: `https://api.platform.example/device?user_code=${EXAMPLE.userCode}`,
      interval: 5,
      expires_in: 600,
    },
  ],
} as const);

export const deviceTokenRequestSchema = {
  type: 'object',
  description: 'A poll of the device token endpoint (spec 4.6, RFC 8628 3.4). JSON or `application/x-www-form-urlencoded`.',
  required: ['device_code'],
  properties: {
    device_code: { type: 'string', minLength: 1, maxLength: 200, description: 'The `device_code` of the device authorization answer.' },
    grant_type: {
      type: 'string',
      maxLength: 200,
      description: `Optional; when sent it must be \`${DEVICE_CODE_GRANT_TYPE}\` (otherwise \`unsupported_grant_type\`).`,
    },
    client_id: {
      type: 'string',
      maxLength: 200,
      description: 'Accepted for RFC 8628 clients that always send one; this service registers no clients and does not read it.',
    },
  },
  additionalProperties: false,
  examples: [{ grant_type: DEVICE_CODE_GRANT_TYPE, device_code: EXAMPLE.deviceCode }],
} as const;

export const userCodeRequestSchema = {
  type: 'object',
  description: 'The user code a person read off the device. Sent in the body, never in the URL, so it stays out of access logs.',
  required: ['userCode'],
  properties: {
    userCode: { type: 'string', minLength: 1, maxLength: 32, description: 'The user code, `XXXX-XXXX`; case, spaces and dashes do not matter.' },
  },
  additionalProperties: false,
  examples: [{ userCode: EXAMPLE.userCode }],
} as const;

export const deviceApprovalSchema = named('DeviceApproval', {
  type: 'object',
  description: 'Extension: a device asking to enrol, as the person approving it sees it.',
  required: ['status', 'userCode', 'name', 'kind', 'workspaceId', 'requestedAt', 'expiresAt', 'requesterAddress', 'requesterUserAgent', 'keyBound'],
  properties: {
    status: { type: 'string', enum: ['pending', 'approved', 'denied'], description: '`pending` after a look-up; `approved` or `denied` after a decision.' },
    userCode: { type: 'string', description: 'The user code, `XXXX-XXXX`.' },
    name: { type: 'string', description: 'The name the device gave.' },
    kind: { type: 'string', enum: ['workbench', 'node'], description: 'What kind of device asks.' },
    workspaceId: { type: 'string', description: 'The workspace the device named.' },
    requestedAt: { ...timestampSchema, description: 'When the device asked for the code.' },
    expiresAt: { ...timestampSchema, description: 'When the code expires.' },
    requesterAddress: { type: ['string', 'null'], description: 'Network address the device asked from, as this service saw it.' },
    requesterUserAgent: { type: ['string', 'null'], description: 'User-Agent the device sent.' },
    keyBound: { type: 'boolean', description: 'Whether the tokens will be bound to a key the device holds (DPoP).' },
  },
  additionalProperties: false,
  examples: [
    {
      status: 'pending',
      userCode: EXAMPLE.userCode,
      name: "Ana's laptop",
      kind: 'workbench',
      workspaceId: EXAMPLE.workspaceId,
      requestedAt: '2026-11-02T09:38:51.227Z',
      expiresAt: '2026-11-02T09:48:51.227Z',
      requesterAddress: '203.0.113.24',
      requesterUserAgent: 'workbench/1.8.2 (linux; x64)',
      keyBound: true,
    },
  ],
} as const);
