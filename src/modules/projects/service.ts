import { NO_AUDIT_TRAIL, type AuditActor, type AuditTrail } from '../../audit.js';
import type { DataSource } from 'typeorm';
import type { ProjectRole } from '../../auth/principal.js';
import { isForeignKeyViolation, isUniqueViolation, withRetries } from '../../db/errors.js';
import { conflict, invalidRequest, notFound } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import type { ProjectRecord } from './entities.js';
import { decodeCursor, pageOf, type Page } from '../../http/pagination.js';
import { ProjectStore, type OrganisationMemberView, type ProjectContents, type ProjectMemberEntry, type ProjectMemberView, type ProjectWithRole } from './store.js';

export type { OrganisationMemberView, ProjectContents, ProjectMemberEntry, ProjectMemberView, ProjectWithRole } from './store.js';

/** 409 `project_not_empty`: deleting a project that holds pictures or ingested items needs `force`. */
export const projectNotEmpty = (contents: ProjectContents) =>
  conflict(
    'project_not_empty',
    `the project holds ${[`${contents.pictures} picture(s)`, ...(contents.runs ? [`${contents.runs} cloud agent run(s)`] : []), ...(contents.ingest ? ['ingested workbench data'] : [])].join(', ')}; delete it with force=true to delete them with it`,
  );

export interface ProjectWithMembers extends ProjectRecord {
  members: ProjectMemberView[];
}

export interface NewProject {
  name: string;
  /** A member of the organisation (person id or email address) who becomes the project's owner. */
  owner?: string | undefined;
}

const PERSON_ID = /^usr_[0-9a-z]+$/;

/**
 * Projects and their members. Every call names the organisation it acts in, and a project of
 * another organisation answers as absent (404), never as forbidden. Project members are always
 * members of the project's organisation. A project that has an owner keeps at least one.
 *
 * Authorization is the caller's: routes check the ability on the record this service returns.
 */
