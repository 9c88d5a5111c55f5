import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as DPoP from 'dpop';
import request, { type Response } from 'supertest';
import { DpopVerifier } from '../../src/auth/dpop.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { MemoryReplayCache } from '../../adapters/state/memory-replay-cache.js';
import { call, createOrganisation, expectDeclaredAnswer, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import {
  bindDevice,
  epochSeconds,
  forgeProof,
  newProofKey,
  privateJwkOf,
  proofClaims,
  proofKeyOf,
  sha256base64url,
  type ForgeOptions,
  type ProofKey,
} from '../support/dpop-proofs.js';

// RFC 9449 on GET /platform/v1/organisation with a key-bound device token: every refusal is a
// 401 `invalid_dpop_proof` with a DPoP challenge, one thing wrong at a time, each beside a
// control that the same request done right passes.

const PATH = '/platform/v1/organisation';
const ALGS = 'algs="ES256 EdDSA"';
const NONCE_SECRET = Buffer.alloc(32, 42).toString('base64url');
const NONCE_FORMAT = /^[0-9a-z]+\.[A-Za-z0-9_-]{22}$/;

interface Bound {
  enrolled: EnrolledDevice;
  key: ProofKey;
  token: string;
}

let hostCount = 0;
const uniqueHost = (label: string) => `${label}-${++hostCount}-${Date.now()}.test`;

async function boundDevice(platform: TestPlatform, organisation: OrganisationRecord, alg: 'ES256' | 'Ed25519'): Promise<Bound> {
  const person = await createPerson(platform, organisation.id);
  const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, alg });
  expect(enrolled.tokens.token_type).toBe('DPoP');
  return { enrolled, key: await proofKeyOf(enrolled.keys!), token: enrolled.tokens.access_token };
}

const dpopHeaders = (token: string, proof: string) => ({ Authorization: `DPoP ${token}`, DPoP: proof });

function expectOrganisation(res: Response, organisation: OrganisationRecord): void {
  expect(res.status).toBe(200);
  expect(res.body.id).toBe(organisation.id);
}

function expectDpopRefusal(res: Response, message: string): void {
  expect(res.status).toBe(401);
  expect(res.body).toEqual({ error: 'invalid_dpop_proof', message });
  expect(res.headers['www-authenticate']).toBe(`DPoP error="invalid_dpop_proof", error_description="${message}", ${ALGS}`);
  expect(res.headers['dpop-nonce']).toBeUndefined();
}

/** A whole second on the clock, so `iat` boundaries can be hit to the millisecond. */
function wholeSecond(): number {
  return Math.floor(Date.now() / 1000) * 1000;
}

