import { buildAdminServices } from './admin-services.js';
import express, { type Express, type RequestHandler } from 'express';
import helmet from 'helmet';
import type { RedisClient } from '../adapters/state/redis.js';
import type { Logger } from 'pino';
import { MigrationExecutor, type DataSource } from 'typeorm';
import { OrganisationOidcVerifier } from '../adapters/identity/organisation-oidc.js';
import { OrganisationLogin } from '../adapters/identity/organisation-login.js';
import { authentication } from './auth/middleware.js';
import { PersonTokenResolver } from './auth/person-token.js';
import { DeviceTokenResolver } from './auth/device-token.js';
import { DpopVerifier, randomNonceSecret } from './auth/dpop.js';
import { MemoryReplayCache } from '../adapters/state/memory-replay-cache.js';
import { RedisReplayCache } from '../adapters/state/redis-replay-cache.js';
import { RedisRateLimitStores } from '../adapters/state/redis-rate-limit.js';
import type { DeviceTokenService } from './modules/devices/tokens.js';
import { devicesRoutes } from './modules/devices/module.js';
import { approvalPage } from './web/device-approval/approval-page.js';
import { WebSessions } from './web/device-approval/page-session.js';
import { pageLook } from './web/device-approval/look.js';
import { OrganisationSignIn } from './web/device-approval/page-sign-in.js';
import type { TokenResolver } from './auth/resolver.js';
import type { Config } from './config.js';
import { errorHandler, hoistedHeaders, inSequence, notFoundHandler, requestEdge } from './http/edge.js';
import { ApiError, schemaNotMigrated } from './errors.js';
import { SchemaState } from './db/schema-state.js';
import { API_VERSION, buildOpenApi } from './http/openapi.js';
import { originEdge, serviceOrigin } from './http/origin.js';
import { defineRoute, RouteRegistry, type DeploymentProfile } from './http/route.js';
import { tenancy } from './http/tenancy.js';
import { memoryStores, RateLimits } from './http/rate-limit.js';
import { discoveryRoutes } from './modules/discovery/routes.js';
import { databaseProbe, healthRoutes, migrationsProbe } from './modules/health/routes.js';
import { ProbeFailure, type ReadinessProbe } from './readiness.js';
import { organisationRoutes } from './modules/organisation/routes.js';
import type { OrganisationService } from './modules/organisation/service.js';
import { OrganisationStore } from './modules/organisation/store.js';
import { policyRoutes } from './modules/policy/routes.js';
import type { PolicyService } from './modules/policy/service.js';
import type { LatestNumbers } from './modules/policy/store.js';
import type { ProjectService } from './modules/projects/service.js';
import { projectRoutes } from './modules/projects/routes.js';
import { IngestReader } from './modules/ingest/read.js';
import { ingestRoutes } from './modules/ingest/routes.js';
import { IngestService } from './modules/ingest/service.js';
import { pictureRoutes } from './modules/pictures/routes.js';
import { PictureService } from './modules/pictures/service.js';
import { svgChecker } from './modules/pictures/svg/check-pool.js';
import type { Clock } from './util/clock.js';
import { hkdfSync, randomBytes } from 'node:crypto';
import { identityProvider } from '../adapters/identity/cloud-providers.js';
import { OutboxMailer } from '../adapters/mail/outbox.js';
import { SmtpMailer } from '../adapters/mail/smtp.js';
import { CloudSessionResolver } from './auth/cloud-session.js';
import { AuthCache } from './auth/auth-cache.js';
import { AuthRevocations } from './auth/revocations.js';
import type { Resolved } from './auth/resolver.js';
import type { CachedDevice } from './auth/device-token.js';
import { countingMailer, type Mailer } from './mail/mailer.js';
import { accountRoutes } from './modules/account/routes.js';
import { AccountService } from './modules/account/service.js';
import type { IdentityProvider } from './identity/identity-provider.js';
import { createSignInModule } from './modules/signin/module.js';
import type { SignInService } from './modules/signin/service.js';
import { ProofOfWork, type EmailStartCheck } from './modules/signin/email-start-check.js';
import type { CloudSessions } from './modules/signin/sessions.js';
import { SignInStore } from './modules/signin/store.js';
import type { IdentityProviderId } from './modules/signin/settings.js';
import { TeamService } from './modules/teams/service.js';
import { teamRateLimits, teamRoutes } from './modules/teams/routes.js';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { RunCredentialResolver } from './auth/run-credential.js';
import { CloudAgentService } from './modules/cloud-agents/service.js';
import { cloudAgentRoutes } from './modules/cloud-agents/routes.js';
import { mcpRoutes } from './modules/cloud-agents/mcp.js';
import { RelayHub } from './modules/relay/channel.js';
import { HELLO_MAX_PROJECTS, type PolicyPushPorts } from './modules/relay/policy-push.js';
import { projectsWithRole } from '../policies/project-membership.js';
import { relayRoutes, RelayUpgrades } from './modules/relay/routes.js';
import { DatabaseSigningKeyStore, MemorySigningKeyStore, SigningKeys } from './modules/relay/signing-keys.js';
import { MemoryRelayRouting } from '../adapters/state/memory-relay-routing.js';
import { Metrics } from './metrics.js';
import { corsEdge } from './http/cors.js';
import { RedisRelayRouting } from '../adapters/state/redis-relay-routing.js';
import { SWEEP_KINDS } from './sweeper/kinds.js';
import type { AuditTrail } from './audit.js';
import { auditLogRoutes } from './modules/audit-log/routes.js';
import type { AuditLogService } from './modules/audit-log/service.js';
import { Sweeper } from './sweeper/sweeper.js';
import { primaryReads, type Reads } from './db/reads.js';
import { ReplicaReads } from './db/read-replica.js';

