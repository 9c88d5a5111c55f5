import type { DataSource, EntityManager } from 'typeorm';
import { PersonEntity } from '../organisation/entities.js';
import { ProjectEntity } from '../projects/entities.js';
import type { PictureRecord } from './entities.js';

/** What a conditional write compares, and what its answer keeps of the row. */
export type PictureHead = Pick<PictureRecord, 'version' | 'digest' | 'createdBy' | 'createdAt'>;

const SUMMARY = ['slug', 'version', 'look', 'createdBy', 'createdAt', 'updatedBy', 'updatedAt', 'previousVersion'] as const;

/** A picture as a list shows it: no SVG, the spec only when asked for. */
export type PictureSummaryRow = Pick<PictureRecord, (typeof SUMMARY)[number]> & { spec?: string };

/** The columns a save writes; the ones it replaces move to `previous_*`. */
export interface PictureChange {
  version: string;
  digest: string;
  spec: string;
  svg: string;
  look: string | null;
  updatedBy: string;
  updatedAt: Date;
}

/** The only code that queries pictures. */
export class PictureStore {
  constructor(private readonly db: DataSource | EntityManager) {}

  private get manager(): EntityManager {
    return 'manager' in this.db ? this.db.manager : this.db;
  }

  withManager(manager: EntityManager): PictureStore {
    return new PictureStore(manager);
  }

  private get isSqlite(): boolean {
    return this.manager.connection.options.type === 'better-sqlite3';
  }

  async head(projectId: string, slug: string): Promise<PictureHead | null> {
    return this.manager.createQueryBuilder('Picture', 'p').select(['p.version', 'p.digest', 'p.createdBy', 'p.createdAt']).where('p.projectId = :projectId AND p.slug = :slug', { projectId, slug }).getOne() as Promise<PictureHead | null>;
  }

  async find(projectId: string, slug: string): Promise<PictureRecord | null> {
    return this.manager.findOneBy<PictureRecord>('Picture', { projectId, slug });
  }

  async count(projectId: string): Promise<number> {
    return this.manager.countBy('Picture', { projectId });
  }

  /**
   * Holds the project's row until the transaction ends, so creations in one project take turns
   * and the count they check stays true until they insert. SQLite needs no lock: better-sqlite3
   * runs one transaction at a time.
   */
  async lockProject(projectId: string): Promise<void> {
    if (this.isSqlite) return;
    await this.manager.createQueryBuilder(ProjectEntity, 'project').select('project.id').where('project.id = :projectId', { projectId }).setLock('pessimistic_write').getOne();
  }

  async insert(record: PictureRecord): Promise<void> {
    await this.manager.insert('Picture', record);
  }

  /**
   * Compare and set: the change is written, and the replaced version moved to `previous_*`, only
   * where the picture is still at `expected`. The `previous_*` assignments come first: MySQL
   * evaluates a single-table UPDATE's assignments left to right, SQLite from the old row; in this
   * order both copy the old values.
   */
  async replace(projectId: string, slug: string, expected: string, change: PictureChange): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update('Picture')
      .set({
        previousVersion: () => 'version',
        previousSpec: () => 'spec',
        previousSvg: () => 'svg',
        previousLook: () => 'look',
        previousUpdatedBy: () => 'updated_by',
        previousUpdatedAt: () => 'updated_at',
        version: change.version,
        digest: change.digest,
        spec: change.spec,
        svg: change.svg,
        look: change.look,
        updatedBy: change.updatedBy,
        updatedAt: change.updatedAt,
      })
      .where('project_id = :projectId AND slug = :slug AND version = :expected', { projectId, slug, expected })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  /** Deletes the picture (its previous version with it) where it is still at `expected`. */
  async delete(projectId: string, slug: string, expected: string): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .delete()
      .from('Picture')
      .where('project_id = :projectId AND slug = :slug AND version = :expected', { projectId, slug, expected })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  /** A page of the project's pictures, newest first (by `updated_at`, then slug), after `after`. */
  async list(projectId: string, options: { includeSpec: boolean; limit: number; after?: { updatedAt: Date; slug: string } }): Promise<PictureSummaryRow[]> {
    const query = this.manager
      .createQueryBuilder('Picture', 'p')
      .select([...SUMMARY, ...(options.includeSpec ? ['spec'] : [])].map((column) => `p.${column}`))
      .where('p.projectId = :projectId', { projectId });
    if (options.after) {
      query.andWhere('(p.updatedAt < :at OR (p.updatedAt = :at AND p.slug > :slug))', { at: options.after.updatedAt, slug: options.after.slug });
    }
    return query.orderBy('p.updatedAt', 'DESC').addOrderBy('p.slug', 'ASC').limit(options.limit).getMany() as Promise<PictureSummaryRow[]>;
  }

  /** Names of the people with these ids. */
  async names(ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.manager
      .createQueryBuilder(PersonEntity, 'person')
      .select(['person.id', 'person.name'])
      .where('person.id IN (:...ids)', { ids })
      .getMany();
    return new Map(rows.map((row) => [row.id, row.name]));
  }
}
