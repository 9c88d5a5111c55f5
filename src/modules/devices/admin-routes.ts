import { EXAMPLE } from '../../http/examples.js';
import { abilityOf, authorize, type Action } from '../../../policies/index.js';
import { actorOf, audit } from '../../audit.js';
import type { Principal } from '../../auth/principal.js';
import { notFound } from '../../errors.js';
import { decodeCursor, encodeCursor, nextCursorSchema } from '../../http/pagination.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { named, timestampSchema } from '../../http/schema.js';
import { timestamp } from '../../util/clock.js';
import {
  JOIN_KEY_DEFAULT_TTL_SECONDS,
  JOIN_KEY_MAX_TTL_SECONDS,
  JOIN_KEY_MIN_TTL_SECONDS,
  type JoinKeyService,
} from './join-keys.js';
import { pageOf, type DeviceStore } from './store.js';
import { deviceBody, joinKeyBody } from './views.js';
import type { DeviceTokenService } from './tokens.js';

/**
 * Extensions for owners and admins: join keys (create, list, revoke) and the organisation's
 * devices (list, revoke). A member is refused with 403; anything of another organisation is 404.
 */

// Lists ----------------------------------------------------------------------------------------

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 200;

const pageQuerySchema = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, description: `Items per page (default ${DEFAULT_PAGE_SIZE}).` },
    cursor: { type: 'string', minLength: 1, maxLength: 200, description: 'The `nextCursor` of the previous page.' },
  },
  additionalProperties: false,
} as const;

// Authorization --------------------------------------------------------------------------------

/** Refuses (403) unless the caller may `action` on this record (the chain asked about the type already). */
function allow(principal: Principal, action: Action, type: 'JoinKey' | 'Device', record: { organisationId: string }) {
  const ability = abilityOf(principal);
  authorize(ability, action, type, record);
}

const EXAMPLE_JOIN_KEY = { id: EXAMPLE.joinKeyId, description: 'Build runners', createdBy: { id: EXAMPLE.personId, name: 'Ana Lima' }, createdAt: '2026-11-02T11:05:00.000Z', expiresAt: '2026-11-09T11:05:00.000Z', lastUsedAt: null, revokedAt: null, useCount: 0, reusable: true, state: 'active' };
const EXAMPLE_DEVICE = {
  id: EXAMPLE.deviceId,
  name: "Ana's laptop",
  kind: 'workbench',
  workspaceId: EXAMPLE.workspaceId,
  nodeId: null,
  approver: { id: EXAMPLE.personId, name: 'Ana Lima' },
  enrolledVia: 'device_code',
  joinKeyId: null,
  createdAt: '2026-11-02T09:40:12.004Z',
  lastSeenAt: '2026-11-03T10:15:30.000Z',
  keyBound: true,
};

const personSchema = (description: string) =>
  ({
    type: 'object',
    description,
    required: ['id', 'name'],
    properties: {
      id: { type: 'string', description: 'Person id (`usr_…`).' },
      name: { type: 'string', description: "The person's name (empty when the person no longer exists)." },
    },
    additionalProperties: false,
  }) as const;

// Join keys ------------------------------------------------------------------------------------

