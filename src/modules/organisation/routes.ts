import { abilityOf, authorize } from '../../../policies/index.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { editionOf } from './service.js';
import { platformOrganisationSchema } from './schemas.js';

export function organisationRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      method: 'get',
      path: '/platform/v1/organisation',
      operationId: 'getOrganisation',
      permission: ['read', 'Organisation'],
      summary: "The caller's organisation and its edition",
      description: "The organisation the token acts for (a device's, a person token's issuer, or a Cloud session's `X-Platform-Organisation`), its edition, and the calling person's role.",
      tag: 'Organisation',
      tenant: true,
      auth: ['device', 'person', 'cloud-session'],
      deviceScope: 'organisation:read',
      schemas: {},
      responses: { 200: { description: 'The organisation.', schema: platformOrganisationSchema } },
      handler: ({ principal, tenant }) => {
        const organisation = tenant!;
        const actor = principal;
        const ability = abilityOf(actor);
        authorize(ability, 'read', 'Organisation', organisation);
        return {
          status: 200,
          body: {
            id: organisation.id,
            name: organisation.name,
            kind: organisation.kind,
            plan: organisation.plan,
            edition: editionOf(organisation),
            ...(actor.role ? { role: actor.role } : {}),
          },
        };
      },
    }),
  ];
}
