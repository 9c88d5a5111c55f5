import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sign-in flows bound to whoever started them (issue 21): a provider flow keeps the hash of its
 * browser's binding cookie; a link ticket its session; a link flow's one-time code (and emailed
 * code) the ticket, and the method it would add; a sign-in method the verified address it stands
 * for when sign-ins are joined by address.
 *
 * Existing methods stand for their address only when nothing can have slipped them in: emailed
 * addresses (proved by a code mailed there) and each person's first method (which made the
 * person). A provider method added later may have been attached by a link flow someone else's
 * browser finished, before flows were bound: it keeps signing in by its subject, but no new
 * sign-in is joined to its person by its address.
 */
export class SignInBinding1763880000000 implements MigrationInterface {
  name = 'SignInBinding1763880000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('ALTER TABLE `sign_in_methods` ADD `confirmed_email` varchar(320) NULL');
    await db.query('ALTER TABLE `sign_in_flows` ADD `browser_hash` varchar(64) NULL');
    await db.query('ALTER TABLE `sign_in_codes` ADD `link_ticket_id` varchar(40) NULL');
    await db.query('ALTER TABLE `sign_in_codes` ADD `pending_method` text NULL');
    await db.query('ALTER TABLE `email_codes` ADD `link_ticket_id` varchar(40) NULL');
    await db.query('ALTER TABLE `link_tickets` ADD `session_id` varchar(40) NULL');
    await db.query('CREATE INDEX `sign_in_methods_confirmed_email` ON `sign_in_methods` (`confirmed_email`)');
    await db.query(
      'UPDATE `sign_in_methods` SET `confirmed_email` = `email` WHERE `email_verified` = 1 AND `email` IS NOT NULL AND (`provider` = \'email\' OR `id` IN (' +
        'SELECT `id` FROM (SELECT `m`.`id` FROM `sign_in_methods` `m` WHERE NOT EXISTS (SELECT 1 FROM `sign_in_methods` `o` WHERE `o`.`person_id` = `m`.`person_id` ' +
        'AND (`o`.`created_at` < `m`.`created_at` OR (`o`.`created_at` = `m`.`created_at` AND `o`.`id` < `m`.`id`)))) AS `firsts`))',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX `sign_in_methods_confirmed_email` ON `sign_in_methods`');
    await db.query('ALTER TABLE `link_tickets` DROP COLUMN `session_id`');
    await db.query('ALTER TABLE `email_codes` DROP COLUMN `link_ticket_id`');
    await db.query('ALTER TABLE `sign_in_codes` DROP COLUMN `pending_method`');
    await db.query('ALTER TABLE `sign_in_codes` DROP COLUMN `link_ticket_id`');
    await db.query('ALTER TABLE `sign_in_flows` DROP COLUMN `browser_hash`');
    await db.query('ALTER TABLE `sign_in_methods` DROP COLUMN `confirmed_email`');
  }
}