describe('DPoP proofs on a bound device token', () => {
  let platform: TestPlatform;
  let organisation: OrganisationRecord;
  let host: string;
  let url: string;

  beforeAll(async () => {
    platform = await startPlatform();
    organisation = await createOrganisation(platform, { name: 'DPoP Org' });
    host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
    url = `http://${host}${PATH}`;
  });
  afterAll(() => platform.close());
  // The `dpop` package signs with the real time: put the clock back after every test that moved it.
  afterEach(() => platform.clock.set(Date.now()));

  const get = (headers: Record<string, string>, path = PATH) => call(platform, 'get', path, { host, headers });
  const forged = (device: Bound, options: Partial<ForgeOptions> = {}) =>
    forgeProof(device.key, { htm: 'GET', htu: url, iat: epochSeconds(platform.clock.now()), accessToken: device.token, ...options });

  describe.each(['ES256', 'Ed25519'] as const)('with an %s key', (alg) => {
    let device: Bound;
    beforeAll(async () => {
      device = await boundDevice(platform, organisation, alg);
    });

    it('accepts a proof from the dpop package, and one from the forger with nothing changed (the control)', async () => {
      const proof = await DPoP.generateProof(device.enrolled.keys!, url, 'GET', undefined, device.token);
      expectOrganisation(await get(dpopHeaders(device.token, proof)), organisation);
      expectOrganisation(await get(dpopHeaders(device.token, await forged(device))), organisation);
    });

    it('refuses a request with no proof, an empty one and one that is not a JWT', async () => {
      expectDpopRefusal(await get({ Authorization: `DPoP ${device.token}` }), 'a DPoP proof is required');
      expectDpopRefusal(await get(dpopHeaders(device.token, '')), 'a DPoP proof is required');
      expectDpopRefusal(await get(dpopHeaders(device.token, 'not-a-jwt')), 'the DPoP proof is not a well-formed JWT');
    });

    it("refuses another key's proof, however valid", async () => {
      const stranger = await DPoP.generateKeyPair(alg);
      const proof = await DPoP.generateProof(stranger, url, 'GET', undefined, device.token);
      expectDpopRefusal(await get(dpopHeaders(device.token, proof)), 'the DPoP proof is signed by another key');
      expectOrganisation(await get(dpopHeaders(device.token, await DPoP.generateProof(device.enrolled.keys!, url, 'GET', undefined, device.token))), organisation);
    });

    it("refuses a proof that names the device's key but is signed by another one", async () => {
      const stranger = await newProofKey(alg);
      const proof = await forged(device, { signWith: stranger.privateKey });
      expectDpopRefusal(await get(dpopHeaders(device.token, proof)), 'the DPoP proof signature is invalid');
    });

    it('refuses the same proof twice', async () => {
      const proof = await DPoP.generateProof(device.enrolled.keys!, url, 'GET', undefined, device.token);
      expectOrganisation(await get(dpopHeaders(device.token, proof)), organisation);
      expectDpopRefusal(await get(dpopHeaders(device.token, proof)), 'the DPoP proof was already used');
    });

    it('refuses a new proof that reuses a jti with the same key, method and URL', async () => {
      const jti = `reused-${alg}`;
      const first = await forged(device, { jti });
      const second = await forged(device, { jti, iat: epochSeconds(platform.clock.now()) - 1 });
      expect(second).not.toBe(first);
      expectOrganisation(await get(dpopHeaders(device.token, first)), organisation);
      expectDpopRefusal(await get(dpopHeaders(device.token, second)), 'the DPoP proof was already used');
      expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { jti: `${jti}-fresh` }))), organisation);
    });

    it.each(['POST', 'get', 'HEAD'])('refuses htm %s on a GET', async (htm) => {
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { htm }))), 'the DPoP proof htm does not match the request method');
    });

    it.each([
      ['another path', (h: string) => `http://${h}/platform/v1/organisations`],
      ['another host', () => `http://elsewhere.test${PATH}`],
      ['another scheme', (h: string) => `https://${h}${PATH}`],
      ['another port', (h: string) => `http://${h}:8080${PATH}`],
      ['a relative URL', () => PATH],
    ])('refuses an htu with %s', async (_label, htu) => {
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { htu: htu(host) }))), 'the DPoP proof htu does not match the request URL');
    });

    it('ignores the query and fragment of htu and of the request, and normalises case and default port', async () => {
      for (const htu of [`${url}?page=2#top`, `HTTP://${host.toUpperCase()}${PATH}`, `http://${host}:80${PATH}`]) {
        expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { htu }))), organisation);
      }
      expectOrganisation(await get(dpopHeaders(device.token, await forged(device)), `${PATH}?page=2`), organisation);
      const proof = await DPoP.generateProof(device.enrolled.keys!, `${url}?a=b#c`, 'GET', undefined, device.token);
      expectOrganisation(await get(dpopHeaders(device.token, proof)), organisation);
    });

    it('accepts an iat exactly as old as the window (60 s) and refuses it a millisecond later', async () => {
      const now = wholeSecond();
      platform.clock.set(now);
      const iat = now / 1000 - 60;
      expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { iat }))), organisation);
      platform.clock.set(now + 1);
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { iat }))), 'the DPoP proof is too old');
    });

    it('refuses a proof from the dpop package once the clock has moved past its window', async () => {
      const proof = await DPoP.generateProof(device.enrolled.keys!, url, 'GET', undefined, device.token);
      platform.clock.set(((proofClaims(proof).iat as number) + 60) * 1000 + 1);
      expectDpopRefusal(await get(dpopHeaders(device.token, proof)), 'the DPoP proof is too old');
    });

    it('accepts an iat exactly as far ahead as the skew (5 s) and refuses one a millisecond further', async () => {
      const now = wholeSecond();
      platform.clock.set(now);
      const iat = now / 1000 + 5;
      expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { iat }))), organisation);
      platform.clock.set(now - 1);
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { iat }))), 'the DPoP proof was issued in the future');
    });

    it('refuses a proof without iat, or with an iat that is not a number', async () => {
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { claims: { iat: undefined } }))), 'the DPoP proof needs an iat');
      const text = String(epochSeconds(platform.clock.now()));
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { claims: { iat: text } }))), 'the DPoP proof iat claim is not valid');
    });

    it('refuses a missing ath and a wrong one', async () => {
      const wrong = [undefined, sha256base64url(`${device.token}x`), device.token, sha256base64url(device.token).slice(0, -1)];
      for (const ath of wrong) {
        expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { claims: { ath } }))), 'the DPoP proof ath does not match the access token');
      }
      expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { claims: { ath: sha256base64url(device.token) } }))), organisation);
    });

    it('refuses an unsigned proof (alg none)', async () => {
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { header: { alg: 'none' }, signWith: 'none' }))), 'the DPoP proof must be signed with ES256 EdDSA');
    });

    it('refuses an HS256 proof, even keyed with the public key', async () => {
      const secret = new TextEncoder().encode(JSON.stringify(device.key.publicJwk));
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { header: { alg: 'HS256' }, signWith: secret }))), 'the DPoP proof must be signed with ES256 EdDSA');
    });

    it('refuses a jwk that carries the private key (d)', async () => {
      const own = await boundDevice(platform, organisation, alg);
      const extractable = await newProofKey(alg);
      await bindDevice(platform, own.enrolled.device.id, extractable);
      const rebound = { ...own, key: extractable };
      const privateJwk = await privateJwkOf(extractable);
      expect(privateJwk.d).toEqual(expect.any(String));
      expectDpopRefusal(await get(dpopHeaders(own.token, await forged(rebound, { header: { jwk: privateJwk } }))), 'the DPoP proof jwk must not contain private key material');
      expectOrganisation(await get(dpopHeaders(own.token, await forged(rebound))), organisation);
    });

    it('refuses a jwk missing from the header', async () => {
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { header: { jwk: undefined } }))), 'the DPoP proof must carry the public key as jwk');
    });

    it.each([['JWT'], ['at+jwt'], [undefined]])('refuses typ %s', async (typ) => {
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { header: { typ } }))), 'the DPoP proof must have typ dpop+jwt');
    });

    it('refuses a jwk of the wrong type for the alg', async () => {
      // The device's own public key, under the other algorithm (signed with a key of that algorithm).
      const otherAlg = alg === 'ES256' ? 'Ed25519' : 'ES256';
      const signer = await newProofKey(otherAlg);
      const headerAlg = alg === 'ES256' ? 'EdDSA' : 'ES256';
      expectDpopRefusal(
        await get(dpopHeaders(device.token, await forged(device, { header: { alg: headerAlg }, signWith: signer.privateKey }))),
        'the DPoP proof jwk does not match its alg',
      );
    });

    it('refuses two proofs, in two headers or in one', async () => {
      const first = await forged(device);
      const second = await forged(device);
      // Two header lines (superagent sends one per array member); Node joins them with ", ".
      const twoHeaders = await request(platform.app)
        .get(PATH)
        .set('Host', host)
        .set('Authorization', `DPoP ${device.token}`)
        .set('DPoP', [first, second] as unknown as string);
      expectDeclaredAnswer(platform, 'get', PATH, twoHeaders);
      expectDpopRefusal(twoHeaders, 'the DPoP header must hold exactly one proof');
      expectDpopRefusal(await get(dpopHeaders(device.token, `${first},${second}`)), 'the DPoP header must hold exactly one proof');
      // Neither was used up by the refusals: each alone passes.
      expectOrganisation(await get(dpopHeaders(device.token, first)), organisation);
      expectOrganisation(await get(dpopHeaders(device.token, second)), organisation);
    });

    it('accepts a jti of 128 characters and refuses 129, an empty one and none', async () => {
      expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { jti: `${alg}-`.padEnd(128, 'j') }))), organisation);
      const message = 'the DPoP proof needs a jti of 1 to 128 characters';
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { jti: `${alg}-`.padEnd(129, 'j') }))), message);
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { jti: '' }))), message);
      expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { claims: { jti: undefined } }))), message);
    });

    it('accepts a proof of 4096 characters and refuses one of 4097', async () => {
      const longest = await forged(device, { length: 4096 });
      expect(longest).toHaveLength(4096);
      expectOrganisation(await get(dpopHeaders(device.token, longest)), organisation);
      const tooLong = await forged(device, { length: 4097 });
      expect(tooLong).toHaveLength(4097);
      expectDpopRefusal(await get(dpopHeaders(device.token, tooLong)), 'the DPoP proof is longer than 4096 characters');
    });

    it('refuses the bound token sent as Bearer, even with a valid proof beside it', async () => {
      const proof = await DPoP.generateProof(device.enrolled.keys!, url, 'GET', undefined, device.token);
      expectDpopRefusal(
        await get({ Authorization: `Bearer ${device.token}`, DPoP: proof }),
        'this token is bound to a key: send it with the DPoP scheme and a proof',
      );
      expectOrganisation(await get(dpopHeaders(device.token, proof)), organisation);
    });
  });

  it('accepts an Ed25519 proof under the spec name EdDSA', async () => {
    const device = await boundDevice(platform, organisation, 'Ed25519');
    expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { header: { alg: 'EdDSA' } }))), organisation);
  });

  it.each(['RS256', 'ES384'] as const)('refuses %s, even from the key the token is bound to', async (alg) => {
    const device = await boundDevice(platform, organisation, 'ES256');
    const key = await newProofKey(alg);
    await bindDevice(platform, device.enrolled.device.id, key);
    expectDpopRefusal(await get(dpopHeaders(device.token, await forged({ ...device, key }))), 'the DPoP proof must be signed with ES256 EdDSA');
  });

  it('refuses an unbound token sent with the DPoP scheme as invalid_token', async () => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
    const token = enrolled.tokens.access_token;
    const keys = await DPoP.generateKeyPair('ES256');
    const res = await get(dpopHeaders(token, await DPoP.generateProof(keys, url, 'GET', undefined, token)));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized', message: 'this token is not bound to a key: send it with the Bearer scheme' });
    expect(res.headers['www-authenticate']).toBe(`DPoP error="invalid_token", ${ALGS}`);
    expectOrganisation(await get({ Authorization: `Bearer ${token}` }), organisation);
  });
});

