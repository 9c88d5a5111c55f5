import type { Reads } from '../../db/reads.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { DEFAULT_POLICY } from '../../../policies/default-policy.js';
import { memoryReadRuleFor, type MemoryReadRule } from '../../../policies/memory-reads.js';
import { audit, NO_AUDIT_TRAIL, type AuditActor, type AuditTrail } from '../../audit.js';
import { isForeignKeyViolation, isUniqueViolation } from '../../db/errors.js';
import { ApiError, conflict, invalidRequest, notFound } from '../../errors.js';
import { withinJsonBounds, type JsonLimits } from '../../http/json-bounds.js';
import { compile, describeError } from '../../http/schema.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { MAX_STORED_DOCUMENT_BYTES, type PolicyRevisionRecord } from './entities.js';
import { canonicalJson, isPlainObject, mergeOverride, revisionOf } from './merge.js';
import { policyDocumentSchema, policyOverrideSchema, type PolicyDocument } from './schemas.js';
import { PolicyStore, type LatestNumbers } from './store.js';

/** The answer of `GET /policy/v1` (spec 2.14). */
export interface EffectivePolicy {
  revision: string;
  policy: PolicyDocument;
  published: boolean;
}

/** The answer of a publish or a restore: the effective policy, and what the request changed. */
export interface PublishOutcome extends EffectivePolicy {
  /** False when the document equals the one that applies: nothing was stored. */
  changed: boolean;
  /** The stored publish of the scope that applies now (the new one when `changed`); null: none. */
  number: number | null;
}

/** What a publish or restore is checked against before it is stored. */
export interface Preconditions {
  /** The `If-Match` header as received; undefined when absent. */
  ifMatch?: string | undefined;
}

export interface StoredRevision {
  number: number;
  projectId: string | null;
  publishedBy: string | null;
  publishedAt: Date;
  valid: boolean;
  document: Record<string, unknown>;
}

/**
 * Where the newest publish numbers are kept between polls: `AuthCache` (src/auth/auth-cache.ts),
 * dropped with the caches of verified credentials whenever a publish is made anywhere
 * (src/auth/revocations.ts watches every insert into `policy_revisions`).
 */
export interface LatestNumbersCache {
  readonly enabled: boolean;
  readonly size: number;
  begin(): number;
  fresh(): Promise<void> | undefined;
  get(key: string): LatestNumbers | undefined;
  set(key: string, value: LatestNumbers, generation: number): void;
  /** One look-up for all concurrent misses of `key` (AuthCache `once`). */
  once<R>(key: string, lookUp: () => Promise<R>): Promise<R>;
}

export interface PolicyServiceOptions {
  /** The defaults that apply until an organisation publishes; `policies/default-policy.ts`. */
  defaults?: PolicyDocument;
  /** Without it (the command line), every read asks the database for the newest numbers. */
  latestNumbers?: LatestNumbersCache;
  /** Where each publish and restore leaves its audit row, in the publish's transaction. */
  trail?: AuditTrail;
  /**
   * Where the revisions of a scope are read once its newest publish number is known (src/db/reads.ts):
   * a read replica that already has that publish, else the primary. Default: the primary.
   */
  reads?: Reads | undefined;
}

/**
 * A publish or restore that changed what applies, told after its transaction committed: the
 * scope, the publish number and the scope's effective revision after it (never the document).
 */
export interface PublishedChange {
  organisationId: string;
  projectId: string | null;
  number: number;
  revision: string;
}

/** A scope's current state as the control channel's hello names it: its newest publish (null: none) and its effective revision. */
export interface CurrentRevision {
  number: number | null;
  revision: string;
}

/** How the service learns that a project exists in an organisation: throws 404 otherwise. */
export interface ProjectLookup {
  get(organisationId: string, projectId: string): Promise<unknown>;
}

type Source = NonNullable<PolicyDocument['source']>;

interface Problem {
  field: string;
  message: string;
}

interface OrganisationLayer {
  /** The newest publish number when this was worked out: the cache key. */
  latest: number | undefined;
  /** The publish that applies; undefined when the defaults do. */
  number: number | undefined;
  document: PolicyDocument;
}

