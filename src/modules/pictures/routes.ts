import { authorize, defineAbilityFor } from '../../../policies/index.js';
import type { Principal, ProjectRole } from '../../auth/principal.js';
import { notFound } from '../../errors.js';
import { defineRoute, type Reply, type RouteDefinition } from '../../http/route.js';
import type { PictureRecord } from './entities.js';
import { precheckPictureWrite } from './limits.js';
import { notModified, readPreconditions } from './preconditions.js';
import {
  listQuerySchema,
  PICTURE_LIMITS,
  pictureListSchema,
  pictureParamsSchema,
  pictureSavedSchema,
  pictureSchema,
  pictureWriteSchema,
  projectParamsSchema,
} from './schemas.js';
import type { PictureService } from './service.js';
import type { PictureSummaryRow } from './store.js';

/** How the routes learn the caller's project roles (ProjectService.rolesOf). */
export interface ProjectRoles {
  rolesOf(organisationId: string, personId: string): Promise<Map<string, ProjectRole>>;
}

type PictureAction = 'read' | 'update' | 'delete';

/**
 * The caller's access to the project's pictures (policies/picture.ts): a device acts with its
 * person's role in the project. Not a member (or another organisation's project, or none): 404;
 * a member whose role does not allow the action: 403.
 */
async function requireAccess(projects: ProjectRoles, principal: Principal, projectId: string, action: PictureAction): Promise<void> {
  const caller = principal;
  const roles = await projects.rolesOf(caller.organisationId, caller.personId);
  const ability = defineAbilityFor({ ...caller, projectRoles: roles });
  const record = { organisationId: caller.organisationId, projectId };
  authorize(ability, 'read', 'Picture', record, () => notFound('no such project'));
  if (action !== 'read') authorize(ability, action, 'Picture', record);
}

const iso = (date: Date) => date.toISOString();

function summary(row: PictureSummaryRow) {
  return {
    slug: row.slug,
    version: row.version,
    ...(row.spec !== undefined ? { spec: JSON.parse(row.spec) as object } : {}),
    look: row.look,
    createdBy: row.createdBy,
    createdAt: iso(row.createdAt),
    updatedBy: row.updatedBy,
    updatedAt: iso(row.updatedAt),
    previousVersion: row.previousVersion,
  };
}

function whole(record: PictureRecord) {
  return { ...summary(record), spec: JSON.parse(record.spec) as object, svg: record.svg };
}

/**
 * Headers of every answer that carries SVG. The answer is JSON, but should a browser ever be
 * made to render it (or the SVG inside), nothing in it may run or load: a sandboxed CSP without
 * scripts, `nosniff` (helmet), and a download rather than a page.
 */
function pictureHeaders(record: PictureRecord): Record<string, string> {
  return {
    ETag: `"${record.version}"`,
    'Cache-Control': 'private, no-cache',
    Vary: 'Authorization, DPoP',
    'Content-Security-Policy': "default-src 'none'; sandbox; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    'Content-Disposition': `attachment; filename="${record.slug}.json"`,
  };
}

function pictureReply(record: PictureRecord, status = 200, ifNoneMatch?: string): Reply {
  const headers = pictureHeaders(record);
  if (ifNoneMatch !== undefined && notModified(ifNoneMatch, record.version)) return { status: 304, headers };
  return { status, headers, body: whole(record) };
}

const svgHeaders = {
  ETag: { description: 'The version, quoted (a strong validator).', schema: { type: 'string' } },
  'Cache-Control': { description: '`private, no-cache`: keep it, but ask again (with `If-None-Match`) before using it.', schema: { type: 'string' } },
  'Content-Security-Policy': { description: "`default-src 'none'; sandbox; …`: nothing in the answer runs or loads, should a browser ever render it.", schema: { type: 'string' } },
  'Content-Disposition': { description: '`attachment`: a browser saves the answer rather than showing it.', schema: { type: 'string' } },
} as const;

