import * as DPoP from 'dpop';
import type { Response } from 'supertest';
import type { Platform } from '../../src/app.js';
import { call, type TestPlatform } from './platform.js';
import type { DeviceKind, DeviceRecord } from '../../src/modules/devices/entities.js';
import { DeviceEntity } from '../../src/modules/devices/entities.js';
import { scopeString } from '../../src/modules/devices/scopes.js';
import type { TokenAnswer } from '../../src/modules/devices/tokens.js';
import { newId } from '../../src/util/ids.js';
import { PersonEntity, MembershipEntity } from '../../src/modules/organisation/entities.js';
import type { OrganisationRole } from '../../src/auth/principal.js';
import { recordSecretsOf } from './suite-record.js';
import { forgeProof, proofKeyOf } from './dpop-proofs.js';

/** A person with a role in the organisation, stored directly (tests of other modules). */
export async function createPerson(platform: TestPlatform, organisationId: string, role: OrganisationRole = 'member', name = 'Test Person') {
  const person = { id: newId('usr'), name, email: `${newId('usr')}@example.test`, createdAt: platform.clock.now() };
  await platform.dataSource.manager.insert(PersonEntity, person);
  await platform.dataSource.manager.insert(MembershipEntity, { organisationId, personId: person.id, role, createdAt: platform.clock.now() });
  return person;
}

export interface EnrolledDevice {
  device: DeviceRecord;
  tokens: TokenAnswer;
  keys?: DPoP.KeyPair;
  /** The clock of the platform the device was enrolled on: its proofs' `iat` follows it. */
  clock?: { now(): Date };
}

/**
 * A device enrolled without going through the enrolment flows (those have their own tests):
 * for tests that need a device token. With `alg` the tokens are bound to a fresh key.
 */
export async function enrolDevice(
  platform: TestPlatform,
  options: { organisationId: string; personId: string; kind?: DeviceKind; alg?: 'ES256' | 'Ed25519'; name?: string; scope?: string },
): Promise<EnrolledDevice> {
  const keys = options.alg ? await DPoP.generateKeyPair(options.alg) : undefined;
  const kind = options.kind ?? 'workbench';
  const device: DeviceRecord = {
    id: newId('dev'),
    organisationId: options.organisationId,
    personId: options.personId,
    name: options.name ?? 'Test workbench',
    kind,
    workspaceId: kind === 'workbench' ? 'ws-test' : null,
    nodeId: kind === 'node' ? 'node-test' : null,
    enrolledVia: 'device_code',
    joinKeyId: null,
    dpopJkt: keys ? await DPoP.calculateThumbprint(keys.publicKey) : null,
    scope: options.scope ?? scopeString(kind),
    createdAt: platform.clock.now(),
    lastSeenAt: null,
    revokedAt: null,
  };
  const tokens = await platform.dataSource.transaction(async (manager) => {
    await manager.insert(DeviceEntity, device);
    return platform.services.deviceTokens.issue(manager, device);
  });
  recordSecretsOf(tokens);
  return keys ? { device, tokens, keys, clock: platform.clock } : { device, tokens, clock: platform.clock };
}

/** Authorization (and DPoP proof) headers for one request by the device. */
export async function deviceHeaders(enrolled: EnrolledDevice, method: string, url: string, options: { nonce?: string; token?: string } = {}): Promise<Record<string, string>> {
  const token = options.token ?? enrolled.tokens.access_token;
  if (!enrolled.keys) return { Authorization: `Bearer ${token}` };
  // `iat` from the platform's clock when known: the `dpop` package always signs the real time,
  // which a test's ManualClock (set once, at start) falls behind as a long file runs.
  const proof = enrolled.clock
    ? await forgeProof(await proofKeyOf(enrolled.keys), { htm: method.toUpperCase(), htu: url, iat: Math.floor(enrolled.clock.now().getTime() / 1000), accessToken: token, nonce: options.nonce })
    : await DPoP.generateProof(enrolled.keys, url, method, options.nonce, token);
  return { Authorization: `DPoP ${token}`, DPoP: proof };
}

/** What `POST /relay/v1/device/code` answers a device (RFC 8628 3.2). */
export interface AskedCode {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** How a test's device reaches the service: the organisation's host, the address it comes from (behind a trusted proxy), more headers. */
export interface DeviceRequest {
  host?: string;
  /** Sent as `X-Forwarded-For`, for the per-address rate limits. */
  from?: string;
  headers?: Record<string, string>;
}

const headersOf = (request: DeviceRequest): Record<string, string> => ({ ...(request.from ? { 'X-Forwarded-For': request.from } : {}), ...request.headers });

/** A workbench's request for a code as sent, with `body` in place of a valid one; the answer as it came (refusals, limits). */
export function requestDeviceCode(platform: Platform, request: DeviceRequest & { body?: unknown } = {}): Promise<Response> {
  return call(platform, 'post', '/relay/v1/device/code', {
    ...(request.host ? { host: request.host } : {}),
    headers: headersOf(request),
    body: request.body ?? { workspaceId: 'ws-test', name: 'Test workbench' },
  });
}

/** A device asks for a code (a valid body, with `body`'s fields over the defaults) and gets one. */
export async function askForCode(platform: Platform, request: DeviceRequest & { body?: Record<string, unknown> } = {}): Promise<AskedCode> {
  const res = await requestDeviceCode(platform, { ...request, body: { workspaceId: 'ws-test', name: 'Test workbench', ...request.body } });
  if (res.status !== 200) throw new Error(`device code: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as AskedCode;
}

/** The device's poll with its device code (`body`'s fields added); the answer as it came. */
export function pollForTokens(platform: Platform, deviceCode: string, request: DeviceRequest & { body?: Record<string, unknown> } = {}): Promise<Response> {
  return call(platform, 'post', '/relay/v1/device/token', {
    ...(request.host ? { host: request.host } : {}),
    headers: headersOf(request),
    body: { device_code: deviceCode, ...request.body },
  });
}

/**
 * A workbench enrolled through the real device-code flow (self-hosted): it asks for a code, a
 * person with `approver` headers looks it up and approves it, the device polls for its tokens.
 */
export async function enrolThroughDeviceCode(
  platform: TestPlatform,
  host: string,
  approver: Record<string, string>,
  options: { name?: string; headers?: Record<string, string> } = {},
): Promise<TokenAnswer> {
  const headers = options.headers ?? {};
  const code = await askForCode(platform, { host, headers, body: { workspaceId: 'ws-enrolled', name: options.name ?? 'Enrolled workbench' } });
  for (const step of ['look-up', 'approve']) {
    const res = await call(platform, 'post', `/platform/v1/device-approvals/${step}`, { host, headers: { ...headers, ...approver }, body: { userCode: code.user_code } });
    if (res.status !== 200) throw new Error(`${step}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const tokens = await pollForTokens(platform, code.device_code, { host, headers });
  if (tokens.status !== 200) throw new Error(`device token: ${tokens.status} ${JSON.stringify(tokens.body)}`);
  return tokens.body as TokenAnswer;
}
