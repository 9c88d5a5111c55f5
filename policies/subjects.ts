import type { ForcedSubject, MongoAbility } from '@casl/ability';
import type { OrganisationRole, ProjectRole, TokenKind } from '../src/auth/principal.js';

/**
 * The subjects and actions the rules speak of. A subject is a plain record tagged with its type
 * (`subject('Project', row)`), and conditions compare its fields with the caller's.
 */
export type Action = 'read' | 'create' | 'update' | 'delete' | 'manage-members' | 'approve' | 'accept' | 'relay';

export interface OrganisationSubject {
  id: string;
}
export interface ProjectSubject {
  id: string;
  organisationId: string;
}

/** A membership of an organisation (spec 2.7) as the member rules see it: `newRole` is the role a change asks for. */
export interface MemberSubject {
  organisationId: string;
  personId: string;
  role: OrganisationRole;
  newRole: OrganisationRole | null;
}

/** An invitation to a team (spec 2.8). */
export interface InvitationSubject {
  organisationId: string;
  role: OrganisationRole;
  email: string;
}

/** A person's role in a project (spec 4.6): `personId` the member a change or departure is about. */
export interface ProjectMemberSubject {
  organisationId: string;
  projectId: string;
  personId: string;
}

/** A device code waiting for a person to approve it: which kind of device asks. */
export interface DeviceRequestSubject {
  organisationId: string;
  kind: 'workbench' | 'node';
}

/** The organisation's policy (`projectId` absent) or a project's override. */
export interface PolicySubject {
  organisationId: string;
  projectId?: string | undefined;
}

/** A project's pictures. */
export interface PictureSubject {
  organisationId: string;
  projectId: string;
}

/** A cloud agent run: the fields its rules read; a question about registering has no id yet. */
export interface CloudAgentRunSubject {
  id?: string;
  organisationId: string;
  projectId?: string;
  deviceId?: string;
}

/** Records inside one organisation with nothing else the rules read (devices, join keys, activity). */
export interface InOrganisation {
  organisationId: string;
}

/**
 * Every subject type with the record its rules read. A question about a record names its type
 * (`record('Project', project)`, policies/authorize.ts): the compiler checks that the record has
 * the fields the type's rules read, so no question needs a cast.
 */
export interface SubjectRecords {
  Organisation: OrganisationSubject;
  /** A team before it exists: nothing to read. */
  Team: Record<string, never>;
  Member: MemberSubject;
  Invitation: InvitationSubject;
  Project: ProjectSubject;
  ProjectMember: ProjectMemberSubject;
  Device: InOrganisation;
  DeviceRequest: DeviceRequestSubject;
  JoinKey: InOrganisation;
  Policy: PolicySubject;
  Activity: InOrganisation;
  Picture: PictureSubject;
  CloudAgentRun: CloudAgentRunSubject;
  AuditLog: InOrganisation;
}

/** The subject types the rules speak of. */
export type SubjectType = keyof SubjectRecords;

export type Subjects = SubjectType | 'all';

/** A record tagged with its subject type (what `subject(type, record)` of @casl/ability makes). */
export type TaggedSubject<T extends SubjectType = SubjectType> = T extends SubjectType ? SubjectRecords[T] & ForcedSubject<T> : never;

/** An ability asks about a subject type (any record of it) or a tagged record. */
export type AppAbility = MongoAbility<[Action, Subjects | TaggedSubject]>;

/** What the rules know of the caller: built from the principal and stored roles, per request. */
export interface Actor {
  kind: TokenKind;
  organisationId: string;
  personId: string | undefined;
  role: OrganisationRole | undefined;
  /** The caller's role in each project they belong to, by project id. */
  projectRoles: ReadonlyMap<string, ProjectRole>;
  /**
   * Cloud sessions, when a rule needs them (accepting an invitation): the addresses the person's
   * sign-in methods carry with the provider's word that they are the person's (lower-cased).
   */
  verifiedEmails?: readonly string[] | undefined;
  /** Devices: which device calls, and whether it is a workbench or a node. */
  deviceId?: string | undefined;
  deviceKind?: 'workbench' | 'node' | undefined;
  /** Run credentials: the run the credential reaches. */
  runId?: string | undefined;
}
