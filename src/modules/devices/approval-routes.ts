import type { Logger } from 'pino';
import { actorOf, audit } from '../../audit.js';
import type { Principal } from '../../auth/principal.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { timestamp } from '../../util/clock.js';
import type { Approver, DeviceCodeService, PendingDevice } from './device-code.js';
import { deviceApprovalSchema, userCodeRequestSchema } from './schemas.js';

/**
 * Extension: the console's side of the device-code flow (spec 5, step 2). A person signed in to
 * the organisation looks up the code a device shows, which claims it for them, then approves or
 * denies it. The code travels in the body, never in the URL, so it stays out of access logs.
 *
 * User codes are short enough to guess given enough tries (RFC 8628 5.1), so every look-up and
 * decision counts against the caller's address and against the person, whichever runs out first.
 */

/** An office shares one address; the per-person limit below is the real guard against guessing. */
export const USER_CODE_ADDRESS_RATE_LIMIT: RateLimitRule = { name: 'user-code-address', by: 'address', limit: 30, windowMs: 60_000 };
/** Ten a minute: five devices looked up and approved, far too few to guess a code. */
export const USER_CODE_PERSON_RATE_LIMIT: RateLimitRule = { name: 'user-code-person', by: 'person', limit: 10, windowMs: 60_000 };

const RATE_LIMITS = [USER_CODE_ADDRESS_RATE_LIMIT, USER_CODE_PERSON_RATE_LIMIT] as const;

const NOT_FOUND = 'No pending request has this code in your organisation: unknown, expired, already decided, or another organisation\'s (`not_found`).';

const FORBIDDEN = 'Another person claimed the code, or the code is a node\'s and the caller is not an owner or admin (`forbidden`).';

function approverOf(principal: Principal): Approver {
  const actor = principal;
  return { personId: actor.personId, organisationId: actor.organisationId, role: actor.role };
}

/** A decision on a device's enrolment is an administrative change: one audit line, never the code. */
export function auditDecision(logger: Logger, principal: Principal | undefined, device: PendingDevice, decision: 'approved' | 'denied'): void {
  // The approval page passes the principal its own sign-in set (limitLookUps); never none.
  if (!principal) throw new Error('a device decision is audited with the principal that made it');
  audit(logger, {
    action: decision === 'approved' ? 'device.approved' : 'device.denied',
    organisationId: principal.organisationId,
    actor: actorOf(principal),
    target: { kind: device.kind, name: device.name },
  });
}

function answer(device: PendingDevice, status: 'pending' | 'approved' | 'denied') {
  return {
    status: 200,
    body: {
      status,
      userCode: device.userCode,
      name: device.name,
      kind: device.kind,
      workspaceId: device.workspaceId,
      requestedAt: timestamp(device.requestedAt),
      expiresAt: timestamp(device.expiresAt),
      requesterAddress: device.requesterAddress,
      requesterUserAgent: device.requesterUserAgent,
      keyBound: device.keyBound,
    },
  };
}

const common = {
  method: 'post',
  tag: 'Devices',
  extension: true,
  tenant: true,
  auth: ['person', 'cloud-session'],
  // Any member approves a workbench, only owners and admins a node: the service asks about the
  // request's kind once it has found it (device-code.ts, mayApproveKind).
  permission: ['approve', 'DeviceRequest'],
  rateLimits: RATE_LIMITS,
  schemas: { body: userCodeRequestSchema },
  errors: { 403: ['forbidden'], 404: ['not_found'] },
} as const;

export function approvalRoutes(deviceCodes: DeviceCodeService): RouteDefinition[] {
  /** Approving and denying differ only in the decision and its words. */
  const decisionRoute = (decision: 'approve' | 'deny', operationId: string, summary: string, description: string) => {
    const outcome = decision === 'approve' ? 'approved' : 'denied';
    return defineRoute({
      ...common,
      path: `/platform/v1/device-approvals/${decision}`,
      operationId,
      summary,
      description,
      responses: {
        200: { description: decision === 'approve' ? 'Approved.' : 'Denied.', schema: deviceApprovalSchema },
        403: { description: FORBIDDEN },
        404: { description: NOT_FOUND },
      },
      handler: async ({ body, principal, req }) => {
        const device = await deviceCodes.decide(body.userCode, approverOf(principal), decision, actorOf(principal));
        auditDecision(req.log, principal, device, outcome);
        return answer(device, outcome);
      },
    });
  };
  return [
    defineRoute({
      ...common,
      path: '/platform/v1/device-approvals/look-up',
      operationId: 'lookUpDeviceApproval',
      summary: 'Look up a device asking to enrol, by its user code, and claim it',
      description:
        'Shows what the device said about itself and where it asked from. The first person who looks a code up claims it: ' +
        'only they may approve or deny it. A node can be looked up only by owners and admins.',
      responses: {
        200: { description: 'The pending request, now claimed by the caller.', schema: deviceApprovalSchema },
        403: { description: FORBIDDEN },
        404: { description: NOT_FOUND },
      },
      handler: async ({ body, principal }) => answer(await deviceCodes.lookUp(body.userCode, approverOf(principal)), 'pending'),
    }),
    decisionRoute(
      'approve',
      'approveDevice',
      'Approve a device asking to enrol',
      "The device receives its tokens at its next poll, enrolled in the caller's organisation with the caller as its approver. " +
        'The caller must still be allowed to approve it when the device polls. A node needs an owner or admin.',
    ),
    decisionRoute('deny', 'denyDevice', 'Deny a device asking to enrol', 'The device is told `access_denied` at its next poll.'),
  ];
}
