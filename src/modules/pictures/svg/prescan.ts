import { SvgRefusal, positionOf, shown } from './refusal.js';
import { STANDARD_DOCTYPES } from './rules.js';

/**
 * What is refused in the text itself, before the parser reads it:
 * - a DOCTYPE other than the standard SVG 1.0 or 1.1 one (`<!DOCTYPE svg PUBLIC` with the SVG
 *   public identifier and its own system identifier, nothing else, in the prolog): any `[` (an
 *   internal subset, where entities are declared, wherever it hides: behind a public identifier,
 *   in a literal, in a comment of the subset), another identifier, `SYSTEM` alone; and every other
 *   markup declaration (`<!ENTITY`, `<!ELEMENT`, `<!ATTLIST`, …), wherever it stands;
 * - references to entities other than XML's five (`&lt;` `&gt;` `&amp;` `&quot;` `&apos;`);
 *   character references (`&#160;`) are characters and allowed;
 * - an XML declaration of a version other than 1.0 or naming an encoding other than UTF-8;
 * - characters that are not XML characters or that parsers read differently (C0 controls other
 *   than tab, line feed and carriage return; DEL and C1; U+FFFE, U+FFFF; unpaired surrogates).
 *   The same check runs again on the normalised text, where character references are written
 *   out as the characters they stand for.
 * Comments and processing instructions are the parser's to read and normalisation's to remove.
 * All scans are linear; nothing here recurses.
 */

function refuse(text: string, offset: number, reason: string, code: 'invalid_svg' | 'unsafe_svg' = 'unsafe_svg'): never {
  throw new SvgRefusal(code, reason, positionOf(text, offset));
}

const XML_DECLARATION = /^<\?xml(?:[ \t\r\n]+[A-Za-z]+[ \t\r\n]*=[ \t\r\n]*(?:"[^"<>?&]*"|'[^'<>?&]*'))*[ \t\r\n]*\?>/;
/** One `name="value"` of the declaration, read from where the last one ended (sticky: no search). */
// eslint-disable-next-line regexp/no-super-linear-move -- sticky: tried at lastIndex only, never moved along the input
const DECLARATION_FIELD = /[ \t\r\n]+([A-Za-z]+)[ \t\r\n]*=[ \t\r\n]*(?:"([^"]*)"|'([^']*)')/y;
// eslint-disable-next-line no-control-regex
const BAD_CHARACTER = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const ENTITY_REFERENCE = /&([A-Za-z_:][A-Za-z0-9_.:\u00B7-]*);/g;
const PREDEFINED_ENTITIES = new Set(['lt', 'gt', 'amp', 'quot', 'apos']);
/** The one DOCTYPE form allowed (read on a slice of at most 300 characters: no `[` can pass). */
const DOCTYPE = /^<!DOCTYPE[ \t\r\n]+svg[ \t\r\n]+PUBLIC[ \t\r\n]+(?:"([^"]*)"|'([^']*)')[ \t\r\n]+(?:"([^"]*)"|'([^']*)')[ \t\r\n]*>/;
const WHITE_SPACE = /[ \t\r\n]/;

export function checkCharacters(text: string): void {
  const bad = BAD_CHARACTER.exec(text);
  if (bad) {
    const code = bad[0].codePointAt(0) ?? 0;
    refuse(text, bad.index, `the character U+${code.toString(16).toUpperCase().padStart(4, '0')} is not allowed`);
  }
}

function checkDeclaration(text: string, offset: number): number {
  const declaration = XML_DECLARATION.exec(text.slice(offset, offset + 200));
  if (!declaration) refuse(text, offset, 'a processing instruction may not start the document (only the XML declaration <?xml version="1.0"?> may)', 'invalid_svg');
  DECLARATION_FIELD.lastIndex = 5;
  for (let field = DECLARATION_FIELD.exec(declaration[0]); field; field = DECLARATION_FIELD.exec(declaration[0])) {
    const name = field[1];
    const value = field[2] ?? field[3] ?? '';
    // Stored and served as UTF-8 XML 1.0: another encoding would make a browser decode other
    // characters than those checked here; XML 1.1 reads line ends and controls differently.
    if (name === 'encoding' && value.toLowerCase() !== 'utf-8') refuse(text, offset, `the encoding ${shown(value)} is not allowed (pictures are UTF-8)`);
    if (name === 'version' && value !== '1.0') refuse(text, offset, `XML version ${shown(value)} is not allowed (only 1.0)`);
  }
  return offset + declaration[0].length;
}

