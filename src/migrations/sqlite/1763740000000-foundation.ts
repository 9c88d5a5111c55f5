import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Organisations, host names, people, identities, memberships, projects and project members. */
export class Foundation1763740000000 implements MigrationInterface {
  name = 'Foundation1763740000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE TABLE "organisations" ("id" varchar(40) PRIMARY KEY NOT NULL, "name" varchar(200) NOT NULL, "kind" varchar(20) NOT NULL, "plan" varchar(20) NOT NULL, "oidc_issuer" varchar(500), "oidc_client_id" varchar(255), "oidc_api_scope" varchar(255), "oidc_audience" varchar(255), "oidc_role_claim" varchar(100), "created_at" datetime(3) NOT NULL)`);
    await db.query(`CREATE UNIQUE INDEX "organisations_oidc_issuer" ON "organisations" ("oidc_issuer")`);
    await db.query(`CREATE TABLE "organisation_hosts" ("host" varchar(253) PRIMARY KEY NOT NULL, "organisation_id" varchar(40) NOT NULL, CONSTRAINT "fk_organisation_hosts_organisation" FOREIGN KEY ("organisation_id") REFERENCES "organisations" ("id") ON DELETE CASCADE ON UPDATE NO ACTION)`);
    await db.query(`CREATE INDEX "organisation_hosts_organisation" ON "organisation_hosts" ("organisation_id")`);
    await db.query(`CREATE TABLE "people" ("id" varchar(40) PRIMARY KEY NOT NULL, "name" varchar(200) NOT NULL, "email" varchar(320), "created_at" datetime(3) NOT NULL)`);
    await db.query(`CREATE TABLE "person_identities" ("id" varchar(40) PRIMARY KEY NOT NULL, "issuer" varchar(500) NOT NULL, "subject" varchar(255) NOT NULL, "person_id" varchar(40) NOT NULL, "created_at" datetime(3) NOT NULL, CONSTRAINT "fk_person_identities_person" FOREIGN KEY ("person_id") REFERENCES "people" ("id") ON DELETE CASCADE ON UPDATE NO ACTION)`);
    await db.query(`CREATE UNIQUE INDEX "person_identities_issuer_subject" ON "person_identities" ("issuer", "subject")`);
    await db.query(`CREATE INDEX "person_identities_person" ON "person_identities" ("person_id")`);
    await db.query(`CREATE TABLE "memberships" ("organisation_id" varchar(40) NOT NULL, "person_id" varchar(40) NOT NULL, "role" varchar(20) NOT NULL, "created_at" datetime(3) NOT NULL, CONSTRAINT "fk_memberships_organisation" FOREIGN KEY ("organisation_id") REFERENCES "organisations" ("id") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT "fk_memberships_person" FOREIGN KEY ("person_id") REFERENCES "people" ("id") ON DELETE CASCADE ON UPDATE NO ACTION, PRIMARY KEY ("organisation_id", "person_id"))`);
    await db.query(`CREATE INDEX "memberships_person" ON "memberships" ("person_id")`);
    await db.query(`CREATE TABLE "projects" ("id" varchar(40) PRIMARY KEY NOT NULL, "organisation_id" varchar(40) NOT NULL, "name" varchar(200) NOT NULL, "created_at" datetime(3) NOT NULL, CONSTRAINT "fk_projects_organisation" FOREIGN KEY ("organisation_id") REFERENCES "organisations" ("id") ON DELETE CASCADE ON UPDATE NO ACTION)`);
    await db.query(`CREATE INDEX "projects_organisation" ON "projects" ("organisation_id")`);
    await db.query(`CREATE TABLE "project_members" ("project_id" varchar(40) NOT NULL, "person_id" varchar(40) NOT NULL, "role" varchar(20) NOT NULL, "created_at" datetime(3) NOT NULL, CONSTRAINT "fk_project_members_project" FOREIGN KEY ("project_id") REFERENCES "projects" ("id") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT "fk_project_members_person" FOREIGN KEY ("person_id") REFERENCES "people" ("id") ON DELETE CASCADE ON UPDATE NO ACTION, PRIMARY KEY ("project_id", "person_id"))`);
    await db.query(`CREATE INDEX "project_members_person" ON "project_members" ("person_id")`);
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ['project_members', 'projects', 'memberships', 'person_identities', 'people', 'organisation_hosts', 'organisations']) {
      await db.query(`DROP TABLE "${table}"`);
    }
  }
}
