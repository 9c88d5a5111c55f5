import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { defineAbilityFor, permits, type Action, type Actor, type AppAbility, type SubjectRecords, type SubjectType } from '../../policies/index.js';
import { ORGANISATION_ROLES, PROJECT_ROLES, type OrganisationRole, type ProjectRole, type TokenKind } from '../auth/principal.js';
import type { RouteDefinition, RoutePermission } from '../http/route.js';

/**
 * `npm run abilities`: who may do what, computed by asking the real CASL rules of policies/
 * about sample records, so the table cannot drift from the rules. Each cell comes from asking
 * about records in the caller's organisation (split where the rules split, e.g. projects the
 * caller belongs to or not) and records of another organisation, which must always be refused.
 */

// Every action and subject the policy types name. Adding one to policies/subjects.ts fails the
// build here until it is listed, so the matrix always covers the whole vocabulary.
export const ACTIONS = ['read', 'create', 'update', 'delete', 'manage-members', 'approve', 'accept', 'relay'] as const satisfies readonly Action[];
export const SUBJECTS = ['Organisation', 'Team', 'Member', 'Invitation', 'Project', 'ProjectMember', 'Device', 'DeviceRequest', 'JoinKey', 'Policy', 'Activity', 'Picture', 'CloudAgentRun', 'AuditLog'] as const satisfies readonly SubjectType[];
const KINDS = ['person', 'cloud-session', 'device', 'run-credential'] as const satisfies readonly TokenKind[];
type Missing<All, Listed> = [Exclude<All, Listed>] extends [never] ? true : never;
const everyActionListed: Missing<Action, (typeof ACTIONS)[number]> = true;
const everySubjectListed: Missing<SubjectType, (typeof SUBJECTS)[number]> = true;
const everyKindListed: Missing<TokenKind, (typeof KINDS)[number]> = true;
void [everyActionListed, everySubjectListed, everyKindListed];

const OWN_ORGANISATION = 'org_own';
const OTHER_ORGANISATION = 'org_other';
const CALLER = 'usr_caller';
const SOMEONE_ELSE = 'usr_someone';
const THEIR_PROJECT = 'prj_theirs';
const OTHER_PROJECT = 'prj_other';
const CALLING_DEVICE = 'dev_caller';
const OTHER_DEVICE = 'dev_other';
const THEIR_RUN = 'run_theirs';
const OTHER_RUN = 'run_other';
/** The address the invitee column's sign-in methods vouch for. */
const CALLER_EMAIL = 'caller@example.test';
const SOMEONE_ELSES_EMAIL = 'someone@example.test';

export interface MatrixColumn {
  key: string;
  label: string;
  actor: Actor;
}

export interface MatrixCell {
  /** Allowed on every sample record of the caller's organisation, on some of them, or on none. */
  grant: 'all' | 'some' | 'none';
  /** Labels of the in-organisation samples allowed, when only some are. */
  only: string[];
  /** Allowed on a record of another organisation: always a policy bug. */
  crossesOrganisations: boolean;
  text: string;
}

export interface MatrixRow {
  subject: string;
  action: Action;
  cells: Record<string, MatrixCell>;
}

export interface AbilityMatrix {
  columns: MatrixColumn[];
  rows: MatrixRow[];
  /** Subject and action pairs no column is allowed at all. */
  grantedToNobody: { subject: string; action: Action }[];
}

function actor(
  kind: TokenKind,
  role: OrganisationRole | undefined,
  projectRoles: [string, ProjectRole][] = [],
  options: { verifiedEmails?: string[]; deviceKind?: 'workbench' | 'node' } = {},
): Actor {
  const base: Actor = { kind, organisationId: OWN_ORGANISATION, personId: CALLER, role, projectRoles: new Map(projectRoles), verifiedEmails: options.verifiedEmails };
  if (kind === 'device') return { ...base, deviceId: CALLING_DEVICE, deviceKind: options.deviceKind ?? 'workbench' };
  // A run credential acts for the run's device and person.
  if (kind === 'run-credential') return { ...base, deviceId: CALLING_DEVICE, runId: THEIR_RUN };
  return base;
}

