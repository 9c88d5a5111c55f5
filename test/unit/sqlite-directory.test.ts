import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';

describe('the SQLite directory', () => {
  it('is refused at start, naming the directory and the volume to mount, when it cannot be written', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'platform-sqlite-dir-'));
    try {
      // A file where the directory should be: refused whoever runs the test (root writes anywhere).
      writeFileSync(join(scratch, 'data'), 'not a directory');
      const location = join(scratch, 'data', 'platform.sqlite');
      let refusal: unknown;
      try {
        createDataSource({ kind: 'sqlite', flavour: 'mysql', location });
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(ConfigError);
      expect((refusal as ConfigError).variable).toBe('DATABASE_URL');
      expect((refusal as Error).message).toContain(`the SQLite directory ${join(scratch, 'data')} cannot be written`);
      expect((refusal as Error).message).toContain('mount a writable volume there (in the container image: /app/data)');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('is created when it is missing', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'platform-sqlite-dir-'));
    try {
      const dataSource = createDataSource({ kind: 'sqlite', flavour: 'mysql', location: join(scratch, 'a', 'b', 'platform.sqlite') });
      await dataSource.initialize();
      await dataSource.destroy();
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
