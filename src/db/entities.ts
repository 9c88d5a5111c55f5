import {
  MembershipEntity,
  OrganisationEntity,
  OrganisationHostEntity,
  PersonEntity,
  PersonIdentityEntity,
} from '../modules/organisation/entities.js';
import { ProjectEntity, ProjectMemberEntity } from '../modules/projects/entities.js';
import { DeviceAuthorizationEntity, DeviceEntity, DeviceTokenEntity, JoinKeyEntity } from '../modules/devices/entities.js';

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
];
