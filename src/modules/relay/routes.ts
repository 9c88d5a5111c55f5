import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { RequestListener } from 'node:http';
import { parseAuthorization } from '../../auth/middleware.js';
import { ApiError } from '../../errors.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { named } from '../../http/schema.js';
import type { RelayHub } from './channel.js';
import { JWKS_MAX_AGE_SECONDS, type SigningKeys } from './signing-keys.js';

/**
 * WebSocket upgrades go through the same Express app as every request, so the control channel
 * is authenticated exactly like any device request (rate limit, tenancy, Bearer or DPoP with a
 * proof of `GET` and the http(s) URL, the `relay:connect` scope) before the upgrade completes.
 * A refusal is an ordinary HTTP answer (401, 403, 429…) written on the socket, which then
 * closes; only the connect route's handler completes the handshake.
 */
export class RelayUpgrades {
  private readonly waiting = new WeakMap<IncomingMessage, { socket: Duplex; head: Buffer }>();
  private app: RequestListener | undefined;

  attach(app: RequestListener): void {
    this.app = app;
  }

  /** The `upgrade` listener of the HTTP server. */
  readonly handle = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    if (!this.app) {
      socket.destroy();
      return;
    }
    this.waiting.set(req, { socket, head });
    const res = new ServerResponse(req);
    res.assignSocket(socket as Socket);
    res.shouldKeepAlive = false;
    res.on('finish', () => {
      // An answer was written instead of an upgrade: close the connection once it is sent.
      res.detachSocket(socket as Socket);
      socket.end();
      setTimeout(() => socket.destroy(), 1_000).unref();
    });
    this.app(req, res);
  };

  /** The socket of an upgrade request, taken once by the handler that completes it. */
  take(req: IncomingMessage, res: ServerResponse): { socket: Duplex; head: Buffer } | undefined {
    const found = this.waiting.get(req);
    if (!found) return undefined;
    this.waiting.delete(req);
    res.detachSocket(found.socket as Socket);
    return found;
  }
}

const jwksSchema = named('JsonWebKeySet', {
  type: 'object',
  description: "The service's public signing keys (RFC 7517), ES256.",
  required: ['keys'],
  properties: {
    keys: {
      type: 'array',
      description: 'The current key, the next one (published before it signs) and retired ones whose assertions may still be valid.',
      items: {
        type: 'object',
        description: 'A public P-256 key.',
        required: ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'],
        properties: {
          kty: { type: 'string', const: 'EC', description: 'Key type.' },
          crv: { type: 'string', const: 'P-256', description: 'Curve.' },
          x: { type: 'string', description: 'Public key x coordinate.' },
          y: { type: 'string', description: 'Public key y coordinate.' },
          kid: { type: 'string', description: 'Key id, as in the `kid` of what it signs.' },
          alg: { type: 'string', const: 'ES256', description: 'Algorithm.' },
          use: { type: 'string', const: 'sig', description: 'Signatures.' },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
  examples: [
    {
      keys: [
        {
          kty: 'EC',
          crv: 'P-256',
          x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
          y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
          kid: 'sk_8m3n6b9v2c5x7z1l',
          alg: 'ES256',
          use: 'sig',
        },
      ],
    },
  ],
} as const);

export function relayRoutes(deps: { hub: RelayHub; upgrades: RelayUpgrades; keys: SigningKeys }): RouteDefinition[] {
  return [
    defineRoute({
      method: 'get',
      path: '/relay/v1/connect',
      operationId: 'connectControlChannel',
      permission: { authenticated: 'a device opens its own control channel (the relay:connect scope); no rule of policies/ applies' },
      summary: 'The workbench control channel (WebSocket)',
      description:
        'A WebSocket upgrade (RFC 6455), authenticated like any device request before the handshake completes: `Bearer`, or `DPoP` with a proof whose `htm` is `GET` and `htu` the http(s) form of this URL; scope `relay:connect`. Refusals are ordinary HTTP answers. ' +
        'Frames are JSON-RPC 2.0 text: the service calls `cloudMcp.call` with `{runId, assertion, message}` and the workbench answers with the MCP response message as `result` (null for a notification) or a JSON-RPC `error`. ' +
        'The service also sends two notifications (no `id`, no answer; docs/api/policy-push.md): `hello`, always the first frame, `{"policy":{"organisation":{"number","revision"},"projects":[{"projectId","number","revision"}]}}` (the current publish number, null when none, and effective revision, the ETag of `GET /policy/v1`, of each policy scope that applies to the device; `policy` null when it could not be read in time), and `policy.changed`, `{"scope":"organisation"|"project","projectId"?,"number","revision"}`, after a publish or restore of such a scope committed, at most once per revision per connection. Neither carries policy text: poll `GET /policy/v1`, which stays the source of truth. ' +
        'The service pings every RELAY_HEARTBEAT_MS and drops a socket that missed a pong. Close codes: 1001 service shutting down, 1003 binary frame, 1009 frame over 8 MB, 4000 replaced by a newer connection of the device, 4001 the access token expired or the device was revoked. A request that is not an upgrade gets 426.',
      tag: 'Devices',
      extension: true,
      tenant: true,
      auth: ['device'],
      deviceScope: 'relay:connect',
      rateLimits: [{ name: 'relay-connect', by: 'person', limit: 60, windowMs: 60_000 }],
      schemas: {},
      responses: {
        101: { description: 'Switching Protocols: the control channel is open.' },
        426: { description: '`upgrade_required`: not a WebSocket upgrade request (`Upgrade: websocket`).' },
      },
      errors: { 426: ['upgrade_required'] },
      handler: ({ req, res, principal }) => {
        const upgrade = deps.upgrades.take(req, res);
        if (!upgrade) {
          throw new ApiError(426, 'upgrade_required', 'this is a WebSocket endpoint: send an upgrade request', { headers: { Upgrade: 'websocket', Connection: 'Upgrade' } });
        }
        const credential = parseAuthorization(req.headers.authorization);
        deps.hub.accept(req, upgrade.socket, upgrade.head, {
          deviceId: principal.deviceId!,
          organisationId: principal.organisationId,
          personId: principal.personId,
          deviceKind: principal.deviceKind ?? 'node',
          accessToken: credential!.token,
        });
        return undefined;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/jwks.json',
      operationId: 'getSigningKeys',
      permission: 'public',
      summary: "The service's public signing keys",
      description:
        'The keys that sign the assertions of relayed calls (ES256, JWKS). Keys rotate: the next key is published ten minutes before it signs, and an old one stays until its last assertion has expired. Verify with any JWKS client that refetches on an unknown `kid`.',
      tag: 'Discovery',
      extension: true,
      tenant: false,
      auth: 'public',
      schemas: {},
      responses: { 200: { description: 'The key set.', schema: jwksSchema, headers: { 'Cache-Control': { description: `\`public, max-age=${JWKS_MAX_AGE_SECONDS}\`.`, schema: { type: 'string' } } } } },
      handler: async () => ({ status: 200, body: await deps.keys.jwks(), headers: { 'Cache-Control': `public, max-age=${JWKS_MAX_AGE_SECONDS}` } }),
    }),
  ];
}
