import { describe, expect, it } from '@jest/globals';
import express, { type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import type { Principal } from '../../src/auth/principal.js';
import { declaredRoutes, describePermission, renderRoutePermissions } from '../../src/cli/abilities.js';
import { ApiError } from '../../src/errors.js';
import { defineRoute, fullProfile, RouteRegistry, type RouteDefinition, type RouteLayers } from '../../src/http/route.js';

/**
 * Every route states what it requires of its caller (src/http/route.ts `permission`), and the
 * request chain asks the caller's ability before the handler runs.
 */

describe('route permissions', () => {
  it('are declared by every route of both deployments, public exactly where no token is taken', async () => {
    const routes = await declaredRoutes();
    expect(routes.length).toBeGreaterThan(50);
    const undeclared = routes.filter((route) => (route.permission as unknown) === undefined).map((route) => route.operationId);
    expect(undeclared).toEqual([]);
    const mismatched = routes.filter((route) => (route.permission === 'public') !== (route.auth === 'public')).map((route) => route.operationId);
    expect(mismatched).toEqual([]);
    // A route that does not leave the question to the chain says why.
    for (const route of routes) {
      const permission = route.permission;
      if (permission === 'public' || Array.isArray(permission)) continue;
      const why = 'record' in permission ? permission.why : (permission as { authenticated: string }).authenticated;
      expect(why.trim().length).toBeGreaterThan(10);
    }
    // The chain checks where the rules can answer from the token: the admin routes among them.
    const byId = new Map(routes.map((route) => [route.operationId, route]));
    expect(byId.get('publishOrganisationPolicy')!.permission).toEqual(['update', 'Policy']);
    expect(byId.get('createJoinKey')!.permission).toEqual(['create', 'JoinKey']);
    expect(byId.get('getLiveness')!.permission).toBe('public');
  });

  it('lists every operation with its permission for npm run abilities', async () => {
    const routes = await declaredRoutes();
    const text = renderRoutePermissions(routes);
    for (const route of routes) expect(text).toContain(`| ${route.operationId} |`);
    expect(text).toContain('| listDevices | GET | /platform/v1/devices | person, cloud-session | read Device |');
    expect(describePermission({ authenticated: 'own account' })).toBe('any accepted token: own account');
  });

  it('refuses to register a route that declares no permission, or public with a token', () => {
    const base = {
      method: 'get',
      path: '/probe',
      operationId: 'probe',
      summary: 'probe',
      tag: 'Probe',
      tenant: false,
      schemas: {},
      responses: { 200: { description: 'ok' } },
      handler: () => ({ status: 200 }),
    } as const;
    expect(() => new RouteRegistry().add({ ...base, auth: ['person'] } as unknown as RouteDefinition)).toThrow(/declares no permission/);
    expect(() => new RouteRegistry().add({ ...base, auth: ['person'], permission: 'public' } as unknown as RouteDefinition)).toThrow(/public/);
    expect(() => new RouteRegistry().add({ ...base, auth: 'public', permission: ['read', 'Policy'] } as unknown as RouteDefinition)).toThrow(/public/);
    expect(() => new RouteRegistry().add({ ...base, auth: ['person'], permission: { authenticated: ' ' } } as unknown as RouteDefinition)).toThrow(/why/);
  });

  describe('the chain', () => {
    const person = (role: 'owner' | 'admin' | 'member'): Principal =>
      Object.freeze({ kind: 'person', organisationId: 'org_probe', personId: `usr_${role}`, role, deviceId: undefined, scopes: Object.freeze([]) });

    /** A registry with one route the caller must be allowed to publish policy on, its handler counting calls. */
    function appCalledBy(principal: Principal) {
      const calls: string[] = [];
      const registry = new RouteRegistry();
      registry.add(
        defineRoute({
          method: 'post',
          path: '/probe/{name}',
          operationId: 'probePublish',
          summary: 'probe',
          tag: 'Probe',
          tenant: false,
          auth: ['person'],
          permission: ['update', 'Policy'],
          forbids: true,
          schemas: { params: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 5 } }, additionalProperties: false } },
          responses: { 204: { description: 'done' } },
          handler: ({ principal, params }) => {
            calls.push(`${principal.personId} ${params.name}`);
            return { status: 204 };
          },
        }),
      );
      const layers: RouteLayers = {
        rateLimit: () => (_req, _res, next) => next(),
        bodyParsers: () => [express.json()],
        defaultBodyLimitBytes: 1024,
        defaultJsonLimits: { maxDepth: 8, maxKeys: 100, maxStringLength: 100 },
        tenancy: (_req, _res, next) => next(),
        authenticate: () => (req, _res, next) => {
          req.context.principal = principal;
          next();
        },
      };
      const app = express();
      app.use((req: Request, _res: Response, next: NextFunction) => {
        req.context = { requestId: 'probe', origin: undefined, tenant: undefined, principal: undefined, startedAt: 0 };
        next();
      });
      const router = express.Router();
      app.use(registry.mount(router, layers, fullProfile('self-hosted', ['person'])));
      app.use(router);
      app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
        if (error instanceof ApiError) res.status(error.status).json({ error: error.code });
        else res.status(500).json({ error: 'internal_error' });
      });
      return { app, calls };
    }

    it('refuses a caller whose ability lacks the permission before the handler runs', async () => {
      const { app, calls } = appCalledBy(person('member'));
      const answer = await request(app).post('/probe/x');
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual({ error: 'forbidden' });
      expect(calls).toEqual([]);
    });

    it('lets a caller with the permission through to the handler', async () => {
      const { app, calls } = appCalledBy(person('admin'));
      const answer = await request(app).post('/probe/x');
      expect(answer.status).toBe(204);
      expect(calls).toEqual(['usr_admin x']);
    });

    it('answers a malformed request 400 whoever sends it, as before: validation comes first', async () => {
      const { app, calls } = appCalledBy(person('member'));
      const answer = await request(app).post('/probe/toolong');
      expect(answer.status).toBe(400);
      expect(calls).toEqual([]);
    });
  });
});