const joinKeySchema = named('JoinKey', {
  type: 'object',
  description: 'Extension: a join key, without its value (shown once, when it is created).',
  required: ['id', 'description', 'createdBy', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt', 'useCount', 'reusable', 'state'],
  properties: {
    id: { type: 'string', description: 'Join key id (`jk_…`); not the key.' },
    description: { type: 'string', description: 'What the key is for, as its creator wrote it.' },
    createdBy: personSchema('The owner or admin who created the key; recorded as the approver of every node it enrols.'),
    createdAt: { ...timestampSchema, description: 'When the key was created.' },
    expiresAt: { ...timestampSchema, description: 'When the key stops working.' },
    lastUsedAt: { type: ['string', 'null'], format: 'date-time', description: 'When a node last joined with the key; null if none has.' },
    revokedAt: { type: ['string', 'null'], format: 'date-time', description: 'When the key was revoked; null if it was not.' },
    useCount: { type: 'integer', minimum: 0, description: 'How many nodes joined with the key.' },
    reusable: { type: 'boolean', description: 'Whether the key enrols any number of nodes (otherwise one).' },
    state: {
      type: 'string',
      enum: ['active', 'used', 'expired', 'revoked'],
      description: '`active` (a node may join with it), `used` (single-use and used), `expired` or `revoked`.',
    },
  },
  additionalProperties: false,
  examples: [EXAMPLE_JOIN_KEY],
} as const);

const createdJoinKeySchema = named('CreatedJoinKey', {
  type: 'object',
  description: 'Extension: a new join key, with its value. This is the only time the value is shown: it is stored as a hash.',
  required: ['key', 'joinKey'],
  properties: {
    key: {
      type: 'string',
      pattern: '^platform_jk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$',
      description: 'The join key (`platform_jk_…`) to give the node; keep it secret.',
    },
    joinKey: joinKeySchema,
  },
  additionalProperties: false,
  examples: [{ key: EXAMPLE.joinKey, joinKey: EXAMPLE_JOIN_KEY }],
} as const);

const createJoinKeySchema = {
  type: 'object',
  description: 'A new join key.',
  required: ['description'],
  properties: {
    description: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\S', description: 'What the key is for (shown in the list).' },
    expiresInSeconds: {
      type: 'integer',
      minimum: JOIN_KEY_MIN_TTL_SECONDS,
      maximum: JOIN_KEY_MAX_TTL_SECONDS,
      description: `Lifetime in seconds: ${JOIN_KEY_MIN_TTL_SECONDS} to ${JOIN_KEY_MAX_TTL_SECONDS} (90 days); default ${JOIN_KEY_DEFAULT_TTL_SECONDS} (24 hours).`,
    },
    reusable: { type: 'boolean', description: 'Enrol any number of nodes until expiry or revocation; default false (one node).' },
  },
  additionalProperties: false,
  examples: [{ description: 'Build runners', expiresInSeconds: 604800, reusable: true }],
} as const;

const joinKeyParamsSchema = {
  type: 'object',
  required: ['joinKeyId'],
  properties: { joinKeyId: { type: 'string', minLength: 1, maxLength: 40, description: 'Join key id (`jk_…`).' } },
} as const;


// Devices --------------------------------------------------------------------------------------

const adminDeviceSchema = named('AdminDevice', {
  type: 'object',
  description: "Extension: an enrolled device of the organisation, as owners and admins see it.",
  required: ['id', 'name', 'kind', 'workspaceId', 'nodeId', 'approver', 'enrolledVia', 'joinKeyId', 'createdAt', 'lastSeenAt', 'keyBound'],
  properties: {
    id: { type: 'string', description: 'Device id (`dev_…`).' },
    name: { type: 'string', description: 'The device name.' },
    kind: { type: 'string', enum: ['workbench', 'node'], description: 'A workbench or a node.' },
    workspaceId: { type: ['string', 'null'], description: 'The workspace a workbench named when it asked to enrol; null for a node.' },
    nodeId: { type: ['string', 'null'], description: "A node's own id from its manifest; null for a workbench." },
    approver: personSchema('The person who approved the device, or who created the join key it enrolled with.'),
    enrolledVia: { type: 'string', enum: ['device_code', 'join_key'], description: 'How the device enrolled.' },
    joinKeyId: { type: ['string', 'null'], description: 'The join key it enrolled with; null for the device-code flow.' },
    createdAt: { ...timestampSchema, description: 'When the device enrolled.' },
    lastSeenAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'When the device last used an access token (written at most once a minute); null if never.',
    },
    keyBound: { type: 'boolean', description: 'Whether its tokens are bound to a key it holds (DPoP).' },
  },
  additionalProperties: false,
  examples: [EXAMPLE_DEVICE],
} as const);

const deviceParamsSchema = {
  type: 'object',
  required: ['deviceId'],
  properties: { deviceId: { type: 'string', minLength: 1, maxLength: 40, description: 'Device id (`dev_…`).' } },
} as const;


// Routes ---------------------------------------------------------------------------------------

export interface DeviceAdminRouteOptions {
  joinKeys: JoinKeyService;
  devices: DeviceStore;
  tokens: DeviceTokenService;
}

const ADMIN_ROUTE = {
  tag: 'Devices',
  extension: true,
  tenant: true,
  auth: ['person', 'cloud-session'],
  forbids: true,
} as const;

