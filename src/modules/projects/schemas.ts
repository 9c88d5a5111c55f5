import { EXAMPLE } from '../../http/examples.js';
import { named, timestampSchema } from '../../http/schema.js';
import { nextCursorSchema } from '../../http/pagination.js';

/** The projects API (extension): request and answer schemas. */

export const PROJECT_ROLE_VALUES = ['owner', 'contributor', 'viewer'] as const;

export const projectRoleSchema = {
  type: 'string',
  enum: [...PROJECT_ROLE_VALUES],
  description: '`owner` (manages the project and its members), `contributor` (saves and deletes pictures) or `viewer` (reads).',
} as const;

export const projectNameSchema = { type: 'string', minLength: 1, maxLength: 200, description: '1 to 200 characters once trimmed.' } as const;

/** The body that creates a project, or renames one. */
export const projectNameBodySchema = {
  type: 'object',
  description: "The project's name.",
  required: ['name'],
  properties: { name: projectNameSchema },
  additionalProperties: false,
  examples: [{ name: 'Checkout service' }],
} as const;

/** The body that adds a person to a project, or changes their role. */
export const projectMemberBodySchema = {
  type: 'object',
  description: 'The role the person has in the project.',
  required: ['role'],
  properties: { role: projectRoleSchema },
  additionalProperties: false,
  examples: [{ role: 'contributor' }],
} as const;

export const projectSchema = named('Project', {
  type: 'object',
  description: 'Extension: a project of the organisation. Its `id` is what the pictures, policy, ingest and cloud-agent operations take.',
  required: ['id', 'name', 'createdAt', 'role'],
  properties: {
    id: { type: 'string', description: 'Project id (`prj_…`).' },
    name: { type: 'string', description: 'The project\'s name.' },
    createdAt: { ...timestampSchema, description: 'When the project was created.' },
    role: { type: ['string', 'null'], enum: [...PROJECT_ROLE_VALUES, null], description: "The caller's role in the project; null when they are not a member (organisation owners and admins see every project)." },
  },
  additionalProperties: false,
  examples: [{ id: EXAMPLE.projectId, name: 'Checkout service', createdAt: '2026-11-02T09:14:27.512Z', role: 'owner' }],
} as const);

export const projectMemberSchema = named('ProjectMember', {
  type: 'object',
  description: 'Extension: a member of a project (always a member of its organisation).',
  required: ['userId', 'name', 'email', 'role', 'addedAt'],
  properties: {
    userId: { type: 'string', description: 'Person id (`usr_…`).' },
    name: { type: 'string', description: "The person's name." },
    email: { type: ['string', 'null'], description: "The person's address (null when none is known)." },
    role: projectRoleSchema,
    addedAt: { ...timestampSchema, description: 'When the person was added to the project.' },
  },
  additionalProperties: false,
  examples: [{ userId: EXAMPLE.otherPersonId, name: 'Ben Okafor', email: 'ben@example.com', role: 'contributor', addedAt: '2026-11-02T09:20:03.118Z' }],
} as const);

export const projectListSchema = {
  type: 'object',
  description: 'Projects, oldest first.',
  required: ['projects', 'nextCursor'],
  properties: { projects: { type: 'array', items: projectSchema, description: 'A page of projects.' }, nextCursor: nextCursorSchema },
  additionalProperties: false,
  examples: [{ projects: [{ id: EXAMPLE.projectId, name: 'Checkout service', createdAt: '2026-11-02T09:14:27.512Z', role: 'owner' }], nextCursor: null }],
} as const;

export const projectMemberListSchema = {
  type: 'object',
  description: 'Members of the project, in the order they were added.',
  required: ['members', 'nextCursor'],
  properties: { members: { type: 'array', items: projectMemberSchema, description: 'A page of members.' }, nextCursor: nextCursorSchema },
  additionalProperties: false,
  examples: [
    {
      members: [
        { userId: EXAMPLE.personId, name: 'Ana Lima', email: EXAMPLE.email, role: 'owner', addedAt: '2026-11-02T09:14:27.512Z' },
        { userId: EXAMPLE.otherPersonId, name: 'Ben Okafor', email: 'ben@example.com', role: 'contributor', addedAt: '2026-11-02T09:20:03.118Z' },
      ],
      nextCursor: null,
    },
  ],
} as const;
