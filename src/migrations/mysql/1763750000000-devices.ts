import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Devices, device tokens, device-code authorisations and join keys. */
export class Devices1763750000000 implements MigrationInterface {
  name = 'Devices1763750000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE `devices` (`id` varchar(40) NOT NULL, `organisation_id` varchar(40) NOT NULL, `person_id` varchar(40) NOT NULL, `name` varchar(200) NOT NULL, `kind` varchar(20) NOT NULL, `workspace_id` varchar(200) NULL, `node_id` varchar(200) NULL, `enrolled_via` varchar(20) NOT NULL, `join_key_id` varchar(40) NULL, `dpop_jkt` varchar(64) NULL, `scope` varchar(500) NOT NULL, `created_at` datetime(3) NOT NULL, `last_seen_at` datetime(3) NULL, `revoked_at` datetime(3) NULL, INDEX `devices_organisation` (`organisation_id`), INDEX `devices_person` (`person_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("CREATE TABLE `device_tokens` (`id` varchar(40) NOT NULL, `device_id` varchar(40) NOT NULL, `kind` varchar(10) NOT NULL, `token_hash` varchar(64) NOT NULL, `pair_id` varchar(40) NOT NULL, `expires_at` datetime(3) NOT NULL, `created_at` datetime(3) NOT NULL, `used_at` datetime(3) NULL, `grace_sealed` text NULL, `grace_until` datetime(3) NULL, `revoked_at` datetime(3) NULL, UNIQUE INDEX `device_tokens_hash` (`token_hash`), INDEX `device_tokens_device` (`device_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("CREATE TABLE `device_authorizations` (`id` varchar(40) NOT NULL, `device_code_hash` varchar(64) NOT NULL, `user_code_hash` varchar(64) NOT NULL, `organisation_id` varchar(40) NULL, `workspace_id` varchar(200) NOT NULL, `name` varchar(200) NOT NULL, `kind` varchar(20) NOT NULL, `dpop_jkt` varchar(64) NULL, `status` varchar(20) NOT NULL, `interval_seconds` int NOT NULL, `last_polled_at` datetime(3) NULL, `expires_at` datetime(3) NOT NULL, `requester_address` varchar(64) NULL, `requester_user_agent` varchar(300) NULL, `claimed_by` varchar(40) NULL, `claimed_at` datetime(3) NULL, `decided_by` varchar(40) NULL, `decided_at` datetime(3) NULL, `device_id` varchar(40) NULL, `created_at` datetime(3) NOT NULL, UNIQUE INDEX `device_authorizations_device_code` (`device_code_hash`), UNIQUE INDEX `device_authorizations_user_code` (`user_code_hash`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("CREATE TABLE `join_keys` (`id` varchar(40) NOT NULL, `organisation_id` varchar(40) NOT NULL, `created_by` varchar(40) NOT NULL, `description` varchar(500) NOT NULL, `lookup` varchar(32) NOT NULL, `secret_hash` varchar(64) NOT NULL, `reusable` tinyint NOT NULL, `expires_at` datetime(3) NOT NULL, `used_at` datetime(3) NULL, `use_count` int NOT NULL DEFAULT '0', `revoked_at` datetime(3) NULL, `created_at` datetime(3) NOT NULL, UNIQUE INDEX `join_keys_lookup` (`lookup`), INDEX `join_keys_organisation` (`organisation_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci");
    await db.query("ALTER TABLE `devices` ADD CONSTRAINT `fk_devices_organisation` FOREIGN KEY (`organisation_id`) REFERENCES `organisations`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `devices` ADD CONSTRAINT `fk_devices_person` FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `device_tokens` ADD CONSTRAINT `fk_device_tokens_device` FOREIGN KEY (`device_id`) REFERENCES `devices`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `device_authorizations` ADD CONSTRAINT `fk_device_authorizations_organisation` FOREIGN KEY (`organisation_id`) REFERENCES `organisations`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `join_keys` ADD CONSTRAINT `fk_join_keys_organisation` FOREIGN KEY (`organisation_id`) REFERENCES `organisations`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["join_keys", "device_authorizations", "device_tokens", "devices"]) {
      await db.query('DROP TABLE `' + table + '`');
    }
  }
}
