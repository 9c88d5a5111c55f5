import type { Principal } from '../../auth/principal.js';
import { requestOrigin } from '../../http/origin.js';
import { DEFAULT_PAGE_SIZE, pageQuerySchema } from '../../http/pagination.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { organisationSummarySchema } from '../organisation/schemas.js';
import type { MemberView } from './ports.js';
import { invitationBodySchema, invitationListSchema, invitationPreviewSchema, invitationSchema, memberListSchema, memberRoleBodySchema, okSchema, teamNameBodySchema } from './schemas.js';
import type { TeamService, TeamSettings } from './service.js';
import type { InvitationView } from './store.js';

/** Cloud organisations (spec 4.5; Cloud only, Cloud session unless stated). */

const common = { tag: 'Cloud organisations', cloudOnly: true, tenant: false, auth: ['cloud-session'] } as const;

const caller = (principal: Principal) => ({ personId: principal.personId });

const idParam = { type: 'string', minLength: 1, maxLength: 100, description: 'Organisation id (`org_…`).' } as const;
const organisationParams = { type: 'object', required: ['id'], properties: { id: idParam }, additionalProperties: false } as const;
const memberParams = {
  type: 'object',
  required: ['id', 'userId'],
  properties: { id: idParam, userId: { type: 'string', minLength: 1, maxLength: 100, description: 'Person id (`usr_…`); your own to leave.' } },
  additionalProperties: false,
} as const;
const invitationParams = {
  type: 'object',
  required: ['id', 'invitationId'],
  properties: { id: idParam, invitationId: { type: 'string', minLength: 1, maxLength: 100, description: 'Invitation id (`inv_…`).' } },
  additionalProperties: false,
} as const;
const tokenParams = {
  type: 'object',
  required: ['token'],
  properties: { token: { type: 'string', minLength: 1, maxLength: 200, description: 'The token of the invitation link (`platform_iv_…`).' } },
  additionalProperties: false,
} as const;

const personalText = (what: string) => `\`invalid_request\` (naming the field), \`json_too_complex\`, or \`personal_organisation\`: ${what}.`;

function memberBody(member: MemberView) {
  return { userId: member.personId, name: member.name, email: member.email, role: member.role, joinedAt: member.joinedAt.toISOString() };
}

function invitationBody(invitation: InvitationView, link?: string) {
  return {
    id: invitation.id,
    email: invitation.email,
    role: invitation.role,
    invitedBy: invitation.invitedBy,
    invitedByName: invitation.invitedByName,
    createdAt: invitation.createdAt.toISOString(),
    expiresAt: invitation.expiresAt.toISOString(),
    ...(link !== undefined ? { link } : {}),
  };
}

/** Per-person and per-address limits of the invitation operations. */
export function teamRateLimits(config: Pick<TeamSettings, 'invitationsPerHour'>, perAddressPerMinute: number) {
  return {
    invite: { name: 'invitations-person', by: 'person', limit: config.invitationsPerHour, windowMs: 3_600_000 } satisfies RateLimitRule,
    // Many accounts behind one address share this one (checked before the session is).
    inviteFromAddress: { name: 'invitations-address', by: 'address', limit: perAddressPerMinute, windowMs: 60_000 } satisfies RateLimitRule,
    preview: { name: 'invitation-preview-address', by: 'address', limit: perAddressPerMinute, windowMs: 60_000 } satisfies RateLimitRule,
  };
}

