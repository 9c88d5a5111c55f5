import type { DataSource } from 'typeorm';
import type { ProjectRole } from '../../auth/principal.js';
import { isUniqueViolation } from '../../db/errors.js';
import { conflict, invalidRequest, notFound } from '../../http/errors.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import type { ProjectRecord } from './entities.js';
import { ProjectStore, type OrganisationMemberView, type ProjectMemberView } from './store.js';

export type { OrganisationMemberView, ProjectMemberView } from './store.js';

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
  ) {
    this.store = new ProjectStore(dataSource);
  }

  async create(organisationId: string, input: NewProject): Promise<ProjectWithMembers> {
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
    });
    const members = owner ? [{ personId: owner.id, name: owner.name, email: owner.email, role: 'owner' as const }] : [];
    return { ...project, members };
  }

  async get(organisationId: string, projectId: string): Promise<ProjectRecord> {
    const project = await this.store.findInOrganisation(organisationId, projectId);
    if (!project) throw notFound('no such project');
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
  ): Promise<{ person: OrganisationMemberView; previous: ProjectRole | undefined }> {
    await this.get(organisationId, projectId);
    const person = await this.findOrganisationMember(organisationId, who);
    try {
      const previous = await this.dataSource.transaction(async (manager) => {
        const store = this.store.withManager(manager);
        const existing = await store.findMember(projectId, person.id);
        if (!existing) {
          await store.insertMember({ projectId, personId: person.id, role, createdAt: this.clock.now() });
          return undefined;
        }
        if (existing.role === role) return role;
        if (existing.role === 'owner') await this.keepAnotherOwner(store, projectId, person.id);
        await store.setMemberRole(projectId, person.id, role);
        return existing.role;
      });
      return { person, previous };
    } catch (error) {
      // Someone added the same person a moment earlier; their write stands, the caller retries.
      if (isUniqueViolation(error)) throw conflict('conflict', 'the project membership changed meanwhile; try again');
      throw error;
    }
  }

  async removeMember(organisationId: string, projectId: string, personId: string): Promise<void> {
    await this.get(organisationId, projectId);
    await this.dataSource.transaction(async (manager) => {
      const store = this.store.withManager(manager);
      const existing = await store.findMember(projectId, personId);
      if (!existing) throw notFound('no such project member');
      if (existing.role === 'owner') await this.keepAnotherOwner(store, projectId, personId);
      await store.deleteMember(projectId, personId);
    });
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
