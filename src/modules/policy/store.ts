import { hotRead } from '../../db/prepared.js';
import type { DataSource, EntityManager } from 'typeorm';
import { PolicyRevisionEntity, type PolicyRevisionRecord } from './entities.js';

/** The newest publish number of each scope that has one. */
export interface LatestNumbers {
  organisation: number | undefined;
  project: number | undefined;
}

/** The only code that queries stored policy revisions. */
export class PolicyStore {
  constructor(private readonly db: DataSource | EntityManager) {}

  private get manager(): EntityManager {
    return 'manager' in this.db ? this.db.manager : this.db;
  }

  withManager(manager: EntityManager): PolicyStore {
    return new PolicyStore(manager);
  }

  /**
   * The newest number of the organisation's policy and, with `projectId`, of that project's
   * override: one indexed query, the whole cost of a request whose answer is cached.
   */
  async latestNumbers(organisationId: string, projectId: string | undefined): Promise<LatestNumbers> {
    // Plain SQL (the same text on SQLite and MySQL): this runs on every policy poll, where the
    // query builder's work costs more than the query.
    const rows = (await hotRead(
      this.manager,
      projectId === undefined
        ? 'SELECT project_id AS projectId, MAX(number) AS latest FROM policy_revisions WHERE organisation_id = ? AND project_id IS NULL GROUP BY project_id'
        : 'SELECT project_id AS projectId, MAX(number) AS latest FROM policy_revisions WHERE organisation_id = ? AND (project_id IS NULL OR project_id = ?) GROUP BY project_id',
      projectId === undefined ? [organisationId] : [organisationId, projectId],
    )) as { projectId: string | null; latest: number | string }[];
    const latest: LatestNumbers = { organisation: undefined, project: undefined };
    for (const row of rows) {
      if (row.projectId === null) latest.organisation = Number(row.latest);
      else latest.project = Number(row.latest);
    }
    return latest;
  }

  /** A scope's revisions, newest first, numbered at most `below` when given. */
  async page(organisationId: string, projectId: string | null, limit: number, below?: number): Promise<PolicyRevisionRecord[]> {
    const query = this.manager
      .createQueryBuilder(PolicyRevisionEntity, 'revision')
      .where('revision.organisationId = :organisationId', { organisationId })
      .orderBy('revision.number', 'DESC')
      .limit(limit);
    if (projectId === null) query.andWhere('revision.projectId IS NULL');
    else query.andWhere('revision.projectId = :projectId', { projectId });
    if (below !== undefined) query.andWhere('revision.number < :below', { below });
    return query.getMany();
  }

  /** One publish of the organisation by its number, in whichever scope it was made. */
  async byNumber(organisationId: string, number: number): Promise<PolicyRevisionRecord | undefined> {
    return (await this.manager.findOneBy(PolicyRevisionEntity, { organisationId, number })) ?? undefined;
  }

  async maxNumber(organisationId: string): Promise<number> {
    const row = await this.manager
      .createQueryBuilder(PolicyRevisionEntity, 'revision')
      .select('MAX(revision.number)', 'latest')
      .where('revision.organisationId = :organisationId', { organisationId })
      .getRawOne<{ latest: number | string | null }>();
    return row?.latest === null || row?.latest === undefined ? 0 : Number(row.latest);
  }

  async insert(revision: PolicyRevisionRecord): Promise<void> {
    await this.manager.insert(PolicyRevisionEntity, revision);
  }
}
