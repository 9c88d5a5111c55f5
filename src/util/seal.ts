import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Values a row keeps for whoever holds a secret, and for nobody else: JSON sealed with
 * AES-256-GCM under a key derived (HKDF-SHA-256) from that secret, with a salt naming the row and
 * an `info` label naming the purpose. Reading the table alone opens nothing; the secret itself is
 * stored, if at all, only as a hash. Used by the device refresh grace and Cloud session grace
 * (auth/refresh-grace.ts), the approval page's sessions, and Cloud sign-in flows in flight.
 */

function key(secret: string, salt: string, info: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, salt, info, 32));
}

export function sealJson(data: unknown, secret: string, salt: string, info: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key(secret, salt, info), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** The sealed value, or undefined when it was sealed under another secret, salt or label, or altered. */
export function unsealJson<T>(sealed: string, secret: string, salt: string, info: string): T | undefined {
  try {
    const raw = Buffer.from(sealed, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key(secret, salt, info), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as T;
  } catch {
    return undefined;
  }
}
