import type { DataSource, EntityManager } from 'typeorm';
import { buildApp, type Platform } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { createLogger } from '../../src/logger.js';
import { DeviceEntity, type DeviceRecord } from '../../src/modules/devices/entities.js';
import { scopeString } from '../../src/modules/devices/scopes.js';
import { MembershipEntity, PersonEntity } from '../../src/modules/organisation/entities.js';
import { systemClock } from '../../src/util/clock.js';
import { newId } from '../../src/util/ids.js';

/**
 * What a platform under test holds before it starts: written straight into its database by the
 * bench process (migrations, then the rows), the way test/support/devices.ts enrols a device
 * without the enrolment flows. The platform child then starts on that database exactly as in
 * production and resolves the tokens from it; nothing bench-specific runs inside it.
 */

export interface SeedRequest {
  /** The platform's environment (DATABASE_URL above all), as the child will get it. */
  env: Record<string, string>;
  host: string;
  oidc: { issuer: string; clientId: string; apiScope: string; audience: string };
  /** Two workbenches for GET /policy/v1: one with Bearer tokens, one bound to this key's thumbprint. */
  policyDpopJkt?: string;
  /** A third, bound to this (Ed25519) key's thumbprint. */
  policyDpopEdJkt?: string;
  /** Workbenches that upload to POST /ingest/v1, one stream (device + workspace) each. */
  ingestDevices: number;
  /** The person of the workbenches owns the project (so they may save its pictures). */
  projectOwner?: boolean;
}

export interface IngestDevice {
  deviceId: string;
  workspaceId: string;
  accessToken: string;
}

export interface Seeded {
  organisationId: string;
  projectId: string;
  policy?: { bearerToken: string; dpopToken: string; dpopEdToken: string };
  ingest: IngestDevice[];
}

/** A workbench of the organisation, enrolled as the flows would: its first token pair from the platform's own service. */
export async function enrol(
  manager: EntityManager,
  platform: Platform,
  device: { organisationId: string; personId: string; name: string; workspaceId: string; dpopJkt: string | null },
): Promise<{ deviceId: string; accessToken: string; tokenType: string }> {
  const record: DeviceRecord = {
    id: newId('dev'),
    organisationId: device.organisationId,
    personId: device.personId,
    name: device.name,
    kind: 'workbench',
    workspaceId: device.workspaceId,
    nodeId: null,
    enrolledVia: 'device_code',
    joinKeyId: null,
    dpopJkt: device.dpopJkt,
    scope: scopeString('workbench'),
    createdAt: systemClock.now(),
    lastSeenAt: null,
    revokedAt: null,
  };
  await manager.insert(DeviceEntity, record);
  const tokens = await platform.services.deviceTokens.issue(manager, record);
  return { deviceId: record.id, accessToken: tokens.access_token, tokenType: tokens.token_type };
}

/**
 * Migrates the database `env` names, builds the platform on it (as the service would) and hands
 * both to `seed`; the connection is closed afterwards, whatever happens.
 */
export async function withSeedingPlatform<T>(env: Record<string, string>, seed: (platform: Platform, dataSource: DataSource) => Promise<T>): Promise<T> {
  const config = loadConfig(env);
  const dataSource = createDataSource(config.database);
  await dataSource.initialize();
  try {
    await dataSource.runMigrations({ transaction: 'each' });
    return await seed(buildApp({ config, dataSource, clock: systemClock, logger: createLogger('silent') }), dataSource);
  } finally {
    await dataSource.destroy();
  }
}

export async function seedPlatform(request: SeedRequest): Promise<Seeded> {
  return withSeedingPlatform(request.env, async (platform, dataSource) => {
    const organisation = await platform.services.organisations.create({
      name: 'Bench organisation',
      kind: 'enterprise',
      hosts: [request.host],
      oidc: request.oidc,
    });
    const person = { id: newId('usr'), name: 'Bench person', email: 'bench@example.test', createdAt: systemClock.now() };
    await dataSource.manager.insert(PersonEntity, person);
    await dataSource.manager.insert(MembershipEntity, { organisationId: organisation.id, personId: person.id, role: 'member', createdAt: systemClock.now() });
    const project = await platform.services.projects.create(organisation.id, { name: 'Bench project', ...(request.projectOwner ? { owner: person.id } : {}) });

    const base = { organisationId: organisation.id, personId: person.id };
    return await dataSource.transaction(async (manager) => {
      let policy: Seeded['policy'];
      if (request.policyDpopJkt !== undefined) {
        const bearer = await enrol(manager, platform, { ...base, name: 'Bench workbench (Bearer)', workspaceId: 'ws-bench-policy-bearer', dpopJkt: null });
        const dpop = await enrol(manager, platform, { ...base, name: 'Bench workbench (DPoP)', workspaceId: 'ws-bench-policy-dpop', dpopJkt: request.policyDpopJkt });
        // The Ed25519-bound workbench only when its key is given (the soak and workers parts do not use it).
        const dpopEd =
          request.policyDpopEdJkt === undefined
            ? undefined
            : await enrol(manager, platform, { ...base, name: 'Bench workbench (DPoP, Ed25519)', workspaceId: 'ws-bench-policy-dpop-ed', dpopJkt: request.policyDpopEdJkt });
        if (bearer.tokenType !== 'Bearer' || dpop.tokenType !== 'DPoP' || (dpopEd && dpopEd.tokenType !== 'DPoP')) {
          throw new Error(`unexpected token types: ${bearer.tokenType}, ${dpop.tokenType}, ${dpopEd?.tokenType ?? '-'}`);
        }
        policy = { bearerToken: bearer.accessToken, dpopToken: dpop.accessToken, dpopEdToken: dpopEd?.accessToken ?? '' };
      }
      const ingest: IngestDevice[] = [];
      for (let i = 0; i < request.ingestDevices; i++) {
        const workspaceId = `ws-bench-ingest-${i + 1}`;
        const device = await enrol(manager, platform, { ...base, name: `Bench workbench ${i + 1}`, workspaceId, dpopJkt: null });
        ingest.push({ deviceId: device.deviceId, workspaceId, accessToken: device.accessToken });
      }
      return { organisationId: organisation.id, projectId: project.id, ...(policy ? { policy } : {}), ingest };
    });
  });
}

/** A Cloud platform's database: a person signed in by email (a session, as `mintSession` in the
 * tests makes one), the owner of a team the session names with `X-Platform-Organisation`. */
export async function seedCloud(env: Record<string, string>): Promise<{ accessToken: string; organisationId: string }> {
  return withSeedingPlatform(env, async (platform, dataSource) => {
    const email = 'bench@example.test';
    const { personId, methodId } = await platform.services.signIn.accounts.resolvePerson('email', { subject: email, email, emailVerified: true, name: 'Bench person' });
    const team = await platform.services.organisations.create({ name: 'Bench team', kind: 'team' });
    await platform.services.organisations.setRole(team.id, personId, 'owner');
    const tokens = await dataSource.transaction((manager) => platform.services.sessions.start(manager, { id: newId('ses'), personId, client: 'console', signInMethodId: methodId }));
    return { accessToken: tokens.access_token, organisationId: team.id };
  });
}