/** A project's override that applies: the stored publish, and the result of merging it. */
interface ProjectLayer {
  number: number;
  override: Record<string, unknown>;
  /** Undefined when the override is empty (`{}`): the organisation's policy applies as it is. */
  merged: PolicyDocument | undefined;
}

/** One scope's state inside a publish: what applies now, as the request's `If-Match` saw it. */
interface ScopeState {
  latest: LatestNumbers;
  current: EffectivePolicy;
  /** The publish of the scope that applies and its canonical text; undefined when none does. */
  applied: { number: number; text: string } | undefined;
}

interface Commit {
  organisationId: string;
  projectId: string | null;
  actor: AuditActor;
  document: unknown;
  preconditions: Preconditions;
  action: 'policy.published' | 'policy.restored';
  restoredFrom?: number;
}

const validateDocument = compile(policyDocumentSchema, 'body');
const validateOverride = compile(policyOverrideSchema, 'body');

const PAGE = 20;
const MAX_CACHED = 10_000;
const PUBLISH_ATTEMPTS = 3;

function check(validate: ValidateFunction, value: unknown, where: string): Problem | undefined {
  return validate(value) ? undefined : describeError(where, validate.errors?.[0]);
}

/** `source` is the service's to set; whatever a publisher sent is not kept. */
function withoutSource(value: unknown): unknown {
  if (!isPlainObject(value) || !Object.hasOwn(value, 'source')) return value;
  const { source: _ignored, ...rest } = value;
  return rest;
}

/** RFC 9110 13.1.1: `*`, or a list of entity tags compared strongly (a weak tag never matches). */
export function ifMatchHolds(header: string, etag: string): boolean {
  return header.split(',').some((candidate) => {
    const value = candidate.trim();
    return value === '*' || value === etag;
  });
}

export const preconditionFailed = (etag: string): ApiError =>
  new ApiError(412, 'precondition_failed', 'the policy changed since the ETag given in If-Match; read it again (its ETag is in this answer) and publish over it', {
    headers: { ETag: etag },
  });

export const preconditionRequired = (): ApiError =>
  new ApiError(428, 'precondition_required', 'this deployment requires If-Match with the ETag of the current policy (GET /policy/v1) on every publish and restore');

export const invalidRevision = (number: number, problem: string): ApiError =>
  new ApiError(409, 'invalid_revision', `revision ${number} cannot be restored: ${problem}`, { extra: { number } });

function remember<V>(cache: Map<string, V>, key: string, value: V): void {
  cache.delete(key);
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string);
  cache.set(key, value);
}

/**
 * The effective policy of an organisation or one of its projects, and publishing it.
 *
 * - Until the organisation publishes, the defaults of `policies/default-policy.ts` apply.
 * - A project's override is merged over the organisation's policy by the rule of `merge.ts`.
 * - A stored document is checked again whenever it is read from the table: one that no longer
 *   validates (the schema moved on, or someone edited the table), or is nested or sized beyond
 *   the JSON limits, is skipped and logged, and the newest valid one before it applies, or the
 *   defaults. A stored policy never stops the service answering.
 * - Answers are cached per organisation and project, keyed by the newest publish numbers: a poll
 *   that changes nothing rebuilds nothing. The numbers come from one indexed query, kept (in the
 *   service, `latestNumbers`) like a verified token: for at most AUTH_CACHE_MAX_AGE_SECONDS,
 *   dropped on the replica that publishes before the publish answers, on the others through
 *   Redis as soon as the message arrives, and within a second through the revocation counter
 *   (a publish by the command line in another process). A read that began before a publish
 *   committed never stores what it read (the caches' generation).
 * - A publish (or a restore) is checked and stored in one transaction: `If-Match` against the
 *   scope's current effective revision, "identical to what applies" (nothing is stored), then a
 *   new publish number. Two publishes that read the same state collide on that number (a unique
 *   index); the loser starts again and sees the winner's publish, so of two publishers holding
 *   the same ETag exactly one succeeds and the other gets 412.
 */
export class PolicyService {
  private readonly store: PolicyStore;
  private readonly reads: Reads | undefined;
  private readonly defaults: PolicyDocument;
  private readonly organisationLayers = new Map<string, OrganisationLayer>();
  private readonly answers = new Map<string, { stamp: string; answer: EffectivePolicy }>();
  private readonly latest: LatestNumbersCache | undefined;
  private readonly published = new Set<(change: PublishedChange) => void>();

