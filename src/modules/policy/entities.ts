import { EntitySchema } from 'typeorm';

/**
 * Every publish of a policy, kept: the organisation's whole document (`projectId` null) or a
 * project's override. Rows are never updated; the newest valid row of a scope is the one that
 * applies. `number` counts up per organisation, so "newest" never depends on two publishes
 * landing in different milliseconds, and a concurrent publish collides on the unique index
 * instead of interleaving.
 */
export interface PolicyRevisionRecord {
  id: string;
  organisationId: string;
  projectId: string | null;
  number: number;
  /** The published document as canonical JSON (sorted keys), exactly what was validated. */
  document: string;
  publishedBy: string | null;
  createdAt: Date;
}

export const PolicyRevisionEntity = new EntitySchema<PolicyRevisionRecord>({
  name: 'PolicyRevision',
  tableName: 'policy_revisions',
  columns: {
    id: { type: 'varchar', length: 40, primary: true },
    organisationId: { type: 'varchar', length: 40, name: 'organisation_id' },
    projectId: { type: 'varchar', length: 40, name: 'project_id', nullable: true },
    number: { type: 'integer' },
    // TEXT holds 65,535 bytes on MySQL; the service refuses documents that would not fit.
    document: { type: 'text' },
    publishedBy: { type: 'varchar', length: 40, name: 'published_by', nullable: true },
    createdAt: { type: 'datetime', precision: 3, name: 'created_at' },
  },
  indices: [
    { name: 'policy_revisions_number', columns: ['organisationId', 'number'], unique: true },
    { name: 'policy_revisions_scope', columns: ['organisationId', 'projectId', 'number'] },
  ],
  foreignKeys: [
    { name: 'fk_policy_revisions_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    { name: 'fk_policy_revisions_project', target: 'Project', columnNames: ['projectId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    { name: 'fk_policy_revisions_person', target: 'Person', columnNames: ['publishedBy'], referencedColumnNames: ['id'], onDelete: 'SET NULL' },
  ],
});

/** Stored documents must fit a MySQL TEXT column (65,535 bytes) with room to spare. */
export const MAX_STORED_DOCUMENT_BYTES = 60 * 1024;
