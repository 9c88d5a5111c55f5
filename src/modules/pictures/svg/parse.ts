import { optimize, type XastChild, type XastRoot } from 'svgo';
import { SvgRefusal } from './refusal.js';

/**
 * The XML reading of a picture, by svgo's parser (sax in strict mode, namespaces resolved):
 * svgo runs with one plugin of ours, which takes the parsed tree and leaves svgo nothing to
 * optimise or write back (the picture is stored as sent, never rewritten). svgo's plugins are not
 * visited (no recursion over the tree).
 *
 * A document that is not well-formed is refused as `invalid_svg` with the parser's line and
 * column. svgo ignores a premature end of input; sax still reports a root element left open, and
 * the prescan refuses unclosed comments and CDATA sections, so no truncated document passes.
 */

interface SvgoParserError extends Error {
  reason: string;
  line: number;
  column: number;
}

function isParserError(error: unknown): error is SvgoParserError {
  return error instanceof Error && error.name === 'SvgoParserError';
}

export function parseXml(text: string): XastChild[] {
  let children: XastChild[] | undefined;
  try {
    optimize(text, {
      multipass: false,
      plugins: [
        {
          name: 'platform-take-tree',
          fn: (root: XastRoot) => {
            children = root.children;
            root.children = [];
            return null;
          },
        },
      ],
    });
  } catch (error) {
    if (isParserError(error)) throw new SvgRefusal('invalid_svg', `not well-formed XML: ${error.reason}`, `line ${error.line}, column ${error.column}`);
    throw error;
  }
  if (!children) throw new Error('svgo did not hand over the parsed tree');
  return children;
}
