import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Policy (the organisation's policy and its projects' overrides; a record is
 * `{ organisationId, projectId? }`).
 * - Everyone the organisation admits reads the effective policy, of the organisation and of any
 *   of its projects: its people, and its devices, which enforce it (nodes too, which belong to
 *   no project). A run credential does not: it reaches only its run's MCP endpoint.
 * - Only a person who is an owner or admin of the organisation publishes ('update') the
 *   organisation's policy or a project's override, and reads the stored publishes. Project
 *   owners do not: an override can loosen the organisation's rules, so it is the organisation's
 *   call. Never a device, whoever approved it.
 */
export function policyRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  if (actor.kind === 'run-credential') return;
  const inOrganisation = { organisationId: actor.organisationId };
  can('read', 'Policy', inOrganisation);
  const isPerson = actor.kind === 'person' || actor.kind === 'cloud-session';
  if (isPerson && (actor.role === 'owner' || actor.role === 'admin')) can('update', 'Policy', inOrganisation);
}