  private readonly trail: AuditTrail;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly projects: ProjectLookup,
    private readonly jsonLimits: JsonLimits,
    options: PolicyServiceOptions = {},
  ) {
    const defaults = options.defaults ?? DEFAULT_POLICY;
    this.latest = options.latestNumbers;
    this.trail = options.trail ?? NO_AUDIT_TRAIL;
    this.store = new PolicyStore(dataSource);
    this.reads = options.reads;
    const problem = check(validateDocument, defaults, 'defaults');
    // The defaults ship with the code: a broken one is a build mistake, not an operating condition.
    if (problem) throw new Error(`the default policy does not validate: ${problem.message}`);
    this.defaults = withoutSource(structuredClone(defaults)) as PolicyDocument;
  }

  /** Entries of the bounded answer caches (at most 10 000 each). */
  cacheSizes(): Record<string, number> {
    return { policyAnswers: this.answers.size, policyLayers: this.organisationLayers.size, ...(this.latest ? { policyLatestNumbers: this.latest.size } : {}) };
  }

  /** The policy a workbench of the organisation (in the project, when named) enforces. */
  async effective(organisationId: string, projectId?: string): Promise<EffectivePolicy> {
    if (projectId !== undefined) await this.projects.get(organisationId, projectId);
    const key = `${organisationId}/${projectId ?? ''}`;
    const latest = await this.latestNumbers(key, organisationId, projectId);
    const stamp = `${latest.organisation ?? '-'}/${latest.project ?? '-'}`;
    const cached = this.answers.get(key);
    if (cached?.stamp === stamp) return cached.answer;
    const answer = await this.build(this.store, organisationId, projectId, latest);
    remember(this.answers, key, { stamp, answer });
    return answer;
  }

  /** The newest publish numbers of the scope: from the cache while nothing was published. */
  private async latestNumbers(key: string, organisationId: string, projectId: string | undefined): Promise<LatestNumbers> {
    const cache = this.latest;
    if (!cache?.enabled) return this.store.latestNumbers(organisationId, projectId);
    const due = cache.fresh();
    if (due) await due;
    const known = cache.get(key);
    if (known) return known;
    // Concurrent misses of one scope share one query (one `MAX(number)`, not one per poll in flight).
    return cache.once(key, async () => {
      const generation = cache.begin();
      const latest = await this.store.latestNumbers(organisationId, projectId);
      cache.set(key, latest, generation);
      return latest;
    });
  }

  /**
   * The scope's newest publish number and effective revision (the hello of the control channel,
   * docs/api/policy-push.md); a project that is not the organisation's throws 404.
   */
  async current(organisationId: string, projectId?: string): Promise<CurrentRevision> {
    const answer = await this.effective(organisationId, projectId);
    const latest = await this.latestNumbers(`${organisationId}/${projectId ?? ''}`, organisationId, projectId);
    return { number: (projectId === undefined ? latest.organisation : latest.project) ?? null, revision: answer.revision };
  }

  /** Calls `listener` after every publish or restore that changed something has committed; answers the way to stop. */
  onPublished(listener: (change: PublishedChange) => void): () => void {
    this.published.add(listener);
    return () => this.published.delete(listener);
  }

  /**
   * Which audit actions of the project's workbenches are memory reads: the rule of
   * `policies/memory-reads.ts` with the effective policy's `audit.memoryReads`. As cheap as a
   * policy poll (the effective document is cached per revision, the rule per document); 404
   * for a project that is not the organisation's.
   */
  async memoryReadRule(organisationId: string, projectId: string): Promise<MemoryReadRule> {
    const { policy } = await this.effective(organisationId, projectId);
    return memoryReadRuleFor(policy.audit?.memoryReads);
  }

  /** Publishes the organisation's whole policy; answers the organisation's effective policy. */
  async publishOrganisation(organisationId: string, actor: AuditActor, input: unknown, preconditions: Preconditions = {}): Promise<PublishOutcome> {
    const problem = check(validateDocument, input, 'body');
    if (problem) throw invalidRequest(problem.message, { field: problem.field });
    return this.commit({ organisationId, projectId: null, actor, document: withoutSource(input), preconditions, action: 'policy.published' });
  }

  /**
   * Publishes a project's override; answers the project's effective policy. `{}` clears it.
   * The override is checked on its own (so it stays valid over any later organisation policy)
   * and merged over the organisation's current policy (so what it yields today is checked too).
   */
  async publishProject(organisationId: string, projectId: string, actor: AuditActor, input: unknown, preconditions: Preconditions = {}): Promise<PublishOutcome> {
    await this.projects.get(organisationId, projectId);
    const own = check(validateOverride, input, 'body');
    if (own) throw invalidRequest(own.message, { field: own.field });
    const override = withoutSource(input);
    const merged = await this.checkMerged(organisationId, override, 'body');
    if (merged) throw invalidRequest(merged.message, { field: merged.field });
    return this.commit({ organisationId, projectId, actor, document: override, preconditions, action: 'policy.published' });
  }

  /**
   * Makes an earlier publish of the organisation's policy (`projectId` null) or of a project's
   * override current again, as a new publish with the same document. It must be a publish of
   * that scope (404 otherwise) and still valid today (409 `invalid_revision` otherwise).
   */
  async restore(organisationId: string, projectId: string | null, number: number, actor: AuditActor, preconditions: Preconditions = {}): Promise<PublishOutcome> {
    if (projectId !== null) await this.projects.get(organisationId, projectId);
    const row = await this.store.byNumber(organisationId, number);
    if (!row || row.projectId !== projectId) throw notFound(`no revision ${number} of this policy`);
    const document = this.parse(row);
    if (document === undefined) throw invalidRevision(number, 'its stored text is unreadable');
    const problem = check(projectId === null ? validateDocument : validateOverride, document, 'policy');
    if (problem) throw invalidRevision(number, problem.message);
    if (projectId !== null) {
      const merged = await this.checkMerged(organisationId, document, 'policy');
      if (merged) throw invalidRevision(number, `merged over the organisation's policy, ${merged.message}`);
    }
    return this.commit({ organisationId, projectId, actor, document, preconditions, action: 'policy.restored', restoredFrom: number });
  }

  /** Stored publishes of the organisation's policy (`projectId` null) or a project's override,
   * newest first; with `below`, only those numbered below it (the next page). */
  async revisions(organisationId: string, projectId: string | null, limit: number, below?: number): Promise<StoredRevision[]> {
    if (projectId !== null) await this.projects.get(organisationId, projectId);
    const rows = await this.store.page(organisationId, projectId, limit, below);
    const validate = projectId === null ? validateDocument : validateOverride;
    return rows.map((row) => {
      const parsed = this.parse(row);
      return {
        number: row.number,
        projectId: row.projectId,
        publishedBy: row.publishedBy,
        publishedAt: row.createdAt,
        valid: parsed !== undefined && validate(parsed),
        document: isPlainObject(parsed) ? parsed : {},
      };
    });
  }

  /** The problem of `override` merged over the organisation's current policy, if any. */
  private async checkMerged(organisationId: string, override: unknown, where: string): Promise<Problem | undefined> {
    const latest = await this.store.latestNumbers(organisationId, undefined);
    const { document } = await this.organisationLayer(this.store, organisationId, latest.organisation);
    return check(validateDocument, mergeOverride(document, override), where);
  }

  private async build(store: PolicyStore, organisationId: string, projectId: string | undefined, latest: LatestNumbers): Promise<EffectivePolicy> {
    const organisation = await this.organisationLayer(store, organisationId, latest.organisation);
    let document = organisation.document;
    let source: Source = organisation.number === undefined ? 'default' : 'organisation';
    if (projectId !== undefined && latest.project !== undefined) {
      const project = await this.projectLayer(store, organisationId, projectId, latest.project, organisation.document);
      if (project?.merged) {
        document = project.merged;
        source = 'project';
      }
    }
    const policy: PolicyDocument = { ...document, source };
    return { revision: revisionOf(policy), policy, published: source !== 'default' };
  }

  private async organisationLayer(store: PolicyStore, organisationId: string, latest: number | undefined): Promise<OrganisationLayer> {
    if (latest === undefined) return { latest, number: undefined, document: this.defaults };
    const cached = this.organisationLayers.get(organisationId);
    if (cached && cached.latest === latest) return cached;
    const found = await this.newestValid<PolicyDocument>(store, organisationId, null, latest, (value) => {
      const problem = check(validateDocument, value, 'policy');
      return problem ? { problem } : { accepted: value as PolicyDocument };
    });
    if (!found) {
      this.logger.error({ organisationId }, 'no stored organisation policy validates; serving the default policy');
    }
    const layer: OrganisationLayer = found
      ? { latest, number: found.number, document: found.accepted }
      : { latest, number: undefined, document: this.defaults };
    remember(this.organisationLayers, organisationId, layer);
    return layer;
  }

  /** The project's newest valid override and its merge over `base`; undefined when none applies. */
  private async projectLayer(store: PolicyStore, organisationId: string, projectId: string, latest: number, base: PolicyDocument): Promise<ProjectLayer | undefined> {
    const found = await this.newestValid<Omit<ProjectLayer, 'number'>>(store, organisationId, projectId, latest, (value) => {
      const own = check(validateOverride, value, 'override');
      if (own) return { problem: own };
      const merged = mergeOverride(base, value);
      const problem = check(validateDocument, merged, 'policy');
      const override = value as Record<string, unknown>;
      return problem ? { problem } : { accepted: { override, merged: Object.keys(override).length === 0 ? undefined : merged } };
    });
    if (!found) {
      this.logger.error({ organisationId, projectId }, "no stored override of the project validates; serving the organisation's policy");
      return undefined;
    }
    return { number: found.number, ...found.accepted };
  }

  /**
   * The newest row of the scope numbered at most `latest` that `accept` takes; every row it
   * refuses on the way is logged (the reason names the field, never the value).
   */
  private async newestValid<T>(
    store: PolicyStore,
    organisationId: string,
    projectId: string | null,
    latest: number,
    accept: (value: unknown) => { problem: Problem } | { accepted: T },
  ): Promise<{ accepted: T; number: number } | undefined> {
    let below = latest + 1;
    // Outside a publish's transaction, a replica may answer: the rows numbered up to `latest` never
    // change, and one that has the row numbered `latest` has every row before it (a scope's numbers
    // are taken in commit order). The pages after the first come from where the first came from.
    let source = store;
    let firstPage: PolicyRevisionRecord[] | undefined;
    if (store === this.store && this.reads) {
      const first = await this.reads.settled(
        async (manager) => {
          const on = store.withManager(manager);
          return { on, rows: await on.page(organisationId, projectId, PAGE, below) };
        },
        ({ rows }) => rows[0]?.number === latest,
      );
      source = first.on;
      firstPage = first.rows;
    }
    for (;;) {
      const rows = firstPage ?? (await source.page(organisationId, projectId, PAGE, below));
      firstPage = undefined;
      for (const row of rows) {
        const value = this.parse(row);
        if (value === undefined) continue;
        const outcome = accept(value);
        if ('accepted' in outcome) return { accepted: outcome.accepted, number: row.number };
        this.logger.warn(
          { organisationId, projectId, revision: row.number, field: outcome.problem.field, reason: outcome.problem.message },
          'a stored policy no longer validates; the newest valid one before it applies',
        );
      }
      const last = rows.at(-1);
      if (rows.length < PAGE || !last) return undefined;
      below = last.number;
    }
  }

  /** A stored document, or undefined when it is not JSON or passes the JSON limits (checked before anything recursive). */
  private parse(row: PolicyRevisionRecord): unknown {
    let reason: string;
    try {
      const value = JSON.parse(row.document) as unknown;
      if (withinJsonBounds(value, this.jsonLimits)) return value;
      reason = 'beyond the JSON limits';
    } catch {
      reason = 'not JSON';
    }
    this.logger.warn(
      { organisationId: row.organisationId, projectId: row.projectId, revision: row.number, reason },
      'a stored policy no longer validates; the newest valid one before it applies',
    );
    return undefined;
  }

  private tell(change: PublishedChange): void {
    for (const listener of this.published) {
      try {
        listener(change);
      } catch (error) {
        // The publish stands; polling still brings it to every workbench.
        this.logger.warn({ organisationId: change.organisationId, reason: error instanceof Error ? error.message.split('\n')[0] : String(error) }, 'a policy change listener failed');
      }
    }
  }

  /** The scope's current state, read in the publish's transaction (`store` is bound to it). */
  private async scopeState(store: PolicyStore, organisationId: string, projectId: string | null): Promise<ScopeState> {
    const latest = await store.latestNumbers(organisationId, projectId ?? undefined);
    const current = await this.build(store, organisationId, projectId ?? undefined, latest);
    const organisation = await this.organisationLayer(store, organisationId, latest.organisation);
    let applied: ScopeState['applied'];
    if (projectId === null) {
      if (organisation.number !== undefined) applied = { number: organisation.number, text: canonicalJson(organisation.document) };
    } else if (latest.project !== undefined) {
      const project = await this.projectLayer(store, organisationId, projectId, latest.project, organisation.document);
      if (project) applied = { number: project.number, text: canonicalJson(project.override) };
    }
    return { latest, current, applied };
  }

  /**
   * Keeps a document as the scope's newest publish, after `If-Match`; a document equal to the
   * one that applies is not stored again (a project without an override counts as `{}`).
   * Writes the audit line of a change. Answers the scope's effective policy right after it.
   */
  private async commit(commit: Commit): Promise<PublishOutcome> {
    const { organisationId, projectId } = commit;
    const text = canonicalJson(commit.document);
    if (Buffer.byteLength(text, 'utf8') > MAX_STORED_DOCUMENT_BYTES) {
      throw invalidRequest(`the policy must be at most ${MAX_STORED_DOCUMENT_BYTES} bytes as canonical JSON`, { field: 'body' });
    }
    for (let attempt = 1; ; attempt += 1) {
      try {
        const stored = await this.dataSource.transaction(async (manager) => {
          const store = this.store.withManager(manager);
          const state = await this.scopeState(store, organisationId, projectId);
          const { ifMatch } = commit.preconditions;
          if (ifMatch !== undefined && !ifMatchHolds(ifMatch, `"${state.current.revision}"`)) throw preconditionFailed(`"${state.current.revision}"`);
          const unchanged = state.applied ? state.applied.text === text : projectId !== null && text === '{}';
          if (unchanged) return { changed: false, number: state.applied?.number ?? null, latest: state.latest };
          const number = (await store.maxNumber(organisationId)) + 1;
          await store.insert({
            id: newId('pol'),
            organisationId,
            projectId,
            number,
            document: text,
            publishedBy: commit.actor.personId ?? null,
            createdAt: this.clock.now(),
          });
          const latest = projectId === null ? { ...state.latest, organisation: number } : { ...state.latest, project: number };
          // The row names the revision by its number, never the document.
          await this.trail.record(manager, {
            action: commit.action,
            organisationId,
            actor: commit.actor,
            target: { projectId, number, ...(commit.restoredFrom !== undefined ? { restoredFrom: commit.restoredFrom } : {}) },
          });
          return { changed: true, number, latest };
        });
        // Rows never change once stored: the answer is the state right after this publish, even
        // if another one has landed since.
        const answer = await this.build(this.store, organisationId, projectId ?? undefined, stored.latest);
        if (stored.changed) {
          audit(this.logger, {
            action: commit.action,
            organisationId,
            actor: commit.actor,
            target: {
              projectId,
              number: stored.number,
              revision: answer.revision,
              ...(commit.restoredFrom !== undefined ? { restoredFrom: commit.restoredFrom } : {}),
            },
          });
          // After the commit (the transaction above has resolved): a listener never tells anyone
          // of a publish that may still roll back.
          if (stored.number !== null) this.tell({ organisationId, projectId, number: stored.number, revision: answer.revision });
        }
        return { ...answer, changed: stored.changed, number: stored.number };
      } catch (error) {
        // The project was deleted between the check and the insert.
        if (projectId !== null && isForeignKeyViolation(error)) throw notFound('no such project');
        // Two publishes in one organisation took the same number: the loser tries again.
        if (!isUniqueViolation(error)) throw error;
        if (attempt >= PUBLISH_ATTEMPTS) throw conflict('conflict', 'the policy was being published by someone else at the same moment; try again');
      }
    }
  }
}
