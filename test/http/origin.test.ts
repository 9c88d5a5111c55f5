import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPerson, deviceHeaders, enrolDevice } from '../support/devices.js';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';
import { listen, type RawAnswer, type RawServer } from '../support/raw-http.js';

/**
 * One trusted origin (src/http/origin.ts): a request whose Host (or, behind a trusted proxy,
 * X-Forwarded-Host / X-Forwarded-Proto) does not name exactly one valid authority is refused with
 * 400 `invalid_request` before tenancy or any handler, and the value is reflected nowhere: not in
 * the answer's body or headers, not in a log line beyond the raw request header it came in.
 *
 * Requests go over bare sockets: supertest and Node's client refuse to send many of these values.
 * Some never reach Express (Node's own parser answers 400 to control characters, for one); the
 * assertions hold for those too.
 */

const HOST = 'origin-table.test';

/** Malformed or ambiguous authorities; the marker `zq7` makes reflection easy to spot. */
const MALFORMED: [string, string][] = [
  ['user info', 'zq7@origin-table.test'],
  ['user info with password', 'zq7:pw@origin-table.test'],
  ['a path', 'origin-table.test/zq7'],
  ['a path only', 'zq7/b'],
  ['a query', 'origin-table.test?zq7'],
  ['a fragment', 'origin-table.test#zq7'],
  ['a backslash', 'origin-table.test\\zq7'],
  ['two colons', 'zq7:1:2'],
  ['percent-encoded', '%7Aq7.test'],
  ['percent in a label', 'zq7%2e.test'],
  ['an open bracket', '[::1'],
  ['an unbracketed IPv6 address', '::1'],
  ['an unbracketed IPv6 address with a marker', 'fe80::7:zq7'],
  ['junk after the bracket', '[::1]zq7'],
  ['an empty port after the bracket', '[::1]:'],
  ['an IPv6 zone id', '[fe80::1%25zq7]'],
  ['a bad IPv6 address', '[::zq7]'],
  ['a port out of range', 'zq7.test:99999'],
  ['port 0', 'zq7.test:0'],
  ['an empty port', 'zq7.test:'],
  ['a port with a leading zero', 'zq7.test:080'],
  ['a non-numeric port', 'zq7.test:8o'],
  ['an empty label', 'zq7..test'],
  ['a leading dot', '.zq7.test'],
  ['a trailing dot', 'zq7.test.'],
  ['a leading hyphen', '-zq7.test'],
  ['a trailing hyphen in a label', 'zq7-.test'],
  ['an underscore', 'zq7_b.test'],
  ['white space inside', 'zq7 .test'],
  ['a tab inside', 'zq7\t.test'],
  ['non-ASCII', 'zq7-bücher.test'],
  ['a full-width letter', 'zq7ｔest.test'],
  ['an IDN homoglyph', 'zq7.tеst'],
  ['a label longer than 63', `zq7${'a'.repeat(61)}.test`],
  ['a name longer than 253', `zq7.${'abcdefghij.'.repeat(24)}test`],
  ['very long', `zq7${'a'.repeat(5000)}`],
  ['a short IPv4 form', '1.2.7'],
  ['a hexadecimal IPv4 form', '0x7f.1'],
  ['an octet over 255', '256.1.1.7'],
  ['an octet with a leading zero', '10.0.0.07'],
  ['a star', '*'],
  ['a comma list', 'zq7.test, origin-table.test'],
  ['a quoted value', '"zq7.test"'],
];

/** Valid authorities and the origin each gives (no proxy; plain http). */
const VALID: [string, string][] = [
  [HOST, `http://${HOST}`],
  ['Origin-TABLE.test', `http://${HOST}`],
  [`${HOST}:8443`, `http://${HOST}:8443`],
  [`${HOST}:80`, `http://${HOST}`],
];

let platform: TestPlatform;
let server: RawServer;

function head(method: string, target: string, headers: [string, string][]): string {
  return [`${method} ${target} HTTP/1.1`, ...headers.map(([name, value]) => `${name}: ${value}`)].join('\r\n');
}

/** Log lines without the request as it came in (its target and headers, logged as received). */
function withoutRawRequest(lines: Record<string, unknown>[]): string {
  return JSON.stringify(
    lines.map((line) => {
      const req = line.req as Record<string, unknown> | undefined;
      if (!req) return line;
      const { headers: _headers, url: _url, ...rest } = req;
      return { ...line, req: rest };
    }),
  );
}

