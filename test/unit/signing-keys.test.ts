import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, type JWK } from 'jose';
import { createLogger } from '../../src/logger.js';
import {
  MemorySigningKeyStore,
  openPrivateJwk,
  PREPUBLISH_SECONDS,
  sealPrivateJwk,
  SigningKeys,
  type SigningKeyStore,
} from '../../src/modules/relay/signing-keys.js';
import { ManualClock } from '../../src/util/clock.js';

const DAY = 86_400;
const TTL = 60;
const logger = createLogger('silent');

function keys(store: SigningKeyStore, clock: ManualClock, secret = randomBytes(32)) {
  return new SigningKeys(store, clock, { secret, rotationSeconds: 30 * DAY, assertionTtlSeconds: TTL }, logger);
}

const claims = { iss: 'https://platform.test', sub: 'usr_1', aud: 'dev_1', scope: 'tasks:write', run_id: 'run_1' };

async function verify(token: string, set: { keys: JWK[] }, clock: ManualClock) {
  return jwtVerify(token, createLocalJWKSet(set), { issuer: claims.iss, audience: claims.aud, currentDate: clock.now(), typ: 'platform-relay+jwt' });
}

function kidOf(token: string): string {
  return JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid as string;
}

describe('signing keys', () => {
  it('make a first key that signs at once, and sign short-lived assertions with iat, exp and a fresh jti', async () => {
    const clock = new ManualClock();
    const signer = keys(new MemorySigningKeyStore(), clock);
    const first = await signer.sign(claims, 'platform-relay+jwt');
    const second = await signer.sign(claims, 'platform-relay+jwt');
    const set = await signer.jwks();
    expect(set.keys).toHaveLength(1);
    expect(set.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(set.keys[0]).not.toHaveProperty('d');
    const { payload, protectedHeader } = await verify(first, set, clock);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'platform-relay+jwt', kid: set.keys[0]!.kid });
    expect(payload).toMatchObject({ ...claims, iat: clock.now().getTime() / 1000, exp: clock.now().getTime() / 1000 + TTL });
    expect(payload.jti).not.toBe((await verify(second, set, clock)).payload.jti);
    clock.advance((TTL + 1) * 1000);
    await expect(verify(first, set, clock)).rejects.toThrow(/exp/);
  });

  it('rotate without breaking an assertion in flight: the next key is published before it signs, the old one stays until its last assertion expired', async () => {
    const clock = new ManualClock();
    const signer = keys(new MemorySigningKeyStore(), clock);
    const oldKid = (await signer.jwks()).keys[0]!.kid;

    // Just before the old key's turn ends, the next key appears in the set but does not sign yet.
    clock.advance((30 * DAY - PREPUBLISH_SECONDS + 1) * 1000);
    const beforeSwitch = await signer.sign(claims, 'platform-relay+jwt');
    expect(kidOf(beforeSwitch)).toBe(oldKid);
    const both = await signer.jwks();
    expect(both.keys.map((key) => key.kid)).toHaveLength(2);
    const newKid = both.keys[1]!.kid!;

    // Its turn comes: it signs; an assertion the old key signed a moment ago still verifies
    // against the set a verifier fetches now.
    clock.advance(PREPUBLISH_SECONDS * 1000);
    const lastOld = beforeSwitch;
    const afterSwitch = await signer.sign(claims, 'platform-relay+jwt');
    expect(kidOf(afterSwitch)).toBe(newKid);
    clock.advance(30_000);
    const setNow = await signer.jwks();
    expect(setNow.keys.map((key) => key.kid)).toEqual([oldKid, newKid]);
    await expect(verify(afterSwitch, setNow, clock)).resolves.toBeDefined();

    // Once nothing the old key signed can still be valid (lifetime plus a minute for clocks), it leaves the set.
    clock.advance((TTL + 61) * 1000);
    expect((await signer.jwks()).keys.map((key) => key.kid)).toEqual([newKid]);
    await expect(verify(lastOld, await signer.jwks(), clock)).rejects.toThrow();
  });

  it('are shared by replicas on one store: the same set, one key made when both rotate at once', async () => {
    const clock = new ManualClock();
    const store = new MemorySigningKeyStore();
    const secret = randomBytes(32);
    const [a, b] = [keys(store, clock, secret), keys(store, clock, secret)];
    await Promise.all([a.ready(), b.ready()]);
    expect((await store.list()).map((record) => record.generation)).toEqual([1]);
    clock.advance((30 * DAY - PREPUBLISH_SECONDS + 1) * 1000);
    await Promise.all([a.ready(), b.ready()]);
    expect((await store.list()).map((record) => record.generation)).toEqual([1, 2]);
    expect(await a.jwks()).toEqual(await b.jwks());
    // What one replica signs, the set the other publishes verifies.
    await expect(verify(await a.sign(claims, 'platform-relay+jwt'), await b.jwks(), clock)).resolves.toBeDefined();
  });

  it('make a new key at once when none can be opened with this replica\'s secret (the secret changed), and keep publishing the old', async () => {
    const clock = new ManualClock();
    const store = new MemorySigningKeyStore();
    const before = keys(store, clock, randomBytes(32));
    const oldKid = (await before.jwks()).keys[0]!.kid;
    const after = keys(store, clock, randomBytes(32));
    const token = await after.sign(claims, 'platform-relay+jwt');
    expect(kidOf(token)).not.toBe(oldKid);
    expect((await after.jwks()).keys.map((key) => key.kid)).toEqual([oldKid, kidOf(token)]);
  });
});

describe('sealed private keys', () => {
  const jwk: JWK = { kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'private-part' };

  it('open with the same secret and key id only, and keep nothing readable', () => {
    const secret = randomBytes(32);
    const sealed = sealPrivateJwk(secret, 'sk_1', jwk);
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain('private-part');
    expect(openPrivateJwk(secret, 'sk_1', sealed)).toEqual(jwk);
    expect(openPrivateJwk(randomBytes(32), 'sk_1', sealed)).toBeUndefined();
    expect(openPrivateJwk(secret, 'sk_2', sealed)).toBeUndefined();
    const [version, iv, body, tag] = sealed.split('.');
    const flipped = Buffer.from(body!, 'base64url');
    flipped[0] = flipped[0]! ^ 1;
    expect(openPrivateJwk(secret, 'sk_1', [version, iv, flipped.toString('base64url'), tag].join('.'))).toBeUndefined();
    expect(openPrivateJwk(secret, 'sk_1', 'v2.a.b.c')).toBeUndefined();
  });
});
