import { type Command, Option } from 'commander';
import { ORGANISATION_ROLES, PROJECT_ROLES, type OrganisationRole, type ProjectRole } from '../auth/principal.js';
import { JOIN_KEY_DEFAULT_TTL_SECONDS } from '../modules/devices/join-keys.js';
import { usageError, type CliContext } from './context.js';
import { createJoinKey, decideDeviceCode, listDevices, listJoinKeys, parseDuration, revokeDevice, revokeJoinKey } from './devices.js';
import { addPerson, bootstrapOwner, listPeople, type AddedPerson } from './people.js';
import { parseRevisionNumber, policyRevisions, publishPolicy, restorePolicy, showPolicy, type PublishView } from './policy.js';
import { deleteProject, listProjectMembers, removeProjectMember, setProjectMember } from './projects.js';
import { table } from './table.js';
import { actorText, AUDIT_CLI_DEFAULT_LIMIT, auditEntries, targetText } from './audit-log.js';

/**
 * The commands an administrator of a self-hosted install needs without a browser: the first
 * owner, people, devices, join keys, device codes, policy, project deletion and members. Each
 * is a thin shell over a function of people.ts / devices.ts / policy.ts / projects.ts.
 */

const ORG_HELP = 'organisation id (org_…) or a host name it is served at';

function who(person: { id: string; name: string; email: string | null }): string {
  return person.email && person.email !== person.name ? `${person.name} <${person.email}> (${person.id})` : `${person.name} (${person.id})`;
}

/** What `bootstrap` and `person add` print: the person as JSON or a sentence, then any role-claim warning. */
function reportAdded(context: CliContext, added: AddedPerson, json: boolean | undefined): void {
  if (json) {
    context.printJson(added);
    if (added.roleClaimWarning) context.warn(added.roleClaimWarning);
    return;
  }
  const change = added.existing
    ? `is ${added.role} of ${added.organisationId} (${added.previous === added.role ? 'unchanged' : `was ${added.previous ?? 'not a member'}`})`
    : `was added to ${added.organisationId} as ${added.role}; they become this person when they first sign in with the organisation's identity provider using that address`;
  context.print(`${who(added.person)} ${change}.`);
  if (added.roleClaimWarning) context.warn(added.roleClaimWarning);
}

export function registerPeopleCommands(program: Command, people: Command, context: CliContext): void {
  program
    .command('bootstrap')
    .description("make the first owner of an organisation, by email address, before anyone has signed in")
    .requiredOption('--org <org>', ORG_HELP)
    .requiredOption('--email <email>', "the owner's email address, as the identity provider will send it")
    .option('--name <name>', 'their name until they first sign in (default: the address)')
    .option('--force', 'add the owner even though the organisation has one already')
    .option('--json', 'print the result as JSON')
    .action(async (options: { org: string; email: string; name?: string; force?: boolean; json?: boolean }) => {
      const added = await bootstrapOwner(await context.services(), options.org, { email: options.email, name: options.name, force: options.force === true });
      reportAdded(context, added, options.json);
    });

  people
    .command('add')
    .description('add a person to an organisation by email address; they become that person at their first sign-in')
    .requiredOption('--org <org>', ORG_HELP)
    .requiredOption('--email <email>', 'their email address, as the identity provider will send it')
    .option('--name <name>', 'their name until they first sign in (default: the address)')
    .addOption(new Option('--role <role>', 'organisation role').choices(ORGANISATION_ROLES).default('member'))
    .option('--json', 'print the result as JSON')
    .action(async (options: { org: string; email: string; name?: string; role: OrganisationRole; json?: boolean }) => {
      const added = await addPerson(await context.services(), options.org, { email: options.email, name: options.name, role: options.role });
      reportAdded(context, added, options.json);
    });

  people
    .command('list')
    .description("the people of an organisation, with their roles")
    .requiredOption('--org <org>', ORG_HELP)
    .option('--json', 'print JSON')
    .action(async (options: { org: string; json?: boolean }) => {
      const views = await listPeople(await context.services(), options.org);
      if (options.json) return context.printJson(views);
      if (!views.length) return context.print(`No people in ${options.org} yet. Make its first owner: platform bootstrap --org ${options.org} --email <address>`);
      const rows = views.map((view) => [view.id, view.name, view.email ?? '-', view.role, view.signedIn ? 'yes' : 'not yet', view.joinedAt]);
      for (const line of table(['ID', 'NAME', 'EMAIL', 'ROLE', 'SIGNED IN', 'JOINED'], rows)) context.print(line);
    });
}

