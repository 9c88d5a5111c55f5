import { SvgRefusal, positionOf, shown } from './refusal.js';

/**
 * What is refused in the text itself, before any parser reads it:
 * - a DOCTYPE, or any other markup declaration (`<!ENTITY`, `<!ELEMENT`, `<!ATTLIST`, …): the
 *   internal subset is where entities are declared (entity expansion, external entities);
 * - references to entities other than XML's five (`&lt;` `&gt;` `&amp;` `&quot;` `&apos;`);
 *   character references (`&#160;`) are characters and allowed;
 * - processing instructions other than the XML declaration at the very start
 *   (`<?xml-stylesheet href=…?>` loads a style sheet; an HTML parser ends one at its first `>`),
 *   and a declaration naming an encoding other than UTF-8;
 * - control characters (C0 other than tab, line feed and carriage return; DEL and C1), U+FFFE,
 *   U+FFFF and unpaired surrogates: not XML characters, and parsers disagree about them;
 * - comments and CDATA sections holding `<` (and comments holding `>` or `--`, or starting with
 *   `>` or `->`), and unclosed ones: an HTML parser ends a comment at `<!-->` or `--!>` where XML
 *   does not, and reads on as markup what XML read as text;
 * - anything but white space and comments before the root element.
 * All scans are linear; nothing here recurses.
 */

function refuse(text: string, offset: number, reason: string, code: 'invalid_svg' | 'unsafe_svg' = 'unsafe_svg'): never {
  throw new SvgRefusal(code, reason, positionOf(text, offset));
}

const XML_DECLARATION = /^<\?xml(?:\s+[A-Za-z]+\s*=\s*(?:"[^"<>?&]*"|'[^'<>?&]*'))*\s*\?>/;
// eslint-disable-next-line no-control-regex
const BAD_CHARACTER = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const ENTITY_REFERENCE = /&([A-Za-z_:][A-Za-z0-9_.:\u00B7-]*);/g;
const PREDEFINED_ENTITIES = new Set(['lt', 'gt', 'amp', 'quot', 'apos']);

function checkComment(text: string, start: number): number {
  const end = text.indexOf('-->', start + 4);
  if (end < 0) refuse(text, start, 'an unclosed comment is not allowed');
  const content = text.slice(start + 4, end);
  if (content.startsWith('>') || content.startsWith('->') || content.endsWith('-') || /[<>]|--/.test(content)) {
    refuse(text, start, 'a comment holding "<", ">" or "--" is not allowed (HTML parsers end comments differently from XML)');
  }
  return end + 3;
}

function checkCdata(text: string, start: number): number {
  const end = text.indexOf(']]>', start + 9);
  if (end < 0) refuse(text, start, 'an unclosed CDATA section is not allowed');
  const inner = text.indexOf('<', start + 9);
  if (inner >= 0 && inner < end) refuse(text, inner, 'a CDATA section holding "<" is not allowed (an HTML parser can read it as markup)');
  return end + 3;
}

export function prescan(text: string): void {
  const bad = BAD_CHARACTER.exec(text);
  if (bad) {
    const code = bad[0].codePointAt(0) ?? 0;
    refuse(text, bad.index, `the character U+${code.toString(16).toUpperCase().padStart(4, '0')} is not allowed`);
  }

  let offset = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  if (text.startsWith('<?', offset)) {
    const declaration = XML_DECLARATION.exec(text.slice(offset, offset + 200));
    if (!declaration) refuse(text, offset, 'a processing instruction is not allowed (only the XML declaration <?xml version="1.0"?> may start the document)');
    // The picture is stored and served as UTF-8: a declaration naming another encoding would
    // make a browser decode different characters from those checked here.
    const encoding = /encoding\s*=\s*["']([^"']*)["']/.exec(declaration[0])?.[1];
    if (encoding !== undefined && encoding.toLowerCase() !== 'utf-8') refuse(text, offset, `the encoding ${shown(encoding)} is not allowed (pictures are UTF-8)`);
    offset += declaration[0].length;
  }

  const instruction = text.indexOf('<?', offset);
  if (instruction >= 0) refuse(text, instruction, 'processing instructions are not allowed');

  for (let at = text.indexOf('<!', offset); at >= 0; at = text.indexOf('<!', at)) {
    if (text.startsWith('<!--', at)) at = checkComment(text, at);
    else if (text.startsWith('<![CDATA[', at)) at = checkCdata(text, at);
    else refuse(text, at, `the declaration ${shown(text.slice(at, at + 20).split(/\s/)[0] ?? '<!')} is not allowed (no DOCTYPE, entities or other declarations)`);
  }

  ENTITY_REFERENCE.lastIndex = 0;
  for (let match = ENTITY_REFERENCE.exec(text); match; match = ENTITY_REFERENCE.exec(text)) {
    if (!PREDEFINED_ENTITIES.has(match[1] ?? '')) refuse(text, match.index, `the entity reference ${shown(match[0])} is not allowed (only &lt; &gt; &amp; &quot; &apos; and character references)`);
  }

  // Before the root: white space and comments only.
  let lead = offset;
  for (;;) {
    while (lead < text.length && /\s/.test(text[lead] ?? '')) lead += 1;
    if (!text.startsWith('<!--', lead)) break;
    lead = text.indexOf('-->', lead + 4) + 3;
  }
  if (!/^<svg[\s/>]/.test(text.slice(lead, lead + 5))) refuse(text, lead, 'the document must be one <svg> element', 'invalid_svg');
}