/** Checks the DOCTYPE at `offset` is the standard SVG one; answers where it ends. */
function checkDoctype(text: string, offset: number): number {
  const slice = text.slice(offset, offset + 300);
  const found = DOCTYPE.exec(slice);
  const end = found ? offset + found[0].length : -1;
  const publicId = found ? (found[1] ?? found[2]) : undefined;
  const systemId = found ? (found[3] ?? found[4]) : undefined;
  if (!found || STANDARD_DOCTYPES.get(publicId ?? '') !== systemId) {
    const bracket = slice.indexOf('[');
    const closing = slice.indexOf('>');
    const why = bracket >= 0 && (closing < 0 || bracket < closing || !found) ? 'an internal subset ("[") is never allowed' : 'only <!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd"> (or the SVG 1.0 one) is allowed';
    refuse(text, offset, `this DOCTYPE is not allowed: ${why}`);
  }
  return end;
}

export function prescan(text: string): void {
  checkCharacters(text);

  let offset = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  if (text.startsWith('<?xml', offset) && (text.length === offset + 5 || WHITE_SPACE.test(text[offset + 5] ?? '') || text[offset + 5] === '?')) offset = checkDeclaration(text, offset);

  // The prolog: white space, comments, processing instructions and at most one DOCTYPE.
  let doctypes = 0;
  for (;;) {
    while (offset < text.length && WHITE_SPACE.test(text[offset] ?? '')) offset += 1;
    if (text.startsWith('<!--', offset)) {
      const end = text.indexOf('-->', offset + 4);
      if (end < 0) refuse(text, offset, 'an unclosed comment is not allowed', 'invalid_svg');
      offset = end + 3;
    } else if (text.startsWith('<?', offset)) {
      const end = text.indexOf('?>', offset + 2);
      if (end < 0) refuse(text, offset, 'an unclosed processing instruction is not allowed', 'invalid_svg');
      offset = end + 2;
    } else if (text.startsWith('<!DOCTYPE', offset) && doctypes === 0) {
      offset = checkDoctype(text, offset);
      doctypes += 1;
    } else {
      break;
    }
  }

  // After the prolog: comments and CDATA sections are read over; any other `<!` is a declaration.
  for (let at = text.indexOf('<!', offset); at >= 0; at = text.indexOf('<!', at)) {
    if (text.startsWith('<!--', at)) {
      const end = text.indexOf('-->', at + 4);
      if (end < 0) refuse(text, at, 'an unclosed comment is not allowed', 'invalid_svg');
      at = end + 3;
    } else if (text.startsWith('<![CDATA[', at)) {
      const end = text.indexOf(']]>', at + 9);
      if (end < 0) refuse(text, at, 'an unclosed CDATA section is not allowed', 'invalid_svg');
      at = end + 3;
    } else {
      const name = text.slice(at, at + 20).split(/[\s[>]/)[0] ?? '<!';
      refuse(text, at, `the declaration ${shown(name)} is not allowed here (only the standard SVG DOCTYPE, before the root; no entities or other declarations)`);
    }
  }

  ENTITY_REFERENCE.lastIndex = 0;
  for (let match = ENTITY_REFERENCE.exec(text); match; match = ENTITY_REFERENCE.exec(text)) {
    if (!PREDEFINED_ENTITIES.has(match[1] ?? '')) refuse(text, match.index, `the entity reference ${shown(match[0])} is not allowed (only &lt; &gt; &amp; &quot; &apos; and character references)`);
  }
}
