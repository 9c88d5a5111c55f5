import type { OrganisationRecord } from '../domain/organisation.js';
import type { OrganisationRole } from './principal.js';

/**
 * What the token resolvers read from the modules that keep organisations, people, devices,
 * sessions and runs. Declared here, by the layer that needs them, so that src/auth imports no
 * module (eslint.config.js, the layer zones): src/app.ts passes the module services, which have
 * these methods.
 */

/** Organisations by id: the organisation a device token or run credential acts for (Cloud: no tenant from the host). */
export interface OrganisationLookup {
  findById(id: string): Promise<OrganisationRecord | null>;
}

/** Who an identity provider says is signing in. */
export interface SigningInIdentity {
  issuer: string;
  subject: string;
  name?: string | undefined;
  email?: string | undefined;
  /** False when the provider said the address is not verified (`email_verified: false`). */
  emailVerified?: boolean | undefined;
  role?: OrganisationRole | undefined;
}

/** The person was removed from the organisation; their provider's tokens no longer admit them. */
export class RemovedMember extends Error {
  constructor() {
    super('this person was removed from the organisation');
    this.name = 'RemovedMember';
  }
}

/** Person tokens (self-hosted): the organisation whose provider issued the token, and the person it names. */
export interface PersonTokenOrganisations {
  findByIssuer(issuer: string): Promise<OrganisationRecord | null>;
  /** Records (or updates) the person signing in and answers their effective role; throws RemovedMember for a removed member. */
  signIn(organisation: OrganisationRecord, identity: SigningInIdentity): Promise<{ person: { id: string }; role: OrganisationRole }>;
}

/** A person's membership of an organisation (removed members have none). */
export interface Membership {
  organisation: OrganisationRecord;
  role: OrganisationRole;
}

/** Cloud sessions: the organisations a session's person belongs to. */
export interface MembershipLookup {
  membershipsOf(personId: string): Promise<Membership[]>;
  membershipIn(personId: string, organisationId: string): Promise<Membership | undefined>;
}

/** Cloud sessions: the current session of an access token, by the token's stored hash (hex SHA-256). */
export interface SessionLookup {
  resolveAccessTokenHash(tokenHash: string): Promise<{ session: { id: string; personId: string }; expiresAt: Date } | undefined>;
}

/** The device fields a request needs (the devices module's DeviceRecord has them). */
export interface TokenDevice {
  id: string;
  organisationId: string;
  personId: string;
  kind: 'workbench' | 'node';
  /** RFC 7638 thumbprint of the key every token of this device is bound to (DPoP). */
  dpopJkt: string | null;
  /** The granted scopes, space-separated. */
  scope: string;
}

/** Device tokens: the device of a current access token, by the token's stored hash (hex SHA-256). */
export interface DeviceTokenLookup {
  resolveAccessTokenHash(tokenHash: string): Promise<{ device: TokenDevice; expiresAt: Date } | undefined>;
}

/** Run credentials: the run a current credential reaches (none when it ended, expired or its device was revoked). */
export interface RunCredentialLookup {
  resolveCredential(credential: string): Promise<{ id: string; organisationId: string; personId: string; deviceId: string } | undefined>;
}
