import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import request, { type Response } from 'supertest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { buildApp, type Platform } from '../../src/app.js';
import { appClasses } from '../../src/lifecycle.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { isSchemaMissing } from '../../src/db/errors.js';
import { createLogger } from '../../src/logger.js';
import { answerCode, answerSchema } from '../../src/http/route.js';
import type { NewOrganisation } from '../../src/modules/organisation/service.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { freshDatabase, type TestDatabase } from './database.js';
import { recordAnswer, recordLogs, recordSecret, recordSecretsOf, recordShortSecretsOf } from './suite-record.js';
import { SigningKeyEntity } from '../../src/modules/relay/entities.js';
import { openPrivateJwk } from '../../src/modules/relay/signing-keys.js';
import type { DataSource } from 'typeorm';
import type { Redis } from 'ioredis';

export interface TestPlatform extends Platform {
  config: Config;
  clock: ManualClock;
  dataSource: DataSource;
  database: TestDatabase;
  /** Every log line the app wrote, parsed. */
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  clock?: ManualClock;
  redis?: Redis;
  /** `false`: leave the fresh database empty, as MIGRATE_ON_START=false finds it before `platform migrate`. */
  migrate?: boolean;
  /** A fresh database on this server instead of the suite's (a root URL without a database: `mariadb://root@127.0.0.1:3307`). */
  mariadbServer?: string;
  /** A read replica (src/db/read-replica.ts), as DATABASE_READ_URL makes one. */
  readReplica?: { readonly current: DataSource | undefined };
}

/** The real app on a fresh database, with a clock the test moves and its logs captured. */
export async function startPlatform(options: StartOptions = {}): Promise<TestPlatform> {
  const database = await freshDatabase(options.mariadbServer);
  const config = loadConfig({
    PLATFORM_DEPLOYMENT: 'self-hosted',
    LOG_LEVEL: 'debug',
    OIDC_ALLOW_HTTP_LOOPBACK: 'true',
    OIDC_JWKS_COOLDOWN_MS: '0',
    ...options.env,
    DATABASE_URL: database.url,
  });
  const dataSource = createDataSource(database.config);
  await dataSource.initialize();
  if (options.migrate !== false) await dataSource.runMigrations();
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  recordLogs('platform', logs);
  const clock = options.clock ?? new ManualClock(Date.now());
  const platform = buildApp({ config, dataSource, clock, logger: createLogger(config.logLevel, sink), redis: options.redis, readReplica: options.readReplica });
  // Every secret the service hands out, whichever way a test reads it: answers and mails.
  const send = platform.services.mailer.send.bind(platform.services.mailer);
  platform.services.mailer.send = async (mail) => {
    recordShortSecretsOf(mail.text);
    recordSecretsOf(mail.text);
    return send(mail);
  };
  await platform.start();
  await recordSigningKeys(config, dataSource);
  return {
    ...platform,
    app: recordingSecrets(platform.app),
    config,
    clock,
    dataSource,
    database,
    logs,
    close: async () => {
      await recordSigningKeys(config, dataSource);
      await platform.stop();
      await dataSource.destroy();
      await database.drop();
    },
  };
}

/**
 * The relay's signing key material, for the suite's log scan: SIGNING_KEYS_SECRET, and each key in
 * the database sealed and opened (its private `d`). Without the secret the keys never leave the
 * process (nothing of them is stored or answered).
 */
async function recordSigningKeys(config: Config, dataSource: DataSource): Promise<void> {
  const secret = config.signingKeys.secret;
  if (!secret || !dataSource.isInitialized) return;
  recordSecret(secret.toString('base64url'));
  // A database left unmigrated (`migrate: false`) has no keys yet.
  const keys = await dataSource
    .getRepository(SigningKeyEntity)
    .find()
    .catch((error: unknown) => {
      if (isSchemaMissing(error)) return [];
      throw error;
    });
  for (const key of keys) {
    recordSecret(key.privateSealed);
    recordSecret(openPrivateJwk(secret, key.kid, key.privateSealed)?.d);
  }
}

/**
 * An HTTP server for the app, built as main.ts builds it: its requests and responses are born
 * with the app's prototypes (src/lifecycle.ts `appClasses`), so every test request travels the
 * objects production serves. Not listening yet: supertest starts and closes it per request.
 */
export function serverOf(app: Platform['app']): Server {
  return createServer(appClasses(app), app);
}

