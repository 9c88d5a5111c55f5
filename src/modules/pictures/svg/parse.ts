import { SaxesParser, type SaxesTagNS, type XMLDecl } from 'saxes';
import { SvgRefusal } from './refusal.js';

/**
 * The XML reading of a picture: saxes (a strict, namespace-aware XML 1.0 parser, through its
 * public API) builds the small tree below, which normalisation edits and the serialiser writes.
 * A document that is not well-formed is refused as `invalid_svg` with the parser's line and
 * column. saxes knows no entity but XML's five (a DOCTYPE's internal subset is never read:
 * the prescan lets only the standard SVG DOCTYPE through, which has none), checks that every
 * prefix is bound and no attribute is repeated, and refuses a document that ends early.
 * The tree is built with an explicit stack (no recursion).
 */

export const SVG_NAMESPACE = 'http://www.w3.org/2000/svg';
export const XLINK_NAMESPACE = 'http://www.w3.org/1999/xlink';
export const XML_NAMESPACE = 'http://www.w3.org/XML/1998/namespace';
export const XMLNS_NAMESPACE = 'http://www.w3.org/2000/xmlns/';

export interface XmlAttribute {
  /** As written: `prefix:local` or `local`. */
  name: string;
  prefix: string;
  local: string;
  /** Resolved namespace ('' for an unprefixed attribute). */
  uri: string;
  value: string;
}

export interface XmlElement {
  type: 'element';
  name: string;
  prefix: string;
  local: string;
  uri: string;
  attributes: XmlAttribute[];
  children: XmlNode[];
}

export interface XmlText {
  type: 'text' | 'cdata';
  value: string;
}

export interface XmlComment {
  type: 'comment';
  value: string;
}

export interface XmlInstruction {
  type: 'instruction';
  target: string;
  body: string;
}

export type XmlNode = XmlElement | XmlText | XmlComment | XmlInstruction;

export interface XmlDocument {
  /** The text started with U+FEFF. */
  byteOrderMark: boolean;
  declaration: XMLDecl | undefined;
  /** The DOCTYPE's text after `<!DOCTYPE`, when there was one. */
  doctype: string | undefined;
  /** Comments and processing instructions around the root (white space outside it is not kept). */
  outside: (XmlComment | XmlInstruction)[];
  root: XmlElement;
}

export function parseXml(text: string): XmlDocument {
  const parser = new SaxesParser({ xmlns: true, position: true });
  const byteOrderMark = text.charCodeAt(0) === 0xfeff;
  let doctype: string | undefined;
  const outside: (XmlComment | XmlInstruction)[] = [];
  let root: XmlElement | undefined;
  const stack: XmlElement[] = [];
  let failure: SvgRefusal | undefined;

  const append = (node: XmlNode): void => {
    const parent = stack[stack.length - 1];
    if (parent) parent.children.push(node);
    else if (node.type === 'comment' || node.type === 'instruction') outside.push(node);
  };
  parser.on('error', (error) => {
    // The first error stands; saxes goes on reading after it, and nothing after it is used.
    failure ??= new SvgRefusal('invalid_svg', `not well-formed XML: ${error.message.replace(/^\d+:\d+: /, '')}`, `line ${parser.line}, column ${parser.column}`);
  });
  let declaration: XMLDecl | undefined;
  parser.on('xmldecl', (value) => {
    declaration = value;
  });
  parser.on('doctype', (value) => {
    doctype = value;
  });
  parser.on('comment', (value) => append({ type: 'comment', value }));
  parser.on('processinginstruction', ({ target, body }) => append({ type: 'instruction', target, body }));
  parser.on('text', (value) => {
    const parent = stack[stack.length - 1];
    if (!parent) return; // white space around the root (anything else is an error saxes reports)
    const last = parent.children[parent.children.length - 1];
    if (last?.type === 'text') last.value += value;
    else parent.children.push({ type: 'text', value });
  });
  parser.on('cdata', (value) => append({ type: 'cdata', value }));
  // saxes' attributes of the tag being read, in their order, as saxes reads them (its objects
  // carry exactly the fields of XmlAttribute; it adds the namespace before the tag is opened).
  let attributes: XmlAttribute[] = [];
  parser.on('attribute', (attribute) => {
    attributes.push(attribute);
  });
  parser.on('opentag', (tag: SaxesTagNS) => {
    const element: XmlElement = {
      type: 'element',
      name: tag.name,
      prefix: tag.prefix,
      local: tag.local,
      uri: tag.uri,
      attributes,
      children: [],
    };
    attributes = [];
    const parent = stack[stack.length - 1];
    if (parent) parent.children.push(element);
    else if (!root) root = element;
    stack.push(element);
  });
  parser.on('closetag', () => {
    stack.pop();
  });
  parser.write(byteOrderMark ? text.slice(1) : text).close();
  if (failure) throw failure;
  if (!root) throw new SvgRefusal('invalid_svg', 'the document must be one <svg> element', '/');
  return { byteOrderMark, declaration, doctype, outside, root };
}
