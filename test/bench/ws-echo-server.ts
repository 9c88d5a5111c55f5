import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { watchParent } from './child.js';

/**
 * The relay's ceiling: a bare `ws` server that sends every text frame straight back, nothing
 * else (no authentication, no JSON). Run as a child process by run.ts; PORT and HOST come from
 * it. A plain GET answers 200, so run.ts can tell it is up.
 */
const http = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok'));
const server = new WebSocketServer({ server: http, perMessageDeflate: false });
server.on('connection', (socket) => {
  socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }));
});
http.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');

watchParent(() => {
  for (const client of server.clients) client.terminate();
  http.close(() => process.exit(0));
});
