import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Teams: invitations to a Cloud team (one open invitation per address and team; the token only as a hash), and an index of each ingest table by project (a project is checked for data and deleted with it without reading whole tables). */
export class Teams1763850000000 implements MigrationInterface {
  name = 'Teams1763850000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE \"invitations\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"email\" varchar(320) NOT NULL, \"open_email\" varchar(320), \"role\" varchar(20) NOT NULL, \"token_hash\" varchar(64) NOT NULL, \"invited_by\" varchar(40) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"used_at\" datetime(3), \"used_by\" varchar(40), \"withdrawn_at\" datetime(3), CONSTRAINT \"fk_invitations_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_invitations_invited_by\" FOREIGN KEY (\"invited_by\") REFERENCES \"people\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_invitations_used_by\" FOREIGN KEY (\"used_by\") REFERENCES \"people\" (\"id\") ON DELETE SET NULL ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"invitations_token_hash\" ON \"invitations\" (\"token_hash\")");
    await db.query("CREATE UNIQUE INDEX \"invitations_open_email\" ON \"invitations\" (\"organisation_id\", \"open_email\")");
    await db.query("CREATE INDEX \"invitations_organisation_created\" ON \"invitations\" (\"organisation_id\", \"created_at\")");
    await db.query("CREATE INDEX \"invitations_invited_by\" ON \"invitations\" (\"invited_by\")");
    await db.query("CREATE INDEX \"invitations_used_by\" ON \"invitations\" (\"used_by\")");
    await db.query("CREATE INDEX \"ingest_events_project\" ON \"ingest_events\" (\"project_id\")");
    await db.query("CREATE INDEX \"ingest_usage_project\" ON \"ingest_usage\" (\"project_id\")");
    await db.query("CREATE INDEX \"ingest_audit_project\" ON \"ingest_audit\" (\"project_id\")");
    await db.query("CREATE INDEX \"ingest_tasks_project\" ON \"ingest_tasks\" (\"project_id\")");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const index of ["ingest_events_project", "ingest_usage_project", "ingest_audit_project", "ingest_tasks_project"]) {
      await db.query('DROP INDEX "' + index + '"');
    }
    for (const table of ["invitations"]) {
      await db.query('DROP TABLE "' + table + '"');
    }
  }
}
