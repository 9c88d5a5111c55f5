import { EXAMPLE } from '../../http/examples.js';
import { named, timestampSchema } from '../../http/schema.js';
import { MAX_LOOK_LENGTH } from './entities.js';
import { NORMALISED_KINDS } from './svg/rules.js';

/** Limits of spec section 8 and the bounds this service adds for free-form spec JSON. */
export const PICTURE_LIMITS = {
  /** Whole request body of a save (413 before it is read). */
  bodyBytes: 3 * 1024 * 1024,
  /** The SVG text, UTF-8 bytes. */
  svgBytes: 2 * 1024 * 1024,
  /** The spec as JSON text, UTF-8 bytes. */
  specBytes: 512 * 1024,
  /** Pictures per project. */
  perProject: 200,
  /** Free-form spec JSON: nesting, object keys and array items in all, one key's length. */
  specDepth: 64,
  specEntries: 100_000,
  specKeyLength: 1_000,
} as const;

/** The SVG of the examples as a workbench sends it (an editor's comment included), and as it is stored (normalised). */
const EXAMPLE_SVG_SENT =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 240 80"><!-- drawn by the workbench --><rect x="10" y="20" width="80" height="40" rx="6" fill="#e8f0fe"/><text x="50" y="45" text-anchor="middle">Cart</text><path d="M90 40 H150" stroke="#333"/><rect x="150" y="20" width="80" height="40" rx="6" fill="#e6f4ea"/><text x="190" y="45" text-anchor="middle">Payment</text></svg>';

const EXAMPLE_PICTURE = {
  slug: 'checkout-flow',
  version: 'ver_5q3bugbymli8ew02',
  spec: { version: 1, kind: 'diagram', meta: { title: 'Checkout flow' }, nodes: [{ id: 'cart', label: 'Cart' }, { id: 'pay', label: 'Payment' }], edges: [['cart', 'pay']] },
  svg: EXAMPLE_SVG_SENT.replace('<!-- drawn by the workbench -->', ''),
  look: 'sketch',
  createdBy: EXAMPLE.personId,
  createdAt: '2026-11-03T10:20:41.009Z',
  updatedBy: EXAMPLE.personId,
  updatedAt: '2026-11-03T10:20:41.009Z',
  previousVersion: null,
};

export const SLUG_PATTERN = '^[a-z0-9-]{1,60}$';

export const pictureParamsSchema = {
  type: 'object',
  required: ['id', 'slug'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 40, description: 'Project id (`prj_…`).' },
    slug: { type: 'string', pattern: SLUG_PATTERN, description: 'The picture: lower-case letters, digits and dashes, at most 60 characters.' },
  },
  additionalProperties: false,
} as const;

export const projectParamsSchema = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 40, description: 'Project id (`prj_…`).' } },
  additionalProperties: false,
} as const;

export const pictureSpecSchema = named('PictureSpec', {
  type: 'object',
  description: 'What the picture shows, in the workbench\'s own terms (free-form beyond the fields named here; at most 512 KB as JSON, nested at most 64 deep).',
  required: ['version', 'kind', 'meta'],
  properties: {
    version: { type: 'integer', const: 1, description: 'Spec format version: `1`.' },
    kind: { type: 'string', minLength: 1, maxLength: 200, description: 'What kind of picture (diagram, chart, …).' },
    meta: {
      type: 'object',
      description: 'About the picture; further keys allowed.',
      required: ['title'],
      properties: { title: { type: 'string', maxLength: 500, description: 'Title.' } },
      additionalProperties: true,
    },
  },
  additionalProperties: true,
} as const);

export const pictureWriteSchema = named('PictureWrite', {
  type: 'object',
  description: 'A picture to save (spec 2.13).',
  required: ['spec', 'svg'],
  properties: {
    spec: pictureSpecSchema,
    svg: { type: 'string', minLength: 1, description: 'The SVG document, at most 2 MB (UTF-8). Normalised (inert parts removed, then written in one fixed form), checked by the SVG rules, and stored as normalised.' },
    look: { type: 'string', maxLength: MAX_LOOK_LENGTH, description: 'How the picture is drawn (a style name); optional.' },
  },
  additionalProperties: false,
  examples: [
    {
      spec: { version: 1, kind: 'diagram', meta: { title: 'Checkout flow' }, nodes: [{ id: 'cart', label: 'Cart' }, { id: 'pay', label: 'Payment' }], edges: [['cart', 'pay']] },
      svg: EXAMPLE_SVG_SENT,
      look: 'sketch',
    },
  ],
} as const);

