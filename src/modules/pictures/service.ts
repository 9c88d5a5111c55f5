import { createHash } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { isUniqueViolation } from '../../db/errors.js';
import { ApiError, invalidRequest, notFound } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { canonicalJson } from '../policy/merge.js';
import type { PictureRecord } from './entities.js';
import { conditionsHold, preconditionFailed, requireGuard, type Preconditions } from './preconditions.js';
import { PICTURE_LIMITS, SLUG_PATTERN } from './schemas.js';
import { PictureStore, type PictureHead, type PictureSummaryRow } from './store.js';
import { SvgCheckBusy, SvgCheckTimeout, type SvgChecker } from './svg/check-pool.js';
import { SvgRefusal, type CheckedSvg, type NormalisedKind } from './svg/pipeline.js';

/** A picture as saved (spec 2.13); the spec has passed the route's schema and limits. */
export interface PictureWrite {
  spec: Record<string, unknown>;
  svg: string;
  look?: string | undefined;
}

export interface SaveResult {
  picture: PictureRecord;
  /** A new picture (201) rather than a new or unchanged version of one (200). */
  created: boolean;
  /** What normalising the SVG removed (the stored SVG is the normalised one). */
  normalised: NormalisedKind[];
}

export interface PicturePage {
  pictures: PictureSummaryRow[];
  people: Map<string, string>;
  nextCursor: string | null;
}

/** A lost compare-and-set is retried (after checking the request's conditions again) this often. */
const ATTEMPTS = 5;

const limitReached = (): ApiError =>
  new ApiError(409, 'picture_limit_reached', `a project keeps at most ${PICTURE_LIMITS.perProject} pictures; delete one first`, {
    // `max`, as json_too_complex names the value of its limit (`limit` there names which limit).
    extra: { max: PICTURE_LIMITS.perProject },
  });

/** SHA-256 of what makes a version: the spec (canonical JSON, so key order does not count), the look and the SVG. */
function digestOf(write: PictureWrite): string {
  return createHash('sha256')
    .update(JSON.stringify([canonicalJson(write.spec), write.look ?? null]))
    .update('\n')
    .update(write.svg)
    .digest('hex');
}

function refusedSvg(refusal: SvgRefusal): ApiError {
  return new ApiError(400, refusal.code, `the SVG is refused: ${refusal.reason} (at ${refusal.where})`, { extra: { field: 'body.svg', where: refusal.where } });
}

/** A check over `SVG_CHECK_TIMEOUT_MS` (or that ran its thread out of memory) was abandoned. */
function tooComplex(timeout: SvgCheckTimeout): ApiError {
  return new ApiError(400, 'svg_too_complex', `the SVG is refused: checking it took longer than ${timeout.timeoutMs} ms`, { extra: { field: 'body.svg', max: timeout.timeoutMs } });
}

/** Every check thread is busy and the queue is full: come back in a second. */
function checksBusy(): ApiError {
  return new ApiError(503, 'unavailable', 'every SVG check is busy; try again shortly', { headers: { 'Retry-After': '1' } });
}

function encodeCursor(row: Pick<PictureRecord, 'updatedAt' | 'slug'>): string {
  return Buffer.from(`${row.updatedAt.toISOString()}|${row.slug}`, 'utf8').toString('base64url');
}

const SLUG = new RegExp(SLUG_PATTERN);

function decodeCursor(cursor: string): { updatedAt: Date; slug: string } {
  const [at, slug, extra] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const updatedAt = new Date(at ?? '');
  if (extra !== undefined || slug === undefined || !SLUG.test(slug) || Number.isNaN(updatedAt.getTime()) || updatedAt.toISOString() !== at) {
    throw invalidRequest('query.cursor is not a cursor this list answered', { field: 'query.cursor' });
  }
  return { updatedAt, slug };
}

/**
 * A project's pictures: read, save (a new version, with the replaced one kept as the previous),
 * step back, delete. Callers have checked the project and the caller's role in it.
 *
 * Every write is a compare-and-set on the version the request's conditions were checked against
 * (an UPDATE … WHERE version = ?, or an INSERT on the primary key), in a transaction of its own:
 * of concurrent writers that saw the same version exactly one wins; the others find the picture
 * changed, check their conditions again, and get 412 when those no longer hold.
 */
