import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { call, createOrganisation, hostOf, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { PICTURE_LIMITS } from '../../src/modules/pictures/schemas.js';

let platform: TestPlatform;
let organisation: OrganisationRecord;
let host: string;
let otherHost: string;
let projectId: string;
let otherProjectId: string;
let owner: EnrolledDevice;
let contributor: EnrolledDevice;
let viewer: EnrolledDevice;
let outsider: EnrolledDevice;
let organisationOwner: EnrolledDevice;
let node: EnrolledDevice;
let stranger: EnrolledDevice;
let contributorId: string;
let ownerId: string;

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><rect width="10" height="10" fill="#336699"/></svg>';
const spec = (title = 'A picture', extra: Record<string, unknown> = {}) => ({ version: 1, kind: 'diagram', meta: { title }, ...extra });
const svgWith = (body: string) => `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">${body}</svg>`;

beforeAll(async () => {
  platform = await startPlatform();
  organisation = await createOrganisation(platform, { name: 'Pictures Org' });
  const other = await createOrganisation(platform, { name: 'Elsewhere' });
  host = await hostOf(platform, organisation);
  otherHost = await hostOf(platform, other);
  const people = {
    owner: await createPerson(platform, organisation.id, 'member', 'Olga Owner'),
    contributor: await createPerson(platform, organisation.id, 'member', 'Carl Contributor'),
    viewer: await createPerson(platform, organisation.id, 'member', 'Vera Viewer'),
    outsider: await createPerson(platform, organisation.id, 'member', 'Otto Outsider'),
    organisationOwner: await createPerson(platform, organisation.id, 'owner', 'Ada Admin'),
    stranger: await createPerson(platform, other.id, 'owner', 'Sam Stranger'),
  };
  ownerId = people.owner.id;
  contributorId = people.contributor.id;
  const projects = platform.services.projects;
  projectId = (await projects.create(organisation.id, { name: 'Main', owner: ownerId })).id;
  await projects.setMemberRole(organisation.id, projectId, contributorId, 'contributor');
  await projects.setMemberRole(organisation.id, projectId, people.viewer.id, 'viewer');
  otherProjectId = (await projects.create(other.id, { name: 'Theirs', owner: people.stranger.id })).id;
  const enrol = (personId: string, organisationId = organisation.id, kind: 'workbench' | 'node' = 'workbench') => enrolDevice(platform, { organisationId, personId, kind });
  owner = await enrol(ownerId);
  contributor = await enrol(contributorId);
  viewer = await enrol(people.viewer.id);
  outsider = await enrol(people.outsider.id);
  organisationOwner = await enrol(people.organisationOwner.id);
  node = await enrol(contributorId, organisation.id, 'node');
  stranger = await enrol(people.stranger.id, other.id);
});
afterAll(() => platform.close());

type Method = 'get' | 'put' | 'delete';

async function request(device: EnrolledDevice, method: Method, path: string, options: { headers?: Record<string, string>; body?: unknown; host?: string } = {}): Promise<Response> {
  const target = options.host ?? host;
  const auth = await deviceHeaders(device, method.toUpperCase(), `http://${target}${path.split('?')[0]}`);
  return call(platform, method, path, { host: target, headers: { ...auth, ...options.headers }, body: options.body });
}

const picturePath = (slug: string, project = projectId) => `/projects/v1/${project}/pictures/${slug}`;

function save(device: EnrolledDevice, slug: string, body: unknown, headers: Record<string, string> = { 'If-Match': '"0"' }, project = projectId): Promise<Response> {
  return request(device, 'put', picturePath(slug, project), { body, headers });
}

async function create(slug: string, body: Record<string, unknown> = { spec: spec(), svg: SVG }): Promise<Response> {
  const res = await save(contributor, slug, body);
  expect(res.status).toBe(201);
  return res;
}

async function row(slug: string, project = projectId) {
  const rows = await platform.dataSource.query<Record<string, unknown>[]>('SELECT * FROM pictures WHERE project_id = ? AND slug = ?', [project, slug]);
  return rows[0];
}

/** `If-Match` naming the stored version: a write based on what is there now. */
async function current(slug: string, project = projectId): Promise<Record<string, string>> {
  return { 'If-Match': `"${String((await row(slug, project))!.version)}"` };
}

describe('PUT /projects/v1/{id}/pictures/{slug}', () => {
  it('creates a picture with If-Match "0": 201, the version as a strong ETag, the SVG stored as normalised', async () => {
    const svg = `<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg xmlns="http://www.w3.org/2000/svg"  viewBox='0 0 10 10' >\r\n\t<!-- removed -->\n  <circle cx="5" cy="5" r="4" fill="red" />\n</svg>\n`;
    const normalised = `<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">\n  <circle cx="5" cy="5" r="4" fill="red"/>\n</svg>\n`;
    const res = await save(contributor, 'first', { spec: spec('First', { nodes: [{ id: 'a' }] }), svg, look: 'sketch' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ slug: 'first', spec: spec('First', { nodes: [{ id: 'a' }] }), svg: normalised, normalised: ['doctype', 'comment'], look: 'sketch', createdBy: contributorId, updatedBy: contributorId, previousVersion: null });
    expect(res.body.version).toMatch(/^ver_[0-9a-z]{16}$/);
    expect(res.headers.etag).toBe(`"${res.body.version}"`);
    expect(res.body.createdAt).toBe(platform.clock.now().toISOString());
    expect((await row('first'))!.svg).toBe(normalised);
    const read = await request(viewer, 'get', picturePath('first'));
    expect(read.status).toBe(200);
    const { normalised: _removed, ...picture } = res.body as Record<string, unknown>;
    expect(read.body).toEqual(picture);
    expect(read.headers.etag).toBe(res.headers.etag);
  });

  it('normalises idempotently: saving the stored SVG again, or the same SVG as sent, is an unchanged save that keeps the version', async () => {
    const inkscape = `<svg xmlns="http://www.w3.org/2000/svg" xmlns:inkscape="http://www.inkscape.org/namespaces/inkscape" xmlns:svg="http://www.w3.org/2000/svg" inkscape:version="1.2"><metadata><x/></metadata><g inkscape:label="Layer 1"><rect width="4" height="4"/></g></svg>`;
    const first = await save(contributor, 'idempotent', { spec: spec(), svg: inkscape });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ svg: '<svg xmlns="http://www.w3.org/2000/svg"><g><rect width="4" height="4"/></g></svg>', normalised: ['metadata', 'editor-data', 'namespace-declaration'] });
    platform.clock.advance(1000);
    const stored = await save(contributor, 'idempotent', { spec: spec(), svg: first.body.svg }, { 'If-Match': `"${first.body.version}"` });
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({ version: first.body.version, updatedAt: first.body.updatedAt, svg: first.body.svg, normalised: [], previousVersion: null });
    expect(stored.headers.etag).toBe(first.headers.etag);
    const asSent = await save(contributor, 'idempotent', { spec: spec(), svg: inkscape }, { 'If-Match': `"${first.body.version}"` });
    expect(asSent.body).toMatchObject({ version: first.body.version, normalised: ['metadata', 'editor-data', 'namespace-declaration'], previousVersion: null });
    expect((await request(viewer, 'get', `${picturePath('idempotent')}/previous`)).status).toBe(404);
  });

  it('answers SVG with headers that keep a browser from running or rendering it', async () => {
    await create('headers');
    for (const res of [await request(viewer, 'get', picturePath('headers')), await save(contributor, 'headers', { spec: spec(), svg: SVG, look: 'x' }, await current('headers'))]) {
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.headers['content-security-policy']).toContain('sandbox');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['content-disposition']).toBe('attachment; filename="headers.json"');
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['cache-control']).toBe('private, no-cache');
    }
  });

  it('creates with If-None-Match: *, and refuses it (412) once the picture exists', async () => {
    const first = await save(contributor, 'none-match', { spec: spec(), svg: SVG }, { 'If-None-Match': '*' });
    expect(first.status).toBe(201);
    const again = await save(contributor, 'none-match', { spec: spec('Other'), svg: SVG }, { 'If-None-Match': '*' });
    expect(again.status).toBe(412);
    expect(again.body.error).toBe('precondition_failed');
    expect(again.headers.etag).toBe(first.headers.etag);
  });

  it('refuses a save without If-Match or If-None-Match (428) and stores nothing', async () => {
    const res = await save(contributor, 'unguarded', { spec: spec(), svg: SVG }, {});
    expect(res.status).toBe(428);
    expect(res.body.error).toBe('precondition_required');
    expect(await row('unguarded')).toBeUndefined();
    await create('guarded');
    expect((await save(contributor, 'guarded', { spec: spec('changed'), svg: SVG }, {})).status).toBe(428);
  });

  it('refuses a write that does not name the version it saw (428): If-Match: *, If-None-Match naming versions, a delete with If-None-Match: *', async () => {
    const { body: seen } = await create('unseen');
    // Someone else saves a version this client never saw.
    const newer = (await save(owner, 'unseen', { spec: spec('newer'), svg: SVG }, { 'If-Match': `"${seen.version}"` })).body;
    const attempts: [Method, Record<string, string>][] = [
      ['put', { 'If-None-Match': `"${seen.version}"` }],
      ['put', { 'If-None-Match': '"ver_someotherversion"' }],
      ['put', { 'If-Match': '*' }],
      ['put', { 'If-Match': '*', 'If-None-Match': `"${seen.version}"` }],
      ['delete', { 'If-None-Match': `"${seen.version}"` }],
      ['delete', { 'If-None-Match': '*' }],
      ['delete', { 'If-Match': '*' }],
    ];
    for (const [method, headers] of attempts) {
      const res = await request(contributor, method, picturePath('unseen'), { headers, body: method === 'put' ? { spec: spec('blind'), svg: SVG } : undefined });
      expect([method, headers, res.status, res.body.error]).toEqual([method, headers, 428, 'precondition_required']);
      expect(res.body.message).toEqual(expect.stringContaining('If-Match: "<version>"'));
    }
    // Nothing changed: the version nobody overwrote is still there, and still readable whole.
    expect((await row('unseen'))!.version).toBe(newer.version);
    // Naming the current version works; a create of a missing picture works with If-None-Match: *.
    expect((await save(contributor, 'unseen', { spec: spec('seen'), svg: SVG }, { 'If-Match': `"${newer.version}"` })).status).toBe(200);
    expect((await request(contributor, 'delete', picturePath('unseen'), { headers: await current('unseen') })).status).toBe(204);
    expect((await save(contributor, 'unseen', { spec: spec(), svg: SVG }, { 'If-None-Match': '*' })).status).toBe(201);
  });

  it('refuses If-Match "0" for an existing picture and If-Match "<version>" or * for a missing one (412)', async () => {
    const { body } = await create('exists');
    const res = await save(contributor, 'exists', { spec: spec('x'), svg: SVG });
    expect(res.status).toBe(412);
    expect(res.headers.etag).toBe(`"${body.version}"`);
    expect((await save(contributor, 'missing', { spec: spec(), svg: SVG }, { 'If-Match': `"${body.version}"` })).status).toBe(412);
    expect((await save(contributor, 'missing', { spec: spec(), svg: SVG }, { 'If-Match': '*', 'If-None-Match': '*' })).status).toBe(412);
    expect((await save(contributor, 'exists', { spec: spec('x'), svg: SVG }, { 'If-Match': `W/"${body.version}"` })).status).toBe(412);
    expect(await row('missing')).toBeUndefined();
  });

  it('refuses malformed condition headers (400)', async () => {
    for (const value of ['ver_x', '"a" "b"', '"a",', 'W/ "a"']) {
      const res = await save(contributor, 'malformed-tags', { spec: spec(), svg: SVG }, { 'If-Match': value });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_request', field: 'headers.if-match' });
    }
  });

  it('makes a new version for a change and keeps exactly one previous version', async () => {
    const v1 = (await create('history', { spec: spec('one'), svg: svgWith('<title>one</title>') })).body;
    platform.clock.advance(1000);
    const v2 = await save(owner, 'history', { spec: spec('two'), svg: svgWith('<title>two</title>') }, { 'If-Match': `"${v1.version}"` });
    expect(v2.status).toBe(200);
    expect(v2.body).toMatchObject({ previousVersion: v1.version, createdBy: contributorId, updatedBy: ownerId, createdAt: v1.createdAt });
    expect(v2.body.version).not.toBe(v1.version);
    const previous = await request(viewer, 'get', `${picturePath('history')}/previous`);
    expect(previous.status).toBe(200);
    expect(previous.body).toEqual({ ...v1, normalised: undefined, previousVersion: null });
    expect(previous.headers.etag).toBe(`"${v1.version}"`);
    expect(previous.headers['content-security-policy']).toContain('sandbox');

    platform.clock.advance(1000);
    const v3 = await save(contributor, 'history', { spec: spec('two'), svg: svgWith('<title>two</title>'), look: 'clean' }, { 'If-Match': `"${v2.body.version}"` });
    expect(v3.status).toBe(200);
    expect(v3.body.previousVersion).toBe(v2.body.version);
    const stored = (await row('history'))!;
    expect(stored.previous_version).toBe(v2.body.version);
    expect(JSON.stringify(stored)).not.toContain(v1.version);
    expect((await request(viewer, 'get', `${picturePath('history')}/previous`)).body).toMatchObject({ version: v2.body.version, spec: spec('two'), look: null, updatedBy: ownerId });
  });

  it('keeps the version for a save that changes nothing (key order of the spec does not count)', async () => {
    const v1 = (await create('same', { spec: { version: 1, kind: 'chart', meta: { title: 'T', a: 1, b: 2 } }, svg: SVG, look: 'x' })).body;
    platform.clock.advance(5000);
    const again = await save(owner, 'same', { look: 'x', svg: SVG, spec: { meta: { b: 2, title: 'T', a: 1 }, kind: 'chart', version: 1 } }, { 'If-Match': `"${v1.version}"` });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(v1);
    expect((await request(viewer, 'get', `${picturePath('same')}/previous`)).status).toBe(404);
    const stale = await save(owner, 'same', { spec: v1.spec, svg: SVG, look: 'x' }, { 'If-Match': '"ver_stale"' });
    expect(stale.status).toBe(412);
  });

  it('refuses a stale If-Match (412) and leaves the picture as it was', async () => {
    const v1 = (await create('stale')).body;
    const v2 = (await save(contributor, 'stale', { spec: spec('2'), svg: SVG }, { 'If-Match': `"${v1.version}"` })).body;
    const res = await save(contributor, 'stale', { spec: spec('3'), svg: SVG }, { 'If-Match': `"${v1.version}"` });
    expect(res.status).toBe(412);
    expect(res.headers.etag).toBe(`"${v2.version}"`);
    expect((await request(viewer, 'get', picturePath('stale'))).body.version).toBe(v2.version);
    // A list of versions matches any of them.
    expect((await save(contributor, 'stale', { spec: spec('4'), svg: SVG }, { 'If-Match': `"${v1.version}", "${v2.version}"` })).status).toBe(200);
  });

  it('refuses unsafe and malformed SVG (400) naming what and where, and stores nothing', async () => {
    const unsafe = await save(contributor, 'unsafe', { spec: spec(), svg: svgWith('<g><image href="https://evil.example/x.png"/></g>') });
    expect(unsafe.status).toBe(400);
    expect(unsafe.body).toMatchObject({ error: 'unsafe_svg', field: 'body.svg', where: '/svg/g[1]/image[1]/@href' });
    expect(unsafe.body.message).toContain('https:');
    const script = await save(contributor, 'unsafe', { spec: spec(), svg: svgWith('<script>alert(1)</script>') });
    expect(script.body).toMatchObject({ error: 'unsafe_svg', where: '/svg/script[1]' });
    const doctype = await save(contributor, 'unsafe', { spec: spec(), svg: `<!DOCTYPE svg>\n${SVG}` });
    expect(doctype.body).toMatchObject({ error: 'unsafe_svg', where: 'line 1, column 1' });
    const subset = await save(contributor, 'unsafe', { spec: spec(), svg: `<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd" [<!ENTITY x "y">]>\n${SVG}` });
    expect(subset.body).toMatchObject({ error: 'unsafe_svg', where: 'line 1, column 1' });
    expect(subset.body.message).toContain('internal subset');
    const long = await save(contributor, 'unsafe', { spec: spec(), svg: svgWith(`<rect fill="rgb(0,0,0) ${'a'.repeat(60_000)}"/>`) });
    expect(long.body).toMatchObject({ error: 'unsafe_svg', where: '/svg/rect[1]/@fill' });
    expect(long.body.message).toContain('longer than 8192 characters');
    const broken = await save(contributor, 'unsafe', { spec: spec(), svg: '<svg xmlns="http://www.w3.org/2000/svg"><rect></svg>' });
    expect(broken.status).toBe(400);
    expect(broken.body.error).toBe('invalid_svg');
    expect(broken.body.where).toMatch(/^line 1, column \d+$/);
    expect(await row('unsafe')).toBeUndefined();
  });

  it('refuses bodies that break the schema (400 naming the field) and a spec version other than 1', async () => {
    const cases: [unknown, string][] = [
      [{ spec: spec() }, 'body.svg'],
      [{ svg: SVG }, 'body.spec'],
      [{ spec: { version: 1, kind: 'x' }, svg: SVG }, 'body.spec.meta'],
      [{ spec: spec(), svg: SVG, extra: 1 }, 'body.extra'],
      [{ spec: spec(), svg: 42 }, 'body.svg'],
      [{ spec: spec(), svg: SVG, look: 'x'.repeat(1001) }, 'body.look'],
      [[], 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await save(contributor, 'schema', body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_request', field });
    }
    const version = await save(contributor, 'schema', { spec: { ...spec(), version: 2 }, svg: SVG });
    expect(version.status).toBe(400);
    expect(version.body).toMatchObject({ error: 'unsupported_schema_version', field: 'body.spec.version' });
  });

  it('refuses a spec nested too deep or with too many entries (400) before anything recursive reads it', async () => {
    // Written as text: JSON.stringify (like anything recursive) would overflow on it.
    const deep = `${'{"d":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    const path = picturePath('deep');
    const nested = await call(platform, 'put', path, {
      host,
      headers: { ...(await deviceHeaders(contributor, 'PUT', `http://${host}${path}`)), 'If-Match': '"0"' },
      raw: { type: 'application/json', data: `{"spec":{"version":1,"kind":"k","meta":{"title":"t"},"deep":${deep}},"svg":${JSON.stringify(SVG)}}` },
    });
    expect(nested.status).toBe(400);
    expect(nested.body).toMatchObject({ error: 'json_too_complex', limit: 'depth', max: PICTURE_LIMITS.specDepth + 1 });
    expect(nested.body.field).toMatch(/^body\.spec\.deep/);
    const wide = await save(contributor, 'deep', { spec: { ...spec(), items: Array.from({ length: PICTURE_LIMITS.specEntries + 1 }, () => 0) }, svg: SVG });
    expect(wide.status).toBe(400);
    expect(wide.body).toMatchObject({ error: 'json_too_complex', limit: 'keys' });
    const longKey = await save(contributor, 'deep', { spec: { ...spec(), ['k'.repeat(1001)]: 1 }, svg: SVG });
    expect(longKey.status).toBe(400);
    expect(longKey.body).toMatchObject({ error: 'invalid_request', field: 'body.spec' });
  });

  it('refuses an SVG over 2 MB, a spec over 512 KB and a body over 3 MB (413)', async () => {
    const padding = `<desc>${'x'.repeat(PICTURE_LIMITS.svgBytes)}</desc>`;
    const svg = await save(contributor, 'large', { spec: spec(), svg: svgWith(padding) });
    expect(svg.status).toBe(413);
    expect(svg.body).toMatchObject({ error: 'payload_too_large', field: 'body.svg' });
    const specBody = await save(contributor, 'large', { spec: spec('big', { blob: 'y'.repeat(PICTURE_LIMITS.specBytes) }), svg: SVG });
    expect(specBody.status).toBe(413);
    expect(specBody.body).toMatchObject({ error: 'payload_too_large', field: 'body.spec' });
    // Multi-byte characters count as bytes, not characters.
    const multibyte = await save(contributor, 'large', { spec: spec(), svg: svgWith(`<desc>${'é'.repeat(PICTURE_LIMITS.svgBytes / 2)}</desc>`) });
    expect(multibyte.status).toBe(413);
    const whole = JSON.stringify({ spec: spec(), svg: svgWith(`<desc>${'"'.repeat(1_600_000)}</desc>`) });
    const path = picturePath('large');
    const body = await call(platform, 'put', path, {
      host,
      headers: { ...(await deviceHeaders(contributor, 'PUT', `http://${host}${path}`)), 'If-Match': '"0"' },
      raw: { type: 'application/json', data: whole },
    });
    expect(body.status).toBe(413);
    expect(body.body.error).toBe('payload_too_large');
    expect(await row('large')).toBeUndefined();
  });

  it('refuses malformed slugs (400)', async () => {
    for (const slug of ['Upper', 'under_score', 'x'.repeat(61), 'dot.ted', '%C3%A9t%C3%A9']) {
      const res = await save(contributor, slug, { spec: spec(), svg: SVG });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
    expect((await save(contributor, 'x'.repeat(60), { spec: spec(), svg: SVG })).status).toBe(201);
    for (const path of [picturePath('Bad'), `${picturePath('x'.repeat(61))}/previous`]) {
      const res = await request(viewer, 'get', path);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
    const remove = await request(contributor, 'delete', picturePath('Bad'), { headers: { 'If-Match': '*' } });
    expect(remove.status).toBe(400);
    await create('bad-header');
    const header = await request(contributor, 'delete', picturePath('bad-header'), { headers: { 'If-Match': 'unquoted' } });
    expect(header.status).toBe(400);
    expect(header.body).toMatchObject({ error: 'invalid_request', field: 'headers.if-match' });
  });
});

