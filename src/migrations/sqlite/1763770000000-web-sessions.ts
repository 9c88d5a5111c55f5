import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Browser sessions of the device approval page (sign-ins in progress and signed-in sessions). */
export class WebSessions1763770000000 implements MigrationInterface {
  name = 'WebSessions1763770000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE \"web_sessions\" (\"id_hash\" varchar(64) PRIMARY KEY NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"stage\" varchar(20) NOT NULL, \"person_id\" varchar(40), \"state_hash\" varchar(64), \"sealed\" text NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"created_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_web_sessions_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_web_sessions_person\" FOREIGN KEY (\"person_id\") REFERENCES \"people\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE INDEX \"web_sessions_expires\" ON \"web_sessions\" (\"expires_at\")");
    await db.query("CREATE INDEX \"web_sessions_organisation\" ON \"web_sessions\" (\"organisation_id\")");
    await db.query("CREATE INDEX \"web_sessions_person\" ON \"web_sessions\" (\"person_id\")");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["web_sessions"]) {
      await db.query('DROP TABLE "' + table + '"');
    }
  }
}
