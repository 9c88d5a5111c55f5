import { performance } from 'node:perf_hooks';
import DOMPurify from 'dompurify';
import { JSDOM } from 'jsdom';
import { parse as parseHtml } from 'parse5';
import { normalise } from '../../src/modules/pictures/svg/normalise.js';
import { parseXml } from '../../src/modules/pictures/svg/parse.js';
import { serialise } from '../../src/modules/pictures/svg/serialise.js';
import { checkSvg } from '../../src/modules/pictures/svg/pipeline.js';
import { realisticSvg } from './svg-pictures.js';

export { realisticSvg };

/**
 * The SVG safety pipeline, normalisation included, on realistic pictures of 1 MB and 2 MB
 * (generated diagrams in an editor's form: an XML declaration, the standard DOCTYPE, comments,
 * `<metadata>`, Inkscape attributes, grouped nodes with gradients, text, class and inline styles,
 * curved edges with markers, a few SMIL animations), beside:
 * - DOMPurify with jsdom on the same input (what a Node service would otherwise use; its SVG and
 *   SVG-filter profiles), the peer; the aim is the pipeline at 5x its speed or more;
 * - a bare parse by saxes, the parser the pipeline runs, and the pipeline's reading work without
 *   any rule (parse, normalise, serialise, parse again, and parse5's HTML reading): the limit no
 *   checking on top of them can beat.
 * In-process and single-threaded; each figure is the median of the runs after one warm-up.
 */

export interface SvgBenchRow {
  size: string;
  bytes: number;
  name: string;
  medianMs: number;
  megabytesPerSecond: number;
}

export interface SvgBenchResult {
  rows: SvgBenchRow[];
  /** DOMPurify+jsdom time / pipeline time, per size. */
  ratios: { size: string; ratio: number }[];
  problem?: string;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function time(runs: number, work: () => void): number {
  work(); // warm-up
  const samples: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    work();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

/** The pipeline's reading work, without a rule: what it parses and writes. */
function readings(text: string): void {
  const svg = serialise(normalise(parseXml(text)).document, { finalLineEnd: false });
  parseXml(svg);
  parseHtml(`<!DOCTYPE html><html><head></head><body>${svg}</body></html>`);
}

export async function measureSvgPipeline(runs = 5): Promise<SvgBenchResult> {
  const window = new JSDOM('').window;
  const purify = DOMPurify(window as unknown as Parameters<typeof DOMPurify>[0]);
  const rows: SvgBenchRow[] = [];
  const ratios: { size: string; ratio: number }[] = [];
  for (const [size, bytes] of [['1 MB', 1024 * 1024], ['2 MB', 2 * 1024 * 1024 - 4096]] as const) {
    const svg = realisticSvg(bytes);
    const length = Buffer.byteLength(svg);
    try {
      checkSvg(svg);
    } catch (error) {
      return { rows, ratios, problem: `the ${size} picture is refused by the pipeline: ${(error as Error).message}` };
    }
    const kept = purify.sanitize(svg, { USE_PROFILES: { svg: true, svgFilters: true } });
    if (kept.length < length / 2) return { rows, ratios, problem: `DOMPurify kept only ${kept.length} of ${length} characters of the ${size} picture` };
    await new Promise((resolve) => setImmediate(resolve));
    const measured = {
      'pipeline (checkSvg)': time(runs, () => checkSvg(svg)),
      'DOMPurify + jsdom': time(runs, () => purify.sanitize(svg, { USE_PROFILES: { svg: true, svgFilters: true } })),
      'bare parse: saxes': time(runs, () => parseXml(svg)),
      'readings: saxes, normalise, serialise, saxes, parse5': time(runs, () => readings(svg)),
    };
    for (const [name, ms] of Object.entries(measured)) rows.push({ size, bytes: length, name, medianMs: ms, megabytesPerSecond: length / 1024 / 1024 / (ms / 1000) });
    ratios.push({ size, ratio: measured['DOMPurify + jsdom'] / measured['pipeline (checkSvg)'] });
  }
  window.close();
  return { rows, ratios };
}

export function formatSvgTable(result: SvgBenchResult): string {
  const table = [['picture', 'what', 'median ms', 'MB/s'], ...result.rows.map((row) => [`${row.size} (${row.bytes} B)`, row.name, row.medianMs.toFixed(1), row.megabytesPerSecond.toFixed(1)])];
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  const lines = table.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join('  '));
  lines.splice(1, 0, widths.map((width) => '-'.repeat(width)).join('  '));
  for (const { size, ratio } of result.ratios) lines.push(`${size}: pipeline is ${ratio.toFixed(2)}x DOMPurify + jsdom (aim: 5x or more)`);
  return lines.join('\n');
}