const pictureFields = {
  slug: { type: 'string', description: 'The picture, unique in its project.' },
  version: { type: 'string', description: 'This version; the answer\'s ETag is this value, quoted. Opaque, new with every change, never reused.' },
  look: { type: ['string', 'null'], description: 'How the picture is drawn; null when none was given.' },
  createdBy: { type: ['string', 'null'], description: 'The person (id) whose device first saved the picture; null if that person no longer exists.' },
  createdAt: { ...timestampSchema, description: 'When the picture was first saved.' },
  updatedBy: { type: ['string', 'null'], description: 'The person (id) whose device saved this version.' },
  updatedAt: { ...timestampSchema, description: 'When this version was saved.' },
  previousVersion: { type: ['string', 'null'], description: 'The version before this one, kept for `…/previous`; null when there is none.' },
} as const;

export const pictureSchema = named('Picture', {
  type: 'object',
  description: 'A picture version, whole: spec and SVG.',
  required: ['slug', 'version', 'spec', 'svg', 'look', 'createdBy', 'createdAt', 'updatedBy', 'updatedAt', 'previousVersion'],
  properties: {
    ...pictureFields,
    spec: { type: 'object', description: 'The spec as saved.' },
    svg: { type: 'string', description: 'The SVG as stored: the normalised document the SVG rules checked, byte for byte.' },
  },
  additionalProperties: false,
  examples: [EXAMPLE_PICTURE],
} as const);

export const pictureSavedSchema = named('PictureSaved', {
  type: 'object',
  description: 'A save\'s answer: the picture version, whole, and what normalising its SVG removed.',
  required: [...pictureSchema.required, 'normalised'],
  properties: {
    ...pictureSchema.properties,
    normalised: {
      type: 'array',
      uniqueItems: true,
      items: { type: 'string', enum: NORMALISED_KINDS },
      description:
        'What normalisation removed from the SVG sent, in this order: `doctype` (the standard SVG 1.0/1.1 DOCTYPE), `comment`, `processing-instruction`, `metadata` (`<metadata>` and RDF/Dublin Core/Creative Commons/XMP markup), `editor-data` (elements and attributes of drawing programs\' namespaces: Inkscape, Sodipodi, Illustrator, Sketch, Figma, draw.io, Serif, …), `namespace-declaration` (`xmlns:svg` and declarations of those namespaces). Empty when nothing was removed; the SVG is still written in the one fixed form.',
    },
  },
  additionalProperties: false,
  // The save of the PictureWrite example: its comment removed.
  examples: [{ ...EXAMPLE_PICTURE, normalised: ['comment'] }],
} as const);

export const pictureSummarySchema = named('PictureSummary', {
  type: 'object',
  description: 'A picture in a list: no SVG; the spec only with `include=spec`.',
  required: ['slug', 'version', 'look', 'createdBy', 'createdAt', 'updatedBy', 'updatedAt', 'previousVersion'],
  properties: {
    ...pictureFields,
    spec: { type: 'object', description: 'The spec as saved (with `include=spec`).' },
  },
  additionalProperties: false,
} as const);

export const pictureListSchema = named('PictureList', {
  type: 'object',
  description: "A project's pictures, newest (last saved) first.",
  required: ['pictures', 'people', 'nextCursor'],
  properties: {
    pictures: { type: 'array', items: pictureSummarySchema, description: 'Newest first (by `updatedAt`, then slug).' },
    people: {
      type: 'object',
      description: 'Every person the listed pictures name (`createdBy`, `updatedBy`), by id.',
      additionalProperties: {
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string', description: "The person's name." } },
        additionalProperties: false,
      },
    },
    nextCursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page.' },
  },
  additionalProperties: false,
  examples: [
    {
      pictures: [
        {
          slug: 'checkout-flow',
          version: 'ver_5q3bugbymli8ew02',
          look: 'sketch',
          createdBy: EXAMPLE.personId,
          createdAt: '2026-11-03T10:20:41.009Z',
          updatedBy: EXAMPLE.personId,
          updatedAt: '2026-11-03T10:20:41.009Z',
          previousVersion: null,
        },
      ],
      people: { [EXAMPLE.personId]: { name: 'Ana Lima' } },
      nextCursor: null,
    },
  ],
} as const);

export const listQuerySchema = {
  type: 'object',
  properties: {
    include: { type: 'string', enum: ['spec'], description: '`spec`: include each picture\'s spec.' },
    limit: { type: 'integer', minimum: 1, maximum: PICTURE_LIMITS.perProject, description: `Page size (1 to ${PICTURE_LIMITS.perProject}; default ${PICTURE_LIMITS.perProject}, or 20 with \`include=spec\`).` },
    cursor: { type: 'string', maxLength: 200, description: '`nextCursor` of the previous page.' },
  },
  additionalProperties: false,
} as const;
