import { WebSocket } from 'ws';
import { watchParent } from './child.js';

/**
 * The workbench end of the relay bench, in a process of its own: it holds the control channel of
 * a seeded workbench (RELAY_URL, ACCESS_TOKEN) and answers every `cloudMcp.call` at once with the
 * MCP response to a tools/call (the same text every time, so the load generator can check each
 * answer byte for byte). It does not verify the assertion: that cost is the workbench's, not the
 * relay's. It writes `ready` on stdout once the channel is open and its `hello` has arrived; it
 * ignores notifications (`hello`, `policy.changed`: docs/api/policy-push.md).
 */
const socket = new WebSocket(process.env.RELAY_URL!, { headers: { Authorization: `Bearer ${process.env.ACCESS_TOKEN}` }, perMessageDeflate: false });
socket.on('unexpected-response', (_req, res) => {
  process.stderr.write(`bench workbench: the channel was refused (${res.statusCode})\n`);
  process.exit(1);
});
socket.on('close', (code) => {
  process.stderr.write(`bench workbench: the channel closed (${code})\n`);
  process.exit(code === 1001 ? 0 : 1);
});
socket.on('message', (data) => {
  const frame = JSON.parse(data.toString()) as { id?: string; method?: string; params: { message: { id?: string | number } } };
  if (frame.method === 'hello') process.stdout.write('ready\n');
  if (frame.method !== 'cloudMcp.call' || frame.id === undefined) return;
  const message = frame.params.message;
  const result = message.id === undefined ? null : { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'ok' }] } };
  socket.send(JSON.stringify({ jsonrpc: '2.0', id: frame.id, result }));
});

watchParent(() => {
  socket.close(1000);
  setTimeout(() => process.exit(0), 200).unref();
});
