import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import {
  MembershipEntity,
  PersonEntity,
  PersonIdentityEntity,
  type OrganisationRecord,
} from '../../src/modules/organisation/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { tamper, TestIdentityProvider } from '../support/idp.js';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * Self-hosted person tokens (spec section 5), verified against a real OpenID Connect provider:
 * the token's issuer selects the organisation, the provider's published keys sign it, and the
 * organisation's audience, API scope and role claim decide what it grants.
 */

const SKEW_SECONDS = 30;
const ROLE_CLAIM = 'platform_role';

// Whole seconds, so that token times (seconds) and the platform clock (milliseconds) line up.
const startedAt = Math.floor(Date.now() / 1000);
const clock = new ManualClock(startedAt * 1000);

let platform: TestPlatform;
/** The provider of the organisation under test, which names roles in `platform_role`. */
let idp: TestIdentityProvider;
/** The provider of a second organisation on the same platform, without a role claim. */
let partnerIdp: TestIdentityProvider;
/** A provider that no organisation trusts. */
let strangerIdp: TestIdentityProvider;
let organisation: OrganisationRecord;
let partner: OrganisationRecord;
let host: string;
let partnerHost: string;

/** Every token sent in this file, to prove afterwards that none reached the logs. */
const presented: string[] = [];

beforeAll(async () => {
  platform = await startPlatform({ clock, env: { OIDC_CLOCK_SKEW_SECONDS: String(SKEW_SECONDS) } });
  [idp, partnerIdp, strangerIdp] = await Promise.all([
    TestIdentityProvider.start({ clock }),
    TestIdentityProvider.start({ clock }),
    TestIdentityProvider.start({ clock }),
  ]);
  organisation = await createOrganisation(platform, { name: 'Acme', oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
  partner = await createOrganisation(platform, { name: 'Partner', oidc: partnerIdp.settings() });
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
  partnerHost = (await platform.services.organisations.hostsOf(partner.id))[0]!;
});

afterAll(async () => {
  await Promise.all([idp?.close(), partnerIdp?.close(), strangerIdp?.close()]);
  await platform?.close();
});

async function getOrganisation(token: string | undefined, at = host, target = platform): Promise<Response> {
  if (token !== undefined) presented.push(token);
  const headers: Record<string, string> = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  return call(target, 'get', '/platform/v1/organisation', { host: at, headers });
}

function expectInvalidToken(res: Response, reason: RegExp): void {
  expect(res.status).toBe(401);
  expect(res.body.error).toBe('unauthorized');
  expect(res.body.message).toMatch(reason);
  expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="platform", /);
  expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
}

const people = () => platform.dataSource.getRepository(PersonEntity);
const identities = () => platform.dataSource.getRepository(PersonIdentityEntity);
const memberships = () => platform.dataSource.getRepository(MembershipEntity);

async function storedRole(subject: string, issuer = idp.issuer, organisationId = organisation.id) {
  const identity = await identities().findOneByOrFail({ issuer, subject });
  return (await memberships().findOneByOrFail({ organisationId, personId: identity.personId })).role;
}

describe('a person token from the organisation\'s provider', () => {
  it('is accepted and answers the organisation whose provider issued it', async () => {
    const res = await getOrganisation(await idp.mint());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: organisation.id, name: 'Acme', role: 'member' });
  });

  it("is accepted when it comes from the provider's token endpoint", async () => {
    const res = await getOrganisation(await idp.clientCredentialsToken());
    expect(res.status).toBe(200);
    expect(await identities().countBy({ issuer: idp.issuer, subject: idp.clientId })).toBe(1);
  });

  it('creates the person on first sight from sub, email and name, and only once', async () => {
    const subject = 'ada-4711';
    const claims = { email: 'Ada.Lovelace@Example.COM', name: 'Ada Lovelace' };
    expect(await identities().countBy({ issuer: idp.issuer, subject })).toBe(0);

    expect((await getOrganisation(await idp.mint({ sub: subject, claims }))).status).toBe(200);
    const identity = await identities().findOneByOrFail({ issuer: idp.issuer, subject });
    expect(await people().findOneByOrFail({ id: identity.personId })).toMatchObject({
      name: 'Ada Lovelace',
      email: 'ada.lovelace@example.com',
    });
    expect(await memberships().findOneByOrFail({ organisationId: organisation.id, personId: identity.personId })).toMatchObject({
      role: 'member',
    });

    const peopleBefore = await people().count();
    expect((await getOrganisation(await idp.mint({ sub: subject, claims }))).status).toBe(200);
    expect(await people().count()).toBe(peopleBefore);
    expect(await identities().findBy({ issuer: idp.issuer, subject })).toEqual([identity]);
    expect(await memberships().countBy({ personId: identity.personId })).toBe(1);
  });

  it('keeps the name and email the provider sends now, on the same person', async () => {
    const subject = 'grace-1906';
    await getOrganisation(await idp.mint({ sub: subject, claims: { email: 'grace@example.com', name: 'Grace' } }));
    const { personId } = await identities().findOneByOrFail({ issuer: idp.issuer, subject });

    const res = await getOrganisation(await idp.mint({ sub: subject, claims: { email: 'g.hopper@example.com', name: 'Grace Hopper' } }));
    expect(res.status).toBe(200);
    expect(await people().findOneByOrFail({ id: personId })).toMatchObject({ name: 'Grace Hopper', email: 'g.hopper@example.com' });
    expect(await identities().countBy({ issuer: idp.issuer, subject })).toBe(1);
  });

  it('tells the same subject at two providers apart', async () => {
    const subject = 'shared-subject';
    expect((await getOrganisation(await idp.mint({ sub: subject }))).status).toBe(200);
    expect((await getOrganisation(await partnerIdp.mint({ sub: subject }), partnerHost)).status).toBe(200);
    const [here, there] = await Promise.all([
      identities().findOneByOrFail({ issuer: idp.issuer, subject }),
      identities().findOneByOrFail({ issuer: partnerIdp.issuer, subject }),
    ]);
    expect(here.personId).not.toBe(there.personId);
  });
});

