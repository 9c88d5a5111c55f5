import { audit, CLI_ACTOR } from '../audit.js';
import type { OrganisationRole } from '../auth/principal.js';
import type { OrganisationKind, OrganisationPlan, OrganisationRecord } from '../modules/organisation/entities.js';
import { editionOf, normaliseHost, type OidcSettings } from '../modules/organisation/service.js';
import { timestamp } from '../util/clock.js';
import { CliError, EXIT_USAGE, notFoundError, refusedError, type AdminServices } from './context.js';

/** The OpenID Connect settings as the command line takes them; each flag may be left out. */
export interface OidcFlags {
  issuer?: string | undefined;
  clientId?: string | undefined;
  apiScope?: string | undefined;
  audience?: string | undefined;
  roleClaim?: string | undefined;
}

const OIDC_FLAG_NAMES: Record<keyof OidcFlags, string> = {
  issuer: '--issuer',
  clientId: '--client-id',
  apiScope: '--api-scope',
  audience: '--audience',
  roleClaim: '--role-claim',
};

/** The verifier refuses any other http issuer (adapters/identity/organisation-oidc.ts); so do we. */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function checkIssuer(value: string, allowHttpLoopback: boolean): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`--issuer must be an absolute https URL (got "${value}")`, EXIT_USAGE);
  }
  const loopbackHttp = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !(loopbackHttp && allowHttpLoopback)) {
    throw new CliError(
      loopbackHttp
        ? '--issuer must be https; http is accepted for a loopback issuer only with OIDC_ALLOW_HTTP_LOOPBACK=true'
        : `--issuer must be an https URL (got "${value}")`,
      EXIT_USAGE,
    );
  }
  // OpenID Connect Discovery 1.0, section 3: an issuer has no query or fragment.
  if (url.search || url.hash || value.includes('?') || value.includes('#')) {
    throw new CliError('--issuer must not carry a query or fragment', EXIT_USAGE);
  }
  if (url.username || url.password) throw new CliError('--issuer must not carry credentials', EXIT_USAGE);
  if (value.length > 500) throw new CliError('--issuer must be at most 500 characters', EXIT_USAGE);
  // Kept exactly as given: token `iss` claims are compared character for character.
  return value;
}

function checkText(flag: string, value: string, max: number, allowSpaces: boolean): string {
  if (value.length < 1 || value.length > max) throw new CliError(`${flag} must be 1 to ${max} characters`, EXIT_USAGE);
  if (/\p{Cc}/u.test(value) || (!allowSpaces && /\s/.test(value))) {
    throw new CliError(`${flag} must not contain ${allowSpaces ? 'control characters' : 'spaces or control characters'}`, EXIT_USAGE);
  }
  return value;
}

function currentOidc(organisation: OrganisationRecord): OidcSettings | undefined {
  const { oidcIssuer: issuer, oidcClientId: clientId, oidcApiScope: apiScope, oidcAudience: audience } = organisation;
  if (!issuer || !clientId || !apiScope || !audience) return undefined;
  return { issuer, clientId, apiScope, audience, roleClaim: organisation.oidcRoleClaim ?? undefined };
}

/**
 * The settings an organisation ends up with: the flags given over the ones it has. Undefined when
 * no flag was given. Issuer, client id, API scope and audience only work together (the verifier
 * needs the issuer and audience, clients need the client id and scope), so a partial set is refused.
 */
export function oidcSettingsFrom(flags: OidcFlags, current: OidcSettings | undefined, allowHttpLoopback: boolean): OidcSettings | undefined {
  const given = (Object.keys(OIDC_FLAG_NAMES) as (keyof OidcFlags)[]).filter((key) => flags[key] !== undefined);
  if (given.length === 0) return undefined;
  const merged = { ...current, ...Object.fromEntries(given.map((key) => [key, flags[key]!.trim()])) };
  const missing = (['issuer', 'clientId', 'apiScope', 'audience'] as const).filter((key) => !merged[key]);
  if (missing.length) {
    throw new CliError(
      `OpenID Connect settings go together: also give ${missing.map((key) => OIDC_FLAG_NAMES[key]).join(', ')}`,
      EXIT_USAGE,
    );
  }
  return {
    issuer: checkIssuer(merged.issuer!, allowHttpLoopback),
    clientId: checkText('--client-id', merged.clientId!, 255, false),
    apiScope: checkText('--api-scope', merged.apiScope!, 255, true),
    audience: checkText('--audience', merged.audience!, 255, false),
    roleClaim: merged.roleClaim === undefined ? undefined : checkText('--role-claim', merged.roleClaim, 100, false),
  };
}

function checkName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length < 1 || trimmed.length > 200) throw new CliError('--name must be 1 to 200 characters', EXIT_USAGE);
  return trimmed;
}

