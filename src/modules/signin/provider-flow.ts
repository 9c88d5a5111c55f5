import { sealJson, unsealJson } from '../../util/seal.js';
import { ApiError } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { hashSecret, newSecret } from '../../util/secrets.js';
import type { LinkIntent, SignInAccounts } from './accounts.js';
import type { SignInCodes } from './code-exchange.js';
import { bindingHash, sameBrowser } from './flow-binding.js';
import { IdentityProviderError, PROVIDER_LABELS, type IdentityProvider } from './identity-provider.js';
import type { IdentityProviderId, SignInProviderId, SignInSettings } from './settings.js';
import { errorRedirect, RedirectError, signInOrigin, type ClientRequest } from './shared.js';
import type { SignInStore } from './store.js';

/**
 * Sign-in through an identity provider (spec 4.3): the service runs its own authorization-code
 * flow with the person's provider (`GET /auth/v1/start`, then the provider's answer at
 * `/auth/v1/callback/{provider}`), finds or creates the person (accounts.ts), and sends the client
 * a one-time code (code-exchange.ts). Every flow belongs to the browser that opened the start
 * (flow-binding.ts).
 */

export const FLOW_STATE_PREFIX = 'platform_fs_';

interface FlowData {
  request: ClientRequest;
  codeVerifier: string;
  nonce: string | undefined;
  link: LinkIntent | undefined;
}

const FLOW = 'platform sign-in flow v1';
const sealFlow = (data: FlowData, state: string): string => sealJson(data, state, 'sign-in flow', FLOW);
const unsealFlow = (sealed: string, state: string): FlowData | undefined => unsealJson<FlowData>(sealed, state, 'sign-in flow', FLOW);

export interface ProviderFlowOptions {
  config: Pick<SignInSettings, 'providerOrder' | 'flowTtlSeconds'>;
  /** `serviceOrigin` (src/http/origin.ts): PLATFORM_BASE_URL, which Cloud requires. */
  origin: string | undefined;
  providers: ReadonlyMap<IdentityProviderId, IdentityProvider>;
  accounts: SignInAccounts;
  codes: SignInCodes;
}

export class ProviderFlow {
  constructor(
    private readonly clock: Clock,
    private readonly store: SignInStore,
    private readonly options: ProviderFlowOptions,
  ) {}

  private get origin(): string {
    return signInOrigin(this.options.origin);
  }

  /** The providers a person can choose, in display order: enabled ones and email. */
  providers(): { id: SignInProviderId; label: string }[] {
    return this.options.config.providerOrder.filter((id) => id === 'email' || this.options.providers.has(id)).map((id) => ({ id, label: PROVIDER_LABELS[id] }));
  }

  provider(id: string): IdentityProvider | undefined {
    return this.options.providers.get(id as IdentityProviderId);
  }

  callbackUri(provider: IdentityProviderId): string {
    return `${this.origin}/auth/v1/callback/${provider}`;
  }

  /** How long a flow (and the browser binding cookie that goes with it) lasts. */
  get flowTtlSeconds(): number {
    return this.options.config.flowTtlSeconds;
  }

  /**
   * Starts a sign-in at `providerId`: keeps the flow server-side (found by the hash of the state
   * sent to the provider, its secrets sealed under that state, bound to the hash of `browser`,
   * the binding cookie the caller sets) and answers where to send the browser. Throws
   * RedirectError for anything the client must hear at its redirect URI.
   */
  async startProvider(providerId: string, request: ClientRequest, link: string | undefined, browser: string): Promise<URL> {
    const provider = this.provider(providerId);
    if (!provider) throw new RedirectError('invalid_request', `provider must be one of the enabled providers: ${[...this.options.providers.keys()].join(', ') || 'none'}`);
    const linkIntent = await this.options.accounts.useLinkTicket(link);
    const state = newSecret(FLOW_STATE_PREFIX);
    let started;
    try {
      started = await provider.start(this.callbackUri(provider.id), state);
    } catch (error) {
      if (error instanceof IdentityProviderError) throw new RedirectError('temporarily_unavailable', `${provider.label} cannot be used just now`);
      throw error;
    }
    const now = this.clock.now();
    const data: FlowData = { request, codeVerifier: started.codeVerifier, nonce: started.nonce, link: linkIntent };
    await this.store.insertFlow(
      {
        stateHash: hashSecret(state),
        provider: provider.id,
        sealed: sealFlow(data, state),
        browserHash: bindingHash(browser),
        expiresAt: new Date(now.getTime() + this.options.config.flowTtlSeconds * 1000),
        createdAt: now,
      },
      now,
    );
    return started.authorizationUrl;
  }