describe('roles', () => {
  it('lets viewers read and refuses their writes (403); contributors and owners write', async () => {
    await create('roles');
    for (const path of [picturePath('roles'), `/projects/v1/${projectId}/pictures`]) {
      expect((await request(viewer, 'get', path)).status).toBe(200);
    }
    const write = await save(viewer, 'roles', { spec: spec('v'), svg: SVG }, { 'If-Match': '*' });
    expect(write.status).toBe(403);
    expect(write.body.error).toBe('forbidden');
    const remove = await request(viewer, 'delete', picturePath('roles'), { headers: { 'If-Match': '*' } });
    expect(remove.status).toBe(403);
    expect((await save(owner, 'roles', { spec: spec('o'), svg: SVG }, await current('roles'))).status).toBe(200);
    expect((await save(contributor, 'roles', { spec: spec('c'), svg: SVG }, await current('roles'))).status).toBe(200);
  });

  it('answers 404 to members of the organisation who are not in the project, organisation owners included', async () => {
    await create('members-only');
    for (const device of [outsider, organisationOwner]) {
      for (const [method, path] of [
        ['get', `/projects/v1/${projectId}/pictures`],
        ['get', picturePath('members-only')],
        ['get', `${picturePath('members-only')}/previous`],
        ['delete', picturePath('members-only')],
      ] as const) {
        const res = await request(device, method, path, { headers: { 'If-Match': '*' } });
        expect(res.status).toBe(404);
        expect(res.body.error).toBe('not_found');
      }
      expect((await save(device, 'members-only', { spec: spec(), svg: SVG }, { 'If-Match': '*' })).status).toBe(404);
    }
  });

  it("answers 404 for another organisation's project and for an unknown one", async () => {
    expect((await request(contributor, 'get', `/projects/v1/${otherProjectId}/pictures`)).status).toBe(404);
    expect((await request(contributor, 'get', '/projects/v1/prj_unknown/pictures')).status).toBe(404);
    // The stranger's device, on their own host, asking for this organisation's project.
    expect((await request(stranger, 'get', `/projects/v1/${projectId}/pictures`, { host: otherHost })).status).toBe(404);
    // …and on this organisation's host its token is not accepted at all.
    expect((await request(stranger, 'get', `/projects/v1/${projectId}/pictures`)).status).toBe(401);
  });

  it('refuses a viewer\'s save and delete that name the current version (403 forbidden), leaving the picture as it was', async () => {
    await create('viewer-refused');
    const before = await row('viewer-refused');
    const write = await save(viewer, 'viewer-refused', { spec: spec('changed'), svg: SVG }, await current('viewer-refused'));
    expect(write.status).toBe(403);
    expect(write.body).toEqual({ error: 'forbidden', message: expect.any(String) });
    const remove = await request(viewer, 'delete', picturePath('viewer-refused'), { headers: await current('viewer-refused') });
    expect(remove.status).toBe(403);
    expect(remove.body).toEqual({ error: 'forbidden', message: expect.any(String) });
    expect(await row('viewer-refused')).toEqual(before);
  });

  it("answers every route of another organisation's project word for word as an unknown project's, and changes nothing there", async () => {
    await create('ours');
    const ours = await row('ours');
    // The stranger saves in their own organisation's project, on their own host.
    const created = await request(stranger, 'put', picturePath('theirs', otherProjectId), { host: otherHost, body: { spec: spec('Theirs'), svg: SVG }, headers: { 'If-Match': '"0"' } });
    expect(created.status).toBe(201);
    const before = await row('theirs', otherProjectId);
    const asked: [EnrolledDevice, string, string][] = [
      [contributor, host, otherProjectId],
      [organisationOwner, host, otherProjectId],
      [stranger, otherHost, projectId],
    ];
    for (const [device, at, project] of asked) {
      const slug = project === otherProjectId ? 'theirs' : 'ours';
      for (const [method, path, options] of [
        ['get', `/projects/v1/${project}/pictures`, {}],
        ['get', picturePath(slug, project), {}],
        ['get', `${picturePath(slug, project)}/previous`, {}],
        ['put', picturePath(slug, project), { body: { spec: spec('Taken'), svg: SVG }, headers: { 'If-Match': '*' } }],
        ['delete', picturePath(slug, project), { headers: { 'If-Match': '*' } }],
      ] as const) {
        const res = await request(device, method, path, { host: at, ...options });
        const unknown = await request(device, method, path.replace(project, 'prj_unknown'), { host: at, ...options });
        expect(res.status).toBe(404);
        expect(unknown.status).toBe(404);
        expect(res.body).toEqual(unknown.body);
      }
    }
    expect(await row('theirs', otherProjectId)).toEqual(before);
    expect(await row('ours')).toEqual(ours);
  });

  it('refuses a node (no pictures scopes) with 403 insufficient_scope, and requests without a token with 401', async () => {
    const read = await request(node, 'get', `/projects/v1/${projectId}/pictures`);
    expect(read.status).toBe(403);
    expect(read.body.error).toBe('insufficient_scope');
    expect((await request(node, 'get', picturePath('roles'))).body.error).toBe('insufficient_scope');
    expect((await request(node, 'get', `${picturePath('roles')}/previous`)).body.error).toBe('insufficient_scope');
    expect((await save(node, 'node', { spec: spec(), svg: SVG })).body.error).toBe('insufficient_scope');
    expect((await request(node, 'delete', picturePath('roles'), { headers: { 'If-Match': '*' } })).body.error).toBe('insufficient_scope');
    const anonymous = await call(platform, 'get', `/projects/v1/${projectId}/pictures`, { host });
    expect(anonymous.status).toBe(401);
  });

  it('takes DPoP-bound device tokens', async () => {
    const bound = await enrolDevice(platform, { organisationId: organisation.id, personId: contributorId, alg: 'ES256' });
    expect((await save(bound, 'dpop', { spec: spec(), svg: SVG })).status).toBe(201);
    expect((await request(bound, 'get', picturePath('dpop'))).status).toBe(200);
  });
});

