import type { SignInSettings } from './settings.js';
import { ApiError } from '../../errors.js';
import type { SignInStore } from './store.js';

/**
 * Caps on the mails of emailed sign-in codes, checked before a code is made, besides the spec's
 * five per address per hour (counted after the insert, in `startEmail`):
 *
 * - one address gets at most AUTH_EMAIL_CODES_PER_DAY codes in a rolling 24 hours (20): varying
 *   nothing but the time, a client could otherwise have 120 a day sent to someone;
 * - the whole service sends at most AUTH_EMAIL_CODES_PER_MINUTE codes in a rolling minute (60),
 *   every replica together (the codes are rows of the shared database): varying the recipient, a
 *   client could otherwise turn the service into a mailer of 30 codes a minute per network address.
 *
 * Past either: 429 `slow_down` (spec 7) with `Retry-After`, the seconds until the oldest code in
 * the window leaves it. A refused request makes no code, so it counts for nothing. The global cap
 * is a trade: a flood of starts can hold honest people off email sign-in for as long as it lasts
 * (the other providers still work); the proof-of-work check (AUTH_EMAIL_PROOF_OF_WORK_BITS, or a
 * CAPTCHA through `EmailStartCheck`) makes that flood expensive. Rows are kept one day for the
 * daily count (`startEmail` purges what is older).
 */

export const MAIL_CAP_MINUTE_MS = 60_000;
export const MAIL_CAP_DAY_MS = 86_400_000;

function slowDown(retryAfterSeconds: number, message: string): ApiError {
  return new ApiError(429, 'slow_down', `${message}; try again in ${retryAfterSeconds} seconds`, { headers: { 'Retry-After': String(retryAfterSeconds) } });
}

/** Seconds until `oldest` leaves a window of `windowMs` that ends now (at least 1). */
function untilLeaves(oldest: Date | undefined, windowMs: number, now: Date): number {
  const leaves = (oldest?.getTime() ?? now.getTime()) + windowMs;
  return Math.max(1, Math.ceil((leaves - now.getTime()) / 1000));
}

/** Throws 429 `slow_down` when another code now would pass a cap. */
export async function checkMailCaps(
  store: Pick<SignInStore, 'emailCodesSince' | 'emailCodesSentSince'>,
  config: Pick<SignInSettings, 'emailCodesPerDay' | 'emailCodesPerMinute'>,
  addressHash: string,
  now: Date,
): Promise<void> {
  const everyone = await store.emailCodesSentSince(new Date(now.getTime() - MAIL_CAP_MINUTE_MS));
  if (everyone.count >= config.emailCodesPerMinute) {
    throw slowDown(untilLeaves(everyone.oldest, MAIL_CAP_MINUTE_MS, now), 'too many sign-in codes are being sent right now');
  }
  const today = await store.emailCodesSince(addressHash, new Date(now.getTime() - MAIL_CAP_DAY_MS));
  if (today.length >= config.emailCodesPerDay) {
    throw slowDown(untilLeaves(today[0]?.createdAt, MAIL_CAP_DAY_MS, now), 'too many codes were sent to this address today');
  }
}
