import type { OutgoingHttpHeaders } from 'node:http';
import fc from 'fast-check';
import { realisticSvg } from './svg-pictures.js';

/**
 * The worst cases of issue 23, one line each: what a single client sends to make the service
 * spend. test/services/event-loop.test.ts sends each while probing the event loop (and fails
 * when one stalls it past its budget); the bench's event-loop part (event-loop.ts) reports the lag.
 */

/** Budget of the log line of one request (src/log-redaction.ts: about 5 ms), plus the 10 ms resolution of the probes and the noise of a shared machine. */
export const LOG_BUDGET_MS = 60;
/** Ingest redaction: about 100 ms an envelope (issue 23). */
export const INGEST_BUDGET_MS = 100;
/**
 * SVG checking: about 200 ms for a 2 MB picture (issue 23), counted as what it holds the event
 * loop: the check itself runs on a thread of its own (src/modules/pictures/svg/check-pool.ts) and
 * takes about a second of that thread for 2 MB (several on a loaded machine); the loop only reads
 * the body, stores the picture and answers.
 */
export const SVG_BUDGET_MS = 200;
/** No request may hold the event loop longer than this (docs/contributing/architecture.md "Bounded work"). */
export const STALL_LIMIT_MS = 250;

/** What the requests are sent to: a self-hosted organisation and a workbench of it. */
export interface Target {
  /** The organisation's host name (the Host header selects it). */
  host: string;
  /** A workbench's access token (Bearer): ingest:write, pictures:write. */
  token: string;
  /** A project the workbench's person owns. */
  projectId: string;
}

export interface HostileRequest {
  method: string;
  path: string;
  headers?: OutgoingHttpHeaders;
  body?: string;
}

export interface Hostile {
  name: string;
  /** The longest the event loop may stall while it is handled (and logged). */
  budgetMs: number;
  /** The answer it must get (default: a 4xx refusal, which is logged at `info`). */
  status?: number;
  /** Built before it is sent, so that building it does not delay the probes. */
  build(target: Target): HostileRequest;
}

