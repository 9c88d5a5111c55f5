import type { PolicyChange } from '../../state/relay-routing.js';

/**
 * Policy pushed over the control channel (docs/api/policy-push.md): the JSON-RPC 2.0
 * notifications the service sends a workbench about its policy, and the rule of who gets which.
 *
 * - `hello`, the first frame on every socket: the current revision of each policy scope that
 *   applies to the device (the organisation's; for a workbench, each project its person holds a
 *   role in).
 * - `policy.changed`, after a publish or restore of one of those scopes has committed: the scope,
 *   the publish number and the scope's effective revision (the ETag of `GET /policy/v1`). Never the
 *   document: the workbench reads `GET /policy/v1` as usual, and polling stays the source of truth.
 * - A project's change reaches only workbenches whose person holds a role in the project (the
 *   rule of policies/project-membership.ts), so no workbench learns of a project it is not in.
 *   Nodes belong to no project (policies/policy.ts): they hear of the organisation's policy only.
 * - At most once per scope and publish number per connection, and never a number at or below
 *   one the connection was already told of (in its hello or a notification).
 */

export const HELLO_METHOD = 'hello';
export const POLICY_CHANGED_METHOD = 'policy.changed';

/** How long the hello may take to read the current revisions before it is sent without them. */
export const HELLO_TIMEOUT_MS = 5_000;
/** Projects named in one hello at most; a workbench in more learns of the rest by polling. */
export const HELLO_MAX_PROJECTS = 1_000;

/** A scope's state: its newest publish (null: never published) and its effective revision. */
export interface ScopeRevision {
  number: number | null;
  revision: string;
}

export interface HelloPolicy {
  organisation: ScopeRevision;
  projects: (ScopeRevision & { projectId: string })[];
}

/** Who holds the socket, as the rule of who hears of which change reads it. */
export interface PushAudience {
  organisationId: string;
  personId: string;
  deviceKind: 'workbench' | 'node';
}

/** What the hub needs to know of policies and projects (wired in src/app.ts). */
export interface PolicyPushPorts {
  /** The current revisions of the scopes that apply to the device. */
  hello(audience: PushAudience): Promise<HelloPolicy>;
  /** The people who hold a role in the project; undefined when it is not (or no longer) the organisation's. */
  members(organisationId: string, projectId: string): Promise<ReadonlySet<string> | undefined>;
  /**
   * Called before the sockets are told: drops what this replica keeps of the newest publish
   * numbers, so the poll the message prompts answers the new revision here even if the
   * replica's own word of the publish (the revocation message, the counter) has not arrived yet.
   */
  forget(): void;
}

/** The dedupe key of a scope. */
export function scopeKey(projectId: string | null): string {
  return projectId === null ? 'organisation' : `project:${projectId}`;
}

export function helloFrame(policy: HelloPolicy | null): object {
  return { jsonrpc: '2.0', method: HELLO_METHOD, params: { policy } };
}

export function policyChangedFrame(change: PolicyChange): object {
  const params =
    change.projectId === null
      ? { scope: 'organisation', number: change.number, revision: change.revision }
      : { scope: 'project', projectId: change.projectId, number: change.number, revision: change.revision };
  return { jsonrpc: '2.0', method: POLICY_CHANGED_METHOD, params };
}

/** Whether a project's change is for this audience: a workbench whose person holds a role in it. */
export function projectChangeReaches(audience: PushAudience, members: ReadonlySet<string>): boolean {
  return audience.deviceKind === 'workbench' && members.has(audience.personId);
}
