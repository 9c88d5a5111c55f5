import fc from 'fast-check';
import { KEY_OWNER_WORDS, QUALIFIER_WORDS, SECRET_WORDS, TOKEN_WORDS } from '../../src/modules/ingest/redaction-rules.js';

/**
 * Generated leaks for the redaction tests: fake credentials (made at run time from a seed, so the
 * repository holds nothing a secret scanner would flag), secret names spelt every way a workbench
 * writes them, shapes that hide a value under a name, and benign noise that must come through
 * unchanged. The names come from the rules' own word lists (redaction-rules.ts).
 */

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;

/** mulberry32: a small seeded generator, so a fast-check seed makes a random-looking value. */
export function seeded(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function sample(random: () => number, alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i += 1) out += alphabet[Math.floor(random() * alphabet.length)];
  return out;
}

/** A generated secret: letters of both cases and digits, 20 to 40 characters (it looks generated). */
export const secretValue = fc.integer().map((seed) => {
  const random = seeded(seed);
  return `${sample(random, UPPER, 1)}${sample(random, LOWER, 1)}${sample(random, DIGITS, 1)}${sample(random, ALNUM, 17 + Math.floor(random() * 21))}`;
});

/** Tokens recognised by their shape wherever they stand (values and object keys). */
export const shapedToken = fc.tuple(fc.integer(), fc.constantFrom('github', 'gitlab', 'anthropic', 'slack', 'aws', 'platform', 'stripe', 'huggingface')).map(([seed, kind]) => {
  const random = seeded(seed);
  const mix = (n: number) => `aB3${sample(random, ALNUM, n - 3)}`;
  switch (kind) {
    case 'github':
      return `ghp_${mix(36)}`;
    case 'gitlab':
      return `glpat-${mix(20)}`;
    case 'anthropic':
      return `sk-ant-api03-${mix(60)}`;
    case 'slack':
      return `xoxb-${sample(random, DIGITS, 12)}-${sample(random, DIGITS, 13)}-${mix(24)}`;
    case 'aws':
      return `AKIA${sample(random, UPPER + DIGITS, 16)}`;
    case 'platform':
      return `platform_at_${mix(43)}`;
    case 'stripe':
      return `sk_live_${mix(24)}`;
    default:
      return `hf_${mix(34)}`;
  }
});

/** Words that may end a glued name (`dbpassword`); `pass`, `pwd`, `sig`… stand alone only. */
const ALONE_ONLY = new Set(['pass', 'pwd', 'creds', 'sig', 'sid', 'jwt', 'hmac', 'csrf', 'xsrf', 'bearer']);

/** A secret name as words, and whether it may be glued into one lower-case word. */
export interface SecretName {
  words: string[];
  gluable: boolean;
}

/** Every name the word lists define: each word, each `<owner> key`, with prefixes, plurals, digits and qualifiers. */
export const secretName: fc.Arbitrary<SecretName> = fc
  .tuple(
    fc.oneof(
      fc.constantFrom(...SECRET_WORDS, ...TOKEN_WORDS).map((word) => ({ words: [word], gluable: !ALONE_ONLY.has(word) })),
      fc.constantFrom(...KEY_OWNER_WORDS).map((owner) => ({ words: [owner, 'key'], gluable: true })),
      fc.constantFrom('secret', 'private').map((owner) => ({ words: [owner, 'key'], gluable: true })),
      fc.constant({ words: ['session', 'id'], gluable: true }),
    ),
    fc.option(fc.constantFrom('db', 'x', 'client', 'aws', 'mysql', 'app', 'my', 'github', 'service', 'default', 'new'), { nil: undefined }),
    fc.boolean(),
    fc.option(fc.constantFrom(...QUALIFIER_WORDS), { nil: undefined }),
    fc.option(fc.integer({ min: 0, max: 99 }), { nil: undefined }),
  )
  .map(([name, prefix, plural, qualifier, digits]) => {
    const words = [...name.words];
    // Plurals are read in the singular; a word ending in `s` (`pass`, `creds`) and `id` have none here.
    const last = words[words.length - 1]!;
    if (plural && qualifier === undefined && !last.endsWith('s') && last !== 'id') words[words.length - 1] = `${last}s`;
    if (prefix) words.unshift(prefix);
    if (qualifier) words.push(qualifier);
    const spelt = { words, gluable: name.gluable && qualifier === undefined && prefix !== undefined };
    return digits === undefined ? spelt : { words: [...words, String(digits)], gluable: false };
  });

