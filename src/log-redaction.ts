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
 */

export const REDACTED = '[REDACTED]';

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
const PLATFORM_SECRET = /\bplatform_([a-z]{2})_[A-Za-z0-9_-]+/g;
const JWT = /\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;
const SCHEME_CREDENTIAL = /\b(Bearer|DPoP|Basic)(\s+)[A-Za-z0-9._~+/=-]{16,}/gi;
const QUERY_PARAMETER = /([?&])([^=&#\s"']+)=([^&#\s"']*)/g;

function looksLikeName(value: string): boolean {
  return value.length <= 64 && NAME_LIKE.test(value) && !/^platform_[a-z]{2}_/.test(value);
}

function isSecretQueryParameter(name: string): boolean {
  let decoded = name;
  try {
    decoded = decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    // A malformed name is judged as it came.
  }
  return isSecretName(decoded) || SECRET_QUERY_NAMES.has(normalise(decoded));
}

/** A URL (or any text holding one) with the values of secret query parameters replaced. */
export function redactUrl(url: string): string {
  return url.replace(QUERY_PARAMETER, (whole, separator: string, name: string, value: string) =>
    value !== '' && isSecretQueryParameter(name) ? `${separator}${name}=${REDACTED}` : whole,
  );
}

/** Secrets found by their shape anywhere in a text, and secret query parameters of URLs in it. */
export function redactText(text: string): string {
  if (text.length < 8) return text;
  return redactUrl(
    text
      .replace(PLATFORM_SECRET, (_whole, kind: string) => `platform_${kind}_${REDACTED}`)
      .replace(JWT, REDACTED)
      .replace(SCHEME_CREDENTIAL, (_whole, scheme: string, space: string) => `${scheme}${space}${REDACTED}`),
  );
}

const MAX_DEPTH = 32;

/** A copy of a parsed log entry with every secret replaced. */
export function redactValue(value: unknown, name = '', depth = 0): unknown {
  if (depth > MAX_DEPTH) return REDACTED;
  if (name !== '' && alwaysSecret(name) && value !== null && value !== undefined) return REDACTED;
  if (typeof value === 'string') {
    if (name !== '' && isSecretName(name)) return REDACTED;
    if (AMBIGUOUS_NAMES.has(normalise(name)) && !looksLikeName(value)) return REDACTED;
    return redactText(value);
  }
  if (typeof value === 'number' && AMBIGUOUS_NAMES.has(normalise(name))) return REDACTED;
  if (Array.isArray(value)) return value.map((item) => redactValue(item, name, depth + 1));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    const jwk = typeof (value as { kty?: unknown }).kty === 'string';
    for (const [key, field] of Object.entries(value)) out[key] = jwk && PRIVATE_JWK_MEMBERS.has(key) ? REDACTED : redactValue(field, key, depth + 1);
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
    return redactText(line);
  }
  return `${JSON.stringify(redactValue(entry))}\n`;
}
