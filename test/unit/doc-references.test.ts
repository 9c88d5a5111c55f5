import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import ts from 'typescript';

/**
 * Every code comment that names a document names one in the repository, and a section it names
 * is a heading of that document. Comments are read with the TypeScript compiler (the scripts,
 * the tests and the code; the chart's templates and values by their `#` and `{{/* *\/}}` comments).
 * What counts as naming a document:
 * - a Markdown path (`docs/contributing/architecture.md`, `charts/platform/README.md`), from the
 *   repository's root or from the commenting file's folder; a bare name (`INDEX.md`) is any file
 *   of that name in the repository;
 * - a section: the document's name (`README`, `README's`, a Markdown path; also followed by a
 *   comma or a colon) and then a heading of it in double quotes, or a Markdown path with an
 *   `#anchor`. `README` is the repository's, `chart README` the chart's.
 * A document outside the repository (a design note on someone's disk) is no help to a reader of
 * the code: name the file in `docs/` that says it instead.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCANNED = ['src', 'adapters', 'policies', 'scripts', 'bin', 'test', 'charts'];
/** Data and generated output: their text is not the project's comments. */
const SKIPPED = new Set(['node_modules', 'fixtures', 'dist', 'coverage', '.jest-suite']);
const CODE = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']);
const HASH_COMMENTS = new Set(['.yaml', '.yml', '.tpl', '.sh']);

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (SKIPPED.has(name) || name.startsWith('.')) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return filesUnder(path);
    return CODE.has(extname(name)) || HASH_COMMENTS.has(extname(name)) ? [path] : [];
  });
}

/** The comments of a script, as the compiler sees them (strings and regular expressions are not comments). */
function codeComments(path: string, text: string): string[] {
  const kind = /\.[cm]?js$/.test(path) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const seen = new Map<number, string>();
  const collect = (ranges: readonly ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) seen.set(range.pos, text.slice(range.pos, range.end));
  };
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.pos));
    collect(ts.getTrailingCommentRanges(text, node.end));
    ts.forEachChild(node, visit);
  };
  visit(source);
  collect(ts.getLeadingCommentRanges(text, source.endOfFileToken.pos));
  return [...seen.values()];
}

