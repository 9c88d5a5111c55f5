import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Cloud sign-in: sign-in methods, sessions and their tokens, provider flows, one-time codes, emailed codes, link tickets; approval-page sessions need no organisation on Cloud. */
export class CloudSignIn1763820000000 implements MigrationInterface {
  name = 'CloudSignIn1763820000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE `sign_in_methods` (`id` varchar(40) NOT NULL, `person_id` varchar(40) NOT NULL, `provider` varchar(20) NOT NULL, `subject` varchar(320) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, `email` varchar(320) NULL, `email_verified` tinyint NOT NULL, `created_at` datetime(3) NOT NULL, `last_used_at` datetime(3) NOT NULL, UNIQUE INDEX `sign_in_methods_provider_subject` (`provider`, `subject`), INDEX `sign_in_methods_person` (`person_id`), INDEX `sign_in_methods_email` (`email`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("CREATE TABLE `cloud_sessions` (`id` varchar(40) NOT NULL, `person_id` varchar(40) NOT NULL, `client` varchar(20) NOT NULL, `sign_in_method_id` varchar(40) NULL, `created_at` datetime(3) NOT NULL, `ended_at` datetime(3) NULL, INDEX `cloud_sessions_person` (`person_id`), INDEX `cloud_sessions_method` (`sign_in_method_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("CREATE TABLE `cloud_session_tokens` (`id` varchar(40) NOT NULL, `session_id` varchar(40) NOT NULL, `kind` varchar(10) NOT NULL, `token_hash` varchar(64) NOT NULL, `pair_id` varchar(40) NOT NULL, `expires_at` datetime(3) NOT NULL, `created_at` datetime(3) NOT NULL, `used_at` datetime(3) NULL, `grace_sealed` text NULL, `grace_until` datetime(3) NULL, `revoked_at` datetime(3) NULL, UNIQUE INDEX `cloud_session_tokens_hash` (`token_hash`), INDEX `cloud_session_tokens_session` (`session_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("CREATE TABLE `sign_in_flows` (`state_hash` varchar(64) NOT NULL, `provider` varchar(20) NOT NULL, `sealed` text NOT NULL, `expires_at` datetime(3) NOT NULL, `created_at` datetime(3) NOT NULL, INDEX `sign_in_flows_expires` (`expires_at`), PRIMARY KEY (`state_hash`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("CREATE TABLE `sign_in_codes` (`id` varchar(40) NOT NULL, `code_hash` varchar(64) NOT NULL, `person_id` varchar(40) NOT NULL, `client` varchar(20) NOT NULL, `redirect_uri` varchar(2000) NOT NULL, `code_challenge` varchar(128) NOT NULL, `sign_in_method_id` varchar(40) NULL, `expires_at` datetime(3) NOT NULL, `used_at` datetime(3) NULL, `session_id` varchar(40) NULL, `created_at` datetime(3) NOT NULL, UNIQUE INDEX `sign_in_codes_hash` (`code_hash`), INDEX `sign_in_codes_expires` (`expires_at`), INDEX `sign_in_codes_person` (`person_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("CREATE TABLE `email_codes` (`id` varchar(40) NOT NULL, `address_hash` varchar(64) NOT NULL, `code_hash` varchar(64) NOT NULL, `tries` int NOT NULL, `client` varchar(20) NOT NULL, `redirect_uri` varchar(2000) NOT NULL, `code_challenge` varchar(128) NOT NULL, `state` varchar(500) NOT NULL, `link_person_id` varchar(40) NULL, `expires_at` datetime(3) NOT NULL, `created_at` datetime(3) NOT NULL, `spent_at` datetime(3) NULL, INDEX `email_codes_address` (`address_hash`, `created_at`), INDEX `email_codes_link_person` (`link_person_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("CREATE TABLE `link_tickets` (`id` varchar(40) NOT NULL, `ticket_hash` varchar(64) NOT NULL, `person_id` varchar(40) NOT NULL, `expires_at` datetime(3) NOT NULL, `used_at` datetime(3) NULL, `created_at` datetime(3) NOT NULL, UNIQUE INDEX `link_tickets_hash` (`ticket_hash`), INDEX `link_tickets_person` (`person_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("ALTER TABLE `web_sessions` DROP FOREIGN KEY `fk_web_sessions_organisation`");
    await db.query("ALTER TABLE `web_sessions` CHANGE `organisation_id` `organisation_id` varchar(40) NULL");
    await db.query("ALTER TABLE `web_sessions` ADD CONSTRAINT `fk_web_sessions_organisation` FOREIGN KEY (`organisation_id`) REFERENCES `organisations`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `sign_in_methods` ADD CONSTRAINT `fk_sign_in_methods_person` FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `cloud_sessions` ADD CONSTRAINT `fk_cloud_sessions_person` FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `cloud_session_tokens` ADD CONSTRAINT `fk_cloud_session_tokens_session` FOREIGN KEY (`session_id`) REFERENCES `cloud_sessions`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `sign_in_codes` ADD CONSTRAINT `fk_sign_in_codes_person` FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `email_codes` ADD CONSTRAINT `fk_email_codes_person` FOREIGN KEY (`link_person_id`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `link_tickets` ADD CONSTRAINT `fk_link_tickets_person` FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["link_tickets", "email_codes", "sign_in_codes", "sign_in_flows", "cloud_session_tokens", "cloud_sessions", "sign_in_methods"]) {
      await db.query('DROP TABLE `' + table + '`');
    }
  }
}
