import { AbilityBuilder, createMongoAbility, ForbiddenError, subject } from '@casl/ability';
import { forbidden } from '../src/http/errors.js';
import { organisationRules } from './organisation.js';
import { projectRules } from './project.js';
import { deviceRules } from './device.js';
import { policyRules } from './policy.js';
import { activityRules } from './activity.js';
import type { Action, Actor, AppAbility } from './subjects.js';

export type { Action, Actor, AppAbility } from './subjects.js';

/** Every subject's rules, in one list; a new subject adds its file here. */
const RULES = [organisationRules, projectRules, deviceRules, policyRules, activityRules];

/** The caller's ability, built per request from principal, organisation role and project roles. */
export function defineAbilityFor(actor: Actor): AppAbility {
  const builder = new AbilityBuilder<AppAbility>(createMongoAbility);
  for (const rules of RULES) rules(actor, builder);
  return builder.build();
}

/** Refuse with 403 `forbidden` unless the ability allows `action` on the record. */
export function authorize(ability: AppAbility, action: Action, type: string, record: object): void {
  try {
    ForbiddenError.from(ability).throwUnlessCan(action, subject(type, { ...record }) as never);
  } catch (error) {
    if (error instanceof ForbiddenError) throw forbidden();
    throw error;
  }
}
