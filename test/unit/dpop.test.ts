import { createPublicKey, verify } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import * as DPoP from 'dpop';
import { CompactSign } from 'jose';
import { DpopError, DpopVerifier, normaliseHtu, type DpopOptions, type ProofExpectations } from '../../src/auth/dpop.js';
import { MemoryReplayCache } from '../../adapters/state/memory-replay-cache.js';
import type { ReplayCache } from '../../src/state/replay-cache.js';
import { ManualClock } from '../../src/util/clock.js';
import { epochSeconds, forgeProof, keylessProof, newProofKey, proofClaims, SMALL_ORDER_ED25519, type ForgeOptions, type ProofKey } from '../support/dpop-proofs.js';

// The verifier alone: a ManualClock and an in-memory replay cache, no HTTP.

const URL_ = 'https://org.example.test/platform/v1/organisation';
const TOKEN = 'platform_at_unit-test-token';
const NONCE_SECRET = Buffer.alloc(32, 7);

function setup(options: Partial<DpopOptions> = {}, start: number = Date.now()) {
  const clock = options.clock instanceof ManualClock ? options.clock : new ManualClock(start);
  const replay = options.replay ?? new MemoryReplayCache(clock);
  const verifier = new DpopVerifier({
    windowSeconds: 60,
    futureSkewSeconds: 5,
    requireNonce: false,
    nonceSecret: NONCE_SECRET,
    nonceLifetimeSeconds: 300,
    ...options,
    clock,
    replay,
  });
  return { clock, replay, verifier };
}

/** What the verifier threw, or a failure when it accepted. */
async function refusal(verifier: DpopVerifier, proof: string | undefined, expected: ProofExpectations): Promise<DpopError> {
  try {
    await verifier.verify(proof, expected);
  } catch (error) {
    if (error instanceof DpopError) return error;
    throw error;
  }
  throw new Error('the proof was accepted');
}

function forge(key: ProofKey, clock: ManualClock, options: Partial<ForgeOptions> = {}): Promise<string> {
  return forgeProof(key, { htm: 'GET', htu: URL_, iat: epochSeconds(clock.now()), accessToken: TOKEN, ...options });
}

const expectations = (key: ProofKey, more: Partial<ProofExpectations> = {}): ProofExpectations => ({
  method: 'GET',
  url: URL_,
  accessToken: TOKEN,
  boundJkt: key.jkt,
  ...more,
});

describe('normaliseHtu', () => {
  it.each([
    ['https://Org.Example.TEST/platform/v1/organisation', 'https://org.example.test/platform/v1/organisation'],
    ['HTTPS://org.example.test:443/platform/v1/organisation', 'https://org.example.test/platform/v1/organisation'],
    ['http://org.example.test:80/p', 'http://org.example.test/p'],
    ['http://org.example.test:8080/p', 'http://org.example.test:8080/p'],
    ['https://org.example.test/p?query=1#fragment', 'https://org.example.test/p'],
    ['https://org.example.test', 'https://org.example.test/'],
  ])('%s is %s', (input, output) => {
    expect(normaliseHtu(input)).toBe(output);
  });

  it.each(['', 'not a url', '/platform/v1/organisation', 'ftp://org.example.test/p', 'wss://org.example.test/p'])('%j is not an htu', (input) => {
    expect(normaliseHtu(input)).toBeUndefined();
  });

  it('keeps the path case and its trailing slash', () => {
    expect(normaliseHtu('https://h.test/Platform/')).toBe('https://h.test/Platform/');
    expect(normaliseHtu('https://h.test/Platform/')).not.toBe(normaliseHtu('https://h.test/platform'));
  });
});

