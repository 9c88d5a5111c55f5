/**
 * What counts as a credential in ingested events and audit records (spec 4.7: "credentials that
 * stray into events and audit details are redacted on receipt"). The walker that applies these
 * rules is `redaction.ts`, the scanner of `name = value` text is `assignments.ts`; this file says
 * what to look for and why.
 *
 * Three families:
 * - TEXT_RULES run over every string (values and object keys), in the order listed: credentials
 *   recognised by their own shape (a prefix, a structure, a neighbour), wherever they stand. Each
 *   replaces its match, or only the named group `secret` of its match, with `[REDACTED:<kind>]`.
 * - Secret names (`classifyName`): an object key, the name of a header-like pair, or the name in a
 *   `name = value` / `name: value` assignment of free text is read as words (case, separators and
 *   digits ignored) and matched by word against SECRET_WORDS (any value is secret) and
 *   TOKEN_WORDS (a value that looks generated is). The rule reaches everything beneath the key.
 * - Structures (`redaction.ts`): header-like objects and pairs are judged by their name, strings
 *   that hold JSON are read as JSON.
 *
 * Every regular expression here is linear in its input (1,000-event envelopes, strings of a
 * megabyte): every rule starts at a run boundary (a lookbehind for "no token character before")
 * or at a fixed word, every repetition is bounded, no repetition contains another over overlapping
 * characters, and no rule's match can contain the start of another match of the same rule beyond a
 * bounded number of run boundaries, so restarting after a refused match never rescans more than a
 * constant times. The rules whose matches could overlap without bound (`Cookie:`, `Authorization:`,
 * `name=value`) are not regular expressions but the one-pass scanner of `assignments.ts`. A rule's
 * `hints` are lower-case fragments, at least one of which a string must contain before the rule's
 * pattern runs at all. test/unit/redaction-performance.test.ts times each rule on inputs built
 * from its own hints.
 */

export interface TextRule {
  /** The `<kind>` of `[REDACTED:<kind>]`. */
  readonly kind: string;
  /** Why the rule exists, one line. */
  readonly why: string;
  /** Lower-case fragments; the pattern runs only on strings containing at least one. */
  readonly hints: readonly string[];
  /** Flag `g` always. Named group `secret`, when present, is the only part replaced; it follows a group `pre` the match starts with. */
  readonly pattern: RegExp;
  /** A further check on the secret part; false leaves the match as it is. */
  readonly accept?: (secret: string, match: RegExpExecArray) => boolean;
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
  // The length without its padding, counted back from the end (no regex rescanning a run of `=`).
  let unpadded = encoded.length;
  while (unpadded > 0 && encoded.charCodeAt(unpadded - 1) === 0x3d) unpadded--;
  if (unpadded % 4 === 1) return false;
  const decoded = Buffer.from(encoded, 'base64').toString('latin1');
  return PRINTABLE.test(decoded) && decoded.includes(':');
}

