import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { DataSource } from 'typeorm';
import { bootstrapLocalhost } from '../../src/bootstrap.js';
import type { OrganisationView } from '../../src/cli/organisations.js';
import type { ProjectView } from '../../src/cli/projects.js';
import { loadConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { OrganisationService } from '../../src/modules/organisation/service.js';
import { ProjectService } from '../../src/modules/projects/service.js';
import { ManualClock } from '../../src/util/clock.js';
import { auditsOf, runCliCapturing, type CliOutcome } from '../support/cli.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

/** The admin command line, run in process against a fresh database (SQLite, or MariaDB in `services`). */

interface Opened {
  database: TestDatabase;
  dataSource: DataSource;
  close(): Promise<void>;
}

async function openDatabase(): Promise<Opened> {
  const database = await freshDatabase();
  const dataSource = createDataSource(database.config);
  await dataSource.initialize();
  return {
    database,
    dataSource,
    close: async () => {
      await dataSource.destroy();
      await database.drop();
    },
  };
}

type Outcome = CliOutcome;

const clock = new ManualClock(Date.UTC(2026, 2, 1, 9, 0, 0));

async function runOn(opened: Opened | undefined, args: string[], env: Record<string, string> = {}): Promise<Outcome> {
  return runCliCapturing(args, {
    env: { PLATFORM_DEPLOYMENT: 'self-hosted', ...(opened ? { DATABASE_URL: opened.database.url } : {}), ...env },
    clock,
    ...(opened ? { dataSource: opened.dataSource } : {}),
  });
}

/** A refusal is one line on stderr, nothing on stdout, and no stack trace. */
function expectRefusal(outcome: Outcome, code: number, message: string | RegExp): void {
  expect(outcome.stdout).toBe('');
  const lines = outcome.stderr.trim().split('\n');
  expect(lines[0]).toMatch(typeof message === 'string' ? new RegExp(`^platform: .*${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`) : message);
  expect(outcome.stderr).not.toMatch(/\n[^\S\n]+at /);
  expect(outcome.code).toBe(code);
}

let main: Opened;
const cli = (args: string[], env?: Record<string, string>) => runOn(main, args, env);
const organisations = () => new OrganisationService(main.dataSource, clock);

async function createOrg(name: string, extra: string[] = []): Promise<OrganisationView> {
  const outcome = await cli(['org', 'create', '--name', name, '--json', ...extra]);
  expect(outcome).toMatchObject({ code: 0, stderr: '' });
  expect(auditsOf(outcome)).toEqual([expect.objectContaining({ action: 'organisation.created', actor: { kind: 'cli' } })]);
  return JSON.parse(outcome.stdout) as OrganisationView;
}

/** A person who signed in to the organisation once, as the person-token resolver records them. */
async function signedIn(organisationId: string, subject: string, email: string, issuer = 'https://idp.cli.test') {
  const organisation = (await organisations().findById(organisationId))!;
  return (await organisations().signIn(organisation, { issuer, subject, email, name: subject })).person;
}

beforeAll(async () => {
  main = await openDatabase();
  const migrated = await cli(['migrate']);
  expect(migrated.code).toBe(0);
});
afterAll(() => main.close());

describe('platform migrate', () => {
  let empty: Opened;
  beforeAll(async () => {
    empty = await openDatabase();
  });
  afterAll(() => empty.close());

  it('refuses to work on a database that is not migrated, naming the fix', async () => {
    expectRefusal(await runOn(empty, ['org', 'list']), 5, 'run `platform migrate` first');
  });

  it('applies the pending migrations, prints them, then has nothing left to do', async () => {
    const names = empty.dataSource.migrations.map((migration) => migration.name!);
    expect(names[0]).toBe('Foundation1763740000000');
    const first = await runOn(empty, ['migrate']);
    expect(first.code).toBe(0);
    const kind = empty.database.config.kind;
    expect(first.stdout).toBe(
      `Applied ${names.length} migration${names.length === 1 ? '' : 's'} to the ${kind} database:\n${names.map((name) => `  ${name}\n`).join('')}`,
    );
    const second = await runOn(empty, ['migrate']);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/up to date; no migration to apply/);
    // An empty list says what to do next.
    expect((await runOn(empty, ['org', 'list'])).stdout).toBe('No organisations yet. Create one: platform org create --name <name> --host <host name>\n');
    expect((await runOn(empty, ['org', 'list'], { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.example' })).stdout).toBe(
      'No organisations yet. Create one: platform org create --name <name> --kind team\n',
    );
  });
});

describe('what a person reads', () => {
  it('keeps audit lines in the log, out of stdout and stderr, unless --verbose', async () => {
    const quiet = await cli(['org', 'create', '--name', 'Quiet Co']);
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toMatch(/^Created organisation org_\w+ "Quiet Co"\./);
    expect(`${quiet.stdout}${quiet.stderr}`).not.toContain('audit');
    expect(quiet.stderrLog).toEqual([]);
    expect(auditsOf(quiet)).toEqual([expect.objectContaining({ action: 'organisation.created' })]);

    const verbose = await cli(['--verbose', 'org', 'create', '--name', 'Verbose Co']);
    expect(verbose.code).toBe(0);
    expect(verbose.stderrLog).toEqual([expect.objectContaining({ msg: 'audit organisation.created', audit: expect.objectContaining({ action: 'organisation.created' }) })]);
  });

  it('appends the log lines to --log-file, readable by its owner only', async () => {
    const { mkdtemp, readFile, rm, stat } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'cli-log-'));
    try {
      const file = join(dir, 'state', 'cli.log');
      const outcome = await cli(['--log-file', file, 'org', 'create', '--name', 'Logged Co']);
      expect(outcome.code).toBe(0);
      expect(outcome.log).toEqual([]);
      expect(outcome.stderr).not.toContain('audit');
      const lines = (await readFile(file, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { audit?: { action: string } });
      expect(lines.map((line) => line.audit?.action)).toEqual(['organisation.created']);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('sends the log to a file at a terminal, and leaves it on stderr for programs', async () => {
    const { defaultLogSink, terminalLogFile } = await import('../../src/cli/log-destination.js');
    expect(defaultLogSink(false, {})).toBeUndefined();
    expect(typeof defaultLogSink(true, { XDG_STATE_HOME: '/state' })).toBe('function');
    expect(terminalLogFile({ XDG_STATE_HOME: '/state' })).toBe('/state/platform/cli.log');
    expect(terminalLogFile({ HOME: '/home/ann' })).toBe('/home/ann/.local/state/platform/cli.log');
  });

  it('names an unknown option rather than the required one it was probably meant to be', async () => {
    const typo = await cli(['bootstrap', '--org', 'org_x', '--emial', 'a@b.example']);
    expect(typo.code).toBe(2);
    expect(typo.stdout).toBe('');
    expect(typo.stderr).toMatch(/^platform: unknown option '--emial'\n\(Did you mean --email\?\)/);
    expect(typo.stderr).not.toContain('required option');
    const alone = await cli(['org', 'list', '--jsn']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/^platform: unknown option '--jsn'/);
    // A missing required option is still said when nothing unknown was given.
    expect((await cli(['bootstrap', '--org', 'org_x'])).stderr).toMatch(/required option '--email <email>' not specified/);
  });

  it('gives the next step when a list is empty', async () => {
    const org = await createOrg('Empty Lists', ['--host', 'empty-lists.example']);
    const said = async (args: string[]) => {
      const outcome = await cli(args);
      expect(outcome.code).toBe(0);
      return outcome.stdout;
    };
    expect(await said(['project', 'list', '--org', org.id])).toBe(`No projects in ${org.id} yet. Create one: platform project create --org ${org.id} --name <name>\n`);
    expect(await said(['person', 'list', '--org', org.id])).toBe(`No people in ${org.id} yet. Make its first owner: platform bootstrap --org ${org.id} --email <address>\n`);
    expect(await said(['join-key', 'list', '--org', org.id])).toBe(
      `No join keys in ${org.id} yet. Create one: platform join-key create --org ${org.id} --as <owner email> --description <what for>\n`,
    );
    // An organisation named by its host name is configured as by its id.
    expect(await said(['org', 'configure', 'empty-lists.example', '--name', 'Empty Lists Renamed'])).toMatch(new RegExp(`^Configured organisation ${org.id} "Empty Lists Renamed"\\.`));
    expect(await said(['device', 'list', '--org', org.id])).toMatch(new RegExp(`^No devices in ${org.id} yet\\. .*platform join-key create --org ${org.id} `));
  });
});

describe('platform org create and list', () => {
  it('creates an enterprise organisation with hosts and sign-in settings, and lists it', async () => {
    const created = await createOrg('Acme', [
      '--host', 'Platform.Acme.example.', '--host', 'acme-2.example',
      '--issuer', 'https://idp.acme.example/realms/acme', '--client-id', 'workbench', '--api-scope', 'platform',
      '--audience', 'platform-api', '--role-claim', 'platform_role',
    ]);
    expect(created).toMatchObject({
      id: expect.stringMatching(/^org_[0-9a-z]{16}$/),
      name: 'Acme',
      kind: 'enterprise',
      plan: 'enterprise',
      edition: 'enterprise',
      hosts: ['acme-2.example', 'platform.acme.example'],
      oidc: { issuer: 'https://idp.acme.example/realms/acme', clientId: 'workbench', apiScope: 'platform', audience: 'platform-api', roleClaim: 'platform_role' },
      createdAt: '2026-03-01T09:00:00.000Z',
    });

    const listed = await cli(['org', 'list', '--json']);
    expect((JSON.parse(listed.stdout) as OrganisationView[]).find((view) => view.id === created.id)).toEqual(created);
    const table = await cli(['org', 'list']);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+KIND\s+PLAN\s+HOSTS\s+ISSUER$/);
    expect(table.stdout).toMatch(new RegExp(`${created.id}\\s+Acme\\s+enterprise\\s+enterprise\\s+acme-2.example,platform.acme.example\\s+https://idp.acme.example/realms/acme`));
  });

  it('says in words what was created and what is still missing', async () => {
    const outcome = await cli(['org', 'create', '--name', 'Wordy', '--host', 'wordy.example']);
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toMatch(/^Created organisation org_\w+ "Wordy"\.\n/);
    expect(outcome.stdout).toContain('hosts:    wordy.example');
    expect(outcome.stdout).toContain('sign-in:  not configured');
  });

  it('refuses a host name another organisation is served at, and creates nothing', async () => {
    const first = await createOrg('Holder', ['--host', 'held.example']);
    const before = (await organisations().list()).length;
    expectRefusal(await cli(['org', 'create', '--name', 'Squatter', '--host', 'HELD.example']), 4, `host held.example already serves organisation ${first.id}`);
    expect(await organisations().list()).toHaveLength(before);
  });

  it('refuses an issuer that already signs in another organisation', async () => {
    const oidc = ['--issuer', 'https://idp.shared.example', '--client-id', 'c', '--api-scope', 's', '--audience', 'a'];
    const first = await createOrg('First issuer', ['--host', 'first-issuer.example', ...oidc]);
    expectRefusal(await cli(['org', 'create', '--name', 'Second', '--host', 'second-issuer.example', ...oidc]), 4, `already signs in organisation ${first.id}`);
  });

  it('refuses OpenID Connect settings given in part, naming what is missing', async () => {
    expectRefusal(
      await cli(['org', 'create', '--name', 'Partial', '--issuer', 'https://idp.partial.example', '--client-id', 'c']),
      2,
      'also give --api-scope, --audience',
    );
    expectRefusal(await cli(['org', 'create', '--name', 'Partial', '--role-claim', 'roles']), 2, 'also give --issuer, --client-id, --api-scope, --audience');
  });

  it('refuses an issuer that is not https, and http on loopback unless the deployment allows it', async () => {
    const rest = ['--client-id', 'c', '--api-scope', 's', '--audience', 'a'];
    expectRefusal(await cli(['org', 'create', '--name', 'X', '--issuer', 'http://idp.example', ...rest]), 2, '--issuer must be an https URL');
    expectRefusal(await cli(['org', 'create', '--name', 'X', '--issuer', 'idp.example', ...rest]), 2, '--issuer must be an absolute https URL');
    expectRefusal(await cli(['org', 'create', '--name', 'X', '--issuer', 'https://idp.example/?tenant=1', ...rest]), 2, 'query or fragment');
    expectRefusal(await cli(['org', 'create', '--name', 'X', '--issuer', 'http://127.0.0.1:8080', ...rest]), 2, 'OIDC_ALLOW_HTTP_LOOPBACK=true');

    const allowed = await cli(['org', 'create', '--name', 'Local IdP', '--json', '--issuer', 'http://127.0.0.1:8080', ...rest], { OIDC_ALLOW_HTTP_LOOPBACK: 'true' });
    expect(allowed.code).toBe(0);
    expect((JSON.parse(allowed.stdout) as OrganisationView).oidc?.issuer).toBe('http://127.0.0.1:8080');
  });

  it('refuses what a self-hosted deployment cannot serve and malformed input', async () => {
    expectRefusal(await cli(['org', 'create', '--name', 'Team', '--kind', 'team']), 2, 'enterprise organisations only');
    expectRefusal(await cli(['org', 'create', '--name', 'Bad host', '--host', 'https://bad.example']), 2, 'is not a host name');
    expectRefusal(await cli(['org', 'create', '--name', '   ']), 2, '--name must be 1 to 200 characters');
    const badKind = await cli(['org', 'create', '--name', 'X', '--kind', 'galactic']);
    expect(badKind.code).toBe(2);
    expect(badKind.stderr).toMatch(/^platform: option '--kind <kind>' argument 'galactic' is invalid/);
    const missing = await cli(['org', 'create']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/required option '--name <name>' not specified/);
  });

  it('asks for the kind on Cloud, where personal and team organisations live', async () => {
    const cloud = { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.example' };
    expectRefusal(await cli(['org', 'create', '--name', 'Cloud team'], cloud), 2, '--kind is required on a Cloud deployment');
    const team = await cli(['org', 'create', '--name', 'Cloud team', '--kind', 'team', '--json'], cloud);
    expect(team.code).toBe(0);
    expect(JSON.parse(team.stdout)).toMatchObject({ kind: 'team', plan: 'teams', edition: 'teams', hosts: [] });
  });
});

describe('platform org configure', () => {
  it('renames, changes the plan, adds and removes hosts', async () => {
    const org = await createOrg('Before', ['--host', 'old.configure.example']);
    const outcome = await cli([
      'org', 'configure', org.id, '--name', 'After', '--plan', 'teams',
      '--host', 'new.configure.example', '--remove-host', 'old.configure.example', '--json',
    ]);
    expect(outcome).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(outcome.stdout)).toMatchObject({ id: org.id, name: 'After', plan: 'teams', kind: 'enterprise', hosts: ['new.configure.example'] });
    expect(await organisations().findByHost('old.configure.example')).toBeNull();
    expect((await organisations().findByHost('new.configure.example'))?.id).toBe(org.id);
  });

  it('changes one sign-in setting and keeps the others', async () => {
    const org = await createOrg('Partial change', [
      '--host', 'partial-change.example', '--issuer', 'https://idp.partial-change.example', '--client-id', 'old-client',
      '--api-scope', 'platform', '--audience', 'platform-api', '--role-claim', 'roles',
    ]);
    const outcome = await cli(['org', 'configure', org.id, '--client-id', 'new-client', '--json']);
    expect(outcome.code).toBe(0);
    expect((JSON.parse(outcome.stdout) as OrganisationView).oidc).toEqual({
      issuer: 'https://idp.partial-change.example', clientId: 'new-client', apiScope: 'platform', audience: 'platform-api', roleClaim: 'roles',
    });
  });

  it('refuses a part of the sign-in settings on an organisation that has none', async () => {
    const org = await createOrg('No sign-in yet', ['--host', 'no-sign-in.example']);
    expectRefusal(await cli(['org', 'configure', org.id, '--issuer', 'https://idp.none.example']), 2, 'also give --client-id, --api-scope, --audience');
    expect((await organisations().findById(org.id))?.oidcIssuer).toBeNull();
  });

  it("refuses to take another organisation's host, or to remove it", async () => {
    const owner = await createOrg('Host owner', ['--host', 'owned.configure.example']);
    const other = await createOrg('Other', ['--host', 'other.configure.example']);
    expectRefusal(await cli(['org', 'configure', other.id, '--host', 'owned.configure.example']), 4, `already serves organisation ${owner.id}`);
    expectRefusal(await cli(['org', 'configure', other.id, '--remove-host', 'owned.configure.example']), 4, `serves organisation ${owner.id}, not ${other.id}`);
    expect(await organisations().hostsOf(owner.id)).toEqual(['owned.configure.example']);
    expect(await organisations().hostsOf(other.id)).toEqual(['other.configure.example']);
  });

  it('treats adding a host the organisation already has as done', async () => {
    const org = await createOrg('Idempotent', ['--host', 'same.configure.example']);
    const outcome = await cli(['org', 'configure', org.id, '--host', 'same.configure.example', '--json']);
    expect(outcome.code).toBe(0);
    expect((JSON.parse(outcome.stdout) as OrganisationView).hosts).toEqual(['same.configure.example']);
  });

  it('warns when the last host name goes', async () => {
    const org = await createOrg('Going dark', ['--host', 'dark.configure.example']);
    const outcome = await cli(['org', 'configure', org.id, '--remove-host', 'dark.configure.example']);
    expect(outcome.code).toBe(0);
    expect(outcome.stderr).toMatch(/^platform: warning: org_\w+ is now served at no host name/);
  });

  it('refuses an unknown organisation and a command that changes nothing', async () => {
    expectRefusal(await cli(['org', 'configure', 'org_doesnotexist', '--name', 'X']), 3, 'no organisation org_doesnotexist');
    const org = await createOrg('Unchanged', ['--host', 'unchanged.configure.example']);
    expectRefusal(await cli(['org', 'configure', org.id]), 2, 'nothing to change');
  });
});

describe('platform person set-role', () => {
  let org: OrganisationView;
  beforeAll(async () => {
    org = await createOrg('Roles', ['--host', 'roles.example']);
  });

  it('gives a member a role by email address, and reports what it was', async () => {
    const alice = await signedIn(org.id, 'alice', 'Alice@Roles.example');
    const outcome = await cli(['person', 'set-role', '--org', org.id, '--person', 'alice@roles.example', '--role', 'admin']);
    expect(outcome).toMatchObject({ code: 0, stderr: '' });
    expect(outcome.stdout).toBe(`alice <alice@roles.example> (${alice.id}) is admin of ${org.id} (was member).\n`);
    expect(await organisations().roleOf(org.id, alice.id)).toBe('admin');
    // One audit line on stderr (JSON), naming who, what and which organisation.
    expect(auditsOf(outcome)).toEqual([
      { action: 'person.role_changed', organisationId: org.id, actor: { kind: 'cli' }, target: { personId: alice.id, role: 'admin', previous: 'member' } },
    ]);
    expect(outcome.log[0]).toMatchObject({ level: 30, msg: 'audit person.role_changed' });
  });

  it('writes no audit line for a refused change', async () => {
    const outcome = await cli(['person', 'set-role', '--org', org.id, '--person', 'nobody@roles.example', '--role', 'admin']);
    expect(outcome.code).toBe(3);
    expect(auditsOf(outcome)).toEqual([]);
  });

  it('gives a role by person id', async () => {
    const bob = await signedIn(org.id, 'bob', 'bob@roles.example');
    const outcome = await cli(['person', 'set-role', '--org', org.id, '--person', bob.id, '--role', 'owner']);
    expect(outcome.code).toBe(0);
    expect(await organisations().roleOf(org.id, bob.id)).toBe('owner');
  });

  it("never finds by email a person who only belongs to another organisation", async () => {
    const elsewhere = await createOrg('Elsewhere', ['--host', 'elsewhere.example']);
    const mallory = await signedIn(elsewhere.id, 'mallory', 'ceo@roles.example', 'https://idp.elsewhere.example');
    expectRefusal(await cli(['person', 'set-role', '--org', org.id, '--person', 'ceo@roles.example', '--role', 'owner']), 3, 'no member of the organisation has the address ceo@roles.example');
    expect(await organisations().roleOf(org.id, mallory.id)).toBeUndefined();
  });

  it('refuses an address two members share, naming both', async () => {
    const first = await signedIn(org.id, 'twin-1', 'twin@roles.example');
    const second = await signedIn(org.id, 'twin-2', 'twin@roles.example', 'https://idp.other-roles.example');
    const outcome = await cli(['person', 'set-role', '--org', org.id, '--person', 'twin@roles.example', '--role', 'owner']);
    expectRefusal(outcome, 4, '2 members of the organisation have the address twin@roles.example');
    expect(outcome.stderr).toContain(first.id);
    expect(outcome.stderr).toContain(second.id);
    expect(await organisations().roleOf(org.id, first.id)).toBe('member');
  });

  it('refuses unknown people, unknown organisations and unknown roles', async () => {
    expectRefusal(await cli(['person', 'set-role', '--org', org.id, '--person', 'usr_nobody', '--role', 'admin']), 3, 'no person usr_nobody');
    expectRefusal(await cli(['person', 'set-role', '--org', 'org_nowhere', '--person', 'usr_nobody', '--role', 'admin']), 3, 'no organisation org_nowhere');
    expectRefusal(await cli(['person', 'set-role', '--org', org.id, '--person', 'alice', '--role', 'admin']), 2, 'must be an email address or a person id');
    const badRole = await cli(['person', 'set-role', '--org', org.id, '--person', 'alice@roles.example', '--role', 'god']);
    expect(badRole.code).toBe(2);
    expect(badRole.stderr).toMatch(/Allowed choices are owner, admin, member/);
  });
});

describe('platform project', () => {
  let org: OrganisationView;
  let carol: { id: string };
  let dave: { id: string };
  beforeAll(async () => {
    org = await createOrg('Projects', ['--host', 'projects.example']);
    carol = await signedIn(org.id, 'carol', 'carol@projects.example');
    dave = await signedIn(org.id, 'dave', 'dave@projects.example');
  });

  it('creates a project with an owner found by email, and lists it', async () => {
    const outcome = await cli(['project', 'create', '--org', org.id, '--name', ' Website ', '--owner', 'carol@projects.example', '--json']);
    expect(outcome).toMatchObject({ code: 0, stderr: '' });
    const project = JSON.parse(outcome.stdout) as ProjectView;
    expect(project).toEqual({
      id: expect.stringMatching(/^prj_[0-9a-z]{16}$/),
      organisationId: org.id,
      name: 'Website',
      members: [{ personId: carol.id, name: 'carol', email: 'carol@projects.example', role: 'owner' }],
      createdAt: '2026-03-01T09:00:00.000Z',
    });
    expect(await new ProjectService(main.dataSource, clock).rolesOf(org.id, carol.id)).toEqual(new Map([[project.id, 'owner']]));

    const listed = await cli(['project', 'list', '--org', org.id]);
    expect(listed.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+OWNERS\s+MEMBERS\s+CREATED$/);
    expect(listed.stdout).toMatch(new RegExp(`${project.id}\\s+Website\\s+carol@projects.example\\s+1\\s+2026-03-01T09:00:00.000Z`));
  });

  it('creates a project without members', async () => {
    const outcome = await cli(['project', 'create', '--org', org.id, '--name', 'Ownerless']);
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toMatch(/^Created project prj_\w+ "Ownerless" in org_\w+; no members yet/);
  });

  it('refuses an owner who is not a member of the organisation, and creates nothing', async () => {
    const elsewhere = await createOrg('Project elsewhere', ['--host', 'project-elsewhere.example']);
    const outsider = await signedIn(elsewhere.id, 'outsider', 'outsider@projects.example', 'https://idp.project-elsewhere.example');
    const before = (await cli(['project', 'list', '--org', org.id, '--json'])).stdout;
    expectRefusal(await cli(['project', 'create', '--org', org.id, '--name', 'X', '--owner', outsider.id]), 3, `${outsider.id} is not a member of the organisation`);
    expectRefusal(await cli(['project', 'create', '--org', org.id, '--name', 'X', '--owner', 'outsider@projects.example']), 3, 'no member of the organisation has the address');
    expect((await cli(['project', 'list', '--org', org.id, '--json'])).stdout).toBe(before);
  });

  it('refuses an unknown organisation', async () => {
    expectRefusal(await cli(['project', 'create', '--org', 'org_nowhere', '--name', 'X']), 3, 'no organisation org_nowhere');
    expectRefusal(await cli(['project', 'list', '--org', 'org_nowhere']), 3, 'no organisation org_nowhere');
  });

  it('sets project roles, and keeps the last owner', async () => {
    const created = JSON.parse((await cli(['project', 'create', '--org', org.id, '--name', 'Roles', '--owner', carol.id, '--json'])).stdout) as ProjectView;
    const added = await cli(['project', 'set-role', '--org', org.id, '--project', created.id, '--person', 'dave@projects.example', '--role', 'viewer']);
    expect(added.stdout).toBe(`dave <dave@projects.example> (${dave.id}) is viewer of project ${created.id} (new member).\n`);

    expectRefusal(await cli(['project', 'set-role', '--org', org.id, '--project', created.id, '--person', carol.id, '--role', 'contributor']), 4, 'a project keeps at least one owner');

    expect((await cli(['project', 'set-role', '--org', org.id, '--project', created.id, '--person', dave.id, '--role', 'owner'])).code).toBe(0);
    const demoted = await cli(['project', 'set-role', '--org', org.id, '--project', created.id, '--person', carol.id, '--role', 'contributor']);
    expect(demoted.stdout).toContain('(was owner)');
    expect(auditsOf(demoted)).toEqual([
      {
        action: 'project.member_role_set',
        organisationId: org.id,
        actor: { kind: 'cli' },
        target: { projectId: created.id, personId: carol.id, from: 'owner', to: 'contributor' },
      },
    ]);
    const members = await new ProjectService(main.dataSource, clock).members(org.id, created.id);
    expect(new Map(members.map((member) => [member.personId, member.role]))).toEqual(
      new Map([
        [carol.id, 'contributor'],
        [dave.id, 'owner'],
      ]),
    );
  });

  it('answers a project of another organisation as absent', async () => {
    const created = JSON.parse((await cli(['project', 'create', '--org', org.id, '--name', 'Hidden', '--json'])).stdout) as ProjectView;
    const other = await createOrg('Project other', ['--host', 'project-other.example']);
    expectRefusal(await cli(['project', 'set-role', '--org', other.id, '--project', created.id, '--person', carol.id, '--role', 'viewer']), 3, 'no such project');
  });
});

describe('project service', () => {
  it('removes members but never the last owner', async () => {
    const org = await createOrg('Removal', ['--host', 'removal.example']);
    const erin = await signedIn(org.id, 'erin', 'erin@removal.example');
    const frank = await signedIn(org.id, 'frank', 'frank@removal.example');
    const projects = new ProjectService(main.dataSource, clock);
    const project = await projects.create(org.id, { name: 'Removal', owner: erin.id });
    await projects.setMemberRole(org.id, project.id, frank.id, 'contributor');

    await expect(projects.removeMember(org.id, project.id, erin.id)).rejects.toMatchObject({ status: 409, code: 'last_owner' });
    await projects.removeMember(org.id, project.id, frank.id);
    await expect(projects.removeMember(org.id, project.id, frank.id)).rejects.toMatchObject({ status: 404 });
    expect((await projects.members(org.id, project.id)).map((member) => member.personId)).toEqual([erin.id]);
  });

  it('lists only the projects a person belongs to when asked', async () => {
    const org = await createOrg('Visible', ['--host', 'visible.example']);
    const gina = await signedIn(org.id, 'gina', 'gina@visible.example');
    const projects = new ProjectService(main.dataSource, clock);
    const mine = await projects.create(org.id, { name: 'Mine', owner: gina.id });
    await projects.create(org.id, { name: 'Not mine' });
    expect((await projects.list(org.id, { memberId: gina.id })).map((project) => project.id)).toEqual([mine.id]);
    expect(await projects.list(org.id)).toHaveLength(2);
  });
});

describe('command line edges', () => {
  it('stops on a bad configuration with one line naming the variable, before touching a database', async () => {
    const outcome = await runOn(undefined, ['org', 'list'], { DATABASE_URL: 'postgres://db.example/platform' });
    expectRefusal(outcome, 2, /^platform: configuration error: DATABASE_URL: /);
    expect(outcome.stderr.trim().split('\n')).toHaveLength(1);
    expect(outcome.stderr).not.toContain('db.example');
  });

  it('names every bad variable on a line of its own', async () => {
    const outcome = await runOn(undefined, ['org', 'list'], { DATABASE_URL: 'postgres://db.example/platform', LOG_LEVEL: 'loud' });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr.trim().split('\n')).toEqual([
      'platform: configuration error: DATABASE_URL: must start with sqlite:, mysql:// or mariadb:// (the value is not shown, it may hold a password)',
      'platform: configuration error: LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
    ]);
  });

  it('shows help without reading the configuration', async () => {
    const outcome = await runOn(undefined, ['--help'], { DATABASE_URL: 'postgres://broken' });
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toMatch(/Usage: platform/);
    for (const command of ['org', 'person', 'project', 'migrate', 'discover']) expect(outcome.stdout).toContain(command);
  });

  it('answers an unknown command as a usage error', async () => {
    const outcome = await cli(['organisation', 'list']);
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/^platform: unknown command 'organisation'/);
  });
});

describe('first start (bootstrap)', () => {
  let empty: Opened;
  beforeAll(async () => {
    empty = await openDatabase();
    await empty.dataSource.runMigrations();
  });
  afterAll(() => empty.close());

  const config = (env: Record<string, string> = {}) => loadConfig({ PLATFORM_DEPLOYMENT: 'self-hosted', PORT: '3000', ...env });

  it('does nothing on Cloud or when switched off', async () => {
    const service = new OrganisationService(empty.dataSource, clock);
    const printed: string[] = [];
    await bootstrapLocalhost(config({ PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.example' }), service, (line) => printed.push(line));
    await bootstrapLocalhost(config({ PLATFORM_BOOTSTRAP_LOCALHOST: 'false' }), service, (line) => printed.push(line));
    expect(await service.count()).toBe(0);
    expect(printed).toEqual([]);
  });

  it('serves an empty self-hosted database at localhost, once, with a next step the command line accepts', async () => {
    const service = new OrganisationService(empty.dataSource, clock);
    const printed: string[] = [];
    await bootstrapLocalhost(config(), service, (line) => printed.push(line));
    const [created] = await service.list();
    expect(created).toMatchObject({ kind: 'enterprise', plan: 'enterprise' });
    expect(await service.hostsOf(created!.id)).toEqual(['localhost']);
    expect(printed[0]).toContain(created!.id);

    const again: string[] = [];
    await bootstrapLocalhost(config(), service, (line) => again.push(line));
    expect(await service.count()).toBe(1);
    expect(again).toEqual([]);

    // The printed hint, with its placeholders filled in, must be a command this CLI runs.
    const hint = printed.join('\n').match(/npx platform (org configure[\s\S]*?)\n[^\S\n]+npx platform org list/)![1]!;
    const args = hint
      .replace(/\\\n/g, ' ')
      .replace('<client id>', 'workbench')
      .replace('<scope>', 'platform')
      .replace('<audience>', 'platform-api')
      .replace('[--role-claim <claim>]', '--role-claim roles')
      .trim()
      .split(/\s+/);
    const outcome = await runOn(empty, [...args, '--json']);
    expect(outcome).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(outcome.stdout)).toMatchObject({
      id: created!.id,
      hosts: ['platform.example.com'], // the hint takes localhost away: the real organisation must not answer there
      oidc: { issuer: 'https://idp.example.com', clientId: 'workbench', apiScope: 'platform', audience: 'platform-api', roleClaim: 'roles' },
    });

    // The next hint, the first owner, is a command this CLI runs too.
    const owner = printed.join('\n').match(/npx platform (bootstrap .*)$/m)![1]!.split(/\s+/);
    const bootstrapped = await runOn(empty, owner);
    expect(bootstrapped.code).toBe(0);
    expect(bootstrapped.stdout).toMatch(/^you@example\.com \(usr_\w+\) was added to org_\w+ as owner/);
    // The organisation now takes roles from the provider's claim (`--role-claim roles` above): said so.
    expect(bootstrapped.stderr).toMatch(/^platform: warning: org_\w+ takes roles from the identity provider's claim "roles"/);
  });

  it('leaves a database that already has an organisation alone', async () => {
    const other = await openDatabase();
    try {
      await other.dataSource.runMigrations();
      const service = new OrganisationService(other.dataSource, clock);
      await service.create({ name: 'Existing', kind: 'enterprise', hosts: ['platform.existing.example'] });
      const printed: string[] = [];
      await bootstrapLocalhost(config(), service, (line) => printed.push(line));
      expect(await service.count()).toBe(1);
      expect(await service.findByHost('localhost')).toBeNull();
      expect(printed).toEqual([]);
    } finally {
      await other.close();
    }
  });
});
