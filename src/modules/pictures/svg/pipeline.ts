import { checkHtmlReading } from './html-reading.js';
import { inspectTree } from './inspect.js';
import { normalise } from './normalise.js';
import { parseXml } from './parse.js';
import { checkCharacters, prescan } from './prescan.js';
import type { NormalisedKind } from './rules.js';
import { serialise } from './serialise.js';

export { SvgRefusal, type SvgRefusalCode } from './refusal.js';
export type { NormalisedKind } from './rules.js';

export interface CheckedSvg {
  /** The normalised document: what the rules checked, and what is stored, versioned and served. */
  svg: string;
  /** What normalisation removed (empty when nothing was). */
  normalised: NormalisedKind[];
}

const ENDS_WITH_WHITE_SPACE = /[ \t\r\n]$/;

/**
 * The SVG safety pipeline. A picture's SVG passes, normalised, or is refused with an
 * `SvgRefusal` naming what and where. Nothing dangerous is ever removed or rewritten: only the
 * inert material of `normalise.ts` is removed.
 *
 * 1. prescan (`prescan.ts`): the text itself: only the standard SVG DOCTYPE, no other
 *    declaration, no entity but XML's five, UTF-8 XML 1.0, no control characters;
 * 2. parse (`parse.ts`): saxes, strict and namespace-aware; not well-formed is `invalid_svg`;
 * 3. normalise (`normalise.ts`) the tree, and serialise it (`serialise.ts`);
 * 4. the serialised text is checked: its characters (`prescan.ts`) and then every element,
 *    attribute, reference and style of the tree it was written from against `rules.ts`
 *    (`inspect.ts`); then the HTML reading (`html-reading.ts`, parse5) of that very text must see
 *    the same elements, namespaces, attributes, values and style sheets as that tree.
 *
 * The XML reading of the stored text is that tree, by the serialiser's construction: it writes
 * only from the tree, escapes every character that could end a value or start markup, and keeps
 * CDATA, comments and instructions to what the parse read between their delimiters (so they
 * cannot hold their own end); normalisation joins the text it brings together and refuses a
 * namespace removal that would change a remaining name. `test/unit/svg-corpus.test.ts` reads the
 * written text back with saxes and requires the same tree, on every corpus file and on mutations
 * of them. The text is not parsed a second time here: that parse was a third of the pipeline's
 * time on large pictures. What a second reading could still disagree on is checked on the stored
 * text itself: its characters here, and the HTML reading, which browsers use inline.
 */
export function checkSvg(text: string): CheckedSvg {
  prescan(text);
  const { document, removed } = normalise(parseXml(text));
  const svg = serialise(document, { finalLineEnd: ENDS_WITH_WHITE_SPACE.test(text) });
  if (svg !== text) checkCharacters(svg);
  const elements = inspectTree(document);
  checkHtmlReading(svg, elements);
  return { svg, normalised: removed };
}
