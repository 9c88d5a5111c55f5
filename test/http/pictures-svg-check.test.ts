import { afterEach, describe, expect, it } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import type { Response } from 'supertest';
import { call, createOrganisation, hostOf, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { realisticSvg } from '../bench/svg-pictures.js';

/**
 * The SVG check off the event loop (src/modules/pictures/svg/check-pool.ts): a check over
 * SVG_CHECK_TIMEOUT_MS is 400 `svg_too_complex`, a full queue 503 `unavailable` with
 * `Retry-After`, and while a 2 MB picture is checked the service keeps answering.
 */

interface Setup {
  platform: TestPlatform;
  host: string;
  projectId: string;
  device: EnrolledDevice;
}

let current: TestPlatform | undefined;
afterEach(async () => {
  await current?.close();
  current = undefined;
});

async function setUp(env: Record<string, string>): Promise<Setup> {
  const platform = await startPlatform({ env });
  current = platform;
  const organisation = await createOrganisation(platform, { name: 'Checks Org' });
  const host = await hostOf(platform, organisation);
  const person = await createPerson(platform, organisation.id, 'member', 'Pia Picture');
  const projectId = (await platform.services.projects.create(organisation.id, { name: 'Main', owner: person.id })).id;
  const device = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, kind: 'workbench' });
  return { platform, host, projectId, device };
}

async function save({ platform, host, projectId, device }: Setup, slug: string, svg: string): Promise<Response> {
  const path = `/projects/v1/${projectId}/pictures/${slug}`;
  const auth = await deviceHeaders(device, 'PUT', `http://${host}${path}`);
  return call(platform, 'put', path, { host, headers: { ...auth, 'If-Match': '"0"' }, body: { spec: { version: 1, kind: 'diagram', meta: { title: slug } }, svg } });
}

async function get({ platform, host, projectId, device }: Setup, slug: string): Promise<Response> {
  const path = `/projects/v1/${projectId}/pictures/${slug}`;
  const auth = await deviceHeaders(device, 'GET', `http://${host}${path}`);
  return call(platform, 'get', path, { host, headers: auth });
}

const SMALL = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><rect width="10" height="10"/></svg>';
const TWO_MB = realisticSvg(2 * 1024 * 1024 - 4096);

describe('the SVG check off the event loop', () => {
  it('abandons a check over SVG_CHECK_TIMEOUT_MS: 400 svg_too_complex, nothing stored, the thread replaced', async () => {
    const setup = await setUp({ SVG_CHECK_THREADS: '1', SVG_CHECK_TIMEOUT_MS: '1' });
    const big = await save(setup, 'big', realisticSvg(512 * 1024));
    expect(big.status).toBe(400);
    expect(big.body).toMatchObject({ error: 'svg_too_complex', field: 'body.svg', max: 1 });
    expect((await get(setup, 'big')).status).toBe(404);
    // The next check gets a new thread, and is abandoned the same way (never a 500).
    const again = await save(setup, 'again', realisticSvg(512 * 1024));
    expect(again.body).toMatchObject({ error: 'svg_too_complex' });
  });

  it('answers 503 unavailable with Retry-After when every thread is busy and the queue is full', async () => {
    const setup = await setUp({ SVG_CHECK_THREADS: '1', SVG_CHECK_QUEUE: '1', SVG_CHECK_TIMEOUT_MS: '60000' });
    // The thread is started and ready.
    expect((await save(setup, 'first', SMALL)).status).toBe(201);
    // One 2 MB check runs, one waits, the third finds no room.
    const answers = await Promise.all(['a', 'b', 'c'].map((slug) => save(setup, slug, TWO_MB)));
    const statuses = answers.map((res) => res.status).sort();
    expect(statuses).toEqual([201, 201, 503]);
    const refused = answers.find((res) => res.status === 503)!;
    expect(refused.body).toMatchObject({ error: 'unavailable' });
    expect(refused.headers['retry-after']).toBe('1');
  });

  it('keeps answering /healthz within 250 ms while a 2 MB picture is checked', async () => {
    const setup = await setUp({ SVG_CHECK_THREADS: '1', SVG_CHECK_TIMEOUT_MS: '60000' });
    expect((await save(setup, 'warm', SMALL)).status).toBe(201);
    let done = false;
    const saving = save(setup, 'big', TWO_MB).finally(() => {
      done = true;
    });
    let longest = 0;
    let probes = 0;
    while (!done) {
      const started = performance.now();
      const res = await call(setup.platform, 'get', '/healthz', { host: setup.host });
      longest = Math.max(longest, performance.now() - started);
      probes += 1;
      expect(res.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const saved = await saving;
    expect(saved.status).toBe(201);
    expect(saved.body.svg.length).toBeGreaterThan(1024 * 1024);
    // The check took long enough to be watched, and the loop stayed free meanwhile.
    expect(probes).toBeGreaterThan(5);
    expect(longest).toBeLessThan(250);
  });
});
