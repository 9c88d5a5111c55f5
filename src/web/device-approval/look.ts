import { createHash } from 'node:crypto';

/**
 * How the approval page looks: the operator's product name, logo and accent colour
 * (`PAGE_PRODUCT_NAME`, `PAGE_LOGO_URL`, `PAGE_ACCENT`), the stylesheet in both colour schemes,
 * and the Content-Security-Policy that lets exactly that stylesheet (by its hash) and that logo in.
 *
 * Colours (contrast against their background, WCAG 2.1):
 *
 * | | light (on #ffffff) | dark (on #15171a) |
 * |-|-|-|
 * | text | #1b1d21, 16.9:1 | #e8eaed, 14.9:1 |
 * | secondary text | #5a5f66, 6.4:1 | #aab0b8, 8.2:1 |
 * | borders of fields and buttons (≥ 3:1, 1.4.11) | #7a7f87, 4.0:1 | #8a9099, 5.6:1 |
 * | links, focus ring | #1a56b0, 7.0:1 | #8ab4f8, 8.5:1 |
 * | errors, denied | #b3261e, 6.5:1 | #ff8b82, 7.9:1 |
 * | approved | #1c7a3a, 5.4:1 | #6fd68f, 10.0:1 |
 *
 * The primary button is white text on the accent in both schemes; `PAGE_ACCENT` is refused at
 * start unless white text on it reaches 4.5:1 (the default #1f5fbf: 6.1:1).
 */

export interface PageLookSettings {
  /** Shown in the header and every title. */
  productName: string;
  /** A `data:image/…` URL or a path of this service (`/…`); never a third party. */
  logoUrl?: string | undefined;
  /** `#rgb` or `#rrggbb`, white text on it at least 4.5:1. */
  accent?: string | undefined;
}

export const DEFAULT_PRODUCT_NAME = 'Platform';
export const DEFAULT_ACCENT = '#1f5fbf';
const WHITE = '#ffffff';
/** WCAG 1.4.3 (AA) for text of normal size. */
export const MIN_TEXT_CONTRAST = 4.5;

const LOGO_DATA_URL = /^data:image\/(png|jpeg|gif|webp|avif|svg\+xml)(;[a-z0-9=.+-]+)*(;base64)?,[A-Za-z0-9+/=%._~!$&'()*,;:@-]+$/i;

/** Why a logo URL is refused, if it is: only an image `data:` URL or a path served by this service. */
export function logoUrlProblem(value: string): string | undefined {
  if (value.length > 65_536) return 'must be at most 64 KiB (an image data: URL or a path of this service)';
  if (value.toLowerCase().startsWith('data:')) {
    return LOGO_DATA_URL.test(value) ? undefined : 'must be a data: URL of an image (png, jpeg, gif, webp, avif or svg+xml), without spaces or quotes';
  }
  if (!/^\/(?![/\\])[A-Za-z0-9._~!$&'()*+,;=:@/%-]*(\?[A-Za-z0-9._~!$&'()*+,;=:@/%?-]*)?$/.test(value)) {
    return 'must be a data:image/… URL or a path served by this service starting with / (never another site: the page loads nothing from third parties)';
  }
  return undefined;
}