export class PictureService {
  private readonly store: PictureStore;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    /** The SVG check (`svg/check-pool.ts`: off the event loop, bounded in time and in waiting). */
    private readonly svg: SvgChecker,
  ) {
    this.store = new PictureStore(dataSource);
  }

  async get(projectId: string, slug: string): Promise<PictureRecord> {
    const picture = await this.store.find(projectId, slug);
    if (!picture) throw notFound('no such picture');
    return picture;
  }

  /** The version before the current one, whole, as a picture record of its own. */
  async previous(projectId: string, slug: string): Promise<PictureRecord> {
    const picture = await this.get(projectId, slug);
    if (picture.previousVersion === null || picture.previousSpec === null || picture.previousSvg === null || picture.previousUpdatedAt === null) {
      throw notFound('the picture has no previous version');
    }
    return {
      ...picture,
      version: picture.previousVersion,
      spec: picture.previousSpec,
      svg: picture.previousSvg,
      look: picture.previousLook,
      updatedBy: picture.previousUpdatedBy,
      updatedAt: picture.previousUpdatedAt,
      previousVersion: null,
      previousSpec: null,
      previousSvg: null,
      previousLook: null,
      previousUpdatedBy: null,
      previousUpdatedAt: null,
    };
  }

  async list(projectId: string, options: { includeSpec: boolean; limit: number; cursor?: string | undefined }): Promise<PicturePage> {
    const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
    const rows = await this.store.list(projectId, { includeSpec: options.includeSpec, limit: options.limit + 1, ...(after ? { after } : {}) });
    const pictures = rows.slice(0, options.limit);
    const last = pictures[pictures.length - 1];
    const mentioned = new Set<string>();
    for (const picture of pictures) {
      if (picture.createdBy) mentioned.add(picture.createdBy);
      if (picture.updatedBy) mentioned.add(picture.updatedBy);
    }
    return { pictures, people: await this.store.names([...mentioned]), nextCursor: rows.length > options.limit && last ? encodeCursor(last) : null };
  }

  async save(projectId: string, slug: string, personId: string, write: PictureWrite, conditions: Preconditions): Promise<SaveResult> {
    requireGuard(conditions, 'save');
    let head = await this.store.head(projectId, slug);
    if (!conditionsHold(conditions, head?.version)) throw preconditionFailed(head?.version);
    // Limits before work: a full project refuses a new picture before its SVG is read.
    if (!head && (await this.store.count(projectId)) >= PICTURE_LIMITS.perProject) throw limitReached();
    let checked: CheckedSvg;
    try {
      checked = await this.svg.check(write.svg);
    } catch (error) {
      if (error instanceof SvgRefusal) throw refusedSvg(error);
      if (error instanceof SvgCheckTimeout) throw tooComplex(error);
      if (error instanceof SvgCheckBusy) throw checksBusy();
      throw error;
    }
    // From here on the picture is the normalised one: digest, stored text and answer.
    write = { ...write, svg: checked.svg };
    const { normalised } = checked;
    const digest = digestOf(write);
    const spec = JSON.stringify(write.spec);
    const look = write.look ?? null;

    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      if (head && head.digest === digest) {
        // The same content again: no new version, the current one answers.
        const current = await this.store.find(projectId, slug);
        if (current && current.version === head.version) return { picture: current, created: false, normalised };
      } else {
        const now = this.clock.now();
        const version = newId('ver');
        const written = head ? await this.replace(projectId, slug, head, { version, digest, spec, svg: write.svg, look, updatedBy: personId, updatedAt: now }) : await this.create(projectId, slug, personId, now, { version, digest, spec, svg: write.svg, look });
        if (written) return { picture: written, created: head === null, normalised };
      }
      head = await this.store.head(projectId, slug);
      if (!conditionsHold(conditions, head?.version)) throw preconditionFailed(head?.version);
    }
    // A write that names its version loses at most once; this is a changing head it cannot catch.
    throw preconditionFailed(head?.version);
  }

  async delete(projectId: string, slug: string, conditions: Preconditions): Promise<void> {
    let head = await this.store.head(projectId, slug);
    if (!head) throw notFound('no such picture');
    requireGuard(conditions, 'delete');
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      if (!conditionsHold(conditions, head.version)) throw preconditionFailed(head.version);
      const expected = head.version;
      if (await this.dataSource.transaction((manager) => this.store.withManager(manager).delete(projectId, slug, expected))) return;
      head = await this.store.head(projectId, slug);
      if (!head) throw notFound('no such picture');
    }
    throw preconditionFailed(head.version);
  }

  private async replace(projectId: string, slug: string, head: PictureHead, change: Parameters<PictureStore['replace']>[3]): Promise<PictureRecord | undefined> {
    const replaced = await this.dataSource.transaction((manager) => this.store.withManager(manager).replace(projectId, slug, head.version, change));
    if (!replaced) return undefined;
    // What the row now holds; the previous version's content is not needed to answer.
    return {
      projectId,
      slug,
      ...change,
      createdBy: head.createdBy,
      createdAt: head.createdAt,
      previousVersion: head.version,
      previousSpec: null,
      previousSvg: null,
      previousLook: null,
      previousUpdatedBy: null,
      previousUpdatedAt: null,
    };
  }

  private async create(
    projectId: string,
    slug: string,
    personId: string,
    now: Date,
    content: Pick<PictureRecord, 'version' | 'digest' | 'spec' | 'svg' | 'look'>,
  ): Promise<PictureRecord | undefined> {
    const record: PictureRecord = {
      projectId,
      slug,
      ...content,
      createdBy: personId,
      createdAt: now,
      updatedBy: personId,
      updatedAt: now,
      previousVersion: null,
      previousSpec: null,
      previousSvg: null,
      previousLook: null,
      previousUpdatedBy: null,
      previousUpdatedAt: null,
    };
    try {
      await this.dataSource.transaction(async (manager) => {
        const store = this.store.withManager(manager);
        // Creations in a project take turns on its row, so the count stays true until the insert.
        await store.lockProject(projectId);
        if ((await store.count(projectId)) >= PICTURE_LIMITS.perProject) throw limitReached();
        await store.insert(record);
      });
      return record;
    } catch (error) {
      // Someone created the same slug a moment earlier: the caller checks its conditions again.
      if (isUniqueViolation(error)) return undefined;
      throw error;
    }
  }
}