/** The callers the matrix asks about, one column each. */
export function matrixColumns(): MatrixColumn[] {
  const kindLabels: Record<Exclude<TokenKind, 'run-credential'>, string> = { person: 'person', 'cloud-session': 'cloud session', device: 'device of' };
  const columns: MatrixColumn[] = [];
  for (const kind of KINDS) {
    if (kind === 'run-credential') {
      // A run credential acts for the run's person, without an organisation role of its own.
      columns.push({ key: kind, label: 'run credential', actor: actor(kind, undefined) });
      continue;
    }
    for (const role of ORGANISATION_ROLES) columns.push({ key: `${kind}:${role}`, label: `${kindLabels[kind]} ${role}`, actor: actor(kind, role) });
  }
  // The device columns above are workbenches; a node approved by an owner shows what nodes get.
  columns.push({ key: 'node:owner', label: 'node of owner', actor: actor('device', 'owner', [], { deviceKind: 'node' }) });
  for (const role of PROJECT_ROLES) {
    columns.push({ key: `project:${role}`, label: `project ${role}`, actor: actor('person', 'member', [[THEIR_PROJECT, role]]) });
  }
  // Devices act in a project with their person's role there (policies/project-membership.ts).
  columns.push({ key: 'device:project-viewer', label: 'device of project viewer', actor: actor('device', 'member', [[THEIR_PROJECT, 'viewer']]) });
  columns.push({ key: 'device:project-contributor', label: 'device of project contributor', actor: actor('device', 'member', [[THEIR_PROJECT, 'contributor']]) });
  // A Cloud person whose sign-in methods vouch for an address, invited (or not) to a team.
  columns.push({ key: 'invitee', label: 'cloud session invited', actor: actor('cloud-session', 'member', [], { verifiedEmails: [CALLER_EMAIL] }) });
  return columns;
}

interface Sample {
  label: string;
  foreign: boolean;
  record: Record<string, string>;
}

/**
 * Records to ask about, by subject. The foreign samples reuse the caller's own ids with another
 * organisation, so a rule that checks an id but forgets the organisation shows up. A subject
 * whose conditions read a field these samples lack needs its own case here; until then
 * `computeAbilityMatrix` refuses to run rather than print ✗ for want of a matching record.
 */
