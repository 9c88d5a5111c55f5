import { describe, expect, it } from '@jest/globals';
import { AbilityBuilder, createMongoAbility, subject } from '@casl/ability';
import { abilityOf, defineAbilityFor, type Action, type Actor, type AppAbility } from '../../policies/index.js';
import type { OrganisationRole, ProjectRole, TokenKind } from '../../src/auth/principal.js';
import { ACTIONS, computeAbilityMatrix, renderAbilityMatrix, SUBJECTS } from '../../src/cli/abilities.js';

const ORG = 'org_a';
const OTHER_ORG = 'org_b';

function actor(kind: TokenKind, role: OrganisationRole | undefined, projectRoles: Record<string, ProjectRole> = {}): Actor {
  return { kind, organisationId: ORG, personId: 'usr_1', role, projectRoles: new Map(Object.entries(projectRoles)) };
}

function can(who: Actor, action: Action, type: 'Organisation' | 'Project', record: Record<string, string>): boolean {
  return defineAbilityFor(who).can(action, subject(type, { ...record }) as never);
}

const ownOrganisation = { id: ORG };
const otherOrganisation = { id: OTHER_ORG };
const project = (id: string, organisationId = ORG) => ({ id, organisationId });

describe('policies: organisation', () => {
  it('lets owners and admins update (rename) their organisation, not members', () => {
    for (const role of ['owner', 'admin'] as const) {
      expect(can(actor('person', role), 'update', 'Organisation', ownOrganisation)).toBe(true);
      expect(can(actor('cloud-session', role), 'update', 'Organisation', ownOrganisation)).toBe(true);
    }
    expect(can(actor('person', 'member'), 'update', 'Organisation', ownOrganisation)).toBe(false);
    expect(can(actor('cloud-session', 'member'), 'update', 'Organisation', ownOrganisation)).toBe(false);
  });

  it('lets every caller of the organisation read it', () => {
    for (const kind of ['person', 'device', 'cloud-session'] as const) {
      expect(can(actor(kind, 'member'), 'read', 'Organisation', ownOrganisation)).toBe(true);
    }
  });

  it('shows nothing of another organisation, whatever the role', () => {
    for (const role of ['owner', 'admin', 'member'] as const) {
      for (const action of ACTIONS) expect(can(actor('person', role), action, 'Organisation', otherOrganisation)).toBe(false);
    }
  });

  it('never lets a device change the organisation, even one approved by an owner', () => {
    expect(can(actor('device', 'owner'), 'update', 'Organisation', ownOrganisation)).toBe(false);
  });
});

describe('policies: project', () => {
  it('gives organisation owners and admins every project of their organisation', () => {
    for (const role of ['owner', 'admin'] as const) {
      for (const action of ['read', 'update', 'delete', 'manage-members'] as const) {
        expect(can(actor('person', role), action, 'Project', project('prj_any'))).toBe(true);
      }
    }
  });

  it('lets a member create a project in their organisation but read none they do not belong to', () => {
    const member = actor('person', 'member');
    expect(can(member, 'create', 'Project', project('prj_new'))).toBe(true);
    expect(can(member, 'create', 'Project', project('prj_new', OTHER_ORG))).toBe(false);
    expect(can(member, 'read', 'Project', project('prj_any'))).toBe(false);
  });

  it('lets a project viewer and contributor read their project but not change it', () => {
    for (const role of ['viewer', 'contributor'] as const) {
      const who = actor('person', 'member', { prj_mine: role });
      expect(can(who, 'read', 'Project', project('prj_mine'))).toBe(true);
      for (const action of ['update', 'delete', 'manage-members'] as const) {
        expect(can(who, action, 'Project', project('prj_mine'))).toBe(false);
      }
      expect(can(who, 'read', 'Project', project('prj_other'))).toBe(false);
    }
  });

  it('lets a project owner manage their project and no other', () => {
    const owner = actor('person', 'member', { prj_mine: 'owner' });
    for (const action of ['read', 'update', 'delete', 'manage-members'] as const) {
      expect(can(owner, action, 'Project', project('prj_mine'))).toBe(true);
      expect(can(owner, action, 'Project', project('prj_other'))).toBe(false);
    }
  });

  it('lets a device read the projects of its person, and only read them', () => {
    const device = actor('device', 'member', { prj_mine: 'owner' });
    expect(can(device, 'read', 'Project', project('prj_mine'))).toBe(true);
    expect(can(device, 'update', 'Project', project('prj_mine'))).toBe(false);
    expect(can(device, 'read', 'Project', project('prj_other'))).toBe(false);
  });

  it("refuses a project of another organisation even when its id is one the caller holds a role in", () => {
    const owner = actor('person', 'member', { prj_mine: 'owner' });
    expect(can(owner, 'read', 'Project', project('prj_mine', OTHER_ORG))).toBe(false);
    expect(can(actor('person', 'owner'), 'read', 'Project', project('prj_any', OTHER_ORG))).toBe(false);
  });
});

