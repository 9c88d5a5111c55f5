import type { Logger } from 'pino';
import type { DataSource, EntityManager } from 'typeorm';
import { authorize, defineAbilityFor, permits, type AppAbility, type SubjectRecords } from '../../../policies/index.js';
import { audit, NO_AUDIT_TRAIL, type AuditTrail } from '../../audit.js';
import type { OrganisationRole } from '../../auth/principal.js';
import { isUniqueViolation, withRetries } from '../../db/errors.js';
import { ApiError, conflict, forbidden, invalidRequest, notFound } from '../../errors.js';
import { decodeCursor, pageOf, type Page } from '../../http/pagination.js';
import type { Mailer } from '../../mail/mailer.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, newSecret } from '../../util/secrets.js';
import type { MembershipRecord, OrganisationPlan, OrganisationRecord } from '../organisation/entities.js';
import { organisationSummary } from '../organisation/schemas.js';
import { cloudOrganisation } from '../organisation/service.js';
import { normaliseEmail } from '../signin/shared.js';
import type { MemberView, TeamOrganisationRows, TeamSignInMethods } from './ports.js';
import type { InvitationRecord } from './entities.js';
import { InvitationStore, type InvitationView } from './store.js';

/**
 * Cloud teams (spec 2.4, 2.7-2.9, 3, 4.5): teams, their members and roles, and invitations.
 *
 * Every change of a team's memberships runs in one transaction that first locks the team's row
 * (OrganisationStore.lockOrganisations) and then reads the memberships it decides on with locking
 * reads, the caller's own role included: changes of one team take turns, and each decides on what
 * the one before it left. So the rules hold under concurrent requests, on every path:
 * - a team always keeps at least one owner (409 `last_owner` for a demotion, removal or departure
 *   that would leave none; account deletion's 409 `sole_owner` takes the same locks);
 * - a caller acts with the role they hold when their change runs, not the one their request
 *   started with;
 * - an invitation is used once (a compare-and-set in the transaction that adds the member, so it
 *   is undone with it).
 *
 * Who may do what is asked of the rules in policies/ (member.ts, invitation.ts, team.ts,
 * organisation.ts) on the records as locked. A personal organisation is one person's own: it
 * cannot be renamed, invited into or left (400 `personal_organisation`).
 */

export const INVITATION_TOKEN_PREFIX = 'platform_iv_';
const TOKEN = /^platform_iv_[A-Za-z0-9_-]{43}$/;

export const personalOrganisation = (what: string): ApiError =>
  new ApiError(400, 'personal_organisation', `a personal organisation ${what}; create a team (POST /cloud/v1/organisations) to work with others`);

export const lastOwner = (): ApiError =>
  conflict('last_owner', 'a team always keeps at least one owner: make someone else an owner first');

const alreadyMember = (): ApiError => conflict('already_member', 'this address already belongs to a member of the team');

const invitationGone = (): ApiError => notFound('no such invitation: unknown, used, withdrawn or expired');

/** Control and format characters never reach a name (they would reach mails and consoles). */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const EVERY_UNPRINTABLE = new RegExp(UNPRINTABLE.source, 'gu');

/** A team's name: 1 to 100 characters once trimmed, printable. */
export function teamName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length < 1 || [...trimmed].length > 100) throw invalidRequest('body.name must be 1 to 100 characters, not only spaces', { field: 'body.name' });
  if (UNPRINTABLE.test(trimmed)) throw invalidRequest('body.name must not hold control or format characters', { field: 'body.name' });
  return trimmed;
}

/** A name as a plain-text mail may show it: printable, on one line, not too long. */
function mailSafe(text: string, max = 100): string {
  const cleaned = text.replace(EVERY_UNPRINTABLE, ' ').replace(/\s+/g, ' ').trim();
  return [...cleaned].slice(0, max).join('');
}

export interface Caller {
  personId: string;
}

export interface OrganisationSummary {
  id: string;
  name: string;
  kind: string;
  plan: string;
  role: string;
}

