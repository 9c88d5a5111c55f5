import { EntitySchema } from 'typeorm';
import type { SignInClient, SignInProviderId } from './settings.js';
import { rotatingTokenColumns, type RotatingTokenFields } from '../oauth/rotating-token.js';

/**
 * Cloud sign-in: the ways a person signs in (sign-in methods), their sessions and session
 * tokens, and the short-lived records of a sign-in in progress (provider flows, one-time codes,
 * emailed codes, link tickets). Every secret is stored only as a hash: SHA-256 for the random
 * high-entropy ones, an HMAC under a server key for the six-digit emailed codes.
 *
 * Self-hosted person tokens keep using `person_identities` (issuer, subject); Cloud sign-in
 * methods live in their own table because they carry what a person manages (email, whether the
 * provider verified it, when it was last used) and are named by provider rather than issuer.
 */

/** A way to sign in to a Cloud account (spec 2.6): a provider's account, or an email address. */
export interface SignInMethodRecord {
  id: string;
  personId: string;
  provider: SignInProviderId;
  /** The provider's stable id of the account (`sub`, GitHub's numeric id…); for `email`, the address. */
  subject: string;
  email: string | null;
  emailVerified: boolean;
  /**
   * The verified address this method stands for when a new sign-in is joined to an account by
   * address ("one address, one account"): set when the method was added through a flow its owner
   * finished (a first sign-in, a join, a link confirmed at the token endpoint with the owner's
   * session) and the address was verified and no other person's. The method stops standing for
   * it as soon as the provider names another address (`email` differs).
   */
  confirmedEmail: string | null;
  createdAt: Date;
  lastUsedAt: Date;
}

/** A person signed in on one client: every token issued in it ends with it. */
export interface CloudSessionRecord {
  id: string;
  personId: string;
  client: SignInClient | 'device-page';
  /** The sign-in method the session was started with (removing the method ends the session). */
  signInMethodId: string | null;
  createdAt: Date;
  endedAt: Date | null;
}

/** The same shape as a device's tokens (devices/entities.ts), for a session. */
export interface SessionTokenRecord extends RotatingTokenFields {
  sessionId: string;
}

/** A sign-in at a provider in progress, found by the hash of the `state` sent to the provider. */
export interface SignInFlowRecord {
  stateHash: string;
  provider: SignInProviderId;
  /** AES-256-GCM under a key derived from the state: PKCE verifier, nonce, the client's request. */
  sealed: string;
  /** SHA-256 of the browser binding cookie set by the start: only that browser finishes the flow. */
  browserHash: string | null;
  expiresAt: Date;
  createdAt: Date;
}

/** The one-time code a client exchanges at `/auth/v1/token` (spec 3: 60 seconds, single use). */
export interface SignInCodeRecord {
  id: string;
  codeHash: string;
  personId: string;
  client: SignInClient | 'device-page';
  redirectUri: string;
  codeChallenge: string;
  signInMethodId: string | null;
  expiresAt: Date;
  usedAt: Date | null;
  /** The session the code started; a second exchange of the code ends it. */
  sessionId: string | null;
  /**
   * A link flow's code: the ticket that started it. Such a code signs nobody in; it adds
   * `pendingMethod` to the ticket's person only when exchanged with that person's live session.
   */
  linkTicketId: string | null;
  /** JSON of the provider account or address to add (a link flow's code only). */
  pendingMethod: string | null;
  createdAt: Date;
}

/** A six-digit code emailed to an address, with the sign-in request it answers. */
export interface EmailCodeRecord {
  id: string;
  /** SHA-256 of the lower-cased address: the address itself is not kept. */
  addressHash: string;
  /** HMAC-SHA-256 of the digits under the server's code key, with the row id as context. */
  codeHash: string;
  tries: number;
  client: SignInClient | 'device-page';
  redirectUri: string;
  codeChallenge: string;
  state: string;
  /** Set when the code was asked for with a link ticket: the person the address would be added to. */
  linkPersonId: string | null;
  /** The link ticket it was asked with (the link takes effect only at the token endpoint). */
  linkTicketId: string | null;
  expiresAt: Date;
  createdAt: Date;
  /** Exchanged for a one-time code, or replaced by a newer code for the address. */
  spentAt: Date | null;
}

