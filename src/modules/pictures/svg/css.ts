import { parse, walk, type CssNode } from 'css-tree';
import { referenceProblem } from './references.js';
import { SvgRefusal, shown } from './refusal.js';
import { ALLOWED_AT_RULES, ALLOWED_CSS_FUNCTIONS, FORBIDDEN_CSS_PROPERTIES } from './rules.js';

/**
 * CSS in a picture: `<style>` sheets and `style` attributes are parsed by css-tree (svgo's CSS
 * parser) and every node is checked; presentation attributes and SMIL values, which are short
 * single values, are scanned for function calls without a parser. Either way:
 * - only the at-rules and functions of `rules.ts` pass (a name written with CSS escapes never
 *   matches one, so it is refused rather than decoded and guessed at);
 * - `url()` must be `#id`, or in an `@font-face` `src` a `data:` font;
 * - anything css-tree could not parse, or kept unparsed (Raw), is refused: what this check did not
 *   understand, a browser might.
 */

/** Brackets nested deeper than this are refused before css-tree (which recurses) reads them. */
const MAX_CSS_NESTING = 32;

/** Where a value stands, for a message: written out only when the value is refused. */
export type Where = string | (() => string);

function refuse(reason: string, where: Where): never {
  throw new SvgRefusal('unsafe_svg', reason, typeof where === 'string' ? where : where());
}

function checkNesting(text: string, where: Where): void {
  let depth = 0;
  for (let index = 0; index < text.length; index++) {
    const c = text.charCodeAt(index);
    if (c === 0x28 || c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > MAX_CSS_NESTING) refuse(`CSS nested deeper than ${MAX_CSS_NESTING} brackets`, where);
    } else if (c === 0x29 || c === 0x5d || c === 0x7d) {
      depth = Math.max(0, depth - 1);
    }
  }
}

function checkNode(node: CssNode, inFontSource: boolean, where: Where): void {
  switch (node.type) {
    case 'Atrule': {
      const name = node.name.toLowerCase();
      if (!ALLOWED_AT_RULES.has(name)) refuse(`the CSS at-rule @${node.name} is not allowed`, where);
      return;
    }
    case 'Declaration': {
      const property = node.property.toLowerCase();
      if (FORBIDDEN_CSS_PROPERTIES.has(property)) refuse(`the CSS property ${property} is not allowed`, where);
      if (property.includes('\\')) refuse(`a CSS property name written with escapes (${shown(node.property)}) is not allowed`, where);
      return;
    }
    case 'Function': {
      const name = node.name.toLowerCase();
      if (!ALLOWED_CSS_FUNCTIONS.has(name)) refuse(`the CSS function ${shown(`${node.name}()`)} is not allowed`, where);
      return;
    }
    case 'Url': {
      const problem = referenceProblem(node.value, inFontSource ? 'font' : 'fragment');
      if (problem) refuse(`url(${shown(node.value)}): ${problem}`, where);
      return;
    }
    case 'Raw':
      refuse(`CSS that could not be read (${shown(node.value)}) is not allowed`, where);
      return;
    default:
      return;
  }
}

function checkParsed(text: string, context: 'stylesheet' | 'declarationList', where: Where): void {
  checkNesting(text, where);
  const errors: string[] = [];
  const ast = parse(text, {
    context,
    parseCustomProperty: true,
    parseAtrulePrelude: true,
    parseRulePrelude: true,
    parseValue: true,
    onParseError: (error) => errors.push(error.message),
  });
  if (errors.length > 0) refuse(`CSS that does not parse cleanly is not allowed (${errors[0]})`, where);
  walk(ast, function visit(node) {
    const fontSource = this.atrule?.name.toLowerCase() === 'font-face' && this.declaration?.property.toLowerCase() === 'src';
    checkNode(node, fontSource, where);
  });
}

/** The content of a `<style>` element. */
export function checkStylesheet(text: string, where: Where): void {
  checkParsed(text, 'stylesheet', where);
}

