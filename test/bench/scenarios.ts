/**
 * What the bench measures. To add a scenario, add an object to the list `scenarios()` returns.
 *
 * `headers` is called once per run, or once per request when `perRequest` is true (a DPoP
 * scenario: a fresh proof, with its own `jti`, for every request; see `dpop.ts`). It runs in the
 * load generator's event loop and must be synchronous and cheap, or it becomes what is measured.
 */

export type TargetName = 'bare' | 'platform';
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RequestShape {
  method: HttpMethod;
  /** The absolute URL the request goes to (for a DPoP proof's `htu`). */
  url: string;
}

export interface Scenario {
  name: string;
  target: TargetName;
  method: HttpMethod;
  path: string;
  headers?: (request: RequestShape) => Record<string, string>;
  /** Call `headers` (and `body`) again for every request. */
  perRequest?: boolean;
  body?: (request: RequestShape) => string;
  /** Runs once before the scenario's warm-up, with its target up (enrol a device, seed data...). */
  prepare?: (origin: string) => Promise<void>;
}

/** What the harness has set up before any scenario runs. */
export interface Fixtures {
  /** The host name the bench organisation is served at. */
  host: string;
  /** A person token for that organisation, from the bench's own OpenID provider. */
  personToken: string;
}

/** The first scenario on the `bare` target is the baseline every ratio is computed against. */
export function scenarios(fixtures: Fixtures): Scenario[] {
  return [
    {
      name: 'bare express: GET /',
      target: 'bare',
      method: 'GET',
      path: '/',
    },
    {
      name: 'discovery: GET /.well-known/platform.json',
      target: 'platform',
      method: 'GET',
      path: '/.well-known/platform.json',
      headers: () => ({ Host: fixtures.host }),
    },
    {
      name: 'person token: GET /platform/v1/organisation',
      target: 'platform',
      method: 'GET',
      path: '/platform/v1/organisation',
      headers: () => ({ Host: fixtures.host, Authorization: `Bearer ${fixtures.personToken}` }),
    },
  ];
}
