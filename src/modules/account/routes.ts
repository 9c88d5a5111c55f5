import { EXAMPLE } from '../../http/examples.js';
import type { Principal } from '../../auth/principal.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { named, timestampSchema } from '../../http/schema.js';
import { organisationSummarySchema } from '../organisation/schemas.js';
import type { SignInAccounts } from '../signin/accounts.js';
import type { AccountService } from './service.js';

/** The signed-in person's account (spec 4.4; Cloud only, Cloud session). */

const EXAMPLE_METHOD = {
  id: 'sim_4r7t1y5u9i3o6p2a',
  provider: 'email',
  email: EXAMPLE.email,
  emailVerified: true,
  createdAt: '2026-11-02T09:12:40.551Z',
  lastUsedAt: '2026-11-03T08:02:17.930Z',
};

export const signInMethodSchema = named('SignInMethod', {
  type: 'object',
  description: 'A way the person signs in (spec 2.6).',
  required: ['id', 'provider', 'email', 'emailVerified', 'createdAt', 'lastUsedAt'],
  properties: {
    id: { type: 'string', description: 'Sign-in method id (`sim_…`), the `methodId` of the removal path.' },
    provider: { type: 'string', enum: ['google', 'microsoft', 'github', 'facebook', 'email'], description: 'The provider, or `email` for emailed codes.' },
    email: { type: ['string', 'null'], description: 'The address the provider gave (null when it gave none).' },
    emailVerified: { type: 'boolean', description: 'Whether the provider vouched for the address (always true for `email`).' },
    createdAt: { ...timestampSchema, description: 'When the method was added.' },
    lastUsedAt: { ...timestampSchema, description: 'When it last signed the person in.' },
  },
  additionalProperties: false,
  examples: [EXAMPLE_METHOD],
} as const);

export const personSchema = named('Person', {
  type: 'object',
  description: 'The signed-in person (spec 2.5).',
  required: ['id', 'name', 'email', 'organisations', 'signInMethods'],
  properties: {
    id: { type: 'string', description: 'Person id (`usr_…`).' },
    name: { type: 'string', description: 'Display name, 1 to 100 characters.' },
    email: { type: ['string', 'null'], description: 'The account\'s address: the first verified address a sign-in method brought (null when none has).' },
    organisations: { type: 'array', items: organisationSummarySchema, description: 'Personal organisation first, then teams by name.' },
    signInMethods: { type: 'array', items: signInMethodSchema, description: 'Oldest first.' },
  },
  additionalProperties: false,
  examples: [
    {
      id: EXAMPLE.personId,
      name: 'Ana Lima',
      email: EXAMPLE.email,
      organisations: [
        { id: EXAMPLE.organisationId, name: 'Ana Lima', kind: 'personal', plan: 'free', role: 'owner' },
        { id: EXAMPLE.teamId, name: 'Checkout team', kind: 'team', plan: 'teams', role: 'owner' },
      ],
      signInMethods: [EXAMPLE_METHOD],
    },
  ],
} as const);

const ok = named('Ok', {
  type: 'object',
  description: 'The change was made.',
  required: ['ok'],
  properties: { ok: { type: 'boolean', description: 'Always `true`.' } },
  additionalProperties: false,
  examples: [{ ok: true }],
} as const);

const common = { tag: 'Cloud account', cloudOnly: true, tenant: false, auth: ['cloud-session'] } as const;

const me = (principal: Principal) => principal.personId;