describe('DpopVerifier', () => {
  it.each(['ES256', 'Ed25519'] as const)('accepts a proof the dpop package made with %s and names its key and jti', async (alg) => {
    const { verifier } = setup();
    const keys = await DPoP.generateKeyPair(alg);
    const proof = await DPoP.generateProof(keys, URL_, 'GET', undefined, TOKEN);
    const jkt = await DPoP.calculateThumbprint(keys.publicKey);
    await expect(verifier.verify(proof, { method: 'GET', url: URL_, accessToken: TOKEN, boundJkt: jkt })).resolves.toEqual({
      jkt,
      jti: proofClaims(proof).jti,
    });
  });

  it('accepts an Ed25519 key under the spec name EdDSA as well as Ed25519', async () => {
    const { clock, verifier } = setup();
    const key = await newProofKey('Ed25519');
    await expect(verifier.verify(await forge(key, clock, { header: { alg: 'EdDSA' } }), expectations(key))).resolves.toMatchObject({ jkt: key.jkt });
    await expect(verifier.verify(await forge(key, clock, { header: { alg: 'Ed25519' } }), expectations(key))).resolves.toMatchObject({ jkt: key.jkt });
  });

  it('at a token endpoint (no access token, nothing bound yet) needs no ath and takes any key', async () => {
    const { clock, verifier } = setup();
    const key = await newProofKey('ES256');
    const proof = await forge(key, clock, { htm: 'POST', accessToken: undefined });
    await expect(verifier.verify(proof, { method: 'POST', url: URL_ })).resolves.toMatchObject({ jkt: key.jkt });
  });

  it('refuses any htu when the request URL itself cannot be made into one', async () => {
    const { clock, verifier } = setup();
    const key = await newProofKey('ES256');
    // Both sides unparseable must not count as equal.
    const error = await refusal(verifier, await forge(key, clock, { htu: 'not a url' }), expectations(key, { url: '' }));
    expect(error.code).toBe('invalid_dpop_proof');
    expect(error.message).toBe('the DPoP proof htu does not match the request URL');
    // Control: a parseable request URL and the matching htu pass.
    await expect(verifier.verify(await forge(key, clock), expectations(key))).resolves.toMatchObject({ jkt: key.jkt });
  });

  it('refuses an htu that is not http(s), even with the same host and path', async () => {
    const { clock, verifier } = setup();
    const key = await newProofKey('ES256');
    const error = await refusal(verifier, await forge(key, clock, { htu: 'wss://org.example.test/platform/v1/organisation' }), expectations(key));
    expect(error.message).toBe('the DPoP proof htu does not match the request URL');
  });

  it('names the claim jose refuses, and a payload that is not a JSON object, rather than blaming the signature', async () => {
    const { clock, verifier } = setup();
    const key = await newProofKey('ES256');
    const pastExp = await forge(key, clock, { claims: { exp: epochSeconds(clock.now()) - 1 } });
    expect((await refusal(verifier, pastExp, expectations(key))).message).toBe('the DPoP proof exp claim is not valid');
    const textIat = await forge(key, clock, { claims: { iat: 'now' } });
    expect((await refusal(verifier, textIat, expectations(key))).message).toBe('the DPoP proof iat claim is not valid');
    const header = { typ: 'dpop+jwt', alg: 'ES256', jwk: key.publicJwk };
    const notJson = await new CompactSign(new TextEncoder().encode('not json')).setProtectedHeader(header).sign(key.privateKey);
    expect((await refusal(verifier, notJson, expectations(key))).message).toBe('the DPoP proof is not a well-formed JWT');
    const badSignature = `${(await forge(key, clock)).slice(0, -4)}AAAA`;
    expect((await refusal(verifier, badSignature, expectations(key))).message).toBe('the DPoP proof signature is invalid');
  });

  it('checks a header once, and still checks every proof against it: signature, bound key, claims', async () => {
    const { clock, verifier } = setup();
    const key = await newProofKey('ES256');
    const other = await newProofKey('ES256');
    await expect(verifier.verify(await forge(key, clock), expectations(key))).resolves.toMatchObject({ jkt: key.jkt });
    // The same header (now known), a signature of another key over it: refused.
    const signedByOther = await forge(other, clock, { header: { jwk: key.publicJwk } });
    expect((await refusal(verifier, signedByOther, expectations(key))).message).toBe('the DPoP proof signature is invalid');
    const tampered = `${(await forge(key, clock)).slice(0, -4)}AAAA`;
    expect((await refusal(verifier, tampered, expectations(key))).message).toBe('the DPoP proof signature is invalid');
    expect((await refusal(verifier, await forge(key, clock), expectations(other))).message).toBe('the DPoP proof is signed by another key');
    expect((await refusal(verifier, await forge(key, clock, { htm: 'POST' }), expectations(key))).message).toBe('the DPoP proof htm does not match the request method');
    // A header that failed its checks is checked (and refused) again each time.
    for (let attempt = 0; attempt < 2; attempt++) {
      expect((await refusal(verifier, await forge(key, clock, { header: { typ: 'jwt' } }), expectations(key))).message).toBe('the DPoP proof must have typ dpop+jwt');
    }
    await expect(verifier.verify(await forge(key, clock), expectations(key))).resolves.toMatchObject({ jkt: key.jkt });
    // A long header (extra members) is accepted as before, checked afresh each time.
    const padded = { header: { pad: 'x'.repeat(600) } };
    await expect(verifier.verify(await forge(key, clock, padded), expectations(key))).resolves.toMatchObject({ jkt: key.jkt });
    expect((await refusal(verifier, await forge(other, clock, { header: { jwk: key.publicJwk, pad: 'x'.repeat(600) } }), expectations(key))).message).toBe('the DPoP proof signature is invalid');
  });

  it.each(['ES256', 'Ed25519'] as const)('checks many %s signatures at once (on the thread pool), each answer its own proof', async (alg) => {
    // Signatures are checked on libuv's thread pool, so several are in flight together: valid and
    // forged proofs interleaved must each get their own answer, and a replay among them is refused.
    const { clock, verifier } = setup();
    const key = await newProofKey(alg);
    const other = await newProofKey(alg);
    const proofs = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const kind = (['valid', 'forged', 'tampered'] as const)[i % 3]!;
        if (kind === 'valid') return { kind, proof: await forge(key, clock) };
        if (kind === 'forged') return { kind, proof: await forge(other, clock, { header: { jwk: key.publicJwk } }) };
        const proof = await forge(key, clock);
        const [header, payload, signature] = proof.split('.') as [string, string, string];
        // Another valid-length signature: the first byte flipped.
        const bytes = Buffer.from(signature, 'base64url');
        bytes[0] = bytes[0]! ^ 0xff;
        return { kind, proof: `${header}.${payload}.${bytes.toString('base64url')}` };
      }),
    );
    const replayed = proofs[0]!.proof;
    const answers = await Promise.allSettled([...proofs.map(({ proof }) => verifier.verify(proof, expectations(key))), verifier.verify(replayed, expectations(key))]);
    proofs.forEach(({ kind, proof }, i) => {
      const answer = answers[i]!;
      if (kind === 'valid' && i !== 0) {
        expect(answer).toMatchObject({ status: 'fulfilled', value: { jkt: key.jkt, jti: proofClaims(proof).jti } });
      } else if (kind !== 'valid') {
        expect(answer).toMatchObject({ status: 'rejected', reason: { message: 'the DPoP proof signature is invalid' } });
      }
    });
    // The first valid proof was sent twice: exactly one of the two was accepted.
    const twice = [answers[0], answers[answers.length - 1]!];
    expect(twice.filter((answer) => answer.status === 'fulfilled')).toHaveLength(1);
    expect(twice.find((answer) => answer.status === 'rejected')).toMatchObject({ reason: { message: 'the DPoP proof was already used' } });
  });

  it.each(Object.entries(SMALL_ORDER_ED25519))('refuses an Ed25519 key of small order (%s), whose signatures need no private key', async (_label, x) => {
    const { clock, verifier } = setup();
    const made = await keylessProof(x, { htm: 'GET', htu: URL_, iat: epochSeconds(clock.now()), accessToken: TOKEN });
    if (x === SMALL_ORDER_ED25519.identity) {
      // The control: node:crypto itself takes this keyless signature over these bytes.
      expect(verify(null, made.signed, createPublicKey({ key: { ...made.jwk } as Record<string, string>, format: 'jwk' }), made.signature)).toBe(true);
    }
    for (const expected of [expectations({ jkt: made.jkt } as ProofKey), { method: 'GET', url: URL_ }]) {
      expect((await refusal(verifier, made.proof, expected)).message).toBe('the DPoP proof signature is invalid');
    }
    // A real Ed25519 key is still taken, before and after.
    const key = await newProofKey('Ed25519');
    await expect(verifier.verify(await forge(key, clock), expectations(key))).resolves.toMatchObject({ jkt: key.jkt });
  });

  describe('replay', () => {
    it('refuses the same jti again for the same key, method and URL, however the proof differs', async () => {
      const { clock, verifier } = setup();
      const key = await newProofKey('Ed25519');
      await verifier.verify(await forge(key, clock, { jti: 'once' }), expectations(key));
      clock.advance(1_000);
      const error = await refusal(verifier, await forge(key, clock, { jti: 'once' }), expectations(key));
      expect(error.message).toBe('the DPoP proof was already used');
      // Control: a new jti passes.
      await expect(verifier.verify(await forge(key, clock, { jti: 'twice' }), expectations(key))).resolves.toEqual({ jkt: key.jkt, jti: 'twice' });
    });

    it('remembers a jti per key, method and URL (RFC 9449 11.1: in the context of the target URI)', async () => {
      const { clock, verifier } = setup();
      const key = await newProofKey('ES256');
      const other = await newProofKey('ES256');
      await verifier.verify(await forge(key, clock, { jti: 'shared' }), expectations(key));
      const otherUrl = 'https://org.example.test/platform/v1/other';
      await expect(verifier.verify(await forge(key, clock, { jti: 'shared', htu: otherUrl }), expectations(key, { url: otherUrl }))).resolves.toBeDefined();
      await expect(verifier.verify(await forge(key, clock, { jti: 'shared', htm: 'POST' }), expectations(key, { method: 'POST' }))).resolves.toBeDefined();
      await expect(verifier.verify(await forge(other, clock, { jti: 'shared' }), expectations(other))).resolves.toBeDefined();
      expect((await refusal(verifier, await forge(key, clock, { jti: 'shared' }), expectations(key))).message).toBe('the DPoP proof was already used');
    });

    it('treats a query or fragment in htu as the same URL for replay', async () => {
      const { clock, verifier } = setup();
      const key = await newProofKey('ES256');
      await verifier.verify(await forge(key, clock, { jti: 'q', htu: `${URL_}?a=1` }), expectations(key));
      const error = await refusal(verifier, await forge(key, clock, { jti: 'q', htu: `${URL_}#b` }), expectations(key));
      expect(error.message).toBe('the DPoP proof was already used');
    });

    it.each([0, 5])('remembers a proof up to the last instant its iat is accepted (future skew %i s)', async (futureSkewSeconds) => {
      const start = Math.floor(Date.now() / 1000) * 1000;
      const { clock, verifier } = setup({ futureSkewSeconds }, start);
      const key = await newProofKey('ES256');
      const proof = await forge(key, clock);
      // The last instant the iat is inside the window: first use passes, a replay must not.
      clock.set(start + 60_000);
      await expect(verifier.verify(proof, expectations(key))).resolves.toBeDefined();
      expect((await refusal(verifier, proof, expectations(key))).message).toBe('the DPoP proof was already used');
      // A millisecond later the proof is simply too old.
      clock.advance(1);
      expect((await refusal(verifier, proof, expectations(key))).message).toBe('the DPoP proof is too old');
    });

    it('does not burn the jti of a proof it refused', async () => {
      const { clock, verifier } = setup();
      const key = await newProofKey('ES256');
      expect((await refusal(verifier, await forge(key, clock, { jti: 'kept', htm: 'POST' }), expectations(key))).message).toBe(
        'the DPoP proof htm does not match the request method',
      );
      await expect(verifier.verify(await forge(key, clock, { jti: 'kept' }), expectations(key))).resolves.toEqual({ jkt: key.jkt, jti: 'kept' });
    });

    it('fails closed when the replay cache fails: the error propagates, the proof is not accepted', async () => {
      const broken: ReplayCache = { unique: () => Promise.reject(new Error('replay cache unreachable')) };
      const { clock, verifier } = setup({ replay: broken });
      const key = await newProofKey('ES256');
      await expect(verifier.verify(await forge(key, clock), expectations(key))).rejects.toThrow('replay cache unreachable');
    });
  });

  describe('nonces', () => {
    const lifetime = 300;
    const stepStart = (step: number) => step * lifetime * 1000;

    it('accepts a nonce in its own step and the next, and refuses it from the step after', async () => {
      const step = Math.floor(Date.now() / 1000 / lifetime);
      const { clock, verifier } = setup({ requireNonce: true }, stepStart(step));
      const key = await newProofKey('ES256');
      const nonce = verifier.newNonce();

      clock.set(stepStart(step + 2) - 1);
      await expect(verifier.verify(await forge(key, clock, { nonce }), expectations(key))).resolves.toBeDefined();

      clock.set(stepStart(step + 2));
      const error = await refusal(verifier, await forge(key, clock, { nonce }), expectations(key));
      expect(error.code).toBe('use_dpop_nonce');
      expect(error.nonce).toBeDefined();
      expect(error.nonce).not.toBe(nonce);
      await expect(verifier.verify(await forge(key, clock, { nonce: error.nonce! }), expectations(key))).resolves.toBeDefined();
    });

    it('refuses a nonce from the future (a step not reached yet)', async () => {
      const step = Math.floor(Date.now() / 1000 / lifetime);
      const { clock, verifier } = setup({ requireNonce: true }, stepStart(step + 1));
      const key = await newProofKey('ES256');
      const future = verifier.newNonce();
      clock.set(stepStart(step));
      expect((await refusal(verifier, await forge(key, clock, { nonce: future }), expectations(key))).code).toBe('use_dpop_nonce');
    });

    it('refuses a nonce made with another secret, and malformed nonces', async () => {
      const { clock, verifier } = setup({ requireNonce: true });
      const { verifier: stranger } = setup({ requireNonce: true, nonceSecret: Buffer.alloc(32, 8), clock });
      const key = await newProofKey('ES256');
      const own = verifier.newNonce();
      const foreign = stranger.newNonce();
      expect(foreign.split('.')[0]).toBe(own.split('.')[0]);
      for (const nonce of [foreign, '', '.', 'zzzzzzzzzzzzzzzzzz.x', own.split('.')[0]!, `${own}x`, own.toUpperCase()]) {
        const error = await refusal(verifier, await forge(key, clock, { nonce }), expectations(key));
        expect([nonce, error.code]).toEqual([nonce, 'use_dpop_nonce']);
      }
      const wrongType = await refusal(verifier, await forge(key, clock, { claims: { nonce: 12 } }), expectations(key));
      expect(wrongType.code).toBe('use_dpop_nonce');
      await expect(verifier.verify(await forge(key, clock, { nonce: own }), expectations(key))).resolves.toBeDefined();
    });

    it('checks the nonce only once the proof is otherwise valid, so a bad proof gets no nonce', async () => {
      const { clock, verifier } = setup({ requireNonce: true });
      const key = await newProofKey('ES256');
      const error = await refusal(verifier, await forge(key, clock, { htm: 'POST' }), expectations(key));
      expect(error.code).toBe('invalid_dpop_proof');
      expect(error.nonce).toBeUndefined();
    });
  });
});