/** A ticket to add a sign-in method to the signed-in person (spec 4.4: five minutes, single use). */
export interface LinkTicketRecord {
  id: string;
  ticketHash: string;
  personId: string;
  /** The session that asked for it: only that session, while it lives, completes the link. */
  sessionId: string | null;
  expiresAt: Date;
  /** When a flow started with it: a ticket starts one flow, whatever becomes of it. */
  usedAt: Date | null;
  createdAt: Date;
}

const id = { type: 'varchar', length: 40, primary: true } as const;
const ref = (name: string) => ({ type: 'varchar', length: 40, name }) as const;
const optionalRef = (name: string) => ({ type: 'varchar', length: 40, name, nullable: true, default: null }) as const;
const when = (name: string) => ({ type: 'datetime', precision: 3, name }) as const;
const optionalWhen = (name: string) => ({ type: 'datetime', precision: 3, name, nullable: true, default: null }) as const;
const hash = (name: string) => ({ type: 'varchar', length: 64, name }) as const;
const personForeignKey = (table: string, column = 'personId') => ({
  name: `fk_${table}_person`,
  target: 'Person',
  columnNames: [column],
  referencedColumnNames: ['id'],
  onDelete: 'CASCADE' as const,
});

export const SignInMethodEntity = new EntitySchema<SignInMethodRecord>({
  name: 'SignInMethod',
  tableName: 'sign_in_methods',
  columns: {
    id,
    personId: ref('person_id'),
    provider: { type: 'varchar', length: 20 },
    subject: { type: 'varchar', length: 320 },
    email: { type: 'varchar', length: 320, nullable: true, default: null },
    emailVerified: { type: 'boolean', name: 'email_verified' },
    confirmedEmail: { type: 'varchar', length: 320, name: 'confirmed_email', nullable: true, default: null },
    createdAt: when('created_at'),
    lastUsedAt: when('last_used_at'),
  },
  indices: [
    { name: 'sign_in_methods_provider_subject', columns: ['provider', 'subject'], unique: true },
    { name: 'sign_in_methods_person', columns: ['personId'] },
    { name: 'sign_in_methods_email', columns: ['email'] },
    { name: 'sign_in_methods_confirmed_email', columns: ['confirmedEmail'] },
  ],
  foreignKeys: [personForeignKey('sign_in_methods')],
});

export const CloudSessionEntity = new EntitySchema<CloudSessionRecord>({
  name: 'CloudSession',
  tableName: 'cloud_sessions',
  columns: {
    id,
    personId: ref('person_id'),
    client: { type: 'varchar', length: 20 },
    signInMethodId: optionalRef('sign_in_method_id'),
    createdAt: when('created_at'),
    endedAt: optionalWhen('ended_at'),
  },
  indices: [
    { name: 'cloud_sessions_person', columns: ['personId'] },
    { name: 'cloud_sessions_method', columns: ['signInMethodId'] },
    { name: 'cloud_sessions_ended', columns: ['endedAt', 'createdAt'] },
  ],
  foreignKeys: [personForeignKey('cloud_sessions')],
});