/** `#` line comments (YAML, shell), and Go template comments `{{/* … *\/}}` (Helm). */
function hashComments(text: string): string[] {
  const comments: string[] = [];
  let block: string[] = [];
  for (const line of text.split('\n')) {
    const at = line.search(/(^|\s)#/);
    if (at >= 0) block.push(line.slice(at).replace(/^\s*#+/, ''));
    if (at < 0 || !/^\s*#/.test(line)) {
      if (block.length) comments.push(block.join('\n'));
      block = [];
    }
  }
  if (block.length) comments.push(block.join('\n'));
  const templates = [...text.matchAll(/\{\{-?\s*\/\*([\s\S]*?)\*\/\s*-?\}\}/g)].map((match) => match[1]!);
  return [...comments, ...templates];
}

/** A comment as prose: comment markers gone, white space folded, so a name broken over lines reads whole. */
const prose = (comment: string) =>
  comment
    .replace(/^\/\*+/, '')
    .replace(/\*\/$/, '')
    .replace(/^[ \t]*(\*|\/\/+|#+)/gm, ' ')
    .replace(/\s+/g, ' ');

interface Reference {
  file: string;
  document: string;
  section?: string;
  anchor?: string;
}

const MARKDOWN_PATH = /(?<![\w/.:-])((?:[\w.-]+\/)*[\w.-]+\.md)(#[\w-]+)?/g;
const SECTION = /(?<![\w/.-])((?:chart )?README|(?:[\w.-]+\/)*[\w.-]+\.md)(?:'s)?[,:]?\s+"([^"]+)"/g;

function referencesOf(file: string, comment: string): Reference[] {
  const text = prose(comment);
  const found: Reference[] = [];
  for (const match of text.matchAll(MARKDOWN_PATH)) {
    // A web address names a page elsewhere, not a file here.
    if (/https?:\/\/\S*$/.test(text.slice(0, match.index))) continue;
    found.push({ file, document: match[1]!, ...(match[2] ? { anchor: match[2].slice(1) } : {}) });
  }
  for (const match of text.matchAll(SECTION)) {
    const named = match[1]!;
    const document = named === 'README' ? 'README.md' : named === 'chart README' ? 'charts/platform/README.md' : named;
    found.push({ file, document, section: match[2]! });
  }
  return found;
}

const MARKDOWN_FILES = filesOfRepository().filter((path) => path.endsWith('.md'));

function filesOfRepository(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      if (name === 'node_modules' || name.startsWith('.')) return [];
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : [relative(ROOT, path)];
    });
  return walk(ROOT);
}

/** Where a named document is in the repository, or undefined. */
function resolve(reference: Reference): string | undefined {
  const { document, file } = reference;
  if (!document.includes('/')) {
    if (existsSync(join(dirname(join(ROOT, file)), document))) return relative(ROOT, join(dirname(join(ROOT, file)), document));
    return MARKDOWN_FILES.find((path) => basename(path) === document);
  }
  for (const candidate of [join(ROOT, document), join(dirname(join(ROOT, file)), document)]) {
    if (existsSync(candidate) && candidate.startsWith(ROOT)) return relative(ROOT, candidate);
  }
  return undefined;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function headingsOf(path: string): string[] {
  let fenced = false;
  const headings: string[] = [];
  for (const line of readFileSync(join(ROOT, path), 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (heading) headings.push(heading[1]!.replace(/`/g, '').trim());
  }
  return headings;
}

const references = SCANNED.flatMap((dir) => filesUnder(join(ROOT, dir))).flatMap((path) => {
  const text = readFileSync(path, 'utf8');
  const file = relative(ROOT, path);
  const comments = CODE.has(extname(path)) ? codeComments(path, text) : hashComments(text);
  return comments.flatMap((comment) => referencesOf(file, comment));
});

describe('documents named in comments', () => {
  it('finds the references it checks (the scan reads comments at all)', () => {
    expect(references.some((reference) => reference.document.startsWith('docs/') && reference.section)).toBe(true);
    expect(references.some((reference) => reference.document === 'docs/contributing/architecture.md')).toBe(true);
  });

  it('names documents that are in the repository', () => {
    const missing = references.filter((reference) => !resolve(reference)).map((reference) => `${reference.file}: ${reference.document}`);
    expect(missing).toEqual([]);
  });

  it('names sections that are headings of those documents', () => {
    const missing = references.flatMap((reference) => {
      const path = resolve(reference);
      if (!path || (!reference.section && !reference.anchor)) return [];
      const headings = headingsOf(path);
      const found = reference.section
        ? headings.some((heading) => heading.toLowerCase() === reference.section!.toLowerCase())
        : headings.some((heading) => anchorOf(heading) === reference.anchor);
      return found ? [] : [`${reference.file}: ${path} ${reference.section ? `"${reference.section}"` : `#${reference.anchor}`}`];
    });
    expect(missing).toEqual([]);
  });

  it('reads a name broken over comment lines, and a section after a comma', () => {
    const found = referencesOf('src/example.ts', '/**\n * (DESIGN.md, "The way a\n * request travels"); README\'s "Supported\n * databases" */');
    expect(found).toEqual([
      { file: 'src/example.ts', document: 'DESIGN.md' },
      { file: 'src/example.ts', document: 'DESIGN.md', section: 'The way a request travels' },
      { file: 'src/example.ts', document: 'README.md', section: 'Supported databases' },
    ]);
    expect(resolve({ file: 'src/example.ts', document: 'DESIGN.md' })).toBeUndefined();
    expect(referencesOf('x.ts', '// see https://git.example.com/platform-api/blob/main/NOWHERE.md#x')).toEqual([]);
  });
});
