import { AbilityBuilder, createMongoAbility } from '@casl/ability';
import { organisationRules } from './organisation.js';
import { projectRules } from './project.js';
import { deviceRules } from './device.js';
import { policyRules } from './policy.js';
import { activityRules } from './activity.js';
import { pictureRules } from './picture.js';
import { teamRules } from './team.js';
import { memberRules } from './member.js';
import { invitationRules } from './invitation.js';
import { projectMemberRules } from './project-member.js';
import { cloudAgentRules } from './cloud-agent.js';
import { auditLogRules } from './audit-log.js';
import type { Actor, AppAbility } from './subjects.js';

export type { Action, Actor, AppAbility, SubjectRecords, SubjectType, Subjects } from './subjects.js';
export { authorize, permits, record } from './authorize.js';

/** Every subject's rules, in one list; a new subject adds its file here. */
const RULES = [organisationRules, teamRules, memberRules, invitationRules, projectRules, projectMemberRules, deviceRules, policyRules, activityRules, pictureRules, cloudAgentRules, auditLogRules];

const abilities = new Map<string, AppAbility>();

/**
 * The caller's ability, from principal, organisation role and project roles. Rules depend on
 * nothing else, and an ability never changes once built, so equal callers share one (a device
 * polling its policy asks for the same ability every time).
 */
export function defineAbilityFor(actor: Actor): AppAbility {
  const projects = [...actor.projectRoles].sort(([a], [b]) => (a < b ? -1 : 1)).map(([id, role]) => `${id}=${role}`).join(',');
  const emails = actor.verifiedEmails?.length ? [...actor.verifiedEmails].sort().join(',') : '';
  const key = `${actor.kind}|${actor.organisationId}|${actor.personId ?? ''}|${actor.role ?? ''}|${actor.deviceId ?? ''}|${actor.deviceKind ?? ''}|${actor.runId ?? ''}|${projects}|${emails}`;
  const known = abilities.get(key);
  if (known) return known;
  const builder = new AbilityBuilder<AppAbility>(createMongoAbility);
  for (const rules of RULES) rules(actor, builder);
  const ability = builder.build();
  if (abilities.size >= 5_000) abilities.delete(abilities.keys().next().value as string);
  abilities.set(key, ability);
  return ability;
}

const byPrincipal = new WeakMap<object, AppAbility>();

/**
 * The ability of a caller as authentication found it, with no project roles (the rules of the
 * organisation, and those a principal's own ids decide). Kept with the principal object: the
 * requests of one cached token share one principal (frozen by its resolver), so a workbench's
 * poll looks its ability up by identity instead of building its key again.
 */
export function abilityOf(principal: Readonly<Omit<Actor, 'projectRoles' | 'verifiedEmails'>>): AppAbility {
  let ability = byPrincipal.get(principal);
  if (!ability) {
    ability = defineAbilityFor({ ...principal, projectRoles: new Map() });
    byPrincipal.set(principal, ability);
  }
  return ability;
}