/** The log lines of the request with this id, without the raw request. */
function logsOf(requestId: string | undefined): string {
  // Node's parser answers some refusals itself, without a request id: then every line is checked.
  if (requestId === undefined) return withoutRawRequest(platform.logs);
  return withoutRawRequest(platform.logs.filter((line) => (line.req as { id?: string } | undefined)?.id === requestId || line.requestId === requestId));
}

function expectRefusedAndNotReflected(answer: RawAnswer, value: string): void {
  expect(answer.status).toBe(400);
  // Refusals that reach the service have its error body; Node's own parser answers a bare 400.
  if (answer.body !== '') {
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_request' });
  }
  const markers = [value, value.toLowerCase(), encodeURIComponent(value), 'zq7'].filter((marker) => marker.length >= 3);
  for (const marker of markers) {
    expect(answer.raw).not.toContain(marker);
    expect(logsOf(answer.headers['x-request-id']?.[0])).not.toContain(marker);
  }
}

beforeAll(async () => {
  platform = await startPlatform({ env: { TRUST_PROXY: 'loopback' } });
  await createOrganisation(platform, { name: 'Origin table', hosts: [HOST] });
  server = await listen(platform.app);
});
afterAll(async () => {
  await server.close();
  await platform.close();
});

describe('Host', () => {
  it.each(MALFORMED)('refuses %s, reflecting it nowhere', async (_label, value) => {
    const answer = await server.send(head('GET', '/.well-known/platform.json', [['Host', value]]));
    expectRefusedAndNotReflected(answer, value);
  });

  it.each(MALFORMED)('refuses %s on a page of the approval site too', async (_label, value) => {
    const answer = await server.send(head('GET', '/device', [['Host', value]]));
    expectRefusedAndNotReflected(answer, value);
  });

  it.each(VALID)('accepts %s as %s', async (value, origin) => {
    const answer = await server.send(head('GET', '/.well-known/platform.json', [['Host', value]]));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).apiBaseUrl).toBe(origin);
  });

  it('answers an IP address with its canonical origin (unknown tenant: no organisation is served there)', async () => {
    const answer = await server.send(head('POST', '/relay/v1/device/code', [['Host', '[0:0::1]:3000'], ['Content-Type', 'application/json'], ['Content-Length', '2']]), '{}');
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.body).error).toBe('unknown_tenant');
  });

  it('refuses two Host lines, even when both are valid', async () => {
    const answer = await server.send(head('GET', '/.well-known/platform.json', [['Host', HOST], ['Host', 'zq7.test']]));
    expectRefusedAndNotReflected(answer, 'zq7.test');
  });

  it('refuses a request without a Host', async () => {
    const answer = await server.send('GET /.well-known/platform.json HTTP/1.0');
    expect(answer.status).toBe(400);
  });

  it('refuses an absolute-form target naming another authority', async () => {
    const answer = await server.send(head('GET', 'http://zq7.test/.well-known/platform.json', [['Host', HOST]]));
    expectRefusedAndNotReflected(answer, 'zq7.test');
  });

  it('refuses before tenancy: an unknown but malformed host is 400, not 404 unknown_tenant', async () => {
    const res = await call(platform, 'get', '/platform/v1/organisation', { host: 'zq7..test' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_request', message: 'the Host header is not a valid host name and port', field: 'headers.host' });
  });
});

describe('X-Forwarded-Host and X-Forwarded-Proto from a trusted proxy (TRUST_PROXY=loopback)', () => {
  it.each(MALFORMED)('refuses a forwarded host with %s, reflecting it nowhere', async (_label, value) => {
    const answer = await server.send(head('GET', '/.well-known/platform.json', [['Host', 'internal:3000'], ['X-Forwarded-Host', value]]));
    expectRefusedAndNotReflected(answer, value);
  });

  it('refuses two X-Forwarded-Host lines (Node would join them into a list)', async () => {
    const answer = await server.send(head('GET', '/.well-known/platform.json', [['Host', 'internal'], ['X-Forwarded-Host', HOST], ['X-Forwarded-Host', 'zq7.test']]));
    expectRefusedAndNotReflected(answer, 'zq7.test');
  });

  it.each([['ftp'], ['zq7'], ['https, http'], ['https,https'], ['HTTPS:'], ['']])('refuses X-Forwarded-Proto %p', async (value) => {
    const answer = await server.send(head('GET', '/.well-known/platform.json', [['Host', HOST], ['X-Forwarded-Proto', value]]));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_request', field: 'headers.x-forwarded-proto' });
    if (value.length >= 3) expect(answer.raw).not.toContain(value);
  });

  it('takes the forwarded host and scheme, canonical, default port dropped', async () => {
    const answer = await server.send(
      head('GET', '/.well-known/platform.json', [['Host', 'internal:3000'], ['X-Forwarded-Host', `${HOST.toUpperCase()}:443`], ['X-Forwarded-Proto', 'HTTPS']]),
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).apiBaseUrl).toBe(`https://${HOST}`);
  });

  it('still refuses a malformed Host under a valid forwarded host', async () => {
    const answer = await server.send(head('GET', '/.well-known/platform.json', [['Host', 'zq7@internal'], ['X-Forwarded-Host', HOST]]));
    expectRefusedAndNotReflected(answer, 'zq7@internal');
  });
});

