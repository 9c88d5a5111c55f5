import {
  MembershipEntity,
  OrganisationEntity,
  OrganisationHostEntity,
  PersonEntity,
  PersonIdentityEntity,
} from '../modules/organisation/entities.js';
import { ProjectEntity, ProjectMemberEntity } from '../modules/projects/entities.js';
import { DeviceAuthorizationEntity, DeviceEntity, DeviceTokenEntity, JoinKeyEntity } from '../modules/devices/entities.js';
import { WebSessionEntity } from '../web/device-approval/page-session.js';
import { PolicyRevisionEntity } from '../modules/policy/entities.js';
import { SIGN_IN_ENTITIES } from '../modules/signin/entities.js';
import { InvitationEntity } from '../modules/teams/entities.js';

import { ingestEntities } from '../modules/ingest/entities.js';
import { pictureEntities } from '../modules/pictures/entities.js';
import { cloudAgentEntities } from '../modules/cloud-agents/entities.js';
import { SigningKeyEntity } from '../modules/relay/entities.js';
import { auditLogEntities } from '../modules/audit-log/entities.js';

/** Every entity of the service; a module adds its own here. */
export const ENTITIES = [
  OrganisationEntity,
  OrganisationHostEntity,
  PersonEntity,
  PersonIdentityEntity,
  MembershipEntity,
  ProjectEntity,
  ProjectMemberEntity,
  DeviceEntity,
  DeviceTokenEntity,
  DeviceAuthorizationEntity,
  JoinKeyEntity,
  WebSessionEntity,
  PolicyRevisionEntity,
  ...SIGN_IN_ENTITIES,
  InvitationEntity,
  SigningKeyEntity,
];

/** The entities of a dialect: the fixed list plus those whose column types differ by dialect. */
export function entitiesFor(dialect: 'sqlite' | 'mysql') {
  return [...ENTITIES, ...ingestEntities(dialect), ...pictureEntities(dialect), ...cloudAgentEntities(dialect), ...auditLogEntities(dialect)];
}
