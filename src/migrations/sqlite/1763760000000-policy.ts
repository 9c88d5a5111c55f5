import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Published policies: every publish of an organisation's policy or a project's override. */
export class Policy1763760000000 implements MigrationInterface {
  name = 'Policy1763760000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE \"policy_revisions\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"project_id\" varchar(40), \"number\" integer NOT NULL, \"document\" text NOT NULL, \"published_by\" varchar(40), \"created_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_policy_revisions_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_policy_revisions_project\" FOREIGN KEY (\"project_id\") REFERENCES \"projects\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_policy_revisions_person\" FOREIGN KEY (\"published_by\") REFERENCES \"people\" (\"id\") ON DELETE SET NULL ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"policy_revisions_number\" ON \"policy_revisions\" (\"organisation_id\", \"number\")");
    await db.query("CREATE INDEX \"policy_revisions_scope\" ON \"policy_revisions\" (\"organisation_id\", \"project_id\", \"number\")");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["policy_revisions"]) {
      await db.query('DROP TABLE "' + table + '"');
    }
  }
}