/** Cloud teams (spec 4.5): the plan of a new team, and invitations (the CLOUD_* variables). */
export interface TeamSettings {
  /** The plan a new team gets. */
  plan: OrganisationPlan;
  /** How long an invitation link works (spec 8: seven days). */
  invitationTtlSeconds: number;
  /**
   * The console's page for an invitation, with `{token}` where the token goes; unset: the link is
   * the API's public preview of the invitation, `<PLATFORM_BASE_URL>/cloud/v1/invitations/<token>`.
   */
  invitationUrl: string | undefined;
  /** Invitations one person may send per rolling hour (each sends a mail to an address they chose). */
  invitationsPerHour: number;
}

export interface TeamServiceOptions {
  config: TeamSettings;
  mailer: Mailer;
  logger: Logger;
  /** The organisation module's rows (src/app.ts passes its store). */
  organisations: TeamOrganisationRows;
  /** The sign-in module's methods (src/app.ts passes its store). */
  signInMethods: TeamSignInMethods;
  /** Where each change leaves its audit row, in its transaction. */
  trail?: AuditTrail;
}

interface InTeam {
  manager: EntityManager;
  organisations: TeamOrganisationRows;
  invitations: InvitationStore;
  organisation: OrganisationRecord;
  caller: MembershipRecord;
  ability: AppAbility;
}

