import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Cloud sign-in: sign-in methods, sessions and their tokens, provider flows, one-time codes, emailed codes, link tickets; approval-page sessions need no organisation on Cloud. */
export class CloudSignIn1763820000000 implements MigrationInterface {
  name = 'CloudSignIn1763820000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("DROP INDEX \"web_sessions_person\"");
    await db.query("DROP INDEX \"web_sessions_organisation\"");
    await db.query("DROP INDEX \"web_sessions_expires\"");
    await db.query("CREATE TABLE \"temporary_web_sessions\" (\"id_hash\" varchar(64) PRIMARY KEY NOT NULL, \"organisation_id\" varchar(40), \"stage\" varchar(20) NOT NULL, \"person_id\" varchar(40), \"state_hash\" varchar(64), \"sealed\" text NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"created_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_web_sessions_organisation\" FOREIGN KEY (\"organisation_id\") REFERENCES \"organisations\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_web_sessions_person\" FOREIGN KEY (\"person_id\") REFERENCES \"people\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("INSERT INTO \"temporary_web_sessions\"(\"id_hash\", \"organisation_id\", \"stage\", \"person_id\", \"state_hash\", \"sealed\", \"expires_at\", \"created_at\") SELECT \"id_hash\", \"organisation_id\", \"stage\", \"person_id\", \"state_hash\", \"sealed\", \"expires_at\", \"created_at\" FROM \"web_sessions\"");
    await db.query("DROP TABLE \"web_sessions\"");
    await db.query("ALTER TABLE \"temporary_web_sessions\" RENAME TO \"web_sessions\"");
    await db.query("CREATE INDEX \"web_sessions_person\" ON \"web_sessions\" (\"person_id\")");
    await db.query("CREATE INDEX \"web_sessions_organisation\" ON \"web_sessions\" (\"organisation_id\")");
    await db.query("CREATE INDEX \"web_sessions_expires\" ON \"web_sessions\" (\"expires_at\")");
    await db.query("CREATE TABLE \"sign_in_methods\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"person_id\" varchar(40) NOT NULL, \"provider\" varchar(20) NOT NULL, \"subject\" varchar(320) NOT NULL, \"email\" varchar(320), \"email_verified\" boolean NOT NULL, \"created_at\" datetime(3) NOT NULL, \"last_used_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_sign_in_methods_person\" FOREIGN KEY (\"person_id\") REFERENCES \"people\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"sign_in_methods_provider_subject\" ON \"sign_in_methods\" (\"provider\", \"subject\")");
    await db.query("CREATE INDEX \"sign_in_methods_person\" ON \"sign_in_methods\" (\"person_id\")");
    await db.query("CREATE INDEX \"sign_in_methods_email\" ON \"sign_in_methods\" (\"email\")");
    await db.query("CREATE TABLE \"cloud_sessions\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"person_id\" varchar(40) NOT NULL, \"client\" varchar(20) NOT NULL, \"sign_in_method_id\" varchar(40), \"created_at\" datetime(3) NOT NULL, \"ended_at\" datetime(3), CONSTRAINT \"fk_cloud_sessions_person\" FOREIGN KEY (\"person_id\") REFERENCES \"people\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE INDEX \"cloud_sessions_person\" ON \"cloud_sessions\" (\"person_id\")");
    await db.query("CREATE INDEX \"cloud_sessions_method\" ON \"cloud_sessions\" (\"sign_in_method_id\")");
    await db.query("CREATE TABLE \"cloud_session_tokens\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"session_id\" varchar(40) NOT NULL, \"kind\" varchar(10) NOT NULL, \"token_hash\" varchar(64) NOT NULL, \"pair_id\" varchar(40) NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"used_at\" datetime(3), \"grace_sealed\" text, \"grace_until\" datetime(3), \"revoked_at\" datetime(3), CONSTRAINT \"fk_cloud_session_tokens_session\" FOREIGN KEY (\"session_id\") REFERENCES \"cloud_sessions\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"cloud_session_tokens_hash\" ON \"cloud_session_tokens\" (\"token_hash\")");
    await db.query("CREATE INDEX \"cloud_session_tokens_session\" ON \"cloud_session_tokens\" (\"session_id\")");
    await db.query("CREATE TABLE \"sign_in_flows\" (\"state_hash\" varchar(64) PRIMARY KEY NOT NULL, \"provider\" varchar(20) NOT NULL, \"sealed\" text NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"created_at\" datetime(3) NOT NULL)");
    await db.query("CREATE INDEX \"sign_in_flows_expires\" ON \"sign_in_flows\" (\"expires_at\")");
    await db.query("CREATE TABLE \"sign_in_codes\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"code_hash\" varchar(64) NOT NULL, \"person_id\" varchar(40) NOT NULL, \"client\" varchar(20) NOT NULL, \"redirect_uri\" varchar(2000) NOT NULL, \"code_challenge\" varchar(128) NOT NULL, \"sign_in_method_id\" varchar(40), \"expires_at\" datetime(3) NOT NULL, \"used_at\" datetime(3), \"session_id\" varchar(40), \"created_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_sign_in_codes_person\" FOREIGN KEY (\"person_id\") REFERENCES \"people\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"sign_in_codes_hash\" ON \"sign_in_codes\" (\"code_hash\")");
    await db.query("CREATE INDEX \"sign_in_codes_expires\" ON \"sign_in_codes\" (\"expires_at\")");
    await db.query("CREATE INDEX \"sign_in_codes_person\" ON \"sign_in_codes\" (\"person_id\")");
    await db.query("CREATE TABLE \"email_codes\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"address_hash\" varchar(64) NOT NULL, \"code_hash\" varchar(64) NOT NULL, \"tries\" integer NOT NULL, \"client\" varchar(20) NOT NULL, \"redirect_uri\" varchar(2000) NOT NULL, \"code_challenge\" varchar(128) NOT NULL, \"state\" varchar(500) NOT NULL, \"link_person_id\" varchar(40), \"expires_at\" datetime(3) NOT NULL, \"created_at\" datetime(3) NOT NULL, \"spent_at\" datetime(3), CONSTRAINT \"fk_email_codes_person\" FOREIGN KEY (\"link_person_id\") REFERENCES \"people\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE INDEX \"email_codes_address\" ON \"email_codes\" (\"address_hash\", \"created_at\")");
    await db.query("CREATE INDEX \"email_codes_link_person\" ON \"email_codes\" (\"link_person_id\")");
    await db.query("CREATE TABLE \"link_tickets\" (\"id\" varchar(40) PRIMARY KEY NOT NULL, \"ticket_hash\" varchar(64) NOT NULL, \"person_id\" varchar(40) NOT NULL, \"expires_at\" datetime(3) NOT NULL, \"used_at\" datetime(3), \"created_at\" datetime(3) NOT NULL, CONSTRAINT \"fk_link_tickets_person\" FOREIGN KEY (\"person_id\") REFERENCES \"people\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION)");
    await db.query("CREATE UNIQUE INDEX \"link_tickets_hash\" ON \"link_tickets\" (\"ticket_hash\")");
    await db.query("CREATE INDEX \"link_tickets_person\" ON \"link_tickets\" (\"person_id\")");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["link_tickets", "email_codes", "sign_in_codes", "sign_in_flows", "cloud_session_tokens", "cloud_sessions", "sign_in_methods"]) {
      await db.query('DROP TABLE "' + table + '"');
    }
  }
}
