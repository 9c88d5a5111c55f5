/**
 * The organisation as every layer reads it: the request's tenant (src/http), the organisation a
 * credential acts for (src/auth), and the row the organisation module keeps
 * (src/modules/organisation/entities.ts stores this shape). Declared here, below them all, so that
 * the HTTP and authentication layers need no module to name it (eslint.config.js, the layer zones).
 */

export type OrganisationKind = 'personal' | 'team' | 'enterprise';
export type OrganisationPlan = 'free' | 'teams' | 'enterprise';

export interface OrganisationRecord {
  id: string;
  name: string;
  kind: OrganisationKind;
  plan: OrganisationPlan;
  /** OpenID Connect settings (self-hosted): the provider that signs this organisation's person tokens. */
  oidcIssuer: string | null;
  oidcClientId: string | null;
  oidcApiScope: string | null;
  oidcAudience: string | null;
  /** Name of the claim carrying the organisation role (`owner`, `admin`, `member`); none: `member`. */
  oidcRoleClaim: string | null;
  createdAt: Date;
}

/** A host name that can name an organisation (self-hosted tenancy): lower-case labels, no trailing dot. */
export const HOST_NAME = /^(?=.{1,253}$)(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*$/;