const readHeaders = {
  'If-None-Match': { description: 'A version (quoted) you hold: 304 while it is still current.', schema: { type: 'string' } },
} as const;

const writeHeaders = {
  'If-Match': {
    description:
      'The version (quoted) the change is based on, or `"0"` for a picture that must not exist yet. An update or delete of an existing picture needs it, naming the current version. `*` (any version) is evaluated but is no guard on its own.',
    schema: { type: 'string' },
  },
  'If-None-Match': { description: '`*`: save only if the picture does not exist yet (a create). Naming versions is evaluated but is no guard on its own.', schema: { type: 'string' } },
} as const;

const common = { tag: 'Pictures', tenant: true, auth: ['device'] as const };

const notFoundAnswer = { description: 'No such project in your organisation, you are not a member of it, or no such picture.' };
const forbiddenAnswer = { description: '`forbidden`: your role in the project is viewer; `insufficient_scope`: the device token lacks the scope.' };
const readForbidden = { description: '`insufficient_scope`: the device token lacks `pictures:read`.' };
const preconditionAnswers = {
  412: {
    description: 'The picture is not at the version `If-Match` names (or exists despite `If-None-Match: *` / `If-Match: "0"`); the current version is in `ETag`.',
    headers: { ETag: { description: 'The current version, quoted.', schema: { type: 'string' } } },
  },
  428: { description: 'The write does not name the version its client saw: a save needs `If-Match: "<version>"` (or `"0"`) or `If-None-Match: *`, a delete `If-Match: "<version>"`; `If-Match: *` or `If-None-Match` naming versions alone is not enough.' },
} as const;
const preconditionErrors = { 412: ['precondition_failed'], 428: ['precondition_required'] } as const;