export function deviceAdminRoutes({ joinKeys, devices, tokens }: DeviceAdminRouteOptions): RouteDefinition[] {
  return [
    defineRoute({
      ...ADMIN_ROUTE,
      method: 'post',
      path: '/platform/v1/join-keys',
      operationId: 'createJoinKey',
      permission: ['create', 'JoinKey'],
      summary: 'Create a join key (owners and admins)',
      description:
        'A key enrols nodes at `POST /relay/v1/device/join` with no approval step; the creator is recorded as their approver, ' +
        'and the key stops working if the creator is no longer an owner or admin. The answer is the only place the key appears.',
      schemas: { body: createJoinKeySchema },
      responses: { 201: { description: 'The key, shown this once.', schema: createdJoinKeySchema, headers: { 'Cache-Control': { description: '`no-store`: the answer holds a secret.', schema: { type: 'string' } } } } },
      handler: async ({ body, principal, tenant, req }) => {
        const { key, view } = await joinKeys.create({
          organisationId: tenant!.id,
          createdBy: principal.personId,
          description: body.description.trim(),
          expiresInSeconds: body.expiresInSeconds ?? JOIN_KEY_DEFAULT_TTL_SECONDS,
          reusable: body.reusable ?? false,
        }, actorOf(principal));
        audit(req.log, {
          action: 'join_key.created',
          organisationId: tenant!.id,
          actor: actorOf(principal),
          target: { joinKeyId: view.record.id, reusable: view.record.reusable, expiresAt: timestamp(view.record.expiresAt) },
        });
        return { status: 201, headers: { 'Cache-Control': 'no-store' }, body: { key, joinKey: joinKeyBody(view) } };
      },
    }),

    defineRoute({
      ...ADMIN_ROUTE,
      method: 'get',
      path: '/platform/v1/join-keys',
      operationId: 'listJoinKeys',
      permission: ['read', 'JoinKey'],
      summary: "The organisation's join keys, newest first (owners and admins)",
      description: 'Every key, in every state; never a key\'s value.',
      schemas: { query: pageQuerySchema },
      responses: {
        200: {
          description: 'A page of join keys.',
          schema: {
            type: 'object',
            description: 'A page of join keys.',
            required: ['joinKeys', 'nextCursor'],
            properties: { joinKeys: { type: 'array', items: joinKeySchema, description: 'Join keys, newest first.' }, nextCursor: nextCursorSchema },
            additionalProperties: false,
            examples: [{ joinKeys: [EXAMPLE_JOIN_KEY], nextCursor: null }],
          },
        },
      },
      handler: async ({ query, tenant }) => {
        const page = await joinKeys.list(tenant!.id, query.limit ?? DEFAULT_PAGE_SIZE, decodeCursor(query.cursor));
        return {
          status: 200,
          body: { joinKeys: page.items.map(joinKeyBody), nextCursor: page.more ? encodeCursor(page.more) : null },
        };
      },
    }),

    defineRoute({
      ...ADMIN_ROUTE,
      method: 'delete',
      path: '/platform/v1/join-keys/{joinKeyId}',
      operationId: 'revokeJoinKey',
      permission: ['delete', 'JoinKey'],
      summary: 'Revoke a join key (owners and admins)',
      description: 'The key stops working at once; revoking twice is harmless. Nodes it already enrolled keep working: revoke those at `DELETE /platform/v1/devices/{deviceId}`.',
      schemas: { params: joinKeyParamsSchema },
      responses: { 204: { description: 'Revoked.' } },
      errors: { 404: ['not_found'] },
      handler: async ({ params, principal, tenant, req }) => {
        // The chain asked about the role first (permission), so a member learns nothing of which keys exist.
        const record = await joinKeys.find(tenant!.id, params.joinKeyId);
        allow(principal, 'delete', 'JoinKey', record);
        await joinKeys.revoke(record, actorOf(principal));
        audit(req.log, { action: 'join_key.revoked', organisationId: tenant!.id, actor: actorOf(principal), target: { joinKeyId: record.id } });
        return { status: 204 };
      },
    }),

    defineRoute({
      ...ADMIN_ROUTE,
      method: 'get',
      path: '/platform/v1/devices',
      operationId: 'listDevices',
      permission: ['read', 'Device'],
      summary: "The organisation's enrolled devices, newest first (owners and admins)",
      description: 'Devices still enrolled; a revoked device is no longer listed.',
      schemas: { query: pageQuerySchema },
      responses: {
        200: {
          description: 'A page of devices.',
          schema: {
            type: 'object',
            description: 'A page of devices.',
            required: ['devices', 'nextCursor'],
            properties: { devices: { type: 'array', items: adminDeviceSchema, description: 'Devices, newest first.' }, nextCursor: nextCursorSchema },
            additionalProperties: false,
            examples: [{ devices: [EXAMPLE_DEVICE], nextCursor: null }],
          },
        },
      },
      handler: async ({ query, tenant }) => {
        const limit = query.limit ?? DEFAULT_PAGE_SIZE;
        const page = pageOf(await devices.listDevicesPage(tenant!.id, limit, decodeCursor(query.cursor)), limit);
        const people = await devices.people(page.items.map((device) => device.personId));
        return {
          status: 200,
          body: { devices: page.items.map((device) => deviceBody(device, people)), nextCursor: page.more ? encodeCursor(page.more) : null },
        };
      },
    }),

    defineRoute({
      ...ADMIN_ROUTE,
      method: 'delete',
      path: '/platform/v1/devices/{deviceId}',
      operationId: 'revokeDevice',
      permission: ['delete', 'Device'],
      summary: 'Revoke a device (owners and admins)',
      description: 'Every token of the device stops working at once; the device must enrol again. Revoking twice is harmless.',
      schemas: { params: deviceParamsSchema },
      responses: { 204: { description: 'Revoked.' } },
      errors: { 404: ['not_found'] },
      handler: async ({ params, principal, tenant, req }) => {
        const device = await devices.findDevice(params.deviceId);
        if (!device || device.organisationId !== tenant!.id) throw notFound('no device has this id');
        allow(principal, 'delete', 'Device', device);
        await tokens.revokeByAdministrator(device, actorOf(principal));
        audit(req.log, { action: 'device.revoked', organisationId: tenant!.id, actor: actorOf(principal), target: { deviceId: device.id, kind: device.kind } });
        return { status: 204 };
      },
    }),
  ];
}
