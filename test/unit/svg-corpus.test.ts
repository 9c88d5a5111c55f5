import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { checkSvg, SvgRefusal } from '../../src/modules/pictures/svg/pipeline.js';

/**
 * The two corpora of test/fixtures/svg: every known attack refused, every legitimate picture
 * accepted as it is. Each corpus has an INDEX.md naming every file (and, for attacks, its source).
 */

const FIXTURES = join(process.cwd(), 'test/fixtures/svg');

function corpus(name: 'attacks' | 'legit'): { file: string; text: string }[] {
  const dir = join(FIXTURES, name);
  return readdirSync(dir)
    .filter((file) => file.endsWith('.svg'))
    .sort()
    .map((file) => ({ file, text: readFileSync(join(dir, file), 'utf8') }));
}

function indexed(name: 'attacks' | 'legit'): Map<string, string[]> {
  const rows = readFileSync(join(FIXTURES, name, 'INDEX.md'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('| `'));
  return new Map(rows.map((line) => [/`([^`]+)`/.exec(line)![1]!, line.split(' | ').map((cell) => cell.trim())]));
}

const attacks = corpus('attacks');
const legit = corpus('legit');

describe('the attack corpus', () => {
  it('holds at least 100 vectors, each listed in INDEX.md with what it tries and its source', () => {
    expect(attacks.length).toBeGreaterThanOrEqual(100);
    const index = indexed('attacks');
    expect([...index.keys()].sort()).toEqual(attacks.map(({ file }) => file));
    for (const [, cells] of index) {
      expect(cells).toHaveLength(3);
      expect(cells[1]!.length).toBeGreaterThan(5);
      expect(cells[2]).toMatch(/DOMPurify|html5sec|OWASP|PortSwigger|svg-sanitizer|cure53|this service/);
    }
  });

  it.each(attacks)('refuses $file', ({ text }) => {
    let refusal: unknown;
    try {
      checkSvg(text);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(SvgRefusal);
    const { code, reason, where } = refusal as SvgRefusal;
    expect(['unsafe_svg', 'invalid_svg']).toContain(code);
    expect(reason.length).toBeGreaterThan(10);
    expect(where).toMatch(/^(\/svg|\/|line \d+, column \d+)/);
  });
});

describe('the legitimate corpus', () => {
  it('holds at least 30 pictures, each listed in INDEX.md', () => {
    expect(legit.length).toBeGreaterThanOrEqual(30);
    expect([...indexed('legit').keys()].sort()).toEqual(legit.map(({ file }) => file));
  });

  it.each(legit)('accepts $file', ({ text }) => {
    expect(() => checkSvg(text)).not.toThrow();
  });
});
