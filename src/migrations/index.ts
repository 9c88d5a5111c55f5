import type { MigrationInterface } from 'typeorm';
import { Foundation1763740000000 as SqliteFoundation } from './sqlite/1763740000000-foundation.js';
import { Foundation1763740000000 as MysqlFoundation } from './mysql/1763740000000-foundation.js';
import { Devices1763750000000 as SqliteDevices } from './sqlite/1763750000000-devices.js';
import { Devices1763750000000 as MysqlDevices } from './mysql/1763750000000-devices.js';
import { Policy1763760000000 as SqlitePolicy } from './sqlite/1763760000000-policy.js';
import { Policy1763760000000 as MysqlPolicy } from './mysql/1763760000000-policy.js';
import { WebSessions1763770000000 as SqliteWebSessions } from './sqlite/1763770000000-web-sessions.js';
import { WebSessions1763770000000 as MysqlWebSessions } from './mysql/1763770000000-web-sessions.js';

import { Ingest1763780000000 as SqliteIngest } from './sqlite/1763780000000-ingest.js';
import { Ingest1763780000000 as MysqlIngest } from './mysql/1763780000000-ingest.js';

import { MembershipRemoval1763790000000 as SqliteMembershipRemoval } from './sqlite/1763790000000-membership-removal.js';
import { MembershipRemoval1763790000000 as MysqlMembershipRemoval } from './mysql/1763790000000-membership-removal.js';

import { ExactIdentities1763800000000 as MysqlExactIdentities } from './mysql/1763800000000-exact-identities.js';

import { CloudSignIn1763820000000 as SqliteCloudSignIn } from './sqlite/1763820000000-cloud-sign-in.js';
import { CloudSignIn1763820000000 as MysqlCloudSignIn } from './mysql/1763820000000-cloud-sign-in.js';
import { Pictures1763830000000 as SqlitePictures } from './sqlite/1763830000000-pictures.js';
import { Pictures1763830000000 as MysqlPictures } from './mysql/1763830000000-pictures.js';
import { CloudAgents1763840000000 as SqliteCloudAgents } from './sqlite/1763840000000-cloud-agents.js';
import { CloudAgents1763840000000 as MysqlCloudAgents } from './mysql/1763840000000-cloud-agents.js';
import { Teams1763850000000 as SqliteTeams } from './sqlite/1763850000000-teams.js';
import { Teams1763850000000 as MysqlTeams } from './mysql/1763850000000-teams.js';
import { AuthRevocations1763870000000 as SqliteAuthRevocations } from './sqlite/1763870000000-auth-revocations.js';
import { AuthRevocations1763870000000 as MysqlAuthRevocations } from './mysql/1763870000000-auth-revocations.js';
import { SignInBinding1763880000000 as SqliteSignInBinding } from './sqlite/1763880000000-sign-in-binding.js';
import { SignInBinding1763880000000 as MysqlSignInBinding } from './mysql/1763880000000-sign-in-binding.js';
import { TableCharacterSets1763910000000 as MysqlTableCharacterSets } from './mysql/1763910000000-table-character-sets.js';
import { Retention1763910001000 as SqliteRetention } from './sqlite/1763910001000-retention.js';
import { Retention1763910001000 as MysqlRetention } from './mysql/1763910001000-retention.js';
import { MailCaps1763920000000 as SqliteMailCaps } from './sqlite/1763920000000-mail-caps.js';
import { MailCaps1763920000000 as MysqlMailCaps } from './mysql/1763920000000-mail-caps.js';
import { AuditLog1763930000000 as SqliteAuditLog } from './sqlite/1763930000000-audit-log.js';
import { AuditLog1763930000000 as MysqlAuditLog } from './mysql/1763930000000-audit-log.js';

type MigrationClass = new () => MigrationInterface;

/** Migrations per dialect, in order. Listed by hand so they load the same in ESM, tests and builds. */
export const SQLITE_MIGRATIONS: MigrationClass[] = [SqliteFoundation, SqliteDevices, SqlitePolicy, SqliteWebSessions, SqliteIngest, SqliteMembershipRemoval, SqliteCloudSignIn, SqlitePictures, SqliteCloudAgents, SqliteTeams, SqliteAuthRevocations, SqliteSignInBinding, SqliteRetention, SqliteMailCaps, SqliteAuditLog];
export const MYSQL_MIGRATIONS: MigrationClass[] = [MysqlFoundation, MysqlDevices, MysqlPolicy, MysqlWebSessions, MysqlIngest, MysqlMembershipRemoval, MysqlExactIdentities, MysqlCloudSignIn, MysqlPictures, MysqlCloudAgents, MysqlTeams, MysqlAuthRevocations, MysqlSignInBinding, MysqlTableCharacterSets, MysqlRetention, MysqlMailCaps, MysqlAuditLog];