export function accountRoutes(accounts: AccountService, signIn: Pick<SignInAccounts, 'issueLinkTicket'>): RouteDefinition[] {
  return [
    defineRoute({
      ...common,
      method: 'get',
      path: '/cloud/v1/me',
      operationId: 'getMe',
      permission: { authenticated: "the caller's own account: a Cloud session reaches only its own person" },
      summary: 'The signed-in person',
      description: 'Who the Cloud session belongs to: name, address, every organisation with their role (personal first), and every sign-in method.',
      schemas: {},
      responses: { 200: { description: 'The person, their organisations and sign-in methods.', schema: personSchema } },
      handler: async ({ principal }) => ({ status: 200, body: await accounts.me(me(principal)), headers: { 'Cache-Control': 'no-store' } }),
    }),
    defineRoute({
      ...common,
      method: 'patch',
      path: '/cloud/v1/me',
      operationId: 'updateMe',
      permission: { authenticated: "the caller's own account: a Cloud session reaches only its own person" },
      summary: 'Rename the signed-in person',
      description: "Changes the person's display name (shown to the teams they belong to).",
      schemas: {
        body: {
          type: 'object',
          required: ['name'],
          properties: { name: { type: 'string', minLength: 1, maxLength: 100, description: '1 to 100 characters (not only spaces; trimmed).' } },
          additionalProperties: false,
          examples: [{ name: 'Ana Lima' }],
        },
      },
      responses: { 200: { description: 'Renamed.', schema: ok } },
      handler: async ({ body, principal }) => {
        await accounts.rename(me(principal), body.name, principal.organisationId);
        return { status: 200, body: { ok: true } };
      },
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/cloud/v1/me',
      operationId: 'deleteMe',
      permission: { authenticated: "the caller's own account: a Cloud session reaches only its own person" },
      summary: 'Delete the account',
      description:
        'Removes the person, every sign-in method and session, and every organisation only they belong to with all its contents; they leave every ' +
        'other team, and their devices lose access at once. Cannot be undone. Refused with 409 `sole_owner` (listing the teams in `organisations`) ' +
        'while the person is the only owner of a team that has other people.',
      schemas: {
        body: {
          type: 'object',
          required: ['confirm'],
          properties: { confirm: { type: 'string', maxLength: 320, description: "The account's email address, or the word `delete` when it has none." } },
          additionalProperties: false,
          examples: [{ confirm: EXAMPLE.email }],
        },
      },
      responses: {
        204: { description: 'Deleted.' },
        400: { description: '`confirm` does not match, or the body is malformed.' },
        409: {
          description: 'The only owner of teams with other people.',
          schema: {
            type: 'object',
            description: 'Error body with the teams (spec 2.1).',
            required: ['error', 'organisations'],
            properties: {
              error: { type: 'string', enum: ['sole_owner'], description: 'Error code.' },
              message: { type: 'string', description: 'Plain-words explanation.' },
              organisations: { type: 'array', items: { type: 'string', description: 'Organisation id.' }, description: 'The teams, by id.' },
            },
            additionalProperties: false,
          },
        },
      },
      errors: { 400: ['confirm'], 409: ['sole_owner'] },
      handler: async ({ body, principal }) => {
        await accounts.delete(me(principal), body.confirm, principal.organisationId);
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/cloud/v1/me/sign-in-methods/link',
      operationId: 'createLinkTicket',
      permission: { authenticated: "the caller's own account: a Cloud session reaches only its own person" },
      summary: 'A ticket to add a sign-in method',
      description:
        'Pass the ticket as `link` to `GET /auth/v1/start` or `POST /auth/v1/email/start`. The flow ends with a one-time code that adds the provider ' +
        'account or address to this person only when this session exchanges it at `POST /auth/v1/token` with its access token (409 / ' +
        '`error=already_linked` when it signs in to another account). Valid five minutes, single use (it starts one flow), bound to this person and session.',
      schemas: {},
      responses: {
        200: {
          description: 'The ticket.',
          schema: {
            type: 'object',
            description: 'A link ticket.',
            required: ['ticket', 'expiresIn'],
            properties: {
              ticket: { type: 'string', description: 'The ticket (`platform_lt_…`).' },
              expiresIn: { type: 'integer', description: 'Seconds it stays valid (300).' },
            },
            additionalProperties: false,
            examples: [{ ticket: 'platform_lt_Rt7yU1iO5pA9sD3fG8hJ2kL6zX0cV4bN8mQ2wE6rT0y', expiresIn: 300 }],
          },
        },
      },
      handler: async ({ principal }) => ({ status: 200, body: await signIn.issueLinkTicket(me(principal), principal.sessionId!), headers: { 'Cache-Control': 'no-store' } }),
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/cloud/v1/me/sign-in-methods/{methodId}',
      operationId: 'removeSignInMethod',
      permission: { authenticated: "the caller's own account: a Cloud session reaches only its own person" },
      summary: 'Remove a sign-in method',
      description: 'Sessions the method signed in end with it (the caller\'s own session stays). The last method cannot be removed.',
      schemas: {
        params: {
          type: 'object',
          required: ['methodId'],
          properties: { methodId: { type: 'string', maxLength: 100, description: 'The method\'s id from `GET /cloud/v1/me`.' } },
          additionalProperties: false,
        },
      },
      responses: {
        204: { description: 'Removed.' },
        404: { description: 'No sign-in method of the caller has this id.' },
        409: { description: 'The only way to sign in.' },
      },
      errors: { 404: ['not_found'], 409: ['last_sign_in_method'] },
      handler: async ({ params, principal }) => {
        await accounts.removeMethod(me(principal), params.methodId, principal.sessionId, principal.organisationId);
        return { status: 204 };
      },
    }),
  ];
}