describe('the role claim', () => {
  it.each([
    ['owner', 'owner'],
    ['admin', 'admin'],
    ['member', 'member'],
    [['member', 'admin'], 'admin'],
  ] as const)('%j gives the role %s, answered and stored', async (claim, role) => {
    const subject = `role-${JSON.stringify(claim)}`;
    const res = await getOrganisation(await idp.mint({ sub: subject, claims: { [ROLE_CLAIM]: claim } }));
    expect(res.status).toBe(200);
    expect(res.body.role).toBe(role);
    expect(await storedRole(subject)).toBe(role);
  });

  it.each([
    ['absent', undefined],
    ['an unknown role', 'superuser'],
    ['a role in the wrong case', 'Owner'],
    // A claim that is not a string (or a list of strings) is refused instead: see "refusals".
  ])('%s gives member', async (_case, claim) => {
    const subject = `no-role-${String(claim)}`;
    const claims = claim === undefined ? {} : { [ROLE_CLAIM]: claim };
    const res = await getOrganisation(await idp.mint({ sub: subject, claims }));
    expect(res.status).toBe(200);
    expect(res.body.role).toBe('member');
    expect(await storedRole(subject)).toBe('member');
  });

  it('follows the provider on every request: a person demoted there is demoted here', async () => {
    const subject = 'demoted-admin';
    expect((await getOrganisation(await idp.mint({ sub: subject, claims: { [ROLE_CLAIM]: 'admin' } }))).body.role).toBe('admin');

    const res = await getOrganisation(await idp.mint({ sub: subject }));
    expect(res.body.role).toBe('member');
    expect(await storedRole(subject)).toBe('member');
  });

  it('is not read where the organisation has not configured it', async () => {
    const subject = 'self-declared-owner';
    const res = await getOrganisation(await partnerIdp.mint({ sub: subject, claims: { [ROLE_CLAIM]: 'owner' } }), partnerHost);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: partner.id, role: 'member' });
    expect(await storedRole(subject, partnerIdp.issuer, partner.id)).toBe('member');
  });
});

