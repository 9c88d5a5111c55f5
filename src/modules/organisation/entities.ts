import { EntitySchema } from 'typeorm';
import type { OrganisationRole } from '../../auth/principal.js';
import type { OrganisationKind, OrganisationPlan, OrganisationRecord } from '../../domain/organisation.js';

/**
 * Organisations, their host names, people, the identities people sign in with, and memberships.
 * Column types are chosen to read the same on SQLite and MySQL/MariaDB; the migrations in
 * src/migrations/<dialect> create exactly these tables (a test compares them).
 */

// The organisation's shape is declared below the layers that read it (src/domain/organisation.ts).
export type { OrganisationKind, OrganisationPlan, OrganisationRecord } from '../../domain/organisation.js';
export const ORGANISATION_KINDS: readonly OrganisationKind[] = ['personal', 'team', 'enterprise'];
export const ORGANISATION_PLANS: readonly OrganisationPlan[] = ['free', 'teams', 'enterprise'];

export interface OrganisationHostRecord {
  host: string;
  organisationId: string;
}

export interface PersonRecord {
  id: string;
  name: string;
  email: string | null;
  createdAt: Date;
}

/** A person as an identity provider knows them: (`iss`, `sub`) of their tokens. */
export interface PersonIdentityRecord {
  id: string;
  issuer: string;
  subject: string;
  personId: string;
  createdAt: Date;
}

export interface MembershipRecord {
  organisationId: string;
  personId: string;
  role: OrganisationRole;
  createdAt: Date;
  /** Set when the person was removed: their tokens are refused from then on, and signing in
   * again does not re-admit them (an administrator does, with a new role). */
  removedAt: Date | null;
}

const id = { type: 'varchar', length: 40, primary: true } as const;
const ref = (name: string) => ({ type: 'varchar', length: 40, name }) as const;
const createdAt = { type: 'datetime', precision: 3, name: 'created_at' } as const;
const optionalText = (name: string, length = 255) => ({ type: 'varchar', length, name, nullable: true, default: null }) as const;

export const OrganisationEntity = new EntitySchema<OrganisationRecord>({
  name: 'Organisation',
  tableName: 'organisations',
  columns: {
    id,
    name: { type: 'varchar', length: 200 },
    kind: { type: 'varchar', length: 20 },
    plan: { type: 'varchar', length: 20 },
    oidcIssuer: optionalText('oidc_issuer', 500),
    oidcClientId: optionalText('oidc_client_id'),
    oidcApiScope: optionalText('oidc_api_scope'),
    oidcAudience: optionalText('oidc_audience'),
    oidcRoleClaim: optionalText('oidc_role_claim', 100),
    createdAt,
  },
  indices: [{ name: 'organisations_oidc_issuer', columns: ['oidcIssuer'], unique: true }],
});

export const OrganisationHostEntity = new EntitySchema<OrganisationHostRecord>({
  name: 'OrganisationHost',
  tableName: 'organisation_hosts',
  columns: {
    host: { type: 'varchar', length: 253, primary: true },
    organisationId: ref('organisation_id'),
  },
  indices: [{ name: 'organisation_hosts_organisation', columns: ['organisationId'] }],
  foreignKeys: [
    { name: 'fk_organisation_hosts_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

export const PersonEntity = new EntitySchema<PersonRecord>({
  name: 'Person',
  tableName: 'people',
  columns: {
    id,
    name: { type: 'varchar', length: 200 },
    email: optionalText('email', 320),
    createdAt,
  },
});

export const PersonIdentityEntity = new EntitySchema<PersonIdentityRecord>({
  name: 'PersonIdentity',
  tableName: 'person_identities',
  columns: {
    id,
    issuer: { type: 'varchar', length: 500 },
    subject: { type: 'varchar', length: 255 },
    personId: ref('person_id'),
    createdAt,
  },
  indices: [
    { name: 'person_identities_issuer_subject', columns: ['issuer', 'subject'], unique: true },
    { name: 'person_identities_person', columns: ['personId'] },
  ],
  foreignKeys: [
    { name: 'fk_person_identities_person', target: 'Person', columnNames: ['personId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

export const MembershipEntity = new EntitySchema<MembershipRecord>({
  name: 'Membership',
  tableName: 'memberships',
  columns: {
    organisationId: { ...ref('organisation_id'), primary: true },
    personId: { ...ref('person_id'), primary: true },
    role: { type: 'varchar', length: 20 },
    createdAt,
    removedAt: { type: 'datetime', precision: 3, name: 'removed_at', nullable: true, default: null },
  },
  indices: [{ name: 'memberships_person', columns: ['personId'] }],
  foreignKeys: [
    { name: 'fk_memberships_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    { name: 'fk_memberships_person', target: 'Person', columnNames: ['personId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

/** A member of an organisation as people see them (spec 2.7). */
export interface MemberView {
  personId: string;
  name: string;
  email: string | null;
  role: OrganisationRole;
  joinedAt: Date;
}
