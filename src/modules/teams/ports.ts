import type { EntityManager } from 'typeorm';
import type { OrganisationRole } from '../../auth/principal.js';
import type { MemberView, MembershipRecord, OrganisationRecord, PersonRecord } from '../organisation/entities.js';
import type { SignInMethodRecord } from '../signin/entities.js';

/**
 * What the team service reads and writes of rows other modules keep. Declared here, by the module
 * that needs them, because a module never imports another's store (eslint.config.js, the layer
 * zones): src/app.ts passes the organisation and sign-in stores, which have these methods.
 */

/** A member as the team's member list shows them: the organisation module's view of a member. */
export type { MemberView };

/** Organisations, people and memberships; `withManager` gives the same inside a transaction the team service started. */
export interface TeamOrganisationRows {
  withManager(manager: EntityManager): TeamOrganisationRows;
  /** Locks the organisations (in id order) for the rest of the transaction; answers those that exist. */
  lockOrganisations(ids: readonly string[]): Promise<OrganisationRecord[]>;
  findById(id: string): Promise<OrganisationRecord | null>;
  insert(organisation: OrganisationRecord, hosts: readonly string[]): Promise<void>;
  update(id: string, changes: Partial<Omit<OrganisationRecord, 'id' | 'createdAt'>>): Promise<void>;
  findPerson(id: string): Promise<PersonRecord | null>;
  findMembership(organisationId: string, personId: string, options?: { lock?: boolean }): Promise<MembershipRecord | null>;
  insertMembership(membership: MembershipRecord): Promise<void>;
  setRole(organisationId: string, personId: string, role: OrganisationRole): Promise<void>;
  rejoin(organisationId: string, personId: string, role: OrganisationRole, at: Date): Promise<void>;
  removeMember(organisationId: string, personId: string, at: Date): Promise<boolean>;
  membershipsOf(personId: string, organisationId?: string): Promise<{ organisation: OrganisationRecord; role: OrganisationRole }[]>;
  activeMembers(organisationId: string, options?: { lock?: boolean }): Promise<MembershipRecord[]>;
  membersPage(organisationId: string, limit: number, after: { createdAt: Date; id: string } | undefined): Promise<MemberView[]>;
}

/** A person's sign-in methods: the addresses their providers vouch for. */
export interface TeamSignInMethods {
  methodsOf(personId: string): Promise<SignInMethodRecord[]>;
  findVerifiedMethodByEmail(email: string): Promise<SignInMethodRecord | null>;
}