function hostsFrom(values: readonly string[]): string[] {
  const hosts: string[] = [];
  for (const value of values) {
    let host: string;
    try {
      host = normaliseHost(value);
    } catch {
      throw new CliError(`"${value}" is not a host name (give a name such as platform.example.com, without scheme or port)`, EXIT_USAGE);
    }
    if (!hosts.includes(host)) hosts.push(host);
  }
  return hosts;
}

async function refuseTakenHosts(services: AdminServices, hosts: readonly string[], organisationId?: string): Promise<void> {
  for (const host of hosts) {
    const owner = await services.organisations.findByHost(host);
    if (owner && owner.id !== organisationId) throw refusedError(`host ${host} already serves organisation ${owner.id} ("${owner.name}")`);
  }
}

async function refuseTakenIssuer(services: AdminServices, oidc: OidcSettings | undefined, organisationId?: string): Promise<void> {
  if (!oidc) return;
  const owner = await services.organisations.findByIssuer(oidc.issuer);
  if (owner && owner.id !== organisationId) {
    throw refusedError(`issuer ${oidc.issuer} already signs in organisation ${owner.id} ("${owner.name}"); an issuer selects exactly one organisation`);
  }
}

/** An organisation as `--json` prints it. */
export interface OrganisationView {
  id: string;
  name: string;
  kind: OrganisationKind;
  plan: OrganisationPlan;
  edition: string;
  hosts: string[];
  oidc: { issuer: string; clientId: string; apiScope: string; audience: string; roleClaim: string | null } | null;
  createdAt: string;
}

export function organisationView(organisation: OrganisationRecord, hosts: string[]): OrganisationView {
  const oidc = currentOidc(organisation);
  return {
    id: organisation.id,
    name: organisation.name,
    kind: organisation.kind,
    plan: organisation.plan,
    edition: editionOf(organisation),
    hosts,
    oidc: oidc ? { ...oidc, roleClaim: oidc.roleClaim ?? null } : null,
    createdAt: timestamp(organisation.createdAt),
  };
}

export interface CreateOrganisationInput extends OidcFlags {
  name: string;
  kind?: OrganisationKind | undefined;
  plan?: OrganisationPlan | undefined;
  hosts: readonly string[];
}

export async function createOrganisation(services: AdminServices, input: CreateOrganisationInput): Promise<OrganisationView> {
  const { config, organisations } = services;
  const selfHosted = config.deployment === 'self-hosted';
  if (!input.kind && !selfHosted) throw new CliError('--kind is required on a Cloud deployment', EXIT_USAGE);
  const kind = input.kind ?? 'enterprise';
  // A self-hosted deployment answers edition `enterprise` for everyone (discovery); personal and
  // team organisations exist only on Cloud.
  if (selfHosted && kind !== 'enterprise') throw new CliError('a self-hosted deployment serves enterprise organisations only', EXIT_USAGE);
  const name = checkName(input.name);
  const hosts = hostsFrom(input.hosts);
  const oidc = oidcSettingsFrom(input, undefined, config.oidc.allowHttpLoopbackIssuers);
  await refuseTakenHosts(services, hosts);
  await refuseTakenIssuer(services, oidc);
  const organisation = await organisations.create({ name, kind, plan: input.plan, hosts, oidc }, CLI_ACTOR);
  audit(services.logger, { action: 'organisation.created', organisationId: organisation.id, actor: CLI_ACTOR, target: { hosts: hosts.join(','), issuer: oidc?.issuer ?? null } });
  return organisationView(organisation, await organisations.hostsOf(organisation.id));
}

export async function listOrganisations(services: AdminServices): Promise<OrganisationView[]> {
  const views: OrganisationView[] = [];
  for (const organisation of await services.organisations.list()) {
    views.push(organisationView(organisation, await services.organisations.hostsOf(organisation.id)));
  }
  return views;
}

export interface ConfigureOrganisationInput extends OidcFlags {
  name?: string | undefined;
  plan?: OrganisationPlan | undefined;
  addHosts?: readonly string[] | undefined;
  removeHosts?: readonly string[] | undefined;
}

