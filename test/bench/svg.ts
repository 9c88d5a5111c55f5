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
 *   any rule (parse, normalise, serialise, and parse5's HTML reading): the limit no
 *   checking on top of them can beat.
 * In-process and single-threaded; after one warm-up each run times every contender once, in turn;
 * each figure is the median of the runs; the ratio is given two ways: the median of the runs'
 * paired ratios, and the ratio of the two medians (the paired one forgives a run slowed for both,
 * the other does not; the aim should hold by both).
 */

export interface SvgBenchRow {
  size: string;
  bytes: number;
  name: string;
  medianMs: number;
  medianCpuMs: number;
  megabytesPerSecond: number;
}

export interface SvgBenchResult {
  rows: SvgBenchRow[];
  /** DOMPurify+jsdom time / pipeline time, per size: median of the paired runs, wall and CPU, and
   * the ratio of the two medians (`ofMedians`, `cpuOfMedians`). */
  ratios: { size: string; ratio: number; cpuRatio: number; ofMedians: number; cpuOfMedians: number }[];
  problem?: string;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

interface Sample {
  wallMs: number;
  cpuMs: number;
}

function sample(work: () => void): Sample {
  const cpu = process.cpuUsage();
  const started = performance.now();
  work();
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { wallMs, cpuMs: (used.user + used.system) / 1000 };
}

/** The pipeline's reading work, without a rule: what it parses and writes. */
function readings(text: string): void {
  const svg = serialise(normalise(parseXml(text)).document, { finalLineEnd: false });
  parseHtml(`<!DOCTYPE html><html><head></head><body>${svg}</body></html>`);
}

export async function measureSvgPipeline(runs = 7): Promise<SvgBenchResult> {
  const window = new JSDOM('').window;
  const purify = DOMPurify(window);
  const rows: SvgBenchRow[] = [];
  const ratios: SvgBenchResult['ratios'] = [];
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
    // Interleaved: each run times every contender once, in turn, so that a change in the
    // machine's load between runs weighs on all of them alike; the ratio is the median of the
    // runs' own ratios (paired), on wall time and on CPU time (the process's, GC included).
    const contenders: [string, () => void][] = [
      ['pipeline (checkSvg)', () => checkSvg(svg)],
      ['DOMPurify + jsdom', () => purify.sanitize(svg, { USE_PROFILES: { svg: true, svgFilters: true } })],
      ['bare parse: saxes', () => parseXml(svg)],
      ['readings: saxes, normalise, serialise, parse5', () => readings(svg)],
    ];
    for (const [, work] of contenders) work(); // warm-up
    const samples = new Map<string, Sample[]>(contenders.map(([name]) => [name, []]));
    for (let run = 0; run < runs; run++) for (const [name, work] of contenders) samples.get(name)!.push(sample(work));
    for (const [name, taken] of samples) {
      const ms = median(taken.map((one) => one.wallMs));
      rows.push({ size, bytes: length, name, medianMs: ms, medianCpuMs: median(taken.map((one) => one.cpuMs)), megabytesPerSecond: length / 1024 / 1024 / (ms / 1000) });
    }
    const ours = samples.get('pipeline (checkSvg)')!;
    const theirs = samples.get('DOMPurify + jsdom')!;
    ratios.push({
      size,
      ratio: median(ours.map((one, index) => theirs[index]!.wallMs / one.wallMs)),
      cpuRatio: median(ours.map((one, index) => theirs[index]!.cpuMs / one.cpuMs)),
      ofMedians: median(theirs.map((one) => one.wallMs)) / median(ours.map((one) => one.wallMs)),
      cpuOfMedians: median(theirs.map((one) => one.cpuMs)) / median(ours.map((one) => one.cpuMs)),
    });
  }
  window.close();
  return { rows, ratios };
}

export function formatSvgTable(result: SvgBenchResult): string {
  const table = [['picture', 'what', 'median ms', 'CPU ms', 'MB/s'], ...result.rows.map((row) => [`${row.size} (${row.bytes} B)`, row.name, row.medianMs.toFixed(1), row.medianCpuMs.toFixed(1), row.megabytesPerSecond.toFixed(1)])];
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  const lines = table.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join('  '));
  lines.splice(1, 0, widths.map((width) => '-'.repeat(width)).join('  '));
  for (const { size, ratio, cpuRatio, ofMedians, cpuOfMedians } of result.ratios) {
    lines.push(`${size}: pipeline is ${ratio.toFixed(2)}x DOMPurify + jsdom in wall time, ${cpuRatio.toFixed(2)}x in CPU time (median of paired runs); ${ofMedians.toFixed(2)}x and ${cpuOfMedians.toFixed(2)}x (ratio of medians) (aim: 5x or more)`);
  }
  return lines.join('\n');
}