const capital = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/** The spelling styles of names: case, separators, and (for words that may end one) glued lower case. */
export const SPELLINGS: readonly ((words: string[]) => string)[] = [
  (words) => words.join('_'),
  (words) => words.join('_').toUpperCase(),
  (words) => words.join('-'),
  (words) => words.map(capital).join('-'),
  (words) => words.join('.'),
  (words) => words[0]! + words.slice(1).map(capital).join(''),
  (words) => words.map(capital).join(''),
  (words) => words.join('-').toUpperCase(),
];

/** A name spelt one of the ways: glued only when the rules allow it. */
export const spelledName = fc.tuple(secretName, fc.nat({ max: SPELLINGS.length })).map(([name, style]) =>
  style === SPELLINGS.length ? (name.gluable ? name.words.join('') : name.words.join('_')) : SPELLINGS[style]!(name.words),
);

/** Keys, values and sentences that say nothing secret; every one must survive unchanged. */
export const BENIGN_KEYS = [
  'model',
  'tool',
  'cwd',
  'status',
  'title',
  'path',
  'tags',
  'token_count',
  'tokenizer',
  'passport',
  'secretary',
  'author',
  'keyboard',
  'compass',
  'bypass',
  'secretName',
  'password_policy',
  'sort_key',
  'keyId',
  'monkey',
  'description',
  'exitCode',
  'url',
] as const;

export const BENIGN_STRINGS = [
  'Forgot your password? Reset it from the console.',
  'The token expired; ask for a new token.',
  'Bearer authentication is described in RFC 6750.',
  'Password: required',
  'the secret: sauce',
  'passwords must have 12 characters',
  'ls -la /home/user/project',
  'https://docs.example.com/guide/setup?lang=en#passwords',
  '550e8400-e29b-41d4-a716-446655440000',
  '9fceb02d0ae598e95dc970b74767f19372d61af8',
  'claude-sonnet',
  'src/modules/ingest/redaction.ts',
  'max_tokens=4096 token_count=12',
  'token=true and secret=null and api_key=none',
  'password=${DB_PASSWORD} api_key=<your key>',
  'Authorization: required for every call',
  'cookie: a small file a site stores',
  'git@github.com:o/r.git',
  '{"model": "claude", "max_tokens": 1024, "token_type": "Bearer"}',
  'tokens: 1234 in, 567 out',
  'done',
  '',
] as const;

const benignLeaf: fc.Arbitrary<unknown> = fc.oneof(fc.constantFrom(...BENIGN_STRINGS), fc.integer(), fc.boolean(), fc.constant(null), fc.constantFrom(0.5, 1234.5678, 1e-7));

/** Benign JSON: containers of benign keys and leaves, a few levels deep. */
export const benignValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, benignLeaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(fc.constantFrom(...BENIGN_KEYS), tie('value'), { maxKeys: 4 }),
})).value;

/** A secret hidden one way: the value to place, the secrets it holds. */
export interface Hidden {
  value: unknown;
  secrets: string[];
  shape: string;
}

const pairName = fc.constantFrom('name', 'Name', 'key', 'Key', 'header', 'NAME');
const pairValue = fc.constantFrom('value', 'Value', 'val', 'values');

