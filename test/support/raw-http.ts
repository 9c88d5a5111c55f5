import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Express } from 'express';
import { appClasses } from '../../src/lifecycle.js';

/**
 * HTTP/1.1 over a bare socket, for requests supertest (and Node's client) will not send: repeated
 * Host lines, raw non-ASCII bytes, absolute-form targets, a missing Host. The answer is read
 * until the server closes the connection (`Connection: close` is always sent).
 */

export interface RawAnswer {
  status: number;
  headers: Record<string, string[]>;
  body: string;
  /** The whole answer as received (latin1), for "reflected nowhere" checks. */
  raw: string;
}

export interface RawServer {
  port: number;
  send(head: string, body?: Buffer | string): Promise<RawAnswer>;
  close(): Promise<void>;
}

/** The app on an ephemeral loopback port (IPv4, so the peer address is 127.0.0.1). */
export async function listen(app: Express): Promise<RawServer> {
  // Built as main.ts builds it (src/lifecycle.ts `appClasses`): hostile heads reach the same objects.
  const server: Server = createServer(appClasses(app), app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    send: (head, body) => rawRequest(port, head, body),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', offset);
    if (lineEnd < 0) break;
    const size = Number.parseInt(body.subarray(offset, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/**
 * Sends `head` (request line and header lines, `\r\n`-separated, without the blank line; a
 * `Connection: close` line is added) and `body` as bytes: a string head is written as UTF-8,
 * so non-ASCII characters reach the server as their UTF-8 bytes.
 */
export function rawRequest(port: number, head: string, body?: Buffer | string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const all = Buffer.concat(chunks);
      const split = all.indexOf('\r\n\r\n');
      const headText = (split < 0 ? all : all.subarray(0, split)).toString('latin1');
      const [statusLine = '', ...lines] = headText.split('\r\n');
      const headers: Record<string, string[]> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        if (colon < 0) continue;
        (headers[line.slice(0, colon).trim().toLowerCase()] ??= []).push(line.slice(colon + 1).trim());
      }
      let payload: Buffer = split < 0 ? Buffer.alloc(0) : all.subarray(split + 4);
      if (headers['transfer-encoding']?.some((value) => value.toLowerCase().includes('chunked'))) payload = dechunk(payload);
      resolve({ status: Number(statusLine.split(' ')[1] ?? 0), headers, body: payload.toString('utf8'), raw: all.toString('latin1') });
    });
    socket.write(`${head}\r\nConnection: close\r\n\r\n`);
    // No half-close: the server answers and closes (`Connection: close`).
    if (body !== undefined) socket.write(body);
  });
}
