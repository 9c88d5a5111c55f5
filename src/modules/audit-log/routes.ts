import type { Response } from 'express';
import { invalidRequest } from '../../errors.js';
import { DEFAULT_PAGE_SIZE, pageQuerySchema } from '../../http/pagination.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { auditExportEndSchema, auditFilterProperties, auditPageSchema, auditRowSchema } from './schemas.js';
import { EXPORT_DEFAULT_LIMIT, EXPORT_MAX_LIMIT, type AuditLogService } from './service.js';
import type { AuditFilters } from './store.js';

/**
 * Extension: the organisation's stored audit trail (docs/api/audit-trail.md), for its owners and
 * admins (policies/audit-log.ts). Person tokens on self-hosted, Cloud sessions with
 * `X-Platform-Organisation` on Cloud; never devices. Every query is within the caller's
 * organisation: no filter reaches another's rows.
 */

const common = { tag: 'Audit', extension: true, tenant: true, auth: ['person', 'cloud-session'], permission: ['read', 'AuditLog'], forbids: true } as const;

/** Times the database keeps: RFC 3339 allows years no datetime column holds. */
function instant(value: string | undefined, field: string): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  const year = date.getUTCFullYear();
  if (Number.isNaN(date.getTime()) || year < 1970 || year > 9999) throw invalidRequest(`${field} must be a time between 1970 and 9999`, { field });
  return date;
}

/** Writes a part of the stream, waiting while the client reads slower than we write; false once the client is gone. */
async function send(res: Response, text: string): Promise<boolean> {
  if (res.destroyed) return false;
  if (res.write(text)) return true;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
  return !res.destroyed;
}

export function auditLogRoutes(auditLog: AuditLogService): RouteDefinition[] {
  return [
    defineRoute({
      ...common,
      method: 'get',
      path: '/platform/v1/audit-log',
      operationId: 'listAuditLog',
      summary: "The organisation's audit trail (owners and admins)",
      description:
        'Every administrative change of the organisation, newest first: who (actor), what (action and target ids), when, and from where (address, user agent and request id of the request that made it). ' +
        'Filters narrow the rows; none reaches another organisation\'s. The same list conventions as the other lists: `limit`, `cursor`, `nextCursor`.',
      schemas: { query: { type: 'object', properties: { ...pageQuerySchema.properties, ...auditFilterProperties }, additionalProperties: false } },
      responses: {
        200: { description: 'A page of audit rows.', schema: auditPageSchema },
        400: { description: '`invalid_request`: a query parameter or the cursor is malformed (naming the field).' },
      },
      errors: { 400: ['invalid_request'] },
      handler: async ({ query, principal }) => {
        const filters: AuditFilters = {
          action: query.action,
          actor: query.actor,
          target: query.target,
          since: instant(query.since, 'query.since'),
          until: instant(query.until, 'query.until'),
        };
        const page = await auditLog.page(principal.organisationId, filters, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor });
        return { status: 200, body: { entries: page.items, nextCursor: page.nextCursor }, headers: { 'Cache-Control': 'no-store' } };
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/platform/v1/audit-log/export',
      operationId: 'exportAuditLog',
      summary: "Export the organisation's audit trail as NDJSON (owners and admins)",
      description:
        'For a SIEM collector that polls: one JSON row per line (`AuditRow`), oldest first, then one last line `{"end":true,"cursor":…,"more":…}` (`AuditExportEnd`). ' +
        'The next export passes that `cursor` and starts right after the last row sent: nothing is sent twice or skipped, whatever was written meanwhile. ' +
        'Without `cursor`, it starts at `since` (or at the oldest row kept). Rows younger than a few seconds wait for the next export (docs/api/audit-trail.md, "Export"). ' +
        'A stream cut short (no last line) resumes from the last cursor the collector kept. Rows are read in batches: an export of any size holds little memory.',
      schemas: {
        query: {
          type: 'object',
          properties: {
            since: auditFilterProperties.since,
            cursor: { type: 'string', minLength: 1, maxLength: 100, description: 'The `cursor` of the previous export\'s last line.' },
            limit: { type: 'integer', minimum: 1, maximum: EXPORT_MAX_LIMIT, description: `Rows at most (default ${EXPORT_DEFAULT_LIMIT}, at most ${EXPORT_MAX_LIMIT}); the last line says \`more\` when rows are left.` },
          },
          additionalProperties: false,
        },
      },
      responses: {
        200: {
          description: 'NDJSON: rows (`AuditRow`), oldest first, then the end line (`AuditExportEnd`).',
          lines: { mediaType: 'application/x-ndjson', schema: { oneOf: [auditRowSchema, auditExportEndSchema], description: 'A row, or the last line.', examples: [auditRowSchema.examples[0], auditExportEndSchema.examples[0]] } },
          headers: { 'Cache-Control': { description: '`no-store`.', schema: { type: 'string' } } },
        },
        400: { description: '`invalid_request`: `since`, `limit` or `cursor` is malformed (naming the field).' },
      },
      errors: { 400: ['invalid_request'] },
      handler: async ({ query, principal, res }) => {
        // Checked before the first byte: a bad cursor is a 400, not a broken stream.
        const after = auditLog.exportStart(query.cursor);
        const since = instant(query.since, 'query.since');
        const parts = auditLog.export(principal.organisationId, { after, since, limit: query.limit ?? EXPORT_DEFAULT_LIMIT });
        // The first batch is read before the answer starts, so a database failure is still a 503.
        let next = await parts.next();
        res.status(200).set({ 'Content-Type': 'application/x-ndjson; charset=utf-8', 'Cache-Control': 'no-store' });
        try {
          while (!next.done) {
            const part = next.value;
            const text = 'rows' in part ? part.rows.map((row) => JSON.stringify(row)).join('\n') + '\n' : JSON.stringify(part) + '\n';
            if (!(await send(res, text))) {
              await parts.return(undefined);
              return undefined;
            }
            next = await parts.next();
          }
          res.end();
        } catch (error) {
          // Headers are sent: the collector sees a stream without its last line and resumes.
          res.destroy(error as Error);
        }
        return undefined;
      },
    }),
  ];
}
