import type { DataSource } from 'typeorm';
import { QueryFailedError } from 'typeorm';
import type { FromSchema } from 'json-schema-to-ts';
import type { MemoryReadRule } from '../../../policies/memory-reads.js';
import { ApiError, notFound } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { auditItemSteps, RedactionBudget, RedactionBudgetExceeded, redactSteps, redactTextSteps, type Steps } from './redaction.js';
import type { ingestAnswerSchema, ingestEnvelopeSchema } from './schemas.js';
import { canonicalStoredText, instant, storableInstant, utcText } from '../../util/time.js';
import { dialectOf, IngestStore, sqlTime, type Dialect, type StreamCursors, type StreamKey } from './store.js';

export type IngestEnvelope = FromSchema<typeof ingestEnvelopeSchema>;
export type IngestAnswer = FromSchema<typeof ingestAnswerSchema>;

/** Fields of an audit record that hold content: all of them go for a memory read. */
export const AUDIT_CONTENT_FIELDS = ['details', 'target'] as const;

const MAX_ATTEMPTS = 4;

function isRetryable(error: unknown): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const code = (error.driverError as { code?: string } | undefined)?.code ?? '';
  // Two uploads of different streams can still deadlock on index gaps in InnoDB; SQLite reports
  // a busy database when another connection holds the write lock.
  return code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT' || code === 'SQLITE_BUSY';
}

/** `<at>|<id>`: ordered by time, then id; RFC 3339 UTC text sorts as time does. */
function position(at: string, id: string): string {
  return `${instant(at).toISOString()}|${id}`;
}

/** Redacted text for a field stored as is, kept within its column (a marker may be longer than
 * the secret it replaces). */
function* redactedText(value: string, max: number, meter: { work: number }): Steps<string> {
  const found: string[] = [];
  return (yield* redactTextSteps(value, found, meter)).slice(0, max);
}

/**
 * Everything of an envelope that redaction reads, as steps: event `kind` and `data`; audit
 * `action`, `actor`, `label`, `details`, `target` (or nothing of the content of a memory read,
 * decided on the action as sent); usage `provider` and `model`; task titles. Ids, workspaces and
 * times are identifiers the store keys on and are kept as sent.
 */
function* redactEnvelope(envelope: IngestEnvelope, isMemoryRead: MemoryReadRule) {
  const meter = { work: 0 };
  const events = [];
  for (const event of envelope.events ?? []) {
    events.push({ ...event, kind: yield* redactedText(event.kind, 100, meter), data: (yield* redactSteps(event.data, meter)).value });
  }
  const audit = [];
  for (const item of envelope.audit ?? []) {
    const redacted = (yield* auditItemSteps(item, AUDIT_CONTENT_FIELDS, isMemoryRead, meter)).value;
    audit.push({
      ...redacted,
      action: yield* redactedText(redacted.action, 100, meter),
      actor: yield* redactedText(redacted.actor, 200, meter),
      ...(redacted.target !== undefined ? { target: redacted.target.slice(0, 500) } : {}),
      ...(redacted.label !== undefined ? { label: redacted.label.slice(0, 500) } : {}),
    });
  }
  const usage = [];
  for (const item of envelope.usage ?? []) {
    usage.push({ ...item, provider: yield* redactedText(item.provider, 100, meter), model: yield* redactedText(item.model, 200, meter) });
  }
  const tasks = [];
  for (const task of envelope.tasks ?? []) tasks.push({ ...task, title: yield* redactedText(task.title, 500, meter) });
  return { events, audit, usage, tasks };
}

function newest(current: string, candidates: readonly string[]): string {
  let best = current;
  for (const candidate of candidates) if (candidate > best) best = candidate;
  return best;
}

/**
 * Every time the envelope asks to store is one a stored timestamp holds (util/time.ts), or 400
 * naming it. Answers the items' times as bound to the database, read once, in the order of their
 * lists: a time in the canonical UTC form goes in as its text (`canonicalStoredText`), any other
 * through its instant.
 */
function storedTimes(envelope: IngestEnvelope, dialect: Dialect): Record<'events' | 'usage' | 'audit', (string | Date)[]> {
  const bound = (list: 'events' | 'usage' | 'audit') =>
    (envelope[list] ?? []).map((item, index) => canonicalStoredText(item.at) ?? sqlTime(dialect, storableInstant(item.at, `body.${list}[${index}].at`)));
  const times = { events: bound('events'), usage: bound('usage'), audit: bound('audit') };
  (envelope.tasks ?? []).forEach((task, index) => {
    for (const name of ['createdAt', 'updatedAt', 'completedAt'] as const) {
      const value = task[name];
      if (value !== undefined && value !== null) storableInstant(value, `body.tasks[${index}].${name}`);
    }
  });
  return times;
}

/** Which audit actions of a project's workbenches are memory reads (the policy service knows). */
export interface MemoryReadPolicy {
  /** The rule of the project's effective policy; 404 `not_found` when the project is not the organisation's. */
  memoryReadRule(organisationId: string, projectId: string): Promise<MemoryReadRule>;
}

/**
 * Stores one envelope: all of it or nothing, in one transaction. Each item is identified (see
 * entities.ts), so a retry of an envelope whose answer was lost stores nothing again, answers
 * zero counts and the same cursors. Cursors only move forward.
 */
