import { describe, expect, it } from '@jest/globals';
import { AuthCache } from '../../src/auth/auth-cache.js';
import type { AuthRevocations } from '../../src/auth/revocations.js';
import { ManualClock } from '../../src/util/clock.js';
import { SingleFlight } from '../../src/util/single-flight.js';
import { SingleFlightCache } from '../../src/util/single-flight-cache.js';

// Concurrent misses share one look-up (src/util/single-flight.ts, single-flight-cache.ts, and
// the caches of verified credentials, src/auth/auth-cache.ts `once`).

/** A look-up that counts its calls and answers when told. */
function gatedLookUp<V>(answer: (call: number) => V) {
  let calls = 0;
  const gates: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  const lookUp = async (): Promise<V> => {
    const call = ++calls;
    await new Promise<void>((resolve, reject) => gates.push({ resolve, reject }));
    return answer(call);
  };
  return {
    lookUp,
    get calls() {
      return calls;
    },
    release: () => gates.splice(0).forEach((gate) => gate.resolve()),
    fail: (error: Error) => gates.splice(0).forEach((gate) => gate.reject(error)),
  };
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('SingleFlight', () => {
  it('runs the work once for concurrent callers of one key, once per key', async () => {
    const flight = new SingleFlight<string, string>();
    const gate = gatedLookUp((call) => `answer ${call}`);
    const answers = Promise.all([...Array.from({ length: 50 }, () => flight.run('a', gate.lookUp)), flight.run('b', gate.lookUp)]);
    await flush();
    expect(gate.calls).toBe(2);
    gate.release();
    const settled = await answers;
    expect(new Set(settled.slice(0, 50))).toEqual(new Set(['answer 1']));
    expect(settled[50]).toBe('answer 2');
    expect(flight.size).toBe(0);
  });

  it('hands a failure to the callers that shared it and keeps nothing of it', async () => {
    const flight = new SingleFlight<string, string>();
    const gate = gatedLookUp(() => 'ok');
    const shared = Array.from({ length: 10 }, () => flight.run('a', gate.lookUp));
    await flush();
    gate.fail(new Error('database away'));
    for (const one of shared) await expect(one).rejects.toThrow('database away');
    const again = flight.run('a', gate.lookUp);
    await flush();
    expect(gate.calls).toBe(2);
    gate.release();
    await expect(again).resolves.toBe('ok');
  });
});

describe('SingleFlightCache', () => {
  const cacheOf = (clock: ManualClock, refreshAheadMs = 0) =>
    new SingleFlightCache<string, string | null>({ ttlMs: 5_000, maxEntries: 3, refreshAheadMs, evictFirst: (value) => value === null, now: () => clock.now().getTime() });

  it('50 concurrent requests at an ended entry make exactly one look-up', async () => {
    const clock = new ManualClock();
    const cache = cacheOf(clock);
    const gate = gatedLookUp((call) => `v${call}`);
    const first = cache.get('host', gate.lookUp);
    await flush();
    gate.release();
    await expect(first).resolves.toBe('v1');
    // Within its life: no look-up.
    clock.advance(4_999);
    await expect(cache.get('host', gate.lookUp)).resolves.toBe('v1');
    expect(gate.calls).toBe(1);
    clock.advance(1);
    const burst = Promise.all(Array.from({ length: 50 }, () => cache.get('host', gate.lookUp)));
    await flush();
    expect(gate.calls).toBe(2);
    gate.release();
    expect(new Set(await burst)).toEqual(new Set(['v2']));
  });

  it('does not cache a failed look-up: the next request asks again', async () => {
    const clock = new ManualClock();
    const cache = cacheOf(clock);
    let calls = 0;
    const failing = async () => {
      calls += 1;
      throw new Error('away');
    };
    await expect(Promise.all(Array.from({ length: 5 }, () => cache.get('host', failing)))).rejects.toThrow('away');
    expect(calls).toBe(1);
    await expect(cache.get('host', async () => 'back')).resolves.toBe('back');
    expect(cache.size).toBe(1);
  });

  it('refreshes ahead in the background, once, while still answering from the entry; never serves past its life', async () => {
    const clock = new ManualClock();
    const cache = cacheOf(clock, 1_000);
    const gate = gatedLookUp((call) => `v${call}`);
    const first = cache.get('host', gate.lookUp);
    await flush();
    gate.release();
    await first;
    clock.advance(3_999);
    await expect(cache.get('host', gate.lookUp)).resolves.toBe('v1');
    expect(gate.calls).toBe(1);
    clock.advance(1);
    // In the last second: answered at once from the entry, one refresh started for all.
    const answers = await Promise.all(Array.from({ length: 50 }, () => cache.get('host', gate.lookUp)));
    expect(new Set(answers)).toEqual(new Set(['v1']));
    expect(gate.calls).toBe(2);
    gate.release();
    await flush();
    // The refreshed entry lives from when it was read.
    clock.advance(3_000);
    await expect(cache.get('host', gate.lookUp)).resolves.toBe('v2');
    expect(gate.calls).toBe(2);
    // A refresh still under way when the entry ends: the request waits for it, never the old answer.
    clock.advance(1_000);
    await cache.get('host', gate.lookUp);
    expect(gate.calls).toBe(3);
    clock.advance(1_000);
    const late = cache.get('host', gate.lookUp);
    await flush();
    expect(gate.calls).toBe(3);
    gate.release();
    await expect(late).resolves.toBe('v3');
  });

  it('when full, drops remembered misses before the answers that name something', async () => {
    const clock = new ManualClock();
    const cache = cacheOf(clock);
    await cache.get('a', async () => 'A');
    await cache.get('unknown', async () => null);
    await cache.get('b', async () => 'B');
    await cache.get('c', async () => 'C');
    let asked = 0;
    const count = async () => {
      asked += 1;
      return 'again';
    };
    await expect(cache.get('a', count)).resolves.toBe('A');
    await expect(cache.get('b', count)).resolves.toBe('B');
    await expect(cache.get('c', count)).resolves.toBe('C');
    await expect(cache.get('unknown', count)).resolves.toBe('again');
    expect(asked).toBe(1);
  });
});

describe('AuthCache.once (caches of verified credentials)', () => {
  function revocations() {
    return { generation: 0, register: () => undefined, fresh: () => undefined } as unknown as AuthRevocations & { generation: number };
  }

  it('shares one look-up between concurrent misses of one key', async () => {
    const clock = new ManualClock();
    const cache = new AuthCache<string>('test', { maxEntries: 10, maxAgeSeconds: 10 }, clock, revocations());
    const gate = gatedLookUp((call) => `v${call}`);
    const miss = () =>
      cache.once('token', async () => {
        const generation = cache.begin();
        const value = await gate.lookUp();
        cache.set('token', value, generation);
        return value;
      });
    const burst = Promise.all(Array.from({ length: 50 }, miss));
    await flush();
    expect(gate.calls).toBe(1);
    gate.release();
    expect(new Set(await burst)).toEqual(new Set(['v1']));
    expect(cache.get('token')).toBe('v1');
  });

  it('never lets a request that came after a revocation wait for a look-up that began before it', async () => {
    const clock = new ManualClock();
    const state = revocations();
    const cache = new AuthCache<string>('test', { maxEntries: 10, maxAgeSeconds: 10 }, clock, state);
    const gate = gatedLookUp((call) => `read ${call}`);
    const miss = () =>
      cache.once('token', async () => {
        const generation = cache.begin();
        const value = await gate.lookUp();
        cache.set('token', value, generation);
        return value;
      });
    const before = miss();
    await flush();
    state.generation += 1; // a revocation dropped the caches
    const after = miss();
    await flush();
    expect(gate.calls).toBe(2);
    gate.release();
    await expect(before).resolves.toBe('read 1');
    await expect(after).resolves.toBe('read 2');
    // What was read before the revocation is not kept.
    expect(cache.get('token')).toBe('read 2');
  });

  it('with the cache off, every request makes its own look-up', async () => {
    const cache = new AuthCache<string>('test', { maxEntries: 0, maxAgeSeconds: 10 }, new ManualClock(), revocations());
    let calls = 0;
    await Promise.all(Array.from({ length: 5 }, () => cache.once('token', async () => ++calls)));
    expect(calls).toBe(5);
  });
});
