import { afterEach, describe, expect, it } from '@jest/globals';
import { realisticSvg } from '../bench/svg-pictures.js';
import { SvgCheckBusy, SvgCheckTimeout, svgChecker, type SvgChecker } from '../../src/modules/pictures/svg/check-pool.js';
import { SvgRefusal } from '../../src/modules/pictures/svg/pipeline.js';

/**
 * The pool's failure paths, on real threads (the HTTP answers to a timeout and a full queue are in
 * test/http/pictures-svg-check.test.ts): a thread that dies in the middle of a check fails that
 * check alone and is replaced; closing fails what waits and what runs; nothing is answered twice.
 */

const SMALL = '<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>';
let checker: SvgChecker | undefined;
afterEach(async () => {
  await checker?.close();
  checker = undefined;
});

describe('the SVG check pool', () => {
  it('fails a check whose thread runs out of heap as too complex, and the next check runs on a new thread', async () => {
    // 24 MB is enough to load the pipeline, not to check a 2 MB picture.
    checker = svgChecker({ threads: 1, queue: 4, timeoutMs: 60_000, heapMb: 24 });
    const big = checker.check(realisticSvg(2 * 1024 * 1024 - 4096));
    const after = checker.check(SMALL);
    await expect(big).rejects.toBeInstanceOf(SvgCheckTimeout);
    await expect(after).resolves.toEqual({ svg: SMALL, normalised: [] });
  }, 60_000);

  it('answers each check once, with its own result, when checks share threads', async () => {
    checker = svgChecker({ threads: 2, queue: 20, timeoutMs: 60_000 });
    const texts = Array.from({ length: 12 }, (_, index) => (index % 3 === 0 ? '<svg xmlns="http://www.w3.org/2000/svg"><script/></svg>' : SMALL.replace('1"/>', `${index}"/>`)));
    const outcomes = await Promise.allSettled(texts.map((text) => checker!.check(text)));
    outcomes.forEach((outcome, index) => {
      if (index % 3 === 0) expect(outcome.status === 'rejected' && outcome.reason instanceof SvgRefusal).toBe(true);
      else expect(outcome).toEqual({ status: 'fulfilled', value: { svg: texts[index], normalised: [] } });
    });
  }, 60_000);

  it('refuses at once when the threads are busy and the queue is full', async () => {
    checker = svgChecker({ threads: 1, queue: 1, timeoutMs: 60_000 });
    const big = realisticSvg(1024 * 1024);
    const running = checker.check(big);
    const queued = checker.check(big);
    await expect(checker.check(SMALL)).rejects.toBeInstanceOf(SvgCheckBusy);
    await expect(Promise.all([running, queued])).resolves.toHaveLength(2);
  }, 60_000);

  it('fails what runs and what waits when closed, and refuses new checks', async () => {
    const pool = svgChecker({ threads: 1, queue: 4, timeoutMs: 60_000 });
    const big = realisticSvg(1024 * 1024);
    const outcomes = Promise.allSettled([pool.check(big), pool.check(SMALL)]);
    await pool.close();
    for (const outcome of await outcomes) expect(outcome.status === 'rejected' && (outcome.reason as Error).message).toBe('the SVG checker is closed');
    await expect(pool.check(SMALL)).rejects.toThrow('the SVG checker is closed');
  }, 60_000);
});
