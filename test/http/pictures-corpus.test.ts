import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { checkSvg } from '../../src/modules/pictures/svg/pipeline.js';
import { call, createOrganisation, hostOf, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';

/** The SVG corpora through `PUT …/pictures/{slug}`: every attack refused with 400 (or, where its
 * index row says so, stored only as its inert normalised form), every legitimate picture and every
 * accepted real-tool file 201 and stored as the pipeline normalised it; saving that again keeps
 * the version. */

const FIXTURES = join(process.cwd(), 'test/fixtures/svg');
const files = (name: string) =>
  readdirSync(join(FIXTURES, name))
    .filter((file) => file.endsWith('.svg'))
    .sort()
    .map((file) => ({ file, text: readFileSync(join(FIXTURES, name, file), 'utf8') }));

let platform: TestPlatform;
let host: string;
let projectId: string;
let device: EnrolledDevice;

beforeAll(async () => {
  platform = await startPlatform();
  const organisation = await createOrganisation(platform, { name: 'Corpus' });
  host = await hostOf(platform, organisation);
  const person = await createPerson(platform, organisation.id);
  projectId = (await platform.services.projects.create(organisation.id, { name: 'Corpus', owner: person.id })).id;
  device = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
});
afterAll(() => platform.close());

async function save(slug: string, svg: string) {
  const path = `/projects/v1/${projectId}/pictures/${slug}`;
  return call(platform, 'put', path, {
    host,
    headers: { ...(await deviceHeaders(device, 'PUT', `http://${host}${path}`)), 'If-Match': '"0"' },
    body: { spec: { version: 1, kind: 'test', meta: { title: slug } }, svg },
  });
}

const slugOf = (file: string) => file.replace(/\.svg$/, '').toLowerCase().replace(/[^a-z0-9-]/g, '-').slice(0, 60);

const accepted = (name: string) => {
  const index = readFileSync(join(FIXTURES, name, 'INDEX.md'), 'utf8');
  return new Set(index.split('\n').filter((line) => /\| (accepted)/.test(line)).map((line) => /`([^`]+)`/.exec(line)![1]!));
};

async function expectStoredNormalised(prefix: string, file: string, text: string, expected: string) {
  let slug = `${prefix}-${slugOf(file)}`.slice(0, 60);
  while (slug.endsWith('-')) slug = slug.slice(0, -1);
  const res = await save(slug, text);
  expect({ file, status: res.status }).toEqual({ file, status: 201 });
  expect(res.body.svg).toBe(expected);
  const rows = await platform.dataSource.query<{ svg: string }[]>('SELECT svg FROM pictures WHERE project_id = ? AND slug = ?', [projectId, slug]);
  expect(rows[0]!.svg === expected).toBe(true);
  const path = `/projects/v1/${projectId}/pictures/${slug}`;
  const again = await call(platform, 'put', path, {
    host,
    headers: { ...(await deviceHeaders(device, 'PUT', `http://${host}${path}`)), 'If-Match': `"${res.body.version}"` },
    body: { spec: { version: 1, kind: 'test', meta: { title: slug } }, svg: expected },
  });
  expect({ file, status: again.status, version: again.body.version, normalised: again.body.normalised }).toEqual({ file, status: 200, version: res.body.version, normalised: [] });
}

describe('the SVG corpora through the API', () => {
  it('refuses every attack with 400 unsafe_svg or invalid_svg naming where, or stores it normalised as its index row says', async () => {
    const inert = accepted('attacks');
    for (const { file, text } of files('attacks')) {
      if (inert.has(file)) {
        await expectStoredNormalised('a', file, text, checkSvg(text).svg);
        continue;
      }
      const res = await save(slugOf(file), text);
      expect({ file, status: res.status, error: res.body.error }).toEqual({ file, status: 400, error: expect.stringMatching(/^(unsafe_svg|invalid_svg)$/) });
      expect(typeof res.body.where).toBe('string');
    }
    const rows = await platform.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM pictures');
    expect(Number(rows[0]!.n)).toBe(inert.size);
  });

  it('accepts every legitimate picture and every accepted real-tool file, stored as normalised, and a second save keeps the version', async () => {
    await platform.dataSource.query('DELETE FROM pictures');
    for (const { file, text } of files('legit')) await expectStoredNormalised('l', file, text, checkSvg(text).svg);
    const tools = accepted('tools');
    for (const { file, text } of files('tools')) {
      if (tools.has(file)) await expectStoredNormalised('t', file, text, checkSvg(text).svg);
      else expect({ file, status: (await save(`r-${slugOf(file)}`.slice(0, 60), text)).status }).toEqual({ file, status: 400 });
    }
    // About 140 pictures, each saved twice and read back: minutes on MariaDB on a busy machine.
  }, 240_000);
});
