import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { DataSource } from 'typeorm';
import { createDataSource } from '../../src/db/data-source.js';
import { OrganisationEntity } from '../../src/modules/organisation/entities.js';

let dataSource: DataSource;

beforeAll(async () => {
  dataSource = createDataSource({ kind: 'sqlite', flavour: 'mysql', location: ':memory:' });
  await dataSource.initialize();
  await dataSource.runMigrations();
});
afterAll(() => dataSource.destroy());

const organisation = (id: string) => ({ id, name: id, kind: 'enterprise' as const, plan: 'enterprise' as const, oidcIssuer: null, oidcClientId: null, oidcApiScope: null, oidcAudience: null, oidcRoleClaim: null, createdAt: new Date() });

describe('SQLite transactions', () => {
  it('take turns, so concurrent transactions on the one connection neither fail nor mix', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, (_, i) =>
        dataSource.transaction(async (manager) => {
          await manager.insert(OrganisationEntity, organisation(`org_turn_${i}`));
          await new Promise((resolve) => setImmediate(resolve));
          if (i === 2) throw new Error('roll me back');
          await manager.update(OrganisationEntity, { id: `org_turn_${i}` }, { name: `done ${i}` });
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const rows = await dataSource.manager.find(OrganisationEntity, { order: { id: 'ASC' } });
    expect(rows.map((row) => [row.id, row.name])).toEqual([
      ['org_turn_0', 'done 0'],
      ['org_turn_1', 'done 1'],
      ['org_turn_3', 'done 3'],
      ['org_turn_4', 'done 4'],
    ]);
  });
});