describe('policies: cloud agent runs', () => {
  const run = (id: string, deviceId: string, organisationId = ORG) => subject('CloudAgentRun', { id, organisationId, deviceId });
  const inProject = (projectId: string, organisationId = ORG) => subject('CloudAgentRun', { organisationId, projectId });
  const workbench: Actor = { ...actor('device', undefined), deviceId: 'dev_1', deviceKind: 'workbench', projectRoles: new Map([['prj_mine', 'viewer']]) };
  const node: Actor = { ...actor('device', undefined), deviceId: 'dev_2', deviceKind: 'node' };
  const credential: Actor = { ...actor('run-credential', undefined), deviceId: 'dev_1', runId: 'run_1' };

  it('lets a workbench register runs in the projects its person holds a role in, and report and end only its own', () => {
    const ability = defineAbilityFor(workbench);
    expect(ability.can('create', inProject('prj_mine') as never)).toBe(true);
    expect(ability.can('create', inProject('prj_theirs') as never)).toBe(false);
    expect(ability.can('create', inProject('prj_mine', OTHER_ORG) as never)).toBe(false);
    expect(ability.can('create', subject('CloudAgentRun', { organisationId: ORG }) as never)).toBe(false);
    expect(ability.can('update', run('run_1', 'dev_1') as never)).toBe(true);
    expect(ability.can('update', run('run_9', 'dev_9') as never)).toBe(false);
    expect(ability.can('update', run('run_1', 'dev_1', OTHER_ORG) as never)).toBe(false);
    expect(ability.can('relay', run('run_1', 'dev_1') as never)).toBe(false);
  });

  it('never lets an organisation role stand in for a project role: an owner\'s or admin\'s workbench outside the project registers nothing there', () => {
    for (const role of ['owner', 'admin', 'member'] as const) {
      const outside = defineAbilityFor({ ...workbench, role, projectRoles: new Map() });
      expect(outside.can('create', inProject('prj_mine') as never)).toBe(false);
      // Still a workbench: the rule exists (a node's refusal is another answer, 403).
      expect(outside.can('create', 'CloudAgentRun')).toBe(true);
    }
  });

  it('never lets a node register, report or end a run, whoever approved it', () => {
    for (const role of ['owner', 'admin', 'member'] as const) {
      const ability = defineAbilityFor({ ...node, role, projectRoles: new Map([['prj_mine', 'owner']]) });
      expect(ability.can('create', inProject('prj_mine') as never)).toBe(false);
      expect(ability.can('create', 'CloudAgentRun')).toBe(false);
      expect(ability.can('update', run('run_2', 'dev_2') as never)).toBe(false);
    }
  });

  it('lets a run credential reach its own run only, and a person none of it', () => {
    const ability = defineAbilityFor(credential);
    expect(ability.can('relay', run('run_1', 'dev_1') as never)).toBe(true);
    expect(ability.can('relay', run('run_2', 'dev_1') as never)).toBe(false);
    expect(ability.can('relay', run('run_1', 'dev_1', OTHER_ORG) as never)).toBe(false);
    expect(ability.can('update', run('run_1', 'dev_1') as never)).toBe(false);
    for (const kind of ['person', 'cloud-session'] as const) {
      const person = defineAbilityFor(actor(kind, 'owner'));
      for (const action of ['create', 'update', 'relay'] as const) expect(person.can(action, run('run_1', 'dev_1') as never)).toBe(false);
    }
  });

  it('does not hand one device the ability built for another (abilities are cached per caller)', () => {
    expect(defineAbilityFor(workbench).can('update', run('run_1', 'dev_1') as never)).toBe(true);
    expect(defineAbilityFor({ ...workbench, deviceId: 'dev_3' }).can('update', run('run_1', 'dev_1') as never)).toBe(false);
    expect(defineAbilityFor({ ...workbench, deviceKind: 'node' }).can('create', inProject('prj_mine') as never)).toBe(false);
  });
});

