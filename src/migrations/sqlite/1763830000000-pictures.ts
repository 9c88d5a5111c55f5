import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Project pictures: the current version and the one before it, per project and slug. */
export class Pictures1763830000000 implements MigrationInterface {
  name = 'Pictures1763830000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE \"pictures\" (\"project_id\" varchar(40) NOT NULL, \"slug\" varchar(60) NOT NULL, \"version\" varchar(20) NOT NULL, \"digest\" varchar(64) NOT NULL, \"spec\" text NOT NULL, \"svg\" text NOT NULL, \"look\" varchar(1000), \"created_by\" varchar(40), \"created_at\" datetime(3) NOT NULL, \"updated_by\" varchar(40), \"updated_at\" datetime(3) NOT NULL, \"previous_version\" varchar(20), \"previous_spec\" text, \"previous_svg\" text, \"previous_look\" varchar(1000), \"previous_updated_by\" varchar(40), \"previous_updated_at\" datetime(3), CONSTRAINT \"fk_pictures_project\" FOREIGN KEY (\"project_id\") REFERENCES \"projects\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION, CONSTRAINT \"fk_pictures_created_by\" FOREIGN KEY (\"created_by\") REFERENCES \"people\" (\"id\") ON DELETE SET NULL ON UPDATE NO ACTION, CONSTRAINT \"fk_pictures_updated_by\" FOREIGN KEY (\"updated_by\") REFERENCES \"people\" (\"id\") ON DELETE SET NULL ON UPDATE NO ACTION, CONSTRAINT \"fk_pictures_previous_updated_by\" FOREIGN KEY (\"previous_updated_by\") REFERENCES \"people\" (\"id\") ON DELETE SET NULL ON UPDATE NO ACTION, PRIMARY KEY (\"project_id\", \"slug\"))");
    await db.query("CREATE INDEX \"pictures_project_updated\" ON \"pictures\" (\"project_id\", \"updated_at\")");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["pictures"]) {
      await db.query('DROP TABLE "' + table + '"');
    }
  }
}
