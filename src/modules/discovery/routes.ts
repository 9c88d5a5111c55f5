import { createHash } from 'node:crypto';
import type { FromSchema } from 'json-schema-to-ts';
import type { Config } from '../../config.js';
import { requestOrigin } from '../../http/origin.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { discoveryDocumentSchema } from './schemas.js';

type DiscoveryDocument = FromSchema<typeof discoveryDocumentSchema>;

export const DPOP_SIGNING_ALGS = ['ES256', 'EdDSA'] as const;

function etagOf(body: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 27)}"`;
}

function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((candidate) => {
    const value = candidate.trim().replace(/^W\//, '');
    return value === '*' || value === etag;
  });
}

export function discoveryRoutes(config: Config): RouteDefinition[] {
  return [
    defineRoute({
      method: 'get',
      path: '/.well-known/platform.json',
      operationId: 'getDiscoveryDocument',
      summary: 'Discovery document',
      description:
        'What the deployment offers and how to sign in. Cacheable for five minutes; answers carry an ETag and `If-None-Match` gives 304.',
      tag: 'Discovery',
      tenant: true,
      auth: 'public',
      database: false,
      schemas: {},
      headers: { 'If-None-Match': { description: 'An ETag from an earlier answer.', schema: { type: 'string' } } },
      responses: {
        200: {
          description: 'The discovery document.',
          schema: discoveryDocumentSchema,
          headers: {
            ETag: { description: 'Version of the document.', schema: { type: 'string' } },
            'Cache-Control': { description: '`public, max-age=300`.', schema: { type: 'string' } },
          },
        },
        304: { description: 'Not modified since the ETag given in `If-None-Match`.' },
      },
      handler: ({ tenant, req }) => {
        let document: DiscoveryDocument;
        if (config.deployment === 'cloud') {
          document = { edition: 'cloud', apiBaseUrl: requestOrigin(req).origin, dpopSigningAlgs: [...DPOP_SIGNING_ALGS] };
        } else {
          const organisation = tenant!;
          const auth: NonNullable<DiscoveryDocument['auth']> = {};
          if (organisation.oidcIssuer) auth.issuer = organisation.oidcIssuer;
          if (organisation.oidcClientId) auth.clientId = organisation.oidcClientId;
          if (organisation.oidcApiScope) auth.apiScope = organisation.oidcApiScope;
          document = {
            edition: 'enterprise',
            apiBaseUrl: requestOrigin(req).origin,
            organisation: { id: organisation.id, name: organisation.name },
            auth,
            dpopSigningAlgs: [...DPOP_SIGNING_ALGS],
          };
        }
        const etag = etagOf(document);
        const headers = { ETag: etag, 'Cache-Control': `public, max-age=${config.discoveryMaxAgeSeconds}`, Vary: 'Host' };
        if (matchesEtag(req.headers['if-none-match'], etag)) return { status: 304, headers };
        return { status: 200, headers, body: document };
      },
    }),
  ];
}