describe('GET /projects/v1/{id}/pictures/{slug} and …/previous', () => {
  it('answers 304 to If-None-Match naming the current version', async () => {
    const { body } = await create('cached');
    const res = await request(viewer, 'get', picturePath('cached'), { headers: { 'If-None-Match': `"${body.version}"` } });
    expect(res.status).toBe(304);
    expect(res.headers.etag).toBe(`"${body.version}"`);
    expect((await request(viewer, 'get', picturePath('cached'), { headers: { 'If-None-Match': '"ver_other"' } })).status).toBe(200);
    expect((await request(viewer, 'get', picturePath('cached'), { headers: { 'If-None-Match': 'garbage' } })).status).toBe(200);
    const previousOf = await save(contributor, 'cached', { spec: spec('2'), svg: SVG }, { 'If-Match': `"${body.version}"` });
    expect(previousOf.status).toBe(200);
    expect((await request(viewer, 'get', `${picturePath('cached')}/previous`, { headers: { 'If-None-Match': `"${body.version}"` } })).status).toBe(304);
  });

  it('answers 404 for a missing picture, and for the previous version of a picture that has none', async () => {
    expect((await request(viewer, 'get', picturePath('never'))).status).toBe(404);
    expect((await request(viewer, 'get', `${picturePath('never')}/previous`)).status).toBe(404);
    await create('single');
    const res = await request(viewer, 'get', `${picturePath('single')}/previous`);
    expect(res.status).toBe(404);
    expect(res.body.message).toContain('no previous version');
  });
});

