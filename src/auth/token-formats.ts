/**
 * The prefixes that tell the service's own credentials apart by their form alone (spec 5): the
 * modules issue tokens with them, the resolvers recognise them (src/auth/resolver.ts).
 */

/** Device access tokens (src/modules/devices/tokens.ts). */
export const ACCESS_TOKEN_PREFIX = 'platform_at_';
/** Cloud session access tokens (src/modules/signin/sessions.ts). */
export const SESSION_ACCESS_PREFIX = 'platform_sa_';
/** Cloud agent run credentials (src/modules/cloud-agents/service.ts). */
export const RUN_CREDENTIAL_PREFIX = 'platform_cr_';
