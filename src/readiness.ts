/**
 * What a readiness probe is (`/readyz`, src/modules/health/routes.ts), declared outside the health
 * module so that the parts it asks (adapters/state among them) can answer without importing a
 * module (eslint.config.js, the layer zones).
 */

/** What a probe says when its part is usable. */
export type ReadyState = 'ok' | 'not configured' | 'in process' | 'disabled';

export interface ReadinessProbe {
  name: string;
  /** Resolves with a ready state; a `ProbeFailure` names the reason, any other error means unreachable. */
  check(): Promise<ReadyState>;
}

/** A probe's part answers but is not usable, for a reason of its own (`pending`, `scripts not loaded`…). */
export class ProbeFailure extends Error {
  constructor(readonly state: string) {
    super(state);
    this.name = 'ProbeFailure';
  }
}
