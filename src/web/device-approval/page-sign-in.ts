import type { Request } from 'express';
import { decodeJwt } from 'jose';
import { OrganisationLoginError, type OrganisationLogin } from '../../../adapters/identity/organisation-login.js';
import type { IssuerSettings } from '../../../adapters/identity/organisation-oidc.js';
import type { TokenResolver } from '../../auth/resolver.js';
import { ApiError } from '../../errors.js';
import type { OrganisationRecord } from '../../modules/organisation/entities.js';

/**
 * How the approval page learns who is at the browser. The page asks this seam, never a provider
 * directly: self-hosted, it is the organisation's OpenID Connect provider (below); on Cloud it
 * will be a Cloud session, which does not exist yet, so Cloud has no implementation and the page
 * says so instead of pretending.
 */
export interface ApproverSignIn {
  /** Origins a sign-in form's answer may redirect the browser to (the page's `form-action`). */
  formTargets(organisation: OrganisationRecord): Promise<string[]>;
  start(organisation: OrganisationRecord, redirectUri: string): Promise<StartedSignIn>;
  finish(organisation: OrganisationRecord, callbackUrl: URL, checks: SignInChecks, req: Request): Promise<SignedInPerson>;
}

export interface StartedSignIn {
  redirectTo: URL;
  state: string;
  checks: Omit<SignInChecks, 'state'>;
}

export interface SignInChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface SignedInPerson {
  personId: string;
  /** For "signed in as": the provider's name for the person, else their email, else `sub`. */
  displayName: string;
}

/** A sign-in that ended without a person; `message` is safe to show, `status` says whose fault. */
export class SignInFailed extends Error {
  constructor(
    message: string,
    readonly status: 400 | 403 | 502,
  ) {
    super(message);
    this.name = 'SignInFailed';
  }
}

const LOGIN_FAILURE_STATUS = { unavailable: 502, refused: 403, invalid: 400 } as const;

export function issuerSettingsOf(organisation: OrganisationRecord): IssuerSettings | undefined {
  const { oidcIssuer: issuer, oidcClientId: clientId, oidcAudience: audience, oidcApiScope: apiScope } = organisation;
  return issuer && clientId && audience && apiScope ? { issuer, clientId, audience, apiScope } : undefined;
}

/**
 * Self-hosted: authorization code + PKCE at the organisation's provider, then the access token
 * it answers is resolved exactly as a `Bearer` person token on any API request is (same
 * verifier, same issuer, audience and scope checks, same role-claim rules, same first-sight
 * creation of the person), by the person-token resolver itself.
 */
export class OrganisationSignIn implements ApproverSignIn {
  constructor(
    private readonly login: OrganisationLogin,
    private readonly personTokens: TokenResolver,
  ) {}

  private settings(organisation: OrganisationRecord): IssuerSettings {
    const settings = issuerSettingsOf(organisation);
    if (!settings) throw new SignInFailed('this organisation has not connected an identity provider yet; ask an administrator', 502);
    return settings;
  }

  async formTargets(organisation: OrganisationRecord): Promise<string[]> {
    return [await this.guard(() => this.login.authorizationOrigin(this.settings(organisation)))];
  }

  async start(organisation: OrganisationRecord, redirectUri: string): Promise<StartedSignIn> {
    const started = await this.guard(() => this.login.start(this.settings(organisation), redirectUri));
    return { redirectTo: started.authorizationUrl, state: started.state, checks: { nonce: started.nonce, codeVerifier: started.codeVerifier } };
  }

  async finish(organisation: OrganisationRecord, callbackUrl: URL, checks: SignInChecks, req: Request): Promise<SignedInPerson> {
    const { accessToken, idTokenSubject } = await this.guard(() => this.login.finish(this.settings(organisation), callbackUrl, checks));
    let personId: string | undefined;
    try {
      ({ principal: { personId } } = await this.personTokens.resolve({ scheme: 'bearer', token: accessToken }, req));
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        throw new SignInFailed(`your identity provider's token was refused: ${error.message}`, 403);
      }
      throw error;
    }
    // Verified above; read again only for the subject and the name to show.
    const claims = decodeJwt(accessToken);
    if (claims.sub !== idTokenSubject) throw new SignInFailed('your identity provider answered tokens for two different people', 403);
    if (!personId) throw new SignInFailed('no person stands behind this token', 403);
    const displayName = [claims.name, claims.email, claims.sub].find((value): value is string => typeof value === 'string' && value.trim() !== '') ?? personId;
    return { personId, displayName: displayName.slice(0, 200) };
  }

  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof OrganisationLoginError) throw new SignInFailed(error.message, LOGIN_FAILURE_STATUS[error.reason]);
      throw error;
    }
  }
}
