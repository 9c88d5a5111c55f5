import type { DataSource, EntityManager } from 'typeorm';
import { storedDate } from '../../db/dates.js';
import type { OrganisationRole, ProjectRole } from '../../auth/principal.js';
import { MembershipEntity, OrganisationEntity, PersonEntity } from '../organisation/entities.js';
import { ProjectEntity, ProjectMemberEntity, type ProjectMemberRecord, type ProjectRecord } from './entities.js';

/** A project member as shown to people: the membership with the person's name and email. */
export interface ProjectMemberView {
  personId: string;
  name: string;
  email: string | null;
  role: ProjectRole;
}

/** A project member as the projects API lists them. */
export interface ProjectMemberEntry extends ProjectMemberView {
  addedAt: Date;
}

/** A project with the role a person holds in it (none: null). */
export interface ProjectWithRole extends ProjectRecord {
  role: ProjectRole | null;
}

/** What a project holds besides its members and policy: deleting it takes these with it. */
export interface ProjectContents {
  pictures: number;
  /** Whether any ingested item (event, usage, audit record, task) names the project. */
  ingest: boolean;
  /** Cloud agent runs registered for the project (running or ended). */
  runs: number;
}

const INGEST_TABLES = ['ingest_events', 'ingest_usage', 'ingest_audit', 'ingest_tasks'] as const;

/** A person who belongs to an organisation, with their organisation role. */
export interface OrganisationMemberView {
  id: string;
  name: string;
  email: string | null;
  role: OrganisationRole;
}

/** The only code that queries projects and project members. */
export class ProjectStore {
  constructor(private readonly db: DataSource | EntityManager) {}

  private get manager(): EntityManager {
    return 'manager' in this.db ? this.db.manager : this.db;
  }

  withManager(manager: EntityManager): ProjectStore {
    return new ProjectStore(manager);
  }

  async organisationExists(organisationId: string): Promise<boolean> {
    return (await this.manager.countBy(OrganisationEntity, { id: organisationId })) > 0;
  }

  async insert(project: ProjectRecord): Promise<void> {
    await this.manager.insert(ProjectEntity, project);
  }

  /** Scoped by organisation so that a project id from elsewhere reads as absent. */
  async findInOrganisation(organisationId: string, projectId: string): Promise<ProjectRecord | null> {
    return this.manager.findOneBy(ProjectEntity, { id: projectId, organisationId });
  }

  async list(organisationId: string, memberId?: string): Promise<ProjectRecord[]> {
    const query = this.manager
      .createQueryBuilder(ProjectEntity, 'project')
      .where('project.organisationId = :organisationId', { organisationId })
      .orderBy('project.createdAt', 'ASC')
      .addOrderBy('project.id', 'ASC');
    if (memberId !== undefined) {
      query.innerJoin(ProjectMemberEntity.options.name, 'member', 'member.projectId = project.id AND member.personId = :memberId', { memberId });
    }
    return query.getMany();
  }

  /**
   * A page of the organisation's projects (oldest first) with `personId`'s role in each; with
   * `onlyTheirs`, only the projects that person belongs to.
   */
  async page(
    organisationId: string,
    personId: string,
    options: { onlyTheirs: boolean; limit: number; after: { createdAt: Date; id: string } | undefined },
  ): Promise<ProjectWithRole[]> {
    const query = this.manager.createQueryBuilder(ProjectEntity, 'project');
    const join = 'member.projectId = project.id AND member.personId = :personId';
    if (options.onlyTheirs) query.innerJoin(ProjectMemberEntity.options.name, 'member', join, { personId });
    else query.leftJoin(ProjectMemberEntity.options.name, 'member', join, { personId });
    query
      .select(['project.id AS id', 'project.organisationId AS organisationId', 'project.name AS name', 'project.createdAt AS createdAt', 'member.role AS role'])
      .where('project.organisationId = :organisationId', { organisationId })
      .orderBy('project.createdAt', 'ASC')
      .addOrderBy('project.id', 'ASC')
      .limit(options.limit + 1);
    if (options.after) {
      query.andWhere('(project.createdAt > :afterAt OR (project.createdAt = :afterAt AND project.id > :afterId))', { afterAt: options.after.createdAt, afterId: options.after.id });
    }
    const rows = await query.getRawMany<{ id: string; organisationId: string; name: string; createdAt: unknown; role: ProjectRole | null }>();
    return rows.map((row) => ({ ...row, createdAt: storedDate(row.createdAt), role: row.role ?? null }));
  }

  async rename(projectId: string, name: string): Promise<void> {
    await this.manager.update(ProjectEntity, { id: projectId }, { name });
  }

  /**
   * The project, locked until the transaction ends: ingest uploads and picture saves for it take
   * the same lock (shared or exclusive), so a deletion never leaves one of their rows behind.
   */
  async lockInOrganisation(organisationId: string, projectId: string): Promise<ProjectRecord | null> {
    const query = this.manager.createQueryBuilder(ProjectEntity, 'project').where('project.id = :projectId AND project.organisationId = :organisationId', { projectId, organisationId });
    if (this.manager.connection.options.type !== 'better-sqlite3') query.setLock('pessimistic_write');
    return query.getOne();
  }

  async contentsOf(projectId: string): Promise<ProjectContents> {
    const pictures = await this.manager.createQueryBuilder().select('COUNT(*)', 'count').from('Picture', 'picture').where('picture.projectId = :projectId', { projectId }).getRawOne<{ count: string | number }>();
    let ingest = false;
    for (const table of INGEST_TABLES) {
      const rows = await this.manager.query<unknown[]>(`SELECT 1 AS found FROM ${table} WHERE project_id = ? LIMIT 1`, [projectId]);
      if (rows.length) {
        ingest = true;
        break;
      }
    }
    const runs = await this.manager.query<{ count: string | number }[]>('SELECT COUNT(*) AS count FROM cloud_agent_runs WHERE project_id = ?', [projectId]);
    return { pictures: Number(pictures?.count ?? 0), ingest, runs: Number(runs[0]?.count ?? 0) };
  }