export function pictureRoutes(pictures: PictureService, projects: ProjectRoles): RouteDefinition[] {
  return [
    defineRoute({
      ...common,
      method: 'get',
      path: '/projects/v1/{id}/pictures',
      operationId: 'listPictures',
      permission: { record: ['read', 'Picture'], why: 'the device\'s person\'s role in the project decides (policies/picture.ts): the handler asks about the project in the path, 404 outside it, 403 for a role that may not write' },
      summary: "A project's pictures",
      description:
        'Every member of the project (viewers too), newest first (by last save, then slug), without SVG; each picture\'s spec with `include=spec`. `people` names every person the listed pictures mention. ' +
        `A project holds at most ${PICTURE_LIMITS.perProject} pictures, so without \`include=spec\` one page holds them all.`,
      deviceScope: 'pictures:read',
      schemas: { params: projectParamsSchema, query: listQuerySchema },
      responses: {
        200: { description: 'A page of pictures.', schema: pictureListSchema, headers: { 'Cache-Control': { description: '`private, no-cache`.', schema: { type: 'string' } } } },
        400: { description: 'A query parameter or the cursor is malformed.' },
        403: readForbidden,
        404: notFoundAnswer,
      },
      errors: { 404: ['not_found'] },
      handler: async ({ params, query, principal }) => {
        await requireAccess(projects, principal, params.id, 'read');
        const includeSpec = query.include === 'spec';
        const page = await pictures.list(params.id, { includeSpec, limit: query.limit ?? (includeSpec ? 20 : PICTURE_LIMITS.perProject), cursor: query.cursor });
        return {
          status: 200,
          headers: { 'Cache-Control': 'private, no-cache', Vary: 'Authorization, DPoP' },
          body: {
            pictures: page.pictures.map(summary),
            people: Object.fromEntries([...page.people].map(([id, name]) => [id, { name }])),
            nextCursor: page.nextCursor,
          },
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/projects/v1/{id}/pictures/{slug}',
      operationId: 'getPicture',
      permission: { record: ['read', 'Picture'], why: 'the device\'s person\'s role in the project decides (policies/picture.ts): the handler asks about the project in the path, 404 outside it, 403 for a role that may not write' },
      summary: 'A picture, whole',
      description: 'Every member of the project. The ETag is the version; with `If-None-Match` naming it, 304.',
      deviceScope: 'pictures:read',
      headers: readHeaders,
      schemas: { params: pictureParamsSchema },
      responses: {
        200: { description: 'The current version.', schema: pictureSchema, headers: svgHeaders },
        304: { description: 'Not modified: `If-None-Match` names the current version.' },
        400: { description: 'The slug is malformed.' },
        403: readForbidden,
        404: notFoundAnswer,
      },
      errors: { 404: ['not_found'] },
      handler: async ({ params, principal, req }) => {
        await requireAccess(projects, principal, params.id, 'read');
        return pictureReply(await pictures.get(params.id, params.slug), 200, req.headers['if-none-match']);
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/projects/v1/{id}/pictures/{slug}/previous',
      operationId: 'getPreviousPicture',
      permission: { record: ['read', 'Picture'], why: 'the device\'s person\'s role in the project decides (policies/picture.ts): the handler asks about the project in the path, 404 outside it, 403 for a role that may not write' },
      summary: 'The version before the current one, whole',
      description: 'Every member of the project. One step back: the version the current one replaced (its own `version`, spec and SVG); 404 when the picture has only one version.',
      deviceScope: 'pictures:read',
      headers: readHeaders,
      schemas: { params: pictureParamsSchema },
      responses: {
        200: { description: 'The previous version.', schema: pictureSchema, headers: svgHeaders },
        304: { description: 'Not modified: `If-None-Match` names this version.' },
        400: { description: 'The slug is malformed.' },
        403: readForbidden,
        404: notFoundAnswer,
      },
      errors: { 404: ['not_found'] },
      handler: async ({ params, principal, req }) => {
        await requireAccess(projects, principal, params.id, 'read');
        return pictureReply(await pictures.previous(params.id, params.slug), 200, req.headers['if-none-match']);
      },
    }),
    defineRoute({
      ...common,
      method: 'put',
      path: '/projects/v1/{id}/pictures/{slug}',
      operationId: 'savePicture',
      permission: { record: ['update', 'Picture'], why: 'the device\'s person\'s role in the project decides (policies/picture.ts): the handler asks about the project in the path, 404 outside it, 403 for a role that may not write' },
      summary: 'Save a picture (a new version)',
      description:
        'Contributors and owners of the project. An update needs `If-Match: "<version>"` (the version the change is based on), a create `If-None-Match: *` or `If-Match: "0"` ' +
        '(428 without one of them, `If-Match: *` and `If-None-Match` naming versions included; 412 when it does not hold). ' +
        'A save that changes spec, SVG or look makes a new version and keeps the replaced one as the previous; a save of the same content answers the current version unchanged. ' +
        'The SVG is normalised first (the standard SVG DOCTYPE, comments, processing instructions, `<metadata>` and drawing programs\' editor data are removed, and the document is written in one fixed form; `normalised` in the answer names what was removed), then must pass the SVG rules (400 `unsafe_svg` / `invalid_svg` naming what and where); the normalised SVG is what is stored, versioned and answered. Saving the stored SVG again is an unchanged save. ' +
        'The check runs on a pool of threads, off the event loop (`SVG_CHECK_THREADS`): a check longer than `SVG_CHECK_TIMEOUT_MS` is abandoned (400 `svg_too_complex`), and when every thread is busy and `SVG_CHECK_QUEUE` checks already wait, the save is refused at once with 503 `unavailable` and `Retry-After: 1`. ' +
        `Limits: body ${PICTURE_LIMITS.bodyBytes} bytes, SVG ${PICTURE_LIMITS.svgBytes} bytes, spec ${PICTURE_LIMITS.specBytes} bytes as JSON (413); ${PICTURE_LIMITS.perProject} pictures per project (409 \`picture_limit_reached\`).`,
      deviceScope: 'pictures:write',
      bodyLimitBytes: PICTURE_LIMITS.bodyBytes,
      // The spec's depth and entries are the generic JSON bounds of this body (the spec sits one
      // level down, beside the three keys of the body; a string may be as long as the body): 400
      // `json_too_complex`. The precheck then applies the spec's key length and bytes and the
      // SVG's bytes.
      jsonLimits: { maxDepth: PICTURE_LIMITS.specDepth + 1, maxKeys: PICTURE_LIMITS.specEntries + 3, maxStringLength: PICTURE_LIMITS.bodyBytes },
      precheck: precheckPictureWrite,
      forbids: true,
      headers: writeHeaders,
      schemas: { params: pictureParamsSchema, body: pictureWriteSchema },
      responses: {
        200: { description: 'Saved: the new version, or the current one when nothing changed; `normalised` says what normalising the SVG removed.', schema: pictureSavedSchema, headers: svgHeaders },
        201: { description: 'A new picture, at its first version; `normalised` says what normalising the SVG removed.', schema: pictureSavedSchema, headers: svgHeaders },
        400: {
          description:
            '`invalid_request` (naming the field; also a spec key longer than 1,000 characters), `json_too_complex` (a spec nested deeper than 64 levels or holding more than 100,000 keys and items), `invalid_svg` (not a well-formed SVG document), `unsafe_svg` (breaks an SVG rule, including a value over its length limit; `where` names the element or line), `svg_too_complex` (checking the SVG took longer than `SVG_CHECK_TIMEOUT_MS`, in `max`), `unsupported_schema_version` (`spec.version` is not 1).',
        },
        403: forbiddenAnswer,
        404: notFoundAnswer,
        409: { description: `The project already holds ${PICTURE_LIMITS.perProject} pictures.` },
        413: { description: 'The body, the SVG or the spec is over its limit (`field` names which).' },
        503: { description: '`unavailable`: every SVG check thread is busy and `SVG_CHECK_QUEUE` checks already wait (`Retry-After: 1`), or the database did not answer (`Retry-After`).' },
        ...preconditionAnswers,
      },
      errors: { 400: ['invalid_svg', 'unsafe_svg', 'svg_too_complex', 'unsupported_schema_version'], 503: ['unavailable'], 404: ['not_found'], 409: ['picture_limit_reached'], ...preconditionErrors },
      handler: async ({ params, body, principal, req }) => {
        await requireAccess(projects, principal, params.id, 'update');
        const { picture, created, normalised } = await pictures.save(params.id, params.slug, principal.personId, body, readPreconditions(req.headers));
        return { status: created ? 201 : 200, headers: pictureHeaders(picture), body: { ...whole(picture), normalised } };
      },
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/projects/v1/{id}/pictures/{slug}',
      operationId: 'deletePicture',
      permission: { record: ['delete', 'Picture'], why: 'the device\'s person\'s role in the project decides (policies/picture.ts): the handler asks about the project in the path, 404 outside it, 403 for a role that may not write' },
      summary: 'Delete a picture and its previous version',
      description: 'Contributors and owners of the project. Needs `If-Match: "<version>"`, the current version: 428 without it (`If-Match: *` and `If-None-Match` are not enough), 412 when it does not hold.',
      deviceScope: 'pictures:write',
      forbids: true,
      headers: writeHeaders,
      schemas: { params: pictureParamsSchema },
      responses: {
        204: { description: 'Deleted, with its previous version.' },
        400: { description: 'The slug or a condition header is malformed.' },
        403: forbiddenAnswer,
        404: notFoundAnswer,
        ...preconditionAnswers,
      },
      errors: { 404: ['not_found'], ...preconditionErrors },
      handler: async ({ params, principal, req }) => {
        await requireAccess(projects, principal, params.id, 'delete');
        await pictures.delete(params.id, params.slug, readPreconditions(req.headers));
        return { status: 204 };
      },
    }),
  ];
}
