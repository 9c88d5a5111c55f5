import type { RegisteredRun } from '../../src/modules/cloud-agents/service.js';
import { createPerson, enrolDevice, type EnrolledDevice } from './devices.js';
import type { TestPlatform } from './platform.js';
import { recordSecret } from './suite-record.js';

export interface MintedRun {
  runId: string;
  /** The run credential, `platform_cr_…`. */
  token: string;
  /** `Authorization: Bearer platform_cr_…`. */
  headers: Record<string, string>;
  workbench: EnrolledDevice;
}

/**
 * A running cloud agent run with a credential, registered through the service rather than the
 * route (that has its own tests): for tests that need a run credential, such as the suite-wide
 * refusal and fuzz tests. Registered by a workbench of a person of its own (new unless given), so
 * that the runs count against nobody else's `maxConcurrent`. The credential is recorded for the
 * suite's log scan like any secret an answer hands out.
 */
export async function mintRun(platform: TestPlatform, organisationId: string, options: { workbench?: EnrolledDevice } = {}): Promise<MintedRun> {
  const workbench = options.workbench ?? (await enrolDevice(platform, { organisationId, personId: (await createPerson(platform, organisationId)).id }));
  const project = await platform.services.projects.create(organisationId, { name: `Runs ${workbench.device.id}`, owner: workbench.device.personId });
  const { device } = workbench;
  const registered: RegisteredRun = await platform.services.cloudAgents.register(
    { kind: 'device', organisationId, personId: device.personId, role: undefined, deviceId: device.id, deviceKind: 'workbench', scopes: device.scope.split(' ') },
    { provider: 'test-agent', projectId: project.id, workspaceId: 'ws-test', tools: ['echo'] },
    (runId) => `http://unused.test/cloud-agents/v1/runs/${runId}/mcp`,
  );
  const token = registered.mcp!.token;
  recordSecret(token);
  return { runId: registered.runId, token, headers: { Authorization: `Bearer ${token}` }, workbench };
}
