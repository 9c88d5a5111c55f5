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

export type Allowed = 'fragment' | 'fragment-or-image' | 'font' | 'link';

/**
 * The value as a URL parser sees it before parsing (WHATWG URL: basic URL parser, steps 1-3):
 * leading and trailing C0 controls and spaces dropped, then tabs and line ends anywhere. Two
 * index walks and one replace, each linear (a regular expression anchored at the end would try
 * every start position of a long run of spaces).
 */
export function urlAsParsed(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && value.charCodeAt(start) <= 0x20) start += 1;
  while (end > start && value.charCodeAt(end - 1) <= 0x20) end -= 1;
  const trimmed = start === 0 && end === value.length ? value : value.slice(start, end);
  return TAB_OR_LINE_END.test(trimmed) ? trimmed.replace(TAB_OR_LINE_END_ALL, '') : trimmed;
}

const TAB_OR_LINE_END = /[\t\n\r]/;
const TAB_OR_LINE_END_ALL = /[\t\n\r]/g;
const FRAGMENT = /^#[\p{L}\p{N}_.:\-\u00B7]+$/u;
/** A link's target: an id without `:` (so `#javascript:…` reads as nothing but an id). */
const LINK_FRAGMENT = /^#[\p{L}\p{N}_.\-\u00B7]+$/u;

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
  if (allowed === 'link') {
    if (LINK_FRAGMENT.test(url)) return undefined;
    return url.startsWith('#') ? 'a link must name an element of the picture ("#id", without ":")' : 'a link may only point within the picture ("#id")';
  }
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
