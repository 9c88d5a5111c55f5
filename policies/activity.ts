import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Activity: what workbenches uploaded (events, usage, audit records, tasks).
 * - A person who is an owner or admin reads the organisation's activity (the console).
 * - Members do not: audit records and events describe other people's work.
 * - Devices upload (their `ingest:write` scope) but never read back, not even their own.
 */
export function activityRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const isPerson = actor.kind === 'person' || actor.kind === 'cloud-session';
  if (isPerson && (actor.role === 'owner' || actor.role === 'admin')) {
    can('read', 'Activity', { organisationId: actor.organisationId });
  }
}