export class ProjectService {
  private readonly store: ProjectStore;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    /** Where each change made with an actor leaves its audit row, in the change's transaction. */
    private readonly trail: AuditTrail = NO_AUDIT_TRAIL,
  ) {
    this.store = new ProjectStore(dataSource);
  }

  /** Changes made with an `actor` are audited (a row in their transaction); fixtures make projects without one. */
  async create(organisationId: string, input: NewProject, actor?: AuditActor): Promise<ProjectWithMembers> {
    const name = input.name.trim();
    if (name.length < 1 || name.length > 200) throw invalidRequest('name must be 1 to 200 characters');
    if (!(await this.store.organisationExists(organisationId))) throw notFound('no such organisation');
    const owner = input.owner === undefined ? undefined : await this.findOrganisationMember(organisationId, input.owner);
    const now = this.clock.now();
    const project: ProjectRecord = { id: newId('prj'), organisationId, name, createdAt: now };
    await this.dataSource.transaction(async (manager) => {
      const store = this.store.withManager(manager);
      await store.insert(project);
      if (owner) await store.insertMember({ projectId: project.id, personId: owner.id, role: 'owner', createdAt: now });
      if (actor) await this.trail.record(manager, { action: 'project.created', organisationId, actor, target: { projectId: project.id } });
    });
    const members = owner ? [{ personId: owner.id, name: owner.name, email: owner.email, role: 'owner' as const }] : [];
    return { ...project, members };
  }

  async get(organisationId: string, projectId: string): Promise<ProjectRecord> {
    const project = await this.store.findInOrganisation(organisationId, projectId);
    // Exactly the id asked for: MySQL's collation also finds `prj_abc` by `PRJ_ABC`, which names no project.
    if (!project || project.id !== projectId) throw notFound('no such project');
    return project;
  }

  /** The organisation's projects, oldest first; with `memberId`, only those that person belongs to. */
  async list(organisationId: string, options: { memberId?: string } = {}): Promise<ProjectWithMembers[]> {
    const projects = await this.store.list(organisationId, options.memberId);
    const members = await this.store.membersOf(projects.map((project) => project.id));
    return projects.map((project) => ({ ...project, members: members.get(project.id) ?? [] }));
  }

  async members(organisationId: string, projectId: string): Promise<ProjectMemberView[]> {
    await this.get(organisationId, projectId);
    return (await this.store.membersOf([projectId])).get(projectId) ?? [];
  }

  /** Adds a member of the organisation (id or email) to the project or changes their role; answers the role they had before. */
  async setMemberRole(
    organisationId: string,
    projectId: string,
    who: string,
    role: ProjectRole,
    actor?: AuditActor,
  ): Promise<{ person: OrganisationMemberView; previous: ProjectRole | undefined }> {
    await this.get(organisationId, projectId);
    const person = await this.findOrganisationMember(organisationId, who);
    for (let attempt = 1; ; attempt++) {
      try {
        const previous = await withRetries(3, () =>
          this.dataSource.transaction(async (manager) => {
            const store = this.store.withManager(manager);
            const existing = await store.findMember(projectId, person.id);
            const audited = async (from: ProjectRole | null) => {
              if (actor) await this.trail.record(manager, { action: 'project.member_role_set', organisationId, actor, target: { projectId, personId: person.id, from, to: role } });
            };
            if (!existing) {
              await store.insertMember({ projectId, personId: person.id, role, createdAt: this.clock.now() });
              await audited(null);
              return undefined;
            }
            if (existing.role === role) return role;
            if (existing.role === 'owner') await this.keepAnotherOwner(store, projectId, person.id);
            await store.setMemberRole(projectId, person.id, role);
            await audited(existing.role);
            return existing.role;
          }),
        );
        return { person, previous };
      } catch (error) {
        // Someone added the same person a moment earlier: set the role over theirs, as a PUT
        // after theirs would.
        if (attempt < 2 && isUniqueViolation(error)) continue;
        // The project was deleted meanwhile.
        if (isForeignKeyViolation(error)) throw notFound('no such project');
        throw error;
      }
    }
  }

  /** `project.member_left` when the actor removes themselves, `project.member_removed` otherwise. */
  async removeMember(organisationId: string, projectId: string, personId: string, actor?: AuditActor): Promise<void> {
    await this.get(organisationId, projectId);
    await this.dataSource.transaction(async (manager) => {
      const store = this.store.withManager(manager);
      const existing = await store.findMember(projectId, personId);
      if (!existing) throw notFound('no such project member');
      if (existing.role === 'owner') await this.keepAnotherOwner(store, projectId, personId);
      await store.deleteMember(projectId, personId);
      if (actor) {
        const action = actor.kind !== 'cli' && actor.personId === personId ? 'project.member_left' : 'project.member_removed';
        await this.trail.record(manager, { action, organisationId, actor, target: { projectId, personId } });
      }
    });
  }

  // The projects API ----------------------------------------------------------------------------

  /** A page of the organisation's projects with the person's role in each; `onlyTheirs`: those they belong to. */
  async page(organisationId: string, personId: string, query: { onlyTheirs: boolean; limit: number; cursor?: string | undefined }): Promise<Page<ProjectWithRole>> {
    const after = decodeCursor(query.cursor);
    const rows = await this.store.page(organisationId, personId, { onlyTheirs: query.onlyTheirs, limit: query.limit, after });
    return pageOf(rows, query.limit, (row) => ({ createdAt: row.createdAt, id: row.id }));
  }

  async rename(organisationId: string, projectId: string, name: string, actor?: AuditActor): Promise<ProjectRecord> {
    const trimmed = name.trim();
    if (trimmed.length < 1 || trimmed.length > 200) throw invalidRequest('name must be 1 to 200 characters', { field: 'body.name' });
    const project = await this.get(organisationId, projectId);
    await this.dataSource.transaction(async (manager) => {
      await this.store.withManager(manager).rename(projectId, trimmed);
      if (actor) await this.trail.record(manager, { action: 'project.renamed', organisationId, actor, target: { projectId } });
    });
    return { ...project, name: trimmed };
  }

  /**
   * Deletes a project. One that holds pictures, cloud agent runs or ingested items is refused
   * (409 `project_not_empty`) unless `force`; then they go with it (a running run's credential
   * stops at once), and so do its policy publishes and members: no row of another table names it afterwards. The project's row is locked
   * first, so an upload or a picture save for it either finishes before (and is deleted with it)
   * or finds it gone (404).
   */
  async delete(organisationId: string, projectId: string, options: { force: boolean }, actor?: AuditActor): Promise<ProjectContents> {
    return withRetries(3, () =>
      this.dataSource.transaction(async (manager) => {
        const store = this.store.withManager(manager);
        if (!(await store.lockInOrganisation(organisationId, projectId))) throw notFound('no such project');
        const contents = await store.contentsOf(projectId);
        if (!options.force && (contents.pictures > 0 || contents.runs > 0 || contents.ingest)) throw projectNotEmpty(contents);
        await store.delete(projectId);
        if (actor) {
          await this.trail.record(manager, { action: 'project.deleted', organisationId, actor, target: { projectId, pictures: contents.pictures, runs: contents.runs, ingest: contents.ingest } });
        }
        return contents;
      }),
    );
  }

  async memberPage(organisationId: string, projectId: string, query: { limit: number; cursor?: string | undefined }): Promise<Page<ProjectMemberEntry>> {
    const after = decodeCursor(query.cursor);
    await this.get(organisationId, projectId);
    const rows = await this.store.membersPage(projectId, query.limit, after);
    return pageOf(rows, query.limit, (row) => ({ createdAt: row.addedAt, id: row.personId }));
  }

  /** Gives a member of the organisation (by person id) a role in the project; 404 for anyone else. */
  async setRoleById(organisationId: string, projectId: string, personId: string, role: ProjectRole, actor?: AuditActor): Promise<{ member: ProjectMemberEntry; previous: ProjectRole | undefined }> {
    if (!PERSON_ID.test(personId)) throw notFound(`${personId} is not a member of the organisation`);
    const { person, previous } = await this.setMemberRole(organisationId, projectId, personId, role, actor);
    const record = await this.store.findMember(projectId, person.id);
    return { member: { personId: person.id, name: person.name, email: person.email, role, addedAt: record?.createdAt ?? this.clock.now() }, previous };
  }

  /** The person's role in each project of the organisation: what their ability is built from. */
  rolesOf(organisationId: string, personId: string): Promise<Map<string, ProjectRole>> {
    return this.store.rolesOf(organisationId, personId);
  }

  /**
   * The organisation member named by `who`: a person id (`usr_…`) or an email address. An address
   * is looked up among the organisation's members only and must name exactly one of them.
   */
  async findOrganisationMember(organisationId: string, who: string): Promise<OrganisationMemberView> {
    const trimmed = who.trim();
    if (trimmed.includes('@')) {
      const found = await this.store.findOrganisationMembers(organisationId, { email: trimmed });
      if (found.length > 1) {
        throw conflict('ambiguous_person', `${found.length} members of the organisation have the address ${trimmed}; name one by id (${found.map((p) => p.id).join(', ')})`);
      }
      if (found[0]) return found[0];
      throw notFound(`no member of the organisation has the address ${trimmed}`);
    }
    if (!PERSON_ID.test(trimmed)) throw invalidRequest(`"${who}" is neither an email address nor a person id (usr_…)`);
    const [found] = await this.store.findOrganisationMembers(organisationId, { personId: trimmed });
    if (!found) throw notFound(`${trimmed} is not a member of the organisation`);
    return found;
  }

  private async keepAnotherOwner(store: ProjectStore, projectId: string, leavingOwnerId: string): Promise<void> {
    const owners = await store.ownersOf(projectId, true);
    if (!owners.some((owner) => owner !== leavingOwnerId)) {
      throw conflict('last_owner', 'a project keeps at least one owner: make someone else owner first');
    }
  }
}
