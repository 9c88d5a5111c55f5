import { Writable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { createLogger } from '../../src/logger.js';

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { lines, logger: createLogger('info', sink) };
}

describe('logger redaction', () => {
  it('removes credentials from headers', () => {
    const { lines, logger } = capture();
    logger.info({ req: { headers: { authorization: 'Bearer s3cr3t-token', dpop: 'proof-s3cr3t', cookie: 'sid=s3cr3t-cookie', accept: 'application/json' } } });
    expect(lines.join('')).not.toMatch(/s3cr3t/);
    expect(lines.join('')).toContain('application/json');
  });

  it('removes token-like fields of a logged body, at the top and one level down', () => {
    const { lines, logger } = capture();
    logger.info({
      body: { refresh_token: 'platform_rt_s3cr3t', device_code: 'dc-s3cr3t', name: 'laptop' },
      grant: { access_token: 'platform_at_s3cr3t', password: 'hunter2-s3cr3t', key: 'platform_jk_s3cr3t' },
    });
    const written = lines.join('');
    expect(written).not.toMatch(/s3cr3t/);
    expect(written).toContain('laptop');
    expect(written.match(/\[REDACTED\]/g)?.length).toBe(5);
  });
});

describe('logged failures', () => {
  it('never carry the values a failed query was bound to', () => {
    const { lines, logger } = capture();
    const failure = Object.assign(new Error('SQLITE_CONSTRAINT'), { query: 'INSERT INTO x VALUES (?)', parameters: ['s3cr3t-bound-value'] });
    logger.error({ err: failure }, 'unexpected failure');
    expect(lines.join('')).not.toContain('s3cr3t-bound-value');
    expect(lines.join('')).toContain('SQLITE_CONSTRAINT');
  });
});

describe('logged database failures (MySQL-shaped)', () => {
  it('keep the code and the placeholder statement, never the values mysql2 writes into its error', () => {
    const { lines, logger } = capture();
    const driverError = Object.assign(new Error("Duplicate entry 's3cr3t-dup' for key 'x'"), {
      code: 'ER_DUP_ENTRY',
      errno: 1062,
      sql: "INSERT INTO people VALUES ('s3cr3t-sql')",
      sqlMessage: "Duplicate entry 's3cr3t-dup' for key 'x'",
    });
    const failure = Object.assign(new Error("Duplicate entry 's3cr3t-dup' for key 'x'"), {
      name: 'QueryFailedError',
      query: 'INSERT INTO people VALUES (?)',
      parameters: ['s3cr3t-param'],
      driverError,
      sql: driverError.sql,
      sqlMessage: driverError.sqlMessage,
    });
    logger.error({ err: failure }, 'unexpected failure');
    const written = lines.join('');
    expect(written).not.toContain('s3cr3t');
    expect(written).toContain('ER_DUP_ENTRY');
    expect(written).toContain('INSERT INTO people VALUES (?)');
  });
});