export function registerDeviceCommands(program: Command, context: CliContext): void {
  const device = program.command('device').description('enrolled devices and device codes');
  device
    .command('list')
    .description("an organisation's enrolled devices, newest first")
    .requiredOption('--org <org>', ORG_HELP)
    .option('--json', 'print JSON')
    .action(async (options: { org: string; json?: boolean }) => {
      const views = await listDevices(await context.services(), options.org);
      if (options.json) return context.printJson(views);
      if (!views.length) {
        return context.print(
          `No devices in ${options.org} yet. A workbench enrols with a device code a member approves at /device, or with a join key: platform join-key create --org ${options.org} --as <owner email> --description <what for>`,
        );
      }
      const rows = views.map((view) => [
        view.id,
        view.name,
        view.kind,
        view.status,
        view.approver.name ? `${view.approver.name} (${view.approver.id})` : view.approver.id,
        view.lastSeenAt ?? 'never',
      ]);
      for (const line of table(['ID', 'NAME', 'KIND', 'STATUS', 'APPROVER', 'LAST SEEN'], rows)) context.print(line);
    });
  device
    .command('revoke')
    .description('revoke a device: every token it holds stops working at once; it must enrol again')
    .argument('<id>', 'device id (dev_…)')
    .requiredOption('--org <org>', ORG_HELP)
    .action(async (id: string, options: { org: string }) => {
      const revoked = await revokeDevice(await context.services(), options.org, id);
      context.print(
        revoked.alreadyRevoked ? `${revoked.kind} ${revoked.id} "${revoked.name}" was already revoked.` : `Revoked ${revoked.kind} ${revoked.id} "${revoked.name}": its tokens no longer work.`,
      );
    });

  for (const decision of ['approve', 'deny'] as const) {
    const command = device
      .command(decision)
      .description(
        decision === 'approve'
          ? 'approve a device asking to enrol, by the code it shows, as a member allowed to (a node needs an owner or admin)'
          : 'deny a device asking to enrol, by the code it shows',
      )
      .argument('<user_code>', 'the code the device shows (XXXX-XXXX)')
      .requiredOption('--org <org>', ORG_HELP);
    if (decision === 'approve') command.requiredOption('--as <person>', 'the member who approves (recorded as the approver): email address or person id (usr_…)');
    else command.option('--as <person>', "the member who denies, by the approval page's rules; without it the operator denies any pending code of the organisation");
    command
      .option('--json', 'print the result as JSON')
      .action(async (userCode: string, options: { org: string; as?: string; json?: boolean }) => {
        const decided = await decideDeviceCode(await context.services(), options.org, userCode, options.as, decision);
        if (options.json) return context.printJson(decided);
        context.print(
          decision === 'approve'
            ? `Approved ${decided.kind} "${decided.name}" (${decided.userCode}) in ${decided.organisationId} as ${decided.by?.email ?? decided.by?.id}; it receives its tokens at its next poll.`
            : `Denied ${decided.kind} "${decided.name}" (${decided.userCode}) in ${decided.organisationId}.`,
        );
      });
  }
}

export function registerJoinKeyCommands(program: Command, context: CliContext): void {
  const joinKey = program.command('join-key').description('join keys that enrol nodes without an approval step');
  joinKey
    .command('create')
    .description('create a join key; it is printed this once (the database keeps only its hash)')
    .requiredOption('--org <org>', ORG_HELP)
    .requiredOption('--as <person>', 'the owner or admin the key acts for (recorded as the approver of the nodes it enrols): email address or usr_ id')
    .requiredOption('--description <text>', 'what the key is for (shown in the list)')
    .option('--expires-in <duration>', `lifetime: seconds, or 90m, 24h, 7d (default ${JOIN_KEY_DEFAULT_TTL_SECONDS / 3600}h, at most 90d)`)
    .option('--reusable', 'enrol any number of nodes until it expires or is revoked (default: one node)')
    .option('--json', 'print the key and its record as JSON')
    .action(async (options: { org: string; as: string; description: string; expiresIn?: string; reusable?: boolean; json?: boolean }) => {
      const expiresInSeconds = options.expiresIn === undefined ? JOIN_KEY_DEFAULT_TTL_SECONDS : parseDuration(options.expiresIn);
      const created = await createJoinKey(await context.services(), options.org, {
        as: options.as,
        description: options.description,
        expiresInSeconds,
        reusable: options.reusable === true,
      });
      if (options.json) return context.printJson(created);
      context.print(created.key);
      context.warn(
        `join key ${created.joinKey.id} (${created.joinKey.reusable ? 'reusable' : 'one node'}, until ${created.joinKey.expiresAt}) is shown this once: give it to the node and keep it secret`,
      );
    });
  joinKey
    .command('list')
    .description("an organisation's join keys, newest first (never their values)")
    .requiredOption('--org <org>', ORG_HELP)
    .option('--json', 'print JSON')
    .action(async (options: { org: string; json?: boolean }) => {
      const views = await listJoinKeys(await context.services(), options.org);
      if (options.json) return context.printJson(views);
      if (!views.length) return context.print(`No join keys in ${options.org} yet. Create one: platform join-key create --org ${options.org} --as <owner email> --description <what for>`);
      const rows = views.map((view) => [view.id, view.state, view.reusable ? 'yes' : 'no', String(view.useCount), view.expiresAt, view.createdBy.name || view.createdBy.id, view.description]);
      for (const line of table(['ID', 'STATE', 'REUSABLE', 'USES', 'EXPIRES', 'CREATED BY', 'DESCRIPTION'], rows)) context.print(line);
    });
  joinKey
    .command('revoke')
    .description('revoke a join key: it stops working at once (nodes it enrolled keep working: `platform device revoke` those)')
    .argument('<id>', 'join key id (jk_…)')
    .requiredOption('--org <org>', ORG_HELP)
    .action(async (id: string, options: { org: string }) => {
      const revoked = await revokeJoinKey(await context.services(), options.org, id);
      context.print(revoked.alreadyRevoked ? `Join key ${revoked.id} was already revoked.` : `Revoked join key ${revoked.id}.`);
    });
}

