import { readFileSync, statSync } from 'node:fs';
import { CLI_ACTOR } from '../audit.js';
import { assertJsonBounds } from '../http/json-bounds.js';
import type { EffectivePolicy, PublishOutcome } from '../modules/policy/service.js';
import { timestamp } from '../util/clock.js';
import { usageError, type AdminServices } from './context.js';
import { organisationByIdOrHost } from './people.js';

/**
 * The organisation's policy (or a project's override) from the command line, through
 * `PolicyService` as the API's routes call it: the same validation (JSON limits, schema, stored
 * size), the same revisions and the same audit lines (`policy.published`, `policy.restored`,
 * written by the service). `If-Match` is not needed here; the revision published is printed.
 */

export interface PolicyView extends EffectivePolicy {
  organisationId: string;
  projectId: string | null;
}

export interface PublishView extends PublishOutcome {
  organisationId: string;
  projectId: string | null;
}

async function scope(services: AdminServices, organisationRef: string, projectId: string | undefined) {
  const organisation = await organisationByIdOrHost(services, organisationRef);
  const project = projectId === undefined ? null : projectId.trim();
  // A project of another organisation answers as absent (404 from the service).
  if (project !== null) await services.projects.get(organisation.id, project);
  return { organisationId: organisation.id, projectId: project };
}

export async function showPolicy(services: AdminServices, organisationRef: string, projectId?: string): Promise<PolicyView> {
  const where = await scope(services, organisationRef, projectId);
  return { ...where, ...(await services.policies.effective(where.organisationId, where.projectId ?? undefined)) };
}

/** Reads a policy file as the API reads a body: at most JSON_BODY_LIMIT bytes, JSON, within the JSON limits. */
export function readPolicyFile(services: AdminServices, path: string): unknown {
  const limit = services.config.jsonBodyLimitBytes;
  let size: number;
  try {
    size = statSync(path).size;
  } catch (error) {
    throw usageError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  if (size > limit) throw usageError(`${path} is ${size} bytes: a policy may be at most ${limit} bytes (JSON_BODY_LIMIT), as through the API`);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw usageError(`${path} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  // The API's check right after parsing a body (json_too_complex), before schema validation.
  assertJsonBounds(value, services.config.json);
  return value;
}

export async function publishPolicy(services: AdminServices, organisationRef: string, path: string, projectId?: string): Promise<PublishView> {
  const where = await scope(services, organisationRef, projectId);
  const document = readPolicyFile(services, path);
  const outcome =
    where.projectId === null
      ? await services.policies.publishOrganisation(where.organisationId, CLI_ACTOR, document)
      : await services.policies.publishProject(where.organisationId, where.projectId, CLI_ACTOR, document);
  return { ...where, ...outcome };
}

export async function restorePolicy(services: AdminServices, organisationRef: string, number: number, projectId?: string): Promise<PublishView> {
  const where = await scope(services, organisationRef, projectId);
  return { ...where, ...(await services.policies.restore(where.organisationId, where.projectId, number, CLI_ACTOR)) };
}

export interface RevisionView {
  number: number;
  projectId: string | null;
  publishedBy: string | null;
  publishedAt: string;
  valid: boolean;
  document: Record<string, unknown>;
}

export async function policyRevisions(services: AdminServices, organisationRef: string, options: { projectId?: string | undefined; limit: number }): Promise<RevisionView[]> {
  const where = await scope(services, organisationRef, options.projectId);
  const rows = await services.policies.revisions(where.organisationId, where.projectId, options.limit);
  return rows.map((row) => ({ ...row, publishedAt: timestamp(row.publishedAt) }));
}

/** `--revision`/restore number as the API's path parameter takes it. */
export function parseRevisionNumber(value: string): number {
  if (!/^[1-9][0-9]{0,9}$/.test(value.trim()) || Number(value) > 2_147_483_647) throw usageError(`a revision number is a positive integer (got "${value}")`);
  return Number(value);
}