/** The platform on a real loopback port (ephemeral), WebSocket upgrades included, as main.ts serves it. */
export async function listen(platform: Platform): Promise<{ origin: string; port: number; server: Server; close(): Promise<void> }> {
  const server = serverOf(platform.app);
  server.on('upgrade', platform.upgrade);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The app, as supertest and servers call it, recording every secret an answer carries for the
 * suite's log scan: in its body (JSON by field name and shape, anything else by shape) and in its
 * headers (a `Location` holding a code or state, a `Set-Cookie` holding a session).
 */
function recordingSecrets(app: Platform['app']): Platform['app'] {
  return new Proxy(app, {
    apply(target, thisArg, args: unknown[]) {
      const res = args[1] as ServerResponse;
      const setHeader = res.setHeader.bind(res);
      res.setHeader = (name: string, value: number | string | readonly string[]) => {
        recordSecretsOf(value);
        return setHeader(name, value);
      };
      const chunks: Buffer[] = [];
      const write = res.write.bind(res) as (...parts: unknown[]) => boolean;
      const end = res.end.bind(res) as (...parts: unknown[]) => ServerResponse;
      const keep = (chunk: unknown) => {
        if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) chunks.push(Buffer.from(chunk));
      };
      res.write = ((chunk: unknown, ...rest: unknown[]) => {
        keep(chunk);
        return write(chunk, ...rest);
      }) as ServerResponse['write'];
      res.end = ((chunk?: unknown, ...rest: unknown[]) => {
        keep(chunk);
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        if (String(res.getHeader('content-type') ?? '').includes('json')) {
          try {
            body = JSON.parse(text);
          } catch {
            // Recorded as text.
          }
        }
        recordSecretsOf(body);
        return end(chunk, ...rest);
      }) as ServerResponse['end'];
      return Reflect.apply(target, thisArg, args as [IncomingMessage, ServerResponse]);
    },
  });
}

let organisationCount = 0;

/** An organisation served at `host` (default: a unique `*.test` host name). */
export async function createOrganisation(platform: TestPlatform, input: Partial<NewOrganisation> = {}): Promise<OrganisationRecord> {
  organisationCount += 1;
  return platform.services.organisations.create({
    name: input.name ?? `Organisation ${organisationCount}`,
    kind: input.kind ?? 'enterprise',
    plan: input.plan,
    hosts: input.hosts ?? [`org${organisationCount}-${Date.now()}.test`],
    oidc: input.oidc,
  });
}

// Answers are checked against the schemas the routes declare ------------------------------

const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);

export function expectDeclaredAnswer(platform: Platform, method: string, path: string, res: Response): void {
  const route = platform.registry.find(method, path);
  const code = res.status >= 400 ? answerCode(res.body) : undefined;
  const schema = answerSchema(route, res.status, code, platform.profile);
  if (schema === null) {
    const what = res.status >= 400 ? `${res.status} ${String(code)}` : String(res.status);
    throw new Error(`${method.toUpperCase()} ${path} answered ${what}, which its route does not declare on this deployment`);
  }
  if (schema === undefined) return;
  const validate = ajv.compile(schema as object);
  if (!validate(res.body)) {
    throw new Error(
      `${method.toUpperCase()} ${path} answered ${res.status} with a body that does not match its schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(res.body)}`,
    );
  }
}

export interface CallOptions {
  host?: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Send this raw text as the body, with the given content type. */
  raw?: { type: string; data: string | Buffer };
}

/** One request through the real app; its answer is checked against the declared schema. */
export async function call(platform: Platform, method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string, options: CallOptions = {}): Promise<Response> {
  let test = request(serverOf(platform.app))[method](path);
  if (options.host) test = test.set('Host', options.host);
  for (const [name, value] of Object.entries(options.headers ?? {})) test = test.set(name, value);
  if (options.raw) test = test.set('Content-Type', options.raw.type).send(options.raw.data);
  else if (options.body !== undefined) test = test.send(options.body as object);
  const res = await test;
  // For the suite-wide checks: which declared answers some test reached, which secrets exist.
  const route = platform.registry.find(method, path);
  const code = res.status >= 400 ? answerCode(res.body) : undefined;
  if (route) recordAnswer(route.operationId, res.status, code === undefined ? undefined : String(code));
  recordSecretsOf(res.body);
  expectDeclaredAnswer(platform, method, path, res);
  return res;
}

/** The first host an organisation is served at. */
export async function hostOf(platform: TestPlatform, organisation: OrganisationRecord): Promise<string> {
  return (await platform.services.organisations.hostsOf(organisation.id))[0]!;
}

/** A platform of its own (other settings than the file's) with one organisation, and where it is served. */
export async function startWithOrganisation(
  options: StartOptions = {},
  input: Partial<NewOrganisation> = {},
): Promise<{ platform: TestPlatform; organisation: OrganisationRecord; host: string }> {
  const platform = await startPlatform(options);
  const organisation = await createOrganisation(platform, input);
  return { platform, organisation, host: await hostOf(platform, organisation) };
}

/**
 * Network addresses one after another, `${prefix}.x.y`, as a trusted proxy (TRUST_PROXY=loopback)
 * reports them in X-Forwarded-For: each caller its own, so per-address rate limits stay apart.
 */
export function addressSequence(prefix: string): () => string {
  let count = 0;
  return () => {
    count += 1;
    return `${prefix}.${Math.floor(count / 250)}.${(count % 250) + 1}`;
  };
}

/**
 * A Redis client for a Redis that is away (nothing listens on loopback port 1), configured like
 * production's but without reconnecting, so no retry timer outlives the test.
 */
export async function unreachableRedis() {
  const { Redis } = await import('ioredis');
  const redis = new Redis('redis://127.0.0.1:1', {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 500,
    // ioredis waits this long for a refused socket to close on disconnect: keep it short.
    disconnectTimeout: 10,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  return redis;
}