describe('DELETE /projects/v1/{id}/pictures/{slug}', () => {
  it('needs If-Match (428), refuses a stale one (412), deletes the picture and its previous version (204)', async () => {
    const v1 = (await create('doomed')).body;
    const v2 = (await save(contributor, 'doomed', { spec: spec('2'), svg: SVG }, { 'If-Match': `"${v1.version}"` })).body;
    expect((await request(contributor, 'delete', picturePath('doomed'))).status).toBe(428);
    const stale = await request(contributor, 'delete', picturePath('doomed'), { headers: { 'If-Match': `"${v1.version}"` } });
    expect(stale.status).toBe(412);
    expect(stale.headers.etag).toBe(`"${v2.version}"`);
    expect((await request(contributor, 'delete', picturePath('doomed'), { headers: { 'If-Match': '"0"' } })).status).toBe(412);
    const gone = await request(owner, 'delete', picturePath('doomed'), { headers: { 'If-Match': `"${v2.version}"` } });
    expect(gone.status).toBe(204);
    expect(await row('doomed')).toBeUndefined();
    expect((await request(viewer, 'get', picturePath('doomed'))).status).toBe(404);
    expect((await request(viewer, 'get', `${picturePath('doomed')}/previous`)).status).toBe(404);
    expect((await request(owner, 'delete', picturePath('doomed'), { headers: { 'If-Match': '*' } })).status).toBe(404);

    // A new picture of the same slug has a new version: a version from before the delete never matches it.
    const reborn = (await create('doomed')).body;
    expect(reborn.version).not.toBe(v1.version);
    expect((await save(contributor, 'doomed', { spec: spec('late'), svg: SVG }, { 'If-Match': `"${v2.version}"` })).status).toBe(412);
    expect((await request(contributor, 'delete', picturePath('doomed'), { headers: await current('doomed') })).status).toBe(204);
  });
});