export const SessionTokenEntity = new EntitySchema<SessionTokenRecord>({
  name: 'SessionToken',
  tableName: 'cloud_session_tokens',
  columns: {
    id,
    sessionId: ref('session_id'),
    ...rotatingTokenColumns,
  },
  indices: [
    { name: 'cloud_session_tokens_hash', columns: ['tokenHash'], unique: true },
    { name: 'cloud_session_tokens_session', columns: ['sessionId'] },
    { name: 'cloud_session_tokens_expires', columns: ['expiresAt'] },
  ],
  foreignKeys: [
    { name: 'fk_cloud_session_tokens_session', target: 'CloudSession', columnNames: ['sessionId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

export const SignInFlowEntity = new EntitySchema<SignInFlowRecord>({
  name: 'SignInFlow',
  tableName: 'sign_in_flows',
  columns: {
    stateHash: { type: 'varchar', length: 64, primary: true, name: 'state_hash' },
    provider: { type: 'varchar', length: 20 },
    sealed: { type: 'text' },
    browserHash: { type: 'varchar', length: 64, name: 'browser_hash', nullable: true, default: null },
    expiresAt: when('expires_at'),
    createdAt: when('created_at'),
  },
  indices: [{ name: 'sign_in_flows_expires', columns: ['expiresAt'] }],
});

export const SignInCodeEntity = new EntitySchema<SignInCodeRecord>({
  name: 'SignInCode',
  tableName: 'sign_in_codes',
  columns: {
    id,
    codeHash: hash('code_hash'),
    personId: ref('person_id'),
    client: { type: 'varchar', length: 20 },
    redirectUri: { type: 'varchar', length: 2000, name: 'redirect_uri' },
    codeChallenge: { type: 'varchar', length: 128, name: 'code_challenge' },
    signInMethodId: optionalRef('sign_in_method_id'),
    expiresAt: when('expires_at'),
    usedAt: optionalWhen('used_at'),
    sessionId: optionalRef('session_id'),
    linkTicketId: optionalRef('link_ticket_id'),
    pendingMethod: { type: 'text', name: 'pending_method', nullable: true, default: null },
    createdAt: when('created_at'),
  },
  indices: [
    { name: 'sign_in_codes_hash', columns: ['codeHash'], unique: true },
    { name: 'sign_in_codes_expires', columns: ['expiresAt'] },
    { name: 'sign_in_codes_person', columns: ['personId'] },
  ],
  foreignKeys: [personForeignKey('sign_in_codes')],
});

export const EmailCodeEntity = new EntitySchema<EmailCodeRecord>({
  name: 'EmailCode',
  tableName: 'email_codes',
  columns: {
    id,
    addressHash: hash('address_hash'),
    codeHash: hash('code_hash'),
    tries: { type: 'int' },
    client: { type: 'varchar', length: 20 },
    redirectUri: { type: 'varchar', length: 2000, name: 'redirect_uri' },
    codeChallenge: { type: 'varchar', length: 128, name: 'code_challenge' },
    state: { type: 'varchar', length: 500 },
    linkPersonId: optionalRef('link_person_id'),
    linkTicketId: optionalRef('link_ticket_id'),
    expiresAt: when('expires_at'),
    createdAt: when('created_at'),
    spentAt: optionalWhen('spent_at'),
  },
  indices: [
    { name: 'email_codes_address', columns: ['addressHash', 'createdAt'] },
    { name: 'email_codes_created', columns: ['createdAt'] },
    { name: 'email_codes_link_person', columns: ['linkPersonId'] },
    { name: 'email_codes_expires', columns: ['expiresAt'] },
  ],
  foreignKeys: [personForeignKey('email_codes', 'linkPersonId')],
});

export const LinkTicketEntity = new EntitySchema<LinkTicketRecord>({
  name: 'LinkTicket',
  tableName: 'link_tickets',
  columns: {
    id,
    ticketHash: hash('ticket_hash'),
    personId: ref('person_id'),
    sessionId: optionalRef('session_id'),
    expiresAt: when('expires_at'),
    usedAt: optionalWhen('used_at'),
    createdAt: when('created_at'),
  },
  indices: [
    { name: 'link_tickets_hash', columns: ['ticketHash'], unique: true },
    { name: 'link_tickets_person', columns: ['personId'] },
    { name: 'link_tickets_expires', columns: ['expiresAt'] },
  ],
  foreignKeys: [personForeignKey('link_tickets')],
});

export const SIGN_IN_ENTITIES = [
  SignInMethodEntity,
  CloudSessionEntity,
  SessionTokenEntity,
  SignInFlowEntity,
  SignInCodeEntity,
  EmailCodeEntity,
  LinkTicketEntity,
];
