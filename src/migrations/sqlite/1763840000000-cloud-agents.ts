import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Cloud agent runs, their events and per-person locks; the service's signing keys. */
export class CloudAgents1763840000000 implements MigrationInterface {
  name = 'CloudAgents1763840000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE \"signing_keys\" (\"kid\" varchar(40) PRIMARY KEY NOT NULL, \"generation\" integer NOT NULL, \"public_jwk\" varchar(500) NOT NULL, \"private_sealed\" varchar(1000) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"activates_at\" datetime(3) NOT NULL)");
    await db.query("CREATE UNIQUE INDEX \"signing_keys_generation\" ON \"signing_keys\" (\"generation\")");
    await db.query("CREATE TABLE \"cloud_agent_runs\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"project_id\" varchar(40) NOT NULL, \"device_id\" varchar(40) NOT NULL, \"person_id\" varchar(40) NOT NULL, \"provider\" varchar(100) NOT NULL, \"team\" varchar(200), \"member\" varchar(200), \"workspace_id\" varchar(200), \"tools\" text, \"credential_hash\" varchar(64), \"created_at\" datetime(3) NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"ended_at\" datetime(3), CONSTRAINT \"fk_cloud_agent_runs_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_cloud_agent_runs_device\" FOREIGN KEY (\"device_id\") REFERENCES \"devices\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_cloud_agent_runs_project\" FOREIGN KEY (\"project_id\") REFERENCES \"projects\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_cloud_agent_runs_person\" FOREIGN KEY (\"person_id\") REFERENCES \"people\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"cloud_agent_runs_credential\" ON \"cloud_agent_runs\" (\"credential_hash\")");
    await db.query("CREATE INDEX \"cloud_agent_runs_person_running\" ON \"cloud_agent_runs\" (\"organisation_id\", \"person_id\", \"ended_at\", \"expires_at\")");
    await db.query("CREATE INDEX \"cloud_agent_runs_project\" ON \"cloud_agent_runs\" (\"project_id\")");
    await db.query("CREATE INDEX \"cloud_agent_runs_person\" ON \"cloud_agent_runs\" (\"person_id\")");
    await db.query("CREATE TABLE \"cloud_agent_run_events\" (\"row_id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"run_id\" varchar(40) NOT NULL, \"at\" datetime(3) NOT NULL, \"kind\" varchar(40) NOT NULL, \"provider_task_id\" varchar(200), \"page_url\" varchar(2048), \"pull_request_url\" varchar(2048), \"sentence\" varchar(300), \"received_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_cloud_agent_run_events_run\" FOREIGN KEY (\"run_id\") REFERENCES \"cloud_agent_runs\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE INDEX \"cloud_agent_run_events_run\" ON \"cloud_agent_run_events\" (\"run_id\", \"row_id\")");
    await db.query("CREATE TABLE \"cloud_agent_run_locks\" (\"organisation_id\" varchar(40) NOT NULL, \"person_id\" varchar(40) NOT NULL, \"updated_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_cloud_agent_run_locks_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, PRIMARY KEY (\"organisation_id\", \"person_id\"))");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["cloud_agent_run_locks", "cloud_agent_run_events", "cloud_agent_runs", "signing_keys"]) {
      await db.query('DROP TABLE "' + table + '"');
    }
  }
}
