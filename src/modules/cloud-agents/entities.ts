import { EntitySchema } from 'typeorm';

/**
 * Cloud agent runs (spec 2.12, 3, 4.8): a desktop workbench sends a task to a provider's cloud
 * agent and registers the run, so the agent's tool calls reach back to it through the relay.
 *
 * What is kept: who registered the run (organisation, project, device, person), the provider's
 * names (provider, team, member), the workspace and tool names, the SHA-256 of the run credential
 * while it can still be used, and the run's events. What is not: the task itself. The service
 * never needs it (it neither runs nor relays the task), and spec 6 keeps task text out of events;
 * so the task sent at registration is validated and dropped, never stored or logged.
 */

export interface CloudAgentRunRecord {
  id: string;
  organisationId: string;
  projectId: string;
  /** The workbench that registered the run; only it reports events and ends the run. */
  deviceId: string;
  /** The workbench's person: `startedBy`, and the subject of every relayed call's assertion. */
  personId: string;
  provider: string;
  team: string | null;
  member: string | null;
  workspaceId: string | null;
  /** JSON array of the tool names the run was registered with. */
  tools: string | null;
  /** SHA-256 (hex) of the run credential; null once the run ended, or when it got none. */
  credentialHash: string | null;
  createdAt: Date;
  /** The credential's end (at most four hours after registration): the run stops counting as running. */
  expiresAt: Date;
  endedAt: Date | null;
}

export interface CloudAgentRunEventRecord {
  rowId: string;
  runId: string;
  at: Date;
  kind: string;
  providerTaskId: string | null;
  pageUrl: string | null;
  pullRequestUrl: string | null;
  sentence: string | null;
  receivedAt: Date;
}

/** One row per person who ever registered a run: locked while a registration counts running runs. */
export interface CloudAgentRunLockRecord {
  organisationId: string;
  personId: string;
  updatedAt: Date;
}

const ref = (name: string) => ({ type: 'varchar', length: 40, name }) as const;
const optionalText = (name: string, length: number) => ({ type: 'varchar', length, name, nullable: true, default: null }) as const;
const when = (name: string) => ({ type: 'datetime', precision: 3, name }) as const;

/*
 * On MySQL the id, credential hash and workspace columns are `utf8mb4_bin` (set in the
 * migration): they compare exactly, so `RUN_…` never finds `run_…`.
 */

export const MAX_URL_LENGTH = 2048;
export const MAX_SENTENCE_LENGTH = 300;

export const CloudAgentRunEntity = new EntitySchema<CloudAgentRunRecord>({
  name: 'CloudAgentRun',
  tableName: 'cloud_agent_runs',
  columns: {
    id: { type: 'varchar', length: 40, primary: true },
    organisationId: ref('organisation_id'),
    projectId: ref('project_id'),
    deviceId: ref('device_id'),
    personId: ref('person_id'),
    provider: { type: 'varchar', length: 100 },
    team: optionalText('team', 200),
    member: optionalText('member', 200),
    workspaceId: optionalText('workspace_id', 200),
    tools: { type: 'text', nullable: true, default: null },
    credentialHash: optionalText('credential_hash', 64),
    createdAt: when('created_at'),
    expiresAt: when('expires_at'),
    endedAt: { type: 'datetime', precision: 3, name: 'ended_at', nullable: true, default: null },
  },
  indices: [
    { name: 'cloud_agent_runs_credential', columns: ['credentialHash'], unique: true },
    { name: 'cloud_agent_runs_person_running', columns: ['organisationId', 'personId', 'endedAt', 'expiresAt'] },
    { name: 'cloud_agent_runs_project', columns: ['projectId'] },
    { name: 'cloud_agent_runs_person', columns: ['personId'] },
    { name: 'cloud_agent_runs_expires', columns: ['expiresAt'] },
  ],
  foreignKeys: [
    { name: 'fk_cloud_agent_runs_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    { name: 'fk_cloud_agent_runs_device', target: 'Device', columnNames: ['deviceId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    // A run goes with its project (deleted with force) and with its person (account deletion).
    { name: 'fk_cloud_agent_runs_project', target: 'Project', columnNames: ['projectId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    { name: 'fk_cloud_agent_runs_person', target: 'Person', columnNames: ['personId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

/** SQLite's INTEGER PRIMARY KEY is its 64-bit row id; MySQL needs BIGINT for the same range. */
export const CloudAgentRunEventEntity = (dialect: 'sqlite' | 'mysql') =>
  new EntitySchema<CloudAgentRunEventRecord>({
    name: 'CloudAgentRunEvent',
    tableName: 'cloud_agent_run_events',
    columns: {
      rowId: { type: dialect === 'sqlite' ? 'integer' : 'bigint', primary: true, generated: 'increment', name: 'row_id' },
      runId: ref('run_id'),
      at: when('at'),
      kind: { type: 'varchar', length: 40 },
      providerTaskId: optionalText('provider_task_id', 200),
      pageUrl: optionalText('page_url', MAX_URL_LENGTH),
      pullRequestUrl: optionalText('pull_request_url', MAX_URL_LENGTH),
      sentence: optionalText('sentence', MAX_SENTENCE_LENGTH),
      receivedAt: when('received_at'),
    },
    indices: [
      { name: 'cloud_agent_run_events_run', columns: ['runId', 'rowId'] },
      { name: 'cloud_agent_run_events_received', columns: ['receivedAt'] },
    ],
    foreignKeys: [
      { name: 'fk_cloud_agent_run_events_run', target: 'CloudAgentRun', columnNames: ['runId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    ],
  });

export const CloudAgentRunLockEntity = new EntitySchema<CloudAgentRunLockRecord>({
  name: 'CloudAgentRunLock',
  tableName: 'cloud_agent_run_locks',
  columns: {
    organisationId: { ...ref('organisation_id'), primary: true },
    personId: { ...ref('person_id'), primary: true },
    updatedAt: when('updated_at'),
  },
  foreignKeys: [
    { name: 'fk_cloud_agent_run_locks_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

export function cloudAgentEntities(dialect: 'sqlite' | 'mysql') {
  return [CloudAgentRunEntity, CloudAgentRunEventEntity(dialect), CloudAgentRunLockEntity];
}
