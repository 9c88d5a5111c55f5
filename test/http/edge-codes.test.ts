import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import request from 'supertest';
import type { ErrorCode } from '../../src/error-codes.js';
import { acceptedKinds, errorCodesOf, readsDatabase, servedOn, type RouteDefinition } from '../../src/http/route.js';
import { mintSession } from '../support/cloud.js';
import { mintRun, type MintedRun } from '../support/cloud-agents.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { personHeaders, twoOrganisations, type TwoOrganisations } from '../support/organisations.js';
import { addressSequence, call, createOrganisation, hostOf, startPlatform, unreachableRedis, type TestPlatform } from '../support/platform.js';

/**
 * The edge's refusals, on every operation each deployment serves, discovered from the route
 * registry: each (status, code) that `errorCodesOf` derives from a route's declaration (not its
 * own `errors`, which its module's tests reach) is answered here. A new route gets these for free.
 */

const EDGE_CODES: readonly ErrorCode[] = [
  'invalid_request',
  'json_too_complex',
  'payload_too_large',
  'unsupported_media_type',
  'unknown_tenant',
  'unauthorized',
  'invalid_dpop_proof',
  'use_dpop_nonce',
  'insufficient_scope',
  'too_many_requests',
  'slow_down',
  'unavailable',
  'not_found',
];

