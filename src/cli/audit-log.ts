import type { AuditRowView } from '../modules/audit-log/service.js';
import { usageError, type AdminServices } from './context.js';
import { organisationByIdOrHost } from './people.js';

/**
 * `platform audit`: the stored audit trail (docs/api/audit-trail.md), newest first, as the API's
 * `GET /platform/v1/audit-log` reads it: one organisation's with `--org`, every organisation's
 * without (the operator holds the database).
 */

export const AUDIT_CLI_DEFAULT_LIMIT = 100;
export const AUDIT_CLI_MAX_LIMIT = 10_000;

/** `--since`: an RFC 3339 time, or a duration back from now (`90m`, `24h`, `7d`). */
export function parseSince(value: string, now: Date): Date {
  const trimmed = value.trim();
  const duration = /^(\d{1,6})([mhd])$/.exec(trimmed);
  if (duration) return new Date(now.getTime() - Number(duration[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[duration[2] as 'm' | 'h' | 'd']);
  const date = new Date(trimmed);
  if (!/^\d{4}-\d{2}-\d{2}/.test(trimmed) || Number.isNaN(date.getTime())) throw usageError(`--since must be a time (2026-03-01T00:00:00Z) or a duration back from now such as 90m, 24h or 7d (got "${value}")`);
  return date;
}

export async function auditEntries(
  services: AdminServices,
  options: { org?: string | undefined; since?: string | undefined; action?: string | undefined; limit?: number | undefined },
): Promise<AuditRowView[]> {
  const organisationId = options.org === undefined ? undefined : (await organisationByIdOrHost(services, options.org)).id;
  const limit = options.limit ?? AUDIT_CLI_DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > AUDIT_CLI_MAX_LIMIT) throw usageError(`--limit must be 1 to ${AUDIT_CLI_MAX_LIMIT}`);
  if (options.action !== undefined && !/^[a-z_.]{1,100}$/.test(options.action)) throw usageError(`--action must be an action such as policy.published (got "${options.action}")`);
  const since = options.since === undefined ? undefined : parseSince(options.since, services.clock.now());
  const entries: AuditRowView[] = [];
  let cursor: string | undefined;
  while (entries.length < limit) {
    const page = await services.auditLog.page(organisationId, { action: options.action, since }, { limit: Math.min(200, limit - entries.length), cursor });
    entries.push(...page.items);
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  return entries;
}

/** The actor in a few words: `cli`, `cli as usr_…`, `person usr_…`, `device dev_…`. */
export function actorText(actor: AuditRowView['actor']): string {
  if (actor.kind === 'cli') return actor.personId ? `cli as ${actor.personId}` : 'cli';
  return [actor.kind, actor.deviceId ?? actor.personId ?? ''].join(' ').trim();
}

export function targetText(target: AuditRowView['target']): string {
  return Object.entries(target)
    .map(([key, value]) => `${key}=${value === null ? '-' : String(value)}`)
    .join(' ');
}
