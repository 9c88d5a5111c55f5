import { createCipheriv, createDecipheriv, generateKeyPairSync, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { importJWK, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { isUniqueViolation } from '../../db/errors.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { SigningKeyEntity, type SigningKeyRecord } from './entities.js';

/**
 * The service's signing keys (ES256): they sign the assertion that goes with every call relayed
 * to a workbench, and `GET /.well-known/jwks.json` publishes their public halves.
 *
 * Where they live: in the database, the private half sealed with AES-256-GCM under a key derived
 * (HKDF-SHA256) from SIGNING_KEYS_SECRET and bound to the key id, so every replica signs with the
 * same keys and publishes the same set, and a copy of the database alone cannot sign. Without the
 * secret they live in this process only (one replica; a restart makes a new key).
 *
 * Rotation is automatic and never breaks an assertion in flight:
 * - a key signs for SIGNING_KEY_ROTATION_SECONDS; PREPUBLISH_SECONDS before its turn ends, the
 *   next key is made and published, so verifiers that cache the key set know it before it signs;
 * - when the next key takes over, the old one stays published until its last assertion has
 *   expired (assertion lifetime plus a minute for clocks that differ), then it is deleted;
 * - replicas re-read the keys every REFRESH_MS; generations are unique, so two replicas rotating
 *   at once make one key.
 * Changing SIGNING_KEYS_SECRET: keys sealed with the old one can no longer sign; a new key is
 * made at once (verifiers refetch the set on its unknown `kid`) and the old ones leave the set
 * as they retire.
 */

export const ASSERTION_ALG = 'ES256';
/** The next key is published this long before it signs: more than the set's HTTP cache life. */
export const PREPUBLISH_SECONDS = 600;
/** Cache-Control max-age of the published set. */
export const JWKS_MAX_AGE_SECONDS = 300;
/** Tolerance for replicas whose clocks differ, added to an old key's time in the set. */
const CLOCK_MARGIN_MS = 60_000;
const REFRESH_MS = 60_000;
const SEAL_VERSION = 'v1';

export interface SigningKeyStore {
  list(): Promise<SigningKeyRecord[]>;
  /** False when another replica made that generation first. */
  insert(record: SigningKeyRecord): Promise<boolean>;
  remove(kids: readonly string[]): Promise<void>;
}

export class DatabaseSigningKeyStore implements SigningKeyStore {
  constructor(private readonly dataSource: DataSource) {}

  list(): Promise<SigningKeyRecord[]> {
    return this.dataSource.getRepository(SigningKeyEntity).find({ order: { generation: 'ASC' } });
  }

  async insert(record: SigningKeyRecord): Promise<boolean> {
    try {
      await this.dataSource.getRepository(SigningKeyEntity).insert(record);
      return true;
    } catch (error) {
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  async remove(kids: readonly string[]): Promise<void> {
    if (kids.length) await this.dataSource.getRepository(SigningKeyEntity).delete([...kids]);
  }
}

export class MemorySigningKeyStore implements SigningKeyStore {
  private readonly records: SigningKeyRecord[] = [];

  async list(): Promise<SigningKeyRecord[]> {
    return [...this.records].sort((a, b) => a.generation - b.generation);
  }

  async insert(record: SigningKeyRecord): Promise<boolean> {
    if (this.records.some((existing) => existing.generation === record.generation)) return false;
    this.records.push(record);
    return true;
  }

  async remove(kids: readonly string[]): Promise<void> {
    for (const kid of kids) {
      const index = this.records.findIndex((record) => record.kid === kid);
      if (index >= 0) this.records.splice(index, 1);
    }
  }
}

export interface SigningKeyOptions {
  /** Seals private keys; random per process when the keys live in memory. */
  secret: Buffer;
  rotationSeconds: number;
  /** Lifetime of what the keys sign: how long a retired key stays published. */
  assertionTtlSeconds: number;
}

interface LoadedKey {
  record: SigningKeyRecord;
  publicJwk: JWK;
  /** Undefined when the private half cannot be opened with this replica's secret. */
  privateKey: CryptoKey | undefined;
}

export interface AssertionClaims {
  iss: string;
  sub: string;
  aud: string;
  scope: string;
  [claim: string]: unknown;
}

function sealingKey(secret: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'platform signing keys v1', 32));
}

export function sealPrivateJwk(secret: Buffer, kid: string, jwk: JWK): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(secret), iv);
  cipher.setAAD(Buffer.from(kid, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(jwk), 'utf8'), cipher.final()]);
  return [SEAL_VERSION, iv.toString('base64url'), ciphertext.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
}

/** The private JWK, or undefined when the seal was made with another secret (or tampered with). */
export function openPrivateJwk(secret: Buffer, kid: string, sealed: string): JWK | undefined {
  const [version, iv, ciphertext, tag] = sealed.split('.');
  if (version !== SEAL_VERSION || !iv || ciphertext === undefined || !tag) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(secret), Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(kid, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as JWK;
  } catch {
    return undefined;
  }
}

export class SigningKeys {
  private keys: LoadedKey[] = [];
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | undefined;
  private readonly unopenable = new Set<string>();