describe('DPoP server nonces (DPOP_REQUIRE_NONCE=true)', () => {
  const env = { DPOP_REQUIRE_NONCE: 'true', DPOP_NONCE_SECRET: NONCE_SECRET };
  const lifetimeMs = 300_000;
  let platform: TestPlatform;
  let organisation: OrganisationRecord;
  let host: string;
  let url: string;

  beforeAll(async () => {
    platform = await startPlatform({ env });
    organisation = await createOrganisation(platform);
    host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
    url = `http://${host}${PATH}`;
  });
  afterAll(() => platform.close());
  afterEach(() => platform.clock.set(Date.now()));

  const get = (headers: Record<string, string>) => call(platform, 'get', PATH, { host, headers });
  const forged = (device: Bound, options: Partial<ForgeOptions> = {}) =>
    forgeProof(device.key, { htm: 'GET', htu: url, iat: epochSeconds(platform.clock.now()), accessToken: device.token, ...options });

  /** Asserts the use_dpop_nonce answer and returns the nonce it carries. */
  function expectNonceDemand(res: Response): string {
    const message = 'the DPoP proof must carry the current server nonce';
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'use_dpop_nonce', message });
    expect(res.headers['www-authenticate']).toBe(`DPoP error="use_dpop_nonce", error_description="${message}", ${ALGS}`);
    expect(res.headers['dpop-nonce']).toMatch(NONCE_FORMAT);
    return res.headers['dpop-nonce'] as string;
  }

  it.each(['ES256', 'Ed25519'] as const)('%s: demands a nonce, then accepts the retry that carries it', async (alg) => {
    const device = await boundDevice(platform, organisation, alg);
    const keys = device.enrolled.keys!;
    const nonce = expectNonceDemand(await get(dpopHeaders(device.token, await DPoP.generateProof(keys, url, 'GET', undefined, device.token))));
    expectOrganisation(await get(dpopHeaders(device.token, await DPoP.generateProof(keys, url, 'GET', nonce, device.token))), organisation);
  });

  it('hands out a fresh nonce with every successful answer (RFC 9449 8.2), which the next proof may use', async () => {
    const device = await boundDevice(platform, organisation, 'ES256');
    const first = expectNonceDemand(await get(dpopHeaders(device.token, await forged(device))));
    const accepted = await get(dpopHeaders(device.token, await forged(device, { nonce: first })));
    expectOrganisation(accepted, organisation);
    expect(accepted.headers['dpop-nonce']).toMatch(NONCE_FORMAT);
    expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { nonce: accepted.headers['dpop-nonce'] as string }))), organisation);
  });

  it('still answers invalid_dpop_proof, without a nonce, for a proof that is wrong otherwise', async () => {
    const device = await boundDevice(platform, organisation, 'ES256');
    expectDpopRefusal(await get(dpopHeaders(device.token, await forged(device, { htm: 'POST' }))), 'the DPoP proof htm does not match the request method');
  });

  it('accepts a nonce until the end of the next lifetime, refuses it from two lifetimes on with a fresh one', async () => {
    const device = await boundDevice(platform, organisation, 'ES256');
    const stepStart = Math.floor(Date.now() / lifetimeMs) * lifetimeMs;
    platform.clock.set(stepStart);
    const nonce = expectNonceDemand(await get(dpopHeaders(device.token, await forged(device))));

    platform.clock.set(stepStart + 2 * lifetimeMs - 1);
    expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { nonce }))), organisation);

    platform.clock.set(stepStart + 2 * lifetimeMs);
    const fresh = expectNonceDemand(await get(dpopHeaders(device.token, await forged(device, { nonce }))));
    expect(fresh).not.toBe(nonce);
    expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { nonce: fresh }))), organisation);
  });

  it('refuses a forged nonce and one made with another secret, with a fresh nonce', async () => {
    const device = await boundDevice(platform, organisation, 'Ed25519');
    const real = expectNonceDemand(await get(dpopHeaders(device.token, await forged(device))));
    const [step, mac] = real.split('.') as [string, string];
    const otherSecret = new DpopVerifier({
      clock: platform.clock,
      replay: new MemoryReplayCache(platform.clock),
      windowSeconds: 60,
      futureSkewSeconds: 5,
      requireNonce: true,
      nonceSecret: Buffer.alloc(32, 43),
      nonceLifetimeSeconds: 300,
    }).newNonce();
    const forgeries = [`${step}.${'A'.repeat(22)}`, `${step}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`, otherSecret, `${(Number.parseInt(step, 36) + 1).toString(36)}.${mac}`];
    for (const nonce of forgeries) {
      expect(nonce).not.toBe(real);
      const fresh = expectNonceDemand(await get(dpopHeaders(device.token, await forged(device, { nonce }))));
      expect(fresh).toBe(real);
    }
    expectOrganisation(await get(dpopHeaders(device.token, await forged(device, { nonce: real }))), organisation);
  });

  it('takes a nonce another replica with the same DPOP_NONCE_SECRET gave out', async () => {
    const replica = await startPlatform({ env, clock: platform.clock });
    try {
      const elsewhere = await createOrganisation(replica);
      const replicaHost = (await replica.services.organisations.hostsOf(elsewhere.id))[0]!;
      const here = await boundDevice(platform, organisation, 'ES256');
      const there = await boundDevice(replica, elsewhere, 'ES256');
      const nonce = expectNonceDemand(await get(dpopHeaders(here.token, await forged(here))));
      const proof = await forgeProof(there.key, {
        htm: 'GET',
        htu: `http://${replicaHost}${PATH}`,
        iat: epochSeconds(platform.clock.now()),
        accessToken: there.token,
        nonce,
      });
      expectOrganisation(await call(replica, 'get', PATH, { host: replicaHost, headers: dpopHeaders(there.token, proof) }), elsewhere);
    } finally {
      await replica.close();
    }
  });
});