export class IngestService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly policies: MemoryReadPolicy,
    /** INGEST_REDACTION_BUDGET_MS: work redaction may spend on one envelope. */
    private readonly redactionBudgetMs: number,
    /** Told of each envelope stored: items received and newly stored, by kind (metrics). */
    private readonly onStored?: (received: IngestAnswer['accepted'], stored: IngestAnswer['accepted']) => void,
  ) {}

  async ingest(device: { organisationId: string; deviceId: string }, envelope: IngestEnvelope): Promise<IngestAnswer> {
    // The project's effective policy says which audit actions are memory reads. Another
    // organisation's project, or none: 404 either way (the policy service checks the project).
    const isMemoryRead = await this.policies.memoryReadRule(device.organisationId, envelope.projectId);
    const dialect = dialectOf(this.dataSource);
    const times = storedTimes(envelope, dialect);

    // Redaction happens before anything is stored (or could be logged), in slices that give the
    // event loop back, within its budget.
    const { events, audit, usage, tasks } = await new RedactionBudget(this.redactionBudgetMs).run(redactEnvelope(envelope, isMemoryRead)).catch((error: unknown) => {
      if (!(error instanceof RedactionBudgetExceeded)) throw error;
      throw new ApiError(413, 'payload_too_large', `redacting the envelope took longer than its budget of ${error.budgetMs} ms; send fewer or smaller items in one upload`);
    });
    const stream: StreamKey = { organisationId: device.organisationId, deviceId: device.deviceId, workspaceId: envelope.workspaceId };

    const received = { events: events.length, usage: usage.length, audit: audit.length, tasks: tasks.length };
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await this.dataSource.transaction(async (manager) => {
          const store = new IngestStore(manager, dialect);
          const now = this.clock.now();
          const t = (value: string | Date) => sqlTime(dialect, typeof value === 'string' ? instant(value) : value);
          if (!(await store.holdProject(device.organisationId, envelope.projectId))) throw notFound('no such project');
          const held = await store.lockStream(stream, now);
          // One text for every row (the same on both dialects), not a Date escaped once per row.
          const receivedAt = utcText(now);
          const base = [device.organisationId, envelope.projectId, device.deviceId, envelope.workspaceId];
          const common = ['organisation_id', 'project_id', 'device_id', 'workspace_id'];

          const acceptedEvents = await store.insertIgnore(
            'ingest_events',
            [...common, 'seq', 'event_id', 'at', 'kind', 'data', 'received_at'],
            events.map((e, index) => [...base, e.seq, e.id, times.events[index]!, e.kind, JSON.stringify(e.data), receivedAt]),
          );
          const acceptedUsage = await store.insertIgnore(
            'ingest_usage',
            [...common, 'item_id', 'at', 'provider', 'model', 'input_tokens', 'output_tokens', 'cached_tokens', 'cost', 'received_at'],
            usage.map((u, index) => [...base, u.id, times.usage[index]!, u.provider, u.model, u.inputTokens, u.outputTokens, u.cachedTokens, Math.round(u.cost * 1e6) / 1e6, receivedAt]),
          );
          const acceptedAudit = await store.insertIgnore(
            'ingest_audit',
            [...common, 'item_id', 'at', 'actor', 'action', 'target', 'label', 'details', 'received_at'],
            audit.map((a, index) => [
              ...base,
              a.id,
              times.audit[index]!,
              a.actor,
              a.action,
              a.target ?? null,
              a.label ?? null,
              a.details === undefined ? null : JSON.stringify(a.details),
              receivedAt,
            ]),
          );
          let acceptedTasks = 0;
          for (const task of tasks) {
            const values = {
              title: task.title,
              status: task.status,
              createdAt: instant(task.createdAt),
              updatedAt: instant(task.updatedAt),
              completedAt: task.completedAt ? instant(task.completedAt) : null,
              projectId: envelope.projectId,
              workspaceId: envelope.workspaceId,
            };
            const inserted = await store.insertIgnore(
              'ingest_tasks',
              [...common, 'task_id', 'title', 'status', 'created_at', 'updated_at', 'completed_at', 'received_at'],
              [[...base, task.id, task.title, task.status, t(values.createdAt), t(values.updatedAt), values.completedAt ? t(values.completedAt) : null, receivedAt]],
            );
            if (inserted || (await store.updateTaskIfNewer(device.deviceId, task.id, values, now))) acceptedTasks += 1;
          }

          const cursors: StreamCursors = {
            events: Math.max(held.events, ...events.map((e) => e.seq)),
            usage: newest(held.usage, usage.map((u) => position(u.at, u.id))),
            audit: newest(held.audit, audit.map((a) => position(a.at, a.id))),
          };
          if (cursors.events !== held.events || cursors.usage !== held.usage || cursors.audit !== held.audit) {
            await store.saveCursors(stream, cursors, now);
          }
          return {
            accepted: { events: acceptedEvents, usage: acceptedUsage, audit: acceptedAudit, tasks: acceptedTasks },
            cursors,
          };
        });
        this.onStored?.(received, answer.accepted);
        return answer;
      } catch (error) {
        if (attempt < MAX_ATTEMPTS && isRetryable(error)) continue;
        throw error;
      }
    }
  }
}