/** Why an accent colour is refused, if it is: a CSS hex colour white text is readable on. */
export function accentProblem(value: string): string | undefined {
  if (!/^#([0-9a-f]{3}|[0-9a-f]{6})$/i.test(value)) return 'must be a CSS hex colour, #rgb or #rrggbb (e.g. #1f5fbf)';
  const ratio = contrastRatio(value, WHITE);
  if (ratio < MIN_TEXT_CONTRAST) {
    return `white text on ${value} has a contrast of ${ratio.toFixed(2)}:1, below ${MIN_TEXT_CONTRAST}:1 (WCAG AA); choose a darker colour`;
  }
  return undefined;
}

function channels(hex: string): [number, number, number] {
  let digits = hex.slice(1);
  if (digits.length === 3) digits = [...digits].map((digit) => digit + digit).join('');
  return [0, 2, 4].map((at) => parseInt(digits.slice(at, at + 2), 16) / 255) as [number, number, number];
}

function luminance(hex: string): number {
  const [r, g, b] = channels(hex).map((value) => (value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4)) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG 2.1 contrast ratio of two hex colours. */
export function contrastRatio(a: string, b: string): number {
  const [high, low] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (high + 0.05) / (low + 0.05);
}

function stylesheet(accent: string): string {
  return `
:root { color-scheme: light dark; --accent: ${accent}; --bg: #ffffff; --text: #1b1d21; --muted: #5a5f66; --line: #7a7f87; --link: #1a56b0; --bad: #b3261e; --good: #1c7a3a; --warn-bg: #fff4e0; --warn-line: #946200; --surface: #f4f5f7; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #15171a; --text: #e8eaed; --muted: #aab0b8; --line: #8a9099; --link: #8ab4f8; --bad: #ff8b82; --good: #6fd68f; --warn-bg: #2e2513; --warn-line: #e0a84a; --surface: #1f2226; }
}
* { box-sizing: border-box; }
html { background: var(--bg); color: var(--text); }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; padding: 0 1rem 2rem; background: var(--bg); color: var(--text); }
header { max-width: 34rem; margin: 0 auto 1.5rem; padding: 1rem 0 .75rem; border-bottom: 3px solid var(--accent); display: flex; align-items: center; gap: .6rem; }
header img { height: 2rem; width: auto; max-width: 10rem; }
.product { font-weight: 600; font-size: 1.1rem; }
main { max-width: 34rem; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
p { margin: 0 0 1rem; }
a { color: var(--link); }
.code { font: 600 1.75rem/1.2 ui-monospace, SFMono-Regular, Menlo, monospace; letter-spacing: .1em; margin: 0 0 1rem; }
dl { display: grid; grid-template-columns: minmax(7rem, max-content) 1fr; gap: .35rem 1rem; margin: 0 0 1.5rem; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
.given { display: block; font-size: .85rem; }
form { margin: 0 0 1rem; }
.actions { display: flex; gap: .75rem; flex-wrap: nowrap; margin: 0 0 1rem; }
.actions button { flex: 1 1 0; min-width: 0; }
label { display: block; margin: 0 0 .35rem; }
input[type=email], input[type=text], select { font: inherit; color: var(--text); background: var(--bg); padding: .5rem .6rem; border: 1px solid var(--line); border-radius: 6px; max-width: 100%; }
input[type=email], select { width: 20rem; }
input.code-field { font: 600 1.25rem ui-monospace, Menlo, monospace; letter-spacing: .08em; width: 12ch; text-transform: uppercase; }
input[aria-invalid=true], select[aria-invalid=true] { border: 2px solid var(--bad); }
button { font: inherit; padding: .6rem 1.2rem; border-radius: 6px; border: 1px solid var(--line); background: var(--bg); color: var(--text); cursor: pointer; }
button.primary { background: var(--accent); border-color: var(--accent); color: #ffffff; font-weight: 600; }
:focus-visible { outline: 3px solid var(--link); outline-offset: 2px; }
input:focus-visible, select:focus-visible { outline: 3px solid var(--link); outline-offset: 1px; }
.note { color: var(--muted); font-size: .9rem; }
.error { color: var(--bad); font-weight: 600; }
.notice { border-left: 4px solid var(--line); padding: .5rem .75rem; background: var(--surface); }
.warning { border: 2px solid var(--warn-line); background: var(--warn-bg); border-radius: 6px; padding: .75rem 1rem; margin: 0 0 1rem; }
.warning p:last-child { margin: 0; }
.confirm { display: flex; gap: .5rem; align-items: flex-start; margin: 0 0 1rem; }
.confirm input { width: 1.25rem; height: 1.25rem; margin: .15rem 0 0; accent-color: var(--accent); flex: none; }
.confirm label { margin: 0; font-weight: 600; }
.outcome { display: flex; gap: .75rem; align-items: center; margin: 0 0 1rem; }
.outcome h1 { margin: 0; }
.icon { flex: none; display: inline-flex; align-items: center; justify-content: center; width: 2.5rem; height: 2.5rem; border-radius: 50%; border: 3px solid currentColor; font-size: 1.4rem; font-weight: 700; line-height: 1; }
.approved .icon { color: var(--good); }
.denied .icon { color: var(--bad); }
footer { margin-top: 2rem; padding-top: 1rem; border-top: 1px solid var(--line); display: flex; gap: 1rem; align-items: center; justify-content: space-between; flex-wrap: wrap; }
footer form { margin: 0; }
`;
}

export interface PageLook {
  productName: string;
  logoUrl: string | undefined;
  /** The inline stylesheet, allowed by its hash. */
  style: string;
  /** The page's policy; `formTargets`: origins a sign-in form's answer may redirect to. */
  contentSecurityPolicy(formTargets?: readonly string[]): string;
}

/**
 * The page's policy: nothing loads but the hashed stylesheet (and the logo, from `data:` or this
 * origin); forms post only to this origin (and, on a page that starts sign-in, to the provider
 * the answer redirects to: browsers apply `form-action` to the redirects that follow a form
 * submission); no framing; no `<base>`; no script at all.
 */
export function pageLook(settings: PageLookSettings): PageLook {
  for (const problem of [settings.logoUrl && logoUrlProblem(settings.logoUrl), settings.accent && accentProblem(settings.accent)]) {
    if (problem) throw new Error(`the approval page's look: ${problem}`);
  }
  const style = stylesheet((settings.accent ?? DEFAULT_ACCENT).toLowerCase());
  const styleHash = `'sha256-${createHash('sha256').update(style, 'utf8').digest('base64')}'`;
  const logoUrl = settings.logoUrl || undefined;
  const imgSrc = logoUrl ? `img-src ${logoUrl.toLowerCase().startsWith('data:') ? 'data:' : "'self'"}` : undefined;
  return {
    productName: settings.productName.trim() || DEFAULT_PRODUCT_NAME,
    logoUrl,
    style,
    contentSecurityPolicy: (formTargets = []) =>
      [
        "default-src 'none'",
        `style-src ${styleHash}`,
        imgSrc,
        `form-action 'self'${formTargets.map((origin) => ` ${origin}`).join('')}`,
        "frame-ancestors 'none'",
        "base-uri 'none'",
      ]
        .filter(Boolean)
        .join('; '),
  };
}