  /**
   * Deletes the project and everything that names it: its ingested items here (they have no
   * foreign key: ingest writes must not wait on one), its pictures, policy publishes, members and
   * cloud agent runs (with their events) by their foreign keys (ON DELETE CASCADE).
   */
  async delete(projectId: string): Promise<void> {
    for (const table of INGEST_TABLES) await this.manager.query(`DELETE FROM ${table} WHERE project_id = ?`, [projectId]);
    await this.manager.delete(ProjectEntity, { id: projectId });
  }

  /** A page of the project's members, in the order they were added. */
  async membersPage(projectId: string, limit: number, after: { createdAt: Date; id: string } | undefined): Promise<ProjectMemberEntry[]> {
    const query = this.manager
      .createQueryBuilder(ProjectMemberEntity, 'member')
      .innerJoin(PersonEntity.options.name, 'person', 'person.id = member.personId')
      .select(['member.personId AS personId', 'member.role AS role', 'member.createdAt AS addedAt', 'person.name AS name', 'person.email AS email'])
      .where('member.projectId = :projectId', { projectId })
      .orderBy('member.createdAt', 'ASC')
      .addOrderBy('member.personId', 'ASC')
      .limit(limit + 1);
    if (after) query.andWhere('(member.createdAt > :afterAt OR (member.createdAt = :afterAt AND member.personId > :afterId))', { afterAt: after.createdAt, afterId: after.id });
    const rows = await query.getRawMany<{ personId: string; role: ProjectRole; addedAt: unknown; name: string; email: string | null }>();
    return rows.map((row) => ({ ...row, addedAt: storedDate(row.addedAt) }));
  }

  async membersOf(projectIds: readonly string[]): Promise<Map<string, ProjectMemberView[]>> {
    const byProject = new Map<string, ProjectMemberView[]>(projectIds.map((id) => [id, []]));
    if (projectIds.length === 0) return byProject;
    const rows = await this.manager
      .createQueryBuilder(ProjectMemberEntity, 'member')
      .innerJoin(PersonEntity.options.name, 'person', 'person.id = member.personId')
      .select(['member.projectId AS projectId', 'member.personId AS personId', 'member.role AS role'])
      .addSelect(['person.name AS name', 'person.email AS email'])
      .where('member.projectId IN (:...projectIds)', { projectIds })
      .orderBy('member.createdAt', 'ASC')
      .addOrderBy('member.personId', 'ASC')
      .getRawMany<{ projectId: string; personId: string; role: ProjectRole; name: string; email: string | null }>();
    for (const { projectId, ...member } of rows) byProject.get(projectId)?.push(member);
    return byProject;
  }

  async findMember(projectId: string, personId: string): Promise<ProjectMemberRecord | null> {
    return this.manager.findOneBy(ProjectMemberEntity, { projectId, personId });
  }

  /**
   * The project's owners. With `lock`, the rows stay locked until the transaction ends, so two
   * concurrent demotions cannot each see the other's owner and leave the project with none.
   * SQLite needs no lock: better-sqlite3 runs one transaction at a time.
   */
  async ownersOf(projectId: string, lock = false): Promise<string[]> {
    const query = this.manager
      .createQueryBuilder(ProjectMemberEntity, 'member')
      .where('member.projectId = :projectId AND member.role = :role', { projectId, role: 'owner' });
    if (lock && this.manager.connection.options.type !== 'better-sqlite3') query.setLock('pessimistic_write');
    return (await query.getMany()).map((member) => member.personId);
  }

  async insertMember(member: ProjectMemberRecord): Promise<void> {
    await this.manager.insert(ProjectMemberEntity, member);
  }

  async setMemberRole(projectId: string, personId: string, role: ProjectRole): Promise<void> {
    await this.manager.update(ProjectMemberEntity, { projectId, personId }, { role });
  }

  async deleteMember(projectId: string, personId: string): Promise<void> {
    await this.manager.delete(ProjectMemberEntity, { projectId, personId });
  }

  /** The caller's role in each project of the organisation, for building their ability. */
  async rolesOf(organisationId: string, personId: string): Promise<Map<string, ProjectRole>> {
    const rows = await this.manager
      .createQueryBuilder(ProjectMemberEntity, 'member')
      .innerJoin(ProjectEntity.options.name, 'project', 'project.id = member.projectId')
      .where('member.personId = :personId AND project.organisationId = :organisationId', { personId, organisationId })
      .getMany();
    return new Map(rows.map((row) => [row.projectId, row.role]));
  }

  /**
   * Members of the organisation matching an email address or a person id. Only members are
   * searched: an email address is not unique across organisations, and any organisation's
   * identity provider may assert any address.
   */
  async findOrganisationMembers(organisationId: string, who: { email: string } | { personId: string }): Promise<OrganisationMemberView[]> {
    const query = this.manager
      .createQueryBuilder(PersonEntity, 'person')
      .innerJoin(MembershipEntity.options.name, 'membership', 'membership.personId = person.id AND membership.organisationId = :organisationId AND membership.removedAt IS NULL', { organisationId })
      .select(['person.id AS id', 'person.name AS name', 'person.email AS email', 'membership.role AS role']);
    if ('email' in who) query.where('person.email = :email', { email: who.email.toLowerCase() });
    else query.where('person.id = :personId', { personId: who.personId });
    return query.orderBy('person.id', 'ASC').getRawMany<OrganisationMemberView>();
  }
}