describe('GET /projects/v1/{id}/pictures', () => {
  it('lists newest first without SVG, the spec only with include=spec, and names the people', async () => {
    const { id: listProject } = await platform.services.projects.create(organisation.id, { name: 'Listed', owner: ownerId });
    await platform.services.projects.setMemberRole(organisation.id, listProject, contributorId, 'contributor');
    for (const [slug, device] of [['alpha', owner], ['beta', contributor], ['gamma', owner]] as const) {
      platform.clock.advance(1000);
      expect((await save(device, slug, { spec: spec(slug), svg: SVG }, { 'If-Match': '"0"' }, listProject)).status).toBe(201);
    }
    platform.clock.advance(1000);
    const alpha = (await request(owner, 'get', picturePath('alpha', listProject))).body;
    expect((await save(contributor, 'alpha', { spec: spec('alpha 2'), svg: SVG }, { 'If-Match': `"${alpha.version}"` }, listProject)).status).toBe(200);

    const list = await request(owner, 'get', `/projects/v1/${listProject}/pictures`);
    expect(list.status).toBe(200);
    expect(list.body.pictures.map((p: { slug: string }) => p.slug)).toEqual(['alpha', 'gamma', 'beta']);
    expect(list.body.pictures[0]).not.toHaveProperty('svg');
    expect(list.body.pictures[0]).not.toHaveProperty('spec');
    expect(list.body.pictures[0]).toMatchObject({ createdBy: ownerId, updatedBy: contributorId, previousVersion: alpha.version });
    expect(list.body.people).toEqual({ [ownerId]: { name: 'Olga Owner' }, [contributorId]: { name: 'Carl Contributor' } });
    expect(list.body.nextCursor).toBeNull();

    const withSpec = await request(owner, 'get', `/projects/v1/${listProject}/pictures?include=spec`);
    expect(withSpec.body.pictures.map((p: { spec: { meta: { title: string } } }) => p.spec.meta.title)).toEqual(['alpha 2', 'gamma', 'beta']);
    expect(withSpec.body.pictures[0]).not.toHaveProperty('svg');

    const first = await request(owner, 'get', `/projects/v1/${listProject}/pictures?limit=2`);
    expect(first.body.pictures.map((p: { slug: string }) => p.slug)).toEqual(['alpha', 'gamma']);
    expect(first.body.people).toEqual({ [ownerId]: { name: 'Olga Owner' }, [contributorId]: { name: 'Carl Contributor' } });
    const second = await request(owner, 'get', `/projects/v1/${listProject}/pictures?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.pictures.map((p: { slug: string }) => p.slug)).toEqual(['beta']);
    expect(second.body.people).toEqual({ [contributorId]: { name: 'Carl Contributor' } });
    expect(second.body.nextCursor).toBeNull();
  });

  it('refuses a malformed cursor or query (400)', async () => {
    for (const query of ['cursor=nonsense', `cursor=${Buffer.from('2026-01-01T00:00:00.000Z|BAD').toString('base64url')}`, 'include=svg', 'limit=0', 'limit=201', 'other=1']) {
      const res = await request(viewer, 'get', `/projects/v1/${projectId}/pictures?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });
});

describe('concurrency', () => {
  it('lets exactly one of several saves based on the same version win; the others get 412', async () => {
    const base = (await create('race')).body;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => save(i % 2 ? owner : contributor, 'race', { spec: spec(`writer ${i}`), svg: SVG }, { 'If-Match': `"${base.version}"` })),
    );
    const statuses = results.map((res) => res.status).sort();
    expect(statuses).toEqual([200, 412, 412, 412, 412, 412, 412, 412]);
    const winner = results.find((res) => res.status === 200)!.body;
    const stored = (await row('race'))!;
    expect(stored.version).toBe(winner.version);
    expect(stored.previous_version).toBe(base.version);
    expect(JSON.parse(stored.spec as string)).toEqual(winner.spec);
  });

  it('lets exactly one of several creations of the same slug win', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => save(contributor, 'born-once', { spec: spec(`${i}`), svg: SVG }, i % 2 ? { 'If-None-Match': '*' } : { 'If-Match': '"0"' })));
    expect(results.map((res) => res.status).sort()).toEqual([201, 412, 412, 412, 412, 412]);
  });

  it('lets exactly one of several deletes win', async () => {
    const { body } = await create('delete-race');
    const results = await Promise.all(Array.from({ length: 5 }, () => request(contributor, 'delete', picturePath('delete-race'), { headers: { 'If-Match': `"${body.version}"` } })));
    const statuses = results.map((res) => res.status);
    expect(statuses.filter((status) => status === 204)).toHaveLength(1);
    expect(statuses.every((status) => status === 204 || status === 404 || status === 412)).toBe(true);
  });
});

