import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { appClasses } from '../../src/lifecycle.js';

describe('appClasses: the server\'s requests and responses are born with the app\'s prototypes', () => {
  const app = express();
  const seen: { request: boolean; response: boolean }[] = [];
  app.get('/echo', (req, res) => {
    seen.push({ request: Object.getPrototypeOf(req) === app.request, response: Object.getPrototypeOf(res) === app.response });
    res.json({ path: req.path, query: req.query, host: req.hostname, header: req.get('x-test') });
  });
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer(appClasses(app), app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('answers as Express does, with its getters and methods, on objects of the app\'s prototypes from the start', async () => {
    const answer = await fetch(`${base}/echo?a=1`, { headers: { 'X-Test': 'yes' } });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ path: '/echo', query: { a: '1' }, host: '127.0.0.1', header: 'yes' });
    expect(seen).toEqual([{ request: true, response: true }]);
    // Node's own behaviour is kept: the objects are still its request and response.
    const classes = appClasses(app);
    expect(classes.IncomingMessage.prototype).toBe(app.request);
    expect(classes.ServerResponse.prototype).toBe(app.response);
  });

  it('without them, Express changes each object\'s prototype as it takes it (what the classes spare)', async () => {
    const before: boolean[] = [];
    const plain = createServer((req, res) => {
      before.push(Object.getPrototypeOf(req) === app.request, Object.getPrototypeOf(res) === app.response);
      app(req, res);
    });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    try {
      const answer = await fetch(`http://127.0.0.1:${(plain.address() as AddressInfo).port}/echo`);
      expect(answer.status).toBe(200);
      expect(before).toEqual([false, false]);
      // Express gave them its prototypes as it took them.
      expect(seen.at(-1)).toEqual({ request: true, response: true });
    } finally {
      plain.closeAllConnections();
      await new Promise<void>((resolve) => plain.close(() => resolve()));
    }
  });
});
