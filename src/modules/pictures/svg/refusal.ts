/**
 * Why a picture's SVG was refused, and where. `invalid_svg`: not a well-formed SVG document;
 * `unsafe_svg`: well-formed, but it breaks a rule of `rules.ts`. `where` is an element path
 * (`/svg/g[2]/use[1]/@href`, one-based among siblings of the same name) or a line and column
 * of the text for what is refused before the document is parsed.
 */
export type SvgRefusalCode = 'invalid_svg' | 'unsafe_svg';

export class SvgRefusal extends Error {
  constructor(
    readonly code: SvgRefusalCode,
    readonly reason: string,
    readonly where: string,
  ) {
    super(`${reason} (at ${where})`);
    this.name = 'SvgRefusal';
  }
}

/** A value shown in a message: quoted, control characters escaped, cut to 80 characters. */
export function shown(value: string): string {
  const cut = value.length > 80 ? `${value.slice(0, 77)}...` : value;
  return JSON.stringify(cut);
}

/** `line L, column C` (one-based) of an offset in the text. */
export function positionOf(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let index = text.indexOf('\n'); index !== -1 && index < offset; index = text.indexOf('\n', index + 1)) {
    line += 1;
    lineStart = index + 1;
  }
  return `line ${line}, column ${offset - lineStart + 1}`;
}
