import { EXAMPLE } from '../../http/examples.js';
import { named } from '../../http/schema.js';

export const discoveryDocumentSchema = named('DiscoveryDocument', {
  type: 'object',
  description:
    'Discovery document (spec 2.2). Cloud answers one for everyone (`edition` `cloud`); self-hosted answers the organisation served at the host name (`edition` `enterprise`).',
  required: ['edition', 'apiBaseUrl', 'dpopSigningAlgs'],
  properties: {
    edition: { type: 'string', enum: ['cloud', 'enterprise'], description: '`cloud` on the hosted deployment, `enterprise` on self-hosted.' },
    apiBaseUrl: { type: 'string', format: 'uri', description: 'Base address of the API for this organisation or deployment.' },
    organisation: {
      type: 'object',
      description: 'Self-hosted: the organisation served at this host name.',
      required: ['id', 'name'],
      properties: {
        id: { type: 'string', description: 'Organisation id.' },
        name: { type: 'string', description: 'Organisation name.' },
      },
      additionalProperties: false,
    },
    auth: {
      type: 'object',
      description: "How to get person tokens. Self-hosted: the organisation's OpenID Connect provider.",
      properties: {
        issuer: { type: 'string', format: 'uri', description: "Issuer of the organisation's OpenID Connect provider (self-hosted)." },
        clientId: { type: 'string', description: "Client id to request person tokens from the organisation's provider (self-hosted)." },
        apiScope: { type: 'string', description: 'Scope to request with it (self-hosted).' },
      },
      additionalProperties: false,
    },
    dpopSigningAlgs: {
      type: 'array',
      description: 'DPoP proof algorithms accepted.',
      items: { type: 'string', enum: ['ES256', 'EdDSA'] },
    },
  },
  additionalProperties: false,
  examples: [
    {
      edition: 'enterprise',
      apiBaseUrl: 'https://platform.acme.example',
      organisation: { id: EXAMPLE.organisationId, name: 'Acme' },
      auth: { issuer: 'https://login.acme.example', clientId: 'platform-workbench', apiScope: 'api://platform/access' },
      dpopSigningAlgs: ['ES256', 'EdDSA'],
    },
    { edition: 'cloud', apiBaseUrl: 'https://api.platform.example', dpopSigningAlgs: ['ES256', 'EdDSA'] },
  ],
} as const);
