/**
 * What counts as a credential in ingested events and audit records (spec 4.7: "credentials that
 * stray into events and audit details are redacted on receipt"). The walker that applies these
 * rules is `redaction.ts`; this file only says what to look for and why.
 *
 * Two families:
 * - TEXT_RULES run over every string value, in the order listed (specific shapes first, the
 *   generic `name=value` forms last). Each replaces its match, or only the named group `secret`
 *   of its match, with `[REDACTED:<kind>]`.
 * - KEY_RULES look at the object key a string sits under (case- and separator-insensitive:
 *   `API-Key`, `x_api_key` and `apiKey` all read `…apikey`) and replace the whole value.
 *
 * Regular expressions must stay linear on hostile input (1,000-event envelopes, strings of a
 * megabyte): every token rule starts at a run boundary (a lookbehind for "no token character
 * before"), every repetition is bounded, and no repetition contains another over overlapping
 * characters. A rule's `hints` are lower-case fragments, at least one of which a string must
 * contain before the rule's pattern runs at all.
 */

export interface TextRule {
  /** The `<kind>` of `[REDACTED:<kind>]`. */
  readonly kind: string;
  /** Why the rule exists, one line. */
  readonly why: string;
  /** Lower-case fragments; the pattern runs only on strings containing at least one. */
  readonly hints: readonly string[];
  /** Flags `g` and `d` always. Named group `secret`, when present, is the only part replaced. */
  readonly pattern: RegExp;
  /** A further check on the secret part; false leaves the match as it is. */
  readonly accept?: (secret: string, match: RegExpExecArray) => boolean;
}

export interface KeyRule {
  readonly kind: 'secret_value';
  readonly why: string;
  /** Normalised key endings (lower case, letters and digits only) the rule applies under. */
  readonly keyEndings: readonly string[];
  /** Whether a string under such a key is to be replaced. */
  readonly test: (value: string) => boolean;
}

/** Strings shorter than this hold no credential a text rule could recognise; they skip the text rules. */
export const MIN_TEXT_LENGTH = 8;

/**
 * Containers nested deeper than this (the value given to `redact` is level 0) are replaced by
 * `[REDACTED:depth]` rather than walked: no workbench sends that much nesting, and an unbounded
 * walk is a denial of service. A container met again inside itself becomes `[REDACTED:cycle]`.
 */
export const MAX_DEPTH = 32;

/** Shannon entropy, in bits per character, a value under a token-like key must reach (see `looksRandom`). */
export const ENTROPY_BITS_PER_CHAR = 3.0;
/** Values under token-like keys shorter than this are kept whatever their entropy. */
export const ENTROPY_MIN_LENGTH = 8;

export const marker = (kind: string): string => `[REDACTED:${kind}]`;
const WHOLE_MARKER = /^\[REDACTED:[a-z0-9_]+\]$/;
/** True for a value that is already exactly one marker; no rule replaces a marker again. */
export const isMarker = (value: string): boolean => WHOLE_MARKER.test(value);

// --- Predicates -------------------------------------------------------------------------------

