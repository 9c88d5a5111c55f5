import type { Request } from 'express';
import { unauthorized } from '../errors.js';
import type { OrganisationLookup, RunCredentialLookup } from './lookups.js';
import { RUN_CREDENTIAL_PREFIX } from './token-formats.js';
import type { Credential, Resolved, TokenResolver } from './resolver.js';

const CHALLENGE = 'Bearer realm="platform", error="invalid_token"';

/**
 * Cloud run credentials: `Bearer platform_cr_…` (spec 5), accepted only by the routes that name
 * `run-credential` (the run's MCP endpoint); everywhere else the credential is a kind of token
 * the route does not take (401). Valid while the run has not ended, the credential has not
 * expired and the registering device is not revoked; checked on every request (no cache), so
 * ending a run stops its credential at once on every replica.
 */
export class RunCredentialResolver implements TokenResolver {
  readonly kind = 'run-credential' as const;

  constructor(
    private readonly runs: RunCredentialLookup,
    private readonly organisations: OrganisationLookup,
  ) {}

  recognises(credential: Credential): boolean {
    return credential.token.startsWith(RUN_CREDENTIAL_PREFIX);
  }

  async resolve(credential: Credential, req: Request): Promise<Resolved> {
    if (credential.scheme !== 'bearer') throw unauthorized('a run credential is sent with the Bearer scheme', CHALLENGE);
    const run = await this.runs.resolveCredential(credential.token);
    if (!run) throw unauthorized('the run credential is not valid (the run ended, or it expired)', CHALLENGE);
    // Self-hosted: another organisation's credential is refused like an unknown one.
    const tenant = req.context.tenant;
    if (tenant && tenant.id !== run.organisationId) throw unauthorized('the run credential is not valid (the run ended, or it expired)', CHALLENGE);
    const organisation = tenant ?? (await this.organisations.findById(run.organisationId));
    if (!organisation) throw unauthorized('the run credential is not valid (the run ended, or it expired)', CHALLENGE);
    return {
      organisation,
      principal: {
        kind: 'run-credential',
        organisationId: run.organisationId,
        personId: run.personId,
        role: undefined,
        deviceId: run.deviceId,
        runId: run.id,
        scopes: [],
      },
    };
  }
}