export class TeamService {
  private readonly organisations: TeamOrganisationRows;
  private readonly invitations: InvitationStore;
  private readonly signIn: TeamSignInMethods;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly options: TeamServiceOptions,
  ) {
    this.organisations = options.organisations;
    this.invitations = new InvitationStore(dataSource);
    this.signIn = options.signInMethods;
  }

  private static abilityOf(organisationId: string, membership: Pick<MembershipRecord, 'personId' | 'role'>): AppAbility {
    return defineAbilityFor({ kind: 'cloud-session', organisationId, personId: membership.personId, role: membership.role, projectRoles: new Map() });
  }

  private audit(action: string, organisationId: string, caller: Caller, target: Record<string, string | number | boolean | null>): void {
    audit(this.options.logger, { action, organisationId, actor: { kind: 'cloud-session', personId: caller.personId }, target });
  }

  /** The change's audit row, in its transaction (the line above is written once it committed). */
  private async record(manager: EntityManager, action: string, organisationId: string, caller: Caller, target: Record<string, string | number | boolean | null>): Promise<void> {
    await (this.options.trail ?? NO_AUDIT_TRAIL).record(manager, { action, organisationId, actor: { kind: 'cloud-session', personId: caller.personId }, target });
  }

  /**
   * Runs `work` on a team the caller belongs to, in a transaction holding the team's lock, with
   * the caller's membership as it is now. Not a member (or no such organisation): 404.
   */
  private inTeam<T>(organisationId: string, caller: Caller, work: (team: InTeam) => Promise<T>): Promise<T> {
    return withRetries(3, () =>
      this.dataSource.transaction(async (manager) => {
        const organisations = this.organisations.withManager(manager);
        const [organisation] = await organisations.lockOrganisations([organisationId]);
        const membership = organisation ? await organisations.findMembership(organisationId, caller.personId, { lock: true }) : null;
        if (!organisation || !membership || membership.removedAt) throw notFound('no such organisation among yours');
        const ability = TeamService.inOrganisation(organisation, organisationId, membership);
        return work({ manager, organisations, invitations: this.invitations.withManager(manager), organisation, caller: membership, ability });
      }),
    );
  }

  /** Read-only checks need no lock: the caller's membership as it is. */
  private async memberOf(organisationId: string, caller: Caller): Promise<{ organisation: OrganisationRecord; ability: AppAbility; role: OrganisationRole }> {
    const membership = await this.organisations.membershipsOf(caller.personId, organisationId);
    const entry = membership[0];
    if (!entry) throw notFound('no such organisation among yours');
    return { organisation: entry.organisation, role: entry.role, ability: TeamService.inOrganisation(entry.organisation, organisationId, { personId: caller.personId, role: entry.role }) };
  }

  /**
   * The caller's ability in the organisation as stored, refusing (404) unless the path names that
   * record exactly: MySQL's collation finds `org_abc` by `ORG_ABC` too, and the rest of a request
   * (the rules' records, the rows it writes, the audit line) uses the id the path gave.
   */
  private static inOrganisation(organisation: OrganisationRecord, named: string, membership: Pick<MembershipRecord, 'personId' | 'role'>): AppAbility {
    const ability = TeamService.abilityOf(organisation.id, membership);
    authorize(ability, 'read', 'Organisation', { id: named }, () => notFound('no such organisation among yours'));
    return ability;
  }

  private static requireTeam(organisation: OrganisationRecord, what: string): void {
    if (organisation.kind !== 'team') throw personalOrganisation(what);
  }

  private static allow<T extends 'Organisation' | 'Member' | 'Invitation'>(ability: AppAbility, action: 'read' | 'create' | 'update' | 'delete', type: T, record: SubjectRecords[T], message?: string): void {
    authorize(ability, action, type, record, () => forbidden(message));
  }

  // Teams -------------------------------------------------------------------------------------

  /** A new team, the caller its owner (spec 4.5). */
  async createTeam(caller: Caller, name: string): Promise<OrganisationSummary> {
    const now = this.clock.now();
    const organisation = cloudOrganisation(teamName(name), 'team', this.options.config.plan, now);
    await this.dataSource.transaction(async (manager) => {
      const store = this.organisations.withManager(manager);
      await store.insert(organisation, []);
      await store.insertMembership({ organisationId: organisation.id, personId: caller.personId, role: 'owner', createdAt: now, removedAt: null });
      await this.record(manager, 'team.created', organisation.id, caller, { organisationId: organisation.id });
    });
    this.audit('team.created', organisation.id, caller, { organisationId: organisation.id });
    return organisationSummary({ organisation, role: 'owner' });
  }

  async rename(caller: Caller, organisationId: string, name: string): Promise<void> {
    const renamed = teamName(name);
    await this.inTeam(organisationId, caller, async ({ manager, organisations, organisation, ability }) => {
      TeamService.requireTeam(organisation, 'cannot be renamed: it carries its person\'s name');
      TeamService.allow(ability, 'update', 'Organisation', { id: organisationId }, 'only owners and admins rename a team');
      await organisations.update(organisationId, { name: renamed });
      await this.record(manager, 'organisation.renamed', organisationId, caller, { organisationId });
    });
    this.audit('organisation.renamed', organisationId, caller, { organisationId });
  }

  // Members -----------------------------------------------------------------------------------

  async members(caller: Caller, organisationId: string, query: { limit: number; cursor?: string | undefined }): Promise<Page<MemberView>> {
    const after = decodeCursor(query.cursor);
    const { ability, role } = await this.memberOf(organisationId, caller);
    TeamService.allow(ability, 'read', 'Member', { organisationId, personId: caller.personId, role, newRole: null });
    const rows = await this.organisations.membersPage(organisationId, query.limit, after);
    return pageOf(rows, query.limit, (row) => ({ createdAt: row.joinedAt, id: row.personId }));
  }

  /** Changes a member's role; answers whether anything changed. */
  async changeRole(caller: Caller, organisationId: string, personId: string, newRole: OrganisationRole): Promise<boolean> {
    const from = await this.inTeam(organisationId, caller, async ({ manager, organisations, organisation, ability }) => {
      TeamService.requireTeam(organisation, 'has one member, its owner');
      const target = await organisations.findMembership(organisationId, personId, { lock: true });
      if (!target || target.removedAt) throw notFound('no such member of the team');
      TeamService.allow(ability, 'update', 'Member', { organisationId, personId, role: target.role, newRole }, 'only owners and admins change roles, and only an owner makes or unmakes an owner');
      if (target.role === newRole) return undefined;
      if (target.role === 'owner') await this.keepAnOwner(organisations, organisationId, personId);
      await organisations.setRole(organisationId, personId, newRole);
      await this.record(manager, 'person.role_changed', organisationId, caller, { personId, from: target.role, to: newRole });
      return target.role;
    });
    if (from === undefined) return false;
    this.audit('person.role_changed', organisationId, caller, { personId, from, to: newRole });
    return true;
  }

  /**
   * Removes a member, or the caller themselves (leaving). The membership stays as a tombstone
   * (OrganisationStore.removeMember, the mechanism self-hosted removal uses too): the person's
   * sessions lose the team at their next request (membership is read on every request), and the
   * devices they approved, the join keys they created and the invitations they sent stop at once.
   */
  async removeMember(caller: Caller, organisationId: string, personId: string): Promise<void> {
    const leaving = personId === caller.personId;
    await this.inTeam(organisationId, caller, async ({ manager, organisations, organisation, ability }) => {
      TeamService.requireTeam(organisation, 'cannot be left: it is its person\'s own');
      const target = await organisations.findMembership(organisationId, personId, { lock: true });
      if (!target || target.removedAt) throw notFound('no such member of the team');
      TeamService.allow(ability, 'delete', 'Member', { organisationId, personId, role: target.role, newRole: null }, 'owners and admins remove others, and only an owner removes an owner');
      if (target.role === 'owner') await this.keepAnOwner(organisations, organisationId, personId);
      await organisations.removeMember(organisationId, personId, this.clock.now());
      await this.record(manager, leaving ? 'person.left' : 'person.removed', organisationId, caller, { personId });
    });
    this.audit(leaving ? 'person.left' : 'person.removed', organisationId, caller, { personId });
  }

  /** Refuses (409) unless an owner other than `leaving` remains; reads under the team's lock. */
  private async keepAnOwner(organisations: TeamOrganisationRows, organisationId: string, leaving: string): Promise<void> {
    const members = await organisations.activeMembers(organisationId, { lock: true });
    if (!members.some((member) => member.role === 'owner' && member.personId !== leaving)) throw lastOwner();
  }

  // Invitations -------------------------------------------------------------------------------

  async openInvitations(caller: Caller, organisationId: string, query: { limit: number; cursor?: string | undefined }): Promise<Page<InvitationView>> {
    const after = decodeCursor(query.cursor);
    const { ability } = await this.memberOf(organisationId, caller);
    TeamService.allow(ability, 'read', 'Invitation', { organisationId, role: 'member', email: '' }, 'only owners and admins see invitations');
    const rows = await this.invitations.openPage(organisationId, this.clock.now(), query.limit, after);
    return pageOf(rows, query.limit, (row) => ({ createdAt: row.createdAt, id: row.id }));
  }

  /**
   * Invites an address (spec 3): replaces its open invitation, refuses an address a member of the
   * team already signs in with (409 `already_member`), and mails the link. The link is in this
   * answer and the mail only: the token is stored as a hash.
   */
  async invite(caller: Caller, organisationId: string, input: { email: string; role: OrganisationRole; origin: string }): Promise<{ invitation: InvitationView; link: string; organisation: OrganisationRecord }> {
    const email = normaliseEmail(input.email);
    const token = newSecret(INVITATION_TOKEN_PREFIX);
    const now = this.clock.now();
    const invitation: InvitationRecord = {
      id: newId('inv'),
      organisationId,
      email,
      openEmail: email,
      role: input.role,
      tokenHash: hashSecret(token),
      invitedBy: caller.personId,
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.options.config.invitationTtlSeconds * 1000),
      usedAt: null,
      usedBy: null,
      withdrawnAt: null,
    };
    let organisation: OrganisationRecord | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        organisation = await this.inTeam(organisationId, caller, async ({ manager, organisations, invitations, organisation: team, ability }) => {
          TeamService.requireTeam(team, 'cannot be invited into: it is its person\'s own');
          TeamService.allow(ability, 'create', 'Invitation', { organisationId, role: input.role, email }, 'only owners and admins invite, and only an owner invites an owner');
          const holder = await this.personSigningInWith(email);
          if (holder) {
            const membership = await organisations.findMembership(organisationId, holder, { lock: true });
            if (membership && !membership.removedAt) throw alreadyMember();
          }
          await invitations.withdrawOpenFor(organisationId, email, now);
          await invitations.insert(invitation);
          // The invitation's id and role, never the address's token.
          await this.record(manager, 'invitation.created', organisationId, caller, { invitationId: invitation.id, role: input.role });
          return team;
        });
        break;
      } catch (error) {
        // Another invitation of the same address was made at the same moment: replace it.
        if (attempt < 3 && isUniqueViolation(error)) continue;
        throw error;
      }
    }
    const link = this.link(input.origin, token);
    const inviter = await this.organisations.findPerson(caller.personId);
    await this.mail(email, { team: organisation.name, inviter: inviter?.name ?? 'Someone', role: input.role, link, origin: input.origin, expiresAt: invitation.expiresAt });
    this.audit('invitation.created', organisationId, caller, { invitationId: invitation.id, role: input.role });
    return { invitation: { ...invitation, invitedByName: inviter?.name ?? '' }, link, organisation };
  }

  async withdraw(caller: Caller, organisationId: string, invitationId: string): Promise<void> {
    await this.inTeam(organisationId, caller, async ({ manager, invitations, ability }) => {
      // The role first, before the look-up: a member, who may not list the team's invitations,
      // must not learn from 404 against 403 which ids exist (any member's invitation is the one
      // the fewest roles may not withdraw; the invitation's own role is asked below).
      TeamService.allow(ability, 'delete', 'Invitation', { organisationId, role: 'member', email: '' }, 'only owners and admins withdraw invitations');
      const invitation = await invitations.findById(invitationId, { lock: true });
      if (!invitation || invitation.organisationId !== organisationId || !this.isOpen(invitation)) throw invitationGone();
      TeamService.allow(ability, 'delete', 'Invitation', { organisationId, role: invitation.role, email: invitation.email }, 'only owners and admins withdraw invitations, and only an owner one to become an owner');
      if (!(await invitations.withdraw(invitationId, this.clock.now()))) throw invitationGone();
      await this.record(manager, 'invitation.withdrawn', organisationId, caller, { invitationId });
    });
    this.audit('invitation.withdrawn', organisationId, caller, { invitationId });
  }

  /** What the link's holder may know (spec 2.9): the team's name, who invited, the address, the role, until when. */
  async preview(token: string): Promise<{ organisation: string; invitedBy: string; email: string; role: OrganisationRole; expiresAt: Date }> {
    const invitation = await this.openByToken(token);
    const [organisation, inviter] = await Promise.all([this.organisations.findById(invitation.organisationId), this.organisations.findPerson(invitation.invitedBy)]);
    if (!organisation || !inviter || !(await this.inviterStillMay(this.organisations, invitation, false))) throw invitationGone();
    return { organisation: organisation.name, invitedBy: inviter.name, email: invitation.email, role: invitation.role, expiresAt: invitation.expiresAt };
  }

  /**
   * Accepts an invitation (spec 3): the accepter must sign in with a method that vouches for the
   * invited address (403 `email_mismatch`); it works once (a compare-and-set in the transaction
   * that adds the member, so a failure to add them leaves it open); someone already a member is
   * refused (409 `already_member`), someone removed earlier joins again. Answers the team's
   * summary with the accepter's role.
   */
  async accept(caller: Caller, token: string): Promise<OrganisationSummary> {
    const found = await this.openByToken(token);
    const methods = await this.signIn.methodsOf(caller.personId);
    const verifiedEmails = methods.filter((method) => method.emailVerified && method.email !== null).map((method) => normaliseEmail(method.email!));
    const accepter = defineAbilityFor({ kind: 'cloud-session', organisationId: found.organisationId, personId: caller.personId, role: undefined, projectRoles: new Map(), verifiedEmails });
    authorize(accepter, 'accept', 'Invitation', { organisationId: found.organisationId, role: found.role, email: found.email }, () =>
      new ApiError(
        403,
        'email_mismatch',
        'this invitation was sent to an address none of your sign-in methods vouches for: sign in with that address, or add it to your account (POST /cloud/v1/me/sign-in-methods/link)',
      ),
    );
    const organisation = await withRetries(3, () =>
      this.dataSource.transaction(async (manager) => {
        const organisations = this.organisations.withManager(manager);
        const invitations = this.invitations.withManager(manager);
        const [team] = await organisations.lockOrganisations([found.organisationId]);
        const invitation = await invitations.findById(found.id, { lock: true });
        if (!team || !invitation || !(await this.inviterStillMay(organisations, invitation, true))) throw invitationGone();
        const now = this.clock.now();
        if (!(await invitations.use(invitation.id, caller.personId, now))) throw invitationGone();
        const membership = await organisations.findMembership(team.id, caller.personId, { lock: true });
        if (membership && !membership.removedAt) throw alreadyMember();
        if (membership) await organisations.rejoin(team.id, caller.personId, invitation.role, now);
        else await organisations.insertMembership({ organisationId: team.id, personId: caller.personId, role: invitation.role, createdAt: now, removedAt: null });
        await this.record(manager, 'invitation.accepted', team.id, caller, { invitationId: found.id, personId: caller.personId, role: found.role });
        return team;
      }),
    );
    this.audit('invitation.accepted', organisation.id, caller, { invitationId: found.id, personId: caller.personId, role: found.role });
    return organisationSummary({ organisation, role: found.role });
  }

  private isOpen(invitation: InvitationRecord): boolean {
    return invitation.openEmail !== null && invitation.expiresAt.getTime() > this.clock.now().getTime();
  }

  private async openByToken(token: string): Promise<InvitationRecord> {
    const invitation = TOKEN.test(token) ? await this.invitations.findByTokenHash(hashSecret(token)) : null;
    if (!invitation || !this.isOpen(invitation)) throw invitationGone();
    return invitation;
  }

  /** An invitation counts only while its inviter may still invite with its role (a member, owner or admin). */
  private async inviterStillMay(organisations: TeamOrganisationRows, invitation: InvitationRecord, lock: boolean): Promise<boolean> {
    const inviter = await organisations.findMembership(invitation.organisationId, invitation.invitedBy, { lock });
    if (!inviter || inviter.removedAt) return false;
    const ability = TeamService.abilityOf(invitation.organisationId, inviter);
    return permits(ability, 'create', 'Invitation', { organisationId: invitation.organisationId, role: invitation.role, email: invitation.email });
  }

  /** The person who signs in with this address, as a provider vouched for it. */
  private async personSigningInWith(email: string): Promise<string | undefined> {
    const method = await this.signIn.findVerifiedMethodByEmail(email);
    // MySQL's default collation compares `é` and `e` alike; the address must be this one exactly.
    return method && method.email === email ? method.personId : undefined;
  }

  // Links and mail ------------------------------------------------------------------------------

  /**
   * The link of an invitation: the console's page when configured, else the API's public preview
   * on the request's trusted origin (`requestOrigin`, src/http/origin.ts: PLATFORM_BASE_URL on Cloud).
   */
  private link(origin: string, token: string): string {
    const template = this.options.config.invitationUrl;
    if (template) return template.replace('{token}', token);
    return `${origin}/cloud/v1/invitations/${token}`;
  }

  private async mail(to: string, invitation: { team: string; inviter: string; role: OrganisationRole; link: string; origin: string; expiresAt: Date }): Promise<void> {
    const team = mailSafe(invitation.team);
    const inviter = mailSafe(invitation.inviter);
    const role = invitation.role === 'member' ? 'a member' : `an ${invitation.role}`;
    try {
      await this.options.mailer.send({
        kind: 'invitation',
        to,
        subject: `${inviter} invited you to ${team} on Platform`,
        text: [
          `${inviter} invited you to join the team ${team} on Platform as ${role}.`,
          '',
          'Open this link to see the invitation and accept it:',
          '',
          `    ${invitation.link}`,
          '',
          `Accept it signed in with this address (${to}). The link works once, until ${invitation.expiresAt.toISOString()}.`,
          '',
          'If you do not know this team, ignore this mail: nothing happens unless you accept.',
          '',
          `Sent by ${invitation.origin}`,
          '',
        ].join('\r\n'),
      });
    } catch (error) {
      // The invitation stands (its link is in the answer, for the inviter to pass on); the log
      // names the failure, not the mail: an SMTP error message may quote the address.
      const { code, responseCode, command } = (error ?? {}) as { code?: unknown; responseCode?: unknown; command?: unknown };
      this.options.logger.error({ mailError: { code, responseCode, command } }, 'an invitation could not be mailed');
    }
  }
}