const NEEDS_PARSER = /[\\@<&{}]|\/\*/;
const PROPERTY_NAME = /^-{0,2}[a-z][a-z0-9-]*$/i;

/**
 * A `style` attribute. Diagrams carry thousands, so the common ones skip the parser: a
 * declaration list without escapes, comments, at-signs, braces or markup characters is split at
 * `;` and each declaration checked like a presentation attribute (property name, then the value's
 * functions and `url()`s, `checkStyleValue`): nothing in such a text can hide a function, a
 * property or a reference from that scan. Anything else goes to css-tree.
 */
export function checkDeclarations(text: string, where: Where): void {
  if (!NEEDS_PARSER.test(text)) {
    const declarations: [string, string][] = [];
    for (const part of text.split(';')) {
      if (part.trim() === '') continue;
      const colon = part.indexOf(':');
      const property = (colon < 0 ? part : part.slice(0, colon)).trim();
      if (colon < 0 || !PROPERTY_NAME.test(property)) {
        checkParsed(text, 'declarationList', where);
        return;
      }
      declarations.push([property.toLowerCase(), part.slice(colon + 1)]);
    }
    for (const [property, value] of declarations) {
      if (FORBIDDEN_CSS_PROPERTIES.has(property)) refuse(`the CSS property ${property} is not allowed`, where);
      checkStyleValue(value, where);
    }
    return;
  }
  checkParsed(text, 'declarationList', where);
}

/** A character of a CSS function name as checked here (letters, digits, `-`, `_`, non-ASCII). */
function isNameCharacter(code: number): boolean {
  return (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a) || (code >= 0x30 && code <= 0x39) || code === 0x2d || code === 0x5f || code >= 0x80;
}

/** Whether checkStyleValue has anything to check in a value: a `(` or a `\\`; without either it passes. */
export function mayHoldFunction(value: string): boolean {
  return value.includes('(') || value.includes('\\');
}

/**
 * A presentation attribute or SMIL value (`fill="url(#g)"`, `transform="rotate(45)"`,
 * `values="url(#a);url(#b)"`). Browsers read these with their CSS parser, so the same functions
 * are allowed; escapes and comments, which only serve to hide a name, are refused. One pass: at
 * each `(` the name before it is read back to the previous `(` at most, so every character is
 * read a bounded number of times (a regular expression for "name then `(`" would read a long
 * name again from each of its characters).
 */
export function checkStyleValue(value: string, where: Where): void {
  if (!mayHoldFunction(value)) return;
  if (value.includes('\\')) refuse(`a backslash (CSS escape) in ${shown(value)} is not allowed`, where);
  if (value.includes('/*')) refuse(`a CSS comment in ${shown(value)} is not allowed`, where);
  let previous = -1;
  for (let open = value.indexOf('('); open >= 0; open = value.indexOf('(', open + 1)) {
    let start = open;
    while (start > previous + 1 && isNameCharacter(value.charCodeAt(start - 1))) start -= 1;
    const written = value.slice(start, open);
    previous = open;
    const name = written.toLowerCase();
    if (!ALLOWED_CSS_FUNCTIONS.has(name)) refuse(`the function ${shown(`${written}(`)} is not allowed`, where);
    if (name !== 'url') continue;
    const end = value.indexOf(')', open + 1);
    if (end < 0) refuse(`an unclosed url( in ${shown(value)} is not allowed`, where);
    let target = value.slice(open + 1, end).trim();
    const quote = target[0];
    if (quote === '"' || quote === "'") {
      if (target.length < 2 || target[target.length - 1] !== quote) refuse(`a malformed url() in ${shown(value)} is not allowed`, where);
      target = target.slice(1, -1);
    }
    const problem = referenceProblem(target, 'fragment');
    if (problem) refuse(`url(${shown(target)}): ${problem}`, where);
    previous = end;
    open = end;
  }
}