describe('without a trusted proxy', () => {
  let direct: TestPlatform;
  let directServer: RawServer;

  beforeAll(async () => {
    direct = await startPlatform();
    await createOrganisation(direct, { name: 'Direct', hosts: [HOST] });
    directServer = await listen(direct.app);
  });
  afterAll(async () => {
    await directServer.close();
    await direct.close();
  });

  it.each(MALFORMED)('ignores a forwarded host with %s: the Host decides, and the value is reflected nowhere', async (_label, value) => {
    const answer = await directServer.send(
      head('GET', '/.well-known/platform.json', [['Host', HOST], ['X-Forwarded-Host', value], ['X-Forwarded-Proto', 'zq7']]),
    );
    // Node's parser refuses a few of these values outright (control characters); the others are served by Host.
    if (answer.status === 400) expect(answer.body).toBe('');
    else {
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body).apiBaseUrl).toBe(`http://${HOST}`);
    }
    expect(answer.raw).not.toContain('zq7');
    expect(withoutRawRequest(direct.logs)).not.toContain('zq7');
  });

  it.each(MALFORMED)('still refuses a Host with %s', async (_label, value) => {
    const answer = await directServer.send(head('GET', '/.well-known/platform.json', [['Host', value]]));
    expect(answer.status).toBe(400);
    expect(answer.raw).not.toContain('zq7');
  });
});

describe('on Cloud (PLATFORM_BASE_URL)', () => {
  let cloud: TestPlatform;
  let cloudServer: RawServer;

  beforeAll(async () => {
    cloud = await startPlatform({ env: { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.test' } });
    cloudServer = await listen(cloud.app);
  });
  afterAll(async () => {
    await cloudServer.close();
    await cloud.close();
  });

  it('builds every URL from the base URL, whatever valid Host came', async () => {
    const answer = await cloudServer.send(head('GET', '/.well-known/platform.json', [['Host', 'internal-lb:8080']]));
    expect(JSON.parse(answer.body).apiBaseUrl).toBe('https://api.platform.test');
  });

  it.each(MALFORMED.slice(0, 12))('still refuses a Host with %s (RFC 9112 3.2)', async (_label, value) => {
    const answer = await cloudServer.send(head('GET', '/.well-known/platform.json', [['Host', value]]));
    expect(answer.status).toBe(400);
    expect(answer.raw).not.toContain('zq7');
  });
});

describe('tenancy and DPoP read the same host', () => {
  it('a forwarded host selects the organisation and is the only URL a proof may name', async () => {
    const other = await createOrganisation(platform, { name: 'Other', hosts: ['other-origin.test'] });
    const organisation = (await platform.services.organisations.findByHost(HOST))!;
    const person = await createPerson(platform, organisation.id);
    const device = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, alg: 'ES256' });
    const get = async (htu: string, headers: Record<string, string>) =>
      call(platform, 'get', '/platform/v1/organisation', {
        host: 'other-origin.test',
        headers: { ...(await deviceHeaders(device, 'GET', htu)), ...headers },
      });
    // The forwarded host picks this organisation; a proof for the Host's URL does not pass.
    const forwarded = { 'X-Forwarded-Host': `${HOST.toUpperCase()}:443`, 'X-Forwarded-Proto': 'https' };
    const refused = await get('http://other-origin.test/platform/v1/organisation', forwarded);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_dpop_proof');
    const served = await get(`https://${HOST}/platform/v1/organisation`, forwarded);
    expect(served.status).toBe(200);
    expect(served.body.id).toBe(organisation.id);
    // Without the forwarded host, the Host picks the other organisation, and the token is not its.
    const elsewhere = await get('http://other-origin.test/platform/v1/organisation', {});
    expect(elsewhere.status).toBe(401);
    expect(other.id).not.toBe(organisation.id);
  });
});
