import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * `node dist/src/cli/openapi.js <dir>` (what `npm run lint:openapi` runs): writes the OpenAPI
 * document of each deployment, `<dir>/cloud.json` and `<dir>/self-hosted.json`, as `/openapi.json`
 * serves it. The declarations are read, nothing is served and no database is opened.
 */

export const DOCUMENT_DEPLOYMENTS = {
  'self-hosted': { PLATFORM_DEPLOYMENT: 'self-hosted' },
  cloud: { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://platform.example', AUTH_CONSOLE_REDIRECT_URIS: 'https://console.platform.example/signed-in' },
} as const;

export type DocumentDeployment = keyof typeof DOCUMENT_DEPLOYMENTS;

/** The document `/openapi.json` serves on each deployment. */
export async function openApiDocuments(): Promise<Record<DocumentDeployment, unknown>> {
  const { loadConfig } = await import('../config.js');
  const { buildApp } = await import('../app.js');
  const { createDataSource } = await import('../db/data-source.js');
  const { createLogger } = await import('../logger.js');
  const { ManualClock } = await import('../util/clock.js');
  const documents: Partial<Record<DocumentDeployment, unknown>> = {};
  for (const [deployment, env] of Object.entries(DOCUMENT_DEPLOYMENTS) as [DocumentDeployment, Record<string, string>][]) {
    const config = loadConfig({ ...env, DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' });
    documents[deployment] = buildApp({ config, dataSource: createDataSource(config.database), clock: new ManualClock(Date.now()), logger: createLogger('silent') }).openapi;
  }
  return documents as Record<DocumentDeployment, unknown>;
}

function runAsScript(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(entry)).href;
  } catch {
    return false;
  }
}

if (runAsScript()) {
  const dir = process.argv[2];
  if (!dir) {
    process.stderr.write('usage: node dist/src/cli/openapi.js <directory>\n');
    process.exit(64);
  }
  mkdirSync(dir, { recursive: true });
  for (const [deployment, document] of Object.entries(await openApiDocuments())) {
    const file = join(dir, `${deployment}.json`);
    writeFileSync(file, `${JSON.stringify(document, null, 2)}\n`);
    process.stdout.write(`${file}\n`);
  }
  // Building the app's declarations leaves timers behind; nothing else is running.
  process.exit(0);
}
