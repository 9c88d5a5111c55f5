import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { discover, DiscoveryError } from '../../src/modules/discovery/client.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * Discovery end to end: a real DNS server on loopback names the platform, and the real app,
 * listening on loopback over plain http, serves the organisation's document. The platform picks
 * the organisation by host name, so the two organisations live at the two loopback names:
 * `127.0.0.1` (reached through a TXT record) and `localhost` (through a CNAME, which cannot
 * carry the ephemeral port: the client's `cnamePort` supplies it).
 */

let dns: TestDnsServer;
let platform: TestPlatform;
let server: Server;
let port: number;
let acme: OrganisationRecord;
let globex: OrganisationRecord;

async function listen(app: Parameters<typeof createServer>[1]): Promise<{ server: Server; port: number }> {
  const listening = createServer(app);
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  return { server: listening, port: (listening.address() as AddressInfo).port };
}

async function stop(listening: Server): Promise<void> {
  listening.closeAllConnections();
  await new Promise((resolve) => listening.close(resolve));
}

beforeAll(async () => {
  dns = await startDnsServer();
  platform = await startPlatform();
  acme = await createOrganisation(platform, {
    name: 'Acme',
    hosts: ['127.0.0.1'],
    oidc: { issuer: 'https://login.acme.test', clientId: 'acme-workbench', apiScope: 'api://acme/platform', audience: 'api://acme' },
  });
  globex = await createOrganisation(platform, {
    name: 'Globex',
    hosts: ['localhost'],
    oidc: { issuer: 'https://sso.globex.test', clientId: 'globex-workbench', apiScope: 'api://globex/platform', audience: 'api://globex' },
  });
  ({ server, port } = await listen(platform.app));
});
afterAll(async () => {
  await stop(server);
  await platform.close();
  await dns.close();
});

describe('discovery against the real platform', () => {
  it('follows a TXT record to the organisation served at that host', async () => {
    dns.serve({ 'platform-discover.acme.test': { txt: ['v=spf1 -all', `v=platform1; url=http://127.0.0.1:${port}`] } });
    const result = await discover('jane.doe@acme.test', { dnsServers: [dns.address], allowHttpLoopback: true });
    expect(result).toEqual({
      baseUrl: `http://127.0.0.1:${port}`,
      source: 'txt',
      document: {
        edition: 'enterprise',
        apiBaseUrl: `http://127.0.0.1:${port}`,
        organisation: { id: acme.id, name: 'Acme' },
        auth: { issuer: 'https://login.acme.test', clientId: 'acme-workbench', apiScope: 'api://acme/platform' },
        dpopSigningAlgs: ['ES256', 'EdDSA'],
      },
    });
  });

  it('follows a CNAME to the organisation served at its target', async () => {
    dns.serve({ 'platform-discover.globex.test': { cname: 'localhost' } });
    const result = await discover('hank@globex.test', { dnsServers: [dns.address], allowHttpLoopback: true, cnamePort: port });
    expect(result.baseUrl).toBe(`http://localhost:${port}`);
    expect(result.source).toBe('cname');
    expect(result.document).toMatchObject({
      edition: 'enterprise',
      organisation: { id: globex.id, name: 'Globex' },
      auth: { clientId: 'globex-workbench', apiScope: 'api://globex/platform' },
    });
  });

  it('reports the platform refusing a host it does not serve (unknown_tenant)', async () => {
    const empty = await startPlatform();
    const other = await listen(empty.app);
    try {
      dns.serve({ 'platform-discover.initech.test': { txt: [`v=platform1; url=http://127.0.0.1:${other.port}`] } });
      const error = await discover('peter@initech.test', { dnsServers: [dns.address], allowHttpLoopback: true }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(DiscoveryError);
      expect(error).toMatchObject({
        code: 'fetch_failed',
        message: `http://127.0.0.1:${other.port}/.well-known/platform.json answered 404 (unknown_tenant)`,
      });
    } finally {
      await stop(other.server);
      await empty.close();
    }
  });
});