export interface AppDependencies {
  config: Config;
  dataSource: DataSource;
  clock: Clock;
  logger: Logger;
  redis?: RedisClient | undefined;
  /** A check `POST /auth/v1/email/start` asks before it mails (a CAPTCHA the deployment wires); default: the built-in proof of work when AUTH_EMAIL_PROOF_OF_WORK_BITS is set, else none. */
  emailStartCheck?: EmailStartCheck | undefined;
  /** Replaces the stored audit trail (the bench measures a publish without it); default: rows in `audit_log`. */
  auditTrail?: AuditTrail | undefined;
  /** The read replica of DATABASE_READ_URL once connected (src/db/read-replica.ts); absent: every read on the primary. */
  readReplica?: { readonly current: DataSource | undefined } | undefined;
}

export interface Platform {
  app: Express;
  registry: RouteRegistry;
  /** What this deployment serves: its routes, token kinds and the error codes they answer. */
  profile: DeploymentProfile;
  openapi: ReturnType<typeof buildOpenApi>;
  services: {
    organisations: OrganisationService;
    verifier: OrganisationOidcVerifier;
    dpop: DpopVerifier;
    deviceTokens: DeviceTokenService;
    projects: ProjectService;
    policies: PolicyService;
    signIn: SignInService;
    sessions: CloudSessions;
    mailer: Mailer;
    teams: TeamService;
    cloudAgents: CloudAgentService;
    signingKeys: SigningKeys;
    relay: RelayHub;
    auditLog: AuditLogService;
  };
  /** The HTTP server's `upgrade` listener: WebSocket upgrades (the control channel) go through the app. */
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Starts what runs beside requests (relay heartbeats and routing; the first signing key). */
  start(): Promise<void>;
  /** Closes the control channels (1001) and stops the relay. */
  stop(): Promise<void>;
  /** Entries held now by each bounded in-process cache (the soak prints them; bounds in config). */
  cacheSizes(): Record<string, number>;
  /** Drops the caches of verified credentials when something may have ended (src/auth/revocations.ts). */
  revocations: AuthRevocations;
  /** Deletes what is past its use (src/sweeper); the service process schedules it, `stop` ends it. */
  sweeper: Sweeper;
}

