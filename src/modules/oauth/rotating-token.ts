/**
 * The rows of rotating token pairs, the same for device tokens (modules/devices) and Cloud
 * session tokens (modules/signin): what the concurrent-refresh grace (auth/refresh-grace.ts)
 * reads and writes. Each module keeps its own table with these columns.
 */

/** A token of a rotating pair (device tokens, Cloud session tokens): what the refresh grace needs. */
export interface RotatingTokenFields {
  id: string;
  kind: 'access' | 'refresh';
  tokenHash: string;
  /** The refresh token this pair was issued with (both tokens of a pair share it). */
  pairId: string;
  expiresAt: Date;
  createdAt: Date;
  /** Refresh tokens: when exchanged; a second exchange after the grace ends everything. */
  usedAt: Date | null;
  /** Refresh tokens: the pair that replaced this one, sealed with a key only the holder of this
   * refresh token can derive; kept for the concurrent-refresh grace only (auth/refresh-grace.ts). */
  graceSealed: string | null;
  graceUntil: Date | null;
  revokedAt: Date | null;
}

const ref = (name: string) => ({ type: 'varchar', length: 40, name }) as const;
const when = (name: string) => ({ type: 'datetime', precision: 3, name }) as const;
const optionalWhen = (name: string) => ({ type: 'datetime', precision: 3, name, nullable: true, default: null }) as const;
const hash = (name: string) => ({ type: 'varchar', length: 64, name }) as const;

/** The columns of a rotating token's row, the same for devices and Cloud sessions. */
export const rotatingTokenColumns = {
  kind: { type: 'varchar', length: 10 },
  tokenHash: hash('token_hash'),
  pairId: ref('pair_id'),
  expiresAt: when('expires_at'),
  createdAt: when('created_at'),
  usedAt: optionalWhen('used_at'),
  graceSealed: { type: 'text', name: 'grace_sealed', nullable: true, default: null },
  graceUntil: optionalWhen('grace_until'),
  revokedAt: optionalWhen('revoked_at'),
} as const;
