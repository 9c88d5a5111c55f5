import { createServer } from 'node:http';
import express from 'express';
import { appClasses } from '../../src/lifecycle.js';
import { watchParent } from './child.js';

/**
 * The baseline: a bare Express 5 app answering a small JSON document, nothing else (no helmet,
 * no logging, no tenancy). Run as a child process by run.ts; PORT and HOST come from it.
 * BARE_APP_CLASSES=true: the same app on a server whose requests and responses are born with the
 * app's prototypes, as the platform's are (src/lifecycle.ts `appClasses`), for comparison.
 */
const app = express();
app.get('/', (_req, res) => {
  res.json({ status: 'ok', service: 'bare', items: [1, 2, 3] });
});

const server = process.env.BARE_APP_CLASSES === 'true' ? createServer(appClasses(app), app) : createServer(app);
server.once('error', (error) => {
  process.stderr.write(`bare server: ${error.message}\n`);
  process.exit(1);
});
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');

watchParent(() => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