describe('policies: team, member, invitation', () => {
  const allows = (who: Actor, action: Action, type: string, record: Record<string, unknown>) => defineAbilityFor(who).can(action, subject(type, { ...record }) as never);
  const member = (personId: string, role: OrganisationRole, newRole: OrganisationRole | null = null, organisationId = ORG) => ({ organisationId, personId, role, newRole });
  const invitation = (role: OrganisationRole, email = 'x@example.test', organisationId = ORG) => ({ organisationId, role, email });

  it('lets any signed-in Cloud person create a team, and nobody else', () => {
    for (const role of ['owner', 'admin', 'member'] as const) expect(allows(actor('cloud-session', role), 'create', 'Team', {})).toBe(true);
    for (const kind of ['person', 'device', 'run-credential'] as const) expect(allows(actor(kind, 'owner'), 'create', 'Team', {})).toBe(false);
  });

  it('lets every member list the members, and no device', () => {
    for (const role of ['owner', 'admin', 'member'] as const) expect(allows(actor('cloud-session', role), 'read', 'Member', member('usr_2', 'owner'))).toBe(true);
    expect(allows(actor('device', 'owner'), 'read', 'Member', member('usr_2', 'member'))).toBe(false);
  });

  it('lets owners change any role; admins only among admins and members; members none', () => {
    const owner = actor('cloud-session', 'owner');
    for (const [from, to] of [['member', 'owner'], ['owner', 'admin'], ['admin', 'member']] as const) expect(allows(owner, 'update', 'Member', member('usr_2', from, to))).toBe(true);
    const admin = actor('cloud-session', 'admin');
    expect(allows(admin, 'update', 'Member', member('usr_2', 'member', 'admin'))).toBe(true);
    expect(allows(admin, 'update', 'Member', member('usr_2', 'admin', 'member'))).toBe(true);
    expect(allows(admin, 'update', 'Member', member('usr_2', 'member', 'owner'))).toBe(false);
    expect(allows(admin, 'update', 'Member', member('usr_2', 'owner', 'admin'))).toBe(false);
    expect(allows(actor('cloud-session', 'member'), 'update', 'Member', member('usr_2', 'member', 'admin'))).toBe(false);
    expect(allows(actor('cloud-session', 'member'), 'update', 'Member', member('usr_1', 'member', 'admin'))).toBe(false);
  });

  it('lets owners remove anyone, admins anyone but owners, and everyone themselves', () => {
    expect(allows(actor('cloud-session', 'owner'), 'delete', 'Member', member('usr_2', 'owner'))).toBe(true);
    expect(allows(actor('cloud-session', 'admin'), 'delete', 'Member', member('usr_2', 'admin'))).toBe(true);
    expect(allows(actor('cloud-session', 'admin'), 'delete', 'Member', member('usr_2', 'owner'))).toBe(false);
    expect(allows(actor('cloud-session', 'member'), 'delete', 'Member', member('usr_2', 'member'))).toBe(false);
    for (const role of ['owner', 'admin', 'member'] as const) expect(allows(actor('cloud-session', role), 'delete', 'Member', member('usr_1', role))).toBe(true);
  });

  it('reaches no member of another organisation, themselves included', () => {
    for (const action of ACTIONS) {
      expect(allows(actor('cloud-session', 'owner'), action, 'Member', member('usr_2', 'member', 'admin', OTHER_ORG))).toBe(false);
      expect(allows(actor('cloud-session', 'member'), action, 'Member', member('usr_1', 'member', null, OTHER_ORG))).toBe(false);
    }
  });

  it('lets owners invite as anything and admins as admin or member; members never', () => {
    for (const role of ['owner', 'admin', 'member'] as const) {
      expect(allows(actor('cloud-session', 'owner'), 'create', 'Invitation', invitation(role))).toBe(true);
      expect(allows(actor('cloud-session', 'member'), 'create', 'Invitation', invitation(role))).toBe(false);
    }
    expect(allows(actor('cloud-session', 'admin'), 'create', 'Invitation', invitation('admin'))).toBe(true);
    expect(allows(actor('cloud-session', 'admin'), 'create', 'Invitation', invitation('owner'))).toBe(false);
    expect(allows(actor('cloud-session', 'admin'), 'read', 'Invitation', invitation('owner'))).toBe(true);
    expect(allows(actor('cloud-session', 'admin'), 'delete', 'Invitation', invitation('owner'))).toBe(false);
    expect(allows(actor('cloud-session', 'member'), 'read', 'Invitation', invitation('member'))).toBe(false);
    for (const action of ACTIONS) expect(allows(actor('cloud-session', 'owner'), action, 'Invitation', invitation('member', 'x@example.test', OTHER_ORG))).toBe(false);
  });

  it('lets a Cloud person accept an invitation to an address their methods verified, in any organisation, and nothing else', () => {
    const invitee = { ...actor('cloud-session', 'member'), verifiedEmails: ['me@example.test'] };
    expect(allows(invitee, 'accept', 'Invitation', invitation('owner', 'me@example.test', OTHER_ORG))).toBe(true);
    expect(allows(invitee, 'accept', 'Invitation', invitation('member', 'someone@example.test', OTHER_ORG))).toBe(false);
    expect(allows(actor('cloud-session', 'owner'), 'accept', 'Invitation', invitation('member', 'me@example.test'))).toBe(false);
    expect(allows({ ...actor('device', 'owner'), verifiedEmails: ['me@example.test'] }, 'accept', 'Invitation', invitation('member', 'me@example.test'))).toBe(false);
  });

  it('lets a project member leave a project, and nobody remove another through ProjectMember', () => {
    const viewer = actor('cloud-session', 'member', { prj_mine: 'viewer' });
    expect(allows(viewer, 'delete', 'ProjectMember', { organisationId: ORG, projectId: 'prj_mine', personId: 'usr_1' })).toBe(true);
    expect(allows(viewer, 'delete', 'ProjectMember', { organisationId: ORG, projectId: 'prj_mine', personId: 'usr_2' })).toBe(false);
    expect(allows(viewer, 'delete', 'ProjectMember', { organisationId: ORG, projectId: 'prj_other', personId: 'usr_1' })).toBe(false);
    expect(allows(viewer, 'delete', 'ProjectMember', { organisationId: OTHER_ORG, projectId: 'prj_mine', personId: 'usr_1' })).toBe(false);
    expect(allows(viewer, 'read', 'ProjectMember', { organisationId: ORG, projectId: 'prj_mine', personId: 'usr_2' })).toBe(true);
    expect(allows(actor('cloud-session', 'admin'), 'read', 'ProjectMember', { organisationId: ORG, projectId: 'prj_other', personId: 'usr_2' })).toBe(true);
  });
});

