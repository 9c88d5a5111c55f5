import { named } from '../../http/schema.js';

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
} as const);
