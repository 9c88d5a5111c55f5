import type { AbilityBuilder } from '@casl/ability';
import { projectsWithRole } from './project-membership.js';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Cloud agent runs (a record is `{ id, organisationId, projectId, deviceId }`): a desktop
 * workbench sends a task to a provider's cloud agent and registers the run here, so the agent's
 * tool calls (MCP) can reach back to that desktop.
 * - A workbench of the organisation registers runs ('create') in the projects its person holds a
 *   role in (project-membership.ts: the one rule; the organisation's owners and admins included,
 *   whose workbenches are refused in a project they are not in, 404); each run acts for the
 *   workbench's person (the one who approved it). The rule exists for every workbench, even one
 *   whose person is in no project, so "not a workbench" (403) and "not in this project" (404)
 *   stay two answers.
 * - Only the workbench that registered a run reports its events and ends it ('update'). Another
 *   device, even one of the same organisation and person, is told the run does not exist (404).
 * - A node never registers, reports or ends a run, whatever scopes its token carries: a node runs
 *   unattended, and a run's tool calls act for a person at their desktop. (Nodes are not granted
 *   `cloud-agents:write` either; this rule holds even if a token somehow carried it.)
 * - A run credential reaches its own run's MCP endpoint ('relay') and nothing else.
 * - People register, report and end nothing: runs are their workbenches' doing.
 */
export function cloudAgentRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const inOrganisation = { organisationId: actor.organisationId };
  if (actor.kind === 'device' && actor.deviceKind === 'workbench' && actor.deviceId !== undefined) {
    can('create', 'CloudAgentRun', { ...inOrganisation, projectId: { $in: projectsWithRole(actor) } });
    can('update', 'CloudAgentRun', { ...inOrganisation, deviceId: actor.deviceId });
  }
  if (actor.kind === 'run-credential' && actor.runId !== undefined) {
    can('relay', 'CloudAgentRun', { ...inOrganisation, id: actor.runId });
  }
}