function samples(subject: string): Sample[] {
  switch (subject) {
    case 'Organisation':
      return [
        { label: 'own organisation', foreign: false, record: { id: OWN_ORGANISATION } },
        { label: 'another organisation', foreign: true, record: { id: OTHER_ORGANISATION } },
      ];
    case 'Team':
      return [{ label: 'a new team', foreign: false, record: {} }];
    case 'Member': {
      const member = (organisationId: string, personId: string, role: OrganisationRole, newRole: OrganisationRole) => ({ organisationId, personId, role, newRole });
      return [
        { label: 'admins and members', foreign: false, record: member(OWN_ORGANISATION, SOMEONE_ELSE, 'admin', 'member') },
        { label: 'a member made owner', foreign: false, record: member(OWN_ORGANISATION, SOMEONE_ELSE, 'member', 'owner') },
        { label: 'owners', foreign: false, record: member(OWN_ORGANISATION, SOMEONE_ELSE, 'owner', 'admin') },
        { label: 'themselves', foreign: false, record: member(OWN_ORGANISATION, CALLER, 'member', 'member') },
        { label: 'themselves elsewhere', foreign: true, record: member(OTHER_ORGANISATION, CALLER, 'member', 'member') },
        { label: 'an owner elsewhere', foreign: true, record: member(OTHER_ORGANISATION, SOMEONE_ELSE, 'owner', 'member') },
      ];
    }
    case 'Invitation':
      // Accepting is the one rule not bounded by an organisation (an invitation is how one joins);
      // the samples elsewhere are addressed to someone else, and must stay refused.
      return [
        { label: 'as admin or member', foreign: false, record: { organisationId: OWN_ORGANISATION, role: 'member', email: SOMEONE_ELSES_EMAIL } },
        { label: 'as owner', foreign: false, record: { organisationId: OWN_ORGANISATION, role: 'owner', email: SOMEONE_ELSES_EMAIL } },
        { label: 'to their address', foreign: false, record: { organisationId: OWN_ORGANISATION, role: 'owner', email: CALLER_EMAIL } },
        { label: 'elsewhere', foreign: true, record: { organisationId: OTHER_ORGANISATION, role: 'member', email: SOMEONE_ELSES_EMAIL } },
      ];
    case 'Project':
      return [
        { label: 'their projects', foreign: false, record: { id: THEIR_PROJECT, organisationId: OWN_ORGANISATION } },
        { label: 'other projects', foreign: false, record: { id: OTHER_PROJECT, organisationId: OWN_ORGANISATION } },
        { label: 'their project id elsewhere', foreign: true, record: { id: THEIR_PROJECT, organisationId: OTHER_ORGANISATION } },
        { label: 'a project elsewhere', foreign: true, record: { id: OTHER_PROJECT, organisationId: OTHER_ORGANISATION } },
      ];
    case 'DeviceRequest':
      return [
        { label: 'workbenches', foreign: false, record: { organisationId: OWN_ORGANISATION, kind: 'workbench' } },
        { label: 'nodes', foreign: false, record: { organisationId: OWN_ORGANISATION, kind: 'node' } },
        { label: 'a workbench elsewhere', foreign: true, record: { organisationId: OTHER_ORGANISATION, kind: 'workbench' } },
        { label: 'a node elsewhere', foreign: true, record: { organisationId: OTHER_ORGANISATION, kind: 'node' } },
      ];
    case 'CloudAgentRun':
      return [
        { label: 'its own runs in their projects', foreign: false, record: { id: THEIR_RUN, organisationId: OWN_ORGANISATION, projectId: THEIR_PROJECT, deviceId: CALLING_DEVICE } },
        { label: 'its own runs in other projects', foreign: false, record: { id: THEIR_RUN, organisationId: OWN_ORGANISATION, projectId: OTHER_PROJECT, deviceId: CALLING_DEVICE } },
        { label: "another device's run in their projects", foreign: false, record: { id: OTHER_RUN, organisationId: OWN_ORGANISATION, projectId: THEIR_PROJECT, deviceId: OTHER_DEVICE } },
        { label: 'its run id elsewhere', foreign: true, record: { id: THEIR_RUN, organisationId: OTHER_ORGANISATION, projectId: THEIR_PROJECT, deviceId: CALLING_DEVICE } },
        { label: 'a run elsewhere', foreign: true, record: { id: OTHER_RUN, organisationId: OTHER_ORGANISATION, projectId: OTHER_PROJECT, deviceId: OTHER_DEVICE } },
      ];
    case 'Policy':
      return [
        { label: 'organisation policy', foreign: false, record: { organisationId: OWN_ORGANISATION } },
        { label: 'project overrides', foreign: false, record: { organisationId: OWN_ORGANISATION, projectId: OTHER_PROJECT } },
        { label: 'elsewhere', foreign: true, record: { organisationId: OTHER_ORGANISATION } },
        { label: 'a project elsewhere', foreign: true, record: { organisationId: OTHER_ORGANISATION, projectId: THEIR_PROJECT } },
      ];
    case 'Picture':
      return [
        { label: 'in their projects', foreign: false, record: { organisationId: OWN_ORGANISATION, projectId: THEIR_PROJECT } },
        { label: 'in other projects', foreign: false, record: { organisationId: OWN_ORGANISATION, projectId: OTHER_PROJECT } },
        { label: 'their project id elsewhere', foreign: true, record: { organisationId: OTHER_ORGANISATION, projectId: THEIR_PROJECT } },
      ];
    default:
      // Records that hang off a project and a person (ProjectMember, and subjects to come).
      return [
        { label: 'in their projects', foreign: false, record: { organisationId: OWN_ORGANISATION, projectId: THEIR_PROJECT, personId: CALLER } },
        { label: 'their own', foreign: false, record: { organisationId: OWN_ORGANISATION, projectId: OTHER_PROJECT, personId: CALLER } },
        { label: "others'", foreign: false, record: { organisationId: OWN_ORGANISATION, projectId: OTHER_PROJECT, personId: SOMEONE_ELSE } },
        { label: 'elsewhere', foreign: true, record: { organisationId: OTHER_ORGANISATION, projectId: THEIR_PROJECT, personId: CALLER } },
      ];
  }
}

