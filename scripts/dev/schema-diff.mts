// Prints the statements TypeORM would run to bring a migrated database to the entities.
// Usage: npx tsx scripts/dev/schema-diff.mts sqlite|mysql
import { createDataSource } from '../../src/db/data-source.js';
import { freshDatabase } from '../../test/support/database.js';

const dialect = process.argv[2];
if (dialect === 'mysql') process.env.TEST_DATABASE = 'mariadb';
const database = await freshDatabase();
const dataSource = createDataSource(database.config);
await dataSource.initialize();
await dataSource.runMigrations();
const log = await dataSource.driver.createSchemaBuilder().log();
for (const query of log.upQueries) console.log(query.query);
await dataSource.destroy();
await database.drop();
