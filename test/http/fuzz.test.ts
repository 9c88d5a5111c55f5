import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import request, { type Response } from 'supertest';
import { CONSOLE_REDIRECT, mintSession, startCloud } from '../support/cloud.js';
import { mintRun } from '../support/cloud-agents.js';
import { enrolDevice, enrolThroughDeviceCode, createPerson } from '../support/devices.js';
import { personHeaders, personIdFor, twoOrganisations, type TwoOrganisations } from '../support/organisations.js';
import { addressSequence, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * Every operation of the served OpenAPI document, on both deployments, sent generated bad input
 * (fast-check, fixed seed): wrong types, missing and extra fields, huge and deeply nested values,
 * odd Unicode, malformed headers, encodings and path parameters, with and without valid
 * credentials of each kind the operation accepts there (device tokens; person tokens on
 * self-hosted, Cloud sessions on Cloud, a fresh one for each operation; a cloud agent run's
 * credential, whose run's id is among the known ids). Whatever comes, the answer is never a 5xx,
 * an error body matches the error schema (or a protocol error the operation declares: the MCP
 * endpoint's JSON-RPC errors), and the status (and error code) is one the document declares for
 * that operation. Operations are discovered from the document: a new route is fuzzed without a
 * change here.
 */

const SEED = 20261124;
const RUNS_PER_OPERATION = 100;

type Schema = Record<string, unknown>;

const DEEP = '__deeply_nested__';

/** JSON text of a generated value, each deep marker replaced by objects nested `depth` deep
 * (built as text: JSON.stringify itself would overflow). */
function jsonText(value: unknown, depth = 20_000): string {
  return (JSON.stringify(value) ?? 'null').split(`"${DEEP}"`).join(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);
}

/** Ids of records the deployment holds (a project) and values it knows (a registered redirect URI), filled in when it is set up. */
const KNOWN_IDS: string[] = [];
interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  operationId: string;
  parameters: { name: string; in: string; schema: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
  security: Record<string, string[]>[];
}

interface FuzzRequest {
  path: string;
  host: string;
  headers: Record<string, string>;
  body?: { type: string; text: string };
}

// Values ------------------------------------------------------------------------------------

const ODD_STRINGS = [
  '',
  ' ',
  '\u0000',
  '\ud800',
  '\udfff\ud800',
  '\u202e\u202d',
  '\u200b\ufeff',
  'e\u0301\u0301\u0301',
  '😀'.repeat(50),
  '𝕏'.repeat(300),
  'ǅ',
  '\r\n\t',
  '../../etc/passwd',
  '%00',
  '<script>',
  "' OR 1=1 --",
  '${jndi:ldap://x}',
  'platform_at_notarealtoken000000000000',
  'x'.repeat(70_000),
];

const oddString = fc.oneof(
  fc.constantFrom(...ODD_STRINGS),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ maxLength: 400 }),
);

/** Nested arrays or objects, as JSON text, deeper than anything recursive should be trusted with. */
const deepJson = fc.tuple(fc.constantFrom(64, 500, 5_000, 50_000), fc.boolean()).map(([depth, objects]) =>
  objects ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}1${']'.repeat(depth)}`,
);

const wrongType = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(null, true, -1, 0, 1e308, -1e308, 2 ** 53 + 1, 0.5, [], {}, [[]], { '': null }, '1', 'true', 'null'),
);

function resolve(schema: Schema | undefined, doc: Schema): Schema {
  let current = schema ?? {};
  for (let hops = 0; typeof current.$ref === 'string' && hops < 10; hops++) {
    const path = (current.$ref).replace(/^#\//, '').split('/');
    current = path.reduce<Schema>((node, part) => (node[part] as Schema) ?? {}, doc);
  }
  if (Array.isArray(current.allOf)) current = Object.assign({}, ...(current.allOf as Schema[]).map((part) => resolve(part, doc)), { ...current, allOf: undefined });
  return current;
}

/** A value close to what the schema asks for (its required fields, its types), to mutate. */
function near(schema: Schema | undefined, doc: Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema, doc);
  if (depth > 4) return fc.constant(null);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if (Array.isArray(s.oneOf) && s.oneOf.length) return fc.oneof(...(s.oneOf as Schema[]).map((choice) => near(choice, doc, depth + 1)));
  const type = Array.isArray(s.type) ? (s.type as string[]).find((t) => t !== 'null') : (s.type as string | undefined);
  switch (type) {
    case 'object': {
      const properties = (s.properties as Record<string, Schema> | undefined) ?? {};
      const required = new Set((s.required as string[] | undefined) ?? []);
      const entries = Object.entries(properties);
      if (!entries.length) {
        const values = s.additionalProperties && typeof s.additionalProperties === 'object' ? near(s.additionalProperties as Schema, doc, depth + 1) : fc.jsonValue({ maxDepth: 2 });
        const names = resolve(s.propertyNames as Schema | undefined, doc);
        const keys = typeof names.pattern === 'string' ? fc.stringMatching(new RegExp(names.pattern), { size: 'xsmall' }) : fc.string({ minLength: 1, maxLength: 8 });
        // A free-form object (settings, event data, manifests): sometimes nested past what
        // recursive code survives (the marker becomes that nesting in the JSON text).
        return fc.oneof({ weight: 5, arbitrary: fc.dictionary(keys, values, { maxKeys: 3 }) }, { weight: 1, arbitrary: fc.constant<unknown>(DEEP) });
      }
      const record = fc.record(Object.fromEntries(entries.map(([name, property]) => [name, near(property, doc, depth + 1)])), {
        requiredKeys: entries.map(([name]) => name).filter((name) => required.has(name)),
      });
      if (s.additionalProperties === false) return record;
      // Further fields are allowed: sometimes one nested past what recursive code survives.
      return fc.tuple(record, fc.nat(5)).map(([value, roll]) => (roll === 0 ? { ...value, extraDeep: DEEP } : value));
    }
    case 'array': {
      const constraints = { minLength: (s.minItems as number | undefined) ?? 0, maxLength: Math.min((s.maxItems as number | undefined) ?? 3, 3) };
      const items = near(s.items as Schema, doc, depth + 1);
      return s.uniqueItems ? fc.uniqueArray(items, { ...constraints, selector: (item) => JSON.stringify(item) }) : fc.array(items, constraints);
    }
    case 'integer':
      return fc.integer({ min: (s.minimum as number | undefined) ?? -1000, max: (s.maximum as number | undefined) ?? 1_000_000 });
    case 'number':
      return fc.double({ min: (s.minimum as number | undefined) ?? -1e6, max: (s.maximum as number | undefined) ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'string': {
      if (s.format === 'date-time') return fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString());
      if (s.format === 'email') return fc.emailAddress();
      if (typeof s.pattern === 'string') {
        try {
          return fc.stringMatching(new RegExp(s.pattern), { size: 'xsmall' }).filter((value) => value.length <= ((s.maxLength as number | undefined) ?? 200));
        } catch {
          // A pattern fast-check cannot generate from: plain strings below.
        }
      }
      const plain = fc.string({ minLength: Math.max((s.minLength as number | undefined) ?? 0, 0), maxLength: Math.max(Math.min((s.maxLength as number | undefined) ?? 30, 30), (s.minLength as number | undefined) ?? 0) });
      // Ids of things that exist in the deployment, so that a request can get past "not found".
      return KNOWN_IDS.length ? fc.oneof(plain, fc.constantFrom(...KNOWN_IDS)) : plain;
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** The near value of the body with one thing made wrong (or none), as JSON text. */
function mutatedBody(schema: Schema, doc: Schema): fc.Arbitrary<string> {
  const s = resolve(schema, doc);
  const required = (s.required as string[] | undefined) ?? [];
  const names = Object.keys((s.properties as Record<string, unknown> | undefined) ?? {});
  return fc
    .tuple(
      near(schema, doc),
      fc.constantFrom('none', 'drop', 'extra', 'wrong-type', 'odd-string', 'huge', 'deep'),
      fc.constantFrom(...(names.length ? names : ['field'])),
      wrongType,
      oddString,
      fc.string({ maxLength: 12 }),
      fc.constantFrom(300, 20_000),
    )
    .map(([base, mutation, name, wrong, odd, extraName, depth]) => {
      if (base === null || typeof base !== 'object' || Array.isArray(base)) return jsonText(base, depth);
      const value = { ...(base as Record<string, unknown>) };
      switch (mutation) {
        case 'drop':
          delete value[required[0] ?? name];
          break;
        case 'extra':
          value[`${extraName}_extra`] = wrong;
          break;
        case 'wrong-type':
          value[name] = wrong;
          break;
        case 'odd-string':
          value[name] = odd;
          break;
        case 'huge':
          value[name] = 'x'.repeat(200_000);
          break;
        case 'deep':
          // Nested past what recursive code (canonical JSON, merging, redaction) survives.
          value[name] = DEEP;
          break;
        default:
      }
      return jsonText(value, depth);
    });
}

// Requests ----------------------------------------------------------------------------------

/** A generated value as a query, path or header holds it (objects as JSON: a dictionary fast-check
 * makes has no prototype, so `String()` cannot convert it). */
const asText = (value: unknown): string => (typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));

/** Percent-encoded as UTF-8; a lone surrogate (which UTF-8 cannot carry) becomes U+FFFD. */
const encode = (value: string) => encodeURIComponent(value.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));

interface Credentials {
  device: Record<string, string>;
  /** Self-hosted: a person token of an owner. */
  person: Record<string, string> | undefined;
  /** Cloud: an owner's session, acting for the organisation (`X-Platform-Organisation`). */
  session: Record<string, string> | undefined;
  /** A cloud agent run's credential (its run's id is a known id). */
  run: Record<string, string>;
}

const MALFORMED_PATH_VALUES = ['%', '%zz', '%E0%A4%A', '%C0%AF', '..', '%2F', '%00', 'a'.repeat(5000), '%F0%9F%98%80'];

const garbageAuthorization = fc.oneof(
  fc.string({ maxLength: 50 }),
  fc.string({ maxLength: 60 }).map((junk) => `Bearer ${junk}`),
  fc.string({ maxLength: 60 }).map((junk) => `DPoP ${junk}`),
  fc.string({ maxLength: 60 }).map((junk) => `Bearer platform_at_${junk}`),
  fc.string({ maxLength: 60 }).map((junk) => `Bearer platform_cr_${junk}`),
  fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', `Bearer ${'a'.repeat(9000)}`, 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.', 'Bearer a b c'),
);

type Fault = 'none' | 'path' | 'query' | 'auth' | 'headers' | 'body' | 'encoding' | 'content-type' | 'host';

/**
 * A request close to a valid one (plausible path parameters and query, the credentials the
 * operation takes, a body near its schema with its media type) with one thing made wrong, so
 * that each fault reaches as far into the operation as it can.
 */
function requestArbitrary(operation: Operation, doc: Schema, host: string, credentials: Credentials): fc.Arbitrary<FuzzRequest> {
  const pathParameters = operation.parameters.filter((p) => p.in === 'path');
  const queryParameters = operation.parameters.filter((p) => p.in === 'query');
  const bodyTypes = Object.keys(operation.requestBody?.content ?? {});
  const bodySchema = operation.requestBody?.content[bodyTypes[0] ?? 'application/json']?.schema;
  const schemes = new Set(operation.security.flatMap((requirement) => Object.keys(requirement)));
  // Each kind of credential the operation takes here, in turn.
  const accepted = [
    ...(schemes.has('deviceToken') ? [credentials.device] : []),
    ...(schemes.has('personToken') && credentials.person ? [credentials.person] : []),
    ...(schemes.has('cloudSession') && credentials.session ? [credentials.session] : []),
    ...(schemes.has('runCredential') ? [credentials.run] : []),
  ];
  const validAuth = accepted.length ? fc.constantFrom(...accepted) : fc.constant({});

  const fillPath = (values: readonly string[]) => {
    let filled = operation.path;
    pathParameters.forEach((parameter, index) => (filled = filled.replace(`{${parameter.name}}`, values[index] ?? 'x')));
    return filled;
  };
  const plausibleId = fc.constantFrom('prj_0000000000000000', 'dev_0000000000000000', 'jk_0000000000000000', 'x1', ...KNOWN_IDS).map(encode);
  const badPathValue = fc.oneof(
    fc.constantFrom(...MALFORMED_PATH_VALUES),
    // Never empty: `/join-keys/` is the collection, another operation's path.
    oddString.filter((value) => value !== '').map((value) => encode(value.slice(0, 300))),
    fc.string({ minLength: 1, maxLength: 40 }).map((value) => encode(value)),
  );
  // An id of something that exists (most often one the deployment holds: a project, a run), or a
  // value of the parameter's own schema (a picture's slug).
  const plausible = (parameter: Operation['parameters'][number]) =>
    fc.oneof(
      ...(KNOWN_IDS.length ? [{ weight: 2, arbitrary: fc.constantFrom(...KNOWN_IDS).map(encode) }] : []),
      { weight: 1, arbitrary: plausibleId },
      { weight: 1, arbitrary: near(parameter.schema, doc).map((value) => encode(asText(value))).filter((value) => value !== '') },
    );
  const path = (fault: boolean) =>
    fc.tuple(...pathParameters.map((parameter) => (fault ? fc.oneof(badPathValue, plausible(parameter)) : plausible(parameter)))).map(fillPath);

  // Kept under Node's 16 KB limit of a request head (beyond it Node answers 431 before the app).
  const badQueryValue = fc.oneof(
    wrongType.map((value) => JSON.stringify(value).slice(0, 1000)),
    oddString.map((value) => value.slice(0, 1000)),
    fc.constantFrom('%', '%zz', '1e999', '-1', ''),
  );
  const query = (fault: boolean) =>
    fc
      .tuple(
        fc.subarray(queryParameters).chain((chosen) =>
          fc.tuple(...chosen.map((p) => (fault ? fc.oneof(near(p.schema, doc).map(asText), badQueryValue) : near(p.schema, doc).map(asText)).map((value) => [p.name, value] as const))),
        ),
        fault ? fc.option(fc.tuple(fc.string({ minLength: 1, maxLength: 10 }), fc.string({ maxLength: 10 })), { nil: undefined }) : fc.constant(undefined),
        fault ? fc.boolean() : fc.constant(false),
      )
      .map(([pairs, extra, repeat]) => {
        const parts = pairs.map(([name, value]) => `${encode(name)}=${encode(value)}`);
        if (repeat && parts[0]) parts.push(parts[0]);
        if (extra) parts.push(`${encode(extra[0])}=${encode(extra[1])}`);
        return parts.length ? `?${parts.join('&')}` : '';
      });

  const badAuth = fc.oneof(
    fc.constant({}),
    fc.constant(credentials.device),
    fc.constant(credentials.person ?? {}),
    fc.constant(credentials.session ?? {}),
    fc.constant(credentials.run),
    // A session naming an organisation its person does not belong to.
    fc.constant(credentials.session ? { ...credentials.session, 'X-Platform-Organisation': 'org_0000000000000000' } : {}),
    garbageAuthorization.map((value) => ({ Authorization: value })),
  );
  const badHeaders = fc.record(
    {
      DPoP: fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('a.b.c', 'eyJ.eyJ.x', 'x'.repeat(5000), 'p1, p2')),
      'If-None-Match': fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('*', '"x"', 'W/"x", "y"')),
      'X-Platform-Organisation': fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('org_x', '')),
      'X-Request-Id': fc.string({ maxLength: 200 }),
      'X-Forwarded-Host': fc.constantFrom('evil.test', 'a@b', ''),
      'X-Forwarded-Proto': fc.constantFrom('https', 'ftp', 'https, http'),
      Accept: fc.constantFrom('text/html', '*/*', 'application/xml'),
    },
    { requiredKeys: [] },
  );
  // The request headers the operation documents (conditions such as If-Match), sometimes sent,
  // so that a write can get past 428.
  const headerParameters = operation.parameters.filter((p) => p.in === 'header' && p.name !== 'X-Platform-Organisation');
  const declaredHeaders = fc.record(
    Object.fromEntries(
      headerParameters.map((p) => [p.name, fc.oneof(fc.constantFrom('*', '"0"'), near(p.schema, doc).map(asText)).filter((value) => /^[\x20-\x7e]*$/.test(value))]),
    ),
    { requiredKeys: [] },
  ) as fc.Arbitrary<Record<string, string>>;
  const declaredType = fc.constantFrom(...(bodyTypes.length ? bodyTypes : ['application/json']));
  const otherType = fc.constantFrom(
    'application/json; charset=latin1',
    'application/json; charset=utf-16',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
  );
  const nearBody = bodySchema ? mutatedBody(bodySchema, doc) : fc.constant('{}');
  const badBodyText = fc.oneof(
    { weight: 4, arbitrary: nearBody },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: deepJson },
    { weight: 1, arbitrary: fc.constantFrom('', '{', '{"a":', '[1,]', 'nul', '\u0000', '{"a":"\\ud800"}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}') },
    { weight: 1, arbitrary: fc.string({ maxLength: 100 }) },
    { weight: 1, arbitrary: fc.constantFrom('x'.repeat(1_100_000), `{"a":"${'x'.repeat(300_000)}"}`) },
  );
  const validBody = bodySchema ? fc.tuple(declaredType, near(bodySchema, doc).map((value) => jsonText(value))) : fc.constant(undefined);

  const fault = fc.constantFrom<Fault>('none', 'path', 'query', 'auth', 'headers', 'body', 'body', 'body', 'encoding', 'content-type', 'host');
  return fault.chain((chosen) =>
    fc
      .record({
        path: path(chosen === 'path'),
        query: query(chosen === 'query'),
        host: chosen === 'host' ? fc.constantFrom('nobody-fuzz.test', 'fuzz..test', '', 'FUZZ.TEST:99999') : fc.constant(host),
        auth: chosen === 'auth' ? badAuth : validAuth,
        headers: chosen === 'headers' ? badHeaders : declaredHeaders,
        body:
          chosen === 'body'
            ? fc.tuple(declaredType, badBodyText)
            : chosen === 'content-type'
              ? fc.tuple(otherType, nearBody)
              : chosen === 'encoding'
                ? fc.tuple(declaredType, nearBody)
                : validBody,
        encoding: chosen === 'encoding' ? fc.constantFrom('gzip', 'deflate', 'br', 'zstd', 'x-junk', 'gzip, gzip', 'identity') : fc.constant(undefined),
      })
      .map((r) => ({
        path: `${r.path}${r.query}`,
        host: r.host,
        headers: { ...r.auth, ...r.headers, ...(r.encoding ? { 'Content-Encoding': r.encoding } : {}) },
        ...(r.body ? { body: { type: r.body[0], text: r.body[1] } } : {}),
      })),
  );
}

// Checks ------------------------------------------------------------------------------------

function documentValidator(doc: Schema) {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  (addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addSchema({ ...doc, $id: 'openapi-document' });
  const cache = new Map<string, ValidateFunction>();
  return (pointer: string): ValidateFunction => {
    let validate = cache.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `openapi-document#${pointer}` });
      cache.set(pointer, validate);
    }
    return validate;
  };
}

