/**
 * What a log line may not hold, and how it is taken out. Every line the service and the command
 * line write passes `redactLine` just before it is written (pino's `streamWrite` hook), so the
 * rules hold for every field at any depth and for message strings, whoever logged them:
 *
 * - by name: the value of a field whose name means a secret is replaced, at any depth (headers
 *   included, their names being field names): names containing `token`, `secret`, `password`,
 *   `passwd`, `credential`, `assertion`, `cookie`, `authorization`, `api_key`/`apikey`,
 *   `private_key`, `private_jwk` or `sealed` (a sealed signing key) when the value is a string;
 *   any value of `dpop`, `device_code`, `user_code`, `code_verifier`, `ticket`, `link` (a link
 *   ticket, an invitation link), `otp`, `parameters` (a query's bound values);
 * - a JSON Web Key's private members (`d`; RSA's `p`, `q`, `dp`, `dq`, `qi`, `oth`; a symmetric
 *   key's `k`) in any object with a `kty`: the relay's signing keys;
 * - names that are often harmless (`code`, `key`, `state`) only when the value does not read as
 *   a name: an error's `code` such as `invalid_grant` or `ER_DUP_ENTRY`, a `key` naming a rate
 *   limit rule, a join key's `state` `active` stay; anything else (digits, random text) goes;
 * - by shape, in every string: the platform's own secrets (`platform_at_`, `platform_rt_`,
 *   `platform_cr_`, `platform_dc_`, `platform_jk_`, any `platform_xx_…`) keep their prefix and
 *   lose the rest, JWTs (person tokens, DPoP proofs) and the credential after `Bearer`, `DPoP` or
 *   `Basic` are replaced;
 * - in URLs: the values of query parameters named as above, or `code`, `state`, `key`, `link`,
 *   `sig`, `signature`, `nonce`.
 *
 * One marker everywhere: `[REDACTED]`.
 *
 * Bounded work (a log line is written on the event loop, after the answer, and whoever sends the
 * request chooses much of what it holds): every rule is linear in its input (lint and
 * test/unit/regexes.test.ts keep them so), a string longer than MAX_MATCHED_STRING is cut before
 * any rule reads it, and one line puts at most LINE_BUDGET characters through the rules; a string
 * past that budget is not written at all (`[OMITTED]`). A cut never keeps part of a secret: it
 * falls back to the start of the run of credential characters it would split, so a token cut in
 * two is dropped whole rather than left too short for its rule. About 1 ms a line at the worst
 * (64 KB of hostile text), against the 5 ms budget (test/unit/log-redaction-budget.test.ts).
 */

export const REDACTED = '[REDACTED]';
/** What stands for a string the line's budget did not reach. */
export const OMITTED = '[OMITTED]';
/** Longest string the rules read whole; a longer one is cut to this first. */
export const MAX_MATCHED_STRING = 4_096;
/** Characters (and 16 per value walked) one log line may put through the rules. */
export const LINE_BUDGET = 65_536;
const VALUE_COST = 16;

const SECRET_PARTS = ['token', 'secret', 'password', 'passwd', 'credential', 'assertion', 'cookie', 'authorization', 'api_key', 'apikey', 'private_key', 'private_jwk', 'sealed'];
/** The private members of a JSON Web Key (RFC 7518 6.2.2, 6.3.2). */
const PRIVATE_JWK_MEMBERS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']);
const SECRET_NAMES = new Set(['dpop', 'device_code', 'user_code', 'usercode', 'code_verifier', 'ticket', 'link', 'otp', 'parameters']);
const AMBIGUOUS_NAMES = new Set(['code', 'key', 'state']);
const SECRET_QUERY_NAMES = new Set(['code', 'state', 'key', 'link', 'sig', 'signature', 'nonce']);

/** `X-Api-Key`, `x_api_key`, `apiKey` all read as `x_api_key`, `api_key`. */
function normalise(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/-/g, '_');
}

/** Whether any value under this name is a secret. */
function alwaysSecret(name: string): boolean {
  return SECRET_NAMES.has(normalise(name));
}

/** Whether a string under this name is a secret. */
export function isSecretName(name: string): boolean {
  const normal = normalise(name);
  return SECRET_NAMES.has(normal) || SECRET_PARTS.some((part) => normal.includes(part));
}

/** Words with separators, an optional short number: `invalid_grant`, `ER_DUP_ENTRY`, `device-code-address`. */
const NAME_LIKE = /^[A-Za-z]+(?:[_.:/-]+[A-Za-z]+)*(?:[_-]?\d{1,3})?$/;
const PLATFORM_SECRET = /\bplatform_([a-z]{2})_[\w-]+/g;
/**
 * A JWT: `eyJ…` (at a word start), `.`, payload, `.`, signature. The header may not run across
 * another `-eyJ`: every start in a run of `eyJ-eyJ-…` would otherwise scan to the run's end
 * (quadratic). A header that holds `-eyJ` is matched from there, which still takes the payload
 * and the signature.
 */