describe('refusals', () => {
  it('a token forged with the provider\'s own key and the right claims passes (the control for the forgeries below)', async () => {
    const res = await getOrganisation(await idp.forge.withProviderKey());
    expect(res.status).toBe(200);
  });

  const now = () => Math.floor(clock.now().getTime() / 1000);
  const cases: [string, () => Promise<string> | string, RegExp][] = [
    ['expired beyond the allowed skew', () => idp.mint({ iat: now() - 600, exp: now() - SKEW_SECONDS - 1 }), /expired/],
    ['not yet valid beyond the allowed skew', () => idp.mint({ claims: { nbf: now() + SKEW_SECONDS + 60 } }), /not yet valid/],
    ['for another audience', () => idp.mint({ audience: 'https://another-api.test' }), /audience/],
    ['without the API scope', () => idp.mint({ scope: 'openid profile' }), /scope platform\.api/],
    ['with alg "none"', () => idp.forge.unsigned(), /algorithm/],
    ['HS256-signed with the provider\'s public key', () => idp.forge.hmacWithPublicKey(), /algorithm/],
    ['signed by a key the provider never published (unknown kid)', () => idp.forge.unknownKey(), /key the provider does not publish/],
    ['naming this issuer but signed by another provider\'s key', () => partnerIdp.forge.withProviderKey({ iss: idp.issuer }), /key the provider does not publish/],
    ['changed after signing', async () => tamper(await idp.mint({ sub: 'someone' }), { sub: 'someone-else' }), /signature/],
    ['without sub', () => idp.forge.withProviderKey({}, { omit: ['sub'] }), /\bsub\b/],
    ['without exp', () => idp.forge.withProviderKey({}, { omit: ['exp'] }), /\bexp\b/],
    ['without iss', () => idp.forge.withProviderKey({}, { omit: ['iss'] }), /issuer/],
    ['from an issuer no organisation trusts', () => strangerIdp.mint(), /not issued by a provider this service trusts/],
    ['that is JWT-shaped garbage', () => 'eyJub3QiOiJqc29uIn0.bm90IGpzb24.c2ln', /well-formed/],
    ['that is no JWT at all', () => 'not-a-jwt', /not accepted/],
  ];

  it.each(cases)('refuses a token %s: 401 invalid_token, and nobody is created', async (_case, token, reason) => {
    const peopleBefore = await people().count();
    const value = await token();
    const res = await getOrganisation(value);
    expectInvalidToken(res, reason);
    expect(JSON.stringify(res.body)).not.toContain(value);
    expect(await people().count()).toBe(peopleBefore);
  });

  // Every claim the service reads is typed: a non-empty string of bounded length (CLAIM_LIMITS).
  const typed: [string, Record<string, unknown>, RegExp][] = [
    ['a numeric sub', { sub: 12345 }, /\bsub claim must be a non-empty string/],
    ['an empty sub', { sub: '' }, /\bsub claim/],
    ['a blank sub', { sub: '   ' }, /\bsub claim/],
    ['a null sub', { sub: null }, /\bsub claim/],
    ['an object as sub', { sub: { id: 'x' } }, /\bsub claim/],
    ['a sub of 256 characters', { sub: 's'.repeat(256) }, /\bsub claim must be a non-empty string of at most 255 characters/],
    ['a numeric email', { email: 42 }, /\bemail claim/],
    ['an empty email', { email: '' }, /\bemail claim/],
    ['an email of 321 characters', { email: `${'e'.repeat(309)}@example.com` }, /\bemail claim/],
    ['a name that is a list', { name: ['Ada', 'Lovelace'] }, /\bname claim/],
    ['an empty name', { name: '' }, /\bname claim/],
    ['a name of 1,001 characters', { name: 'n'.repeat(1001) }, /\bname claim/],
    ['email_verified that is neither true nor false', { email_verified: 'yes' }, /email_verified/],
    [`a numeric role claim (${ROLE_CLAIM})`, { [ROLE_CLAIM]: 7 }, new RegExp(`${ROLE_CLAIM} claim`)],
    ['a role claim that is an object', { [ROLE_CLAIM]: { role: 'admin' } }, new RegExp(`${ROLE_CLAIM} claim`)],
    ['an empty role', { [ROLE_CLAIM]: '' }, new RegExp(`${ROLE_CLAIM} claim`)],
    ['a role list holding a number', { [ROLE_CLAIM]: ['admin', 7] }, new RegExp(`${ROLE_CLAIM} claim`)],
    ['a role of 257 characters', { [ROLE_CLAIM]: 'r'.repeat(257) }, new RegExp(`${ROLE_CLAIM} claim`)],
    ['a list of 201 roles', { [ROLE_CLAIM]: Array.from({ length: 201 }, (_, i) => `role-${i}`) }, /more than 200 roles/],
  ];

  it.each(typed)('refuses a token with %s: 401 invalid_token (never 500), and nobody is created', async (_case, claims, reason) => {
    const peopleBefore = await people().count();
    const token = await idp.forge.withProviderKey(claims);
    const res = await getOrganisation(token);
    expectInvalidToken(res, reason);
    expect(await people().count()).toBe(peopleBefore);
  });

  it('takes claims at their bounds, and a role claim given as a list', async () => {
    const sub = 's'.repeat(255);
    const ok = await getOrganisation(
      await idp.forge.withProviderKey({ sub, email: `${'e'.repeat(308)}@example.com`, name: 'n'.repeat(1000), email_verified: 'true', [ROLE_CLAIM]: ['viewer', 'admin'] }),
    );
    expect(ok.status).toBe(200);
    expect(ok.body.role).toBe('admin');
    expect(await storedRole(sub)).toBe('admin');
    expect((await getOrganisation(await idp.forge.withProviderKey({ [ROLE_CLAIM]: [] }))).body.role).toBe('member');
  });

  it("refuses another organisation's token at this organisation's host, though it is good at its own", async () => {
    const token = await partnerIdp.mint();
    expectInvalidToken(await getOrganisation(token, host), /another organisation/);
    const atHome = await getOrganisation(token, partnerHost);
    expect(atHome.status).toBe(200);
    expect(atHome.body.id).toBe(partner.id);
  });

  it('never contacts an issuer that no organisation trusts', async () => {
    await getOrganisation(await strangerIdp.mint());
    await getOrganisation(await strangerIdp.forge.withProviderKey());
    expect(strangerIdp.totalRequests).toBe(0);
  });

  it('answers a request without credentials with a bare challenge (RFC 6750 3.1)', async () => {
    const withoutCredentials: Record<string, string>[] = [{}, { Authorization: 'Basic dXNlcjpwYXNz' }];
    for (const headers of withoutCredentials) {
      const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers });
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('unauthorized');
      expect(res.headers['www-authenticate']).toBe('Bearer realm="platform"');
    }
  });

  it('refuses a malformed Bearer header as invalid_token', async () => {
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: { Authorization: 'Bearer two words' } });
    expectInvalidToken(res, /malformed/);
  });
});

