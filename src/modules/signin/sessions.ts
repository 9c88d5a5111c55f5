import { primaryReads, type Reads } from '../../db/reads.js';
import type { DataSource, EntityManager } from 'typeorm';
import { pairWithinGrace, sealPair } from '../../auth/refresh-grace.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, newSecret } from '../../util/secrets.js';
import type { CloudSessionRecord, SessionTokenRecord } from './entities.js';
import { oauthError } from '../oauth/errors.js';
import { SignInStore } from './store.js';
import { SESSION_ACCESS_PREFIX } from '../../auth/token-formats.js';

/**
 * Cloud sessions (spec 4.3, 5): a person signed in on one client. Opaque tokens, stored only as
 * SHA-256 hashes: `platform_sa_` access tokens (15 minutes) and `platform_sr_` refresh tokens
 * (30 days), both configurable. The prefixes are the platform's own (`platform_…`), so the log
 * and ingest redaction that recognises them by prefix removes them wherever they stray.
 *
 * Rotation: every refresh replaces the refresh token. A replaced refresh token presented again
 * ends the whole session (every token of it stops), except within the grace shared with device
 * tokens (auth/refresh-grace.ts): a concurrent refresh of the same token gets the same new pair.
 * Refreshes of one session take turns on the session's row (`SELECT … FOR UPDATE` on MySQL;
 * SQLite runs one transaction at a time), so of two concurrent refreshes the second always sees
 * what the first wrote.
 */

export const SESSION_REFRESH_PREFIX = 'platform_sr_';

export interface SessionTokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  token_type: 'Bearer';
}

export interface SessionLifetimes {
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  refreshGraceSeconds: number;
}

type RefreshOutcome = { tokens: SessionTokens } | { refusal: string; endSession?: string };

export class CloudSessions {
  private readonly store: SignInStore;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly lifetimes: SessionLifetimes,
    /** Where an access token is looked up by its hash (src/db/reads.ts): a read replica when it is current, else the primary. */
    private readonly reads: Reads = primaryReads(dataSource),
  ) {
    this.store = new SignInStore(dataSource);
  }

  private newPair(sessionId: string, now: Date): { tokens: SessionTokens; rows: SessionTokenRecord[] } {
    const access = newSecret(SESSION_ACCESS_PREFIX);
    const refresh = newSecret(SESSION_REFRESH_PREFIX);
    const pairId = newId('tok');
    const base = { sessionId, pairId, createdAt: now, usedAt: null, graceSealed: null, graceUntil: null, revokedAt: null };
    return {
      tokens: { access_token: access, refresh_token: refresh, expires_in: this.lifetimes.accessTokenTtlSeconds, token_type: 'Bearer' },
      rows: [
        { ...base, id: newId('tok'), kind: 'access', tokenHash: hashSecret(access), expiresAt: new Date(now.getTime() + this.lifetimes.accessTokenTtlSeconds * 1000) },
        { ...base, id: pairId, kind: 'refresh', tokenHash: hashSecret(refresh), expiresAt: new Date(now.getTime() + this.lifetimes.refreshTokenTtlSeconds * 1000) },
      ],
    };
  }

  /** A new session and its first pair, inside the caller's transaction. */
  async start(manager: EntityManager, session: Omit<CloudSessionRecord, 'createdAt' | 'endedAt'>): Promise<SessionTokens> {
    const now = this.clock.now();
    const store = this.store.withManager(manager);
    await store.insertSession({ ...session, createdAt: now, endedAt: null });
    const { tokens, rows } = this.newPair(session.id, now);
    await store.insertTokens(rows);
    return tokens;
  }

  /**
   * `grant_type=refresh_token`. `client` is the `client_id` the request named: it must be the
   * client the session was issued to. A public client has no credentials to authenticate with,
   * so it identifies itself (RFC 6749 3.2.1, 6: the refresh token must be the one issued to the
   * client); a refresh that names no client or another is `invalid_grant`, like a token issued
   * to another client (RFC 9700 4.14: for public clients, rotation with reuse detection, which
   * `refresh` also does).
   */
  async refresh(refreshToken: string, client: string | undefined): Promise<SessionTokens> {
    const hash = refreshToken.startsWith(SESSION_REFRESH_PREFIX) ? hashSecret(refreshToken) : undefined;
    const first = hash ? await this.store.findToken(hash) : null;
    if (!hash || !first || first.kind !== 'refresh') throw oauthError('invalid_grant', 'the refresh token is not valid');
    const now = this.clock.now();
    const outcome = await this.dataSource.transaction(async (manager): Promise<RefreshOutcome> => {
      const store = this.store.withManager(manager);
      const session = await store.lockSession(first.sessionId);
      const token = await store.findTokenLocked(hash);
      if (!session || !token) return { refusal: 'the refresh token is not valid' };
      if (session.endedAt || token.revokedAt) return { refusal: 'the session has ended; sign in again' };
      if (token.expiresAt.getTime() <= now.getTime()) return { refusal: 'the refresh token has expired; sign in again' };
      if (client === undefined) return { refusal: 'client_id is required with a refresh token: name the client (console or mobile) the session was issued to' };
      if (client !== session.client) return { refusal: 'the refresh token was issued to another client' };
      if (token.usedAt === null) {
        const { tokens, rows } = this.newPair(session.id, now);
        const graceUntil = this.lifetimes.refreshGraceSeconds > 0 ? new Date(now.getTime() + this.lifetimes.refreshGraceSeconds * 1000) : null;
        const sealed = graceUntil ? sealPair(tokens, refreshToken, token.id) : null;
        if (!(await store.markRefreshUsed(token.id, now, sealed, graceUntil))) return { refusal: 'the refresh token is not valid' };
        await store.insertTokens(rows);
        await store.eraseSpentGrace(session.id, now);
        return { tokens };
      }
      const again = await pairWithinGrace<SessionTokens>(token, refreshToken, now, async (pair) => {
        const replacement = await store.findToken(hashSecret(pair.refresh_token));
        return replacement === null || replacement.usedAt !== null || replacement.revokedAt !== null;
      });
      if (again) return { tokens: again };
      return { refusal: 'the refresh token was already used; the session has ended, sign in again', endSession: session.id };
    });
    if ('tokens' in outcome) return outcome.tokens;
    // Ended after the transaction that found the replay, so the refusal cannot roll it back.
    if (outcome.endSession) await this.end(outcome.endSession);
    throw oauthError('invalid_grant', outcome.refusal);
  }

  /** The session behind a current access token. */
  async resolveAccessToken(accessToken: string): Promise<CloudSessionRecord | undefined> {
    if (!accessToken.startsWith(SESSION_ACCESS_PREFIX)) return undefined;
    return (await this.resolveAccessTokenHash(hashSecret(accessToken)))?.session;
  }

  /** The session of a current access token by its stored hash (hex SHA-256), with the token's end. */
  async resolveAccessTokenHash(tokenHash: string): Promise<{ session: CloudSessionRecord; expiresAt: Date } | undefined> {
    const found = await this.reads.credential((manager) => this.store.withManager(manager).findAccessToken(tokenHash));
    if (!found || found.revoked || found.session.endedAt) return undefined;
    if (found.expiresAt.getTime() <= this.clock.now().getTime()) return undefined;
    return { session: found.session, expiresAt: found.expiresAt };
  }

  /** Ends sessions: every token issued in them stops working at once. */
  async end(...sessionIds: string[]): Promise<void> {
    await this.dataSource.transaction((manager) => this.store.withManager(manager).endSessions({ ids: sessionIds }, this.clock.now()));
  }
}
