import { audit, CLI_ACTOR, type AuditActor } from '../audit.js';
import type { OrganisationRole } from '../auth/principal.js';
import type { OrganisationRecord } from '../modules/organisation/entities.js';
import type { OrganisationMemberView } from '../modules/projects/service.js';
import { timestamp } from '../util/clock.js';
import { notFoundError, refusedError, usageError, type AdminServices } from './context.js';
import { requireOrganisation } from './organisations.js';

/**
 * People of an organisation from the command line: the first owner (`bootstrap`), adding a person
 * by address before they ever sign in, listing members, and the person a command acts as (`--as`).
 */

/** An address as the command line takes one: what an identity provider would put in `email`. */
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

function checkEmail(value: string): string {
  const email = value.trim().toLowerCase();
  if (!EMAIL.test(email) || email.length > 320) throw usageError(`--email must be an email address (got "${value}")`);
  return email;
}

function checkPersonName(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const name = value.trim();
  if (name.length < 1 || name.length > 200 || /\p{Cc}/u.test(name)) throw usageError('--name must be 1 to 200 characters, without control characters');
  return name;
}

/** An organisation named by id (`org_…`) or by a host name it is served at. */
export const organisationByIdOrHost = requireOrganisation;

/** The warning a role set here needs when the identity provider's claim decides roles. */
export function roleClaimWarning(organisation: Pick<OrganisationRecord, 'id' | 'oidcRoleClaim'>): string | undefined {
  if (!organisation.oidcRoleClaim) return undefined;
  return (
    `${organisation.id} takes roles from the identity provider's claim "${organisation.oidcRoleClaim}": ` +
    "the role set here holds until the person's next sign-in, when the provider's claim wins (a missing claim means member)"
  );
}

export interface PersonView {
  id: string;
  name: string;
  email: string | null;
  role: OrganisationRole;
  /** False until the person first signs in with the organisation's identity provider. */
  signedIn: boolean;
  joinedAt: string;
}

export interface AddedPerson {
  organisationId: string;
  person: { id: string; name: string; email: string | null };
  role: OrganisationRole;
  /** The member was already there (bootstrap of an existing member): their role was changed. */
  existing: boolean;
  previous: OrganisationRole | undefined;
  roleClaimWarning: string | undefined;
}

async function membersWithAddress(services: AdminServices, organisationId: string, email: string): Promise<OrganisationMemberView[]> {
  try {
    return [await services.projects.findOrganisationMember(organisationId, email)];
  } catch (error) {
    if ((error as { status?: number }).status === 404) return [];
    throw error;
  }
}

/**
 * Adds a person to an organisation by address, before they sign in: they become that person at
 * their first sign-in with the organisation's provider (with that address). Refused when a member
 * already has the address. Enterprise (self-hosted) organisations only: on Cloud people join by
 * invitation.
 */
export async function addPerson(
  services: AdminServices,
  organisationId: string,
  input: { email: string; name?: string | undefined; role: OrganisationRole },
): Promise<AddedPerson> {
  const organisation = await organisationByIdOrHost(services, organisationId);
  const email = checkEmail(input.email);
  const name = checkPersonName(input.name);
  if (organisation.kind !== 'enterprise') throw refusedError(`${organisation.id} is a Cloud ${organisation.kind} organisation: people join it by invitation`);
  const existing = await membersWithAddress(services, organisation.id, email);
  if (existing.length) throw refusedError(`${existing[0]!.id} is already a member of ${organisation.id} with the address ${email}; change their role with \`platform person set-role\``);
  const person = await services.organisations.addPerson(organisation.id, { email, name, role: input.role }, CLI_ACTOR);
  audit(services.logger, { action: 'person.added', organisationId: organisation.id, actor: CLI_ACTOR, target: { personId: person.id, role: input.role } });
  return {
    organisationId: organisation.id,
    person: { id: person.id, name: person.name, email: person.email },
    role: input.role,
    existing: false,
    previous: undefined,
    roleClaimWarning: roleClaimWarning(organisation),
  };
}

/**
 * The first owner of an organisation, by address: refused when it has an owner already, unless
 * `force`. A member with the address already there is made owner; otherwise the person is added.
 */
export async function bootstrapOwner(
  services: AdminServices,
  organisationRef: string,
  input: { email: string; name?: string | undefined; force: boolean },
): Promise<AddedPerson> {
  const organisation = await organisationByIdOrHost(services, organisationRef);
  const email = checkEmail(input.email);
  checkPersonName(input.name);
  const owners = (await services.organisations.members(organisation.id)).filter((member) => member.role === 'owner');
  if (owners.length && !input.force) {
    throw refusedError(
      `${organisation.id} already has an owner (${owners.map((owner) => owner.email ?? owner.personId).join(', ')}); ` +
        'add people with `platform person add`, or give --force to add another owner anyway',
    );
  }
  const [member] = await membersWithAddress(services, organisation.id, email);
  if (!member) return addPerson(services, organisation.id, { email, name: input.name, role: 'owner' });
  const previous = await services.organisations.roleOf(organisation.id, member.id);
  await services.organisations.setRole(organisation.id, member.id, 'owner', CLI_ACTOR);
  audit(services.logger, {
    action: 'person.role_changed',
    organisationId: organisation.id,
    actor: CLI_ACTOR,
    target: { personId: member.id, role: 'owner', previous: previous ?? null },
  });
  return {
    organisationId: organisation.id,
    person: { id: member.id, name: member.name, email: member.email },
    role: 'owner',
    existing: true,
    previous,
    roleClaimWarning: roleClaimWarning(organisation),
  };
}

export async function listPeople(services: AdminServices, organisationRef: string): Promise<PersonView[]> {
  const organisation = await organisationByIdOrHost(services, organisationRef);
  return (await services.organisations.members(organisation.id)).map((member) => ({
    id: member.personId,
    name: member.name,
    email: member.email,
    role: member.role,
    signedIn: member.signedIn,
    joinedAt: timestamp(member.joinedAt),
  }));
}

/** The person a command acts as (`--as <email or usr_…>`): a current member of the organisation. */
export interface ActingPerson {
  id: string;
  name: string;
  email: string | null;
  role: OrganisationRole;
  /** The audit actor: the command line, acting for this person. */
  actor: AuditActor;
}

export async function actingPerson(services: AdminServices, organisationId: string, who: string): Promise<ActingPerson> {
  const member = await services.projects.findOrganisationMember(organisationId, who);
  const role = await services.organisations.roleOf(organisationId, member.id);
  if (!role) throw notFoundError(`${member.id} is not a member of the organisation`);
  return { id: member.id, name: member.name, email: member.email, role, actor: { kind: 'cli', personId: member.id } };
}
