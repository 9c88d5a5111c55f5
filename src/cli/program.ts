import { Command, CommanderError, Option } from 'commander';
import { MigrationExecutor, type Migration } from 'typeorm';
import { isDatabaseUnavailable, reasonOf } from '../db/errors.js';
import { databaseRefusal } from '../db/server-check.js';
import { ORGANISATION_ROLES, PROJECT_ROLES, type OrganisationRole, type ProjectRole } from '../auth/principal.js';
import { ConfigError } from '../config.js';
import { ApiError } from '../errors.js';
import { ORGANISATION_KINDS, ORGANISATION_PLANS, type OrganisationKind, type OrganisationPlan } from '../modules/organisation/entities.js';
import { registerAuditCommand, registerDeviceCommands, registerJoinKeyCommands, registerPeopleCommands, registerPolicyCommands, registerProjectAdminCommands } from './admin-commands.js';
import { CliContext, CliError, EXIT_FAILED, EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE, exitCodeOfStatus, refusedError, usageError, type CliDependencies } from './context.js';
import { keptFor } from '../sweeper/kinds.js';
import { Sweeper } from '../sweeper/sweeper.js';
import { roleClaimWarning } from './people.js';
import { registerDiscoverCommand } from './discover.js';
import {
  configureOrganisation,
  createOrganisation,
  listOrganisations,
  removeOrganisationMember,
  setOrganisationRole,
  type OidcFlags,
  type OrganisationView,
} from './organisations.js';
import { createProject, listProjects, setProjectRole, type ProjectView } from './projects.js';
import { table } from './table.js';
import { LOG_DESTINATION_HELP } from './log-destination.js';

/**
 * The `platform` admin command line. Each command is a thin shell: parse flags, call a function
 * of organisations.ts / projects.ts with the services, print. `runCli` is what both the binary
 * and the tests call.
 */

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

function person(p: { id: string; name: string; email: string | null }): string {
  return p.email && p.email !== p.name ? `${p.name} <${p.email}> (${p.id})` : `${p.name} (${p.id})`;
}

function describeOrganisation(context: CliContext, view: OrganisationView): void {
  context.print(`  kind:     ${view.kind} (edition ${view.edition}), plan ${view.plan}`);
  context.print(`  hosts:    ${view.hosts.length ? view.hosts.join(', ') : '(none)'}`);
  if (view.oidc) {
    const { issuer, clientId, apiScope, audience, roleClaim } = view.oidc;
    context.print(`  sign-in:  issuer ${issuer}`);
    context.print(`            client id ${clientId}, API scope ${apiScope}, audience ${audience}`);
    context.print(`            role claim ${roleClaim ?? '(none: roles are set with `platform person set-role`; newcomers are members)'}`);
  } else {
    context.print('  sign-in:  not configured; people cannot sign in until --issuer, --client-id, --api-scope and --audience are set');
  }
}

function oidcOptions(command: Command): Command {
  return command
    .option('--issuer <url>', 'OpenID Connect issuer (https) whose person tokens sign in to this organisation')
    .option('--client-id <id>', 'client id people request tokens with (published in discovery)')
    .option('--api-scope <scope>', 'scope people request tokens with (published in discovery)')
    .option('--audience <aud>', 'the `aud` person tokens must carry')
    .option('--role-claim <claim>', 'token claim holding the organisation role (owner, admin, member)');
}

