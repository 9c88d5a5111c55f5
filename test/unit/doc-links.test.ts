import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';

/**
 * Every relative link of the README, SECURITY.md and docs/ (docs/**\/*.md) leads somewhere: the
 * file exists in the repository, and an `#anchor` is a heading of the Markdown file it names, as
 * GitHub makes anchors (lower case, punctuation dropped, spaces to hyphens, `-1`, `-2`… for a
 * heading that repeats). Links to web addresses are not followed.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Files other branches of the same change bring (the example client, the dev identity provider's
 * guide, policy push and the audit trail): a link to one is accepted while it is missing, and
 * checked like any other once it exists.
 */
const PENDING = new Set(['docs/api/example-client.md', 'docs/api/policy-push.md', 'docs/api/audit-trail.md', 'docs/operations/try-self-hosted.md', 'examples/workbench.mjs']);

function markdownUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(ROOT, path)).isDirectory() ? markdownUnder(path) : name.endsWith('.md') ? [path] : [];
  });
}

const DOCUMENTS = ['README.md', 'SECURITY.md', ...markdownUnder('docs')];

/** The lines that are prose: fenced code blocks left out, inline code spans blanked. */
function proseLines(text: string): string[] {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (!fence || marker.startsWith(fence))) {
      fence = fence ? undefined : marker;
      lines.push('');
      continue;
    }
    lines.push(fence ? '' : line.replace(/`[^`]*`/g, ''));
  }
  return lines;
}

/** GitHub's anchors of a Markdown text's headings, in order, repeats numbered. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence = false;
  for (const line of text.split('\n')) {
    if (/^\s*(`{3,}|~{3,})/.test(line)) fence = !fence;
    const heading = fence ? null : /^#{1,6} (.+)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count ? `${base}-${count}` : base);
  }
  return anchors;
}

interface Link {
  document: string;
  line: number;
  target: string;
}

/** The inline links and images of a Markdown text: `[text](target)`, `![alt](target "title")`. */
export function linksOf(document: string, text: string): Link[] {
  const links: Link[] = [];
  proseLines(text).forEach((line, index) => {
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ document, line: index + 1, target: match[1]! });
  });
  return links;
}

/** What is wrong with a link, or undefined when it leads somewhere. */
export function brokenLink(link: Link, read: (path: string) => string | undefined): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) return undefined;
  const [path = '', anchor] = link.target.split('#', 2) as [string, string | undefined];
  const file = path ? normalize(join(dirname(link.document), decodeURI(path))).replace(/\\/g, '/').replace(/\/$/, '') : link.document;
  if (file.startsWith('..')) return `${link.target} leaves the repository`;
  const text = read(file);
  if (text === undefined) return PENDING.has(file) ? undefined : `${link.target}: no file ${file}`;
  if (anchor === undefined || !file.endsWith('.md')) return undefined;
  return anchorsOf(text).has(anchor) ? undefined : `${link.target}: no heading of ${file} has the anchor #${anchor}`;
}

/** A file of the repository: its text, '' for a folder, undefined when there is none. */
function readRepository(path: string): string | undefined {
  const full = join(ROOT, path);
  if (!existsSync(full) || relative(ROOT, full).startsWith('..')) return undefined;
  return statSync(full).isDirectory() ? '' : readFileSync(full, 'utf8');
}

const LINKS = DOCUMENTS.flatMap((document) => linksOf(document, readFileSync(join(ROOT, document), 'utf8')));

describe('links of the README, SECURITY.md and docs/', () => {
  it('finds the links it checks, in every kind of document', () => {
    expect(LINKS.length).toBeGreaterThan(100);
    for (const document of ['README.md', 'SECURITY.md', 'docs/operations/configuration.md', 'docs/security/threat-model.md']) {
      expect(LINKS.some((link) => link.document === document)).toBe(true);
    }
    expect(LINKS.some((link) => link.target.startsWith('#'))).toBe(true);
  });

  it('all lead to a file of the repository and, with an anchor, to a heading of it', () => {
    const broken = LINKS.flatMap((link) => {
      const problem = brokenLink(link, readRepository);
      return problem ? [`${link.document}:${link.line}: ${problem}`] : [];
    });
    expect(broken).toEqual([]);
  });

  it('refuses a missing file, a missing anchor and a way out of the repository, and accepts the rest', () => {
    const files: Record<string, string> = {
      'README.md': '# Platform API\n\n## Quick start (self-hosted)\n\n```sh\n# not a heading\n```\n\n## Notes\n\n## Notes\n',
      'docs/api/teams.md': '# Teams (Cloud)\n',
    };
    const read = (path: string) => files[path];
    const check = (document: string, target: string) => brokenLink({ document, line: 1, target }, read);
    expect(check('README.md', '#quick-start-self-hosted')).toBeUndefined();
    expect(check('README.md', '#notes-1')).toBeUndefined();
    expect(check('README.md', '#not-a-heading')).toMatch(/no heading of README.md has the anchor #not-a-heading/);
    expect(check('README.md', 'docs/api/teams.md#teams-cloud')).toBeUndefined();
    expect(check('docs/api/teams.md', '../../README.md#notes')).toBeUndefined();
    expect(check('docs/api/teams.md', '../../README.md#teams')).toMatch(/no heading/);
    expect(check('docs/api/teams.md', 'projects.md')).toMatch(/no file docs\/api\/projects.md/);
    expect(check('docs/api/teams.md', '../../../elsewhere.md')).toMatch(/leaves the repository/);
    expect(check('README.md', 'https://example.com/nowhere#x')).toBeUndefined();
    expect(check('README.md', 'docs/api/policy-push.md')).toBeUndefined();
  });

  it('reads links outside code only, images and titled links included', () => {
    const text = 'See [a](a.md) and ![b](images/b.png "B").\n\n```sh\necho "[c](c.md)"\n```\n\n`[d](d.md)` [e](<e.md>)\n';
    expect(linksOf('x.md', text).map((link) => link.target)).toEqual(['a.md', 'images/b.png', 'e.md']);
  });
});