describe('policies: picture', () => {
  const picture = (projectId: string, organisationId = ORG) => subject('Picture', { organisationId, projectId });
  const allows = (who: Actor, action: Action, record: ReturnType<typeof picture>) => defineAbilityFor(who).can(action, record);

  it('lets every project role read its pictures, and only contributors and owners write them, devices as their person', () => {
    for (const kind of ['device', 'person'] as const) {
      const viewer = actor(kind, 'member', { prj_mine: 'viewer' });
      expect(allows(viewer, 'read', picture('prj_mine'))).toBe(true);
      for (const action of ['create', 'update', 'delete'] as const) expect(allows(viewer, action, picture('prj_mine'))).toBe(false);
      for (const role of ['contributor', 'owner'] as const) {
        const writer = actor(kind, 'member', { prj_mine: role });
        for (const action of ['read', 'create', 'update', 'delete'] as const) expect(allows(writer, action, picture('prj_mine'))).toBe(true);
      }
    }
  });

  it('gives organisation owners and admins nothing in projects they are not members of, through a device or not', () => {
    for (const kind of ['device', 'person', 'cloud-session'] as const) {
      for (const role of ['owner', 'admin'] as const) {
        for (const action of ACTIONS) expect(allows(actor(kind, role, { prj_mine: 'owner' }), action, picture('prj_other'))).toBe(false);
      }
    }
  });

  it("reaches no other organisation's project with the same id, and nothing for a run credential", () => {
    const owner = actor('device', 'owner', { prj_mine: 'owner' });
    for (const action of ACTIONS) expect(allows(owner, action, picture('prj_mine', OTHER_ORG))).toBe(false);
    for (const action of ACTIONS) expect(allows(actor('run-credential', undefined, { prj_mine: 'owner' }), action, picture('prj_mine'))).toBe(false);
  });
});

