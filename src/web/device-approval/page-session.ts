import { createHmac } from 'node:crypto';
import { EntitySchema, LessThan, type DataSource } from 'typeorm';
import type { Clock } from '../../util/clock.js';
import { sealJson, unsealJson } from '../../util/seal.js';
import { hashSecret, newSecret, safeEqual } from '../../util/secrets.js';
import type { PageNotice } from './notices.js';

/**
 * Browser sessions of the approval page at `verification_uri` (`/device`).
 *
 * A row starts as a sign-in in progress (`signing_in`: the PKCE verifier, nonce and `state` of
 * one authorization request) and is replaced by a signed-in session (`signed_in`) when the
 * provider sends the person back. The browser holds only a random secret in an HttpOnly cookie;
 * the row is found by the secret's SHA-256 hash, and whatever the row must keep secret (PKCE
 * verifier, nonce, the user code being approved) is sealed with AES-256-GCM under a key derived
 * from the cookie secret. Reading the table alone neither finishes a sign-in nor rides a session.
 *
 * Sign-ins are single use (consumed, by the callback whose `state` matches, before the code is
 * exchanged; a callback with another `state` leaves them be) and the signed-in session gets
 * a new secret (no session fixation). Both stages are short-lived and end at a fixed time: no
 * sliding expiry.
 */

export type WebSessionStage = 'signing_in' | 'signed_in';

export interface WebSessionRecord {
  /** SHA-256 (hex) of the cookie secret; the secret itself is never stored. */
  idHash: string;
  /** Self-hosted: the organisation at whose host the page was opened. Cloud: none (the person
   * chooses the organisation when approving). */
  organisationId: string | null;
  stage: WebSessionStage;
  /** The signed-in person (`signed_in` only). */
  personId: string | null;
  /** SHA-256 of the authorization request's `state` (`signing_in` only). */
  stateHash: string | null;
  /** AES-256-GCM under a key derived from the cookie secret: the stage's private data. */
  sealed: string;
  expiresAt: Date;
  createdAt: Date;
}

const when = (name: string) => ({ type: 'datetime', precision: 3, name }) as const;

