import type { Config } from './config.js';
import type { OrganisationService } from './modules/organisation/service.js';

/**
 * First start of a self-hosted install: an empty database gets an organisation served at
 * `localhost`, so the service answers at once, and the operator is told what to configure next.
 */
export async function bootstrapLocalhost(config: Config, organisations: OrganisationService, print: (line: string) => void): Promise<void> {
  if (config.deployment !== 'self-hosted' || !config.bootstrapLocalhost) return;
  if ((await organisations.count()) > 0) return;
  const organisation = await organisations.create({ name: 'Local organisation', kind: 'enterprise', hosts: ['localhost'] });
  const lines = [
    `Created organisation ${organisation.id} ("${organisation.name}") served at http://localhost:${config.port}.`,
    'Next, connect your identity provider and add your host name:',
    `  npx platform org configure ${organisation.id} --host platform.example.com --remove-host localhost \\`,
    '    --issuer https://idp.example.com --client-id <client id> --api-scope <scope> --audience <audience> [--role-claim <claim>]',
    '  npx platform org list',
    'Then make yourself its first owner (you become that person when you first sign in with that address):',
    `  npx platform bootstrap --org ${organisation.id} --email you@example.com`,
  ];
  for (const line of lines) print(line);
}