const JWT = /\beyJ(?:\w|-(?!eyJ))*\.[\w-]+\.[\w-]*/g;
const SCHEME_CREDENTIAL = /\b(Bearer|DPoP|Basic)(\s+)[\w.~+/=-]{16,}/gi;
/** A query parameter; its name holds no `?` (one that could would scan to the end from every `?`). */
const QUERY_PARAMETER = /([?&])([^\s"#&'=?]+)=([^\s"#&']*)/g;

function looksLikeName(value: string): boolean {
  return value.length <= 64 && NAME_LIKE.test(value) && !/^platform_[a-z]{2}_/.test(value);
}

/** Query parameter names already judged: a URL repeats few names, a hostile one repeats one many times. */
const judgedQueryNames = new Map<string, boolean>();

function isSecretQueryParameter(name: string): boolean {
  let known = judgedQueryNames.get(name);
  if (known === undefined) {
    known = judgeQueryParameter(name);
    if (judgedQueryNames.size >= 1_000) judgedQueryNames.clear();
    if (name.length <= 64) judgedQueryNames.set(name, known);
  }
  return known;
}

function judgeQueryParameter(name: string): boolean {
  let decoded = name;
  try {
    decoded = decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    // A malformed name is judged as it came.
  }
  return isSecretName(decoded) || SECRET_QUERY_NAMES.has(normalise(decoded));
}


/**
 * Whether a character can be part of a secret that a shape rule finds: base64url, the credential
 * characters after a scheme (`.~+/=`), and `%` (an escaped one in a URL).
 */
function credentialCharacter(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) || // 0-9
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    code === 0x5f || code === 0x2d || code === 0x2e || code === 0x7e || code === 0x2b || code === 0x2f || code === 0x3d || code === 0x25 // _ - . ~ + / = %
  );
}

/**
 * The text the rules may read: itself when short, else its first `max` characters, stepped back
 * to the start of a run of credential characters the cut would split (the part kept of a token
 * could be too short for its rule), with a note of what was cut.
 */
export function cutForMatching(text: string, max = MAX_MATCHED_STRING): string {
  if (text.length <= max) return text;
  let end = max;
  if (credentialCharacter(text.charCodeAt(end))) while (end > 0 && credentialCharacter(text.charCodeAt(end - 1))) end -= 1;
  return `${text.slice(0, end)}…[cut ${text.length - end} characters]`;
}

function redactQuery(text: string): string {
  return text.replace(QUERY_PARAMETER, (whole, separator: string, name: string, value: string) =>
    value !== '' && isSecretQueryParameter(name) ? `${separator}${name}=${REDACTED}` : whole,
  );
}

function redactShapes(text: string): string {
  if (text.length < 8) return text;
  return redactQuery(
    text
      .replace(PLATFORM_SECRET, (_whole, kind: string) => `platform_${kind}_${REDACTED}`)
      .replace(JWT, REDACTED)
      .replace(SCHEME_CREDENTIAL, (_whole, scheme: string, space: string) => `${scheme}${space}${REDACTED}`),
  );
}

/** A URL (or any text holding one), cut to MAX_MATCHED_STRING, with the values of secret query parameters replaced. */
export function redactUrl(url: string): string {
  return redactQuery(cutForMatching(url));
}

/** A text cut to MAX_MATCHED_STRING, with the secrets found by their shape and secret query parameters of URLs in it replaced. */
export function redactText(text: string): string {
  return redactShapes(cutForMatching(text));
}

const MAX_DEPTH = 32;

/** What is left of one line's budget (LINE_BUDGET) as its values are walked. */
interface Budget {
  left: number;
}

/** A copy of a parsed log entry with every secret replaced (and strings past the budget omitted). */
export function redactValue(value: unknown, name = '', depth = 0, budget: Budget = { left: LINE_BUDGET }): unknown {
  if (depth > MAX_DEPTH) return REDACTED;
  budget.left -= VALUE_COST + name.length;
  if (name !== '' && alwaysSecret(name) && value !== null && value !== undefined) return REDACTED;
  if (typeof value === 'string') {
    if (name !== '' && isSecretName(name)) return REDACTED;
    if (AMBIGUOUS_NAMES.has(normalise(name)) && !looksLikeName(value)) return REDACTED;
    if (budget.left <= 0) return OMITTED;
    const text = cutForMatching(value, Math.min(MAX_MATCHED_STRING, budget.left));
    budget.left -= text.length;
    return redactShapes(text);
  }
  if (typeof value === 'number' && AMBIGUOUS_NAMES.has(normalise(name))) return REDACTED;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) {
      if (budget.left <= 0) {
        out.push(OMITTED);
        break;
      }
      out.push(redactValue(item, name, depth + 1, budget));
    }
    return out;
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    const jwk = typeof (value as { kty?: unknown }).kty === 'string';
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      // A key the budget does not reach is written with its value omitted (keys are names the
      // service chose, or header names, which Node bounds with the rest of the head).
      if (budget.left <= 0) {
        out[key] = OMITTED;
        continue;
      }
      const field = (value as Record<string, unknown>)[key];
      out[key] = jwk && PRIVATE_JWK_MEMBERS.has(key) ? REDACTED : redactValue(field, key, depth + 1, budget);
    }
    return out;
  }
  return value;
}

/** One written log line (JSON, newline-terminated), redacted. A line that is not JSON is redacted as text. */
export function redactLine(line: string): string {
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    const newline = line.endsWith('\n') ? '\n' : '';
    return `${redactText(newline ? line.slice(0, -1) : line)}${newline}`;
  }
  return `${JSON.stringify(redactValue(entry))}\n`;
}
