import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Project pictures: the current version and the one before it, per project and slug. Slugs and versions compare exactly (utf8mb4_bin); spec and SVG are MEDIUMTEXT. */
export class Pictures1763830000000 implements MigrationInterface {
  name = 'Pictures1763830000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE `pictures` (`project_id` varchar(40) NOT NULL, `slug` varchar(60) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, `version` varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, `digest` varchar(64) NOT NULL, `spec` mediumtext NOT NULL, `svg` mediumtext NOT NULL, `look` varchar(1000) NULL, `created_by` varchar(40) NULL, `created_at` datetime(3) NOT NULL, `updated_by` varchar(40) NULL, `updated_at` datetime(3) NOT NULL, `previous_version` varchar(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, `previous_spec` mediumtext NULL, `previous_svg` mediumtext NULL, `previous_look` varchar(1000) NULL, `previous_updated_by` varchar(40) NULL, `previous_updated_at` datetime(3) NULL, INDEX `pictures_project_updated` (`project_id`, `updated_at`), PRIMARY KEY (`project_id`, `slug`)) ENGINE=InnoDB");
    await db.query("ALTER TABLE `pictures` ADD CONSTRAINT `fk_pictures_project` FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `pictures` ADD CONSTRAINT `fk_pictures_created_by` FOREIGN KEY (`created_by`) REFERENCES `people`(`id`) ON DELETE SET NULL ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `pictures` ADD CONSTRAINT `fk_pictures_updated_by` FOREIGN KEY (`updated_by`) REFERENCES `people`(`id`) ON DELETE SET NULL ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `pictures` ADD CONSTRAINT `fk_pictures_previous_updated_by` FOREIGN KEY (`previous_updated_by`) REFERENCES `people`(`id`) ON DELETE SET NULL ON UPDATE NO ACTION");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["pictures"]) {
      await db.query('DROP TABLE `' + table + '`');
    }
  }
}
