import { EntitySchema } from 'typeorm';

/**
 * Project pictures (spec 2.13, 4.9): one row per picture, identified by project and slug, holding
 * the current version and the one before it (`previous_*`, all null until the first change).
 * A change is one conditional UPDATE that copies the current columns into `previous_*` and writes
 * the new ones where the version is still the one the writer saw, so two writers holding the same
 * version cannot both win, and exactly one version before the current is ever kept.
 *
 * - `version`: the ETag, an opaque random string (16 characters, never `0`), new on every change
 *   and never reused, so an `If-Match` from before a delete cannot match a later picture of the
 *   same slug.
 * - `digest`: SHA-256 of the canonical content (spec, SVG, look); a save with the same digest
 *   changes nothing.
 * - `spec`: the spec as JSON text, as sent; `svg`: the SVG text, as sent.
 * - people (`created_by`, `updated_by`, `previous_updated_by`) are set to null if a person row is
 *   ever deleted; the project's deletion removes its pictures.
 * On MySQL `spec` and `svg` are MEDIUMTEXT (16 MB; the limits are 512 KB and 2 MB), and `slug` and
 * `version` compare exactly (`utf8mb4_bin`, set by the migration).
 */

export interface PictureRecord {
  projectId: string;
  slug: string;
  version: string;
  digest: string;
  spec: string;
  svg: string;
  look: string | null;
  createdBy: string | null;
  createdAt: Date;
  updatedBy: string | null;
  updatedAt: Date;
  previousVersion: string | null;
  previousSpec: string | null;
  previousSvg: string | null;
  previousLook: string | null;
  previousUpdatedBy: string | null;
  previousUpdatedAt: Date | null;
}

type Dialect = 'sqlite' | 'mysql';

export const MAX_LOOK_LENGTH = 1000;

const person = (name: string) => ({ type: 'varchar', length: 40, name, nullable: true, default: null }) as const;
const when = (name: string, nullable = false) =>
  ({ type: 'datetime', precision: 3, name, ...(nullable ? { nullable: true, default: null } : {}) }) as const;
const content = (dialect: Dialect, name: string, nullable = false) =>
  ({ type: dialect === 'mysql' ? 'mediumtext' : 'text', name, ...(nullable ? { nullable: true, default: null } : {}) }) as const;
const setNull = (column: keyof PictureRecord, name: string) => ({
  name: `fk_pictures_${name}`,
  target: 'Person',
  columnNames: [column],
  referencedColumnNames: ['id'],
  onDelete: 'SET NULL' as const,
});

const PictureSchema = (dialect: Dialect) =>
  new EntitySchema<PictureRecord>({
    name: 'Picture',
    tableName: 'pictures',
    columns: {
      projectId: { type: 'varchar', length: 40, name: 'project_id', primary: true },
      slug: { type: 'varchar', length: 60, primary: true },
      version: { type: 'varchar', length: 20 },
      digest: { type: 'varchar', length: 64 },
      spec: content(dialect, 'spec'),
      svg: content(dialect, 'svg'),
      look: { type: 'varchar', length: MAX_LOOK_LENGTH, nullable: true, default: null },
      createdBy: person('created_by'),
      createdAt: when('created_at'),
      updatedBy: person('updated_by'),
      updatedAt: when('updated_at'),
      previousVersion: { type: 'varchar', length: 20, name: 'previous_version', nullable: true, default: null },
      previousSpec: content(dialect, 'previous_spec', true),
      previousSvg: content(dialect, 'previous_svg', true),
      previousLook: { type: 'varchar', length: MAX_LOOK_LENGTH, name: 'previous_look', nullable: true, default: null },
      previousUpdatedBy: person('previous_updated_by'),
      previousUpdatedAt: when('previous_updated_at', true),
    },
    indices: [{ name: 'pictures_project_updated', columns: ['projectId', 'updatedAt'] }],
    foreignKeys: [
      { name: 'fk_pictures_project', target: 'Project', columnNames: ['projectId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
      setNull('createdBy', 'created_by'),
      setNull('updatedBy', 'updated_by'),
      setNull('previousUpdatedBy', 'previous_updated_by'),
    ],
  });

/** The picture entities for a dialect; queries name them by entity name ('Picture'). */
export function pictureEntities(dialect: Dialect) {
  return [PictureSchema(dialect)];
}