const pointerPart = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');

function expectDeclared(operation: Operation, validatorAt: (pointer: string) => ValidateFunction, sent: FuzzRequest, res: Response): void {
  const where = `${operation.method.toUpperCase()} ${sent.path.slice(0, 200)} → ${res.status} ${res.text.slice(0, 300)}`;
  if (res.status >= 500) throw new Error(`a 5xx: ${where}`);
  const declared = operation.responses[String(res.status)];
  if (!declared) throw new Error(`status ${res.status} is not declared for ${operation.operationId}: ${where}`);
  const lines = declared.content?.['application/x-ndjson'];
  if (lines) {
    // A stream of JSON lines (the audit export): each line matches the declared line schema.
    const validate = validatorAt(`/paths/${pointerPart(operation.path)}/${operation.method}/responses/${res.status}/content/${pointerPart('application/x-ndjson')}/schema`);
    for (const line of res.text.split('\n').filter(Boolean)) if (!validate(JSON.parse(line))) throw new Error(`a line does not match its declared schema (${JSON.stringify(validate.errors?.[0])}): ${where}`);
    return;
  }
  const json = declared.content?.['application/json'];
  if (!json) {
    if (res.text) throw new Error(`an empty answer was declared: ${where}`);
    return;
  }
  const pointer = `/paths/${pointerPart(operation.path)}/${operation.method}/responses/${res.status}/content/${pointerPart('application/json')}/schema`;
  const validate = validatorAt(pointer);
  if (!validate(res.body)) throw new Error(`the answer does not match its declared schema (${JSON.stringify(validate.errors?.[0])}): ${where}`);
  if (res.status >= 400 && !validatorAt('/components/schemas/Error')(res.body) && !declaredProtocolError(json.schema, res.body)) throw new Error(`not the error body: ${where}`);
}

