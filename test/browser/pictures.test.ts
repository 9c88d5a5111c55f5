import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { chromium, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import { checkSvg } from '../../src/modules/pictures/svg/pipeline.js';

/**
 * Every picture the SVG rules accept (the legitimate corpus, the accepted real-tool files, and
 * the attack vectors whose index row says they are accepted in an inert normalised form), stored
 * as the pipeline normalised it, and shown by headless Chromium the three ways a picture reaches a
 * browser: as an SVG document of its own, in an `<img>`, and inline in an HTML page. Served
 * here with no protective headers at all (no CSP, no sandbox), so only the rules stand between
 * the picture and the browser. For each: animations are run forward, the picture is clicked, and
 * then no script may have been compiled in the page (the DevTools protocol reports every script
 * the page parses: inline handlers, javascript: URLs, data: documents, eval) and no request may
 * have left for anything but the page itself (every request is intercepted).
 *
 * A known-bad picture (not checked by the rules) must trip both detectors, so this test cannot
 * pass by seeing nothing.
 */

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const FIXTURES = join(process.cwd(), 'test/fixtures/svg');
const MODES = ['document', 'img', 'inline'] as const;
type Mode = (typeof MODES)[number];
/** Marks the harness's own evaluations. Playwright compiles helpers of its own in the page too:
 * the scripts an empty picture shows (by hash) are the harness's, and are not counted. */
const HARNESS = 'picture-harness.js';
const harnessScripts = new Set<string>();
/** Pages shown at once in the corpus tests. */
const PAGES_AT_ONCE = 4;

jest.setTimeout(120_000);

const EMPTY = '<svg xmlns="http://www.w3.org/2000/svg"/>';
const BAD = `<svg xmlns="http://www.w3.org/2000/svg" onload="window.ran = 1"><image href="http://outside.invalid/x.png" width="1" height="1"/></svg>`;

let server: Server;
let origin: string;
let context: BrowserContext;
let profile: string;
const pictures: { file: string; text: string }[] = [];

beforeAll(async () => {
  for (const corpus of ['legit', 'tools', 'attacks'] as const) {
    const index = await readFile(join(FIXTURES, corpus, 'INDEX.md'), 'utf8');
    const refused = new Set(index.split('\n').filter((line) => /\| refused/.test(line)).map((line) => /`([^`]+)`/.exec(line)![1]!));
    const files = (await readdir(join(FIXTURES, corpus))).filter((file) => file.endsWith('.svg') && !refused.has(file)).sort();
    for (const file of files) {
      // What a page would get: the stored, normalised text.
      const { svg } = checkSvg(await readFile(join(FIXTURES, corpus, file), 'utf8'));
      pictures.push({ file: `${corpus}--${file}`, text: svg });
    }
  }
  const byName = new Map(pictures.map((picture) => [picture.file, picture.text]));
  byName.set('known-bad.svg', BAD);
  byName.set('empty.svg', EMPTY);
  server = createServer((req, res) => {
    const [, mode, file] = (req.url ?? '').split('/');
    const text = byName.get(decodeURIComponent(file ?? ''));
    if (!text) {
      res.writeHead(404).end();
      return;
    }
    if (mode === 'document') {
      res.writeHead(200, { 'Content-Type': 'image/svg+xml; charset=utf-8' }).end(text);
    } else if (mode === 'img') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(`<!DOCTYPE html><html><head><title>picture</title></head><body><img src="/document/${encodeURIComponent(file ?? '')}" width="400" height="300"></body></html>`);
    } else {
      // Inline, as a page that shows a picture would: the picture's text straight into the HTML.
      const body = text.replace(/^\uFEFF/, '');
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(`<!DOCTYPE html><html><head><title>picture</title></head><body>${body}</body></html>`);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  profile = await mkdtemp(join(tmpdir(), 'platform-pictures-'));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  for (const mode of MODES) {
    for (const script of (await show(mode, 'empty.svg')).scripts) harnessScripts.add(script);
  }
});

afterAll(async () => {
  await context?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

interface Observed {
  scripts: string[];
  outside: string[];
}

async function watch(page: Page): Promise<{ session: CDPSession; observed: Observed }> {
  const observed: Observed = { scripts: [], outside: [] };
  const session = await context.newCDPSession(page);
  const mainWorlds = new Set<number>();
  session.on('Runtime.executionContextCreated', ({ context: created }) => {
    if ((created.auxData as { isDefault?: boolean } | undefined)?.isDefault) mainWorlds.add(created.id);
  });
  session.on('Debugger.scriptParsed', (script) => {
    if (script.url === HARNESS || !mainWorlds.has(script.executionContextId)) return;
    const name = `${script.url || 'inline script'} (${script.length} characters, ${script.hash})`;
    if (!harnessScripts.has(name)) observed.scripts.push(name);
  });
  await session.send('Runtime.enable');
  await session.send('Debugger.enable');
  await page.route('**/*', async (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`)) return route.continue();
    observed.outside.push(url);
    return route.abort();
  });
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(`${origin}/`) && !url.startsWith('data:') && !observed.outside.includes(url)) observed.outside.push(url);
  });
  return { session, observed };
}