function registerOrganisationCommands(program: Command, context: CliContext): void {
  const org = program.command('org').description('organisations');

  oidcOptions(
    org
      .command('create')
      .description('create an organisation')
      .requiredOption('--name <name>', 'display name')
      .addOption(new Option('--kind <kind>', 'organisation kind (self-hosted: enterprise, the default)').choices(ORGANISATION_KINDS))
      .addOption(new Option('--plan <plan>', 'plan (default: follows the kind)').choices(ORGANISATION_PLANS))
      .option('--host <host>', 'host name the organisation is served at (repeatable)', collect),
  )
    .option('--json', 'print the organisation as JSON')
    .action(async (options: { name: string; kind?: OrganisationKind; plan?: OrganisationPlan; host?: string[]; json?: boolean } & OidcFlags) => {
      const view = await createOrganisation(await context.services(), { ...options, hosts: options.host ?? [] });
      if (options.json) return context.printJson(view);
      context.print(`Created organisation ${view.id} "${view.name}".`);
      describeOrganisation(context, view);
      if (!view.hosts.length && context.config.deployment === 'self-hosted') {
        context.warn(`${view.id} is served at no host name yet; add one with \`platform org configure ${view.id} --host <name>\``);
      }
    });

  org
    .command('list')
    .description('list organisations with their hosts and identity provider')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      const views = await listOrganisations(await context.services());
      if (options.json) return context.printJson(views);
      if (!views.length) {
        const kind = context.config.deployment === 'cloud' ? ' --kind team' : ' --host <host name>';
        return context.print(`No organisations yet. Create one: platform org create --name <name>${kind}`);
      }
      const rows = views.map((view) => [view.id, view.name, view.kind, view.plan, view.hosts.join(',') || '-', view.oidc?.issuer ?? '-']);
      for (const line of table(['ID', 'NAME', 'KIND', 'PLAN', 'HOSTS', 'ISSUER'], rows)) context.print(line);
    });

  oidcOptions(
    org
      .command('configure')
      .description("change an organisation's name, plan, host names or identity provider")
      .argument('<id>', 'organisation id (org_…)')
      .option('--name <name>', 'new display name')
      .addOption(new Option('--plan <plan>', 'new plan').choices(ORGANISATION_PLANS))
      .option('--host <host>', 'add a host name (repeatable)', collect)
      .option('--remove-host <host>', 'remove a host name (repeatable)', collect),
  )
    .option('--json', 'print the organisation as JSON')
    .action(async (id: string, options: { name?: string; plan?: OrganisationPlan; host?: string[]; removeHost?: string[]; json?: boolean } & OidcFlags) => {
      const view = await configureOrganisation(await context.services(), id, { ...options, addHosts: options.host, removeHosts: options.removeHost });
      if (options.json) return context.printJson(view);
      context.print(`Configured organisation ${view.id} "${view.name}".`);
      describeOrganisation(context, view);
      if (!view.hosts.length && context.config.deployment === 'self-hosted') {
        context.warn(`${view.id} is now served at no host name: nobody can reach it on this deployment`);
      }
    });

  const people = program.command('person').description('people');
  people
    .command('remove')
    .description('remove a person from an organisation: their tokens are refused from now on, and every device they approved and join key they created stops working')
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--person <who>', 'email address of a member, or person id (usr_…)')
    .action(async (options: { org: string; person: string }) => {
      const removed = await removeOrganisationMember(await context.services(), options.org, options.person);
      context.print(`${person(removed.person)} was removed from ${removed.organisationId}; their devices and join keys no longer work. \`platform person set-role\` re-admits them.`);
    });
  people
    .command('set-role')
    .description("set a person's role in an organisation")
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--person <who>', 'email address of a member, or person id (usr_…)')
    .addOption(new Option('--role <role>', 'organisation role').choices(ORGANISATION_ROLES).makeOptionMandatory())
    .action(async (options: { org: string; person: string; role: OrganisationRole }) => {
      const change = await setOrganisationRole(await context.services(), options.org, options.person, options.role);
      const was = change.previous === undefined ? 'new member' : change.previous === change.role ? 'unchanged' : `was ${change.previous}`;
      context.print(`${person(change.person)} is ${change.role} of ${change.organisationId} (${was}).`);
      const warning = roleClaimWarning({ id: change.organisationId, oidcRoleClaim: change.roleClaim });
      if (warning) context.warn(warning);
    });
  registerPeopleCommands(program, people, context);
}

function registerProjectCommands(program: Command, context: CliContext): void {
  const project = program.command('project').description('projects');

  project
    .command('create')
    .description('create a project in an organisation')
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--name <name>', 'project name')
    .option('--owner <who>', 'member (email address or usr_ id) who becomes the project owner')
    .option('--json', 'print the project as JSON')
    .action(async (options: { org: string; name: string; owner?: string; json?: boolean }) => {
      const view = await createProject(await context.services(), options.org, { name: options.name, owner: options.owner });
      if (options.json) return context.printJson(view);
      const owner = view.members[0];
      context.print(
        `Created project ${view.id} "${view.name}" in ${view.organisationId}; ${owner ? `owner ${person({ ...owner, id: owner.personId })}` : 'no members yet (owners and admins of the organisation manage it)'}.`,
      );
    });

  project
    .command('list')
    .description("list an organisation's projects")
    .requiredOption('--org <id>', 'organisation id')
    .option('--json', 'print JSON')
    .action(async (options: { org: string; json?: boolean }) => {
      const views: ProjectView[] = await listProjects(await context.services(), options.org);
      if (options.json) return context.printJson(views);
      if (!views.length) return context.print(`No projects in ${options.org} yet. Create one: platform project create --org ${options.org} --name <name>`);
      const rows = views.map((view) => [
        view.id,
        view.name,
        view.members.filter((member) => member.role === 'owner').map((member) => member.email ?? member.personId).join(',') || '-',
        String(view.members.length),
        view.createdAt,
      ]);
      for (const line of table(['ID', 'NAME', 'OWNERS', 'MEMBERS', 'CREATED'], rows)) context.print(line);
    });

  project
    .command('set-role')
    .description("add a member of the organisation to a project, or change their project role")
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--project <id>', 'project id (prj_…)')
    .requiredOption('--person <who>', 'email address of a member, or person id (usr_…)')
    .addOption(new Option('--role <role>', 'project role').choices(PROJECT_ROLES).makeOptionMandatory())
    .action(async (options: { org: string; project: string; person: string; role: ProjectRole }) => {
      const change = await setProjectRole(await context.services(), options.org, options.project, options.person, options.role);
      const was = change.previous === undefined ? 'new member' : change.previous === change.role ? 'unchanged' : `was ${change.previous}`;
      context.print(`${person(change.person)} is ${change.role} of project ${change.projectId} (${was}).`);
    });
  registerProjectAdminCommands(project, context);
}

