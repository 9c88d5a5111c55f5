import { describe, expect, it } from '@jest/globals';
import { checkSvg, SvgRefusal } from '../../src/modules/pictures/svg/pipeline.js';
import { svgRefusal } from '../support/svg.js';
import { MAX_VALUE_LENGTH } from '../../src/modules/pictures/svg/rules.js';

/** Normalisation (what is removed, what is kept, what is refused instead), the SVG 2 vocabulary
 * the rules now allow, one by one, and the work limits of the checks. */

const OPEN = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">';
const svg = (body: string) => `${OPEN}${body}</svg>`;
const DOCTYPE_11 = '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">';
const DOCTYPE_10 = '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.0//EN"\n  "http://www.w3.org/TR/2001/REC-SVG-20010904/DTD/svg10.dtd">';
const INKSCAPE = 'http://www.inkscape.org/namespaces/inkscape';
const SODIPODI = 'http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd';

const refusal = svgRefusal;

describe('normalisation', () => {
  it('removes the standard SVG 1.1 and 1.0 DOCTYPEs, and keeps the XML declaration', () => {
    const text = `<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n${DOCTYPE_11}\n${svg('<rect/>')}\n`;
    expect(checkSvg(text)).toEqual({ svg: `<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n${svg('<rect/>')}\n`, normalised: ['doctype'] });
    expect(checkSvg(`${DOCTYPE_10}\n${svg('')}`)).toEqual({ svg: `${OPEN.slice(0, -1)}/>`, normalised: ['doctype'] });
  });

  it('refuses every other DOCTYPE: a "[" anywhere in it, another identifier, SYSTEM alone, a second one', () => {
    for (const doctype of [
      `${DOCTYPE_11.slice(0, -1)} []>`,
      DOCTYPE_11.replace('svg11.dtd', 'svg11.dtd[x]'),
      DOCTYPE_11.replace('//EN', '//EN[x]'),
      DOCTYPE_11.replace('svg11.dtd', 'svg10.dtd'),
      '<!DOCTYPE svg SYSTEM "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">',
      '<!DOCTYPE svg>',
      `${DOCTYPE_11}${DOCTYPE_11}`,
    ]) {
      expect(refusal(`${doctype}\n${svg('')}`).reason).toMatch(/DOCTYPE|declaration/);
    }
    expect(refusal(`${DOCTYPE_11}<!-- <!ENTITY x "<script/>"> -->${svg('<text>&x;</text>')}`).reason).toContain('entity reference "&x;"');
  });

  it('removes comments and processing instructions anywhere, <?xml-stylesheet?> included', () => {
    const text = `<?xml-stylesheet href="x.css"?><!-- a -->${svg('<!-- b --><g><?pi data?><rect/></g>')}`;
    expect(checkSvg(text)).toEqual({ svg: svg('<g><rect/></g>'), normalised: ['comment', 'processing-instruction'] });
  });

  it('removes <metadata> under any prefix bound to SVG, and RDF outside it', () => {
    const text = `<svg xmlns="http://www.w3.org/2000/svg" xmlns:s="http://www.w3.org/2000/svg" xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><metadata><rdf:RDF/></metadata><s:metadata><x/></s:metadata><rdf:Description/><rect rdf:about="x"/></svg>`;
    expect(checkSvg(text)).toEqual({ svg: '<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>', normalised: ['metadata', 'namespace-declaration'] });
  });

  it('removes editor elements and attributes by namespace URI, whatever the prefix', () => {
    const text = `<svg xmlns="http://www.w3.org/2000/svg" xmlns:ed="${INKSCAPE}" xmlns:sodipodi="${SODIPODI}" ed:version="1.2"><sodipodi:namedview><ed:grid/></sodipodi:namedview><g ed:label="Layer 1" ed:groupmode="layer"><rect sodipodi:nodetypes="cc"/></g></svg>`;
    expect(checkSvg(text)).toEqual({ svg: '<svg xmlns="http://www.w3.org/2000/svg"><g><rect/></g></svg>', normalised: ['editor-data', 'namespace-declaration'] });
    // A prefix named like an editor's but bound elsewhere is not editor data.
    expect(refusal(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:inkscape="urn:other"><rect inkscape:label="x"/></svg>`).reason).toContain('xmlns:inkscape is not allowed');
  });

  it('removes a redundant xmlns:svg, and refuses rather than change what a remaining name means', () => {
    expect(checkSvg(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:svg="http://www.w3.org/2000/svg"><rect/></svg>`).normalised).toEqual(['namespace-declaration']);
    const used = refusal(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:svg="http://www.w3.org/2000/svg"><svg:rect/></svg>`);
    expect(used).toMatchObject({ code: 'unsafe_svg', where: '/svg/@xmlns:svg' });
    expect(used.reason).toContain('would change what the prefix svg: means');
    // An attribute value read as a name counts: SMIL's attributeName.
    const animated = refusal(svg(`<g xmlns:xlink="${INKSCAPE}"><rect><set attributeName="xlink:href" to="x"/></rect></g>`));
    expect(animated.where).toBe('/svg/g[1]/@xmlns:xlink');
  });

  it('keeps white space inside text, and drops it beside what it removes elsewhere', () => {
    expect(checkSvg(svg('\n  <!-- c -->\n  <g/>\n')).svg).toBe(svg('\n  <g/>\n'));
    expect(checkSvg(svg('<text>a <!-- c --> b</text>')).svg).toBe(svg('<text>a  b</text>'));
  });

  it('writes one fixed form: double quotes, escapes, empty elements closed, references resolved', () => {
    const text = `<svg xmlns='http://www.w3.org/2000/svg'><text x = '1' aria-label="a&#10;b &amp; &lt;c&gt; &#160;">x &gt; y &#x263A;</text><g></g></svg>`;
    expect(checkSvg(text).svg).toBe('<svg xmlns="http://www.w3.org/2000/svg"><text x="1" aria-label="a&#10;b &amp; &lt;c&gt; \u00A0">x &gt; y \u263A</text><g/></svg>');
  });

  it('is idempotent: the normalised text normalises to itself, with nothing removed', () => {
    const text = `\uFEFF<?xml version="1.0"?>\n${DOCTYPE_11}\n<!-- c -->\n<svg xmlns="http://www.w3.org/2000/svg" xmlns:inkscape="${INKSCAPE}" inkscape:version="1"><metadata/><text xml:space="preserve">\r\n a\tb </text><style><![CDATA[ rect > g { fill: red } ]]></style></svg>\n`;
    const first = checkSvg(text);
    expect(first.normalised).toEqual(['doctype', 'comment', 'metadata', 'editor-data', 'namespace-declaration']);
    expect(checkSvg(first.svg)).toEqual({ svg: first.svg, normalised: [] });
  });

  it('never removes what is dangerous: it is refused as before', () => {
    expect(refusal(svg('<script>alert(1)</script>')).reason).toContain('<script>');
    expect(refusal(svg('<rect onclick="x"/>')).reason).toContain('event handler');
    expect(refusal(svg('<foreignObject/>')).reason).toContain('<foreignObject>');
    expect(refusal(svg('<use href="https://evil.example/#a"/>')).reason).toContain('scheme https:');
  });
});

describe('the SVG 2 inert vocabulary', () => {
  it('<a> linking to #id, with target _self or _top', () => {
    expect(() => checkSvg(svg('<a href="#r" target="_top"><rect id="r"/></a><a xlink:href="#r" target="_self" xlink:title="t"><text>t</text></a>'))).not.toThrow();
    expect(refusal(svg('<a href="https://evil.example/"><text>x</text></a>')).reason).toContain('within the picture');
    expect(refusal(svg('<a href="#javascript:alert(1)"/>')).reason).toContain('without ":"');
    expect(refusal(svg('<a href="#r" target="_blank"/>')).reason).toContain('_blank');
  });

  it('<switch> with the conditional processing attributes', () => {
    expect(() => checkSvg(svg('<switch><text systemLanguage="de">Hallo</text><g requiredExtensions="" requiredFeatures="http://www.w3.org/TR/SVG11/feature#Shape"/><text>Hello</text></switch>'))).not.toThrow();
    expect(refusal(svg('<switch><foreignObject/><text>x</text></switch>')).reason).toContain('<foreignObject>');
  });

  it('mask-type', () => {
    expect(() => checkSvg(svg('<mask id="m" mask-type="alpha"><rect/></mask>'))).not.toThrow();
  });

  it('data-* in lower case, as HTML reads it', () => {
    expect(() => checkSvg(svg('<rect data-id="n1" data-x.y_z-2="&lt;b&gt;"/>'))).not.toThrow();
    expect(refusal(svg('<rect data-Id="n1"/>')).reason).toContain('data-Id is not allowed');
  });

  it('aria-*, role, lang and xml:lang', () => {
    expect(() => checkSvg(svg('<g role="img" lang="en" xml:lang="en" aria-roledescription="chart" aria-live="polite"><rect aria-hidden="true"/></g>'))).not.toThrow();
    expect(refusal(svg('<rect aria-Label="x"/>')).reason).toContain('aria-Label');
  });

  it('paint-order and vector-effect', () => {
    expect(() => checkSvg(svg('<text paint-order="stroke markers" vector-effect="non-scaling-stroke">x</text>'))).not.toThrow();
  });

  it('the other SVG 2 presentation attributes that take no reference', () => {
    const attributes = 'transform-box="fill-box" white-space="pre" inline-size="100" line-height="1.2" text-overflow="ellipsis" font-kerning="none" font-variant-caps="small-caps" font-variant-numeric="tabular-nums" font-feature-settings="&quot;liga&quot; 0" text-decoration-line="underline" text-decoration-style="wavy" text-decoration-color="red" text-orientation="upright"';
    expect(() => checkSvg(svg(`<text ${attributes}>x</text>`))).not.toThrow();
    // shape-inside takes url(): not added.
    expect(refusal(svg('<text shape-inside="url(#a)">x</text>')).reason).toContain('shape-inside');
  });

  it('still refuses iframe, handler, listener, animations aimed at href, and on* handlers', () => {
    expect(refusal(svg('<iframe/>')).reason).toContain('<iframe>');
    expect(refusal(svg('<handler/>')).reason).toContain('<handler>');
    expect(refusal(svg('<listener/>')).reason).toContain('<listener>');
    expect(refusal(svg('<a href="#r"><set attributeName="href" to="javascript:x"/></a>')).reason).toContain('animating "href"');
    expect(refusal(svg('<a href="#r" onclick="x"/>')).reason).toContain('event handler');
  });
});

describe('work limits', () => {
  /** Generous against the 200 ms budget: the machine running the tests is shared and slow. */
  const BUDGET_MS = 1_000;
  /**
   * The time a plain picture of the same length takes (one long text), measured just before: how
   * fast the machine reads text at that moment. A check may take `budget`, or 30 times that if the
   * machine is slower than that now (a loaded CI machine made a 20,000-rule sheet take 4 s); a
   * quadratic reading stays far above either.
   */
  function plainMs(length: number): number {
    const plain = svg(`<desc>${'a'.repeat(length)}</desc>`);
    const started = performance.now();
    void checkSvg(plain);
    return performance.now() - started;
  }
  function timed(text: string, budget = BUDGET_MS): { ms: number; limit: number; refusal?: SvgRefusal } {
    const limit = Math.max(budget, 30 * plainMs(text.length));
    const started = performance.now();
    let found: SvgRefusal | undefined;
    try {
      void checkSvg(text);
    } catch (error) {
      if (!(error instanceof SvgRefusal)) throw error;
      found = error;
    }
    return { ms: performance.now() - started, limit, ...(found ? { refusal: found } : {}) };
  }

  it('a long run of spaces inside an href is read once (urlAsParsed was quadratic: 5.6 s)', () => {
    const { ms, limit, refusal: found } = timed(svg(`<use href="#a${' '.repeat(80_000)}b"/>`));
    expect(ms).toBeLessThan(limit);
    expect(found?.reason).toContain(`longer than ${MAX_VALUE_LENGTH}`);
    // Under the value limit, the same shape is read in one pass.
    const short = timed(svg(`<use href="#a${' '.repeat(MAX_VALUE_LENGTH - 10)}b"/>`));
    expect(short.ms).toBeLessThan(short.limit);
    expect(short.refusal?.reason).toContain('malformed #id');
  });

  it('a long name after a function call is read once (the function scan was quadratic: 3.3 s, and accepted)', () => {
    const { ms, limit, refusal: found } = timed(svg(`<rect fill="rgb(0,0,0) ${'a'.repeat(60_000)}"/>`));
    expect(ms).toBeLessThan(limit);
    expect(found).toMatchObject({ code: 'unsafe_svg', where: '/svg/rect[1]/@fill' });
    expect(found?.reason).toContain(`the value of fill is longer than ${MAX_VALUE_LENGTH} characters`);
    const names = timed(svg(`<rect fill="${'a('.repeat(4_000)}"/>`));
    expect(names.ms).toBeLessThan(names.limit);
    expect(names.refusal?.reason).toContain('the function "a(" is not allowed');
  });

  it('caps attribute and style values, names the rule, and lets long path data through', () => {
    expect(refusal(svg(`<rect style="fill:${'a'.repeat(MAX_VALUE_LENGTH)}"/>`)).reason).toContain('the value of style is longer than');
    expect(refusal(svg(`<rect data-x="${'a'.repeat(MAX_VALUE_LENGTH + 1)}"/>`)).reason).toContain('the value of data-x is longer than');
    const path = `M0 0${' L1 1'.repeat(200_000)}`;
    const { ms, limit, refusal: found } = timed(svg(`<path d="${path}"/><polyline points="${'1,1 '.repeat(100_000)}"/>`), BUDGET_MS * 2);
    expect(found).toBeUndefined();
    expect(ms).toBeLessThan(limit);
    expect(() => checkSvg(svg(`<image href="data:image/png;base64,${'A'.repeat(200_000)}"/>`))).not.toThrow();
  });

  it('bounds CSS work: deep brackets are refused before the parser, long sheets and many style attributes stay within budget', () => {
    expect(refusal(svg(`<style>${'a{'.repeat(40)}</style>`)).reason).toContain('nested deeper than 32');
    const sheet = `<style>${'.c{fill:rgb(1,2,3);stroke:url(#g)}'.repeat(20_000)}</style>`;
    const sheetCheck = timed(svg(sheet), BUDGET_MS * 2);
    expect(sheetCheck.ms).toBeLessThan(sheetCheck.limit);
    const styles = '<rect style="fill:rgb(1,2,3);stroke:url(#g)"/>'.repeat(20_000);
    const stylesCheck = timed(svg(styles), BUDGET_MS * 2);
    expect(stylesCheck.ms).toBeLessThan(stylesCheck.limit);
    const font = `<style>@font-face{font-family:a;src:url(data:font/woff2;base64,${'A'.repeat(900_000)})}</style>`;
    const fontCheck = timed(svg(font), BUDGET_MS * 2);
    expect(fontCheck.ms).toBeLessThan(fontCheck.limit);
  });
});