describe('pictures per project', () => {
  it(`keeps at most ${PICTURE_LIMITS.perProject} pictures, also under concurrent creations; updates still work at the limit`, async () => {
    const { id: full } = await platform.services.projects.create(organisation.id, { name: 'Full', owner: ownerId });
    const now = platform.clock.now();
    const rows = Array.from({ length: PICTURE_LIMITS.perProject - 2 }, (_, i) => ({
      project_id: full,
      slug: `seed-${i}`,
      version: `ver_seed${String(i).padStart(12, '0')}`,
      digest: 'seed',
      spec: JSON.stringify(spec()),
      svg: SVG,
      created_at: now,
      updated_at: now,
    }));
    await platform.dataSource.createQueryBuilder().insert().into('pictures').values(rows.map((r) => ({ projectId: r.project_id, slug: r.slug, version: r.version, digest: r.digest, spec: r.spec, svg: r.svg, createdAt: r.created_at, updatedAt: r.updated_at }))).execute();

    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => save(owner, `late-${i}`, { spec: spec(), svg: SVG }, { 'If-Match': '"0"' }, full)));
    expect(results.map((res) => res.status).sort()).toEqual([201, 201, 409, 409, 409, 409]);
    const refused = results.find((res) => res.status === 409)!;
    expect(refused.body).toMatchObject({ error: 'picture_limit_reached', max: PICTURE_LIMITS.perProject });
    const counted = await platform.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM pictures WHERE project_id = ?', [full]);
    expect(Number(counted[0]!.n)).toBe(PICTURE_LIMITS.perProject);

    // A full project still takes new versions of its pictures, and takes new ones once one goes.
    expect((await save(owner, 'seed-0', { spec: spec('changed'), svg: SVG }, await current('seed-0', full), full)).status).toBe(200);
    expect((await save(owner, 'one-more', { spec: spec(), svg: SVG }, { 'If-Match': '"0"' }, full)).status).toBe(409);
    expect((await request(owner, 'delete', picturePath('seed-1', full), { headers: await current('seed-1', full) })).status).toBe(204);
    expect((await save(owner, 'one-more', { spec: spec(), svg: SVG }, { 'If-Match': '"0"' }, full)).status).toBe(201);
  });
});
