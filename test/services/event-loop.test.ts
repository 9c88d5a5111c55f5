import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { closeAgents, measureStall, sendTo, type Stall } from '../bench/event-loop.js';
import { FIXED_ELSEWHERE, generatedLogCases, LOG_CASES, STALL_LIMIT_MS, type Hostile, type Target } from '../bench/hostile-payloads.js';
import { createPerson, enrolDevice } from '../support/devices.js';
import { createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';
import { LoggedService } from '../support/service-process.js';

/**
 * The event loop under hostile requests (issue 23): the real service in a process of its own
 * (src/main.ts, LOG_LEVEL info, so every refusal is logged, and redacted, on the loop), on this
 * file's database, while `GET /healthz` is probed every 10 ms (test/bench/event-loop.ts). Each
 * worst case (test/bench/hostile-payloads.ts: one line each) is sent alone; no request may stall
 * the loop 250 ms, and each stays within its budget, read from the service's own
 * monitorEventLoopDelay (the quietest of up to three sends: a stall the request causes comes
 * back each time, the noise of a shared machine does not). The cases other branches fix are run as expected failures until they
 * land: then their expected failure fails, and their line moves to FIXED_ELSEWHERE.
 */

let platform: TestPlatform;
let service: LoggedService;
let port: number;
let target: Target;

beforeAll(async () => {
  platform = await startPlatform();
  const organisation = await createOrganisation(platform, { name: 'Hostile Org' });
  const person = await createPerson(platform, organisation.id, 'admin');
  const projectId = (await platform.services.projects.create(organisation.id, { name: 'Main', owner: person.id })).id;
  const device = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
  service = new LoggedService({ DATABASE_URL: platform.database.url, LOG_LEVEL: 'info', PLATFORM_BOOTSTRAP_LOCALHOST: 'false', RATE_LIMITS_ENABLED: 'false' });
  port = await service.port();
  target = { host: (await platform.services.organisations.hostsOf(organisation.id))[0]!, token: device.tokens.access_token, projectId };
  // Warm the service up: its first requests compile the code paths.
  for (let i = 0; i < 20; i++) await sendTo(port, target.host, { method: 'GET', path: `/nope?warm=${i}` });
}, 120_000);

afterAll(async () => {
  closeAgents();
  await service?.stop();
  await platform?.close();
});

function expectAnswered(hostile: Hostile, stall: Stall): void {
  if (hostile.status !== undefined) expect(stall.status).toBe(hostile.status);
  else {
    expect(stall.status).toBeGreaterThanOrEqual(400);
    expect(stall.status).toBeLessThan(500);
  }
  expect(stall.probeFailures).toBe(0);
  expect(stall.probes).toBeGreaterThan(3);
}

function expectWithinBudget(stall: Stall): void {
  expect(stall.serverMs).toBeLessThan(Math.min(stall.budgetMs, STALL_LIMIT_MS));
  expect(stall.probeMs).toBeLessThan(STALL_LIMIT_MS);
}

describe('the event loop under the worst cases, probed every 10 ms', () => {
  it.each([...LOG_CASES, ...FIXED_ELSEWHERE, ...generatedLogCases()].map((hostile) => [hostile.name, hostile] as const))(
    '%s: answered, no stall over its budget',
    async (_name, hostile) => {
      const stall = await measureStall({ port }, target, hostile);
      expectAnswered(hostile, stall);
      expectWithinBudget(stall);
    },
    60_000,
  );

  it('logged each refusal, with nothing a rule takes out and no line longer than the budget allows', async () => {
    await service.until(() => (service.raw.some((line) => line.includes('x-cookie')) ? true : undefined), 'the log lines');
    const refused = service.lines.filter((line) => line.msg === 'request completed' && (line.res as { statusCode?: number } | undefined)?.statusCode === 404);
    expect(refused.length).toBeGreaterThanOrEqual(LOG_CASES.length);
    expect(service.raw.join('\n')).not.toContain('s3cr3t-after-the-questions');
    for (const line of service.raw) expect(line.length).toBeLessThan(80_000);
  });
});
