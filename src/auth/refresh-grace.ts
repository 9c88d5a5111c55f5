import { sealJson, unsealJson } from '../util/seal.js';

/**
 * The concurrent-refresh grace shared by device tokens (modules/devices/tokens.ts) and Cloud
 * sessions (modules/signin/sessions.ts). Refresh tokens rotate on every use, and a replaced
 * token presented again ends everything it belongs to; but two processes of one client (an app
 * and its extension, two tabs) may refresh the same token at the same moment. Within a short
 * grace the loser gets the same new pair instead:
 *
 * - the new pair is kept on the replaced token's row only for the grace, sealed (AES-256-GCM)
 *   with a key derived from the replaced refresh token itself, so only its holder can read it;
 * - it is handed out again only while that pair has not itself been used or revoked, and with
 *   what is left of its access token's lifetime;
 * - after the grace the copy is erased, and a replay ends everything.
 */

/** What a refresh answers; `expires_in` is the access token's remaining lifetime in seconds. */
export interface RotatedPair {
  access_token: string;
  refresh_token: string;
  expires_in: number;
}

const GRACE = 'platform refresh grace v1';

export function sealPair(pair: RotatedPair, refreshToken: string, rowId: string): string {
  return sealJson(pair, refreshToken, rowId, GRACE);
}

export function unsealPair<T extends RotatedPair>(sealed: string, refreshToken: string, rowId: string): T | undefined {
  return unsealJson<T>(sealed, refreshToken, rowId, GRACE);
}

/** The grace fields of a refresh token's row. */
export interface GraceRow {
  id: string;
  usedAt: Date | null;
  graceSealed: string | null;
  graceUntil: Date | null;
  revokedAt: Date | null;
}

/**
 * The pair a replayed refresh token may get again, or undefined when the replay must end
 * everything: outside the grace, revoked, unreadable, its access token spent, or the client has
 * moved on from that pair (`movedOn`: its refresh token was used or revoked since).
 */
export async function pairWithinGrace<T extends RotatedPair>(
  row: GraceRow,
  refreshToken: string,
  now: Date,
  movedOn: (pair: T) => Promise<boolean>,
): Promise<T | undefined> {
  // Revoking erases the sealed copy, so a sealed copy means the tokens still stand.
  if (!row.graceSealed || !row.graceUntil || !row.usedAt || row.revokedAt || row.graceUntil.getTime() <= now.getTime()) return undefined;
  const pair = unsealPair<T>(row.graceSealed, refreshToken, row.id);
  if (!pair) return undefined;
  // The pair was issued when the token was marked used: what is left of its access lifetime.
  const remaining = pair.expires_in - Math.ceil((now.getTime() - row.usedAt.getTime()) / 1000);
  if (remaining <= 0 || (await movedOn(pair))) return undefined;
  return { ...pair, expires_in: remaining };
}
