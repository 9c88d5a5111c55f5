import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { ReplayCache } from '../../state/replay-cache.js';
import type { Clock } from '../../util/clock.js';
import { safeEqual } from '../../util/secrets.js';

/**
 * A check a client passes before `POST /auth/v1/email/start` mails a code: the next step for a
 * public Cloud, where the mail caps (mail-caps.ts) bound the mails but a flood of starts can still
 * use up the service-wide cap. Off by default. A deployment wires one by passing it to `buildApp`
 * (`emailStartCheck`): a CAPTCHA (the client sends the widget's token as `proof`, `verify` asks the
 * CAPTCHA provider), or the built-in proof of work below (AUTH_EMAIL_PROOF_OF_WORK_BITS).
 *
 * The route asks the check before anything else of the request is done (after its rate limit);
 * a missing or failing proof is 400 `invalid_request` naming `body.proof`.
 */
export interface EmailStartCheck {
  /** What the client has to do: `proof-of-work`, or the name of a CAPTCHA (`turnstile`, `hcaptcha`). */
  readonly kind: string;
  /** What `GET /auth/v1/email/challenge` answers besides `kind`: the puzzle to solve, if the check makes one. */
  challenge(): Promise<Record<string, string | number>>;
  /** Whether `proof` passes for a code to `email` (lower-cased); each proof passes at most once. */
  verify(proof: string, email: string): Promise<boolean>;
}

/**
 * Hashcash-style proof of work, stateless until used: the challenge is
 * `<expires, unix seconds>.<16 random bytes, base64url>.<HMAC of both under a key of this service>`,
 * valid `ttlSeconds`. The client finds a `nonce` (any 1 to 64 base64url characters) such that
 * SHA-256 of `<challenge>:<email>:<nonce>` (the address lower-cased, as UTF-8) starts with `bits`
 * zero bits, and sends `proof: "<challenge>:<nonce>"` with the address. The service checks the
 * HMAC, the time, the hash, and that the challenge was not used before (the replay cache the DPoP
 * proofs use: one use across replicas with Redis). About 2^bits hashes for the client (20 bits: a
 * million, a second or two in a browser), two for the service.
 */
export class ProofOfWork implements EmailStartCheck {
  readonly kind = 'proof-of-work';

  constructor(
    private readonly options: { bits: number; key: Buffer; clock: Clock; replay: ReplayCache; ttlSeconds?: number },
  ) {}

  private get ttlSeconds(): number {
    return this.options.ttlSeconds ?? 300;
  }

  private mac(text: string): string {
    return createHmac('sha256', this.options.key).update(`email start proof of work\n${text}`).digest('base64url');
  }

  async challenge(): Promise<Record<string, string | number>> {
    const expires = Math.floor(this.options.clock.now().getTime() / 1000) + this.ttlSeconds;
    const body = `${expires}.${randomBytes(16).toString('base64url')}`;
    return { challenge: `${body}.${this.mac(body)}`, bits: this.options.bits, expiresIn: this.ttlSeconds, algorithm: 'sha-256(challenge:email:nonce)' };
  }

  async verify(proof: string, email: string): Promise<boolean> {
    if (proof.length > 200) return false;
    const [challenge, nonce, extra] = proof.split(':');
    if (challenge === undefined || nonce === undefined || extra !== undefined || !/^[\w-]{1,64}$/.test(nonce)) return false;
    const [expires, random, mac, rest] = challenge.split('.');
    if (expires === undefined || random === undefined || mac === undefined || rest !== undefined || !/^\d{1,12}$/.test(expires)) return false;
    if (!safeEqual(mac, this.mac(`${expires}.${random}`))) return false;
    const expiresAt = new Date(Number(expires) * 1000);
    if (expiresAt.getTime() <= this.options.clock.now().getTime()) return false;
    if (!hasLeadingZeroBits(createHash('sha256').update(`${challenge}:${email}:${nonce}`, 'utf8').digest(), this.options.bits)) return false;
    return this.options.replay.unique(`email-start-pow:${random}`, expiresAt);
  }
}

/** Whether `digest` starts with `bits` zero bits. */
export function hasLeadingZeroBits(digest: Buffer, bits: number): boolean {
  const whole = Math.floor(bits / 8);
  for (let i = 0; i < whole; i++) if (digest[i] !== 0) return false;
  const rest = bits % 8;
  return rest === 0 || (digest[whole]! >> (8 - rest)) === 0;
}

/** A nonce for a challenge (what a client does; the tests and the docs' example use it). */
export function solveProofOfWork(challenge: string, email: string, bits: number): string {
  for (let n = 0; ; n++) {
    const nonce = n.toString(36);
    if (hasLeadingZeroBits(createHash('sha256').update(`${challenge}:${email}:${nonce}`, 'utf8').digest(), bits)) return nonce;
  }
}
