import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Command, CommanderError } from 'commander';
import { registerDiscoverCommand } from '../../src/cli/discover.js';
import { discover, DiscoveryError, type DiscoverOptions } from '../../src/modules/discovery/client.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';

const DOCUMENT = {
  edition: 'enterprise',
  apiBaseUrl: 'https://platform.acme.test',
  organisation: { id: 'org_acme', name: 'Acme' },
  auth: { issuer: 'https://login.acme.test', clientId: 'acme-workbench', apiScope: 'api://acme/platform' },
  dpopSigningAlgs: ['ES256', 'EdDSA'],
};

let dns: TestDnsServer;
/** Every URL the client fetched in the current test. */
let fetched: string[];

/** Answers every request with the discovery document, and remembers where it was asked. */
const documentFetch: typeof fetch = async (input) => {
  fetched.push(input instanceof Request ? input.url : String(input));
  return Response.json(DOCUMENT);
};

beforeAll(async () => {
  dns = await startDnsServer();
});
afterAll(() => dns.close());
beforeEach(() => {
  fetched = [];
});

function run(email: string, options: DiscoverOptions = {}) {
  return discover(email, { dnsServers: [dns.address], fetch: documentFetch, ...options });
}

async function refusal(promise: Promise<unknown>): Promise<DiscoveryError> {
  const error = await promise.then(
    () => {
      throw new Error('discovery succeeded where it had to be refused');
    },
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DiscoveryError);
  return error as DiscoveryError;
}

describe('the work email', () => {
  it.each([
    [''],
    ['someone'],
    ['someone@'],
    ['@acme.test'],
    ['some@one@acme.test'],
    ['some one@acme.test'],
    ['someone@acme'],
    ['someone@localhost'],
    ['someone@acme..test'],
    ['someone@-acme.test'],
    ['someone@acme_corp.test'],
    ['someone@acme.test.'],
    ['someone@[127.0.0.1]'],
    ['someone@10.0.0.1'],
    ['someone@xn--zz.test'],
    [`someone@${'a'.repeat(64)}.test`],
  ])('refuses %j as invalid_email without asking DNS', async (email) => {
    dns.serve({});
    const error = await refusal(run(email));
    expect(error.code).toBe('invalid_email');
    expect(error.message).toContain('is not a work email address');
    expect(dns.questions).toEqual([]);
    expect(fetched).toEqual([]);
  });

  it('asks DNS in lower case and in A-labels for an internationalised domain', async () => {
    dns.serve({ 'platform-discover.xn--bcher-kva.test': { txt: ['v=platform1; url=https://platform.xn--bcher-kva.test'] } });
    const result = await run('  Someone@Bücher.TEST ');
    expect(result.baseUrl).toBe('https://platform.xn--bcher-kva.test');
    expect(new Set(dns.questions)).toEqual(new Set(['CNAME platform-discover.xn--bcher-kva.test', 'TXT platform-discover.xn--bcher-kva.test']));
  });
});

