import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Devices, device tokens, device-code authorisations and join keys. */
export class Devices1763750000000 implements MigrationInterface {
  name = 'Devices1763750000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE \"devices\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"person_id\" varchar(40) NOT NULL, \"name\" varchar(200) NOT NULL, \"kind\" varchar(20) NOT NULL, \"workspace_id\" varchar(200), \"node_id\" varchar(200), \"enrolled_via\" varchar(20) NOT NULL, \"join_key_id\" varchar(40), \"dpop_jkt\" varchar(64), \"scope\" varchar(500) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"last_seen_at\" datetime(3), \"revoked_at\" datetime(3), CONSTRAINT \"fk_devices_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_devices_person\" FOREIGN KEY (\"person_id\") REFERENCES \"people\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE INDEX \"devices_organisation\" ON \"devices\" (\"organisation_id\")");
    await db.query("CREATE INDEX \"devices_person\" ON \"devices\" (\"person_id\")");
    await db.query("CREATE TABLE \"device_tokens\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"device_id\" varchar(40) NOT NULL, \"kind\" varchar(10) NOT NULL, \"token_hash\" varchar(64) NOT NULL, \"pair_id\" varchar(40) NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"used_at\" datetime(3), \"grace_sealed\" text, \"grace_until\" datetime(3), \"revoked_at\" datetime(3), CONSTRAINT \"fk_device_tokens_device\" FOREIGN KEY (\"device_id\") REFERENCES \"devices\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"device_tokens_hash\" ON \"device_tokens\" (\"token_hash\")");
    await db.query("CREATE INDEX \"device_tokens_device\" ON \"device_tokens\" (\"device_id\")");
    await db.query("CREATE TABLE \"device_authorizations\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"device_code_hash\" varchar(64) NOT NULL, \"user_code_hash\" varchar(64) NOT NULL, \"organisation_id\" varchar(40), \"workspace_id\" varchar(200) NOT NULL, \"name\" varchar(200) NOT NULL, \"kind\" varchar(20) NOT NULL, \"dpop_jkt\" varchar(64), \"status\" varchar(20) NOT NULL, \"interval_seconds\" integer NOT NULL, \"last_polled_at\" datetime(3), \"expires_at\" datetime(3) NOT NULL, \"requester_address\" varchar(64), \"requester_user_agent\" varchar(300), \"claimed_by\" varchar(40), \"claimed_at\" datetime(3), \"decided_by\" varchar(40), \"decided_at\" datetime(3), \"device_id\" varchar(40), \"created_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_device_authorizations_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"device_authorizations_device_code\" ON \"device_authorizations\" (\"device_code_hash\")");
    await db.query("CREATE UNIQUE INDEX \"device_authorizations_user_code\" ON \"device_authorizations\" (\"user_code_hash\")");
    await db.query("CREATE TABLE \"join_keys\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"created_by\" varchar(40) NOT NULL, \"description\" varchar(500) NOT NULL, \"lookup\" varchar(32) NOT NULL, \"secret_hash\" varchar(64) NOT NULL, \"reusable\" boolean NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"used_at\" datetime(3), \"use_count\" integer NOT NULL DEFAULT (0), \"revoked_at\" datetime(3), \"created_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_join_keys_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"join_keys_lookup\" ON \"join_keys\" (\"lookup\")");
    await db.query("CREATE INDEX \"join_keys_organisation\" ON \"join_keys\" (\"organisation_id\")");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["join_keys", "device_authorizations", "device_tokens", "devices"]) {
      await db.query('DROP TABLE "' + table + '"');
    }
  }
}
