import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { banner, DEV_PERSON, startDevIdp, type DevIdp } from '../../scripts/dev/idp.mjs';
import { runCli } from '../../src/cli/program.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { PageBrowser } from '../support/cookie-jar.js';
import { askForCode, pollForTokens } from '../support/devices.js';
import { createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';
import { recordSecret } from '../support/suite-record.js';

/**
 * `npm run dev:idp`, the identity provider for trying a self-hosted install: it starts, says it is
 * for trying only, prints the `platform org configure …` line, and that line, run as printed,
 * connects it: its test person signs in at /device and approves a workbench, end to end.
 */

const HOST = 'localhost';
let platform: TestPlatform;
let organisation: OrganisationRecord;
let idp: DevIdp;

beforeAll(async () => {
  platform = await startPlatform({ env: { RATE_LIMITS_ENABLED: 'false' } });
  organisation = await createOrganisation(platform, { name: 'Try it', hosts: [HOST] });
  idp = await startDevIdp({ port: 0, platformOrigin: `http://${HOST}`, host: HOST });
  recordSecret(DEV_PERSON.password);
});

afterAll(async () => {
  await idp?.close();
  await platform?.close();
});

/** Runs a printed shell line (`VAR=value npx platform …`) through the command line, in process. */
async function runPrinted(line: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const words = line.split(' ');
  const env: Record<string, string> = { PLATFORM_DEPLOYMENT: 'self-hosted', DATABASE_URL: platform.database.url };
  while (/^[A-Z_]+=/.test(words[0]!)) {
    const [name, value] = words.shift()!.split('=') as [string, string];
    env[name] = value;
  }
  expect(words.slice(0, 2)).toEqual(['npx', 'platform']);
  let stdout = '';
  let stderr = '';
  const code = await runCli(words.slice(2), { env, dataSource: platform.dataSource, stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text), log: () => undefined });
  return { code, stdout, stderr };
}

/** The browser's way through the provider's login and consent pages, with an email and password; answers the redirect back (or the refusal page). */
async function throughProvider(authorizeUrl: string, email: string, password: string): Promise<{ back?: URL; refused?: number }> {
  const jar = new Map<string, string>();
  let next: { url: string; method: 'GET' | 'POST'; body?: URLSearchParams } = { url: authorizeUrl, method: 'GET' };
  for (let step = 0; step < 12; step++) {
    const res = await fetch(next.url, {
      method: next.method,
      redirect: 'manual',
      headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; '), ...(next.body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      ...(next.body ? { body: next.body } : {}),
    });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      jar.set(pair!.slice(0, pair!.indexOf('=')), pair!.slice(pair!.indexOf('=') + 1));
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      const target = new URL(location, next.url);
      if (target.origin !== idp.issuer) return { back: target };
      next = { url: target.href, method: 'GET' };
      continue;
    }
    const page = await res.text();
    if (res.status !== 200) return { refused: res.status };
    const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
    const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
    if (!action || !prompt) throw new Error(`no form on the provider's page: ${page.slice(0, 300)}`);
    const body = new URLSearchParams({ prompt, ...(prompt === 'login' ? { login: email, password } : {}) });
    next = { url: new URL(action.replace(/&amp;/g, '&'), next.url).href, method: 'POST', body };
  }
  throw new Error('the provider kept redirecting');
}

describe('npm run dev:idp', () => {
  it('says plainly it is for trying, shows its test person, and prints the configure line', () => {
    const text = banner(idp, `http://${HOST}:3000`);
    expect(text).toMatch(/^Development identity provider at http:\/\/127\.0\.0\.1:\d+: FOR TRYING ONLY, NEVER FOR PRODUCTION$/m);
    expect(text).toContain(`Test person:  ${DEV_PERSON.email}   password: ${DEV_PERSON.password}`);
    expect(text).toContain(`  ${idp.configure}\n`);
    expect(idp.configure).toMatch(/^OIDC_ALLOW_HTTP_LOOPBACK=true npx platform org configure localhost --issuer http:\/\/127\.0\.0\.1:\d+ --client-id \S+ --api-scope \S+ --audience \S+ --role-claim \S+$/);
  });

  it('connects with the printed line, then its person signs in at /device and approves a workbench', async () => {
    const configured = await runPrinted(idp.configure);
    expect(configured.code).toBe(0);
    expect(configured.stderr).toMatch(/^database: [^\n]+\n$/);
    expect(configured.stdout).toContain(`sign-in:  issuer ${idp.issuer}`);

    const asked = await askForCode(platform, { host: HOST, body: { workspaceId: 'ws-try', name: 'Trying workbench' } });
    recordSecret(asked.device_code);
    const browser = new PageBrowser(platform.app, HOST);
    const start = await browser.post('/device/sign-in', { user_code: asked.user_code }, { Origin: `http://${HOST}` });
    expect(start.status).toBe(303);

    // A wrong password is refused at the provider.
    expect(await throughProvider(start.headers.location!, DEV_PERSON.email, 'wrong')).toEqual({ refused: 401 });
    expect(await throughProvider(start.headers.location!, 'someone@else.test', DEV_PERSON.password)).toEqual({ refused: 401 });

    const { back } = await throughProvider(start.headers.location!, DEV_PERSON.email, DEV_PERSON.password);
    expect(back?.origin).toBe(`http://${HOST}`);
    const landed = await browser.get(`${back!.pathname}${back!.search}`);
    expect(landed.status).toBe(303);
    const page = await browser.get('/device');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Trying workbench');
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const decided = await browser.post('/device/decision', { csrf, user_code: asked.user_code, decision: 'approve' }, { Origin: `http://${HOST}` });
    expect(decided.status).toBe(303);

    const tokens = await pollForTokens(platform, asked.device_code, { host: HOST });
    expect(tokens.status).toBe(200);
    // The person is the provider's test person, owner by its role claim.
    expect(await platform.services.organisations.members(organisation.id)).toEqual([expect.objectContaining({ email: DEV_PERSON.email, role: 'owner' })]);
  });

  it('starts as a command and prints its banner', async () => {
    const child = spawn(process.execPath, ['scripts/dev/idp.mjs', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => void (err += chunk.toString('utf8')));
    const deadline = Date.now() + 20_000;
    while (!out.includes('Ctrl-C stops') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    expect(out).toContain('FOR TRYING ONLY, NEVER FOR PRODUCTION');
    expect(out).toMatch(/npx platform org configure localhost --issuer http:\/\/127\.0\.0\.1:\d+ /);
    expect(out).toContain('Then sign in at http://localhost:3000/device.');
    // No library warning with it (an unsupported runtime aside: that one is real).
    expect(err.replace(/^oidc-provider WARNING: Unsupported runtime.*\n/m, '')).toBe('');
  }, 30_000);
});