describe('time, by the platform clock', () => {
  it(`accepts a token up to ${SKEW_SECONDS} s (OIDC_CLOCK_SKEW_SECONDS) after its exp, and not a second more`, async () => {
    const iat = startedAt;
    const token = await idp.mint({ iat, exp: iat + 60 });
    try {
      expect((await getOrganisation(token)).status).toBe(200);
      clock.set((iat + 60 + SKEW_SECONDS - 1) * 1000);
      expect((await getOrganisation(token)).status).toBe(200);
      clock.set((iat + 60 + SKEW_SECONDS) * 1000);
      expectInvalidToken(await getOrganisation(token), /expired/);
    } finally {
      clock.set(startedAt * 1000);
    }
  });

  it(`accepts a token whose nbf is up to ${SKEW_SECONDS} s ahead, and not a second more`, async () => {
    const within = await idp.mint({ claims: { nbf: startedAt + SKEW_SECONDS } });
    expect((await getOrganisation(within)).status).toBe(200);
    const beyond = await idp.mint({ claims: { nbf: startedAt + SKEW_SECONDS + 1 } });
    expectInvalidToken(await getOrganisation(beyond), /not yet valid/);
  });
});

describe('key rotation at the provider', () => {
  it('accepts tokens signed with the new key without a restart, fetching the keys once more', async () => {
    const signedBefore = await idp.mint();
    expect((await getOrganisation(signedBefore)).status).toBe(200);
    const fetches = idp.jwksFetches;
    const previousKid = idp.currentKid;

    const newKid = await idp.rotateKeys();
    expect(newKid).not.toBe(previousKid);
    const signedAfter = await idp.mint();
    const res = await getOrganisation(signedAfter);
    expect(res.status).toBe(200);
    expect(idp.jwksFetches).toBe(fetches + 1);

    // The old key is still published beside the new one, so its tokens live out their time.
    expect((await getOrganisation(signedBefore)).status).toBe(200);
    expect(idp.jwksFetches).toBe(fetches + 1);
  });

  it('refetches keys for unknown kids at most once per OIDC_JWKS_COOLDOWN_MS', async () => {
    const cautious = await startPlatform({ clock, env: { OIDC_JWKS_COOLDOWN_MS: '3600000' } });
    try {
      const trusted = await createOrganisation(cautious, { oidc: idp.settings() });
      const trustedHost = (await cautious.services.organisations.hostsOf(trusted.id))[0]!;
      expect((await getOrganisation(await idp.mint(), trustedHost, cautious)).status).toBe(200);
      const fetches = idp.jwksFetches;

      for (let attempt = 0; attempt < 3; attempt++) {
        expectInvalidToken(await getOrganisation(await idp.forge.unknownKey(), trustedHost, cautious), /key the provider does not publish/);
      }
      expect(idp.jwksFetches).toBe(fetches);
    } finally {
      await cautious.close();
    }
  });
});

describe('logs', () => {
  it('hold none of the tokens presented in this file', () => {
    expect(presented.length).toBeGreaterThan(20);
    expect(platform.logs.length).toBeGreaterThan(0);
    const written = JSON.stringify(platform.logs);
    for (const token of presented) {
      expect(written).not.toContain(token);
      // The payload and signature alone identify a token as well as the whole of it.
      for (const part of token.split('.').slice(1)) if (part.length >= 16) expect(written).not.toContain(part);
    }
  });
});