export async function configureOrganisation(services: AdminServices, named: string, input: ConfigureOrganisationInput): Promise<OrganisationView> {
  const { config, organisations } = services;
  const organisation = await requireOrganisation(services, named);
  // `named` may be a host name the organisation is served at (`org configure localhost`): from here on, its id.
  const id = organisation.id;
  const name = input.name === undefined ? undefined : checkName(input.name);
  const addHosts = hostsFrom(input.addHosts ?? []);
  const removeHosts = hostsFrom(input.removeHosts ?? []);
  const both = addHosts.filter((host) => removeHosts.includes(host));
  if (both.length) throw new CliError(`host ${both[0]} is both added and removed`, EXIT_USAGE);
  const oidc = oidcSettingsFrom(input, currentOidc(organisation), config.oidc.allowHttpLoopbackIssuers);
  if (name === undefined && input.plan === undefined && !oidc && !addHosts.length && !removeHosts.length) {
    throw new CliError('nothing to change: give --name, --plan, --host, --remove-host or OpenID Connect settings', EXIT_USAGE);
  }

  const current = await organisations.hostsOf(id);
  for (const host of removeHosts) {
    const owner = await organisations.findByHost(host);
    // Removing a host of another organisation would quietly do nothing; the id is probably wrong.
    if (owner && owner.id !== id) throw refusedError(`host ${host} serves organisation ${owner.id}, not ${id}`);
  }
  await refuseTakenHosts(services, addHosts, id);
  await refuseTakenIssuer(services, oidc, id);

  const entry = {
    action: 'organisation.configured',
    organisationId: id,
    actor: CLI_ACTOR,
    target: {
      name: name !== undefined,
      plan: input.plan ?? null,
      addedHosts: addHosts.join(','),
      removedHosts: removeHosts.join(','),
      issuer: oidc?.issuer ?? null,
    },
  };
  const updated = await organisations.configure(
    id,
    {
      ...(name !== undefined ? { name } : {}),
      ...(input.plan !== undefined ? { plan: input.plan } : {}),
      ...(oidc ? { oidc } : {}),
      addHosts: addHosts.filter((host) => !current.includes(host)),
      removeHosts: removeHosts.filter((host) => current.includes(host)),
    },
    entry,
  );
  audit(services.logger, entry);
  return organisationView(updated, await organisations.hostsOf(id));
}

/** An organisation named by id (`org_…`) or by a host name it is served at. */
export async function requireOrganisation(services: AdminServices, id: string): Promise<OrganisationRecord> {
  const trimmed = id.trim();
  if (!trimmed.startsWith('org_') && !trimmed.includes('_')) {
    let host: string | undefined;
    try {
      host = normaliseHost(trimmed);
    } catch {
      host = undefined;
    }
    if (host) {
      const served = await services.organisations.findByHost(host);
      if (!served) throw notFoundError(`no organisation is served at ${host} (see \`platform org list\`)`);
      return served;
    }
  }
  const organisation = await services.organisations.findById(trimmed);
  if (!organisation) throw notFoundError(`no organisation ${id} (see \`platform org list\`)`);
  return organisation;
}

export interface RoleChange {
  organisationId: string;
  person: { id: string; name: string; email: string | null };
  role: OrganisationRole;
  previous: OrganisationRole | undefined;
  /** The organisation's role claim: when set, the provider's claim replaces this role at the next sign-in. */
  roleClaim: string | null;
}

/**
 * Gives a person a role in the organisation. By email address, only an existing member is found
 * (addresses are not unique across organisations, and another organisation's identity provider
 * may assert anyone's address); a person id (`usr_…`) may also name someone not yet a member.
 */
export async function setOrganisationRole(services: AdminServices, organisationId: string, who: string, role: OrganisationRole): Promise<RoleChange> {
  const organisation = await requireOrganisation(services, organisationId);
  const trimmed = who.trim();
  const personId = trimmed.includes('@') ? (await services.projects.findOrganisationMember(organisation.id, trimmed)).id : trimmed;
  if (!/^usr_[0-9a-z]+$/.test(personId)) {
    throw new CliError(`--person must be an email address or a person id (usr_…), got "${who}"`, EXIT_USAGE);
  }
  const previous = await services.organisations.roleOf(organisation.id, personId);
  const person = await services.organisations.setRole(organisation.id, personId, role, CLI_ACTOR);
  audit(services.logger, { action: 'person.role_changed', organisationId: organisation.id, actor: CLI_ACTOR, target: { personId: person.id, role, previous: previous ?? null } });
  return { organisationId: organisation.id, person: { id: person.id, name: person.name, email: person.email }, role, previous, roleClaim: organisation.oidcRoleClaim };
}

/** Removes a member (found by email among the organisation's members, or by `usr_…` id). */
export async function removeOrganisationMember(
  services: AdminServices,
  organisationId: string,
  who: string,
): Promise<{ organisationId: string; person: { id: string; name: string; email: string | null } }> {
  const organisation = await requireOrganisation(services, organisationId);
  const member = await services.projects.findOrganisationMember(organisation.id, who.trim());
  await services.organisations.removeMember(organisation.id, member.id, CLI_ACTOR);
  audit(services.logger, { action: 'person.removed', organisationId: organisation.id, actor: CLI_ACTOR, target: { personId: member.id } });
  return { organisationId: organisation.id, person: { id: member.id, name: member.name, email: member.email } };
}
