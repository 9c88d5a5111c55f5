import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Ingest: events, usage, audit records, tasks and the per-stream cursors. */
export class Ingest1763780000000 implements MigrationInterface {
  name = 'Ingest1763780000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE \"ingest_events\" (\"row_id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"project_id\" varchar(40) NOT NULL, \"device_id\" varchar(40) NOT NULL, \"workspace_id\" varchar(200) NOT NULL, \"seq\" bigint NOT NULL, \"event_id\" varchar(200) NOT NULL, \"at\" datetime(3) NOT NULL, \"kind\" varchar(100) NOT NULL, \"data\" text NOT NULL, \"received_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_ingest_events_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"ingest_events_stream_seq\" ON \"ingest_events\" (\"device_id\", \"workspace_id\", \"seq\")");
    await db.query("CREATE INDEX \"ingest_events_organisation_row\" ON \"ingest_events\" (\"organisation_id\", \"row_id\")");
    await db.query("CREATE TABLE \"ingest_usage\" (\"row_id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"project_id\" varchar(40) NOT NULL, \"device_id\" varchar(40) NOT NULL, \"workspace_id\" varchar(200) NOT NULL, \"item_id\" varchar(200) NOT NULL, \"at\" datetime(3) NOT NULL, \"provider\" varchar(100) NOT NULL, \"model\" varchar(200) NOT NULL, \"input_tokens\" bigint NOT NULL, \"output_tokens\" bigint NOT NULL, \"cached_tokens\" bigint NOT NULL, \"cost\" decimal(18,6) NOT NULL, \"received_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_ingest_usage_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"ingest_usage_item\" ON \"ingest_usage\" (\"device_id\", \"item_id\")");
    await db.query("CREATE INDEX \"ingest_usage_organisation_at\" ON \"ingest_usage\" (\"organisation_id\", \"at\")");
    await db.query("CREATE TABLE \"ingest_audit\" (\"row_id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"project_id\" varchar(40) NOT NULL, \"device_id\" varchar(40) NOT NULL, \"workspace_id\" varchar(200) NOT NULL, \"item_id\" varchar(200) NOT NULL, \"at\" datetime(3) NOT NULL, \"actor\" varchar(200) NOT NULL, \"action\" varchar(100) NOT NULL, \"target\" varchar(500), \"label\" varchar(500), \"details\" text, \"received_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_ingest_audit_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"ingest_audit_item\" ON \"ingest_audit\" (\"device_id\", \"item_id\")");
    await db.query("CREATE INDEX \"ingest_audit_organisation_row\" ON \"ingest_audit\" (\"organisation_id\", \"row_id\")");
    await db.query("CREATE TABLE \"ingest_tasks\" (\"row_id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"project_id\" varchar(40) NOT NULL, \"device_id\" varchar(40) NOT NULL, \"workspace_id\" varchar(200) NOT NULL, \"task_id\" varchar(200) NOT NULL, \"title\" varchar(500) NOT NULL, \"status\" varchar(50) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"updated_at\" datetime(3) NOT NULL, \"completed_at\" datetime(3), \"received_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_ingest_tasks_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"ingest_tasks_item\" ON \"ingest_tasks\" (\"device_id\", \"task_id\")");
    await db.query("CREATE INDEX \"ingest_tasks_organisation_row\" ON \"ingest_tasks\" (\"organisation_id\", \"row_id\")");
    await db.query("CREATE TABLE \"ingest_streams\" (\"device_id\" varchar(40) NOT NULL, \"workspace_id\" varchar(200) NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"events_cursor\" bigint NOT NULL, \"usage_cursor\" varchar(260) NOT NULL, \"audit_cursor\" varchar(260) NOT NULL, \"updated_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_ingest_streams_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, PRIMARY KEY (\"device_id\", \"workspace_id\"))");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["ingest_streams", "ingest_tasks", "ingest_audit", "ingest_usage", "ingest_events"]) {
      await db.query('DROP TABLE "' + table + '"');
    }
  }
}
