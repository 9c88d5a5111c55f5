import type { AuditTrail } from '../../audit.js';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { Mailer } from '../../mail/mailer.js';
import type { Clock } from '../../util/clock.js';
import type { OrganisationService } from '../organisation/service.js';
import { SignInAccounts } from './accounts.js';
import { SignInCodes } from './code-exchange.js';
import { EmailCodes } from './email-codes.js';
import type { IdentityProvider } from '../../identity/identity-provider.js';
import { ProviderFlow } from './provider-flow.js';
import type { CloudSessions } from './sessions.js';
import type { IdentityProviderId, SignInSettings } from './settings.js';
import { DEVICE_PAGE_CALLBACK, signInOrigin, type FlowClient } from './shared.js';
import { SignInStore } from './store.js';

/**
 * Cloud sign-in (spec 4.3), its parts put together: the provider flow (provider-flow.ts), emailed
 * codes (email-codes.ts), accounts and link tickets (accounts.ts), and the one-time codes a
 * client exchanges for a session at the token endpoint (code-exchange.ts); what they share is in
 * shared.ts. Every flow belongs to whoever started it: a provider flow to the browser that opened
 * the start (flow-binding.ts); a link to the session that asked for the ticket.
 */

export interface SignInServiceOptions {
  config: SignInSettings;
  /** Where an added sign-in method leaves its audit row, in its transaction. */
  trail?: AuditTrail | undefined;
  /** `serviceOrigin` (src/http/origin.ts): PLATFORM_BASE_URL, which Cloud requires. */
  origin: string | undefined;
  providers: ReadonlyMap<IdentityProviderId, IdentityProvider>;
  organisations: OrganisationService;
  sessions: CloudSessions;
  mailer: Mailer;
  logger: Logger;
  /** The key emailed codes are stored under (HMAC-SHA-256). */
  codeKey: Buffer;
}

export class SignInService {
  readonly accounts: SignInAccounts;
  readonly codes: SignInCodes;
  readonly providerFlow: ProviderFlow;
  readonly emailCodes: EmailCodes;

  constructor(
    dataSource: DataSource,
    clock: Clock,
    private readonly options: SignInServiceOptions,
  ) {
    const store = new SignInStore(dataSource);
    const { config, origin } = options;
    this.accounts = new SignInAccounts(dataSource, clock, store, { config, organisations: options.organisations, logger: options.logger, trail: options.trail });
    this.codes = new SignInCodes(dataSource, clock, store, { config, sessions: options.sessions, accounts: this.accounts });
    const parts = { accounts: this.accounts, codes: this.codes };
    this.providerFlow = new ProviderFlow(clock, store, { config, origin, providers: options.providers, ...parts });
    this.emailCodes = new EmailCodes(clock, store, { config, origin, mailer: options.mailer, logger: options.logger, codeKey: options.codeKey, ...parts });
  }

  /** Whether `redirectUri` is registered, exactly, for `client`. */
  isRegistered(client: unknown, redirectUri: unknown): client is FlowClient {
    if (typeof redirectUri !== 'string') return false;
    if (client === 'console' || client === 'mobile') return this.options.config.redirectUris[client].includes(redirectUri);
    return false;
  }

  /** The service's own origin, the start of every absolute URL sign-in builds. */
  get origin(): string {
    return signInOrigin(this.options.origin);
  }

  /** Where the device page's sign-ins come back. */
  get devicePageRedirectUri(): string {
    return `${this.origin}${DEVICE_PAGE_CALLBACK}`;
  }
}
