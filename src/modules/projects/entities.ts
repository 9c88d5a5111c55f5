import { EntitySchema } from 'typeorm';
import type { ProjectRole } from '../../auth/principal.js';

/** Projects belong to one organisation; project members hold a project role. */

export interface ProjectRecord {
  id: string;
  organisationId: string;
  name: string;
  createdAt: Date;
}

export interface ProjectMemberRecord {
  projectId: string;
  personId: string;
  role: ProjectRole;
  createdAt: Date;
}

const createdAt = { type: 'datetime', precision: 3, name: 'created_at' } as const;

export const ProjectEntity = new EntitySchema<ProjectRecord>({
  name: 'Project',
  tableName: 'projects',
  columns: {
    id: { type: 'varchar', length: 40, primary: true },
    organisationId: { type: 'varchar', length: 40, name: 'organisation_id' },
    name: { type: 'varchar', length: 200 },
    createdAt,
  },
  indices: [{ name: 'projects_organisation', columns: ['organisationId'] }],
  foreignKeys: [
    { name: 'fk_projects_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

export const ProjectMemberEntity = new EntitySchema<ProjectMemberRecord>({
  name: 'ProjectMember',
  tableName: 'project_members',
  columns: {
    projectId: { type: 'varchar', length: 40, name: 'project_id', primary: true },
    personId: { type: 'varchar', length: 40, name: 'person_id', primary: true },
    role: { type: 'varchar', length: 20 },
    createdAt,
  },
  indices: [{ name: 'project_members_person', columns: ['personId'] }],
  foreignKeys: [
    { name: 'fk_project_members_project', target: 'Project', columnNames: ['projectId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    { name: 'fk_project_members_person', target: 'Person', columnNames: ['personId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});
