import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;

beforeAll(async () => {
  platform = await startPlatform();
});
afterAll(() => platform.close());

describe('migrations', () => {
  it('create exactly the schema the entities describe (nothing left for TypeORM to change)', async () => {
    const pending = await platform.dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((query) => query.query)).toEqual([]);
  });

  it('have all run, and running again does nothing', async () => {
    expect(await platform.dataSource.showMigrations()).toBe(false);
    expect(await platform.dataSource.runMigrations()).toEqual([]);
  });
});