describe('MemoryReplayCache', () => {
  it('refuses a key until its expiry, and takes it again from that instant', async () => {
    const clock = new ManualClock(1_000_000);
    const cache = new MemoryReplayCache(clock);
    const expiresAt = new Date(1_060_000);
    expect(await cache.unique('k', expiresAt)).toBe(true);
    expect(await cache.unique('k', expiresAt)).toBe(false);
    expect(await cache.unique('other', expiresAt)).toBe(true);
    clock.set(1_059_999);
    expect(await cache.unique('k', expiresAt)).toBe(false);
    clock.set(1_060_000);
    expect(await cache.unique('k', new Date(1_120_000))).toBe(true);
    expect(await cache.unique('k', new Date(1_120_000))).toBe(false);
  });

  it('of many concurrent sightings of one key, says true exactly once', async () => {
    const cache = new MemoryReplayCache(new ManualClock(0));
    const answers = await Promise.all(Array.from({ length: 50 }, () => cache.unique('same', new Date(60_000))));
    expect(answers.filter(Boolean)).toHaveLength(1);
  });

  it('sweeps expired entries as new ones arrive, at most once per sweep interval', async () => {
    const clock = new ManualClock(0);
    const cache = new MemoryReplayCache(clock, 10_000);
    for (let i = 0; i < 100; i += 1) await cache.unique(`short-${i}`, new Date(5_000));
    await cache.unique('long', new Date(120_000));
    expect(cache.size).toBe(101);

    // Expired, but the next sweep is not due yet (the first call swept at 0, the next at 10 000).
    clock.set(9_999);
    await cache.unique('new-1', new Date(120_000));
    expect(cache.size).toBe(102);

    clock.set(10_000);
    await cache.unique('new-2', new Date(120_000));
    expect(cache.size).toBe(3);
    expect(await cache.unique('long', new Date(120_000))).toBe(false);
    expect(await cache.unique('short-0', new Date(120_000))).toBe(true);
  });
});