/** Runs the picture's animations forward and clicks it, as a person looking at it might. */
async function exercise(page: Page): Promise<void> {
  await page.evaluate(`(async () => {
    for (const svg of document.querySelectorAll('svg')) if (svg.setCurrentTime) for (const t of [0.1, 0.5, 1, 2, 5, 30]) svg.setCurrentTime(t);
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  })()
//# sourceURL=${HARNESS}`);
  await page.mouse.click(20, 20);
  await page.mouse.click(100, 60);
  await page.evaluate(`new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))
//# sourceURL=${HARNESS}`);
}

async function show(mode: Mode, file: string): Promise<Observed> {
  const page = await context.newPage();
  try {
    const { observed, session } = await watch(page);
    const res = await page.goto(`${origin}/${mode}/${encodeURIComponent(file)}`, { waitUntil: 'load' });
    expect(res?.status()).toBe(200);
    await exercise(page);
    await session.detach();
    return observed;
  } finally {
    await page.close();
  }
}

describe('accepted pictures in Chromium', () => {
  it('sees no script of its own in an empty picture (what it discounts is only its own helpers)', async () => {
    expect(harnessScripts.size).toBeLessThan(10);
    for (const mode of MODES) expect(await show(mode, 'empty.svg')).toEqual({ scripts: [], outside: [] });
  });

  it('notices a script run and an outside request in a picture the rules would refuse', async () => {
    expect(() => checkSvg(BAD)).toThrow();
    for (const mode of ['document', 'inline'] as const) {
      const observed = await show(mode, 'known-bad.svg');
      expect(observed.scripts.length).toBeGreaterThan(0);
      expect(observed.outside).toContain('http://outside.invalid/x.png');
    }
  });

  it.each([
    ['legit', 30],
    ['tools', 80],
    ['attacks', 18],
  ] as const)('shows every accepted %s picture, as stored, as a document, in <img> and inline without running a script or requesting anything', async (corpus, least) => {
    const shown = pictures.filter(({ file }) => file.startsWith(`${corpus}--`));
    expect(shown.length).toBeGreaterThanOrEqual(least);
    for (const { text } of shown) expect(checkSvg(text)).toEqual({ svg: text, normalised: [] });
    // Each showing is a page of its own with its own DevTools session and interception, so a
    // few run at once; the findings are listed in picture order whatever finished first.
    const showings = shown.flatMap(({ file }) => MODES.map((mode) => ({ file, mode })));
    const found: string[][] = new Array<string[]>(showings.length);
    let next = 0;
    // A showing that fails stops the others taking more, and the test waits for those in flight
    // before it fails, so no page runs on after it.
    let failed = false;
    const workers = await Promise.allSettled(
      Array.from({ length: PAGES_AT_ONCE }, async () => {
        while (next < showings.length && !failed) {
          const index = next++;
          const { file, mode } = showings[index]!;
          try {
            const { scripts, outside } = await show(mode, file);
            found[index] = [...scripts.map((script) => `${file} (${mode}): ran ${script}`), ...outside.map((url) => `${file} (${mode}): requested ${url}`)];
          } catch (error) {
            failed = true;
            throw error;
          }
        }
      }),
    );
    const failure = workers.find((worker) => worker.status === 'rejected');
    if (failure) throw failure.reason;
    expect(found.filter(Boolean)).toHaveLength(showings.length);
    expect(found.flat()).toEqual([]);
  }, 900_000);
});
