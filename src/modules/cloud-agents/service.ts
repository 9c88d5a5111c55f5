import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { abilityOf, authorize, defineAbilityFor } from '../../../policies/index.js';
import { audit, actorOf, NO_AUDIT_TRAIL, type AuditTrail } from '../../audit.js';
import type { Principal, ProjectRole } from '../../auth/principal.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { ApiError, conflict, invalidRequest, notFound } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, newSecret } from '../../util/secrets.js';
import type { EffectivePolicy } from '../policy/service.js';
import { instant, storableInstant } from '../../util/time.js';
import type { CloudAgentRunRecord } from './entities.js';
import { MAX_EVENTS_PER_RUN, type RUN_EVENT_KINDS } from './schemas.js';
import { CloudAgentStore } from './store.js';
import { RUN_CREDENTIAL_PREFIX } from '../../auth/token-formats.js';

export interface RunRegistration {
  provider: string;
  projectId: string;
  team?: string | undefined;
  member?: string | undefined;
  task?: string | undefined;
  tools?: string[] | undefined;
  expiresAt?: string | undefined;
  workspaceId?: string | undefined;
  startedBy?: string | undefined;
}

export interface RegisteredRun {
  runId: string;
  expiresAt: string;
  mcp?: { url: string; token: string; expiresAt: string };
}

export interface RunEvent {
  at: string;
  kind: (typeof RUN_EVENT_KINDS)[number];
  providerTaskId?: string | undefined;
  pageUrl?: string | undefined;
  pullRequestUrl?: string | undefined;
  sentence?: string | undefined;
}

/** What the MCP endpoint needs of the run behind a credential. */
export interface CredentialRun {
  id: string;
  organisationId: string;
  deviceId: string;
  personId: string;
}

export interface CloudAgentDependencies {
  dataSource: DataSource;
  clock: Clock;
  logger: Logger;
  /** Where registering and ending a run leave their audit row, in their transaction. */
  trail?: AuditTrail;
  /** `get` throws 404 when the project is not the organisation's; `rolesOf` is a person's project roles. */
  projects: {
    get(organisationId: string, projectId: string): Promise<{ id: string; organisationId: string }>;
    rolesOf(organisationId: string, personId: string): Promise<Map<string, ProjectRole>>;
  };
  policies: { effective(organisationId: string, projectId?: string): Promise<EffectivePolicy> };
  credentialMaxTtlSeconds: number;
}

function ability(principal: Principal) {
  return abilityOf(principal);
}

/**
 * Cloud agent runs: registration under the organisation's policy, events, end, and the run
 * credentials the MCP endpoint accepts. The rules of who may do what are in
 * policies/cloud-agent.ts; this service applies them to stored runs.
 */
export class CloudAgentService {
  private readonly store: CloudAgentStore;

  constructor(private readonly deps: CloudAgentDependencies) {
    this.store = CloudAgentStore.of(deps.dataSource);
  }

  /**
   * Checks, in order: a workbench (403 `workbench_required`), `startedBy` is the device's person
   * (403 `started_by_mismatch`), the project is the organisation's and the device's person holds
   * a role in it (404 either way: policies/project-membership.ts), the project's effective
   * policy allows runs (403 `cloud_agents_disabled`), the requested expiry is ahead (400), and
   * the person has fewer than `maxConcurrent` runs going (409 `max_concurrent_runs`), counted and
   * inserted under the person's lock so two registrations at the limit cannot both pass.
   */
  async register(principal: Principal, input: RunRegistration, mcpUrlOf: (runId: string) => string): Promise<RegisteredRun> {
    const organisationId = principal.organisationId;
    // The rule exists, whatever its conditions, for workbenches only (policies/cloud-agent.ts).
    if (!ability(principal).can('create', 'CloudAgentRun')) {
      throw new ApiError(403, 'workbench_required', 'only a workbench registers cloud agent runs; nodes do not');
    }
    const personId = principal.personId;
    if (principal.deviceId === undefined) throw new ApiError(403, 'workbench_required', 'only a workbench registers cloud agent runs');
    if (input.startedBy !== undefined && input.startedBy !== personId) {
      throw new ApiError(403, 'started_by_mismatch', "startedBy must be the device's own person", { extra: { field: 'body.startedBy' } });
    }
    const project = await this.deps.projects.get(organisationId, input.projectId);
    const inProject = defineAbilityFor({ ...principal, projectRoles: await this.deps.projects.rolesOf(organisationId, personId) });
    // As the projects API and pictures answer the same person: as if there were no such project.
    authorize(inProject, 'create', 'CloudAgentRun', { organisationId: project.organisationId, projectId: project.id }, () => notFound('no such project'));
    const { policy } = await this.deps.policies.effective(organisationId, project.id);
    if (!policy.cloudAgents.allowed) {
      throw new ApiError(403, 'cloud_agents_disabled', "the project's policy does not allow cloud agent runs");
    }
    const now = this.deps.clock.now();
    const latest = now.getTime() + this.deps.credentialMaxTtlSeconds * 1000;
    let expiresAt = latest;
    if (input.expiresAt !== undefined) {
      const requested = instant(input.expiresAt).getTime();
      if (requested <= now.getTime()) throw invalidRequest('body.expiresAt must be in the future', { field: 'body.expiresAt' });
      expiresAt = Math.min(requested, latest);
    }
    const withMcp = input.workspaceId !== undefined && (input.tools?.length ?? 0) > 0;
    const token = withMcp ? newSecret(RUN_CREDENTIAL_PREFIX) : undefined;
    const run: CloudAgentRunRecord = {
      id: newId('run'),
      organisationId,
      projectId: project.id,
      deviceId: principal.deviceId,
      personId,
      provider: input.provider,
      team: input.team ?? null,
      member: input.member ?? null,
      workspaceId: input.workspaceId ?? null,
      tools: input.tools?.length ? JSON.stringify(input.tools) : null,
      credentialHash: token ? hashSecret(token) : null,
      createdAt: now,
      expiresAt: new Date(expiresAt),
      endedAt: null,
    };
    const maxConcurrent = policy.cloudAgents.maxConcurrent;
    await this.deps.dataSource
      .transaction(async (manager) => {
        const store = new CloudAgentStore(manager);
        await store.lockPerson(organisationId, personId, now);
        const running = await store.countRunning(organisationId, personId, now);
        if (running >= maxConcurrent) {
          throw conflict('max_concurrent_runs', `you already have ${running} cloud agent runs going; the policy allows ${maxConcurrent} at a time (end one first)`, { max: maxConcurrent });
        }
        await store.insertRun(run);
        await (this.deps.trail ?? NO_AUDIT_TRAIL).record(manager, {
          action: 'cloud_agent_run.registered',
          organisationId,
          actor: actorOf(principal),
          target: { runId: run.id, projectId: run.projectId, provider: run.provider, mcp: withMcp },
        });
      })
      .catch((error: unknown) => {
        // The project (or the device, or its person) was deleted between the checks and the
        // insert: its foreign key refuses the run, which is then as unknown as the project.
        if (isForeignKeyViolation(error)) throw notFound('no such project');
        throw error;
      });
    audit(this.deps.logger, {
      action: 'cloud_agent_run.registered',
      organisationId,
      actor: actorOf(principal),
      target: { runId: run.id, projectId: run.projectId, provider: run.provider, mcp: withMcp },
    });
    const answer: RegisteredRun = { runId: run.id, expiresAt: run.expiresAt.toISOString() };
    if (token) answer.mcp = { url: mcpUrlOf(run.id), token, expiresAt: run.expiresAt.toISOString() };
    return answer;
  }

