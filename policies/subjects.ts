import type { MongoAbility } from '@casl/ability';
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

export type Subjects =
  | 'Organisation'
  | 'Team'
  | 'Member'
  | 'Invitation'
  | 'Project'
  | 'ProjectMember'
  | 'Device'
  | 'DeviceRequest'
  | 'JoinKey'
  | 'Policy'
  | 'Activity'
  | 'Picture'
  | 'CloudAgentRun'
  | 'all';

export type AppAbility = MongoAbility<[Action, Subjects | ({ __caslSubjectType__?: string } & object)]>;

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
