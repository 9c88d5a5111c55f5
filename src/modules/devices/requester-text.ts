import { invalidRequest } from '../../errors.js';

/**
 * Text a device gives about itself (its name, its workspace, its User-Agent, a node's id) is shown
 * to the person who approves it and to administrators, as the device gave it. Characters that are
 * not shown, or that change how the text around them is shown, let a device pose as another
 * ("Build box" written right to left, an invisible suffix that makes two names look alike), so
 * they are refused where the text comes in rather than escaped where it goes out:
 *
 * - controls (Cc: C0 and C1, tab and line breaks included) and format characters (Cf: the
 *   bidirectional embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, the marks
 *   U+200E, U+200F, U+061C, zero-width spaces and joiners U+200B–U+200D, U+2060–U+2064, U+FEFF,
 *   the soft hyphen U+00AD, tag characters…);
 * - lone surrogates (Cs), private-use characters (Co), line and paragraph separators (Zl, Zp);
 * - blank letters that render as nothing: U+115F, U+1160, U+3164, U+FFA0 (Hangul fillers) and
 *   U+2800 (the blank Braille pattern).
 *
 * A refusal is 400 `invalid_request` naming the field and the character (`U+202E`). One character
 * class, tested once per value: linear in the text.
 */
const NOT_SHOWN_AS_IS = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}\u115F\u1160\u3164\uFFA0\u2800]/u;

/** The first character of `text` that is not shown as is, as `U+XXXX`, if any. */
export function hiddenCharacterIn(text: string): string | undefined {
  const match = NOT_SHOWN_AS_IS.exec(text);
  if (!match) return undefined;
  return `U+${match[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Refuses requester text holding a character that is not shown as is (400 `invalid_request` naming `field`). */
export function requireShownAsIs(text: string | undefined, field: string): void {
  if (text === undefined) return;
  const character = hiddenCharacterIn(text);
  if (character !== undefined) {
    throw invalidRequest(`${field} holds ${character}, a character that is not shown as it is (a control, a direction change or an invisible one); the person approving the device must see what it sends`, { field });
  }
}
