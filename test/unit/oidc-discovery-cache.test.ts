import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OrganisationOidcVerifier, PersonTokenError } from '../../adapters/identity/organisation-oidc.js';
import { ManualClock } from '../../src/util/clock.js';

// A provider that is down (its discovery answers 503) is asked once, not once per request.
let server: Server;
let issuer: string;
let discoveries = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url?.startsWith('/.well-known/openid-configuration')) discoveries += 1;
    res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('provider discovery', () => {
  it('remembers a failure for a few seconds instead of asking again on every request', async () => {
    const verifier = new OrganisationOidcVerifier({
      clock: new ManualClock(),
      clockSkewSeconds: 30,
      jwksCooldownMs: 0,
      jwksCacheMaxAgeMs: 600_000,
      allowHttpLoopbackIssuers: true,
      httpTimeoutMs: 2_000,
    });
    const settings = { issuer, clientId: 'c', audience: 'a', apiScope: 's' };
    for (let i = 0; i < 5; i++) {
      await expect(verifier.verify('a.b.c', settings)).rejects.toBeInstanceOf(PersonTokenError);
    }
    expect(discoveries).toBe(1);
  });
});
