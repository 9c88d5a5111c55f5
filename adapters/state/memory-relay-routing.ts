import { NOT_CONNECTED, type RelayOutcome, type RelayRouting } from '../../src/state/relay-routing.js';

/** One replica: a device's socket is here or nowhere. */
export class MemoryRelayRouting implements RelayRouting {
  readonly kind = 'in process' as const;

  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  healthy(): boolean {
    return true;
  }
  async claim(): Promise<void> {}
  async refresh(): Promise<boolean> {
    return true;
  }
  async release(): Promise<void> {}
  async forward(): Promise<RelayOutcome> {
    return NOT_CONNECTED;
  }
  /** No other replica: the hub has told its own sockets already. */
  async broadcast(): Promise<void> {}
}
