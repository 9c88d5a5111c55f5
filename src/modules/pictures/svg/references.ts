import { FONT_DATA_TYPES, IMAGE_DATA_TYPES } from './rules.js';

/**
 * References (`href`, `xlink:href`, CSS `url()`): only `#id` in the same picture, and `data:`
 * where a rule allows it. A value is first read the way a browser's URL parser reads it (leading
 * and trailing C0 controls and spaces dropped, tabs and newlines removed anywhere), so no
 * spacing, control character or case hides a scheme; entities were decoded by the XML parser and
 * CSS escapes by the CSS parser before a value gets here. Anything else (`javascript:`,
 * `vbscript:`, `http:`, a relative path, a percent-encoded scheme, which a URL parser takes for a
 * relative path and so a request) is refused.
 */

export type Allowed = 'fragment' | 'fragment-or-image' | 'font';

/** The value as a URL parser sees it before parsing (WHATWG URL: basic URL parser, step 1-3). */
export function urlAsParsed(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '').replace(/[\t\n\r]/g, '');
}

const FRAGMENT = /^#[\p{L}\p{N}_.:\-\u00B7]+$/u;

/** The media type of a `data:` URL (lower case), or undefined when it is not one. */
export function dataMediaType(url: string): string | undefined {
  if (url.slice(0, 5).toLowerCase() !== 'data:') return undefined;
  const comma = url.indexOf(',');
  if (comma < 0) return '';
  return (url.slice(5, comma).split(';')[0] ?? '').trim().toLowerCase();
}

/** Why a reference is refused, or undefined when it is allowed. */
export function referenceProblem(value: string, allowed: Allowed): string | undefined {
  const url = urlAsParsed(value);
  if (FRAGMENT.test(url)) return allowed === 'font' ? 'a font must be embedded as a data: URL' : undefined;
  const type = dataMediaType(url);
  if (type !== undefined) {
    if (allowed === 'fragment-or-image' && IMAGE_DATA_TYPES.has(type)) return undefined;
    if (allowed === 'font' && FONT_DATA_TYPES.has(type)) return undefined;
    const wanted = allowed === 'font' ? 'fonts' : allowed === 'fragment-or-image' ? 'raster images (png, jpeg, gif, webp, avif)' : 'nothing';
    return `data: URLs of type ${JSON.stringify(type)} are not allowed here (allowed here: ${wanted})`;
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  const what = scheme ? `the scheme ${scheme}:` : url.startsWith('#') ? 'a malformed #id reference' : 'a reference outside the picture';
  return `${what} is not allowed; only "#id" references${allowed === 'fragment' ? '' : ' and data: URLs'} are`;
}
