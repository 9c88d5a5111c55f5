/**
 * What the sweeper deletes (src/sweeper/sweeper.ts), one declaration per kind of row: the table,
 * the rows past their use (`where`, plain SQL on the table's own columns, the same on SQLite and
 * MySQL, `:cutoff` standing for the time before which they go), and how long they are kept
 * after that (`keep`: a fixed grace, or a retention setting). Kinds run in this order, each in
 * batches of keys: rows that others refer to come after those that refer to them, so that a
 * delete never cascades into more than its batch.
 *
 * The graces keep what a rule still reads: a used refresh token until it expires (a replay before
 * then ends everything it belongs to, RFC 9700 4.14.2), and a day more; a used one-time code, a
 * redeemed device code a day after they expire (a second use is still recognised as one and ends
 * what the first started); an emailed code two days after (the budgets per address count a day of
 * them); what an administrator sees in a list (join keys, invitations) 30 days after it
 * expired. Ingest and cloud agent run history is kept forever unless a retention setting says
 * otherwise (RETENTION_*_DAYS).
 *
 * To add a kind: one entry here (and its index, so that `where` reads only the rows it finds: a
 * migration), a row in the table of docs/operations/retention.md "Retention and the sweeper", and a case in
 * test/http/sweeper.test.ts.
 */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** The retention settings, by the name of their variable (days; unset: kept forever). */
export type RetentionSetting =
  | 'RETENTION_INGEST_EVENTS_DAYS'
  | 'RETENTION_INGEST_USAGE_DAYS'
  | 'RETENTION_INGEST_AUDIT_DAYS'
  | 'RETENTION_INGEST_TASKS_DAYS'
  | 'RETENTION_RUN_EVENTS_DAYS'
  | 'AUDIT_RETENTION_DAYS';

export type RetentionDays = Partial<Record<RetentionSetting, number>>;

export interface SweepKind {
  /** The `kind` label of `platform_sweeper_rows_deleted_total`, and what `platform sweep` prints. */
  name: string;
  table: string;
  /** The primary key column the batches delete by. */
  key: string;
  /** The rows past their use, with `:cutoff` (now minus the grace or the retention). */
  where: string;
  /** Kept this long (milliseconds) after `where` starts to hold, or as long as a setting says. */
  keep: { graceMs: number } | { retention: RetentionSetting };
  /** Instead of deleting the row, clear what is past its use (a run's credential hash). */
  clear?: string;
  /** In plain words, for `platform sweep --dry-run`. */
  what: string;
}

