import type { Reads } from '../../db/reads.js';
import type { AuditTrail } from '../../audit.js';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { RouteDefinition } from '../../http/route.js';
import type { Mailer } from '../../mail/mailer.js';
import type { Clock } from '../../util/clock.js';
import type { OrganisationService } from '../organisation/service.js';
import type { EmailStartCheck } from './email-start-check.js';
import type { IdentityProvider } from '../../identity/identity-provider.js';
import { signInRateLimits, signInRoutes } from './routes.js';
import { SignInService } from './service.js';
import { CloudSessions } from './sessions.js';
import type { IdentityProviderId, SignInSettings } from './settings.js';

/**
 * Cloud sign-in (spec 4.3) and its sessions, wired once for src/app.ts: the service and its
 * parts, the Cloud sessions, the routes and their rate limits (the approval page uses the
 * emailed-code limit too).
 */

export interface SignInModuleDependencies {
  dataSource: DataSource;
  clock: Clock;
  logger: Logger;
  mailer: Mailer;
  organisations: OrganisationService;
  trail?: AuditTrail;
  /** Where access tokens are looked up (src/db/reads.ts); default: the primary. */
  reads?: Reads | undefined;
}

export interface SignInModuleSettings {
  config: SignInSettings;
  /** `serviceOrigin` (src/http/origin.ts): PLATFORM_BASE_URL, which Cloud requires. */
  origin: string | undefined;
  providers: ReadonlyMap<IdentityProviderId, IdentityProvider>;
  /** The key emailed codes are stored under (HMAC-SHA-256). */
  codeKey: Buffer;
  /** A check `email/start` asks before it mails (email-start-check.ts); none by default. */
  emailStartCheck?: EmailStartCheck | undefined;
}

export interface SignInModule {
  service: SignInService;
  sessions: CloudSessions;
  routes: RouteDefinition[];
  rateLimits: ReturnType<typeof signInRateLimits>;
}

export function createSignInModule(deps: SignInModuleDependencies, settings: SignInModuleSettings): SignInModule {
  const { dataSource, clock } = deps;
  const { config, origin } = settings;
  const sessions = new CloudSessions(dataSource, clock, config, deps.reads);
  const service = new SignInService(dataSource, clock, {
    config,
    origin,
    providers: settings.providers,
    organisations: deps.organisations,
    sessions,
    mailer: deps.mailer,
    logger: deps.logger,
    trail: deps.trail,
    codeKey: settings.codeKey,
  });
  return {
    service,
    sessions,
    routes: signInRoutes({ service, sessions, config, origin, emailStartCheck: settings.emailStartCheck }),
    rateLimits: signInRateLimits(config),
  };
}
