/**
 * The two deployments one build serves (PLATFORM_DEPLOYMENT): Cloud, where the caller names the
 * organisation, and self-hosted, where the host name does. Every layer may ask which one runs;
 * modules are told it in their settings (src/app.ts), never by reading the configuration.
 */
export const DEPLOYMENTS = ['self-hosted', 'cloud'] as const;
export type Deployment = (typeof DEPLOYMENTS)[number];