describe('the DNS record', () => {
  it('follows a CNAME to https://<target>', async () => {
    dns.serve({ 'platform-discover.acme.test': { cname: 'platform.acme.test' } });
    const result = await run('someone@acme.test');
    expect(result).toEqual({ baseUrl: 'https://platform.acme.test', source: 'cname', document: DOCUMENT });
    expect(fetched).toEqual(['https://platform.acme.test/.well-known/platform.json']);
  });

  it('reads a TXT record, port included', async () => {
    dns.serve({ 'platform-discover.acme.test': { txt: ['v=platform1; url=https://platform.acme.test:8443'] } });
    const result = await run('someone@acme.test');
    expect(result).toEqual({ baseUrl: 'https://platform.acme.test:8443', source: 'txt', document: DOCUMENT });
    expect(fetched).toEqual(['https://platform.acme.test:8443/.well-known/platform.json']);
  });

  it.each([
    ['no space', ['v=platform1;url=https://platform.acme.test']],
    ['spaces and tabs around ;', ['v=platform1 \t;  url=https://platform.acme.test']],
    ['space around the record', ['  v=platform1; url=https://platform.acme.test  ']],
    ['a trailing slash', ['v=platform1; url=https://platform.acme.test/']],
    ['several strings in one record', [['v=platform1; url=https://plat', 'form.acme.test']]],
  ])('accepts a TXT record with %s', async (_case, txt) => {
    dns.serve({ 'platform-discover.acme.test': { txt } });
    const result = await run('someone@acme.test');
    expect(result.baseUrl).toBe('https://platform.acme.test');
    expect(result.source).toBe('txt');
  });

  it('prefers the TXT record when the name also has a CNAME', async () => {
    dns.serve({ 'platform-discover.acme.test': { cname: 'edge.cdn.test', txt: ['v=platform1; url=https://platform.acme.test'] } });
    const result = await run('someone@acme.test');
    expect(result.source).toBe('txt');
    expect(fetched).toEqual(['https://platform.acme.test/.well-known/platform.json']);
  });

  it('prefers a TXT record found at the CNAME target (a TXT question follows the alias)', async () => {
    dns.serve({
      'platform-discover.acme.test': { cname: 'edge.cdn.test' },
      'edge.cdn.test': { txt: ['v=spf1 -all', 'v=platform1; url=https://platform.acme.test'] },
    });
    const result = await run('someone@acme.test');
    expect(result).toMatchObject({ baseUrl: 'https://platform.acme.test', source: 'txt' });
  });

  it('ignores TXT records of other versions and purposes, and uses the CNAME', async () => {
    dns.serve({
      'platform-discover.acme.test': {
        cname: 'platform.acme.test',
        txt: ['v=platform2; url=https://next.acme.test', 'v=platform10; url=https://other.acme.test', 'google-site-verification=abc123'],
      },
    });
    const result = await run('someone@acme.test');
    expect(result).toMatchObject({ baseUrl: 'https://platform.acme.test', source: 'cname' });
  });

  it('answers no_record when only TXT records of another version exist, saying they were ignored', async () => {
    dns.serve({ 'platform-discover.acme.test': { txt: ['v=platform2; url=https://next.acme.test', 'hello'] } });
    const error = await refusal(run('someone@acme.test'));
    expect(error.code).toBe('no_record');
    expect(error.message).toBe(
      'platform-discover.acme.test has neither a CNAME nor a "v=platform1" TXT record (2 TXT records of another kind ignored)',
    );
    expect(fetched).toEqual([]);
  });

  it('answers no_record when the name does not exist (NXDOMAIN)', async () => {
    dns.serve({ 'acme.test': { txt: ['v=spf1 -all'] } });
    const error = await refusal(run('someone@acme.test'));
    expect(error.code).toBe('no_record');
    expect(error.message).toBe('platform-discover.acme.test has neither a CNAME nor a "v=platform1" TXT record');
  });

  it('answers no_record when the name exists without records (empty answer)', async () => {
    dns.serve({ 'platform-discover.acme.test': {} });
    const error = await refusal(run('someone@acme.test'));
    expect(error.code).toBe('no_record');
    expect(fetched).toEqual([]);
  });

  it.each([
    ['http', 'v=platform1; url=http://platform.acme.test', 'the url must use https'],
    ['another scheme', 'v=platform1; url=ftp://platform.acme.test', 'the url must use https'],
    ['a path', 'v=platform1; url=https://platform.acme.test/sso', 'bare origin'],
    ['a query', 'v=platform1; url=https://platform.acme.test?tenant=acme', 'bare origin'],
    ['an empty query', 'v=platform1; url=https://platform.acme.test?', 'bare origin'],
    ['a fragment', 'v=platform1; url=https://platform.acme.test#', 'bare origin'],
    ['credentials', 'v=platform1; url=https://user:secret@platform.acme.test', 'credentials'],
    ['a user name', 'v=platform1; url=https://user@platform.acme.test', 'credentials'],
    ['no url', 'v=platform1', 'exactly the two fields'],
    ['garbage after the tag', 'v=platform1; garbage', 'exactly the two fields'],
    ['no ; between the fields', 'v=platform1 url=https://platform.acme.test', 'exactly the two fields'],
    ['a third field', 'v=platform1; url=https://platform.acme.test; region=eu', 'exactly the two fields'],
    ['a trailing ;', 'v=platform1; url=https://platform.acme.test;', 'exactly the two fields'],
    ['a space after url=', 'v=platform1; url= https://platform.acme.test', 'exactly the two fields'],
    ['a mis-cased tag', 'V=Platform1; url=https://platform.acme.test', 'exactly the two fields'],
    ['a url that is not one', 'v=platform1; url=platform.acme.test', 'the url is not a URL'],
    ['a wildcard host', 'v=platform1; url=https://*.acme.test', 'does not name a host'],
    ['an underscore in the host', 'v=platform1; url=https://plat_form.acme.test', 'does not name a host'],
  ])('refuses a v=platform1 TXT record with %s as malformed_record, without fetching', async (_case, record, why) => {
    dns.serve({ 'platform-discover.acme.test': { txt: [record] } });
    const error = await refusal(run('someone@acme.test'));
    expect(error.code).toBe('malformed_record');
    expect(error.message).toContain(JSON.stringify(record));
    expect(error.message).toContain(why);
    expect(fetched).toEqual([]);
  });

  it('refuses a malformed TXT record even beside a valid CNAME and a valid TXT record', async () => {
    dns.serve({
      'platform-discover.acme.test': {
        cname: 'platform.acme.test',
        txt: ['v=platform1; url=https://platform.acme.test', 'v=platform1; url=http://platform.acme.test'],
      },
    });
    const error = await refusal(run('someone@acme.test'));
    expect(error.code).toBe('malformed_record');
    expect(fetched).toEqual([]);
  });

  it('refuses TXT records that name different platforms as conflicting_records', async () => {
    dns.serve({
      'platform-discover.acme.test': { txt: ['v=platform1; url=https://platform.acme.test', 'v=platform1; url=https://evil.example'] },
    });
    const error = await refusal(run('someone@acme.test'));
    expect(error.code).toBe('conflicting_records');
    expect(error.message).toContain('https://platform.acme.test');
    expect(error.message).toContain('https://evil.example');
    expect(fetched).toEqual([]);
  });

  it('accepts several TXT records that name the same origin in different spellings', async () => {
    dns.serve({
      'platform-discover.acme.test': {
        txt: ['v=platform1; url=https://Platform.ACME.test', 'v=platform1; url=https://platform.acme.test:443/'],
      },
    });
    const result = await run('someone@acme.test');
    expect(result.baseUrl).toBe('https://platform.acme.test');
  });

  it('refuses a CNAME whose target is written as an IP address', async () => {
    dns.serve({ 'platform-discover.acme.test': { cname: '10.0.0.7' } });
    const error = await refusal(run('someone@acme.test'));
    expect(error.code).toBe('malformed_record');
    expect(fetched).toEqual([]);
  });

  it('answers lookup_failed, not no_record, when the DNS server fails', async () => {
    dns.serve({ 'platform-discover.acme.test': { fail: 'SERVFAIL' } });
    const error = await refusal(run('someone@acme.test'));
    expect(error.code).toBe('lookup_failed');
    expect(error.message).toContain('ESERVFAIL');
    expect(fetched).toEqual([]);
  });

  describe('http on loopback (allowHttpLoopback)', () => {
    it('is refused unless enabled', async () => {
      dns.serve({ 'platform-discover.acme.test': { txt: ['v=platform1; url=http://127.0.0.1:8080'] } });
      expect((await refusal(run('someone@acme.test'))).code).toBe('malformed_record');
    });

    it('is accepted for a loopback host when enabled', async () => {
      dns.serve({ 'platform-discover.acme.test': { txt: ['v=platform1; url=http://127.0.0.1:8080'] } });
      const result = await run('someone@acme.test', { allowHttpLoopback: true });
      expect(result.baseUrl).toBe('http://127.0.0.1:8080');
    });

    it('still refuses http for any other host when enabled', async () => {
      dns.serve({ 'platform-discover.acme.test': { txt: ['v=platform1; url=http://platform.acme.test'] } });
      expect((await refusal(run('someone@acme.test', { allowHttpLoopback: true }))).code).toBe('malformed_record');
    });

    it('reaches a loopback CNAME target over http on the given port, and anything else over https', async () => {
      dns.serve({
        'platform-discover.acme.test': { cname: 'localhost' },
        'platform-discover.globex.test': { cname: 'platform.globex.test' },
      });
      expect((await run('someone@acme.test', { allowHttpLoopback: true, cnamePort: 8080 })).baseUrl).toBe('http://localhost:8080');
      expect((await run('someone@globex.test', { allowHttpLoopback: true })).baseUrl).toBe('https://platform.globex.test');
      expect((await run('someone@acme.test')).baseUrl).toBe('https://localhost');
    });
  });
});