export const WebSessionEntity = new EntitySchema<WebSessionRecord>({
  name: 'WebSession',
  tableName: 'web_sessions',
  columns: {
    idHash: { type: 'varchar', length: 64, primary: true, name: 'id_hash' },
    organisationId: { type: 'varchar', length: 40, name: 'organisation_id', nullable: true, default: null },
    stage: { type: 'varchar', length: 20 },
    personId: { type: 'varchar', length: 40, name: 'person_id', nullable: true, default: null },
    stateHash: { type: 'varchar', length: 64, name: 'state_hash', nullable: true, default: null },
    sealed: { type: 'text' },
    expiresAt: when('expires_at'),
    createdAt: when('created_at'),
  },
  indices: [
    { name: 'web_sessions_expires', columns: ['expiresAt'] },
    { name: 'web_sessions_organisation', columns: ['organisationId'] },
    { name: 'web_sessions_person', columns: ['personId'] },
  ],
  foreignKeys: [
    { name: 'fk_web_sessions_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    { name: 'fk_web_sessions_person', target: 'Person', columnNames: ['personId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

/** Cookie secrets carry a prefix like every other secret of the service. */
export const WEB_SESSION_PREFIX = 'platform_ws_';

/** What a sign-in in progress must remember until the provider sends the person back. */
export interface PendingSignIn {
  codeVerifier: string;
  nonce: string;
  /** The user code the person came to approve, if any: shown again after sign-in. */
  userCode: string | undefined;
  /** Cloud, emailed code: the address the code was sent to. */
  email?: string | undefined;
  /** What the next page shows once (post, redirect, get). */
  notice?: PageNotice | undefined;
}

export interface SignedInSession {
  /** Self-hosted: the organisation of the host; Cloud: none (chosen when approving). */
  organisationId: string | null;
  personId: string;
  personName: string;
  /** The code being approved in this session (kept out of URLs after sign-in). */
  userCode: string | undefined;
  /** What the next page shows once (post, redirect, get). */
  notice: PageNotice | undefined;
  expiresAt: Date;
}

export interface WebSessionLifetimes {
  /** From "Sign in" to the provider's answer. */
  signInTtlSeconds: number;
  /** A signed-in session, from sign-in; it is not extended by use. */
  sessionTtlSeconds: number;
}

/**
 * A session's cookie outlives the session by this much, and so does its row (the sweeper keeps
 * rows an hour past expiry too): only to find the code the person was approving when the session
 * ran out, so that signing in again continues with it. A lapsed session signs nothing.
 */
export const LAPSED_SESSION_GRACE_SECONDS = 3600;

export const DEFAULT_WEB_SESSION_LIFETIMES: WebSessionLifetimes = { signInTtlSeconds: 600, sessionTtlSeconds: 900 };

const PAGE = 'platform device page session v1';
const seal = (data: unknown, secret: string, idHash: string): string => sealJson(data, secret, idHash, PAGE);
const unseal = <T>(sealed: string, secret: string, idHash: string): T | undefined => unsealJson<T>(sealed, secret, idHash, PAGE);

/**
 * The synchronizer token of a session's forms: an HMAC of a fixed label under the session
 * secret. Only the holder of the (HttpOnly) cookie secret can compute it, it is the same for
 * every form of the session, and it dies with the session.
 */
export function csrfTokenOf(secret: string): string {
  return createHmac('sha256', secret).update('platform device page csrf v1').digest('base64url');
}

interface SignedInData {
  personName: string;
  userCode?: string;
  notice?: PageNotice;
}

/** The only code that reads and writes `web_sessions`. */
export class WebSessions {
  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    readonly lifetimes: WebSessionLifetimes = DEFAULT_WEB_SESSION_LIFETIMES,
  ) {}

  private get repository() {
    return this.dataSource.getRepository(WebSessionEntity);
  }

  private async live(secret: string, organisationId: string | null, stage: WebSessionStage): Promise<WebSessionRecord | undefined> {
    if (!secret.startsWith(WEB_SESSION_PREFIX) || secret.length > 100) return undefined;
    const record = await this.repository.findOneBy({ idHash: hashSecret(secret) });
    if (!record || record.stage !== stage || record.organisationId !== organisationId) return undefined;
    if (record.expiresAt.getTime() <= this.clock.now().getTime()) return undefined;
    return record;
  }

  /** A new sign-in in progress; answers the cookie secret that names it. */
  async beginSignIn(organisationId: string | null, state: string, pending: PendingSignIn): Promise<{ secret: string; maxAgeSeconds: number }> {
    const now = this.clock.now();
    // Abandoned sign-ins and old sessions go on the way, past the grace a lapsed session's code is kept.
    await this.repository.delete({ expiresAt: LessThan(new Date(now.getTime() - LAPSED_SESSION_GRACE_SECONDS * 1000)) });
    const secret = newSecret(WEB_SESSION_PREFIX);
    const idHash = hashSecret(secret);
    await this.repository.insert({
      idHash,
      organisationId,
      stage: 'signing_in',
      personId: null,
      stateHash: hashSecret(state),
      sealed: seal(pending, secret, idHash),
      expiresAt: new Date(now.getTime() + this.lifetimes.signInTtlSeconds * 1000),
      createdAt: now,
    });
    return { secret, maxAgeSeconds: this.lifetimes.signInTtlSeconds + LAPSED_SESSION_GRACE_SECONDS };
  }

  /**
   * Ends a sign-in in progress and answers what it remembered, if `state` is the one it was
   * started with. A callback with any other `state` is refused without touching the sign-in: a
   * site that sends the browser a forged callback cannot cancel the genuine one. Single use: of
   * two callbacks with the right state only one gets anything (the delete names the state's hash,
   * so the check and the spending are one statement), and a failed exchange afterwards means
   * starting again.
   */
  async consumeSignIn(secret: string, organisationId: string | null, state: string): Promise<PendingSignIn | undefined> {
    const record = await this.live(secret, organisationId, 'signing_in');
    if (!record || record.stateHash === null) return undefined;
    // Compared as hashes of equal length; the state is not secret from the browser anyway.
    const stateHash = hashSecret(state);
    if (!safeEqual(record.stateHash, stateHash)) return undefined;
    const result = await this.repository.delete({ idHash: record.idHash, stage: 'signing_in', stateHash });
    if ((result.affected ?? 0) !== 1) return undefined;
    return unseal<PendingSignIn>(record.sealed, secret, record.idHash);
  }

  /** What a sign-in in progress remembers, without ending it (an emailed code may be mistyped). */
  async pendingSignIn(secret: string): Promise<PendingSignIn | undefined> {
    const record = await this.live(secret, null, 'signing_in');
    return record ? unseal<PendingSignIn>(record.sealed, secret, record.idHash) : undefined;
  }

  /** A signed-in session for the person; answers the new cookie secret. */
  async create(organisationId: string | null, personId: string, data: { personName: string; userCode: string | undefined }): Promise<{ secret: string; maxAgeSeconds: number }> {
    const now = this.clock.now();
    const secret = newSecret(WEB_SESSION_PREFIX);
    const idHash = hashSecret(secret);
    const sealedData: SignedInData = data.userCode ? { personName: data.personName, userCode: data.userCode } : { personName: data.personName };
    await this.repository.insert({
      idHash,
      organisationId,
      stage: 'signed_in',
      personId,
      stateHash: null,
      sealed: seal(sealedData, secret, idHash),
      expiresAt: new Date(now.getTime() + this.lifetimes.sessionTtlSeconds * 1000),
      createdAt: now,
    });
    return { secret, maxAgeSeconds: this.lifetimes.sessionTtlSeconds + LAPSED_SESSION_GRACE_SECONDS };
  }

  async find(secret: string, organisationId: string | null): Promise<SignedInSession | undefined> {
    const record = await this.live(secret, organisationId, 'signed_in');
    if (!record || record.personId === null) return undefined;
    const data = unseal<SignedInData>(record.sealed, secret, record.idHash);
    if (!data) return undefined;
    return { organisationId: record.organisationId, personId: record.personId, personName: data.personName, userCode: data.userCode, notice: data.notice, expiresAt: record.expiresAt };
  }

  /** Forgets the code being approved (it was decided, or it is no longer pending). */
  async forgetUserCode(secret: string, session: SignedInSession): Promise<void> {
    await this.remember(secret, session, { userCode: undefined, notice: undefined });
  }

  /** What the session shows next: the code it is about, and a notice for the next page. */
  async remember(secret: string, session: SignedInSession, next: { userCode: string | undefined; notice: PageNotice | undefined }): Promise<void> {
    const idHash = hashSecret(secret);
    const data: SignedInData = { personName: session.personName };
    if (next.userCode) data.userCode = next.userCode;
    if (next.notice) data.notice = next.notice;
    await this.repository.update({ idHash, stage: 'signed_in' }, { sealed: seal(data, secret, idHash) });
  }

  /** Rewrites what a sign-in in progress remembers (a notice for the next page). */
  async updateSignIn(secret: string, pending: PendingSignIn): Promise<void> {
    const record = await this.live(secret, null, 'signing_in');
    if (!record) return;
    await this.repository.update({ idHash: record.idHash, stage: 'signing_in' }, { sealed: seal(pending, secret, record.idHash) });
  }

  /**
   * The code a session that ran out was about (within the grace), so that signing in again
   * continues with it; only the browser holding the cookie secret can read it.
   */
  async lapsedCode(secret: string, organisationId: string | null): Promise<string | undefined> {
    if (!secret.startsWith(WEB_SESSION_PREFIX) || secret.length > 100) return undefined;
    const record = await this.repository.findOneBy({ idHash: hashSecret(secret) });
    // A session still running is no lapsed one.
    if (!record || record.organisationId !== organisationId || record.expiresAt.getTime() > this.clock.now().getTime()) return undefined;
    const data = unseal<SignedInData | PendingSignIn>(record.sealed, secret, record.idHash);
    return data?.userCode;
  }

  async end(secret: string): Promise<void> {
    if (!secret.startsWith(WEB_SESSION_PREFIX)) return;
    await this.repository.delete({ idHash: hashSecret(secret) });
  }
}
