import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { PersonIdentityEntity } from '../../src/modules/organisation/entities.js';
import type { ManualClock } from '../../src/util/clock.js';
import { TestIdentityProvider } from './idp.js';
import { createOrganisation, hostOf, type TestPlatform } from './platform.js';

/** The claim in which the test providers name a person's role in the organisation. */
export const ROLE_CLAIM = 'platform_role';

export type Role = 'owner' | 'admin' | 'member';

export interface TwoOrganisations {
  idp: TestIdentityProvider;
  otherIdp: TestIdentityProvider;
  organisation: OrganisationRecord;
  other: OrganisationRecord;
  host: string;
  otherHost: string;
}

/**
 * Two organisations of `platform`, each signing in with a test OpenID Connect provider of its own
 * (on `clock`) that names roles in ROLE_CLAIM. The caller closes the providers.
 */
export async function twoOrganisations(platform: TestPlatform, clock: ManualClock, names: [string, string] = ['Acme', 'Other']): Promise<TwoOrganisations> {
  const [idp, otherIdp] = await Promise.all([TestIdentityProvider.start({ clock }), TestIdentityProvider.start({ clock })]);
  const organisation = await createOrganisation(platform, { name: names[0], oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
  const other = await createOrganisation(platform, { name: names[1], oidc: otherIdp.settings({ roleClaim: ROLE_CLAIM }) });
  return { idp, otherIdp, organisation, other, host: await hostOf(platform, organisation), otherHost: await hostOf(platform, other) };
}

/** Headers with a person token of `provider` naming `role` (the provider is the authority), `sub` defaulting to the role. */
export async function personHeaders(provider: TestIdentityProvider, role: Role, sub: string = role): Promise<Record<string, string>> {
  return { Authorization: `Bearer ${await provider.mint({ sub, claims: { [ROLE_CLAIM]: role, name: `The ${role}` } })}` };
}

/** The person the platform made for `sub` of `provider` when they first signed in. */
export async function personIdFor(platform: TestPlatform, provider: TestIdentityProvider, sub: string): Promise<string> {
  return (await platform.dataSource.getRepository(PersonIdentityEntity).findOneByOrFail({ issuer: provider.issuer, subject: sub })).personId;
}
