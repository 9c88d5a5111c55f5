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
 * 4. the serialised text is read again, from the start: characters, parse, then every element,
 *    attribute, reference and style against `rules.ts` (`inspect.ts`), then the HTML reading
 *    (`html-reading.ts`, parse5) must see the same elements and attributes. So the rules judge
 *    exactly the text that is stored.
 */
export function checkSvg(text: string): CheckedSvg {
  prescan(text);
  const { document, removed } = normalise(parseXml(text));
  const svg = serialise(document, { finalLineEnd: ENDS_WITH_WHITE_SPACE.test(text) });
  // Reading the stored text again gives the tree just written, exactly, when that text is the
  // one sent and nothing was removed (an already normalised picture, saved again): its reading
  // is the one at hand. Otherwise the stored text is read from the start.
  const unchanged = svg === text && removed.length === 0;
  if (!unchanged) checkCharacters(svg);
  const elements = inspectTree(unchanged ? document : parseXml(svg));
  checkHtmlReading(svg, elements);
  return { svg, normalised: removed };
}