/** A protocol error (the MCP endpoint's JSON-RPC error responses) whose `error.code` the answer's schema lists. */
function declaredProtocolError(schema: Schema, body: unknown): boolean {
  const code = (body as { error?: { code?: unknown } } | null)?.error?.code;
  const choices = (Array.isArray(schema.oneOf) ? schema.oneOf : [schema]) as Schema[];
  return typeof code === 'number' && choices.some((choice) => ((choice.properties as { error?: { properties?: { code?: { enum?: unknown[] } } } } | undefined)?.error?.properties?.code?.enum ?? []).includes(code));
}

// The deployments -----------------------------------------------------------------------------

interface Deployment {
  platform: TestPlatform;
  orgs?: TwoOrganisations;
  host: string;
  /** Cloud: the team the credentials act for. */
  organisationId?: string;
  credentials: Credentials;
}

const from = addressSequence('10.88');

async function selfHosted(): Promise<Deployment> {
  const platform = await startPlatform({ env: { TRUST_PROXY: 'loopback' } });
  const orgs = await twoOrganisations(platform, platform.clock);
  const owner = await personHeaders(orgs.idp, 'owner');
  const tokens = await enrolThroughDeviceCode(platform, orgs.host, owner, { headers: { 'X-Forwarded-For': from() } });
  // The devices' person owns the project, so that its pictures can be read and written.
  const project = await platform.services.projects.create(orgs.organisation.id, { name: 'Fuzzed', owner: await personIdFor(platform, orgs.idp, 'owner') });
  // A run of another person's workbench: the fuzzed device's requests can neither end it nor count against it.
  const run = await mintRun(platform, orgs.organisation.id);
  KNOWN_IDS.splice(0, KNOWN_IDS.length, project.id, run.runId);
  return { platform, orgs, host: orgs.host, credentials: { device: { Authorization: `Bearer ${tokens.access_token}` }, person: owner, session: undefined, run: run.headers } };
}