describe('the document', () => {
  let server: Server;
  let origin: string;
  let handle: (req: IncomingMessage, res: ServerResponse) => void;
  let requests: string[];

  beforeAll(async () => {
    server = createServer((req, res) => {
      requests.push(`${req.headers.host} ${req.url}`);
      handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    requests = [];
    dns.serve({ 'platform-discover.acme.test': { txt: [`v=platform1; url=${origin}`] } });
  });

  /** The real fetch, over plain http to the loopback server above. */
  function fetchFromServer(options: DiscoverOptions = {}) {
    return discover('someone@acme.test', { dnsServers: [dns.address], allowHttpLoopback: true, ...options });
  }

  function answer(status: number, body: string, headers: Record<string, string> = { 'Content-Type': 'application/json' }) {
    handle = (_req, res) => res.writeHead(status, headers).end(body);
  }

  it('returns the document with the fields the spec does not show kept', async () => {
    answer(200, JSON.stringify({ ...DOCUMENT, futureField: { x: 1 } }), { 'Content-Type': 'application/json; charset=utf-8' });
    const result = await fetchFromServer();
    expect(result.document).toEqual({ ...DOCUMENT, futureField: { x: 1 } });
    expect(requests).toEqual([`127.0.0.1:${new URL(origin).port} /.well-known/platform.json`]);
  });

  it('follows a redirect within the same origin', async () => {
    handle = (req, res) => {
      if (req.url === '/.well-known/platform.json') res.writeHead(301, { Location: '/.well-known/platform.json?v=2' }).end();
      else res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(DOCUMENT));
    };
    const result = await fetchFromServer();
    expect(result.document).toEqual(DOCUMENT);
    expect(requests).toHaveLength(2);
  });

  it('refuses a redirect to another origin without following it', async () => {
    // The same server under another name is another origin all the same.
    answer(302, '', { Location: `http://localhost:${new URL(origin).port}/.well-known/platform.json` });
    const error = await refusal(fetchFromServer());
    expect(error.code).toBe('fetch_failed');
    expect(error.message).toContain('redirects to another origin');
    expect(requests).toHaveLength(1);
  });

  it('gives up on a redirect loop', async () => {
    answer(307, '', { Location: '/.well-known/platform.json' });
    const error = await refusal(fetchFromServer());
    expect(error.code).toBe('fetch_failed');
    expect(error.message).toContain('redirected more than 3 times');
    expect(requests).toHaveLength(4);
  });

  it('reports the error code of a refusal, so unknown_tenant is recognisable', async () => {
    answer(404, JSON.stringify({ error: 'unknown_tenant', message: 'no organisation is served at this host name' }));
    const error = await refusal(fetchFromServer());
    expect(error.code).toBe('fetch_failed');
    expect(error.message).toBe(`${origin}/.well-known/platform.json answered 404 (unknown_tenant)`);
  });

  it('answers fetch_failed for a server error', async () => {
    answer(503, 'down', { 'Content-Type': 'text/plain' });
    const error = await refusal(fetchFromServer());
    expect(error.code).toBe('fetch_failed');
    expect(error.message).toBe(`${origin}/.well-known/platform.json answered 503`);
  });

  it('answers fetch_failed when nothing listens there', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    dns.serve({ 'platform-discover.acme.test': { txt: [`v=platform1; url=http://127.0.0.1:${port}`] } });
    const error = await refusal(fetchFromServer());
    expect(error.code).toBe('fetch_failed');
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('answers fetch_failed when the server does not answer in time', async () => {
    handle = () => undefined;
    const error = await refusal(fetchFromServer({ fetchTimeoutMs: 150 }));
    expect(error.code).toBe('fetch_failed');
    expect(error.message).toBe(`${origin}/.well-known/platform.json did not answer within 150 ms`);
  });

  it('refuses another media type', async () => {
    answer(200, JSON.stringify(DOCUMENT), { 'Content-Type': 'text/html' });
    const error = await refusal(fetchFromServer());
    expect(error.code).toBe('invalid_document');
    expect(error.message).toContain('"text/html", not application/json');
  });

  it('refuses a body that is not JSON', async () => {
    answer(200, '<html>sign in</html>');
    const error = await refusal(fetchFromServer());
    expect(error.code).toBe('invalid_document');
    expect(error.message).toContain('not JSON');
  });

  it('refuses a body larger than the cap, whether announced or streamed', async () => {
    const big = JSON.stringify({ ...DOCUMENT, padding: 'x'.repeat(2_000) });
    answer(200, big);
    expect((await refusal(fetchFromServer({ maxDocumentBytes: 1_000 }))).message).toContain('answered more than 1000 bytes');
    handle = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(big.slice(0, 900));
      res.end(big.slice(900));
    };
    const streamed = await refusal(fetchFromServer({ maxDocumentBytes: 1_000 }));
    expect(streamed.code).toBe('invalid_document');
    expect(streamed.message).toContain('answered more than 1000 bytes');
    answer(200, big);
    expect((await fetchFromServer({ maxDocumentBytes: big.length })).document).toMatchObject({ edition: 'enterprise' });
  });

  it.each([
    ['an array', [], 'document must be object'],
    ['no edition', { dpopSigningAlgs: ['ES256'] }, 'document.edition is required'],
    ['no dpopSigningAlgs', { edition: 'enterprise' }, 'document.dpopSigningAlgs is required'],
    ['an auth.clientId that is a number', { ...DOCUMENT, auth: { clientId: 42 } }, 'document.auth.clientId'],
    ['dpopSigningAlgs that is a string', { ...DOCUMENT, dpopSigningAlgs: 'ES256' }, 'document.dpopSigningAlgs'],
  ])('refuses a document with %s', async (_case, body, why) => {
    answer(200, JSON.stringify(body));
    const error = await refusal(fetchFromServer());
    expect(error.code).toBe('invalid_document');
    expect(error.message).toContain(why);
  });
});

describe('the discover command', () => {
  function program(options: DiscoverOptions = { fetch: documentFetch }) {
    const output = { stdout: '', stderr: '' };
    const command = new Command('platform')
      .exitOverride()
      .configureOutput({ writeOut: (text) => void (output.stdout += text), writeErr: (text) => void (output.stderr += text) });
    registerDiscoverCommand(command, { options, write: (text) => void (output.stdout += text) });
    return { command, output };
  }

  async function commanderError(promise: Promise<unknown>): Promise<CommanderError> {
    const error = await promise.then(
      () => {
        throw new Error('the command succeeded where it had to fail');
      },
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(CommanderError);
    return error as CommanderError;
  }

  it('prints the result as JSON on stdout, asking the given DNS server', async () => {
    dns.serve({ 'platform-discover.acme.test': { cname: 'platform.acme.test' } });
    const { command, output } = program();
    await command.parseAsync(['discover', 'someone@acme.test', '--dns-server', dns.address], { from: 'user' });
    expect(JSON.parse(output.stdout)).toEqual({ baseUrl: 'https://platform.acme.test', source: 'cname', document: DOCUMENT });
    expect(output.stderr).toBe('');
    expect(dns.questions).toContain('CNAME platform-discover.acme.test');
  });

  it('takes --dns-server more than once and asks past one that refuses', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const refusing = `127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    dns.serve({ 'platform-discover.acme.test': { cname: 'platform.acme.test' } });
    // Both orders: keeping only the first or only the last value would fail one of them.
    for (const servers of [[refusing, dns.address], [dns.address, refusing]]) {
      const { command, output } = program();
      const flags = servers.flatMap((server) => ['--dns-server', server]);
      await command.parseAsync(['discover', 'someone@acme.test', ...flags], { from: 'user' });
      expect(JSON.parse(output.stdout)).toMatchObject({ baseUrl: 'https://platform.acme.test' });
    }
  });

  it('fails with exit code 1 and one line on stderr', async () => {
    dns.serve({});
    const { command, output } = program();
    const error = await commanderError(command.parseAsync(['discover', 'someone@acme.test', '--dns-server', dns.address], { from: 'user' }));
    expect(error.exitCode).toBe(1);
    expect(error.code).toBe('discover.no_record');
    expect(output.stderr).toBe('error: no_record: platform-discover.acme.test has neither a CNAME nor a "v=platform1" TXT record\n');
    expect(output.stdout).toBe('');
  });

  it('refuses a --dns-server that is not an IP address before asking anything', async () => {
    dns.serve({ 'platform-discover.acme.test': { cname: 'platform.acme.test' } });
    for (const value of ['dns.acme.test', '127.0.0.1:99999', '::1:53x', '[127.0.0.1]:53']) {
      const { command, output } = program();
      const error = await commanderError(command.parseAsync(['discover', 'someone@acme.test', '--dns-server', value], { from: 'user' }));
      expect(error.exitCode).toBe(1);
      expect(output.stderr).toContain('expected an IP address with an optional port');
      expect(output.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(dns.questions).toEqual([]);
  });
});