/** Shannon entropy of the string's characters, in bits per character. */
export function shannonEntropy(value: string): number {
  if (value.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const char of value) counts.set(char, (counts.get(char) ?? 0) + 1);
  const length = [...value].length;
  let bits = 0;
  for (const count of counts.values()) {
    const p = count / length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

const HAS_DIGIT = /[0-9]/;
const HAS_LOWER = /[a-z]/;
const HAS_UPPER = /[A-Z]/;
const HAS_SYMBOL = /[^A-Za-z0-9]/;
const HAS_INNER_UPPER = /.[A-Z]/;
const HAS_SPACE = /\s/;

function characterClasses(value: string): number {
  return [HAS_DIGIT, HAS_LOWER, HAS_UPPER, HAS_SYMBOL].filter((re) => re.test(value)).length;
}

/**
 * A value that looks generated rather than written: at least ENTROPY_MIN_LENGTH characters, no
 * white space, at least two of {lower case, upper case, digits, symbols}, and Shannon entropy of
 * at least ENTROPY_BITS_PER_CHAR bits per character; below 12 characters (where even all-distinct
 * characters reach only log2(length) bits) 85% of log2(length) is enough. A 32-hex-digit token
 * scores about 3.6, a base64 secret above 4; `aabb1122` 2.0, `authentication` has one class only,
 * `expired` is too short.
 */
export function looksRandom(value: string): boolean {
  if (value.length < ENTROPY_MIN_LENGTH || HAS_SPACE.test(value)) return false;
  if (characterClasses(value) < 2) return false;
  const needed = Math.min(ENTROPY_BITS_PER_CHAR, 0.85 * Math.log2(value.length));
  return shannonEntropy(value) >= needed;
}

/**
 * A single word that reads like a credential rather than prose: `minLength` characters or more
 * and a digit, a symbol or an upper-case letter after the first; or, without any of those,
 * 12 characters or more. `Bearer authentication` and `password: required` stay readable.
 */
export function looksLikeCredentialWord(value: string, minLength: number): boolean {
  if (value.length < minLength || HAS_SPACE.test(value)) return false;
  if (value.length >= 12) return true;
  return HAS_DIGIT.test(value) || HAS_SYMBOL.test(value) || (HAS_INNER_UPPER.test(value) && HAS_LOWER.test(value));
}

/** A looksRandom value that also has a digit or 32+ characters: `Required.` is a word with a full stop, not a token. */
export function looksLikeToken(value: string): boolean {
  return looksRandom(value) && (HAS_DIGIT.test(value) || value.length >= 32);
}

function isJwt(token: string): boolean {
  const header = Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8');
  // Cheap refusal first: hostile input can offer many look-alikes, and a failed parse throws.
  if (!header.includes('"alg"') || !header.trimEnd().endsWith('}')) return false;
  try {
    const parsed: unknown = JSON.parse(header);
    return typeof parsed === 'object' && parsed !== null && typeof (parsed as { alg?: unknown }).alg === 'string';
  } catch {
    return false;
  }
}

const PRINTABLE = /^[\x20-\x7e]+$/;
function isBasicCredential(encoded: string): boolean {
  if (encoded.replace(/=+$/, '').length % 4 === 1) return false;
  const decoded = Buffer.from(encoded, 'base64').toString('latin1');
  return PRINTABLE.test(decoded) && decoded.includes(':');
}

/** `<token>`, `${TOKEN}`, `{{ token }}`: documentation and templates, not values. */
const PLACEHOLDER = /<[^<>]*>|\$\{|\{\{/;
export const isPlaceholder = (value: string): boolean => PLACEHOLDER.test(value);

/** `name=value` literals that configure rather than disclose. */
const NOT_A_VALUE = /^(?:true|false|null|nil|none|undefined|\*+)$/i;

function isAssignedSecret(secret: string, match: RegExpExecArray): boolean {
  if (NOT_A_VALUE.test(secret) || isPlaceholder(secret)) return false;
  const quoted = /["']$/.test(match.groups?.pre ?? '');
  // `name: word` is also how prose reads ("Password: required"), so unquoted `:` values must look like one.
  if (match.groups?.sep === ':' && !quoted) return looksLikeCredentialWord(secret, 6);
  return true;
}

// --- Patterns ---------------------------------------------------------------------------------

/** Compiles a rule pattern: always global with match indices, plus `extra` flags. */
const rx = (source: string, extra = ''): RegExp => new RegExp(source, `gd${extra}`);

// No letter, digit, `_` or `-` right before: a token starts a run, never in the middle of one.
const START = '(?<![A-Za-z0-9_-])';
const SEP = '["\']?[ \\t]{0,3}(?<sep>:=|=>|=|:)[ \\t]{0,3}';
const SECRET_NAMES =
  '(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|credentials?)';

export const TEXT_RULES: readonly TextRule[] = [
  {
    kind: 'private_key',
    why: 'A PEM private key (PKCS#1/#8, EC, OpenSSH, encrypted, PGP) is a whole identity; the block goes, header to footer, or to the next ----- when truncated.',
    hints: ['-----begin'],
    // The body cannot cross `-----`, so a BEGIN without END stops at the next armour line.
    pattern: rx(
      '-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[^-]|-(?!----)){0,65536}(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?',
    ),
  },
  {
    kind: 'jwt',
    why: 'A JWT (JWS, or JWE with five parts) is a bearer credential: three base64url parts whose header is JSON naming an `alg`.',
    hints: ['eyj'],
    pattern: rx(
      `${START}eyJ[A-Za-z0-9_-]{5,4096}\\.[A-Za-z0-9_-]{2,65536}\\.[A-Za-z0-9_-]{0,8192}(?:\\.[A-Za-z0-9_-]{0,65536}\\.[A-Za-z0-9_-]{0,8192})?`,
    ),
    accept: isJwt,
  },
  {
    kind: 'platform_token',
    why: "This service's own secrets: device access/refresh tokens, run credentials, device codes, join keys, web sessions (platform_<two letters>_…).",
    hints: ['platform_'],
    pattern: rx(`${START}platform_[a-z]{2}_[A-Za-z0-9_-]{16,512}`),
  },
  {
    kind: 'anthropic_key',
    why: 'Anthropic API, admin and OAuth keys start sk-ant-.',
    hints: ['sk-ant-'],
    pattern: rx(`${START}sk-ant-[A-Za-z0-9_-]{20,1024}`),
  },
  {
    kind: 'openrouter_key',
    why: 'OpenRouter keys (sk-or-v1- and 64 hex digits) spend the owner\'s credit on any model.',
    hints: ['sk-or-'],
    pattern: rx(`${START}sk-or-v1-[a-f0-9]{64}`),
  },
  {
    kind: 'openai_key',
    why: 'OpenAI keys: sk-proj-, sk-svcacct-, sk-admin-, or legacy sk- and 32+ letters and digits (other providers copying that form land here too).',
    hints: ['sk-'],
    pattern: rx(`${START}sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,1024}|[A-Za-z0-9]{32,1024})`),
    // An unprefixed body must mix letters and digits: `sk-` followed by a slug is not a key.
    accept: (secret) => /^sk-(?:proj|svcacct|admin)-/.test(secret) || (HAS_DIGIT.test(secret.slice(3)) && /[A-Za-z]/.test(secret.slice(3))),
  },
  {
    kind: 'aws_access_key',
    why: 'AWS access key ids: AKIA (long-term) or ASIA (temporary) and 16 upper-case letters or digits; half of an AWS credential.',
    hints: ['akia', 'asia'],
    pattern: rx('(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])'),
  },
  {
    kind: 'aws_secret_key',
    why: 'AWS secret access keys (40 base64 characters) are recognisable only by their neighbour: an AWS secret key name, or a redacted AWS key id just before.',
    hints: ['secret', '[redacted:aws_access_key]'],
    pattern: rx(
      `(?<pre>(?:(?<![A-Za-z0-9])(?:aws[_.-]?)?secret[_.-]?(?:access[_.-]?)?key${SEP}["']?|\\[REDACTED:aws_access_key\\][\\s,;:|"']{1,4}))(?<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])`,
      'i',
    ),
  },
  {
    kind: 'gcp_api_key',
    why: 'Google Cloud / Firebase / Gemini API keys: AIza and 35 characters.',
    hints: ['aiza'],
    pattern: rx(`${START}AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])`),
  },
  {
    kind: 'gcp_client_secret',
    why: 'Google OAuth client secrets start GOCSPX-.',
    hints: ['gocspx-'],
    pattern: rx(`${START}GOCSPX-[A-Za-z0-9_-]{24,64}`),
  },
  {
    kind: 'gcp_access_token',
    why: 'Google OAuth access tokens start ya29. and act as the signed-in account.',
    hints: ['ya29.'],
    pattern: rx(`${START}ya29\\.[0-9A-Za-z_-]{20,4096}`),
  },
  {
    kind: 'azure_key',
    why: 'Azure storage and Service Bus connection strings carry the account key as AccountKey= / SharedAccessKey=.',
    hints: ['accountkey', 'sharedaccesskey'],
    pattern: rx('(?<pre>(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey)[ \\t]{0,2}=[ \\t]{0,2})(?<secret>[A-Za-z0-9+/]{20,256}={0,2})', 'i'),
  },
  {
    kind: 'url_signature',
    why: 'Signed URLs (Azure SAS sig=, AWS X-Amz-Signature=, GCS X-Goog-Signature=, Signature=) grant access to whoever holds them.',
    hints: ['sig'],
    pattern: rx('(?<pre>[?&;](?:sig|x-amz-signature|x-goog-signature|signature)=)(?<secret>[A-Za-z0-9%+/_.-]{16,4096})', 'i'),
  },
  {
    kind: 'github_token',
    why: 'GitHub tokens: ghp_ (classic), gho_ (OAuth), ghu_/ghs_ (app user/installation), ghr_ (refresh), github_pat_ (fine-grained).',
    hints: ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_'],
    pattern: rx('(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})'),
  },
  {
    kind: 'gitlab_token',
    why: 'GitLab tokens: glpat- (personal), gldt- (deploy), glrt-/glptt- (runner, trigger), glft-, glsoat-, glcbt-.',
    hints: ['glpat-', 'gldt-', 'glrt-', 'glptt-', 'glft-', 'glsoat-', 'glcbt-'],
    pattern: rx(`${START}gl(?:pat|dt|rt|ptt|ft|soat|cbt)-[A-Za-z0-9_.-]{20,255}`),
  },
  {
    kind: 'slack_token',
    why: 'Slack bot, user, app-level, refresh and legacy tokens: xoxb-, xoxp-, xoxa-, xoxo-, xoxr-, xoxs-, xoxe-, xapp-.',
    hints: ['xox', 'xapp-'],
    pattern: rx(`${START}(?:xox[abposr]|xoxe\\.xox[bp]|xoxe|xapp)-[A-Za-z0-9-]{10,250}`),
    // Real tokens carry numeric team / app ids.
    accept: (secret) => HAS_DIGIT.test(secret),
  },
  {
    kind: 'slack_webhook',
    why: 'Anyone holding a Slack incoming-webhook URL can post to the channel; the path after the host is the secret.',
    hints: ['hooks.slack.com'],
    pattern: rx('(?<pre>hooks\\.slack\\.com/(?:services|workflows|triggers)/)(?<secret>[A-Za-z0-9_/-]{16,255})', 'i'),
  },
  {
    kind: 'discord_webhook',
    why: 'A Discord webhook URL is its own credential (id and token in the path).',
    hints: ['/api/webhooks/'],
    pattern: rx('(?<pre>discord(?:app)?\\.com/api/webhooks/)(?<secret>[0-9]{5,30}/[A-Za-z0-9_-]{20,255})', 'i'),
  },
  {
    kind: 'stripe_key',
    why: 'Stripe secret and restricted keys (sk_live_, rk_live_, sk_test_, rk_test_) and webhook secrets (whsec_); publishable pk_ keys are public and kept.',
    hints: ['sk_', 'rk_', 'whsec_'],
    pattern: rx(`${START}(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,247}|whsec_[A-Za-z0-9+/=]{20,255})`),
  },
  {
    kind: 'npm_token',
    why: 'npm access tokens: npm_ and 36 letters and digits; they publish packages.',
    hints: ['npm_'],
    pattern: rx(`${START}npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])`),
  },
  {
    kind: 'pypi_token',
    why: 'PyPI upload tokens are macaroons starting pypi-AgEIcHlwaS5vcmc.',
    hints: ['pypi-'],
    pattern: rx(`${START}pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,2048}`),
  },
  {
    kind: 'sendgrid_key',
    why: 'SendGrid API keys: SG. then two base64url parts (22 and 43 characters); they send mail as the owner.',
    hints: ['sg.'],
    pattern: rx(`${START}SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])`),
  },
  {
    kind: 'huggingface_token',
    why: 'Hugging Face access tokens (hf_ and 34+ letters): model and dataset access, common on AI workbenches.',
    hints: ['hf_'],
    pattern: rx(`${START}hf_[A-Za-z0-9]{34,64}(?![A-Za-z0-9_])`),
  },
  {
    kind: 'groq_key',
    why: 'Groq API keys: gsk_ and 48+ letters and digits.',
    hints: ['gsk_'],
    pattern: rx(`${START}gsk_[A-Za-z0-9]{48,128}`),
  },
  {
    kind: 'xai_key',
    why: 'xAI API keys: xai- and 80 letters and digits.',
    hints: ['xai-'],
    pattern: rx(`${START}xai-[A-Za-z0-9]{70,128}`),
  },
  {
    kind: 'url_password',
    why: 'scheme://user:password@host puts a password in a URL (database, broker, git remotes); the user and host stay, the password goes.',
    hints: ['://'],
    pattern: rx('(?<pre>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\\s:/?#@\\[\\]]{0,256}:)(?<secret>[^\\s/?#]{1,256})@'),
  },
  {
    kind: 'authorization',
    why: 'An Authorization header written out in text (logs, curl commands): the credential after the scheme goes.',
    hints: ['authorization'],
    pattern: rx(
      '(?<pre>(?<![A-Za-z0-9_-])(?:proxy-)?authorization["\']?[ \\t]{0,3}[:=][ \\t]{0,3}["\']?(?:(?:Bearer|Basic|DPoP|Token|Digest|Negotiate|NTLM|ApiKey|AWS4-HMAC-SHA256)[ \\t]{1,3})?)(?<secret>[^\\s"\',;]{8,8192})',
      'i',
    ),
    // Credentials are generated; `Authorization: required` is prose, `Bearer <token>` documentation.
    accept: (secret) => looksLikeToken(secret) && !isPlaceholder(secret),
  },
  {
    kind: 'bearer_token',
    why: '`Bearer <token>` / `DPoP <token>` anywhere in text carries a token whatever its format.',
    hints: ['bearer', 'dpop'],
    // It must end where the token does: `Bearer platform_at_<token>` is not `Bearer platform_at_`.
    pattern: rx(`(?<pre>${START}(?:Bearer|DPoP)[ \\t]{1,3})(?<secret>[A-Za-z0-9._~+/-]{8,8192}=*)(?![A-Za-z0-9._~+/=<>{}$-])`, 'i'),
    // `Bearer authentication` is prose; a token looks generated.
    accept: looksLikeToken,
  },
  {
    kind: 'basic_auth',
    why: '`Basic <base64>` is a user name and password, readable by anyone; only base64 that decodes to user:password counts.',
    hints: ['basic'],
    pattern: rx(`(?<pre>${START}Basic[ \\t]{1,3})(?<secret>[A-Za-z0-9+/]{4,4096}={0,2})(?![A-Za-z0-9+/=])`, 'i'),
    accept: isBasicCredential,
  },
  {
    kind: 'cookie',
    why: 'A Cookie / Set-Cookie header written out in text holds session ids; its whole value goes.',
    hints: ['cookie'],
    pattern: rx(`(?<pre>${START}(?:set-)?cookie["']?[ \\t]{0,3}:[ \\t]{0,3}["']?)(?<secret>[^\\r\\n"']{1,8192})`, 'i'),
    accept: (secret) => secret.includes('=') && secret.length >= MIN_TEXT_LENGTH,
  },
  {
    kind: 'assignment',
    why: 'password=, secret=, token=, api_key=, access_key=, private_key=, credentials= (also :, :=, =>, quoted, any prefix such as DB_PASSWORD) in free text: the name stays, the value goes.',
    hints: ['pass', 'secret', 'token', 'key', 'credential'],
    pattern: rx(
      `(?<pre>(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,60}?${SECRET_NAMES}${SEP}["']?)(?<secret>(?<=["'])[^"'\\r\\n]{1,512}|(?<!["'])(?!\\$\\{)[^\\s"'\`,;&<>(){}\\[\\]]{1,512})`,
      'i',
    ),
    accept: isAssignedSecret,
  },
  {
    kind: 'assignment',
    why: 'Command-line flags --password x, --token x, --api-key x (space-separated; --name=x is the rule above).',
    hints: ['--'],
    pattern: rx(
      `(?<pre>(?<![A-Za-z0-9_-])--[A-Za-z0-9-]{0,40}?(?:password|passwd|passphrase|secret|token|api-?key|access-?key|private-?key)[ \\t]{1,3}["']?)(?<secret>[^\\s"'\`;&|<>-][^\\s"'\`;&|<>]{0,511})`,
      'i',
    ),
    accept: (secret) => !NOT_A_VALUE.test(secret),
  },
];

// --- Keys ---------------------------------------------------------------------------------------

/** Lower case, letters and digits only: `X-Api-Key`, `x_api_key` and `xApiKey` all become `xapikey`. */
export const normaliseKey = (key: string): string => key.toLowerCase().replace(/[^a-z0-9]/g, '');

export const KEY_RULES: readonly KeyRule[] = [
  {
    kind: 'secret_value',
    why: 'Under these names any non-empty string is a secret, however plain it looks (`hunter2`); `pwd` is left out: it is the working directory far more often.',
    keyEndings: [
      'password',
      'passwd',
      'passphrase',
      'secret', // client_secret, webhookSecret, jwt_secret…
      'secretkey',
      'secretaccesskey',
      'privatekey',
      'authorization', // and proxy_authorization
      'cookie', // and set_cookie
      'credential',
      'credentials',
    ],
    test: (value) => value.trim().length > 0,
  },
  {
    kind: 'secret_value',
    why: 'Under these names a value is a secret when it looks generated (looksRandom); `token: "expired"` and plural counters such as `max_tokens` stay.',
    keyEndings: [
      'token', // access_token, refresh_token, id_token, csrfToken, x-auth-token…
      'apikey', // api_key, API-Key, x_api_key
      'accesskey',
      'accountkey',
      'signingkey',
      'encryptionkey',
      'masterkey',
      'sessionkey',
      'sessionid',
      'signature',
      'auth', // basic_auth, x-auth, oauth
    ],
    test: looksRandom,
  },
];

/** The key rule a string under `key` falls under, if any (the first listed wins). */
const keyRuleCache = new Map<string, KeyRule | null>();

export function keyRuleFor(key: string): KeyRule | undefined {
  // Workbenches send the same few keys again and again: decide each once.
  const cached = keyRuleCache.get(key);
  if (cached !== undefined) return cached ?? undefined;
  const normalised = normaliseKey(key);
  const rule = normalised === '' ? undefined : KEY_RULES.find((candidate) => candidate.keyEndings.some((ending) => normalised.endsWith(ending)));
  if (keyRuleCache.size >= 10_000) keyRuleCache.clear();
  keyRuleCache.set(key, rule ?? null);
  return rule;
}