function reportPublish(context: CliContext, outcome: PublishView, verb: string, json: boolean | undefined): void {
  if (json) return context.printJson(outcome);
  const where = outcome.projectId ? `project ${outcome.projectId} of ${outcome.organisationId}` : outcome.organisationId;
  if (!outcome.changed) {
    context.print(`Unchanged: the policy of ${where} is already this document (revision ${outcome.number ?? '-'}, ETag "${outcome.revision}").`);
    return;
  }
  context.print(`${verb} revision ${outcome.number} of the policy of ${where} (ETag "${outcome.revision}").`);
}

export function registerPolicyCommands(program: Command, context: CliContext): void {
  const policy = program.command('policy').description("an organisation's policy and its revisions");
  const projectOption = () => new Option('--project <id>', "a project's override (prj_…) instead of the organisation's policy");
  policy
    .command('show')
    .description('the effective policy (with --project: merged with the project override) and its revision')
    .requiredOption('--org <org>', ORG_HELP)
    .addOption(projectOption())
    .option('--json', 'print JSON')
    .action(async (options: { org: string; project?: string; json?: boolean }) => {
      const view = await showPolicy(await context.services(), options.org, options.project);
      if (options.json) return context.printJson(view);
      context.print(`revision:  ${view.revision} (ETag "${view.revision}")`);
      context.print(`published: ${view.published ? 'yes' : "no: the service's defaults apply"}`);
      context.print(JSON.stringify(view.policy, null, 2));
    });
  policy
    .command('publish')
    .description('publish a policy document from a JSON file, validated as the API validates it (JSON limits, schema, size)')
    .requiredOption('--org <org>', ORG_HELP)
    .requiredOption('--file <path>', 'the JSON document (the whole policy; with --project, the override)')
    .addOption(projectOption())
    .option('--json', 'print the effective policy after the publish as JSON')
    .action(async (options: { org: string; file: string; project?: string; json?: boolean }) => {
      reportPublish(context, await publishPolicy(await context.services(), options.org, options.file, options.project), 'Published', options.json);
    });
  policy
    .command('revisions')
    .description('stored publishes, newest first')
    .requiredOption('--org <org>', ORG_HELP)
    .addOption(projectOption())
    .option('--limit <n>', 'how many (1 to 100, default 20)', '20')
    .option('--json', 'print JSON (with the documents)')
    .action(async (options: { org: string; project?: string; limit: string; json?: boolean }) => {
      const limit = Number(options.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw usageError('--limit must be 1 to 100');
      const views = await policyRevisions(await context.services(), options.org, { projectId: options.project, limit });
      if (options.json) return context.printJson(views);
      if (!views.length) return context.print("No publishes: the service's defaults apply.");
      const rows = views.map((view) => [String(view.number), view.publishedAt, view.publishedBy ?? 'command line', view.valid ? 'yes' : 'no']);
      for (const line of table(['NUMBER', 'PUBLISHED', 'BY', 'VALID'], rows)) context.print(line);
    });
  policy
    .command('restore')
    .description('publish an earlier revision again (as a new revision; it must still validate)')
    .argument('<number>', 'the revision number (see `platform policy revisions`)')
    .requiredOption('--org <org>', ORG_HELP)
    .addOption(projectOption())
    .option('--json', 'print the effective policy after the restore as JSON')
    .action(async (number: string, options: { org: string; project?: string; json?: boolean }) => {
      const outcome = await restorePolicy(await context.services(), options.org, parseRevisionNumber(number), options.project);
      reportPublish(context, outcome, `Restored revision ${number} as`, options.json);
    });
}

export function registerProjectAdminCommands(project: Command, context: CliContext): void {
  project
    .command('delete')
    .description('delete a project; one holding pictures, cloud agent runs or ingested data needs --force')
    .argument('<id>', 'project id (prj_…)')
    .requiredOption('--org <id>', 'organisation id')
    .option('--force', 'delete what the project holds with it')
    .action(async (id: string, options: { org: string; force?: boolean }) => {
      const deleted = await deleteProject(await context.services(), options.org, id, { force: options.force === true });
      const held = [deleted.pictures ? `${deleted.pictures} picture(s)` : '', deleted.runs ? `${deleted.runs} cloud agent run(s)` : '', deleted.ingest ? 'ingested data' : ''].filter(Boolean);
      context.print(`Deleted project ${deleted.projectId}${held.length ? ` with ${held.join(', ')}` : ''}.`);
    });

  const members = project.command('members').description("a project's members");
  members
    .command('list')
    .description("a project's members with their roles")
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--project <id>', 'project id (prj_…)')
    .option('--json', 'print JSON')
    .action(async (options: { org: string; project: string; json?: boolean }) => {
      const views = await listProjectMembers(await context.services(), options.org, options.project);
      if (options.json) return context.printJson(views);
      if (!views.length) {
        return context.print(`No members in ${options.project} yet. Add one: platform project members add --org ${options.org} --project ${options.project} --person <email> --role owner`);
      }
      for (const line of table(['PERSON', 'NAME', 'EMAIL', 'ROLE', 'ADDED'], views.map((view) => [view.personId, view.name, view.email ?? '-', view.role, view.addedAt]))) {
        context.print(line);
      }
    });
  for (const mode of ['add', 'set-role'] as const) {
    members
      .command(mode)
      .description(mode === 'add' ? 'add a member of the organisation to a project' : "change a project member's role (adds them when they are not one)")
      .requiredOption('--org <id>', 'organisation id')
      .requiredOption('--project <id>', 'project id (prj_…)')
      .requiredOption('--person <who>', 'email address of a member of the organisation, or person id (usr_…)')
      .addOption(new Option('--role <role>', 'project role').choices(PROJECT_ROLES).makeOptionMandatory(mode === 'set-role').default(mode === 'add' ? 'contributor' : undefined))
      .action(async (options: { org: string; project: string; person: string; role: ProjectRole }) => {
        const change = await setProjectMember(await context.services(), options.org, options.project, options.person, options.role, mode === 'add' ? 'add' : 'set');
        const was = change.previous === undefined ? 'new member' : change.previous === change.role ? 'unchanged' : `was ${change.previous}`;
        context.print(`${who(change.person)} is ${change.role} of project ${change.projectId} (${was}).`);
      });
  }
  members
    .command('remove')
    .description('remove a member from a project (a project that has an owner keeps one)')
    .requiredOption('--org <id>', 'organisation id')
    .requiredOption('--project <id>', 'project id (prj_…)')
    .requiredOption('--person <who>', 'email address of a member of the organisation, or person id (usr_…)')
    .action(async (options: { org: string; project: string; person: string }) => {
      const removed = await removeProjectMember(await context.services(), options.org, options.project, options.person);
      context.print(`${removed.personId} was removed from project ${removed.projectId}.`);
    });
}

export function registerAuditCommand(program: Command, context: CliContext): void {
  program
    .command('audit')
    .description('the stored audit trail, newest first: every administrative change (docs/api/audit-trail.md)')
    .option('--org <org>', `${ORG_HELP} (default: every organisation)`)
    .option('--since <when>', 'from this time (RFC 3339) or this long ago (90m, 24h, 7d)')
    .option('--action <action>', 'only this action, such as policy.published')
    .option('--limit <n>', `at most this many rows (default ${AUDIT_CLI_DEFAULT_LIMIT})`, (value) => Number(value))
    .option('--json', 'print JSON')
    .action(async (options: { org?: string; since?: string; action?: string; limit?: number; json?: boolean }) => {
      const entries = await auditEntries(await context.services(), options);
      if (options.json) return context.printJson(entries);
      if (!entries.length) return context.print('No audit entries.');
      const rows = entries.map((entry) => [entry.at, ...(options.org ? [] : [entry.organisationId]), entry.action, actorText(entry.actor), targetText(entry.target)]);
      for (const line of table(['TIME', ...(options.org ? [] : ['ORGANISATION']), 'ACTION', 'ACTOR', 'TARGET'], rows)) context.print(line);
    });
}