function registerMigrateCommand(program: Command, context: CliContext): void {
  program
    .command('migrate')
    .description('apply pending database migrations and print what ran')
    .action(async () => {
      const dataSource = await context.database({ requireMigrated: false });
      // Before anything is created: a server or database the service cannot work with is one line
      // saying what to run (src/db/server-check.ts), exit 2.
      const refusal = await databaseRefusal(dataSource);
      if (refusal) throw usageError(refusal);
      // One transaction per migration: a failure keeps the ones before it applied and recorded.
      let applied: Migration[];
      try {
        applied = await dataSource.runMigrations({ transaction: 'each' });
      } catch (error) {
        if (isDatabaseUnavailable(error)) throw error;
        // The database refused a statement: one line naming the migration, no stack trace.
        const failed = (await new MigrationExecutor(dataSource).getPendingMigrations().catch(() => []))[0]?.name ?? 'a migration';
        const reason = reasonOf(error);
        throw new CliError(`${failed} failed (the migrations before it are applied): ${reason.reason}${reason.errorCode ? ` (${reason.errorCode})` : ''}`, EXIT_FAILED);
      }
      if (!applied.length) return context.print(`The ${context.config.database.kind} database is up to date; no migration to apply.`);
      context.print(`Applied ${applied.length} migration${applied.length === 1 ? '' : 's'} to the ${context.config.database.kind} database:`);
      for (const migration of applied) context.print(`  ${migration.name}`);
    });
}

function registerSweepCommand(program: Command, context: CliContext): void {
  program
    .command('sweep')
    .description('delete what is past its use now (as the service does every SWEEPER_INTERVAL_SECONDS), or with --dry-run say what would go')
    .option('--dry-run', 'count what a sweep would delete, by kind; delete nothing')
    .option('--json', 'print JSON')
    .action(async (options: { dryRun?: boolean; json?: boolean }) => {
      const dataSource = await context.database();
      const { config, clock, logger } = context;
      const sweeper = new Sweeper(dataSource, clock, logger, { ...config.sweeper, retention: config.retention });
      if (options.dryRun) {
        const counts = await sweeper.count();
        const total = counts.reduce((sum, count) => sum + (count.rows ?? 0), 0);
        if (options.json) {
          return context.printJson({ dryRun: true, total, kinds: counts.map(({ kind, rows }) => ({ kind: kind.name, table: kind.table, rows: rows ?? null, kept: keptFor(kind, config.retention) })) });
        }
        context.print(`A sweep now would delete ${total} row${total === 1 ? '' : 's'} (nothing was deleted: --dry-run):`);
        const rows = counts.map(({ kind, rows: found }) => [kind.name, kind.table, found === undefined ? '-' : String(found), keptFor(kind, config.retention)]);
        for (const line of table(['KIND', 'TABLE', 'ROWS', 'KEPT AFTER ITS END'], rows)) context.print(line);
        return;
      }
      const result = await sweeper.sweep({ force: true });
      if (result.outcome === 'skipped') throw refusedError(`nothing was deleted: ${result.reason ?? 'skipped'}; try again in a moment`);
      const total = Object.values(result.deleted).reduce((sum, rows) => sum + rows, 0);
      if (options.json) return context.printJson({ dryRun: false, total, deleted: result.deleted });
      context.print(`Deleted ${total} row${total === 1 ? '' : 's'}.`);
      const rows = Object.entries(result.deleted).filter(([, count]) => count > 0).map(([kind, count]) => [kind, String(count)]);
      if (rows.length) for (const line of table(['KIND', 'ROWS'], rows)) context.print(line);
    });
}

