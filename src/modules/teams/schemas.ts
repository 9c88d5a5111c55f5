import { named, timestampSchema } from '../../http/schema.js';
import { nextCursorSchema } from '../../http/pagination.js';

/** Cloud organisations (spec 2.7-2.9, 4.5): request and answer schemas. */

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
} as const);

export const memberListSchema = {
  type: 'object',
  description: 'Members, in the order they joined.',
  required: ['members', 'nextCursor'],
  properties: { members: { type: 'array', items: memberSchema, description: 'A page of members.' }, nextCursor: nextCursorSchema },
  additionalProperties: false,
} as const;

export const invitationListSchema = {
  type: 'object',
  description: 'Open invitations (not used, withdrawn or expired), oldest first, without links.',
  required: ['invitations', 'nextCursor'],
  properties: { invitations: { type: 'array', items: invitationSchema, description: 'A page of open invitations.' }, nextCursor: nextCursorSchema },
  additionalProperties: false,
} as const;

export const okSchema = {
  type: 'object',
  description: 'The change was made (or there was nothing to change).',
  required: ['ok'],
  properties: { ok: { type: 'boolean', description: 'Always `true`.' } },
  additionalProperties: false,
} as const;