/** Record fields a rule's conditions read (top level, through `$and`/`$or`/`$nor`). */
function conditionFields(conditions: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(conditions)) {
    for (const part of conditions) conditionFields(part, into);
  } else if (conditions && typeof conditions === 'object') {
    for (const [key, value] of Object.entries(conditions)) {
      if (key.startsWith('$')) conditionFields(value, into);
      else into.add(key.split('.')[0]!);
    }
  }
  return into;
}

function checkSamplesCover(ability: AppAbility): void {
  for (const rule of ability.rules) {
    const subjects = [rule.subject ?? []].flat().map(String);
    for (const subjectName of subjects) {
      if (subjectName === 'all') continue;
      const lacking = [...conditionFields(rule.conditions)].filter((field) => samples(subjectName).some((sample) => !(field in sample.record)));
      if (lacking.length) {
        throw new Error(`the ability matrix has no sample ${subjectName} records with ${lacking.join(', ')}: add them to samples() in src/cli/abilities.ts`);
      }
    }
  }
}

function cellFor(ability: AppAbility, subject: SubjectType, action: Action): MatrixCell {
  // The samples are records of every shape the rules read, asked as records of this subject type.
  const asked = samples(subject).map((sample) => ({ ...sample, allowed: permits(ability, action, subject, sample.record as SubjectRecords[SubjectType]) }));
  const inside = asked.filter((sample) => !sample.foreign);
  const allowedInside = inside.filter((sample) => sample.allowed);
  const crossesOrganisations = asked.some((sample) => sample.foreign && sample.allowed);
  const grant = allowedInside.length === 0 ? 'none' : allowedInside.length === inside.length ? 'all' : 'some';
  const only = grant === 'some' ? allowedInside.map((sample) => sample.label) : [];
  let text = grant === 'all' ? '✓' : grant === 'none' ? '✗' : `✓ ${only.join(', ')} only`;
  if (crossesOrganisations) text += ' ⚠ other organisations too';
  return { grant, only, crossesOrganisations, text };
}

/** The matrix for a rule set: the real one unless a test hands in another. */
export function computeAbilityMatrix(define: (actor: Actor) => AppAbility = defineAbilityFor): AbilityMatrix {
  const columns = matrixColumns();
  const abilities = new Map(columns.map((column) => [column.key, define(column.actor)]));
  for (const ability of abilities.values()) checkSamplesCover(ability);
  const rows: MatrixRow[] = [];
  const grantedToNobody: AbilityMatrix['grantedToNobody'] = [];
  for (const subject of SUBJECTS) {
    for (const action of ACTIONS) {
      const cells = Object.fromEntries(columns.map((column) => [column.key, cellFor(abilities.get(column.key)!, subject, action)]));
      const granted = Object.values(cells).some((cell) => cell.grant !== 'none' || cell.crossesOrganisations);
      if (granted) rows.push({ subject, action, cells });
      else grantedToNobody.push({ subject, action });
    }
  }
  return { columns, rows, grantedToNobody };
}