/**
 * Commander checks required options before unknown ones, so `--emial a@b` would be told
 * "required option '--email <email>' not specified", which sends a person looking in the wrong
 * place. A command that runs an action names its first unknown option first.
 */
class StrictCommand extends Command {
  private unknownSeen: string[] = [];

  override createCommand(name?: string): Command {
    return new StrictCommand(name);
  }

  override parseOptions(args: string[]): { operands: string[]; unknown: string[] } {
    const parsed = super.parseOptions(args);
    this.unknownSeen = parsed.unknown;
    return parsed;
  }

  /** Commander's own step (called before its unknown-option check); the unknown option goes first. */
  _checkForMissingMandatoryOptions(): void {
    const first = this.unknownSeen[0];
    const internals = this as unknown as { _actionHandler?: unknown; _allowUnknownOption?: boolean; unknownOption(flag: string): never };
    if (internals._actionHandler && !internals._allowUnknownOption && first?.startsWith('-')) internals.unknownOption(first);
    (Command.prototype as unknown as { _checkForMissingMandatoryOptions(this: Command): void })._checkForMissingMandatoryOptions.call(this);
  }
}

export function buildProgram(context: CliContext, deps: Pick<CliDependencies, 'stdout' | 'stderr'>): Command {
  const program = new StrictCommand('platform')
    .description('Administer a Platform API deployment. Settings come from the environment (DATABASE_URL, PLATFORM_DEPLOYMENT, …) as for the service.')
    // Set before any subcommand is added: subcommands copy these settings when created.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => deps.stdout(text),
      writeErr: (text) => deps.stderr(text),
      outputError: (text, write) => write(`platform: ${text.replace(/^error: /, '')}`),
    })
    .showHelpAfterError('(add --help for usage)')
    .option('--env-file <path>', 'read settings from this file too (KEY=value lines; a variable set in the environment wins over it, an empty one does not)')
    .option('--verbose', 'print the JSON log lines (audit lines among them) on stderr too')
    .option('--log-file <path>', `append the JSON log lines (audit lines among them) to this file (default: ${LOG_DESTINATION_HELP})`)
    .hook('preAction', (command) => {
      const options = command.opts<{ envFile?: string; verbose?: boolean; logFile?: string }>();
      context.useEnvFile(options.envFile);
      context.useLogOptions(options);
    });
  registerOrganisationCommands(program, context);
  registerProjectCommands(program, context);
  registerDeviceCommands(program, context);
  registerJoinKeyCommands(program, context);
  registerPolicyCommands(program, context);
  registerAuditCommand(program, context);
  registerMigrateCommand(program, context);
  registerSweepCommand(program, context);
  registerDiscoverCommand(program, { write: (text) => deps.stdout(text) });
  return program;
}

/** Runs one command line; answers the exit code. Expected failures print one line, no stack. */
export async function runCli(argv: readonly string[], deps: CliDependencies): Promise<number> {
  const context = new CliContext(deps);
  const program = buildProgram(context, deps);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT_OK;
  } catch (error) {
    return report(error, deps);
  } finally {
    await context.close().catch(() => undefined);
  }
}

function report(error: unknown, deps: CliDependencies): number {
  if (error instanceof CommanderError) {
    // Commander has printed its message already. Help and version are successes; a command's
    // own `command.error()` keeps its code; every other parse failure is a usage error.
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.exitCode === 0) return EXIT_OK;
    if (error.code === 'commander.error') return error.exitCode;
    return EXIT_USAGE;
  }
  if (error instanceof CliError) {
    deps.stderr(`platform: ${error.message}\n`);
    return error.exitCode;
  }
  if (error instanceof ConfigError) {
    deps.stderr(`${error.lines('platform: configuration error: ')}\n`);
    return EXIT_USAGE;
  }
  if (error instanceof ApiError) {
    // A rule of a service the API shares: its status says which kind of refusal it is.
    deps.stderr(`platform: ${error.message}${error.code === 'not_found' || error.code === 'invalid_request' ? '' : ` (${error.code})`}\n`);
    return exitCodeOfStatus(error.status);
  }
  if (isConnectionError(error)) {
    deps.stderr(`platform: the database stopped answering: ${(error as Error).message}\n`);
    return EXIT_UNAVAILABLE;
  }
  // A bug, not a refusal: the stack is what a report needs.
  deps.stderr(`platform: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  return EXIT_FAILED;
}

/** A driver error that means the database went away (MySQL/MariaDB), not a bug. */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown; driverError?: { code?: unknown } } | null)?.driverError?.code ?? (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|PROTOCOL_CONNECTION_LOST|ER_CON_COUNT_ERROR|SQLITE_CANTOPEN|SQLITE_BUSY)$/.test(code);
}