  /** Stores a report of events; only the registering workbench, and not after the run ended. */
  async recordEvents(principal: Principal, runId: string, events: readonly RunEvent[]): Promise<number> {
    const now = this.deps.clock.now();
    // RFC 3339 allows times no stored timestamp holds: refused, never handed to the database.
    const times = events.map((event, index) => storableInstant(event.at, `body.events[${index}].at`));
    await this.deps.dataSource.transaction(async (manager) => {
      const store = new CloudAgentStore(manager);
      const run = await this.ownRun(store, principal, runId);
      if (run.endedAt) throw conflict('run_ended', 'the run has ended; it takes no more events');
      const held = await store.countEvents(run.id);
      if (held + events.length > MAX_EVENTS_PER_RUN) {
        throw conflict('run_event_limit', `a run keeps at most ${MAX_EVENTS_PER_RUN} events; it holds ${held}`, { max: MAX_EVENTS_PER_RUN });
      }
      await store.insertEvents(
        events.map((event, index) => ({
          runId: run.id,
          at: times[index]!,
          kind: event.kind,
          providerTaskId: event.providerTaskId ?? null,
          pageUrl: event.pageUrl ?? null,
          pullRequestUrl: event.pullRequestUrl ?? null,
          sentence: event.sentence ?? null,
          receivedAt: now,
        })),
      );
    });
    return events.length;
  }

  /** Ends the run: its credential stops at once. Ending again answers the first end. */
  async end(principal: Principal, runId: string): Promise<{ runId: string; endedAt: string }> {
    const now = this.deps.clock.now();
    const { endedAt, ended } = await this.deps.dataSource.transaction(async (manager) => {
      const store = new CloudAgentStore(manager);
      const run = await this.ownRun(store, principal, runId);
      if (run.endedAt) return { endedAt: run.endedAt, ended: false };
      await store.endRun(run.id, now);
      await (this.deps.trail ?? NO_AUDIT_TRAIL).record(manager, { action: 'cloud_agent_run.ended', organisationId: principal.organisationId, actor: actorOf(principal), target: { runId } });
      return { endedAt: now, ended: true };
    });
    if (ended) {
      audit(this.deps.logger, { action: 'cloud_agent_run.ended', organisationId: principal.organisationId, actor: actorOf(principal), target: { runId } });
    }
    return { runId, endedAt: endedAt.toISOString() };
  }

  /**
   * The run a credential reaches, while it may: the run not ended, not expired, its device not
   * revoked, and its person still of the organisation (a credential acts for them: it stops the
   * moment they leave or are removed, where their devices stop with their access tokens).
   */
  async resolveCredential(credential: string): Promise<CredentialRun | undefined> {
    if (!credential.startsWith(RUN_CREDENTIAL_PREFIX)) return undefined;
    const found = await this.store.findCredential(hashSecret(credential));
    if (!found || found.deviceRevoked || !found.personIsMember || found.run.endedAt) return undefined;
    if (found.run.expiresAt.getTime() <= this.deps.clock.now().getTime()) return undefined;
    const { id, organisationId, deviceId, personId } = found.run;
    return { id, organisationId, deviceId, personId };
  }

  /** The caller's own run (policies/cloud-agent.ts: only the registering workbench); anyone else: 404. */
  private async ownRun(store: CloudAgentStore, principal: Principal, runId: string): Promise<CloudAgentRunRecord> {
    const run = await store.findRunForUpdate(principal.organisationId, runId);
    if (!run) throw notFound('no such run');
    authorize(ability(principal), 'update', 'CloudAgentRun', { id: run.id, organisationId: run.organisationId, deviceId: run.deviceId }, () => notFound('no such run'));
    return run;
  }
}
