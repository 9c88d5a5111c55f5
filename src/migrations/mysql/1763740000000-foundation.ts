import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Organisations, host names, people, identities, memberships, projects and project members. */
export class Foundation1763740000000 implements MigrationInterface {
  name = 'Foundation1763740000000';

  async up(db: QueryRunner): Promise<void> {
    const table = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci';
    await db.query(`CREATE TABLE \`organisations\` (\`id\` varchar(40) NOT NULL, \`name\` varchar(200) NOT NULL, \`kind\` varchar(20) NOT NULL, \`plan\` varchar(20) NOT NULL, \`oidc_issuer\` varchar(500) NULL, \`oidc_client_id\` varchar(255) NULL, \`oidc_api_scope\` varchar(255) NULL, \`oidc_audience\` varchar(255) NULL, \`oidc_role_claim\` varchar(100) NULL, \`created_at\` datetime(3) NOT NULL, UNIQUE INDEX \`organisations_oidc_issuer\` (\`oidc_issuer\`), PRIMARY KEY (\`id\`)) ${table}`);
    await db.query(`CREATE TABLE \`organisation_hosts\` (\`host\` varchar(253) NOT NULL, \`organisation_id\` varchar(40) NOT NULL, INDEX \`organisation_hosts_organisation\` (\`organisation_id\`), PRIMARY KEY (\`host\`)) ${table}`);
    await db.query(`CREATE TABLE \`people\` (\`id\` varchar(40) NOT NULL, \`name\` varchar(200) NOT NULL, \`email\` varchar(320) NULL, \`created_at\` datetime(3) NOT NULL, PRIMARY KEY (\`id\`)) ${table}`);
    await db.query(`CREATE TABLE \`person_identities\` (\`id\` varchar(40) NOT NULL, \`issuer\` varchar(500) NOT NULL, \`subject\` varchar(255) NOT NULL, \`person_id\` varchar(40) NOT NULL, \`created_at\` datetime(3) NOT NULL, UNIQUE INDEX \`person_identities_issuer_subject\` (\`issuer\`, \`subject\`), INDEX \`person_identities_person\` (\`person_id\`), PRIMARY KEY (\`id\`)) ${table}`);
    await db.query(`CREATE TABLE \`memberships\` (\`organisation_id\` varchar(40) NOT NULL, \`person_id\` varchar(40) NOT NULL, \`role\` varchar(20) NOT NULL, \`created_at\` datetime(3) NOT NULL, INDEX \`memberships_person\` (\`person_id\`), PRIMARY KEY (\`organisation_id\`, \`person_id\`)) ${table}`);
    await db.query(`CREATE TABLE \`projects\` (\`id\` varchar(40) NOT NULL, \`organisation_id\` varchar(40) NOT NULL, \`name\` varchar(200) NOT NULL, \`created_at\` datetime(3) NOT NULL, INDEX \`projects_organisation\` (\`organisation_id\`), PRIMARY KEY (\`id\`)) ${table}`);
    await db.query(`CREATE TABLE \`project_members\` (\`project_id\` varchar(40) NOT NULL, \`person_id\` varchar(40) NOT NULL, \`role\` varchar(20) NOT NULL, \`created_at\` datetime(3) NOT NULL, INDEX \`project_members_person\` (\`person_id\`), PRIMARY KEY (\`project_id\`, \`person_id\`)) ${table}`);
    await db.query('ALTER TABLE `organisation_hosts` ADD CONSTRAINT `fk_organisation_hosts_organisation` FOREIGN KEY (`organisation_id`) REFERENCES `organisations`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION');
    await db.query('ALTER TABLE `person_identities` ADD CONSTRAINT `fk_person_identities_person` FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION');
    await db.query('ALTER TABLE `memberships` ADD CONSTRAINT `fk_memberships_organisation` FOREIGN KEY (`organisation_id`) REFERENCES `organisations`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION');
    await db.query('ALTER TABLE `memberships` ADD CONSTRAINT `fk_memberships_person` FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION');
    await db.query('ALTER TABLE `projects` ADD CONSTRAINT `fk_projects_organisation` FOREIGN KEY (`organisation_id`) REFERENCES `organisations`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION');
    await db.query('ALTER TABLE `project_members` ADD CONSTRAINT `fk_project_members_project` FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION');
    await db.query('ALTER TABLE `project_members` ADD CONSTRAINT `fk_project_members_person` FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION');
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ['project_members', 'projects', 'memberships', 'person_identities', 'people', 'organisation_hosts', 'organisations']) {
      await db.query(`DROP TABLE \`${table}\``);
    }
  }
}
