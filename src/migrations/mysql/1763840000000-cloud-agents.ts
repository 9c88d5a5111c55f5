import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Cloud agent runs, their events and per-person locks; the service's signing keys. Ids, the credential hash and the workspace compare exactly (utf8mb4_bin). */
export class CloudAgents1763840000000 implements MigrationInterface {
  name = 'CloudAgents1763840000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE `signing_keys` (`kid` varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, `generation` int NOT NULL, `public_jwk` varchar(500) NOT NULL, `private_sealed` varchar(1000) NOT NULL, `created_at` datetime(3) NOT NULL, `activates_at` datetime(3) NOT NULL, UNIQUE INDEX `signing_keys_generation` (`generation`), PRIMARY KEY (`kid`)) ENGINE=InnoDB");
    await db.query("CREATE TABLE `cloud_agent_runs` (`id` varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, `organisation_id` varchar(40) NOT NULL, `project_id` varchar(40) NOT NULL, `device_id` varchar(40) NOT NULL, `person_id` varchar(40) NOT NULL, `provider` varchar(100) NOT NULL, `team` varchar(200) NULL, `member` varchar(200) NULL, `workspace_id` varchar(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, `tools` text NULL, `credential_hash` varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, `created_at` datetime(3) NOT NULL, `expires_at` datetime(3) NOT NULL, `ended_at` datetime(3) NULL, UNIQUE INDEX `cloud_agent_runs_credential` (`credential_hash`), INDEX `cloud_agent_runs_person_running` (`organisation_id`, `person_id`, `ended_at`, `expires_at`), INDEX `cloud_agent_runs_project` (`project_id`), INDEX `cloud_agent_runs_person` (`person_id`), PRIMARY KEY (`id`)) ENGINE=InnoDB");
    await db.query("CREATE TABLE `cloud_agent_run_events` (`row_id` bigint NOT NULL AUTO_INCREMENT, `run_id` varchar(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, `at` datetime(3) NOT NULL, `kind` varchar(40) NOT NULL, `provider_task_id` varchar(200) NULL, `page_url` varchar(2048) NULL, `pull_request_url` varchar(2048) NULL, `sentence` varchar(300) NULL, `received_at` datetime(3) NOT NULL, INDEX `cloud_agent_run_events_run` (`run_id`, `row_id`), PRIMARY KEY (`row_id`)) ENGINE=InnoDB");
    await db.query("CREATE TABLE `cloud_agent_run_locks` (`organisation_id` varchar(40) NOT NULL, `person_id` varchar(40) NOT NULL, `updated_at` datetime(3) NOT NULL, PRIMARY KEY (`organisation_id`, `person_id`)) ENGINE=InnoDB");
    await db.query("ALTER TABLE `cloud_agent_runs` ADD CONSTRAINT `fk_cloud_agent_runs_organisation` FOREIGN KEY (`organisation_id`) REFERENCES `organisations`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `cloud_agent_runs` ADD CONSTRAINT `fk_cloud_agent_runs_device` FOREIGN KEY (`device_id`) REFERENCES `devices`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `cloud_agent_runs` ADD CONSTRAINT `fk_cloud_agent_runs_project` FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `cloud_agent_runs` ADD CONSTRAINT `fk_cloud_agent_runs_person` FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `cloud_agent_run_events` ADD CONSTRAINT `fk_cloud_agent_run_events_run` FOREIGN KEY (`run_id`) REFERENCES `cloud_agent_runs`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `cloud_agent_run_locks` ADD CONSTRAINT `fk_cloud_agent_run_locks_organisation` FOREIGN KEY (`organisation_id`) REFERENCES `organisations`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["cloud_agent_run_locks", "cloud_agent_run_events", "cloud_agent_runs", "signing_keys"]) {
      await db.query('DROP TABLE `' + table + '`');
    }
  }
}
