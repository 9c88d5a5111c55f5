import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { audit, NO_AUDIT_TRAIL, type AuditTrail } from '../../audit.js';
import { ApiError, conflict, invalidRequest, notFound } from '../../errors.js';
import { timestamp } from '../../util/clock.js';
import { organisationSummary } from '../organisation/schemas.js';
import type { OrganisationService } from '../organisation/service.js';
import type { CloudSessions } from '../signin/sessions.js';
import type { AccountSignInRows } from './ports.js';

/**
 * The signed-in person's own account (spec 4.4): profile, sign-in methods, deletion.
 */
export class AccountService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly organisations: OrganisationService,
    private readonly sessions: CloudSessions,
    private readonly logger: Logger,
    /** The sign-in module's methods and sessions (src/app.ts passes its store). */
    private readonly store: AccountSignInRows,
    /** Where each change leaves its audit row, in its transaction. */
    private readonly trail: AuditTrail = NO_AUDIT_TRAIL,
  ) {}

  private async person(personId: string) {
    const person = await this.organisations.findPerson(personId);
    // The session's person was deleted between the token check and here.
    if (!person) throw new ApiError(401, 'unauthorized', 'this account no longer exists', { headers: { 'WWW-Authenticate': 'Bearer realm="platform", error="invalid_token"' } });
    return person;
  }

  /** Spec 2.5: organisations personal first, then teams by name; sign-in methods oldest first. */
  async me(personId: string) {
    const person = await this.person(personId);
    const [memberships, methods] = await Promise.all([this.organisations.membershipsOf(personId), this.store.methodsOf(personId)]);
    return {
      id: person.id,
      name: person.name,
      email: person.email,
      organisations: memberships.map(organisationSummary),
      signInMethods: methods.map((method) => ({
        id: method.id,
        provider: method.provider,
        email: method.email,
        emailVerified: method.emailVerified,
        createdAt: timestamp(method.createdAt),
        lastUsedAt: timestamp(method.lastUsedAt),
      })),
    };
  }

  async rename(personId: string, name: string, organisationId: string): Promise<void> {
    const trimmed = name.trim();
    if (trimmed.length < 1 || [...trimmed].length > 100) throw invalidRequest('name must be 1 to 100 characters, not only spaces', { field: 'body.name' });
    await this.person(personId);
    await this.dataSource.transaction(async (manager) => {
      await this.organisations.updatePerson(personId, { name: trimmed }, manager);
      await this.trail.record(manager, { action: 'person.renamed', organisationId, actor: { kind: 'cloud-session', personId }, target: { personId } });
    });
    audit(this.logger, { action: 'person.renamed', organisationId, actor: { kind: 'cloud-session', personId }, target: { personId } });
  }

  /**
   * Removes a sign-in method; the last one cannot go (409 `last_sign_in_method`). Sessions the
   * method started end with it (other than the caller's own), so removing a method one no longer
   * trusts also signs out whoever used it.
   */
  async removeMethod(personId: string, methodId: string, currentSessionId: string | undefined, organisationId: string): Promise<void> {
    const ended = await this.dataSource.transaction(async (manager) => {
      const store = this.store.withManager(manager);
      const methods = await store.lockMethodsOf(personId);
      const method = methods.find((candidate) => candidate.id === methodId);
      if (!method) throw notFound('you have no sign-in method with this id');
      if (methods.length === 1) throw conflict('last_sign_in_method', 'this is your only way to sign in; add another before removing it');
      await store.deleteMethod(method.id);
      // The account's address follows the methods that remain.
      const person = await this.organisations.findPerson(personId);
      const remaining = methods.filter((candidate) => candidate.id !== method.id);
      if (person?.email && !remaining.some((candidate) => candidate.emailVerified && candidate.email === person.email)) {
        const next = remaining.find((candidate) => candidate.emailVerified && candidate.email !== null)?.email ?? null;
        await this.organisations.updatePerson(personId, { email: next }, manager);
      }
      await this.trail.record(manager, { action: 'sign_in_method.removed', organisationId, actor: { kind: 'cloud-session', personId }, target: { personId, signInMethodId: methodId } });
      return (await store.sessionsStartedWith(method.id)).filter((id) => id !== currentSessionId);
    });
    if (ended.length) await this.sessions.end(...ended);
    audit(this.logger, { action: 'sign_in_method.removed', organisationId, actor: { kind: 'cloud-session', personId }, target: { personId, signInMethodId: methodId } });
  }

  /**
   * Deletes the account (spec 4.4). `confirm` is the account's email address (any case), or the
   * word `delete` when the account has none.
   */
  async delete(personId: string, confirm: string, organisationId: string): Promise<void> {
    const person = await this.person(personId);
    const expected = person.email ?? 'delete';
    if (confirm.trim().toLowerCase() !== expected.toLowerCase()) {
      throw new ApiError(400, 'confirm', person.email ? 'confirm must be the account\'s email address' : 'confirm must be the word delete');
    }
    const deleted = await this.organisations.deleteCloudPerson(personId, { organisationId, actor: { kind: 'cloud-session', personId } });
    audit(this.logger, {
      action: 'person.deleted',
      organisationId,
      actor: { kind: 'cloud-session', personId },
      target: { personId, organisationsDeleted: deleted.join(',') },
    });
  }
}