/** The composition root: every part of the service is made and wired here, and only here. */
export function buildApp(deps: AppDependencies): Platform {
  const { config, dataSource, clock, logger } = deps;

  // Verified credentials, and the newest policy publish numbers, kept a few seconds and dropped on
  // any revocation or publish (src/auth/revocations.ts).
  const revocations = new AuthRevocations(dataSource, clock, deps.redis);
  const policyNumbersCache = new AuthCache<LatestNumbers>('policyLatestNumbers', config.authCache, clock, revocations);
  // The hot reads that may lag a little go to the replica while it is current (src/db/read-replica.ts).
  const replicaReads = deps.readReplica ? new ReplicaReads(dataSource, deps.readReplica, revocations, clock, logger) : undefined;
  const reads: Reads = replicaReads ?? primaryReads(dataSource);
  const { organisations, deviceTokens, devices: deviceStore, joinKeys, deviceCodes, projects, policies, trail, auditLog } = buildAdminServices({
    config,
    dataSource,
    clock,
    logger,
    policyLatestNumbers: policyNumbersCache,
    auditTrail: deps.auditTrail,
    reads,
  });
  // One host → organisation cache for the API and the approval page.
  const tenantOf = tenancy(config.deployment, organisations, { clock });
  const verifier = new OrganisationOidcVerifier({ clock, ...config.oidc });
  const replay = deps.redis ? new RedisReplayCache(deps.redis, clock) : new MemoryReplayCache(clock);
  const dpop = new DpopVerifier({ clock, replay, ...config.dpop, nonceSecret: config.dpop.nonceSecret ?? randomNonceSecret() });
  const cloudAgents = new CloudAgentService({
    dataSource,
    clock,
    logger,
    projects,
    policies,
    trail,
    credentialMaxTtlSeconds: config.cloudAgents.credentialMaxTtlSeconds,
  });
  const deviceCache = new AuthCache<CachedDevice>('deviceTokens', config.authCache, clock, revocations);
  const personCache = new AuthCache<Resolved>('personTokens', config.authCache, clock, revocations);
  const sessionCache = new AuthCache<Resolved>('cloudSessions', config.authCache, clock, revocations);
  const resolvers: TokenResolver[] = [
    new DeviceTokenResolver(deviceTokens, dpop, organisations, clock, (id, at) => deviceStore.touch(id, at), deviceCache),
    new RunCredentialResolver(cloudAgents, organisations),
  ];
  if (config.deployment === 'self-hosted') resolvers.push(new PersonTokenResolver(verifier, organisations, personCache));

  // Signing keys: in the database, sealed with SIGNING_KEYS_SECRET, shared by every replica;
  // without the secret, in this process (one replica).
  const signingKeys = new SigningKeys(
    config.signingKeys.secret ? new DatabaseSigningKeyStore(dataSource) : new MemorySigningKeyStore(),
    clock,
    { secret: config.signingKeys.secret ?? randomBytes(32), rotationSeconds: config.signingKeys.rotationSeconds, assertionTtlSeconds: config.relay.assertionTtlSeconds },
    logger,
  );
  const routing = deps.redis
    ? new RedisRelayRouting(deps.redis, { presenceTtlMs: config.relay.heartbeatMs * 3, logger })
    : new MemoryRelayRouting();
  // Policy pushed over the control channel (docs/api/policy-push.md): which scopes apply to a
  // device, by the one project-membership rule; a node belongs to no project (policies/policy.ts).
  const absentAs404 = <T>(read: Promise<T>): Promise<T | undefined> =>
    read.catch((error: unknown) => {
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    });
  const policyPush: PolicyPushPorts = {
    hello: async ({ organisationId, personId, deviceKind }) => {
      const organisation = await policies.current(organisationId);
      const projectRoles = deviceKind === 'workbench' ? await projects.rolesOf(organisationId, personId) : new Map();
      const ids = projectsWithRole({ kind: 'device', organisationId, personId, role: undefined, deviceKind, projectRoles }).sort().slice(0, HELLO_MAX_PROJECTS);
      const found = [];
      // One after another: a reconnecting fleet must not take the whole pool at once.
      for (const projectId of ids) {
        const current = await absentAs404(policies.current(organisationId, projectId));
        if (current) found.push({ projectId, ...current });
      }
      return { organisation, projects: found };
    },
    members: async (organisationId, projectId) => {
      const members = await absentAs404(projects.members(organisationId, projectId));
      return members && new Set(members.map((member) => member.personId));
    },
    // Another replica's or the command line's publish may reach this replica here first.
    forget: () => revocations.drop(),
  };
  const relay = new RelayHub(routing, {
    heartbeatMs: config.relay.heartbeatMs,
    callTimeoutMs: config.relay.callTimeoutMs,
    logger,
    stillValid: async (owner) => (await deviceTokens.resolveAccessToken(owner.accessToken))?.device.id === owner.deviceId,
    policy: policyPush,
  });
  // After a publish or restore has committed (PolicyService tells its listeners only then).
  policies.onPublished((change) => relay.publishPolicyChange(change));
  const upgrades = new RelayUpgrades();
  const cacheSizes = () => ({
    deviceTokens: deviceCache.size,
    personTokens: personCache.size,
    cloudSessions: sessionCache.size,
    // policyLatestNumbers, policyAnswers, policyLayers
    ...policies.cacheSizes(),
  });
  const metrics = new Metrics({ dataSource, redis: deps.redis, relayConnections: () => relay.size, cacheSizes, readCounts: replicaReads && (() => replicaReads.counts), sweepKinds: SWEEP_KINDS.map((kind) => kind.name) });
  // Scheduled by the service process (src/lifecycle.ts), run at once by `platform sweep` and tests.
  const sweeper = new Sweeper(dataSource, clock, logger, { ...config.sweeper, retention: config.retention }, metrics.sweeper);

  // Cloud sign-in: identity providers, mail, sessions.
  const mailer: Mailer = countingMailer(
    config.mail.smtpUrl ? new SmtpMailer(config.mail.smtpUrl, config.mail.from) : new OutboxMailer(config.mail.outboxDir, config.mail.from, clock, logger),
    (kind) => metrics.mailSent(kind),
  );
  const providers = new Map<IdentityProviderId, IdentityProvider>();
  for (const [id, settings] of Object.entries(config.cloud.providers) as [IdentityProviderId, NonNullable<(typeof config.cloud.providers)[IdentityProviderId]>][]) {
    providers.set(
      id,
      identityProvider(id, settings, {
        allowHttpLoopback: config.oidc.allowHttpLoopbackIssuers,
        httpTimeoutMs: config.oidc.httpTimeoutMs,
        metadataMaxAgeMs: config.oidc.jwksCacheMaxAgeMs,
        clockSkewSeconds: config.oidc.clockSkewSeconds,
      }),
    );
  }
  // Sign-in's own settings: the providers' client secrets and the code key stay here, in the composition root.
  const { providers: _providers, codeSecret: _codeSecret, emailProofOfWorkBits: _proofOfWorkBits, ...signInSettings } = config.cloud;
  // Sign-in builds absolute URLs where no request is at hand: from PLATFORM_BASE_URL alone.
  const ownOrigin = serviceOrigin(config.baseUrl);
  const signInModule = createSignInModule(
    { dataSource, clock, logger, mailer, organisations, trail, reads },
    {
      config: signInSettings,
      origin: ownOrigin,
      providers,
      // Emailed codes are stored as HMACs under a key of their own, derived from AUTH_CODE_SECRET.
      codeKey: Buffer.from(hkdfSync('sha256', config.cloud.codeSecret ?? randomBytes(32), 'emailed codes', 'platform email code v1', 32)),
      // The check email/start asks before it mails (off by default): the deployment's own, or the built-in proof of work.
      emailStartCheck:
        deps.emailStartCheck ??
        (config.cloud.emailProofOfWorkBits > 0
          ? new ProofOfWork({ bits: config.cloud.emailProofOfWorkBits, key: Buffer.from(hkdfSync('sha256', config.cloud.codeSecret ?? randomBytes(32), 'email start proof of work', 'platform pow v1', 32)), clock, replay })
          : undefined),
    },
  );
  const { service: signIn, sessions } = signInModule;
  if (config.deployment === 'cloud') resolvers.push(new CloudSessionResolver(sessions, organisations, sessionCache));

  const redis = deps.redis;
  const redisRateLimits = redis ? new RedisRateLimitStores(redis) : undefined;
  // MIGRATE_ON_START=false: until `platform migrate` has run, every route that reads the database
  // answers 503 `unavailable` (src/db/schema-state.ts), and readiness says `migrations: pending`.
  const schema = new SchemaState(dataSource, clock);
  const schemaGate: RequestHandler = (_req, _res, next) => {
    if (schema.ready) return next();
    schema.isMigrated().then(
      (migrated) => next(migrated ? undefined : schemaNotMigrated()),
      (error: unknown) => next(error),
    );
  };
  const probes: ReadinessProbe[] = [
    databaseProbe(dataSource),
    migrationsProbe(schema),
    { name: 'redis', check: async () => (redis ? (await redis.ping(), 'ok') : 'not configured') },
    {
      name: 'rateLimits',
      check: async () => (!config.rateLimitsEnabled ? 'disabled' : redisRateLimits ? redisRateLimits.check() : 'in process'),
    },
    { name: 'replayCache', check: async () => (replay instanceof RedisReplayCache ? replay.check() : 'in process') },
    {
      name: 'relay',
      check: async () => {
        if (routing.kind === 'in process') return 'in process';
        if (!routing.healthy()) throw new ProbeFailure('not subscribed');
        return 'ok';
      },
    },
  ];

  const registry = new RouteRegistry();
  registry.add(...healthRoutes(probes, { checked: (usable) => metrics.readinessChecked(usable) }), ...discoveryRoutes({ deployment: config.deployment }), ...organisationRoutes());
  registry.add(...projectRoutes(projects, logger));
  registry.add(...auditLogRoutes(auditLog));
  registry.add(...policyRoutes(policies, config.policy));
  registry.add(...ingestRoutes(new IngestService(dataSource, clock, policies, config.ingest.redactionBudgetMs, (received, stored) => metrics.ingested(received, stored)), new IngestReader(dataSource, { maxDepth: config.json.maxDepth, maxKeys: config.ingest.maxJsonKeys, maxStringLength: config.ingest.maxStringLength }), config.ingest));
  // Pictures' SVG is checked on threads of its own, off the event loop (ended by `stop`).
  const svgChecks = svgChecker(config.svgCheck);
  registry.add(...pictureRoutes(new PictureService(dataSource, clock, svgChecks), projects));
  registry.add(...devicesRoutes({ store: deviceStore, tokens: deviceTokens, joinKeys, deviceCodes }, { dpop, deployment: config.deployment }));
  registry.add(...signInModule.routes);
  registry.add(...accountRoutes(new AccountService(dataSource, organisations, sessions, logger, new SignInStore(dataSource), trail), signIn.accounts));
    const teams = new TeamService(dataSource, clock, {
    config: config.teams,
    mailer,
    logger,
    organisations: new OrganisationStore(dataSource),
    signInMethods: new SignInStore(dataSource),
    trail,
  });
  registry.add(...teamRoutes(teams, teamRateLimits(config.teams, signInSettings.rateLimitPerMinute)));
  registry.add(...cloudAgentRoutes(cloudAgents));
  registry.add(
    ...mcpRoutes({
      hub: relay,
      keys: signingKeys,
      baseUrl: config.baseUrl,
      maxBytes: config.cloudAgents.mcpMaxBytes,
      requestsPerMinute: config.cloudAgents.mcpRequestsPerMinute,
    }),
  );
  registry.add(...relayRoutes({ hub: relay, upgrades, keys: signingKeys }));
  registry.add(
    defineRoute({
      method: 'get',
      path: '/openapi.json',
      operationId: 'getOpenApiDocument',
      permission: 'public',
      summary: 'This API described as OpenAPI 3.1.0',
      description: "This deployment's document: only the operations it serves, the token kinds and error codes they accept and answer here, and an example for every request body and success answer.",
      tag: 'Discovery',
      extension: true,
      tenant: false,
      auth: 'public',
      database: false,
      schemas: {},
      responses: { 200: { description: 'The OpenAPI document.', schema: { type: 'object', description: 'OpenAPI 3.1.0 document.', examples: [{ openapi: '3.1.0', info: { title: 'Platform API', version: API_VERSION }, paths: { '/healthz': { get: { operationId: 'getLiveness' } } } }] } } },
      handler: () => ({ status: 200, body: openapi, headers: { 'Cache-Control': 'public, max-age=300' } }),
    }),
  );
  const profile: DeploymentProfile = {
    deployment: config.deployment,
    tokenKinds: resolvers.map((resolver) => resolver.kind),
    rateLimits: config.rateLimitsEnabled,
    redis: deps.redis !== undefined,
    dpopNonces: config.dpop.requireNonce,
  };
  const openapi = buildOpenApi(registry, { profile, baseUrl: config.baseUrl });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'simple');

  // Edge: request id with the log line and metrics at the finish, security headers, the trusted origin, CORS; run as one layer
  // (inSequence), in this order, on every request.
  const corsLayer = corsEdge(config.corsAllowedOrigins);
  app.use(
    inSequence([
      requestEdge(logger, (req, res, seconds) => metrics.requestFinished(req, res, seconds)),
      // An API answers JSON: nothing may load, nothing may frame it, nothing may sniff it; HTTPS is
      // sticky. Headers that only matter to HTML pages in old browsers (DNS prefetch, IE download
      // options, Flash cross-domain, XSS auditor, origin-agent clustering) are left out of every
      // answer; the approval page sets its own page headers.
      // Helmet's headers do not depend on the request: recorded once at start-up, set by one function.
      hoistedHeaders(
        helmet({
          contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
          crossOriginOpenerPolicy: false,
          originAgentCluster: false,
          xDnsPrefetchControl: false,
          xDownloadOptions: false,
          xPermittedCrossDomainPolicies: false,
          xXssProtection: false,
        }),
      ),
      // The one trusted origin of the request, settled before anything reads a host (400 otherwise).
      originEdge(config.baseUrl),
      // CORS_ALLOWED_ORIGINS: CORS headers and preflights for the listed console origins only.
      ...(corsLayer ? [corsLayer] : []),
    ]),
  );
  // Prometheus scrapes at any host name (a pod address): beside the API, before tenancy and rate
  // limits, outside the OpenAPI document; METRICS_TOKEN protects it (src/metrics.ts).
  app.all('/metrics', metrics.endpoint(config.metricsToken));
  const rateLimits = new RateLimits(redisRateLimits ? redisRateLimits.stores() : memoryStores(), config.rateLimitsEnabled);
  const router = express.Router();
  const parameterlessPaths = registry.mount(
    router,
    {
      rateLimit: (rule) => rateLimits.handler(rule),
      // Bodies are read in each route's chain, after its limits and its authentication. RFC 8628
      // clients post small forms to the token endpoints, the routes that declare forms.
      bodyParsers: (route, limit) => {
        if (route.rawBody) return [express.raw({ type: () => true, limit })];
        const parsers: RequestHandler[] = [express.json({ limit, strict: true })];
        if (route.mediaTypes?.includes('application/x-www-form-urlencoded')) {
          parsers.push(express.urlencoded({ extended: false, limit: Math.min(limit, 64 * 1024), parameterLimit: 100 }));
        }
        return parsers;
      },
      defaultBodyLimitBytes: config.jsonBodyLimitBytes,
      defaultJsonLimits: config.json,
      tenancy: tenantOf,
      authenticate: authentication(resolvers, config.deployment, (kind, outcome) => metrics.tokenVerified(kind, outcome)),
      schemaGate,
    },
    profile,
  );
  // Parameterless paths by one map look-up, then the router (route.ts `mount`).
  app.use(parameterlessPaths);
  app.use(router);
  // The approval page at verification_uri: HTML pages beside the API, not in its OpenAPI document.
  const pageLogin = new OrganisationLogin({ ...config.oidc, metadataMaxAgeMs: config.oidc.jwksCacheMaxAgeMs });
  app.use(
    approvalPage({
      deviceCodes,
      organisations,
      sessions: new WebSessions(dataSource, clock),
      signIn: config.deployment === 'self-hosted' ? new OrganisationSignIn(pageLogin, new PersonTokenResolver(verifier, organisations)) : undefined,
      cloud: config.deployment === 'cloud' ? { signIn, codeRateLimit: signInModule.rateLimits.emailVerify } : undefined,
      tenancy: tenantOf,
      rateLimit: (rule) => rateLimits.handler(rule),
      look: pageLook(config.page),
      clock,
    }),
  );
  app.use(notFoundHandler());
  app.use(errorHandler(logger));
  upgrades.attach(app);

  return {
    app,
    registry,
    profile,
    openapi,
    services: { organisations, verifier, dpop, deviceTokens, projects, policies, signIn, sessions, mailer, teams, cloudAgents, signingKeys, relay, auditLog },
    upgrade: upgrades.handle,
    start: async () => {
      // On a schema still to be migrated the keys are made at their first use, once it is. (Read
      // apart from `schema`, which keeps its answer for good once it is yes.)
      const migrated = await new MigrationExecutor(dataSource)
        .getPendingMigrations()
        .then((pending) => pending.length === 0)
        .catch(() => false);
      if (migrated) await signingKeys.ready();
      await relay.start();
      await revocations.start();
    },
    stop: async () => {
      await svgChecks.close();
      await sweeper.stop();
      await revocations.stop();
      await relay.stop();
    },
    cacheSizes,
    revocations,
    sweeper,
  };
}