async function cloud(): Promise<Deployment> {
  // Mails (emailed codes) go to an outbox folder of its own; rate limits stay on.
  const platform = await startCloud({ env: { TRUST_PROXY: 'loopback', RATE_LIMITS_ENABLED: 'true' } });
  const organisation = await createOrganisation(platform, { kind: 'team' });
  const person = await createPerson(platform, organisation.id, 'owner');
  const { tokens } = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
  const project = await platform.services.projects.create(organisation.id, { name: 'Fuzzed', owner: person.id });
  const run = await mintRun(platform, organisation.id);
  KNOWN_IDS.splice(0, KNOWN_IDS.length, project.id, CONSOLE_REDIRECT, run.runId);
  return {
    platform,
    host: new URL(platform.config.baseUrl!).host,
    organisationId: organisation.id,
    credentials: { device: { Authorization: `Bearer ${tokens.access_token}` }, person: undefined, session: undefined, run: run.headers },
  };
}

let sessions = 0;

/** A fresh Cloud session of an owner of the deployment's organisation (an operation may end it, or the account). */
async function freshSession(d: Deployment): Promise<Record<string, string> | undefined> {
  if (!d.organisationId) return undefined;
  const session = await mintSession(d.platform, `fuzz-owner-${++sessions}@example.test`, [[d.organisationId, 'owner']]);
  return { Authorization: `Bearer ${session.access_token}`, 'X-Platform-Organisation': d.organisationId };
}

