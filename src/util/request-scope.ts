import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What an audit row keeps of the request that made a change: its id, the address it came from
 * (as the trusted proxy settings give it) and its user agent. The transport sets it around a
 * route's handler (src/http/route.ts) and the approval page's decisions; the audit trail reads it
 * (src/audit.ts), so services never see `req` and need no extra parameter for it. Outside a
 * request (the command line, the sweeper) there is none.
 */
export interface RequestFacts {
  requestId: string;
  sourceAddress: string | null;
  userAgent: string | null;
}

const scope = new AsyncLocalStorage<RequestFacts>();

export function inRequestScope<T>(facts: RequestFacts, work: () => T): T {
  return scope.run(facts, work);
}

export function currentRequest(): RequestFacts | undefined {
  return scope.getStore();
}
