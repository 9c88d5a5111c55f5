import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { DEFAULT_POLICY } from '../../../policies/default-policy.js';
import { isUniqueViolation } from '../../db/errors.js';
import { conflict, invalidRequest } from '../../http/errors.js';
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

export interface StoredRevision {
  number: number;
  projectId: string | null;
  publishedBy: string | null;
  publishedAt: Date;
  valid: boolean;
  document: Record<string, unknown>;
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
 *   validates (the schema moved on, or someone edited the table) is skipped and logged, and the
 *   newest valid one before it applies, or the defaults. A stored policy never stops the service
 *   answering.
 * - Answers are cached per organisation and project, keyed by the newest publish numbers, which
 *   one indexed query reads on every request: a poll that changes nothing rebuilds nothing, and
 *   every replica sees a publish on its next request.
 */
export class PolicyService {
  private readonly store: PolicyStore;
  private readonly defaults: PolicyDocument;
  private readonly organisationLayers = new Map<string, OrganisationLayer>();
  private readonly answers = new Map<string, { stamp: string; answer: EffectivePolicy }>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly projects: ProjectLookup,
    defaults: PolicyDocument = DEFAULT_POLICY,
  ) {
    this.store = new PolicyStore(dataSource);
    const problem = check(validateDocument, defaults, 'defaults');
    // The defaults ship with the code: a broken one is a build mistake, not an operating condition.
    if (problem) throw new Error(`the default policy does not validate: ${problem.message}`);
    this.defaults = withoutSource(structuredClone(defaults)) as PolicyDocument;
  }

  /** The policy a workbench of the organisation (in the project, when named) enforces. */
  async effective(organisationId: string, projectId?: string): Promise<EffectivePolicy> {
    if (projectId !== undefined) await this.projects.get(organisationId, projectId);
    const latest = await this.store.latestNumbers(organisationId, projectId);
    const key = `${organisationId}/${projectId ?? ''}`;
    const stamp = `${latest.organisation ?? '-'}/${latest.project ?? '-'}`;
    const cached = this.answers.get(key);
    if (cached?.stamp === stamp) return cached.answer;
    const answer = await this.build(organisationId, projectId, latest);
    remember(this.answers, key, { stamp, answer });
    return answer;
  }

  /** Publishes the organisation's whole policy; answers the organisation's effective policy. */
  async publishOrganisation(organisationId: string, publishedBy: string | undefined, input: unknown): Promise<EffectivePolicy> {
    const problem = check(validateDocument, input, 'body');
    if (problem) throw invalidRequest(problem.message, { field: problem.field });
    await this.save(organisationId, null, publishedBy, withoutSource(input));
    return this.effective(organisationId);
  }

  /**
   * Publishes a project's override; answers the project's effective policy. `{}` clears it.
   * The override is checked on its own (so it stays valid over any later organisation policy)
   * and merged over the organisation's current policy (so what it yields today is checked too).
   */
  async publishProject(organisationId: string, projectId: string, publishedBy: string | undefined, input: unknown): Promise<EffectivePolicy> {
    await this.projects.get(organisationId, projectId);
    const own = check(validateOverride, input, 'body');
    if (own) throw invalidRequest(own.message, { field: own.field });
    const override = withoutSource(input);
    const latest = await this.store.latestNumbers(organisationId, undefined);
    const { document } = await this.organisationLayer(organisationId, latest.organisation);
    const merged = check(validateDocument, mergeOverride(document, override), 'body');
    if (merged) throw invalidRequest(merged.message, { field: merged.field });
    await this.save(organisationId, projectId, publishedBy, override);
    return this.effective(organisationId, projectId);
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

  private async build(organisationId: string, projectId: string | undefined, latest: LatestNumbers): Promise<EffectivePolicy> {
    const organisation = await this.organisationLayer(organisationId, latest.organisation);
    let document = organisation.document;
    let source: Source = organisation.number === undefined ? 'default' : 'organisation';
    if (projectId !== undefined && latest.project !== undefined) {
      const merged = await this.projectLayer(organisationId, projectId, latest.project, organisation.document);
      if (merged) {
        document = merged;
        source = 'project';
      }
    }
    const policy: PolicyDocument = { ...document, source };
    return { revision: revisionOf(policy), policy, published: source !== 'default' };
  }

  private async organisationLayer(organisationId: string, latest: number | undefined): Promise<OrganisationLayer> {
    if (latest === undefined) return { latest, number: undefined, document: this.defaults };
    const cached = this.organisationLayers.get(organisationId);
    if (cached && cached.latest === latest) return cached;
    const found = await this.newestValid<PolicyDocument>(organisationId, null, latest, (value) => {
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

  /** The project's newest valid override merged over `base`; undefined when none applies or it is empty. */
  private async projectLayer(organisationId: string, projectId: string, latest: number, base: PolicyDocument): Promise<PolicyDocument | undefined> {
    const found = await this.newestValid<{ merged: PolicyDocument; empty: boolean }>(organisationId, projectId, latest, (value) => {
      const own = check(validateOverride, value, 'override');
      if (own) return { problem: own };
      const merged = mergeOverride(base, value);
      const problem = check(validateDocument, merged, 'policy');
      return problem ? { problem } : { accepted: { merged, empty: Object.keys(value as object).length === 0 } };
    });
    if (!found) {
      this.logger.error({ organisationId, projectId }, "no stored override of the project validates; serving the organisation's policy");
      return undefined;
    }
    return found.accepted.empty ? undefined : found.accepted.merged;
  }

  /**
   * The newest row of the scope numbered at most `latest` that `accept` takes; every row it
   * refuses on the way is logged (the reason names the field, never the value).
   */
  private async newestValid<T>(
    organisationId: string,
    projectId: string | null,
    latest: number,
    accept: (value: unknown) => { problem: Problem } | { accepted: T },
  ): Promise<{ accepted: T; number: number } | undefined> {
    let below = latest + 1;
    for (;;) {
      const rows = await this.store.page(organisationId, projectId, PAGE, below);
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

  private parse(row: PolicyRevisionRecord): unknown {
    try {
      return JSON.parse(row.document) as unknown;
    } catch {
      this.logger.warn(
        { organisationId: row.organisationId, projectId: row.projectId, revision: row.number, reason: 'not JSON' },
        'a stored policy no longer validates; the newest valid one before it applies',
      );
      return undefined;
    }
  }

  /** Keeps a publish as the scope's newest revision; publishing the newest document again changes nothing. */
  private async save(organisationId: string, projectId: string | null, publishedBy: string | undefined, document: unknown): Promise<void> {
    const text = canonicalJson(document);
    if (Buffer.byteLength(text, 'utf8') > MAX_STORED_DOCUMENT_BYTES) {
      throw invalidRequest(`the policy must be at most ${MAX_STORED_DOCUMENT_BYTES} bytes as canonical JSON`, { field: 'body' });
    }
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.dataSource.transaction(async (manager) => {
          const store = this.store.withManager(manager);
          const [newest] = await store.page(organisationId, projectId, 1);
          if (newest?.document === text) return;
          await store.insert({
            id: newId('pol'),
            organisationId,
            projectId,
            number: (await store.maxNumber(organisationId)) + 1,
            document: text,
            publishedBy: publishedBy ?? null,
            createdAt: this.clock.now(),
          });
        });
        return;
      } catch (error) {
        // Two publishes in one organisation took the same number: the loser tries again.
        if (!isUniqueViolation(error)) throw error;
        if (attempt >= PUBLISH_ATTEMPTS) throw conflict('conflict', 'the policy was being published by someone else at the same moment; try again');
      }
    }
  }
}