  constructor(
    private readonly store: SigningKeyStore,
    private readonly clock: Clock,
    private readonly options: SigningKeyOptions,
    private readonly logger: Logger,
  ) {
    if (options.rotationSeconds <= PREPUBLISH_SECONDS) throw new Error('the rotation period must be longer than the pre-publication time');
  }

  /** The published set: every key made and not yet retired. */
  async jwks(): Promise<{ keys: JWK[] }> {
    await this.ready();
    return { keys: this.keys.map((key) => key.publicJwk) };
  }

  /** A compact JWS of `claims` by the current key, `iat` now, `exp` after the assertion lifetime, a fresh `jti`. */
  async sign(claims: AssertionClaims, type: string): Promise<string> {
    await this.ready();
    const key = this.current();
    if (!key?.privateKey) throw new Error('no signing key is available');
    const now = Math.floor(this.clock.now().getTime() / 1000);
    return new SignJWT({ ...claims })
      .setProtectedHeader({ alg: ASSERTION_ALG, kid: key.record.kid, typ: type })
      .setIssuedAt(now)
      .setExpirationTime(now + this.options.assertionTtlSeconds)
      .setJti(randomUUID())
      .sign(key.privateKey);
  }

  /** Loads the keys (and makes or retires keys as due). Called at start, so the set is never empty. */
  async ready(): Promise<void> {
    if (this.clock.now().getTime() - this.loadedAt < REFRESH_MS && this.current()) return;
    this.loading ??= this.maintain().finally(() => {
      this.loading = undefined;
    });
    await this.loading;
  }

  /** The key that signs now: the newest one whose turn has come and that this replica can open. */
  private current(): LoadedKey | undefined {
    const now = this.clock.now().getTime();
    let found: LoadedKey | undefined;
    for (const key of this.keys) if (key.record.activatesAt.getTime() <= now && key.privateKey) found = key;
    return found;
  }

  private async maintain(): Promise<void> {
    await this.load();
    const now = this.clock.now().getTime();
    const rotationMs = this.options.rotationSeconds * 1000;
    const newest = this.keys.at(-1);
    if (!newest) {
      await this.create(1, now);
    } else if (!this.current()) {
      // Nothing this replica can sign with (the current key was deleted, or the secret changed):
      // a new key, signing at once.
      this.logger.error({ kid: newest.record.kid }, 'no signing key can sign now (none is active, or none opens with SIGNING_KEYS_SECRET: do all replicas share it?); making a new one');
      await this.create(newest.record.generation + 1, now);
    } else if (now >= newest.record.activatesAt.getTime() + rotationMs - PREPUBLISH_SECONDS * 1000) {
      const activatesAt = Math.max(newest.record.activatesAt.getTime() + rotationMs, now + PREPUBLISH_SECONDS * 1000);
      await this.create(newest.record.generation + 1, activatesAt);
    }
    await this.retire(now);
    this.loadedAt = this.clock.now().getTime();
  }

  /** Keys whose successor took over long enough ago that nothing they signed is still valid. */
  private async retire(now: number): Promise<void> {
    const retired: string[] = [];
    for (let i = 0; i + 1 < this.keys.length; i++) {
      const successor = this.keys[i + 1]!;
      const lastValid = successor.record.activatesAt.getTime() + this.options.assertionTtlSeconds * 1000 + CLOCK_MARGIN_MS;
      if (lastValid < now) retired.push(this.keys[i]!.record.kid);
    }
    if (!retired.length) return;
    await this.store.remove(retired);
    this.keys = this.keys.filter((key) => !retired.includes(key.record.kid));
    this.logger.info({ kids: retired }, 'retired signing keys');
  }

  private async create(generation: number, activatesAt: number): Promise<void> {
    const kid = newId('sk');
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const publicJwk = { ...(publicKey.export({ format: 'jwk' }) as JWK), kid, alg: ASSERTION_ALG, use: 'sig' };
    const privateJwk = privateKey.export({ format: 'jwk' }) as JWK;
    const now = this.clock.now();
    const made = await this.store.insert({
      kid,
      generation,
      publicJwk: JSON.stringify(publicJwk),
      privateSealed: sealPrivateJwk(this.options.secret, kid, privateJwk),
      createdAt: now,
      activatesAt: new Date(activatesAt),
    });
    if (made) this.logger.info({ kid, generation, activatesAt: new Date(activatesAt).toISOString() }, 'made a signing key');
    await this.load();
  }

  private async load(): Promise<void> {
    const records = await this.store.list();
    const known = new Map(this.keys.map((key) => [key.record.kid, key]));
    const keys: LoadedKey[] = [];
    for (const record of records) {
      const existing = known.get(record.kid);
      if (existing) {
        keys.push(existing);
        continue;
      }
      const privateJwk = openPrivateJwk(this.options.secret, record.kid, record.privateSealed);
      if (!privateJwk && !this.unopenable.has(record.kid)) {
        this.unopenable.add(record.kid);
        this.logger.warn({ kid: record.kid }, 'a signing key cannot be opened with SIGNING_KEYS_SECRET; it is published but this replica does not sign with it');
      }
      keys.push({
        record,
        publicJwk: JSON.parse(record.publicJwk) as JWK,
        privateKey: privateJwk ? ((await importJWK(privateJwk, ASSERTION_ALG)) as CryptoKey) : undefined,
      });
    }
    this.keys = keys;
  }
}