describe.each([
  ['self-hosted', selfHosted],
  ['Cloud', cloud],
])('fuzzing every operation on %s', (_name, setUp) => {
  let d: Deployment;
  let doc: Schema;
  let operations: Operation[];

  beforeAll(async () => {
    d = await setUp();
    const served = await request(d.platform.app).get('/openapi.json').set('Host', d.host);
    expect(served.status).toBe(200);
    doc = served.body as Schema;
    operations = Object.entries(doc.paths as Record<string, Record<string, Omit<Operation, 'method' | 'path'>>>).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({ ...op, method: method as Operation['method'], path, parameters: op.parameters ?? [] })),
    );
  });
  afterAll(async () => {
    await Promise.all([d?.orgs?.idp.close(), d?.orgs?.otherIdp.close()]);
    await d?.platform.close();
  });

  it('answers generated bad input without a 5xx, with declared statuses, codes and bodies only', async () => {
    expect(operations.length).toBeGreaterThan(5);
    const validatorAt = documentValidator(doc);
    let sent = 0;
    const statuses = new Map<string, number>();
    for (const [index, operation] of operations.entries()) {
      const credentials = { ...d.credentials, session: await freshSession(d) };
      await fc.assert(
        fc.asyncProperty(requestArbitrary(operation, doc, d.host, credentials), async (fuzz) => {
          let test = request(d.platform.app)[operation.method](fuzz.path).set('Host', fuzz.host).set('X-Forwarded-For', from());
          for (const [name, value] of Object.entries(fuzz.headers)) test = test.set(name, value);
          if (fuzz.body) test = test.set('Content-Type', fuzz.body.type).send(fuzz.body.text);
          const res = await test;
          sent += 1;
          const key = `${operation.operationId} ${res.status}${process.env.FUZZ_STATS === 'fields' ? ` ${res.body?.field ?? ''}` : ''}`;
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
          expectDeclared(operation, validatorAt, fuzz, res);
        }),
        { seed: SEED + index, numRuns: RUNS_PER_OPERATION, endOnFailure: true },
      );
    }
    expect(sent).toBeGreaterThanOrEqual(operations.length * RUNS_PER_OPERATION);
    if (process.env.FUZZ_STATS) console.log([...statuses].sort().map(([k, v]) => `${k}: ${v}`).join('\n'));
    // The run credential got requests through to the MCP endpoint's relay, not only refused.
    const mcp = operations.filter((operation) => JSON.stringify(operation.security).includes('runCredential'));
    expect(mcp.map((operation) => operation.operationId)).toEqual(['callCloudAgentRunTools']);
    expect([...statuses.keys()].filter((key) => /^callCloudAgentRunTools 20[02]/.test(key)).length).toBeGreaterThan(0);
    // Nothing the fuzz sent was logged as an unexpected failure.
    expect(d.platform.logs.filter((line) => (line.level as number) >= 50)).toEqual([]);
  }, 180_000);
});
