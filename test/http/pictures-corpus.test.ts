import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, createOrganisation, hostOf, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';

/** Both SVG corpora through `PUT …/pictures/{slug}`: every attack 400 and nothing stored, every
 * legitimate picture 201 and stored byte for byte. */

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

const slugOf = (file: string) => file.replace(/\.svg$/, '').toLowerCase().slice(0, 60);

describe('the SVG corpora through the API', () => {
  it('refuses every attack with 400 unsafe_svg or invalid_svg, naming where, and stores none', async () => {
    for (const { file, text } of files('attacks')) {
      const res = await save(slugOf(file), text);
      expect({ file, status: res.status, error: res.body.error }).toEqual({ file, status: 400, error: expect.stringMatching(/^(unsafe_svg|invalid_svg)$/) });
      expect(typeof res.body.where).toBe('string');
    }
    const rows = (await platform.dataSource.query('SELECT COUNT(*) AS n FROM pictures')) as { n: number | string }[];
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it('accepts every legitimate picture and stores it exactly as sent', async () => {
    for (const { file, text } of files('legit')) {
      const slug = slugOf(file);
      const res = await save(slug, text);
      expect({ file, status: res.status }).toEqual({ file, status: 201 });
      expect(res.body.svg).toBe(text);
      const rows = (await platform.dataSource.query('SELECT svg FROM pictures WHERE project_id = ? AND slug = ?', [projectId, slug])) as { svg: string }[];
      expect(rows[0]!.svg === text).toBe(true);
    }
  });
});
