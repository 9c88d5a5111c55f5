/** Every rule that depends on time asks a Clock, so tests move time instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock for tests: starts where told and moves only when told. */
export class ManualClock implements Clock {
  private current: number;

  constructor(start: Date | number = Date.UTC(2026, 0, 1)) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(milliseconds: number): void {
    this.current += milliseconds;
  }

  set(to: Date | number): void {
    this.current = typeof to === 'number' ? to : to.getTime();
  }
}

/** RFC 3339 UTC with milliseconds, the one timestamp format of the API. */
export function timestamp(date: Date): string {
  return date.toISOString();
}
