import { EntitySchema } from 'typeorm';
import type { OrganisationRole } from '../../auth/principal.js';

/**
 * Invitations to a Cloud team (spec 2.8, 3). An invitation is open from its creation until it is
 * used, withdrawn (by an owner or admin, or by a newer invitation of the same address, which
 * replaces it) or expires. The token of its link is stored only as a SHA-256 hash.
 *
 * `openEmail` is the address while the invitation is open and null once it is not: a unique index
 * on (organisation, openEmail) makes "one open invitation per address and team" a fact of the
 * database, so two owners inviting the same address at once cannot leave two open links.
 * On MySQL the addresses and the hash compare exactly (`utf8mb4_bin`, set by the migration):
 * addresses are stored lower-cased, and the tables' default collation would take `josé@` and
 * `jose@` for one address.
 */
export interface InvitationRecord {
  id: string;
  organisationId: string;
  /** The address invited, lower-cased (emails compare case-insensitively). */
  email: string;
  openEmail: string | null;
  role: OrganisationRole;
  tokenHash: string;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  usedBy: string | null;
  withdrawnAt: Date | null;
}

const id = { type: 'varchar', length: 40, primary: true } as const;
const ref = (name: string) => ({ type: 'varchar', length: 40, name }) as const;
const when = (name: string) => ({ type: 'datetime', precision: 3, name }) as const;
const optionalWhen = (name: string) => ({ type: 'datetime', precision: 3, name, nullable: true, default: null }) as const;

export const InvitationEntity = new EntitySchema<InvitationRecord>({
  name: 'Invitation',
  tableName: 'invitations',
  columns: {
    id,
    organisationId: ref('organisation_id'),
    email: { type: 'varchar', length: 320 },
    openEmail: { type: 'varchar', length: 320, name: 'open_email', nullable: true, default: null },
    role: { type: 'varchar', length: 20 },
    tokenHash: { type: 'varchar', length: 64, name: 'token_hash' },
    invitedBy: ref('invited_by'),
    createdAt: when('created_at'),
    expiresAt: when('expires_at'),
    usedAt: optionalWhen('used_at'),
    usedBy: { ...ref('used_by'), nullable: true, default: null },
    withdrawnAt: optionalWhen('withdrawn_at'),
  },
  indices: [
    { name: 'invitations_token_hash', columns: ['tokenHash'], unique: true },
    { name: 'invitations_open_email', columns: ['organisationId', 'openEmail'], unique: true },
    { name: 'invitations_organisation_created', columns: ['organisationId', 'createdAt'] },
    { name: 'invitations_invited_by', columns: ['invitedBy'] },
    { name: 'invitations_used_by', columns: ['usedBy'] },
    { name: 'invitations_expires', columns: ['expiresAt'] },
  ],
  foreignKeys: [
    { name: 'fk_invitations_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    // The inviter's account goes, and their invitations with it (as their join keys stop).
    { name: 'fk_invitations_invited_by', target: 'Person', columnNames: ['invitedBy'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    { name: 'fk_invitations_used_by', target: 'Person', columnNames: ['usedBy'], referencedColumnNames: ['id'], onDelete: 'SET NULL' },
  ],
});
