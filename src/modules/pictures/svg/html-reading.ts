import { parse, type DefaultTreeAdapterTypes } from 'parse5';
import type { ElementSignature } from './inspect.js';
import { SvgRefusal, shown } from './refusal.js';

/**
 * A picture is shown three ways: as an SVG document and in `<img>` (both read by a browser's XML
 * parser), and inline in an HTML page (read by its HTML parser, which has its own rules for foreign
 * content, integration points, CDATA and raw text). The rules are checked on the XML reading; this
 * reads the same text with parse5, the WHATWG HTML parser, placed in a page's `<body>` as a page
 * would inline it, and requires it to find exactly the same elements, in the same namespace, with
 * the same attributes (name, namespace, value) in the same order, and the same CSS in every
 * `<style>`. Any difference means a browser could see markup the rules never saw, and the picture
 * is refused.
 *
 * Element and attribute names are compared without case: HTML folds case and then restores the
 * SVG names it knows (`viewBox`, `clipPath`); one it does not know (`feDropShadow`) stays lower
 * case, an element or attribute a browser then ignores, never a different one.
 */

type Element = DefaultTreeAdapterTypes.Element;
type Node = DefaultTreeAdapterTypes.ChildNode;

const PAGE_START = '<!DOCTYPE html><html><head><title>picture</title></head><body>';

interface Difference {
  reason: string;
  where: string;
}

function qualified(attribute: { name: string; prefix?: string }): string {
  return attribute.prefix ? `${attribute.prefix}:${attribute.name}` : attribute.name;
}

function textOf(element: Element): string {
  let text = '';
  for (const child of element.childNodes) if (child.nodeName === '#text') text += (child as DefaultTreeAdapterTypes.TextNode).value;
  return text;
}

/** Names equal without case (most are equal as written: that is tried first). */
const sameName = (a: string, b: string): boolean => a === b || a.toLowerCase() === b.toLowerCase();

function differs(expected: ElementSignature, element: Element): string | undefined {
  if (!sameName(expected.name, element.tagName) || expected.uri !== element.namespaceURI) {
    return `an HTML parser reads <${element.tagName}> (${element.namespaceURI}) here, XML reads <${expected.name}>`;
  }
  const xml = expected.attributes;
  const html = element.attrs;
  if (xml.length !== html.length) return `an HTML parser reads attributes ${shown(html.map(qualified).join(' '))} here, XML reads ${shown(xml.map((a) => a.name).join(' '))}`;
  for (let index = 0; index < xml.length; index++) {
    const mine = xml[index]!;
    const theirs = html[index]!;
    if (!sameName(mine.name, qualified(theirs)) || mine.uri !== (theirs.namespace ?? '')) {
      return `an HTML parser reads the attribute ${qualified(theirs)} here, XML reads ${mine.name}`;
    }
    if (mine.value !== theirs.value) return `an HTML parser reads ${mine.name} as ${shown(theirs.value)}, XML as ${shown(mine.value)}`;
  }
  if (expected.styleText !== undefined && textOf(element) !== expected.styleText) return 'an HTML parser reads this style sheet differently';
  return undefined;
}

export function checkHtmlReading(text: string, elements: readonly ElementSignature[]): void {
  const page = parse(`${PAGE_START}${text.charCodeAt(0) === 0xfeff ? text.slice(1) : text}</body></html>`);
  const html = page.childNodes.find((node): node is Element => node.nodeName === 'html');
  const body = html?.childNodes.find((node): node is Element => node.nodeName === 'body');
  let problem: Difference | undefined;
  let index = 0;
  // Document order, with an explicit stack.
  const stack: Node[] = body ? [...body.childNodes].reverse() : [];
  while (stack.length > 0 && !problem) {
    const node = stack.pop() as Node;
    if (!('tagName' in node)) continue;
    const expected = elements[index];
    if (!expected) {
      problem = { reason: `an HTML parser reads an element <${node.tagName}> that XML does not`, where: elements[elements.length - 1]?.path() ?? '/svg' };
      break;
    }
    const reason = differs(expected, node);
    if (reason) problem = { reason, where: expected.path() };
    index += 1;
    for (let child = node.childNodes.length - 1; child >= 0; child--) stack.push(node.childNodes[child] as Node);
  }
  if (!problem && index !== elements.length) {
    problem = { reason: `an HTML parser does not read <${elements[index]?.name}> as an element`, where: elements[index]?.path() ?? '/svg' };
  }
  if (problem) throw new SvgRefusal('unsafe_svg', `the picture reads differently as HTML: ${problem.reason}`, problem.where);
}
