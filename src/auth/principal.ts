/**
 * Who is calling. Every resolver (person token, device token, DPoP-bound device token, Cloud
 * session, run credential) produces this one small type; everything after authentication reads
 * only the principal, never the Authorization header.
 */

/** The token kinds of spec section 5, as route declarations name them. */
export type TokenKind = 'person' | 'device' | 'cloud-session' | 'run-credential';

export type OrganisationRole = 'owner' | 'admin' | 'member';
export const ORGANISATION_ROLES: readonly OrganisationRole[] = ['owner', 'admin', 'member'];

export type ProjectRole = 'owner' | 'contributor' | 'viewer';
export const PROJECT_ROLES: readonly ProjectRole[] = ['owner', 'contributor', 'viewer'];

export interface Principal {
  kind: TokenKind;
  organisationId: string;
  /**
   * The person behind the request, whatever the token kind: the signer of a person token, the
   * person of a Cloud session, the approver of a device (a device row always names one), the person
   * of a run credential's run. Every resolver sets it, so a handler never asserts it.
   */
  personId: string;
  /** The person's role in the organisation, when a person stands behind the request. */
  role: OrganisationRole | undefined;
  deviceId: string | undefined;
  /** Device tokens: whether the device is a workbench (desktop) or a node (headless). */
  deviceKind?: 'workbench' | 'node' | undefined;
  /** Run credentials: the one cloud agent run the credential reaches. */
  runId?: string | undefined;
  scopes: readonly string[];
  /** Cloud sessions: the session the access token belongs to (sign-out ends it). */
  sessionId?: string | undefined;
}