describe('ability matrix', () => {
  const matrix = computeAbilityMatrix();
  const cell = (subjectName: string, action: Action, column: string) => {
    const row = matrix.rows.find((candidate) => candidate.subject === subjectName && candidate.action === action);
    if (!row) throw new Error(`no row for ${subjectName} ${action}`);
    return row.cells[column]!;
  };

  it('has a column for each organisation role of each token kind and each project role', () => {
    const keys = matrix.columns.map((column) => column.key);
    for (const role of ['owner', 'admin', 'member']) {
      expect(keys).toEqual(expect.arrayContaining([`person:${role}`, `device:${role}`, `cloud-session:${role}`]));
    }
    expect(keys).toEqual(expect.arrayContaining(['run-credential', 'project:owner', 'project:contributor', 'project:viewer']));
  });

  it('reads the key rules off the real policies', () => {
    expect(cell('Organisation', 'update', 'person:member').text).toBe('✗');
    expect(cell('Organisation', 'update', 'person:admin').text).toBe('✓');
    expect(cell('Project', 'read', 'project:viewer')).toMatchObject({ grant: 'some', only: ['their projects'] });
    expect(cell('Project', 'update', 'project:viewer').grant).toBe('none');
    expect(cell('Project', 'update', 'project:owner')).toMatchObject({ grant: 'some', only: ['their projects'] });
    expect(cell('Project', 'delete', 'person:owner').grant).toBe('all');
    expect(cell('Project', 'read', 'person:member').grant).toBe('none');
    expect(cell('Picture', 'read', 'project:viewer')).toMatchObject({ grant: 'some', only: ['in their projects'] });
    expect(cell('Picture', 'update', 'project:viewer').grant).toBe('none');
    expect(cell('Picture', 'update', 'project:contributor')).toMatchObject({ grant: 'some', only: ['in their projects'] });
    expect(cell('Picture', 'read', 'person:owner').grant).toBe('none');
    // Project membership is one rule: a device registers runs only where its person has a role.
    expect(cell('CloudAgentRun', 'create', 'device:owner').grant).toBe('none');
    expect(cell('CloudAgentRun', 'create', 'device:project-viewer').only).toEqual(expect.arrayContaining(['its own runs in their projects']));
    expect(cell('CloudAgentRun', 'create', 'device:project-viewer').only).not.toContain('its own runs in other projects');
    expect(cell('Picture', 'read', 'device:owner').grant).toBe('none');
    expect(cell('Picture', 'read', 'device:project-viewer')).toMatchObject({ grant: 'some', only: ['in their projects'] });
  });

  it('finds no grant that reaches into another organisation', () => {
    const leaks = matrix.rows.flatMap((row) =>
      Object.entries(row.cells)
        .filter(([, value]) => value.crossesOrganisations)
        .map(([column]) => `${row.subject} ${row.action} ${column}`),
    );
    expect(leaks).toEqual([]);
  });

  it('accounts for every subject and action exactly once: as a row or as granted to nobody', () => {
    const seen = [...matrix.rows, ...matrix.grantedToNobody].map(({ subject: s, action }) => `${s} ${action}`);
    expect(seen).toHaveLength(SUBJECTS.length * ACTIONS.length);
    expect(new Set(seen).size).toBe(seen.length);
    expect(matrix.grantedToNobody).toEqual(expect.arrayContaining([{ subject: 'Organisation', action: 'delete' }]));
  });

  it('flags a rule that forgets the organisation', () => {
    const leaky = (who: Actor): AppAbility => {
      const builder = new AbilityBuilder<AppAbility>(createMongoAbility);
      if (who.role === 'member') builder.can('read', 'Project');
      return builder.build();
    };
    const leakyMatrix = computeAbilityMatrix(leaky);
    const read = leakyMatrix.rows.find((row) => row.subject === 'Project' && row.action === 'read')!;
    expect(read.cells['person:member']).toMatchObject({ grant: 'all', crossesOrganisations: true });
    expect(read.cells['person:member']!.text).toContain('⚠');
    expect(renderAbilityMatrix(leakyMatrix)).toContain('a bug in the rules');
  });

  it('refuses to guess when a rule reads a field its sample records lack', () => {
    const unknownField = (): AppAbility => {
      const builder = new AbilityBuilder<AppAbility>(createMongoAbility);
      builder.can('read', 'Project', { $or: [{ organisationId: ORG }, { teamId: 'team_1' }] } as never);
      return builder.build();
    };
    expect(() => computeAbilityMatrix(unknownField)).toThrow('no sample Project records with teamId');
  });

  it('renders a Markdown table with one line per granted pair', () => {
    const markdown = renderAbilityMatrix(matrix);
    const tableLines = markdown.split('\n').filter((line) => line.startsWith('| '));
    expect(tableLines[0]).toContain('| Subject | Action | person owner |');
    expect(tableLines).toHaveLength(matrix.rows.length + 1);
    expect(markdown).toContain('| Organisation | update | ✓ | ✓ | ✗ |');
    expect(markdown).toContain('| Invitation | accept |');
    expect(markdown).toContain('- Member: create, manage-members, approve, accept');
    expect(markdown).toContain('Nothing of another organisation is allowed to anyone');
  });
});

describe('policies: abilityOf', () => {
  const principal = (role: OrganisationRole): Readonly<Omit<Actor, 'projectRoles'>> => Object.freeze({ kind: 'person' as const, organisationId: ORG, personId: `usr_${role}`, role });

  it('keeps one ability per principal object, with the rules of that principal', () => {
    const owner = principal('owner');
    const member = principal('member');
    expect(abilityOf(owner)).toBe(abilityOf(owner));
    expect(abilityOf(owner).can('update', subject('Organisation', { ...ownOrganisation }) as never)).toBe(true);
    expect(abilityOf(member).can('update', subject('Organisation', { ...ownOrganisation }) as never)).toBe(false);
    expect(abilityOf(member).can('read', subject('Organisation', { ...otherOrganisation }) as never)).toBe(false);
  });

  it('answers as defineAbilityFor does for the same caller without project roles', () => {
    for (const role of ['owner', 'admin', 'member'] as const) {
      const who = principal(role);
      for (const action of ACTIONS) {
        for (const record of [ownOrganisation, otherOrganisation]) {
          expect(abilityOf(who).can(action, subject('Organisation', { ...record }) as never)).toBe(can({ ...who, projectRoles: new Map() }, action, 'Organisation', record));
        }
      }
    }
  });
});
