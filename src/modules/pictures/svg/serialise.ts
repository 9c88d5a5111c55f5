import type { XmlDocument, XmlElement, XmlNode } from './parse.js';

/**
 * Writes the normalised tree back as text: what the rules check, and what is stored, versioned
 * and served. One fixed form, so that reading it again and writing it gives the same text
 * (normalisation is idempotent):
 * - the XML declaration (if there was one) as `<?xml version="…" encoding="…" standalone="…"?>`
 *   and a line end, then the root element; a byte order mark is kept; white space outside the
 *   root is not, except one line end after it when the picture ended with one;
 * - names exactly as written (prefixes included), attributes in their order, in double quotes;
 * - in attribute values `& < > "` and tab, line feed and carriage return as references (XML would
 *   otherwise turn those three into spaces when reading the value again); in text `& < >` as
 *   references and carriage return as `&#13;` (XML reads a bare one as a line feed);
 * - CDATA sections as CDATA sections; an element without children as `<name/>`.
 * Every other character is written as itself (UTF-8 when stored). An explicit stack, no
 * recursion.
 */

const ATTRIBUTE_SPECIAL = /[&<>"\t\n\r]/g;
const TEXT_SPECIAL = /[&<>\r]/g;
const REFERENCES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  '\t': '&#9;',
  '\n': '&#10;',
  '\r': '&#13;',
};
const reference = (character: string): string => REFERENCES[character] as string;

export function escapeAttribute(value: string): string {
  ATTRIBUTE_SPECIAL.lastIndex = 0;
  return ATTRIBUTE_SPECIAL.test(value) ? value.replace(ATTRIBUTE_SPECIAL, reference) : value;
}

export function escapeText(value: string): string {
  TEXT_SPECIAL.lastIndex = 0;
  return TEXT_SPECIAL.test(value) ? value.replace(TEXT_SPECIAL, reference) : value;
}

/** The element's text, appended to `out` (one string built by appending: V8 joins the pieces once,
 * when the text is first read, with less garbage than an array of pieces and a join). */
function writeElement(root: XmlElement, out: string): string {
  // Each entry is a node to write, or (a string) an end tag to write once its children are done.
  const stack: (XmlNode | string)[] = [root];
  while (stack.length > 0) {
    const node = stack.pop() as XmlNode | string;
    if (typeof node === 'string') {
      out += node;
      continue;
    }
    switch (node.type) {
      case 'element':
        out += `<${node.name}`;
        for (const attribute of node.attributes) out += ` ${attribute.name}="${escapeAttribute(attribute.value)}"`;
        if (node.children.length === 0) {
          out += '/>';
          break;
        }
        out += '>';
        stack.push(`</${node.name}>`);
        for (let index = node.children.length - 1; index >= 0; index--) stack.push(node.children[index] as XmlNode);
        break;
      case 'text':
        out += escapeText(node.value);
        break;
      case 'cdata':
        out += `<![CDATA[${node.value}]]>`;
        break;
      case 'comment':
        out += `<!--${node.value}-->`;
        break;
      case 'instruction':
        out += `<?${node.target}${node.body ? ` ${node.body}` : ''}?>`;
        break;
    }
  }
  return out;
}

export function serialise(document: XmlDocument, options: { finalLineEnd: boolean }): string {
  let out = '';
  if (document.byteOrderMark) out += '\uFEFF';
  const declaration = document.declaration;
  if (declaration) {
    let text = `<?xml version="${declaration.version ?? '1.0'}"`;
    if (declaration.encoding !== undefined) text += ` encoding="${declaration.encoding}"`;
    if (declaration.standalone !== undefined) text += ` standalone="${declaration.standalone}"`;
    out += `${text}?>\n`;
  }
  out = writeElement(document.root, out);
  if (options.finalLineEnd) out += '\n';
  return out;
}