const CLOUD_ENV = { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.test' };

interface Deployment {
  /** Small body limits, rate limits on, DPoP nonces required. */
  platform: TestPlatform;
  /** Redis configured but unreachable. */
  withoutRedis: TestPlatform;
  /** The database gone (its connection closed after set-up), with credentials minted before. */
  withoutDatabase: TestPlatform;
  down: { device: EnrolledDevice; run: MintedRun; session: Record<string, string> };
  redis: Redis;
  host: string;
  redisHost: string;
  orgs?: TwoOrganisations;
  /** The organisation the credentials act for. */
  organisationId: string;
  /** An unbound workbench (every scope), a key-bound one, two with one scope each (each lacks the other's). */
  device: EnrolledDevice;
  bound: EnrolledDevice;
  scopeless: EnrolledDevice;
  onlyOrganisation: EnrolledDevice;
  boundWithoutRedis: EnrolledDevice;
  /** An unbound workbench where Redis is away: its requests get as far as the rate limits. */
  deviceWithoutRedis: EnrolledDevice;
  /** Cloud agent runs, for the run's MCP endpoint (run credentials). */
  run: MintedRun;
  runWithoutRedis: MintedRun;
}

const nextAddress = addressSequence('10.77');

function concrete(route: RouteDefinition): string {
  return route.path.replace(/\{\w+\}/g, 'x1');
}

async function setUp(env: Record<string, string>): Promise<Deployment> {
  const platform = await startPlatform({ env: { ...env, TRUST_PROXY: 'loopback', JSON_BODY_LIMIT: '1kb', INGEST_MAX_BYTES: '1kb', MCP_MAX_BYTES: '1kb', MCP_REQUESTS_PER_MINUTE: '5', DPOP_REQUIRE_NONCE: 'true' } });
  const redis = await unreachableRedis();
  const withoutRedis = await startPlatform({ redis, env: { ...env, TRUST_PROXY: 'loopback' } });
  let orgs: TwoOrganisations | undefined;
  let organisationId: string;
  if (platform.config.deployment === 'self-hosted') {
    orgs = await twoOrganisations(platform, platform.clock);
    organisationId = orgs.organisation.id;
  } else {
    organisationId = (await createOrganisation(platform, { kind: 'team' })).id;
  }
  const host = platform.config.deployment === 'self-hosted' ? orgs!.host : 'api.platform.test';
  const person = await createPerson(platform, organisationId, 'owner');
  const device = await enrolDevice(platform, { organisationId, personId: person.id });
  const bound = await enrolDevice(platform, { organisationId, personId: person.id, alg: 'ES256' });
  const scopeless = await enrolDevice(platform, { organisationId, personId: person.id, scope: 'relay:connect' });
  const onlyOrganisation = await enrolDevice(platform, { organisationId, personId: person.id, scope: 'organisation:read' });
  const elsewhere = await createOrganisation(withoutRedis);
  const redisHost = platform.config.deployment === 'self-hosted' ? await hostOf(withoutRedis, elsewhere) : 'api.platform.test';
  const redisPerson = await createPerson(withoutRedis, elsewhere.id, 'owner');
  const boundWithoutRedis = await enrolDevice(withoutRedis, { organisationId: elsewhere.id, personId: redisPerson.id, alg: 'ES256' });
  const deviceWithoutRedis = await enrolDevice(withoutRedis, { organisationId: elsewhere.id, personId: redisPerson.id });
  const run = await mintRun(platform, organisationId);
  const runWithoutRedis = await mintRun(withoutRedis, elsewhere.id);
  // Signing keys kept in the database (a shared secret), as several replicas keep them.
  const withoutDatabase = await startPlatform({ env: { ...env, TRUST_PROXY: 'loopback', SIGNING_KEYS_SECRET: randomBytes(32).toString('base64url') } });
  const downOrganisation = await createOrganisation(withoutDatabase, platform.config.deployment === 'cloud' ? { kind: 'team' } : {});
  const downPerson = await createPerson(withoutDatabase, downOrganisation.id, 'owner');
  const down = {
    device: await enrolDevice(withoutDatabase, { organisationId: downOrganisation.id, personId: downPerson.id }),
    run: await mintRun(withoutDatabase, downOrganisation.id),
    session: await mintSession(withoutDatabase, 'edge-down@example.test', [[downOrganisation.id, 'owner']]).then((session) => ({
      Authorization: `Bearer ${session.access_token}`,
      'X-Platform-Organisation': downOrganisation.id,
    })),
  };
  // The database stops answering: every query fails as after a lost connection.
  await withoutDatabase.dataSource.destroy();
  return { platform, withoutRedis, withoutDatabase, down, redis, host, redisHost, orgs, organisationId, device, bound, scopeless, onlyOrganisation, boundWithoutRedis, deviceWithoutRedis, run, runWithoutRedis };
}

async function tearDown(deployment: Deployment | undefined): Promise<void> {
  if (!deployment) return;
  await Promise.all([deployment.orgs?.idp.close(), deployment.orgs?.otherIdp.close()]);
  deployment.redis.disconnect();
  await deployment.platform.close();
  await deployment.withoutRedis.close();
  await deployment.withoutDatabase.stop();
  await deployment.withoutDatabase.database.drop();
}

let people = 0;

/** A new owner's Cloud session, acting for `organisationId` (or naming it without belonging to it). */
async function cloudSession(deployment: Deployment, organisationId: string, member = true): Promise<Record<string, string>> {
  const session = await mintSession(deployment.platform, `edge-owner-${++people}@example.test`, member ? [[organisationId, 'owner']] : []);
  return { Authorization: `Bearer ${session.access_token}`, 'X-Platform-Organisation': organisationId };
}

/** Credentials the route accepts on this deployment, the most privileged: a device with every
 * scope, or an owner (a new one each time: some limits count per person). */
async function credentialsFor(route: RouteDefinition, deployment: Deployment): Promise<Record<string, string>> {
  const kinds = acceptedKinds(route, deployment.platform.profile);
  if (route.auth === 'public') return {};
  if (kinds.includes('device')) return deviceHeaders(deployment.device, route.method, '');
  if (kinds.includes('person') && deployment.orgs) return personHeaders(deployment.orgs.idp, 'owner', `edge-owner-${++people}`);
  if (kinds.includes('cloud-session')) return cloudSession(deployment, deployment.organisationId);
  if (kinds.includes('run-credential')) return deployment.run.headers;
  throw new Error(`${route.operationId}: no credentials for ${route.auth.join(', ')} in this test`);
}

/** Objects nested deeper than any route's JSON limits allow. */
const DEEP_BODY = `${'{"a":'.repeat(100)}1${'}'.repeat(100)}`;

/** The request that makes the edge answer `code` on this route. */
async function reach(route: RouteDefinition, code: ErrorCode, d: Deployment) {
  const { platform } = d;
  const path = concrete(route);
  const from = { 'X-Forwarded-For': nextAddress() };
  const origin = platform.config.deployment === 'cloud' ? 'https://api.platform.test' : `http://${d.host}`;
  // DPoP proofs carry the real time: the platforms' clocks follow it (this test runs for a while).
  platform.clock.set(Date.now());
  d.withoutRedis.clock.set(Date.now());
  switch (code) {
    case 'invalid_request':
      return call(platform, route.method, path, { host: 'zq7..test', headers: from });
    case 'payload_too_large':
      // Over the route's own limit, or JSON_BODY_LIMIT (1 KB here): refused before anything else.
      return call(platform, route.method, path, { host: d.host, headers: from, raw: { type: 'application/json', data: JSON.stringify({ pad: 'x'.repeat((route.bodyLimitBytes ?? 1024) + 1) }) } });
    case 'json_too_complex':
      return call(platform, route.method, path, { host: d.host, headers: { ...from, ...(await credentialsFor(route, d)) }, raw: { type: 'application/json', data: DEEP_BODY } });
    case 'not_found':
      // A Cloud session naming an organisation its person does not belong to.
      return call(platform, route.method, path, { host: d.host, headers: { ...from, ...(await cloudSession(d, d.organisationId, false)) } });
    case 'unsupported_media_type':
      return call(platform, route.method, path, { host: d.host, headers: { ...from, ...(await credentialsFor(route, d)) }, raw: { type: 'text/plain', data: 'plain text' } });
    case 'unknown_tenant':
      return call(platform, route.method, path, { host: 'nobody-here.test', headers: from });
    case 'unauthorized':
      // A route whose token is optional (the token endpoint) refuses only a token it cannot use.
      return call(platform, route.method, path, { host: d.host, headers: route.authOptional ? { ...from, Authorization: 'Bearer platform_sa_unknown' } : from });
    case 'invalid_dpop_proof':
      // A key-bound token sent as a plain Bearer token.
      return call(platform, route.method, path, { host: d.host, headers: { ...from, Authorization: `Bearer ${d.bound.tokens.access_token}` } });
    case 'use_dpop_nonce':
      return call(platform, route.method, path, { host: d.host, headers: { ...from, ...(await deviceHeaders(d.bound, route.method.toUpperCase(), `${origin}${path}`)) } });
    case 'insufficient_scope': {
      const lacking = route.deviceScope === d.scopeless.device.scope ? d.onlyOrganisation : d.scopeless;
      return call(platform, route.method, path, { host: d.host, headers: { ...from, Authorization: `Bearer ${lacking.tokens.access_token}` } });
    }
    case 'slow_down':
    case 'too_many_requests': {
      const headers = { ...from, ...(await credentialsFor(route, d)) };
      const limit = Math.max(...(route.rateLimits ?? []).map((rule) => rule.limit));
      for (let sent = 0; sent < limit; sent++) {
        let test = request(platform.app)[route.method](path).set('Host', d.host);
        for (const [name, value] of Object.entries(headers)) test = test.set(name, value);
        if ((await test).status === 429) break;
      }
      return call(platform, route.method, path, { host: d.host, headers });
    }
    case 'unavailable': {
      // A rate-limited route meets Redis first (its counters come before anything else): the
      // same code, reached through a Redis outage below. Every other route meets the database.
      if (readsDatabase(route, d.withoutDatabase.profile) && !route.rateLimits?.length) {
        // The database is gone: the first read on the request's way (the tenant by host name on
        // self-hosted, the token's record, the handler's store) fails, and the edge answers 503.
        const down = d.withoutDatabase;
        down.clock.set(Date.now() + 86_400_000);
        const kinds = acceptedKinds(route, down.profile);
        const headers = kinds.includes('device')
          ? { Authorization: `Bearer ${d.down.device.tokens.access_token}` }
          : kinds.includes('cloud-session')
            ? d.down.session
            : kinds.includes('run-credential')
              ? d.down.run.headers
              : {};
        const host = down.config.deployment === 'cloud' ? 'api.platform.test' : `down-${++people}.example.test`;
        const body = route.schemas.body ? sampleBody(route) : undefined;
        return call(down, route.method, path, { host, headers: { ...from, ...headers }, ...(body === undefined ? {} : { body }) });
      }
      const redisOrigin = platform.config.deployment === 'cloud' ? 'https://api.platform.test' : `http://${d.redisHost}`;
      // Credentials that get the request as far as what needs Redis: the DPoP replay cache (a
      // key-bound token), or a rate limit counted after authentication (a plain token).
      const kinds = route.auth === 'public' ? [] : route.auth;
      const countedAfterAuthentication = (route.rateLimits ?? []).some((rule) => rule.by !== 'address') && !(route.rateLimits ?? []).some((rule) => rule.by === 'address');
      const headers = kinds.includes('run-credential')
        ? d.runWithoutRedis.headers
        : kinds.includes('device') && !route.rateLimits?.length
          ? await deviceHeaders(d.boundWithoutRedis, route.method.toUpperCase(), `${redisOrigin}${path}`)
          : kinds.includes('device') && countedAfterAuthentication
            ? await deviceHeaders(d.deviceWithoutRedis, route.method.toUpperCase(), '')
            : {};
      return call(d.withoutRedis, route.method, path, { host: d.redisHost, headers: { ...from, ...headers } });
    }
    default:
      throw new Error(`no way to reach ${code} in this test`);
  }
}

describe.each([
  ['self-hosted', {}],
  ['Cloud', CLOUD_ENV],
])('on %s', (_name, env) => {
  let d: Deployment;
  beforeAll(async () => {
    d = await setUp(env);
  });
  afterAll(() => tearDown(d));

  it("answers every edge refusal each served operation declares, on that operation", async () => {
    const reached: string[] = [];
    for (const route of d.platform.registry.routes) {
      const codes = new Map<number, ErrorCode[]>();
      for (const profile of [d.platform.profile, d.withoutRedis.profile]) {
        if (!servedOn(route, profile)) continue;
        for (const [status, list] of errorCodesOf(route, profile)) codes.set(status, [...new Set([...(codes.get(status) ?? []), ...list])]);
      }
      for (const [status, list] of codes) {
        for (const code of list.filter((c) => EDGE_CODES.includes(c))) {
          // Token endpoints answer their own invalid_dpop_proof / use_dpop_nonce (400), and the
          // sign-in operations their own slow_down (an address's budget of codes): their tests reach them.
          if (status === 400 && code !== 'invalid_request' && code !== 'json_too_complex') continue;
          if (status === 429 && !(route.rateLimits ?? []).some((rule) => (rule.code ?? 'too_many_requests') === code)) continue;
          // A route's own not_found is its module's to reach; the edge's is a Cloud session's.
          if (code === 'not_found' && !acceptedKinds(route, d.platform.profile).includes('cloud-session')) continue;
          const res = await reach(route, code, d);
          expect({ operation: route.operationId, status: res.status, error: res.body.error }).toEqual({ operation: route.operationId, status, error: code });
          reached.push(`${route.operationId} ${status} ${code}`);
        }
      }
    }
    expect(reached.length).toBeGreaterThan(40);
  }, 120_000);
});

/** A small body the route's schema accepts, built from it: required properties only, simplest values. */
function sampleBody(route: RouteDefinition): unknown {
  const sample = (schema: Record<string, unknown>): unknown => {
    if ('const' in schema) return schema.const;
    if (Array.isArray(schema.enum)) return schema.enum[0];
    if (Array.isArray(schema.oneOf)) return sample(schema.oneOf[0] as Record<string, unknown>);
    if (Array.isArray(schema.anyOf)) return sample(schema.anyOf[0] as Record<string, unknown>);
    const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
    switch (type) {
      case 'object': {
        const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
        return Object.fromEntries(((schema.required ?? []) as string[]).map((name) => [name, sample(properties[name] ?? {})]));
      }
      case 'array':
        return Array.from({ length: Number(schema.minItems ?? 0) }, () => sample((schema.items ?? {}) as Record<string, unknown>));
      case 'integer':
      case 'number':
        return Number(schema.minimum ?? 1);
      case 'boolean':
        return false;
      case 'string':
        if (schema.format === 'email') return 'edge-down@example.test';
        if (schema.format === 'uri') return 'https://example.test/';
        return 'x'.repeat(Math.max(1, Number(schema.minLength ?? 1)));
      default:
        return {};
    }
  };
  return sample(route.schemas.body as Record<string, unknown>);
}
