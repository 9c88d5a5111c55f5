import { createHash } from 'node:crypto';
import type { FromSchema } from 'json-schema-to-ts';
import type { Deployment } from '../../deployment.js';
import { requestOrigin } from '../../http/origin.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import type { OrganisationRecord } from '../organisation/entities.js';
import { discoveryDocumentSchema } from './schemas.js';

type DiscoveryDocument = FromSchema<typeof discoveryDocumentSchema>;

export const DPOP_SIGNING_ALGS = ['ES256', 'EdDSA'] as const;

function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((candidate) => {
    const value = candidate.trim().replace(/^W\//, '');
    return value === '*' || value === etag;
  });
}

interface Prepared {
  document: DiscoveryDocument;
  etag: string;
  headers: Record<string, string>;
  serialised: Buffer;
}

/** How long a client may keep a discovery document (`Cache-Control: max-age`). */
export const DISCOVERY_MAX_AGE_SECONDS = 300;

export interface DiscoverySettings {
  deployment: Deployment;
}

export function discoveryRoutes(config: DiscoverySettings): RouteDefinition[] {
  const organisationDocuments = new WeakMap<OrganisationRecord, Map<string, Prepared>>();
  const cloudDocuments = new Map<string, Prepared>();

  function documentFor(tenant: OrganisationRecord | undefined, origin: string): DiscoveryDocument {
    if (config.deployment === 'cloud') return { edition: 'cloud', apiBaseUrl: origin, dpopSigningAlgs: [...DPOP_SIGNING_ALGS] };
    const organisation = tenant!;
    const auth: NonNullable<DiscoveryDocument['auth']> = {};
    if (organisation.oidcIssuer) auth.issuer = organisation.oidcIssuer;
    if (organisation.oidcClientId) auth.clientId = organisation.oidcClientId;
    if (organisation.oidcApiScope) auth.apiScope = organisation.oidcApiScope;
    return {
      edition: 'enterprise',
      apiBaseUrl: origin,
      organisation: { id: organisation.id, name: organisation.name },
      auth,
      dpopSigningAlgs: [...DPOP_SIGNING_ALGS],
    };
  }

  function prepare(document: DiscoveryDocument): Prepared {
    const text = JSON.stringify(document);
    const etag = `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;
    return {
      document,
      etag,
      headers: { ETag: etag, 'Cache-Control': `public, max-age=${DISCOVERY_MAX_AGE_SECONDS}`, Vary: 'Host' },
      serialised: Buffer.from(text, 'utf8'),
    };
  }

  return [
    defineRoute({
      method: 'get',
      path: '/.well-known/platform.json',
      operationId: 'getDiscoveryDocument',
      permission: 'public',
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
        const origin = requestOrigin(req).origin;
        // Built and serialised once per (organisation record, origin): the tenancy step hands out
        // the same record until it reads the organisation again, so a change (name, OIDC
        // settings) is served from that read on.
        let byOrigin = config.deployment === 'cloud' ? cloudDocuments : organisationDocuments.get(tenant!);
        if (!byOrigin) organisationDocuments.set(tenant!, (byOrigin = new Map()));
        let ready = byOrigin.get(origin);
        if (!ready) {
          ready = prepare(documentFor(tenant, origin));
          if (byOrigin.size >= 100) byOrigin.clear();
          byOrigin.set(origin, ready);
        }
        if (matchesEtag(req.headers['if-none-match'], ready.etag)) return { status: 304, headers: ready.headers };
        return { status: 200, headers: ready.headers, body: ready.document, serialised: ready.serialised };
      },
    }),
  ];
}
