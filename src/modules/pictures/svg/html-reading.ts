import { Parser } from 'htmlparser2';
import type { ElementSignature } from './inspect.js';
import { SvgRefusal, shown } from './refusal.js';

/**
 * A picture is shown two ways: as an SVG document (read by a browser's XML parser) and inline in
 * an HTML page (read by its HTML parser, which has its own rules for foreign content, integration
 * points, comments and raw text). The rules are checked on the XML reading; this reads the same
 * text with htmlparser2 (the parser sanitize-html uses), which follows the HTML parser's handling
 * of SVG content, and requires it to find exactly the same elements with the same attributes in
 * the same order. Any difference means a browser could see markup the rules never saw, and the
 * picture is refused.
 */

const WHITESPACE = /[\t\n\r]/g;

/** Attribute values as both parsers hand them over; XML turns tabs and line ends into spaces. */
function normalised(value: string): string {
  return value.replace(WHITESPACE, ' ');
}

function differs(expected: ElementSignature, name: string, attributes: Record<string, string>): string | undefined {
  if (expected.name.toLowerCase() !== name.toLowerCase()) return `an HTML parser reads <${name}> here, XML reads <${expected.name}>`;
  const xml = Object.entries(expected.attributes);
  const html = Object.keys(attributes);
  if (xml.length !== html.length) return `an HTML parser reads attributes ${shown(html.join(' '))} here, XML reads ${shown(xml.map(([n]) => n).join(' '))}`;
  for (const [attribute, value] of xml) {
    const other = attributes[attribute.toLowerCase()];
    if (other === undefined || normalised(other) !== normalised(value)) {
      return `an HTML parser reads ${attribute} as ${other === undefined ? 'absent' : shown(other)}, XML as ${shown(value)}`;
    }
  }
  return undefined;
}

export function checkHtmlReading(text: string, elements: readonly ElementSignature[]): void {
  let index = 0;
  let problem: { reason: string; where: string } | undefined;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (problem) return;
        const expected = elements[index];
        if (!expected) {
          problem = { reason: `an HTML parser reads an element <${name}> that XML does not`, where: elements[elements.length - 1]?.path() ?? '/svg' };
          return;
        }
        const reason = differs(expected, name, attributes);
        if (reason) problem = { reason, where: expected.path() };
        index += 1;
      },
    },
    { decodeEntities: true },
  );
  parser.write(text);
  parser.end();
  if (!problem && index !== elements.length) {
    problem = { reason: `an HTML parser does not read <${elements[index]?.name}> as an element`, where: elements[index]?.path() ?? '/svg' };
  }
  if (problem) throw new SvgRefusal('unsafe_svg', `the picture reads differently as HTML: ${problem.reason}`, problem.where);
}
