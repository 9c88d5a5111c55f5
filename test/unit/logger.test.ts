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

  it('removes link tickets and links, as fields and in addresses', () => {
    const { lines, logger } = capture();
    logger.info({ body: { link: 'lt-s3cr3t-ticket', email: 'ada@example.test' }, url: '/auth/v1/start?provider=github&link=lt-s3cr3t-url' });
    const written = lines.join('');
    expect(written).not.toMatch(/s3cr3t/);
    expect(written).toContain('ada@example.test');
    expect(written).toContain('provider=github');
  });
});

describe('signing key material', () => {
  it('removes a private JWK\'s private members, and sealed keys, wherever they sit; public keys stay', () => {
    const { lines, logger } = capture();
    logger.info({
      key: { kty: 'EC', crv: 'P-256', x: 'public-x', y: 'public-y', d: 's3cr3t-private-d', kid: 'sk_1' },
      keys: [{ kty: 'RSA', n: 'public-n', e: 'AQAB', p: 's3cr3t-p', q: 's3cr3t-q', dp: 's3cr3t-dp', dq: 's3cr3t-dq', qi: 's3cr3t-qi' }],
      record: { kid: 'sk_2', privateSealed: 'v1.s3cr3t-iv.s3cr3t-ciphertext.s3cr3t-tag', privateJwk: 's3cr3t-jwk' },
      // Not a key: a field named `d` of anything else stays.
      point: { d: 4 },
    });
    const written = lines.join('');
    expect(written).not.toMatch(/s3cr3t/);
    for (const kept of ['public-x', 'public-y', 'public-n', 'sk_1', 'sk_2', '"d":4']) expect(written).toContain(kept);
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

describe('one marker, by name at any depth, by shape anywhere (src/log-redaction.ts)', () => {
  const written = (log: (logger: ReturnType<typeof capture>['logger']) => void) => {
    const { lines, logger } = capture();
    log(logger);
    return lines.join('');
  };

  it('redacts secret query parameters of a URL, and keeps the harmless ones', () => {
    const text = written((logger) =>
      logger.info(
        {
          url: '/x?access_token=s3cr3t1&code=s3cr3t2&state=s3cr3t3&key=s3cr3t4&password=s3cr3t5&client_secret=s3cr3t6&assertion=s3cr3t7&ticket=s3cr3t8&user_code=s3cr3t9&link=s3cr3tA&my_credential=s3cr3tB&limit=50&cursor=abc&kind=agent.message&projectId=prj_1',
        },
        'request',
      ),
    );
    expect(text).not.toMatch(/s3cr3t/);
    expect(text).toContain('limit=50&cursor=abc&kind=agent.message&projectId=prj_1');
    expect(text).toContain('code=[REDACTED]');
    expect(text).not.toContain('[Redacted]');
  });

  it('redacts credential headers by name and keeps the others', () => {
    const text = written((logger) =>
      logger.info({
        req: {
          headers: {
            authorization: 'Bearer s3cr3t-a',
            'proxy-authorization': 'Basic s3cr3t-b',
            cookie: 'sid=s3cr3t-c',
            'set-cookie': ['sid=s3cr3t-d'],
            dpop: 's3cr3t-e',
            'x-api-key': 's3cr3t-f',
            'x-auth-token': 's3cr3t-g',
            'x-csrf-token': 's3cr3t-h',
            accept: 'application/json',
            'user-agent': 'workbench/4.0',
            'dpop-nonce': 'n0nce-v4lue',
          },
        },
      }),
    );
    expect(text).not.toMatch(/s3cr3t/);
    expect(text).toContain('application/json');
    expect(text).toContain('workbench/4.0');
    expect(text).toContain('n0nce-v4lue');
  });

  it("redacts the platform's secrets by their shape in messages and in any field, keeping the prefix", () => {
    const text = written((logger) =>
      logger.warn(
        { deep: { a: [{ note: 'refresh platform_rt_AbCdEf0123456789xyz failed' }] }, other: 'platform_zz_Q1w2E3r4T5y6U7i8' },
        'saw platform_at_AbCdEf0123456789 and platform_cr_AbCdEf0123456789 and platform_dc_AbCdEf0123456789 and platform_jk_0123456789abcdef_AbCdEf0123456789',
      ),
    );
    expect(text).not.toMatch(/AbCdEf0123456789|Q1w2E3r4T5y6U7i8/);
    for (const prefix of ['at', 'rt', 'cr', 'dc', 'jk', 'zz']) expect(text).toContain(`platform_${prefix}_[REDACTED]`);
  });

  it('redacts JWTs and the credential after an authentication scheme, wherever they stand', () => {
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzM2NyM3QifQ.c2lnbmF0dXJlczNjcjN0';
    const text = written((logger) => logger.info({ note: `proof ${jwt}` }, 'sent Bearer s3cr3tOpaqueToken0123456789 as told'));
    expect(text).not.toContain(jwt.split('.')[1]);
    expect(text).not.toContain('s3cr3tOpaqueToken');
    expect(text).toContain('Bearer [REDACTED]');
  });

  it('keeps harmless fields that only share a name: error codes, rule keys, states, token counts', () => {
    const text = written((logger) =>
      logger.info({
        err: { code: 'invalid_grant' },
        driver: { code: 'ER_DUP_ENTRY' },
        zlib: { code: 'Z_DATA_ERROR' },
        rule: { key: 'device-code-address' },
        joinKey: { state: 'active' },
        usage: { inputTokens: 120, outputTokens: 30 },
      }),
    );
    for (const kept of ['invalid_grant', 'ER_DUP_ENTRY', 'Z_DATA_ERROR', 'device-code-address', '"state":"active"', '"inputTokens":120']) expect(text).toContain(kept);
  });

  it('redacts the same names when their value reads as a secret, at any depth', () => {
    const text = written((logger) =>
      logger.info({
        a: { b: { c: { d: { code: '493817', key: 'Xy7kP2qLs9Vb', state: 'q8Z2-rT5w_Lk0', password: 'hunter2', otp: 123456 } } } },
      }),
    );
    expect(text).not.toMatch(/493817|Xy7kP2qLs9Vb|q8Z2-rT5w_Lk0|hunter2|123456/);
    expect(text.match(/\[REDACTED\]/g)).toHaveLength(5);
  });
});
