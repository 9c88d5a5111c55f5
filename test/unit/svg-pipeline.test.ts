import { describe, expect, it } from '@jest/globals';
import { checkSvg } from '../../src/modules/pictures/svg/pipeline.js';
import { svgRefusal } from '../support/svg.js';
import { referenceProblem, urlAsParsed } from '../../src/modules/pictures/svg/references.js';

const svg = (body: string, attributes = '') => `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"${attributes}>${body}</svg>`;

const refusal = svgRefusal;

describe('the SVG pipeline', () => {
  it('accepts a plain picture, with a byte order mark and a UTF-8 declaration', () => {
    expect(() => checkSvg(svg('<rect width="1" height="1"/>'))).not.toThrow();
    expect(() => checkSvg(`\uFEFF<?xml version="1.0" encoding="utf-8"?>${svg('')}`)).not.toThrow();
    expect(() => checkSvg(`<!-- a comment -->\n${svg('<!-- another -->')}`)).not.toThrow();
  });

  it('names where it refuses: element paths count same-named siblings from one, attributes follow @', () => {
    const found = refusal(svg('<g/><g><rect/><rect/><rect onclick="x"/></g>'));
    expect(found).toMatchObject({ code: 'unsafe_svg', where: '/svg/g[2]/rect[3]/@onclick' });
    expect(refusal(svg('<g><g><foreignObject/></g></g>')).where).toBe('/svg/g[1]/g[1]/foreignObject[1]');
    expect(refusal(`<svg xmlns="http://www.w3.org/2000/svg">\n  <rect>\n</svg>`)).toMatchObject({ code: 'invalid_svg', where: 'line 3, column 6' });
    expect(refusal(`${svg('')}\n&nbsp;`).where).toBe('line 2, column 1');
  });

  it('cuts long values in messages and escapes control characters', () => {
    const { reason } = refusal(svg(`<use href="https://evil.example/${'a'.repeat(200)}"/>`));
    expect(reason.length).toBeLessThan(250);
    expect(reason).toContain('...');
    expect(refusal(svg('<use href="java&#9;script:x"/>')).reason).toContain('"java\\tscript:x"');
  });

  it('refuses anything but one <svg> root', () => {
    expect(refusal('<g xmlns="http://www.w3.org/2000/svg"/>')).toMatchObject({ code: 'invalid_svg' });
    expect(refusal('')).toMatchObject({ code: 'invalid_svg' });
    expect(refusal(`${svg('')}<svg xmlns="http://www.w3.org/2000/svg"/>`).code).toBe('invalid_svg');
    expect(refusal(`${svg('')}text after`).code).toBe('invalid_svg');
  });

  it('allows data: raster images on <image> and <feImage> only, and no SVG in them', () => {
    const png = 'data:image/png;base64,iVBORw0KGgo=';
    expect(() => checkSvg(svg(`<image href="${png}"/><filter id="f"><feImage xlink:href="${png}"/></filter>`))).not.toThrow();
    expect(() => checkSvg(svg(`<image href="DATA:IMAGE/JPEG;base64,/9j/"/>`))).not.toThrow();
    expect(refusal(svg(`<use href="${png}"/>`)).reason).toContain('data: URLs of type "image/png" are not allowed here');
    expect(refusal(svg('<image href="data:image/svg+xml,%3Csvg/%3E"/>')).reason).toContain('image/svg+xml');
    expect(refusal(svg('<rect href="#a"/>')).reason).toContain('<rect> may not carry href');
  });

  it('allows data: fonts in @font-face src only', () => {
    expect(() => checkSvg(svg('<style>@font-face{font-family:a;src:url(data:font/woff2;base64,AAAA) format("woff2")}</style>'))).not.toThrow();
    expect(refusal(svg('<style>rect{fill:url(data:font/woff2;base64,AAAA)}</style>')).reason).toContain('data: URLs of type "font/woff2"');
    expect(refusal(svg('<style>@font-face{font-family:a;src:url(#f)}</style>')).reason).toContain('a font must be embedded as a data: URL');
  });

  it('reads references as a URL parser does: spacing, controls, case and entities hide nothing', () => {
    expect(urlAsParsed(' \u0001 java\tscr\nipt:x \u0000')).toBe('javascript:x');
    for (const value of ['javascript:x', ' JAVASCRIPT:x', 'java\tscript:x', '\u0000javascript:x', '%6A%61vascript:x', '/relative', '?q', '', '#', '# a']) {
      expect(referenceProblem(value, 'fragment')).toBeDefined();
    }
    for (const value of ['#a', ' #a-b.c_d:e ', '#ünïcode']) expect(referenceProblem(value, 'fragment')).toBeUndefined();
  });

  it('refuses markup an HTML parser reads differently from XML', () => {
    // CDATA in <title> (an HTML integration point) is a bogus comment to HTML, ended at its first ">".
    const found = refusal(svg('<title><![CDATA[><img src=x>]]></title>'));
    expect(found.reason).toContain('reads differently as HTML: an HTML parser reads an element <img>');
    expect(found.where).toBe('/svg/title[1]');
    // CDATA holding "<" where both read the same: allowed (a CSS comment in a style sheet, text).
    expect(checkSvg(svg('<style><![CDATA[ /* a < b */ rect { fill: red } ]]></style><text><![CDATA[1 < 2]]></text>')).svg).toContain('<![CDATA[ /* a < b */');
  });

  it('refuses characters HTML reads differently, also when written as references', () => {
    // U+0096 through a character reference: XML keeps it, HTML maps it to an en dash; written out
    // by the serialiser, the stored text's own check refuses it.
    expect(refusal(svg('<rect aria-label="a&#150;b"/>')).reason).toContain('U+0096');
  });

  it('keeps title, desc and style to text', () => {
    expect(() => checkSvg(svg('<title>A &amp; B</title><desc><![CDATA[plain text]]></desc>'))).not.toThrow();
    expect(checkSvg(svg('<desc><!-- c --></desc>')).svg).toContain('<desc/>');
    expect(refusal(svg('<desc><a/></desc>')).reason).toContain('holds text only, not <a>');
    expect(refusal(svg('<title><tspan/></title>')).reason).toContain('holds text only, not <tspan>');
  });

  it('checks namespace declarations and prefixes', () => {
    expect(refusal(svg('<rect xmlns:a="urn:a"/>')).reason).toContain('xmlns:a');
    expect(refusal(svg('<a:rect xmlns:a="http://www.w3.org/2000/svg"/>')).reason).toContain('would change what the prefix a: means');
    expect(refusal('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xhtml"/>').reason).toContain('xmlns:xlink must be');
    expect(refusal(svg('<rect xlink:title="t"/>')).reason).toContain('xlink:title');
    expect(refusal(svg('<x:rect/>')).code).toBe('invalid_svg');
  });

  it('limits nesting to 128 elements', () => {
    const nested = (depth: number) => svg(`${'<g>'.repeat(depth - 1)}${'</g>'.repeat(depth - 1)}`);
    expect(() => checkSvg(nested(128))).not.toThrow();
    expect(refusal(nested(129)).reason).toContain('nested deeper than 128');
  });

  it('counts what <use> draws: shared targets are fine, an explosion or a loop is not', () => {
    const icons = `<defs><g id="icon">${'<rect/>'.repeat(20)}</g></defs>${'<use href="#icon"/>'.repeat(2_000)}`;
    expect(() => checkSvg(svg(icons))).not.toThrow();
    const tooMany = `<defs><g id="icon">${'<rect/>'.repeat(60)}</g></defs>${'<use href="#icon"/>'.repeat(2_000)}`;
    expect(refusal(svg(tooMany)).reason).toContain('more than 100000');
    expect(refusal(svg('<g id="a"><g><use xlink:href="#b"/></g></g><g id="b"><use href="#a"/></g>')).reason).toContain('loop');
    expect(() => checkSvg(svg('<use href="#nowhere"/><rect id="a"/><rect id="a"/>'))).not.toThrow();
  });

  it('checks SMIL: what may be animated, and url() in values', () => {
    expect(() => checkSvg(svg('<rect><animate attributeName="width" from="1" to="2" dur="1s" begin="accessKey(a)"/></rect>'))).not.toThrow();
    for (const name of ['href', 'xlink:href', 'style', 'class', 'id', 'onclick', 'attributeName']) {
      expect(refusal(svg(`<rect><set attributeName="${name}" to="x"/></rect>`)).reason).toContain('animating');
    }
    expect(refusal(svg('<rect><animate attributeName="fill" to="url(//x/#a)"/></rect>')).reason).toContain('url("//x/#a")');
    expect(refusal(svg('<rect from="1"/>')).reason).toContain('from is not allowed on <rect>');
  });

  it('checks presentation attributes for functions, escapes and comments', () => {
    expect(() => checkSvg(svg('<rect fill="rgb(1 2 3)" transform="translate(1,2) rotate(45) scale(2)" clip-path="url(\'#c\')"/>'))).not.toThrow();
    expect(refusal(svg('<rect fill="image(x)"/>')).reason).toContain('"image("');
    expect(refusal(svg('<rect fill="u/**/rl(#a)"/>')).reason).toContain('CSS comment');
    expect(refusal(svg('<rect fill="url(#a"/>')).reason).toContain('unclosed url(');
    expect(refusal(svg('<rect fill="url(\'#a)"/>')).reason).toContain('malformed url()');
    expect(() => checkSvg(svg('<rect aria-label="Sales (2026)" id="x(1)"/>'))).not.toThrow();
  });

  it('checks style attributes and sheets with a CSS parser', () => {
    expect(() => checkSvg(svg('<rect style="fill: red; stroke: rgb(0,0,0); font: 12px/1.5 sans-serif"/>'))).not.toThrow();
    expect(refusal(svg('<rect style="fill: red; -moz-binding: none"/>')).reason).toContain('-moz-binding');
    expect(refusal(svg('<style>@page{}</style>')).reason).toContain('@page');
    expect(refusal(svg('<style>@\\69mport "x";</style>')).reason).toContain('at-rule');
    expect(refusal(svg('<style>rect{\\62 ehavior:url(#a)}</style>')).reason).toContain('escapes');
  });

  it('refuses characters that are not XML characters, and unpaired surrogates', () => {
    expect(refusal(svg('<text>\u0007</text>')).reason).toContain('U+0007');
    expect(refusal(svg('<text>\uD800</text>')).reason).toContain('U+D800');
    expect(refusal(svg('<text>\uFFFE</text>')).reason).toContain('U+FFFE');
    expect(() => checkSvg(svg('<text>\uD83D\uDE80</text>'))).not.toThrow();
  });
});
