import { parentPort } from 'node:worker_threads';
import { checkSvg, SvgRefusal, type CheckedSvg, type SvgRefusalCode } from './pipeline.js';

/**
 * A thread of the SVG check pool (`check-pool.ts`): reads `{ id, text }`, answers `{ id, checked }`
 * (the pipeline's result), `{ id, refusal }` (an SvgRefusal's fields) or `{ id, failure }` (an
 * unexpected error's message). It says `ready` once loaded, so that loading never counts against
 * a check's time.
 */

export interface CheckRequest {
  id: number;
  text: string;
}

export type CheckAnswer =
  | { type: 'ready' }
  | { type: 'checked'; id: number; checked: CheckedSvg }
  | { type: 'refused'; id: number; refusal: { code: SvgRefusalCode; reason: string; where: string } }
  | { type: 'failed'; id: number; failure: string };

const port = parentPort;
if (port) {
  port.on('message', ({ id, text }: CheckRequest) => {
    let answer: CheckAnswer;
    try {
      answer = { type: 'checked', id, checked: checkSvg(text) };
    } catch (error) {
      answer =
        error instanceof SvgRefusal
          ? { type: 'refused', id, refusal: { code: error.code, reason: error.reason, where: error.where } }
          : { type: 'failed', id, failure: error instanceof Error ? error.message : String(error) };
    }
    port.postMessage(answer);
  });
  port.postMessage({ type: 'ready' } satisfies CheckAnswer);
}
