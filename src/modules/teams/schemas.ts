import { EXAMPLE } from '../../http/examples.js';
import { named, timestampSchema } from '../../http/schema.js';
import { nextCursorSchema } from '../../http/pagination.js';

/** Cloud organisations (spec 2.7-2.9, 4.5): request and answer schemas. */

const EXAMPLE_INVITATION = {
  id: EXAMPLE.invitationId,
  email: 'dana@example.com',
  role: 'member',
  invitedBy: EXAMPLE.personId,
  invitedByName: 'Ana Lima',
  createdAt: '2026-11-03T11:20:00.000Z',
  expiresAt: '2026-11-10T11:20:00.000Z',
};
const EXAMPLE_MEMBERS = [
  { userId: EXAMPLE.personId, name: 'Ana Lima', email: EXAMPLE.email, role: 'owner', joinedAt: '2026-11-02T10:00:00.000Z' },
  { userId: EXAMPLE.otherPersonId, name: 'Ben Okafor', email: 'ben@example.com', role: 'member', joinedAt: '2026-11-02T10:41:19.662Z' },
];

export const ORGANISATION_ROLE_VALUES = ['owner', 'admin', 'member'] as const;

export const roleSchema = {
  type: 'string',
  enum: [...ORGANISATION_ROLE_VALUES],
  description: '`owner` (everything, including owners), `admin` (everything but making, unmaking or removing owners), or `member`.',
} as const;

export const teamNameSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 100,
  description: '1 to 100 characters once trimmed, not only spaces, no control or format characters.',
} as const;

export const memberSchema = named('Member', {
  type: 'object',
  description: 'A member of an organisation (spec 2.7).',
  required: ['userId', 'name', 'email', 'role', 'joinedAt'],
  properties: {
    userId: { type: 'string', description: 'Person id (`usr_…`).' },
    name: { type: 'string', description: "The person's name." },
    email: { type: ['string', 'null'], description: "The person's address (null when no sign-in method vouched for one)." },
    role: roleSchema,
    joinedAt: { ...timestampSchema, description: 'When the person joined (again, after a removal: the latest time).' },
  },
  additionalProperties: false,
  examples: [EXAMPLE_MEMBERS[1]],
} as const);

export const invitationSchema = named('Invitation', {
  type: 'object',
  description: 'An invitation to join a team (spec 2.8).',
  required: ['id', 'email', 'role', 'invitedBy', 'invitedByName', 'createdAt', 'expiresAt'],
  properties: {
    id: { type: 'string', description: 'Invitation id (`inv_…`), the `invitationId` of the withdrawal path.' },
    email: { type: 'string', description: 'The address the invitation was sent to, lower-cased.' },
    role: { ...roleSchema, description: 'The role the accepter gets.' },
    invitedBy: { type: 'string', description: 'Person id of the owner or admin who invited.' },
    invitedByName: { type: 'string', description: "The inviter's name." },
    createdAt: { ...timestampSchema, description: 'When the invitation was made.' },
    expiresAt: { ...timestampSchema, description: 'When the link stops working (seven days later by default).' },
    link: {
      type: 'string',
      format: 'uri',
      description: 'Only in the answer to creating the invitation (the token is stored as a hash): the link that was mailed.',
    },
  },
  additionalProperties: false,
  examples: [{ ...EXAMPLE_INVITATION, link: 'https://console.platform.example/join#platform_iv_Jk8lZ2xC6vB0nM4qW8eR2tY6uI0oP4aS8dF2gH6jK0l' }],
} as const);

export const invitationPreviewSchema = named('InvitationPreview', {
  type: 'object',
  description: "What an invitation link's holder may know (spec 2.9), no more.",
  required: ['organisation', 'invitedBy', 'email', 'role', 'expiresAt'],
  properties: {
    organisation: { type: 'string', description: "The team's name." },
    invitedBy: { type: 'string', description: "The inviter's name." },
    email: { type: 'string', description: 'The address the invitation was sent to: accept signed in with it.' },
    role: { ...roleSchema, description: 'The role the accepter gets.' },
    expiresAt: { ...timestampSchema, description: 'When the link stops working.' },
  },
  additionalProperties: false,
  examples: [{ organisation: 'Checkout team', invitedBy: 'Ana Lima', email: 'dana@example.com', role: 'member', expiresAt: '2026-11-10T11:20:00.000Z' }],
} as const);

export const memberListSchema = {
  type: 'object',
  description: 'Members, in the order they joined.',
  required: ['members', 'nextCursor'],
  properties: { members: { type: 'array', items: memberSchema, description: 'A page of members.' }, nextCursor: nextCursorSchema },
  additionalProperties: false,
  examples: [{ members: EXAMPLE_MEMBERS, nextCursor: null }],
} as const;

export const invitationListSchema = {
  type: 'object',
  description: 'Open invitations (not used, withdrawn or expired), oldest first, without links.',
  required: ['invitations', 'nextCursor'],
  properties: { invitations: { type: 'array', items: invitationSchema, description: 'A page of open invitations.' }, nextCursor: nextCursorSchema },
  additionalProperties: false,
  examples: [{ invitations: [EXAMPLE_INVITATION], nextCursor: null }],
} as const;

export const okSchema = {
  type: 'object',
  description: 'The change was made (or there was nothing to change).',
  required: ['ok'],
  properties: { ok: { type: 'boolean', description: 'Always `true`.' } },
  additionalProperties: false,
  examples: [{ ok: true }],
} as const;

/** The body that creates a team, or renames one. */
export const teamNameBodySchema = {
  type: 'object',
  description: "The team's name.",
  required: ['name'],
  properties: { name: teamNameSchema },
  additionalProperties: false,
  examples: [{ name: 'Checkout team' }],
} as const;

/** The body that changes a member's role. */
export const memberRoleBodySchema = {
  type: 'object',
  description: "The member's new role.",
  required: ['role'],
  properties: { role: roleSchema },
  additionalProperties: false,
  examples: [{ role: 'admin' }],
} as const;

/** The body that invites an address. */
export const invitationBodySchema = {
  type: 'object',
  description: 'Whom to invite, and as what.',
  required: ['email'],
  properties: {
    email: { type: 'string', format: 'email', maxLength: 320, description: 'The address to invite.' },
    role: { ...roleSchema, description: 'The role the accepter gets: `owner` (only an owner invites one), `admin` or `member` (default).' },
  },
  additionalProperties: false,
  examples: [{ email: 'dana@example.com', role: 'member' }],
} as const;
