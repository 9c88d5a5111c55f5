/**
 * The DataSource for TypeORM's own CLI (`npx typeorm -d dist/ormconfig.js migration:show`),
 * configured from the same environment as the service. The service and `platform migrate` do
 * not need it; they build theirs in src/db/data-source.ts.
 */
import { loadConfig } from './src/config.js';
import { createDataSource } from './src/db/data-source.js';

export default createDataSource(loadConfig().database);
