import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { OrganisationKind, OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { TestIdentityProvider } from '../support/idp.js';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * GET /platform/v1/organisation (spec 4.2): the caller's organisation and its edition, by the
 * rule of spec section 1: an enterprise organisation is Enterprise, a team is Teams, a personal
 * organisation is Free.
 */

const ROLE_CLAIM = 'groups';

interface Served {
  organisation: OrganisationRecord;
  host: string;
  idp: TestIdentityProvider;
}

let platform: TestPlatform;
const served = new Map<OrganisationKind, Served>();

async function serve(kind: OrganisationKind, name: string): Promise<void> {
  const idp = await TestIdentityProvider.start({ clock: platform.clock });
  const organisation = await createOrganisation(platform, { name, kind, oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
  const host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
  served.set(kind, { organisation, host, idp });
}

function at(kind: OrganisationKind): Served {
  const entry = served.get(kind);
  if (!entry) throw new Error(`no ${kind} organisation`);
  return entry;
}

beforeAll(async () => {
  platform = await startPlatform();
  await serve('enterprise', 'Acme Corporation');
  await serve('team', 'Skunk Works');
  await serve('personal', 'Ada Lovelace');
});

afterAll(async () => {
  await Promise.all([...served.values()].map(({ idp }) => idp.close()));
  await platform?.close();
});

async function getOrganisation(host: string, token?: string) {
  return call(platform, 'get', '/platform/v1/organisation', {
    host,
    headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
  });
}

describe('GET /platform/v1/organisation', () => {
  it.each([
    ['enterprise', 'enterprise', 'enterprise'],
    ['team', 'teams', 'teams'],
    ['personal', 'free', 'free'],
  ] as const)('answers the %s organisation with plan %s and edition %s', async (kind, plan, edition) => {
    const { organisation, host, idp } = at(kind);
    const res = await getOrganisation(host, await idp.mint({ claims: { [ROLE_CLAIM]: ['owner'] } }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: organisation.id, name: organisation.name, kind, plan, edition, role: 'owner' });
    expect(res.body.id).toMatch(/^org_/);
  });

  it.each(['owner', 'admin', 'member'] as const)('answers the calling person\'s role: %s', async (role) => {
    const { host, idp } = at('enterprise');
    const res = await getOrganisation(host, await idp.mint({ claims: { [ROLE_CLAIM]: [role] } }));
    expect(res.status).toBe(200);
    expect(res.body.role).toBe(role);
  });

  it('takes the edition from the kind of organisation, not its plan', async () => {
    const idp = await TestIdentityProvider.start({ clock: platform.clock });
    try {
      const team = await createOrganisation(platform, { name: 'Team on a free plan', kind: 'team', plan: 'free', oidc: idp.settings() });
      const host = (await platform.services.organisations.hostsOf(team.id))[0]!;
      const res = await getOrganisation(host, await idp.mint());
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ kind: 'team', plan: 'free', edition: 'teams' });
    } finally {
      await idp.close();
    }
  });

  it('finds the organisation by host name whatever its letter case', async () => {
    const { organisation, host, idp } = at('enterprise');
    const res = await getOrganisation(host.toUpperCase(), await idp.mint());
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(organisation.id);
  });

  it('answers 401 unauthorized without a token', async () => {
    const res = await getOrganisation(at('enterprise').host);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized', message: expect.any(String) });
    expect(res.headers['www-authenticate']).toBe('Bearer realm="platform"');
  });

  it('answers 401 to a token of another organisation served by the same platform', async () => {
    const res = await getOrganisation(at('enterprise').host, await at('team').idp.mint());
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('unauthorized');
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('answers 404 unknown_tenant at a host name no organisation is served at, with or without a token', async () => {
    const token = await at('enterprise').idp.mint();
    for (const res of [await getOrganisation('nobody-here.test'), await getOrganisation('nobody-here.test', token)]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'unknown_tenant', message: expect.any(String) });
    }
  });
});
