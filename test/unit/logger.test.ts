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
