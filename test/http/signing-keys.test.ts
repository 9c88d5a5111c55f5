import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../src/logger.js';
import { SigningKeyEntity } from '../../src/modules/relay/entities.js';
import { DatabaseSigningKeyStore, PREPUBLISH_SECONDS, SigningKeys } from '../../src/modules/relay/signing-keys.js';
import { call, startPlatform, type TestPlatform } from '../support/platform.js';

// Signing keys kept in the database (SIGNING_KEYS_SECRET set), as several replicas share them.
const secret = randomBytes(32);
let platform: TestPlatform;

beforeAll(async () => {
  platform = await startPlatform({ env: { SIGNING_KEYS_SECRET: secret.toString('base64url') } });
});
afterAll(() => platform.close());

function replica(withSecret = secret): SigningKeys {
  return new SigningKeys(new DatabaseSigningKeyStore(platform.dataSource), platform.clock, { secret: withSecret, rotationSeconds: 30 * 86_400, assertionTtlSeconds: 60 }, createLogger('silent'));
}

describe('signing keys in the database', () => {
  it('are made at start, published, and stored with the private half sealed', async () => {
    const res = await call(platform, 'get', '/.well-known/jwks.json');
    expect(res.body.keys).toHaveLength(1);
    const rows = await platform.dataSource.getRepository(SigningKeyEntity).find();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.kid).toBe(res.body.keys[0].kid);
    expect(rows[0]!.privateSealed).toMatch(/^v1\./);
    expect(rows[0]!.privateSealed).not.toContain('"d"');
    expect(JSON.parse(rows[0]!.publicJwk)).toEqual(res.body.keys[0]);
  });

  it('are the same for every replica (and after a restart): one set, one signer', async () => {
    const [a, b] = [replica(), replica()];
    const published = (await call(platform, 'get', '/.well-known/jwks.json')).body;
    expect(await a.jwks()).toEqual(published);
    expect(await b.jwks()).toEqual(published);
  });

  it('rotate once when replicas rotate at the same moment (generations are unique)', async () => {
    platform.clock.advance((30 * 86_400 - PREPUBLISH_SECONDS + 1) * 1000);
    const replicas = [replica(), replica(), replica()];
    await Promise.all(replicas.map((keys) => keys.ready()));
    const rows = await platform.dataSource.getRepository(SigningKeyEntity).find({ order: { generation: 'ASC' } });
    expect(rows.map((row) => row.generation)).toEqual([1, 2]);
    for (const keys of replicas) expect((await keys.jwks()).keys.map((key) => key.kid)).toEqual(rows.map((row) => row.kid));
  });

  it('let a replica whose secret differs make a key it can open, which every replica then publishes', async () => {
    const stranger = replica(randomBytes(32));
    const set = await stranger.jwks();
    // It cannot open the current key, so it makes one it can: still one set for everyone.
    expect(set.keys.length).toBeGreaterThanOrEqual(3);
    expect((await replica().jwks()).keys.map((key) => key.kid)).toEqual(set.keys.map((key) => key.kid));
  });
});
