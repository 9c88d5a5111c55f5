import { EXAMPLE } from '../../http/examples.js';
import { nextCursorSchema } from '../../http/pagination.js';
import { named, timestampSchema } from '../../http/schema.js';

/** The audit trail's answers (extension): a row as the list and the export show it. */

const EXAMPLE_ROW = {
  id: '1042',
  at: '2026-11-02T09:14:27.512Z',
  organisationId: EXAMPLE.organisationId,
  actor: { kind: 'person', personId: EXAMPLE.personId, deviceId: null },
  action: 'policy.published',
  target: { number: 7 },
  sourceAddress: '203.0.113.7',
  userAgent: 'curl/8.5.0',
  requestId: '5f0c8f64-3c1e-4b7a-9d52-2f4a8e9b1c33',
} as const;

export const auditRowSchema = named('AuditRow', {
  type: 'object',
  description: 'Extension: one administrative change of the organisation. Ids and plain values only: never a secret, never a policy\'s text (its revision number).',
  required: ['id', 'at', 'organisationId', 'actor', 'action', 'target', 'sourceAddress', 'userAgent', 'requestId'],
  properties: {
    id: { type: 'string', pattern: '^[0-9]+$', description: 'The row\'s id: a number that only grows, as a string.' },
    at: { ...timestampSchema, description: 'When the change was made.' },
    organisationId: { type: 'string', description: 'The organisation the change was made in.' },
    actor: {
      type: 'object',
      description: 'Who made the change.',
      required: ['kind', 'personId', 'deviceId'],
      properties: {
        kind: { type: 'string', enum: ['person', 'cloud-session', 'device', 'run-credential', 'cli'], description: 'The token kind of the request, or `cli` for the admin command line.' },
        personId: { type: ['string', 'null'], description: 'The person (`usr_…`), when one acted (a `cli` change made `--as` someone names them).' },
        deviceId: { type: ['string', 'null'], description: 'The device (`dev_…`), when a device acted.' },
      },
      additionalProperties: false,
    },
    action: { type: 'string', description: 'What was done: `policy.published`, `join_key.created`, … (docs/api/audit-trail.md lists them).' },
    target: {
      type: 'object',
      description: 'What was changed: ids and plain values.',
      additionalProperties: { type: ['string', 'number', 'boolean', 'null'] },
    },
    sourceAddress: { type: ['string', 'null'], description: 'The address the request came from (as the trusted proxy reports it); null without a request (the command line).' },
    userAgent: { type: ['string', 'null'], description: 'The request\'s `User-Agent` (first 500 characters); null when none.' },
    requestId: { type: ['string', 'null'], description: 'The request\'s `X-Request-Id`, as in the service log; null without a request.' },
  },
  additionalProperties: false,
  examples: [EXAMPLE_ROW],
} as const);

export const auditPageSchema = {
  type: 'object',
  description: 'Audit rows, newest first.',
  required: ['entries', 'nextCursor'],
  properties: { entries: { type: 'array', items: auditRowSchema, description: 'A page of audit rows.' }, nextCursor: nextCursorSchema },
  additionalProperties: false,
  examples: [{ entries: [EXAMPLE_ROW], nextCursor: null }],
} as const;

/** The last line of an export: where the next export resumes. */
export const auditExportEndSchema = named('AuditExportEnd', {
  type: 'object',
  description: 'The last line of an export: pass `cursor` as the next export\'s `cursor`. `more`: the export stopped at its `limit` and more rows are ready now.',
  required: ['end', 'cursor', 'more'],
  properties: {
    end: { const: true, description: 'Always true: this line is the end, not a row.' },
    cursor: { type: 'string', description: 'Resume here: the next export starts after the last row of this one.' },
    more: { type: 'boolean', description: 'True when the export stopped at its `limit` with rows left.' },
  },
  additionalProperties: false,
  examples: [{ end: true, cursor: 'ZToxMDQy', more: false }],
} as const);

const idValue = { type: 'string', minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_.:@+-]+$' } as const;

export const auditFilterProperties = {
  action: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[a-z_.]+$', description: 'Only this action (`policy.published`).' },
  actor: { ...idValue, description: 'Only changes by this person or device id, or `cli` for the command line\'s.' },
  target: { ...idValue, description: 'Only changes whose target names this id (any target value equal to it).' },
  since: { type: 'string', format: 'date-time', description: 'From this time on (inclusive, RFC 3339).' },
  until: { type: 'string', format: 'date-time', description: 'Before this time (exclusive, RFC 3339).' },
} as const;