export const SWEEP_KINDS: readonly SweepKind[] = [
  // Devices ----------------------------------------------------------------------------------
  {
    name: 'device_codes',
    table: 'device_authorizations',
    key: 'id',
    where: 'expires_at < :cutoff',
    keep: { graceMs: DAY_MS },
    what: 'device codes (pending, approved, denied or redeemed) a day after they expired; a redeemed code presented again until then still revokes what it issued',
  },
  {
    name: 'device_tokens',
    table: 'device_tokens',
    key: 'id',
    where: 'expires_at < :cutoff',
    keep: { graceMs: DAY_MS },
    what: 'device access and refresh tokens (used, revoked or not) a day after they expired; a used refresh token replayed before it expires still revokes every token of its device',
  },
  {
    name: 'join_keys',
    table: 'join_keys',
    key: 'id',
    where: 'expires_at < :cutoff',
    keep: { graceMs: 30 * DAY_MS },
    what: 'join keys 30 days after they expired (administrators see them as expired until then)',
  },
  {
    name: 'page_sessions',
    table: 'web_sessions',
    key: 'id_hash',
    where: 'expires_at < :cutoff',
    keep: { graceMs: HOUR_MS },
    what: "the approval page's browser sessions an hour after they expired",
  },
  // Cloud sign-in ----------------------------------------------------------------------------
  {
    name: 'sign_in_flows',
    table: 'sign_in_flows',
    key: 'state_hash',
    where: 'expires_at < :cutoff',
    keep: { graceMs: HOUR_MS },
    what: 'provider sign-ins never finished, an hour after they expired',
  },
  {
    name: 'sign_in_codes',
    table: 'sign_in_codes',
    key: 'id',
    where: 'expires_at < :cutoff',
    keep: { graceMs: DAY_MS },
    what: 'one-time sign-in codes a day after they expired; a used code presented again until then still ends the session it started',
  },
  {
    name: 'email_codes',
    table: 'email_codes',
    key: 'id',
    where: 'expires_at < :cutoff',
    // The budgets per address count the codes asked in the last hour (and day): kept well past that.
    keep: { graceMs: 2 * DAY_MS },
    what: 'emailed six-digit codes two days after they expired (the budgets per address count the codes of the last hour and day)',
  },
  {
    name: 'link_tickets',
    table: 'link_tickets',
    key: 'id',
    where: 'expires_at < :cutoff',
    keep: { graceMs: DAY_MS },
    what: 'link tickets a day after they expired',
  },
  {
    name: 'ended_session_tokens',
    table: 'cloud_session_tokens',
    key: 'id',
    where: 'session_id IN (SELECT s.id FROM cloud_sessions s WHERE s.ended_at < :cutoff)',
    keep: { graceMs: DAY_MS },
    what: 'the tokens of Cloud sessions that ended (sign-out, a replayed refresh token, a removed sign-in method) a day before',
  },
  {
    name: 'session_tokens',
    table: 'cloud_session_tokens',
    key: 'id',
    where: 'expires_at < :cutoff',
    keep: { graceMs: DAY_MS },
    what: 'Cloud access and refresh tokens a day after they expired; a used refresh token replayed before it expires still ends its session',
  },
  {
    name: 'ended_sessions',
    table: 'cloud_sessions',
    key: 'id',
    where: 'ended_at < :cutoff',
    keep: { graceMs: DAY_MS },
    what: 'Cloud sessions a day after they ended',
  },
  {
    name: 'abandoned_sessions',
    table: 'cloud_sessions',
    key: 'id',
    where: 'ended_at IS NULL AND created_at < :cutoff AND NOT EXISTS (SELECT 1 FROM cloud_session_tokens t WHERE t.session_id = cloud_sessions.id)',
    keep: { graceMs: DAY_MS },
    what: 'Cloud sessions never signed out whose every token expired and was swept (nothing can use them again)',
  },
  // Teams ------------------------------------------------------------------------------------
  {
    name: 'invitations',
    table: 'invitations',
    key: 'id',
    where: 'expires_at < :cutoff',
    keep: { graceMs: 30 * DAY_MS },
    what: 'team invitations (used, withdrawn or not) 30 days after they expired',
  },
  // Cloud agent runs -------------------------------------------------------------------------
  {
    name: 'run_credentials',
    table: 'cloud_agent_runs',
    key: 'id',
    where: 'credential_hash IS NOT NULL AND expires_at < :cutoff',
    clear: 'credential_hash = NULL',
    keep: { graceMs: DAY_MS },
    what: "the hash of a run's credential a day after it expired (ending a run clears it at once); the run stays",
  },
  // History, by age (kept forever unless a retention setting is set) ------------------------------
  {
    name: 'ingest_events',
    table: 'ingest_events',
    key: 'row_id',
    where: 'received_at < :cutoff',
    keep: { retention: 'RETENTION_INGEST_EVENTS_DAYS' },
    what: 'ingested events received longer ago than the retention',
  },
  {
    name: 'ingest_usage',
    table: 'ingest_usage',
    key: 'row_id',
    where: 'received_at < :cutoff',
    keep: { retention: 'RETENTION_INGEST_USAGE_DAYS' },
    what: 'ingested usage records received longer ago than the retention',
  },
  {
    name: 'ingest_audit',
    table: 'ingest_audit',
    key: 'row_id',
    where: 'received_at < :cutoff',
    keep: { retention: 'RETENTION_INGEST_AUDIT_DAYS' },
    what: 'ingested audit records received longer ago than the retention',
  },
  {
    name: 'ingest_tasks',
    table: 'ingest_tasks',
    key: 'row_id',
    where: 'received_at < :cutoff',
    keep: { retention: 'RETENTION_INGEST_TASKS_DAYS' },
    what: 'ingested tasks last received longer ago than the retention',
  },
  {
    name: 'run_events',
    table: 'cloud_agent_run_events',
    key: 'row_id',
    where: 'received_at < :cutoff',
    keep: { retention: 'RETENTION_RUN_EVENTS_DAYS' },
    what: 'cloud agent run events received longer ago than the retention',
  },
  {
    name: 'runs',
    table: 'cloud_agent_runs',
    key: 'id',
    where:
      'expires_at < :cutoff AND (ended_at IS NULL OR ended_at < :cutoff) AND NOT EXISTS (SELECT 1 FROM cloud_agent_run_events e WHERE e.run_id = cloud_agent_runs.id)',
    keep: { retention: 'RETENTION_RUN_EVENTS_DAYS' },
    what: 'cloud agent runs that ended (or expired) longer ago than the run events retention, once their events are gone',
  },
  {
    name: 'audit_log',
    table: 'audit_log',
    key: 'row_id',
    where: 'at < :cutoff',
    keep: { retention: 'AUDIT_RETENTION_DAYS' },
    what: 'audit trail rows older than AUDIT_RETENTION_DAYS (default 400 days)',
  },
];

/** How long a kind keeps its rows, in words: `1 day`, `30 days`, `RETENTION_INGEST_EVENTS_DAYS=90`. */
export function keptFor(kind: SweepKind, retention: RetentionDays): string {
  if ('graceMs' in kind.keep) {
    const { graceMs } = kind.keep;
    if (graceMs % DAY_MS === 0) return `${graceMs / DAY_MS} day${graceMs === DAY_MS ? '' : 's'}`;
    if (graceMs % HOUR_MS === 0) return `${graceMs / HOUR_MS} hour${graceMs === HOUR_MS ? '' : 's'}`;
    return `${Math.round(graceMs / MINUTE_MS)} minutes`;
  }
  const days = retention[kind.keep.retention];
  return days === undefined ? `forever (${kind.keep.retention} unset)` : `${kind.keep.retention}=${days}`;
}

/** The cutoff of a kind now, or undefined when its rows are kept forever (a retention unset). */
export function cutoffOf(kind: SweepKind, now: Date, retention: RetentionDays): Date | undefined {
  if ('graceMs' in kind.keep) return new Date(now.getTime() - kind.keep.graceMs);
  const days = retention[kind.keep.retention];
  return days === undefined ? undefined : new Date(now.getTime() - days * DAY_MS);
}