/** `<token>`, `${TOKEN}`, `{{ token }}`: documentation and templates, not values. */
const PLACEHOLDER = /<[^<>]*>|\$\{|\{\{/;
export const isPlaceholder = (value: string): boolean => PLACEHOLDER.test(value);

/** `name=value` literals that configure rather than disclose. */
export const NOT_A_VALUE = /^(?:true|false|null|nil|none|undefined|\*+)$/i;

// --- Patterns ---------------------------------------------------------------------------------

/** Compiles a rule pattern: always global (`lastIndex` says where to look), plus `extra` flags. */
const rx = (source: string, extra = ''): RegExp => new RegExp(source, `g${extra}`);

// No letter, digit, `_` or `-` right before: a token starts a run, never in the middle of one.
// An escaped line break or tab (`\n`, `\r`, `\t` written out, as in JSON text and logs) also ends a run.
const START = '(?:(?<![A-Za-z0-9_-])|(?<=\\\\[nrt]))';
const SEP = '["\']?[ \\t]{0,3}(?<sep>:=|=>|=|:)[ \\t]{0,3}';

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
    kind: 'private_key',
    why: 'A PuTTY private key file (.ppk) holds the key in its Private-Lines block of base64 lines.',
    hints: ['private-lines'],
    pattern: rx('(?<pre>Private-Lines:[ \\t]{0,8}[0-9]{1,4}\\r?\\n)(?<secret>(?:[A-Za-z0-9+/=]{1,128}\\r?\\n){0,511}[A-Za-z0-9+/=]{1,128})(?=[\\r\\n]|$)', 'i'),
  },
  {
    kind: 'password',
    why: 'A PostgreSQL password file (.pgpass) line, host:port:database:user:password; found by the default port 5432 or the wildcard port (a line with another port and no other sign passes).',
    hints: [':5432:', ':*:'],
    pattern: rx('(?<pre>(?:^|[\\r\\n])[A-Za-z0-9._*-]{1,253}:(?:5432|\\*):[^:\\s]{1,63}:[^:\\s]{1,63}:)(?<secret>[^\\r\\n]{1,256})(?=[\\r\\n]|$)'),
    accept: (secret) => !secret.startsWith('[REDACTED:'),
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
    kind: 'url_token',
    why: 'A token written as the user of a URL (git remotes: https://<token>@github.com/…) is the whole credential; only a value that looks generated counts.',
    hints: ['://'],
    pattern: rx('(?<pre>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://)(?<secret>[A-Za-z0-9_.~-]{16,256})@(?=[A-Za-z0-9\\[])'),
    accept: looksLikeToken,
  },
  {
    kind: 'netrc',
    why: '.netrc and .git-credentials store entries: machine <host> login <user> password <secret>; the password goes.',
    hints: ['machine'],
    pattern: rx(
      '(?<pre>(?<![A-Za-z0-9_-])machine[ \\t\\r\\n]{1,64}[^\\s]{1,255}[ \\t\\r\\n]{1,64}login[ \\t\\r\\n]{1,64}[^\\s]{1,255}[ \\t\\r\\n]{1,64}(?:password|passwd)[ \\t\\r\\n]{1,64})(?<secret>[^\\s]{1,512})',
      'i',
    ),
  },
];

// --- Secret names -------------------------------------------------------------------------------

/**
 * How strongly a name says "secret": `always`, any non-empty value under it is one (`password`,
 * `client_secret`); `random`, a value is one when it looks generated (`token`, `api_key`: a
 * `token: "expired"` or `max_tokens: 4096` stays).
 */
export type SecretStrength = 'always' | 'random';

/** The stronger of two strengths (`always` wins); undefined when neither says secret. */
export function stronger(a: SecretStrength | undefined, b: SecretStrength | undefined): SecretStrength | undefined {
  return a === 'always' || b === 'always' ? 'always' : (a ?? b);
}

/**
 * Words that make any value under them a secret, whatever it looks like (`hunter2`). Matched as
 * the last word of a name (after QUALIFIER_WORDS are set aside), in the singular or plural:
 * `password`, `DB_PASS`, `password2`, `secrets`, `client-secret`, `AWS_SECRET_ACCESS_KEY`. The
 * longer ones also end a glued word (`dbpassword`, `clientsecret`, `setcookie`); `pass` and `pwd`
 * only stand alone as words, so `passport`, `bypass` and `compass` stay.
 */
export const SECRET_WORDS: readonly string[] = [
  'password',
  'passwd',
  'pass',
  'pwd', // MYSQL_PWD, Pwd= in connection strings; an absolute path under a lone `PWD` is the working directory and stays
  'passphrase',
  'passcode',
  'secret', // client_secret, webhookSecret, jwt_secret, secrets…
  'credential',
  'creds',
  'authorization', // and proxy_authorization
  'cookie', // and set_cookie
  'mnemonic', // a wallet's recovery words
  'privkey',
];

/**
 * Words under which a value is a secret when it looks generated (see `looksRandom`): matched like
 * SECRET_WORDS. `auth` and `token` also end glued words (`oauth`, `authtoken`, `idtoken`).
 */
export const TOKEN_WORDS: readonly string[] = ['token', 'auth', 'oauth', 'signature', 'sig', 'jwt', 'bearer', 'hmac', 'csrf', 'xsrf', 'sessionid', 'sid'];

/**
 * `<word> key` (and `<word>key` glued, `<word> keys`): a key of these is a credential. `secret key`
 * and `private key` are SECRET_WORDS strength (as is any `… key` with `secret` or `private` among
 * its words: `aws_secret_access_key`); the rest are TOKEN_WORDS strength. `key` alone (`{key:
 * "theme"}`), `sort_key` or `primary_key` say nothing.
 */
export const KEY_OWNER_WORDS: readonly string[] = [
  'api',
  'access',
  'account',
  'app',
  'auth',
  'client',
  'consumer',
  'decryption',
  'deploy',
  'encryption',
  'gpg',
  'hmac',
  'license',
  'master',
  'pgp',
  'session',
  'shared',
  'signing',
  'ssh',
  'storage',
  'subscription',
  'webhook',
];

/** `<word> id`: `session id` (`sessionId`, `session_id`) is a token; other ids are not. */
const ID_OWNER_WORDS: ReadonlySet<string> = new Set(['session']);

/**
 * Trailing words that say how or when a secret is held, not what it is: set aside before the last
 * word is read, so `password_hash`, `secret_value`, `SecretString`, `client-key-data`,
 * `password_base64` and `password_confirmation2` are read as `password`, `secret`, `client key`
 * (digits are dropped before: `base64` is read as `base`).
 */
export const QUALIFIER_WORDS: readonly string[] = [
  'again',
  'b', // b64: digits are dropped
  'base', // base64, base32
  'bin',
  'binary',
  'bytes',
  'cleartext',
  'confirm',
  'confirmation',
  'confirmed',
  'content',
  'current',
  'data',
  'default',
  'der',
  'digest',
  'enc',
  'encoded',
  'encrypted',
  'env',
  'hash',
  'hashed',
  'hex',
  'input',
  'json',
  'new',
  'next',
  'old',
  'original',
  'override',
  'pem',
  'plain',
  'plaintext',
  'prev',
  'previous',
  'raw',
  'repeat',
  'retype',
  'str',
  'string',
  'text',
  'txt',
  'val',
  'value',
  'values',
  'var',
  'verification',
  'verify',
  'yaml',
];

const SECRET_SET: ReadonlySet<string> = new Set(SECRET_WORDS);
const TOKEN_SET: ReadonlySet<string> = new Set(TOKEN_WORDS);
const KEY_OWNER_SET: ReadonlySet<string> = new Set(KEY_OWNER_WORDS);
const QUALIFIER_SET: ReadonlySet<string> = new Set(QUALIFIER_WORDS);
/** Words too short or too common to end a glued word (`bypass`, `author`…): matched alone only. */
const ALONE_ONLY: ReadonlySet<string> = new Set(['pass', 'pwd', 'creds', 'sig', 'sid', 'jwt', 'hmac', 'csrf', 'xsrf', 'bearer']);
/** Glued endings: the long secret words, and `<owner>key` for every owner. */
const GLUED_ENDINGS: readonly (readonly [string, SecretStrength])[] = [
  ...SECRET_WORDS.filter((word) => !ALONE_ONLY.has(word)).map((word) => [word, 'always'] as const),
  ['secretkey', 'always'],
  ['secretaccesskey', 'always'],
  ['privatekey', 'always'],
  ['seedphrase', 'always'],
  ['recoveryphrase', 'always'],
  ...TOKEN_WORDS.filter((word) => !ALONE_ONLY.has(word)).map((word) => [word, 'random'] as const),
  ...KEY_OWNER_WORDS.map((word) => [`${word}key`, 'random'] as const),
];

/** Only the end of a long name is read: the last words decide. */
const NAME_TAIL = 96;

/** Character classes of a name (numbers, not a const enum: every compiler reads them the same). */
const OTHER = 0;
const LOWER = 1;
const UPPER = 2;
const DIGIT = 3;

function charType(code: number): number {
  if (code >= 97 && code <= 122) return LOWER;
  if (code >= 65 && code <= 90) return UPPER;
  if (code >= 48 && code <= 57) return DIGIT;
  return OTHER;
}

/**
 * The words of a name, lower case, in one pass: split at anything but ASCII letters and digits, at
 * a change of case (`apiKey`, `APIKey`), and between letters and digits; digits are dropped. So
 * `X-Api-Key`, `x_api_key`, `xApiKey` and `X_API_KEY2` are all `x api key`.
 */
export function nameWords(name: string): string[] {
  const text = name.length > NAME_TAIL ? name.slice(-NAME_TAIL) : name;
  const words: string[] = [];
  let start = -1;
  let startType = OTHER;
  let previous = OTHER;
  for (let index = 0; index <= text.length; index++) {
    const type = index < text.length ? charType(text.charCodeAt(index)) : OTHER;
    let boundary = type === OTHER || start < 0 || (previous === DIGIT) !== (type === DIGIT) || (type === UPPER && previous === LOWER);
    let next = index;
    if (!boundary && type === LOWER && previous === UPPER && index - start > 1) {
      // `APIKey`: the last capital starts the next word.
      boundary = true;
      next = index - 1;
    }
    if (boundary) {
      if (start >= 0 && startType !== DIGIT && next > start) words.push(text.slice(start, next).toLowerCase());
      start = type === OTHER ? -1 : next;
      startType = type === OTHER ? OTHER : charType(text.charCodeAt(next));
    }
    previous = type;
  }
  return words;
}

/** A word and its singular (`secrets` → `secret`, `cookies` → `cookie`); nothing cleverer is needed here. */
function singularForms(word: string): [string, string] {
  return [word, word.length > 3 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word];
}

function wordStrength(word: string): SecretStrength | undefined {
  for (const form of singularForms(word)) {
    if (SECRET_SET.has(form)) return 'always';
    if (TOKEN_SET.has(form)) return 'random';
  }
  for (const form of singularForms(word)) {
    for (const [ending, strength] of GLUED_ENDINGS) if (form.endsWith(ending)) return strength;
  }
  return undefined;
}

/** The strength a name's words give (see SECRET_WORDS, TOKEN_WORDS, KEY_OWNER_WORDS, QUALIFIER_WORDS). */
export function strengthOfWords(all: readonly string[]): SecretStrength | undefined {
  let end = all.length;
  while (end > 1 && QUALIFIER_SET.has(all[end - 1]!)) end -= 1;
  if (end === 0) return undefined;
  const words = all.slice(0, end);
  const last = singularForms(words[end - 1]!)[1];
  const previous = end > 1 ? words[end - 2]! : undefined;
  if (last === 'key' && previous !== undefined) {
    if (words.some((word) => word === 'secret' || word === 'private')) return 'always';
    if (KEY_OWNER_SET.has(previous)) return 'random';
    return undefined;
  }
  if (last === 'id') return previous !== undefined && ID_OWNER_WORDS.has(previous) ? 'random' : undefined;
  if (last === 'phrase' && (previous === 'pass' || previous === 'seed' || previous === 'recovery')) return 'always';
  return wordStrength(words[end - 1]!);
}

/** A name holding none of these fragments names no secret: most names are decided by one scan. */
const SECRET_FRAGMENTS = /pass|pwd|secret|cred|auth|cookie|mnemonic|privkey|token|sig|jwt|bearer|hmac|csrf|xsrf|sid|session|key|phrase/i;

/** What a name says about the value after it. */
export interface NameInfo {
  strength: SecretStrength;
  /** `Cookie:` and `Authorization:` values have their own shapes in text (assignments.ts). */
  kind: 'plain' | 'cookie' | 'authorization';
  /** A lone `PWD`: an absolute path under it is the working directory (isWorkingDirectory). */
  lonePwd: boolean;
}

function nameInfoOf(name: string): NameInfo | undefined {
  if (!SECRET_FRAGMENTS.test(name)) return undefined;
  const words = nameWords(name);
  const strength = strengthOfWords(words);
  if (strength === undefined) return undefined;
  const last = words[words.length - 1];
  const kind = last === 'cookie' || last === 'cookies' ? 'cookie' : last === 'authorization' ? 'authorization' : 'plain';
  return { strength, kind, lonePwd: words.length === 1 && words[0] === 'pwd' };
}

const nameCache = new Map<string, NameInfo | null>();

/**
 * Whether a name (an object key, a header's name, the name of an assignment) says its value is a
 * secret, how strongly, and in what shape. Decided once per name: workbenches send the same few
 * keys again and again.
 */
export function nameInfo(name: string): NameInfo | undefined {
  if (name.length > 200) return nameInfoOf(name);
  const cached = nameCache.get(name);
  if (cached !== undefined) return cached ?? undefined;
  const info = nameInfoOf(name);
  if (nameCache.size >= 10_000) nameCache.clear();
  nameCache.set(name, info ?? null);
  return info;
}

/** The strength of a name (see nameInfo); undefined when it names no secret. */
export function classifyName(name: string): SecretStrength | undefined {
  return nameInfo(name)?.strength;
}

const ABSOLUTE_PATH = /^(?:\/|~\/|[A-Za-z]:\\)/;

/** A lone `PWD` holding an absolute path is the shell's working directory, not a password. */
export function isWorkingDirectory(name: string, value: string): boolean {
  return nameInfo(name)?.lonePwd === true && ABSOLUTE_PATH.test(value);
}

/** Whether a string under a name of this strength is to be replaced (`always`: any non-blank one). */
export function secretUnder(strength: SecretStrength, value: string): boolean {
  return strength === 'always' ? value.trim().length > 0 : looksRandom(value);
}

/**
 * Fields that make an object a header-like pair: `{name: "X-Api-Key", value: "…"}`,
 * `{key: "DB_PASSWORD", value: "…"}`, `{Name, Value}`. The value fields are judged by the name.
 */
export const PAIR_NAME_FIELDS: ReadonlySet<string> = new Set(['name', 'key', 'header', 'field', 'param', 'parameter', 'variable', 'var']);
export const PAIR_VALUE_FIELDS: ReadonlySet<string> = new Set(['value', 'values', 'val']);