describe('htu behind a reverse proxy', () => {
  const publicHost = uniqueHost('public');
  const forwarded = { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': publicHost };

  describe('with TRUST_PROXY=loopback (supertest connects from loopback)', () => {
    let platform: TestPlatform;
    let organisation: OrganisationRecord;
    let device: Bound;

    beforeAll(async () => {
      platform = await startPlatform({ env: { TRUST_PROXY: 'loopback' } });
      organisation = await createOrganisation(platform, { hosts: [publicHost] });
      device = await boundDevice(platform, organisation, 'ES256');
    });
    afterAll(() => platform.close());

    const get = (headers: Record<string, string>) => call(platform, 'get', PATH, { host: 'platform-internal:3000', headers: { ...forwarded, ...headers } });
    const proofFor = (htu: string) => DPoP.generateProof(device.enrolled.keys!, htu, 'GET', undefined, device.token);

    it('builds htu from X-Forwarded-Proto and X-Forwarded-Host: a proof for the public URL passes', async () => {
      expectOrganisation(await get(dpopHeaders(device.token, await proofFor(`https://${publicHost}${PATH}`))), organisation);
    });

    it('refuses a proof for the address the proxy used', async () => {
      expectDpopRefusal(await get(dpopHeaders(device.token, await proofFor(`http://platform-internal:3000${PATH}`))), 'the DPoP proof htu does not match the request URL');
      expectDpopRefusal(await get(dpopHeaders(device.token, await proofFor(`http://${publicHost}${PATH}`))), 'the DPoP proof htu does not match the request URL');
    });

    it('drops the default port a proxy forwards with the host', async () => {
      const res = await get({ 'X-Forwarded-Host': `${publicHost}:443`, ...dpopHeaders(device.token, await proofFor(`https://${publicHost}${PATH}`)) });
      expectOrganisation(res, organisation);
    });
  });

  describe('without TRUST_PROXY', () => {
    let platform: TestPlatform;
    let organisation: OrganisationRecord;
    let directHost: string;
    let device: Bound;

    beforeAll(async () => {
      platform = await startPlatform();
      directHost = uniqueHost('direct');
      organisation = await createOrganisation(platform, { hosts: [directHost] });
      device = await boundDevice(platform, organisation, 'Ed25519');
    });
    afterAll(() => platform.close());

    const get = (headers: Record<string, string>) => call(platform, 'get', PATH, { host: directHost, headers: { ...forwarded, ...headers } });
    const proofFor = (htu: string) => DPoP.generateProof(device.enrolled.keys!, htu, 'GET', undefined, device.token);

    it('ignores the forwarded headers: a proof for the forwarded URL is refused', async () => {
      expectDpopRefusal(await get(dpopHeaders(device.token, await proofFor(`https://${publicHost}${PATH}`))), 'the DPoP proof htu does not match the request URL');
    });

    it('accepts a proof for the URL the request was addressed to', async () => {
      expectOrganisation(await get(dpopHeaders(device.token, await proofFor(`http://${directHost}${PATH}`))), organisation);
    });
  });
});