const json = (target: Target, body: unknown, headers: OutgoingHttpHeaders = {}): Pick<HostileRequest, 'headers' | 'body'> => ({
  headers: { Authorization: `Bearer ${target.token}`, 'Content-Type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

const envelope = (target: Target, data: unknown) => ({
  schemaVersion: 1,
  projectId: target.projectId,
  workspaceId: 'ws-hostile',
  sentAt: new Date().toISOString(),
  cursors: { events: -1 },
  events: [{ seq: 1, id: `evt-${Math.random().toString(36).slice(2)}`, at: new Date().toISOString(), kind: 'tool.called', data }],
  usage: [],
  audit: [],
  tasks: [],
});

let pictureCount = 0;
const picture = (target: Target, svgBody: string): HostileRequest => ({
  method: 'PUT',
  path: `/projects/v1/${target.projectId}/pictures/hostile-${++pictureCount}-${process.pid}`,
  ...json(target, { spec: { version: 1, kind: 'diagram', meta: { title: 'hostile' } }, svg: `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">${svgBody}</svg>`, look: 'plain' }, { 'If-None-Match': '*' }),
});

/** A whole document as the picture's SVG (not wrapped). */
const wholePicture = (target: Target, svg: string): HostileRequest => ({
  method: 'PUT',
  path: `/projects/v1/${target.projectId}/pictures/whole-${++pictureCount}-${process.pid}`,
  ...json(target, { spec: { version: 1, kind: 'diagram', meta: { title: 'whole' } }, svg, look: 'plain' }, { 'If-None-Match': '*' }),
});

/** Log redaction (issue 23, item 1): every one is answered 4xx, so it is logged at `info`. */
export const LOG_CASES: Hostile[] = [
  { name: 'GET /nope followed by 15,000 `?`', budgetMs: LOG_BUDGET_MS, build: () => ({ method: 'GET', path: `/nope${'?'.repeat(15_000)}` }) },
  { name: 'a secret parameter after 15,000 `?`', budgetMs: LOG_BUDGET_MS, build: () => ({ method: 'GET', path: `/nope?${'?'.repeat(15_000)}&code=s3cr3t-after-the-questions` }) },
  { name: 'a 12 KB head of JWT look-alikes', budgetMs: LOG_BUDGET_MS, build: () => ({ method: 'GET', path: '/nope', headers: { 'X-Junk': 'eyJ-'.repeat(3_000) } }) },
  { name: 'JWT look-alikes in the URL', budgetMs: LOG_BUDGET_MS, build: () => ({ method: 'GET', path: `/nope?x=${'eyJ-'.repeat(3_500)}` }) },
  { name: '12 KB of `cookie:` in a header', budgetMs: LOG_BUDGET_MS, build: () => ({ method: 'GET', path: '/nope', headers: { 'X-Cookie': 'cookie:'.repeat(1_700) } }) },
  { name: 'a long `Bearer` run', budgetMs: LOG_BUDGET_MS, build: () => ({ method: 'GET', path: '/nope', headers: { 'X-Note': 'Bearer '.repeat(1_700) } }) },
  // Origin and Host parsing (src/http/origin.ts): refused 400 before anything reads the host.
  { name: 'a Host of 12 KB of labels', budgetMs: LOG_BUDGET_MS, build: () => ({ method: 'GET', path: '/nope', headers: { Host: 'a-'.repeat(3_000) + '.b'.repeat(3_000) } }) },
  { name: 'a bracketed Host of 12 KB', budgetMs: LOG_BUDGET_MS, build: () => ({ method: 'GET', path: '/nope', headers: { Host: `[${'0:'.repeat(6_000)}]` } }) },
  { name: 'an Origin of 12 KB', budgetMs: LOG_BUDGET_MS, build: () => ({ method: 'OPTIONS', path: '/policy/v1', headers: { Origin: `https://${'a.'.repeat(6_000)}example`, 'Access-Control-Request-Method': 'GET' } }) },
];

/** The worst cases of the other kinds of work issue 23 bounds: ingest redaction (issue 22) and the SVG checks (issue 24). */
export const FIXED_ELSEWHERE: Hostile[] = [
  // Ingest redaction (issue 22): one scan, in slices. Just under INGEST_MAX_STRING_LENGTH (1 MiB): accepted, so redaction reads all of it.
  { name: 'ingest: an event of 1 MB of `cookie:`', budgetMs: INGEST_BUDGET_MS, status: 200, build: (t) => ({ method: 'POST', path: '/ingest/v1', ...json(t, envelope(t, { text: 'cookie:'.repeat(149_000) })) }) },
  // The SVG checks (issue 24): both answered 400 at once now.
  { name: 'SVG: <use href> with 80,000 spaces', budgetMs: SVG_BUDGET_MS, build: (t) => picture(t, `<use href="#a${' '.repeat(80_000)}b"/>`) },
  { name: 'SVG: fill="rgb(0,0,0) " and 60,000 `a`', budgetMs: SVG_BUDGET_MS, build: (t) => picture(t, `<rect width="1" height="1" fill="rgb(0,0,0) ${'a'.repeat(60_000)}"/>`) },
  // Whole everyday pictures (an editor's diagram: DOCTYPE, metadata, Inkscape data, groups, text,
  // styles, paths), normalised, checked and stored: 201.
  { name: 'SVG: a whole 1 MB everyday picture (accepted)', budgetMs: SVG_BUDGET_MS, status: 201, build: (t) => wholePicture(t, realisticSvg(1024 * 1024)) },
  { name: 'SVG: a whole 2 MB everyday picture (accepted)', budgetMs: SVG_BUDGET_MS, status: 201, build: (t) => wholePicture(t, realisticSvg(2 * 1024 * 1024 - 4096)) },
  // Near the limits: 2 MB of 200,000 small elements the parser must build, refused only once all
  // are read (more than 100,000 drawn elements).
  { name: 'SVG: 2 MB of empty <g/> with attributes (refused)', budgetMs: SVG_BUDGET_MS, build: (t) => picture(t, '<g x="1"/>'.repeat(200_000)) },
];

/** Generated heads, shaped by each log rule's own pattern: the pieces it is made of and the characters that stop it. */
export const LOG_RULE_PIECES: Record<string, string[]> = {
  query: ['?', '&', '=', '#', 'a', 'code', 'token', '%41'],
  jwt: ['eyJ', '-', '.', 'a', '_', 'eyJ-', 'eyJ.'],
  scheme: ['Bearer', 'DPoP', 'Basic', ' ', '\t', 'a', '=', '/', '+', '.'],
  platform: ['platform_', 'ab_', 'a', '_', '-', 'platform_ab_'],
};

/** `runs` requests per log rule, their URL and one header made of the rule's pieces (fast-check, fixed seed). */
export function generatedLogCases(runs = 4): Hostile[] {
  return Object.entries(LOG_RULE_PIECES).flatMap(([rule, pieces]) =>
    fc.sample(fc.tuple(fc.array(fc.constantFrom(...pieces), { minLength: 1, maxLength: 12 }), fc.integer({ min: 1_000, max: 6_000 })), { numRuns: runs, seed: 23 }).map(([seed, length], index) => {
      const unit = seed.join('');
      const text = unit.repeat(Math.ceil(length / unit.length)).slice(0, length);
      const inUrl = encodeURI(text).replaceAll('#', '%23').slice(0, 11_000);
      const inHeader = [...text].map((c) => (c === '\t' || (c >= ' ' && c <= '~') ? c : 'a')).join('').slice(0, 4_000);
      return { name: `generated ${rule} ${index + 1}`, budgetMs: LOG_BUDGET_MS, build: (): HostileRequest => ({ method: 'GET', path: `/nope?${inUrl}`, headers: { 'X-Generated': inHeader } }) };
    }),
  );
}