export function renderAbilityMatrix(matrix: AbilityMatrix): string {
  const escape = (text: string) => text.replace(/\|/g, '\\|');
  const lines = [
    '# Who may do what',
    '',
    'Computed by `npm run abilities` from the CASL rules in `policies/`; do not edit by hand.',
    '',
    `| Subject | Action | ${matrix.columns.map((column) => escape(column.label)).join(' | ')} |`,
    `|---|---|${matrix.columns.map(() => '---').join('|')}|`,
    ...matrix.rows.map((row) => `| ${row.subject} | ${row.action} | ${matrix.columns.map((column) => escape(row.cells[column.key]!.text)).join(' | ')} |`),
    '',
    '✓ allowed on every such record of the caller\'s organisation; ✗ never; "✓ … only" on those records only.',
    matrix.rows.some((row) => Object.values(row.cells).some((cell) => cell.crossesOrganisations))
      ? '⚠ marks a grant that reaches into another organisation: a bug in the rules.'
      : 'Nothing of another organisation is allowed to anyone (asked with the same ids in another organisation).',
    '',
    'Columns: *person* holds a person token of the organisation\'s identity provider (self-hosted); *cloud session* a',
    "person's Cloud session; *device of* a device token approved by a person with that organisation role;",
    'the *device of* columns are workbenches, *node of owner* is a node approved by an owner; "its own runs" are the runs',
    "the device registered (for a run credential: its one run); *run credential* a cloud agent run's credential; *project …* an organisation member holding that role in one",
    'project ("their projects" is that one); *cloud session invited* a Cloud member whose sign-in methods vouch for the address',
    'an invitation was sent to ("to their address"). Member samples carry the role a change asks for ("a member made owner").',
  ];
  const bySubject = new Map<string, string[]>();
  for (const { subject, action } of matrix.grantedToNobody) bySubject.set(subject, [...(bySubject.get(subject) ?? []), action]);
  if (bySubject.size) {
    lines.push('', 'Granted to nobody:');
    for (const [subject, actions] of bySubject) {
      lines.push(`- ${subject}: ${actions.length === ACTIONS.length ? 'every action (no rules)' : actions.join(', ')}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function runAsScript(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(entry)).href;
  } catch {
    return false;
  }
}

/** A route's permission in words: `update Policy`, `record: read Project (why)`, `authenticated (why)`, `public`. */
export function describePermission(permission: RoutePermission): string {
  if (permission === 'public') return 'public';
  if (Array.isArray(permission)) return `${permission[0]} ${permission[1]}`;
  if ('record' in permission) return `${permission.record[0]} ${permission.record[1]} on the record: ${permission.why}`;
  return `any accepted token: ${(permission as { authenticated: string }).authenticated}`;
}

/**
 * Every declared route, of both deployments (a route served on one only is listed once), as the
 * app builds them: the declarations are read, nothing is served and no database is opened.
 */
export async function declaredRoutes(): Promise<RouteDefinition[]> {
  const { loadConfig } = await import('../config.js');
  const { buildApp } = await import('../app.js');
  const { createDataSource } = await import('../db/data-source.js');
  const { createLogger } = await import('../logger.js');
  const { ManualClock } = await import('../util/clock.js');
  const routes = new Map<string, RouteDefinition>();
  const deployments = [{ PLATFORM_DEPLOYMENT: 'self-hosted' }, { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://platform.invalid', AUTH_CONSOLE_REDIRECT_URIS: 'https://console.invalid/cb' }];
  for (const env of deployments) {
    const config = loadConfig({ ...env, DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' });
    const platform = buildApp({ config, dataSource: createDataSource(config.database), clock: new ManualClock(Date.now()), logger: createLogger('silent') });
    for (const route of platform.registry.routes) if (!routes.has(route.operationId)) routes.set(route.operationId, route);
  }
  return [...routes.values()];
}

/** What each route requires, by operation id: the list a reviewer reads beside the matrix. */
export function renderRoutePermissions(routes: readonly RouteDefinition[]): string {
  const escape = (text: string) => text.replace(/\|/g, '\\|');
  const lines = [
    '# What each route requires',
    '',
    'Declared on each route (`permission`, src/http/route.ts). `action Subject`: the request chain asks the caller\'s ability',
    'above before the handler (403 `forbidden`), and the handler asks about the record it loads; "on the record": only the',
    'handler or service can ask, about the loaded record (why given); "any accepted token": no rule applies (why given).',
    '',
    '| Operation | Method | Path | Tokens | Permission |',
    '|---|---|---|---|---|',
    ...[...routes]
      .sort((a, b) => a.operationId.localeCompare(b.operationId))
      .map((route) => `| ${route.operationId} | ${route.method.toUpperCase()} | ${escape(route.path)} | ${route.auth === 'public' ? 'none' : route.auth.join(', ')} | ${escape(describePermission(route.permission))} |`),
  ];
  return `${lines.join('\n')}\n`;
}

if (runAsScript()) {
  const text = `${renderAbilityMatrix(computeAbilityMatrix())}\n${renderRoutePermissions(await declaredRoutes())}`;
  // Building the app's declarations leaves timers behind; nothing else is running.
  process.stdout.write(text, () => process.exit(0));
}
