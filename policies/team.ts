import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Team (a Cloud organisation of kind `team`), before it exists.
 * - Any signed-in Cloud person creates one, and becomes its first owner.
 * - Nobody else: not a device, and not a self-hosted person token (a self-hosted deployment
 *   serves the organisations its administrator made).
 * Once made, a team is an Organisation (organisation.ts), with members (member.ts) and
 * invitations (invitation.ts).
 */
export function teamRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  if (actor.kind === 'cloud-session' && actor.personId !== undefined) can('create', 'Team');
}
