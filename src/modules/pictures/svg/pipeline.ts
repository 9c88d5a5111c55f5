import { checkHtmlReading } from './html-reading.js';
import { inspectTree } from './inspect.js';
import { parseXml } from './parse.js';
import { prescan } from './prescan.js';

export { SvgRefusal, type SvgRefusalCode } from './refusal.js';

/**
 * The SVG safety pipeline. A picture's SVG passes, or is refused with an `SvgRefusal` naming
 * what and where; it is never rewritten (a picture that passes is stored as sent).
 *
 * 1. prescan (`prescan.ts`): the text itself, before any parser: no DOCTYPE or other
 *    declarations, no entities but XML's five, no processing instructions, no control characters,
 *    no comment or CDATA section an HTML parser would end differently;
 * 2. parse (`parse.ts`): svgo's strict XML parser; not well-formed is `invalid_svg`;
 * 3. inspect (`inspect.ts`): every element, attribute, reference and style against `rules.ts`;
 * 4. HTML reading (`html-reading.ts`): htmlparser2 must see the same elements and attributes,
 *    so a page that inlines the picture shows exactly what was checked.
 */
export function checkSvg(text: string): void {
  prescan(text);
  const elements = inspectTree(parseXml(text));
  checkHtmlReading(text, elements);
}