/** A generated secret under a generated name, in one of the shapes the rules promise to read. */
export const hidden: fc.Arbitrary<Hidden> = fc
  .tuple(spelledName, secretValue, shapedToken, fc.nat({ max: 19 }), pairName, pairValue, fc.constantFrom(...BENIGN_KEYS))
  .map(([name, secret, token, shape, nameField, valueField, benignKey]) => {
    const flag = `--${trimDashes(name.replace(/[^A-Za-z0-9]+/g, '-'))}`;
    const shapes: [string, unknown, string[]][] = [
      ['key', { [name]: secret }, [secret]],
      ['nested object under the key', { [name]: { [benignKey]: secret } }, [secret]],
      ['array under the key', { [name]: ['x', secret] }, [secret]],
      ['deeper under the key', { [name]: [{ [benignKey]: { current: [secret] } }] }, [secret]],
      ['header-like object', [{ [nameField]: name, [valueField]: secret }], [secret]],
      ['pair', [[name, secret]], [secret]],
      ['raw header list', ['Content-Type', 'application/json', name, secret], [secret]],
      ['name=value', `export ${name}=${secret}`, [secret]],
      ['name = value, spaces', `${name}     =     ${secret}`, [secret]],
      ['name: value, spaces', `${name}:     ${secret}`, [secret]],
      ['quoted', `config {"${name}": "${secret}"} loaded`, [secret]],
      ['single-quoted', `conf = {'${name}' => '${secret}'}`, [secret]],
      ['JSON string', JSON.stringify({ [benignKey]: { [name]: secret } }), [secret]],
      ['escaped JSON in text', `body=${JSON.stringify(JSON.stringify({ [name]: secret }))} sent`, [secret]],
      ['flag', `tool run ${flag} ${secret} --verbose`, [secret]],
      ['xml', `<config><${name}>${secret}</${name}></config>`, [secret]],
      ['token as a key', { [token]: { [benignKey]: 'done' } }, [token]],
      ['token in text', `the value was ${token}.`, [token]],
      ['token in a key and in JSON', JSON.stringify({ [token]: 1 }), [token]],
      ['token under a benign key', { [benignKey]: token }, [token]],
    ];
    const [label, value, secrets] = shapes[shape]!;
    return { value, secrets, shape: label };
  });

/** Wraps a value in benign containers, `depth` levels. */
export function wrap(value: unknown, path: readonly ('object' | 'array')[], key: string): unknown {
  let wrapped = value;
  for (const kind of path) wrapped = kind === 'object' ? { [key]: wrapped } : [wrapped];
  return wrapped;
}

/** Event data: benign noise, and each hidden secret at its own random depth under its own key. */
export const leakyData = fc
  .tuple(
    fc.dictionary(fc.constantFrom(...BENIGN_KEYS), benignValue, { maxKeys: 5 }),
    fc.array(fc.tuple(hidden, fc.array(fc.constantFrom<'object' | 'array'>('object', 'array'), { maxLength: 8 }), fc.constantFrom('context', 'step', 'result', 'args')), { minLength: 1, maxLength: 3 }),
  )
  .map(([noise, placements]) => {
    const data: Record<string, unknown> = { ...noise };
    placements.forEach(([item, path, key], index) => {
      data[`hidden${index}`] = wrap(item.value, path, key);
    });
    return { data, noise, secrets: placements.flatMap(([item]) => item.secrets), shapes: placements.map(([item]) => item.shape) };
  });

/** A window of lower-case letters, `_` and `-` only: a public prefix (`platform`, `sk-ant-a`), not secret material. */
const PREFIX_LIKE = /^[a-z_-]+$/;

/** Windows of a secret that must not survive either: any 8 characters of it in a row (public prefixes aside). */
export function fragments(secret: string, size = 8): string[] {
  const out: string[] = [];
  for (let i = 0; i + size <= secret.length; i += 1) {
    const piece = secret.slice(i, i + size);
    if (!PREFIX_LIKE.test(piece)) out.push(piece);
  }
  return out;
}

/** The first secret (or 8-character piece of one) found in `text`, if any. */
export function leakIn(text: string, secrets: readonly string[]): string | undefined {
  for (const secret of secrets) for (const piece of [secret, ...fragments(secret)]) if (text.includes(piece)) return piece;
  return undefined;
}

/** `text` without the dashes at either end. */
function trimDashes(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text[start] === '-') start++;
  while (end > start && text[end - 1] === '-') end--;
  return text.slice(start, end);
}