export function teamRoutes(teams: TeamService, limits: ReturnType<typeof teamRateLimits>): RouteDefinition[] {
  return [
    defineRoute({
      ...common,
      method: 'post',
      path: '/cloud/v1/organisations',
      operationId: 'createTeam',
      permission: ['create', 'Team'],
      summary: 'Create a team',
      description: 'Any signed-in person; the caller becomes its owner. The team\'s `kind` is `team`, its `plan` the configured one (`CLOUD_TEAM_PLAN`, default `teams`); its edition is `teams`.',
      schemas: {
        body: teamNameBodySchema,
      },
      responses: {
        201: { description: 'The new team, with the caller as its owner.', schema: organisationSummarySchema },
        400: { description: '`invalid_request`: no name, or a name that is empty, too long or holds control characters (naming the field); `json_too_complex`.' },
      },
      errors: { 400: ['invalid_request'] },
      handler: async ({ body, principal }) => {
        // The chain asked the caller's ability for ['create', 'Team'] (a Cloud person) already.
        return { status: 201, body: await teams.createTeam(caller(principal), body.name), headers: { 'Cache-Control': 'no-store' } };
      },
    }),
    defineRoute({
      ...common,
      method: 'patch',
      path: '/cloud/v1/organisations/{id}',
      operationId: 'renameTeam',
      permission: { record: ['update', 'Organisation'], why: "the caller's role in the team the path names decides, not the organisation the token acts for: the teams service asks about the record with that membership (404 for a team not theirs)" },
      summary: 'Rename a team',
      description: 'Owners and admins. A personal organisation carries its person\'s name and is not renamed here (400 `personal_organisation`).',
      forbids: true,
      schemas: {
        params: organisationParams,
        body: teamNameBodySchema,
      },
      responses: {
        200: { description: 'Renamed.', schema: okSchema },
        400: { description: personalText('the organisation is a personal one') },
        403: { description: '`forbidden`: only owners and admins rename a team.' },
        404: { description: '`not_found`: no such organisation among yours.' },
      },
      errors: { 400: ['invalid_request', 'personal_organisation'], 403: ['forbidden'], 404: ['not_found'] },
      handler: async ({ params, body, principal }) => {
        await teams.rename(caller(principal), params.id, body.name);
        return { status: 200, body: { ok: true } };
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/cloud/v1/organisations/{id}/members',
      operationId: 'listMembers',
      permission: { record: ['read', 'Member'], why: "the caller's role in the team the path names decides, not the organisation the token acts for: the teams service asks about the record with that membership (404 for a team not theirs)" },
      summary: "An organisation's members",
      description: 'Any member. In the order they joined; `nextCursor` is null on the last page.',
      schemas: { params: organisationParams, query: pageQuerySchema },
      responses: {
        200: { description: 'A page of members.', schema: memberListSchema },
        400: { description: '`invalid_request`: a query parameter or the cursor is malformed.' },
        404: { description: '`not_found`: no such organisation among yours.' },
      },
      errors: { 400: ['invalid_request'], 404: ['not_found'] },
      handler: async ({ params, query, principal }) => {
        const page = await teams.members(caller(principal), params.id, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor });
        return { status: 200, body: { members: page.items.map(memberBody), nextCursor: page.nextCursor }, headers: { 'Cache-Control': 'no-store' } };
      },
    }),
    defineRoute({
      ...common,
      method: 'patch',
      path: '/cloud/v1/organisations/{id}/members/{userId}',
      operationId: 'changeMemberRole',
      permission: { record: ['update', 'Member'], why: "the caller's role in the team the path names decides, not the organisation the token acts for: the teams service asks about the record with that membership (404 for a team not theirs)" },
      summary: "Change a member's role",
      description:
        'Owners and admins; only an owner makes or unmakes an owner. A team always keeps at least one owner (409 `last_owner`). ' +
        'The change applies to the member\'s next request. Setting the role a member already has changes nothing and answers 200.',
      forbids: true,
      schemas: {
        params: memberParams,
        body: memberRoleBodySchema,
      },
      responses: {
        200: { description: 'Changed (or already so).', schema: okSchema },
        400: { description: personalText('the organisation is a personal one, whose only member is its owner') },
        403: { description: '`forbidden`: members change no roles; admins do not make, unmake or demote owners.' },
        404: { description: '`not_found`: no such organisation among yours, or no such member of it.' },
        409: { description: '`last_owner`: the change would leave the team without an owner.' },
      },
      errors: { 400: ['invalid_request', 'personal_organisation'], 403: ['forbidden'], 404: ['not_found'], 409: ['last_owner'] },
      handler: async ({ params, body, principal }) => {
        await teams.changeRole(caller(principal), params.id, params.userId, body.role);
        return { status: 200, body: { ok: true } };
      },
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/cloud/v1/organisations/{id}/members/{userId}',
      operationId: 'removeMember',
      permission: { record: ['delete', 'Member'], why: "the caller's role in the team the path names decides, not the organisation the token acts for: the teams service asks about the record with that membership (404 for a team not theirs)" },
      summary: 'Remove a member, or leave',
      description:
        'Owners and admins remove others; anyone removes themselves (leaves, with their own id); only an owner removes an owner. A team always keeps ' +
        'at least one owner (409 `last_owner`). The person\'s sessions lose the team at their next request; the devices they approved, the join keys ' +
        'they created and the invitations they sent stop working at once; they leave the team\'s projects. A personal organisation cannot be left.',
      forbids: true,
      schemas: { params: memberParams },
      responses: {
        204: { description: 'Removed.' },
        400: { description: '`personal_organisation`: a personal organisation cannot be left; `invalid_request`: a malformed request.' },
        403: { description: '`forbidden`: members remove only themselves; admins do not remove owners.' },
        404: { description: '`not_found`: no such organisation among yours, or no such member of it.' },
        409: { description: '`last_owner`: the team would be left without an owner (make someone else an owner first).' },
      },
      errors: { 400: ['invalid_request', 'personal_organisation'], 403: ['forbidden'], 404: ['not_found'], 409: ['last_owner'] },
      handler: async ({ params, principal }) => {
        await teams.removeMember(caller(principal), params.id, params.userId);
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/cloud/v1/organisations/{id}/invitations',
      operationId: 'listInvitations',
      permission: { record: ['read', 'Invitation'], why: "the caller's role in the team the path names decides, not the organisation the token acts for: the teams service asks about the record with that membership (404 for a team not theirs)" },
      summary: 'Open invitations',
      description: 'Owners and admins. Invitations not used, withdrawn or expired, oldest first, without their links.',
      forbids: true,
      schemas: { params: organisationParams, query: pageQuerySchema },
      responses: {
        200: { description: 'A page of open invitations.', schema: invitationListSchema },
        400: { description: '`invalid_request`: a query parameter or the cursor is malformed.' },
        403: { description: '`forbidden`: only owners and admins see invitations.' },
        404: { description: '`not_found`: no such organisation among yours.' },
      },
      errors: { 400: ['invalid_request'], 403: ['forbidden'], 404: ['not_found'] },
      handler: async ({ params, query, principal }) => {
        const page = await teams.openInvitations(caller(principal), params.id, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor });
        return { status: 200, body: { invitations: page.items.map((item) => invitationBody(item)), nextCursor: page.nextCursor }, headers: { 'Cache-Control': 'no-store' } };
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/cloud/v1/organisations/{id}/invitations',
      operationId: 'createInvitation',
      permission: { record: ['create', 'Invitation'], why: "the caller's role in the team the path names decides, not the organisation the token acts for: the teams service asks about the record with that membership (404 for a team not theirs)" },
      summary: 'Invite someone by email',
      description:
        'Owners and admins; only an owner invites an owner. `role` is `owner`, `admin` or `member` (default `member`). The link is mailed to the address ' +
        'and returned in this answer only (the token is kept as a hash); it works once, until `expiresAt` (seven days by default). Inviting an address ' +
        'again replaces its open invitation. An address a member of the team signs in with is refused (409 `already_member`). Addresses compare ignoring case.',
      forbids: true,
      rateLimits: [limits.inviteFromAddress, limits.invite],
      schemas: {
        params: organisationParams,
        body: invitationBodySchema,
      },
      responses: {
        201: { description: 'The invitation, with its link.', schema: invitationSchema, headers: { 'Cache-Control': { description: '`no-store`: the answer holds the link.', schema: { type: 'string' } } } },
        400: { description: personalText('the organisation is a personal one, which nobody joins') },
        403: { description: '`forbidden`: only owners and admins invite, and only an owner invites an owner.' },
        404: { description: '`not_found`: no such organisation among yours.' },
        409: { description: '`already_member`: a member of the team signs in with this address.' },
        429: { description: `\`too_many_requests\`: more invitations than \`CLOUD_INVITATIONS_PER_HOUR\` by this person in an hour, or than \`AUTH_RATE_LIMIT_PER_MINUTE\` from this network address in a minute; \`Retry-After\` says when to try again.` },
      },
      errors: { 400: ['invalid_request', 'personal_organisation'], 403: ['forbidden'], 404: ['not_found'], 409: ['already_member'], 429: ['too_many_requests'] },
      handler: async ({ params, body, principal, req }) => {
        const { invitation, link } = await teams.invite(caller(principal), params.id, { email: body.email, role: body.role ?? 'member', origin: requestOrigin(req).origin });
        return { status: 201, body: invitationBody(invitation, link), headers: { 'Cache-Control': 'no-store' } };
      },
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/cloud/v1/organisations/{id}/invitations/{invitationId}',
      operationId: 'withdrawInvitation',
      permission: { record: ['delete', 'Invitation'], why: "the caller's role in the team the path names decides, not the organisation the token acts for: the teams service asks about the record with that membership (404 for a team not theirs)" },
      summary: 'Withdraw an invitation',
      description: 'Owners and admins; only an owner withdraws an invitation to become an owner. Its link stops working at once. Only open invitations can be withdrawn.',
      forbids: true,
      schemas: { params: invitationParams },
      responses: {
        204: { description: 'Withdrawn.' },
        403: { description: '`forbidden`: only owners and admins withdraw invitations, and only an owner one to become an owner.' },
        404: { description: '`not_found`: no such organisation among yours, or no open invitation with this id in it (used, withdrawn or expired).' },
      },
      errors: { 403: ['forbidden'], 404: ['not_found'] },
      handler: async ({ params, principal }) => {
        await teams.withdraw(caller(principal), params.id, params.invitationId);
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      auth: 'public',
      method: 'get',
      path: '/cloud/v1/invitations/{token}',
      operationId: 'previewInvitation',
      permission: 'public',
      summary: 'What an invitation link invites to (public)',
      description:
        'Anyone holding the link: the team\'s name, the inviter\'s name, the address, the role and when the link stops working, no more. ' +
        'A used, withdrawn or expired invitation, or one whose inviter may no longer invite, is 404.',
      rateLimits: [limits.preview],
      schemas: { params: tokenParams },
      responses: {
        200: { description: 'The invitation.', schema: invitationPreviewSchema, headers: { 'Cache-Control': { description: '`no-store`.', schema: { type: 'string' } } } },
        404: { description: '`not_found`: no open invitation has this token.' },
        429: { description: '`too_many_requests`: too many look-ups from this network address; `Retry-After` says when to try again.' },
      },
      errors: { 404: ['not_found'], 429: ['too_many_requests'] },
      handler: async ({ params }) => {
        const preview = await teams.preview(params.token);
        return {
          status: 200,
          body: { ...preview, expiresAt: preview.expiresAt.toISOString() },
          headers: { 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' },
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/cloud/v1/invitations/{token}/accept',
      operationId: 'acceptInvitation',
      permission: { record: ['accept', 'Invitation'], why: 'the addresses the person\'s sign-in methods vouch for decide (policies/invitation.ts): the teams service reads them and asks about the invitation (403 email_mismatch)' },
      summary: 'Accept an invitation',
      description:
        'A signed-in person one of whose sign-in methods vouches for (verified) the address the invitation was sent to (otherwise 403 `email_mismatch`: ' +
        'sign in with that address, or link it to the account first). Works once. Someone already a member is refused (409 `already_member`; the invitation ' +
        'stays open). Answers the team as the accepter now sees it.',
      schemas: { params: tokenParams },
      responses: {
        200: { description: 'Joined: the team, with the accepter\'s role.', schema: organisationSummarySchema },
        403: { description: '`email_mismatch`: none of your sign-in methods vouches for the address the invitation was sent to.' },
        404: { description: '`not_found`: no open invitation has this token (unknown, used, withdrawn, expired, or its inviter may no longer invite).' },
        409: { description: '`already_member`: you are a member of the team already.' },
      },
      errors: { 403: ['email_mismatch'], 404: ['not_found'], 409: ['already_member'] },
      handler: async ({ params, principal }) => ({ status: 200, body: await teams.accept(caller(principal), params.token), headers: { 'Cache-Control': 'no-store' } }),
    }),
  ];
}
