import { performance } from 'node:perf_hooks';
import DOMPurify from 'dompurify';
import { JSDOM } from 'jsdom';
import { parse as parseHtml } from 'parse5';
import { parseXml } from '../../src/modules/pictures/svg/parse.js';
import { checkSvg } from '../../src/modules/pictures/svg/pipeline.js';

/**
 * The SVG safety pipeline on realistic pictures of 1 MB and 2 MB (generated diagrams: grouped
 * nodes with gradients, text, class and inline styles, curved edges with markers, a few SMIL
 * animations), beside:
 * - DOMPurify with jsdom on the same input (what a Node service would otherwise use; its SVG and
 *   SVG-filter profiles), the peer; the aim is the pipeline at 3x its speed or more;
 * - a bare parse by svgo's parser, the parser the pipeline runs, and that plus htmlparser2's
 *   reading (the pipeline's two parses): the limit no checking on top of them can beat.
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

/** A deterministic generator (mulberry32), so every run measures the same pictures. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A diagram of about `targetBytes` bytes, as a workbench draws one. */
export function realisticSvg(targetBytes: number): string {
  const next = random(targetBytes);
  const kinds = ['api', 'database', 'queue', 'cache', 'worker', 'gateway', 'scheduler'];
  const parts: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 4000 4000" font-family="Inter, sans-serif" font-size="10">',
    '<title>Service map</title><desc>Generated architecture diagram.</desc>',
    '<defs>',
    '<style><![CDATA[ .node { fill: url(#card); stroke: #5b6b8c; stroke-width: 1; } .edge { fill: none; stroke: #9aa5bd; stroke-width: 1.2; } .label { fill: #1d2433; } .kind { fill: #6b7490; font-size: 8px; } @keyframes pulse { from { opacity: 1; } to { opacity: 0.4; } } .hot { animation: pulse 1s infinite alternate; } ]]></style>',
    '<linearGradient id="card" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#eef2ff"/><stop offset="1" stop-color="#f8f9fc"/></linearGradient>',
    '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" fill="#9aa5bd"/></marker>',
    '<filter id="shadow"><feDropShadow dx="1" dy="1" stdDeviation="1" flood-opacity="0.25"/></filter>',
    '<symbol id="db" viewBox="0 0 16 16"><ellipse cx="8" cy="3" rx="7" ry="2.5"/><path d="M1 3 v10 a7 2.5 0 0 0 14 0 v-10"/></symbol>',
    '</defs>',
  ];
  let size = parts.join('\n').length;
  for (let i = 0; size < targetBytes - 200; i++) {
    const x = (i % 60) * 66;
    const y = Math.floor(i / 60) * 52;
    const kind = kinds[Math.floor(next() * kinds.length)] as string;
    const hot = next() < 0.02;
    const node =
      `<g id="n${i}" transform="translate(${x} ${y})"${hot ? ' class="hot"' : ''}>` +
      `<rect class="node" width="58" height="40" rx="4" filter="url(#shadow)"/>` +
      (kind === 'database' ? '<use href="#db" x="42" y="4" width="12" height="12" fill="#c7d2fe"/>' : '') +
      `<text class="label" x="5" y="16">${kind}-${i}</text>` +
      `<text class="kind" x="5" y="30" style="font-style:italic;letter-spacing:0.2px">${Math.floor(next() * 900 + 100)} req/s</text>` +
      (next() < 0.01 ? `<animate attributeName="opacity" values="1;0.5;1" dur="${1 + Math.floor(next() * 3)}s" repeatCount="indefinite"/>` : '') +
      '</g>';
    const j = Math.floor(next() * (i + 1));
    const x2 = (j % 60) * 66 + 29;
    const y2 = Math.floor(j / 60) * 52 + 40;
    const edge = `<path class="edge" d="M${x + 29} ${y} C ${x + 29} ${y - 20}, ${x2} ${y2 + 20}, ${x2} ${y2}" marker-end="url(#arrow)"/>`;
    parts.push(node, edge);
    size += node.length + edge.length + 2;
  }
  parts.push('</svg>');
  return parts.join('\n');
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

function htmlReading(text: string): void {
  const parser = new Parser({ onopentag: () => undefined }, { decodeEntities: true });
  parser.write(text);
  parser.end();
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
      'bare parse: svgo (sax)': time(runs, () => parseXml(svg)),
      'bare parses: svgo + htmlparser2': time(runs, () => {
        parseXml(svg);
        htmlReading(svg);
      }),
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
  for (const { size, ratio } of result.ratios) lines.push(`${size}: pipeline is ${ratio.toFixed(2)}x DOMPurify + jsdom (aim: 3x or more)`);
  return lines.join('\n');
}