  /**
   * The provider's answer at our callback, in the browser whose binding cookie is `browser`.
   * Answers the client's request and either the URL to send the browser back to, or undefined
   * when no flow matches (unknown, expired, used, or another provider's: nothing safe to redirect
   * to). A flow is taken out (single use) before anything else happens to it.
   *
   * In another browser than the one that started it, the flow ends there: `access_denied` at the
   * client's redirect URI, the provider's code never redeemed, nobody created, nothing attached.
   * A link flow ends with a code that signs nobody in (see `SignInCodes.exchangeCode`).
   */
  async finishProvider(providerId: IdentityProviderId, callbackUrl: URL, browser: string | undefined): Promise<{ request: ClientRequest; redirectTo: URL } | undefined> {
    const state = callbackUrl.searchParams.get('state');
    if (!state || !state.startsWith(FLOW_STATE_PREFIX) || state.length > 100) return undefined;
    const flow = await this.store.takeFlow(hashSecret(state), providerId);
    if (!flow || flow.expiresAt.getTime() <= this.clock.now().getTime()) return undefined;
    const data = unsealFlow(flow.sealed, state);
    const provider = this.provider(providerId);
    if (!data || !provider) return undefined;
    try {
      if (!sameBrowser(flow.browserHash, browser)) {
        throw new RedirectError('access_denied', 'this sign-in was started in another browser: start it again here');
      }
      const identity = await this.guardProvider(() => provider.finish(callbackUrl, this.callbackUri(provider.id), { state, codeVerifier: data.codeVerifier, nonce: data.nonce }));
      const { accounts, codes } = this.options;
      if (data.link) {
        // Told early, in the browser; decided again, for good, when the owner exchanges the code.
        await accounts.assertLinkable(data.link.personId, provider.id, identity).catch((error: unknown) => {
          if (error instanceof ApiError && error.code === 'already_linked') throw new RedirectError('already_linked', error.message);
          throw error;
        });
        return { request: data.request, redirectTo: await this.successRedirect(data.request, await codes.issueLinkCode(data.request, data.link, { provider: provider.id, identity })) };
      }
      const person = await accounts.resolvePerson(provider.id, identity);
      return { request: data.request, redirectTo: await this.successRedirect(data.request, await codes.issueCode(data.request, person)) };
    } catch (error) {
      if (error instanceof RedirectError) return { request: data.request, redirectTo: errorRedirect(data.request, error, this.origin) };
      throw error;
    }
  }

  private async guardProvider<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof IdentityProviderError)) throw error;
      if (error.reason === 'refused') throw new RedirectError('access_denied', error.message);
      if (error.reason === 'unavailable') throw new RedirectError('temporarily_unavailable', error.message);
      throw new RedirectError('server_error', error.message);
    }
  }

  private async successRedirect(request: ClientRequest, code: string): Promise<URL> {
    const url = new URL(request.redirectUri);
    url.searchParams.append('code', code);
    if (request.state !== undefined) url.searchParams.append('state', request.state);
    // RFC 9207: the answer names who issued it, so a client talking to several servers cannot mix them up.
    url.searchParams.append('iss', this.origin);
    return url;
  }
}
