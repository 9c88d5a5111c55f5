import express from 'express';
import { watchParent } from './child.js';

/**
 * The baseline: a bare Express 5 app answering a small JSON document, nothing else (no helmet,
 * no logging, no tenancy). Run as a child process by run.ts; PORT and HOST come from it.
 */
const app = express();
app.get('/', (_req, res) => {
  res.json({ status: 'ok', service: 'bare', items: [1, 2, 3] });
});

const server = app.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1', (error?: Error) => {
  if (error) {
    process.stderr.write(`bare server: ${error.message}\n`);
    process.exit(1);
  }
});

watchParent(() => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
