import { describe, expect, it } from '@jest/globals';
import {
  classifyName,
  KEY_OWNER_WORDS,
  nameWords,
  QUALIFIER_WORDS,
  SECRET_WORDS,
  TOKEN_WORDS,
  type SecretStrength,
} from '../../src/modules/ingest/redaction-rules.js';
import { redact } from '../../src/modules/ingest/redaction.js';
import { SPELLINGS } from '../support/leaks.js';

/**
 * The secret names of redaction-rules.ts, word by word: every word of SECRET_WORDS, TOKEN_WORDS
 * and KEY_OWNER_WORDS in every spelling style, with prefixes, plurals, digits and qualifiers; and
 * the names that only look like them.
 */

const ALONE_ONLY = new Set(['pass', 'pwd', 'creds', 'sig', 'sid', 'jwt', 'hmac', 'csrf', 'xsrf', 'bearer']);

const NAMES: [string[], SecretStrength][] = [
  ...SECRET_WORDS.map((word): [string[], SecretStrength] => [[word], 'always']),
  ...TOKEN_WORDS.map((word): [string[], SecretStrength] => [[word], 'random']),
  ...KEY_OWNER_WORDS.map((owner): [string[], SecretStrength] => [[owner, 'key'], 'random']),
  [['secret', 'key'], 'always'],
  [['private', 'key'], 'always'],
  [['aws', 'secret', 'access', 'key'], 'always'],
  [['session', 'id'], 'random'],
  [['pass', 'phrase'], 'always'],
  [['seed', 'phrase'], 'always'],
];

describe('the word lists, in every spelling', () => {
  it.each(NAMES.map(([words, strength]) => [words.join(' '), words, strength] as const))('%s', (_name, words, strength) => {
    for (const spell of SPELLINGS) {
      for (const variant of [words, ['db', ...words], ['x', ...words], [...words, '2'], [...words, 'value'], ['new', ...words, 'hash']]) {
        const name = spell(variant);
        expect([name, classifyName(name)]).toEqual([name, strength]);
      }
    }
    // Plural (read in the singular), unless the word has none here.
    const last = words[words.length - 1]!;
    if (!last.endsWith('s') && last !== 'id') expect(classifyName([...words.slice(0, -1), `${last}s`].join('_'))).toBe(strength);
    // Glued into one lower-case word after a prefix, for the words that may end one.
    const glued = `db${words.join('')}`;
    if (ALONE_ONLY.has(words.join(''))) expect(classifyName(glued)).toBeUndefined();
    else expect(classifyName(glued)).toBe(strength);
  });

  it('sets qualifiers aside, and only at the end', () => {
    for (const qualifier of QUALIFIER_WORDS) expect([qualifier, classifyName(`password_${qualifier}`)]).toEqual([qualifier, 'always']);
    expect(classifyName('hash_password')).toBe('always');
    expect(classifyName('value')).toBeUndefined();
    expect(classifyName('password_value_2')).toBe('always');
  });

  it('reads the names the issue lists', () => {
    for (const name of ['DB_PASS', 'password2', 'secrets', 'apiKeys', 'x-api-key', 'X-Api-Key', 'client_secret', 'AWS_SECRET_ACCESS_KEY', 'MYSQL_PWD', 'Set-Cookie', 'Proxy-Authorization']) {
      expect([name, classifyName(name)]).not.toEqual([name, undefined]);
    }
  });

  it.each([
    'passport',
    'secretary',
    'secretion',
    'compass',
    'bypass',
    'overpass',
    'author',
    'authority',
    'keyboard',
    'monkey',
    'turkey',
    'key',
    'keys',
    'keyId',
    'sort_key',
    'primary_key',
    'cache-key',
    'private_key_id',
    'secretName',
    'secret_ref',
    'password_policy',
    'passwordHint',
    'token_count',
    'tokenCount',
    'tokenizer',
    'token_type',
    'signatureAlgorithm',
    'session',
    'sessionStart',
    'id',
    'user_id',
    'name',
    'value',
    '',
    '---',
  ])('%s names no secret', (name) => {
    expect(classifyName(name)).toBeUndefined();
  });

  it('splits names into words by case, separators and digits', () => {
    expect(nameWords('APIKey')).toEqual(['api', 'key']);
    expect(nameWords('OAuth2Token')).toEqual(['o', 'auth', 'token']);
    expect(nameWords('db.password_2-value')).toEqual(['db', 'password', 'value']);
    expect(nameWords('ÜBER_SECRET')).toEqual(['ber', 'secret']);
  });

  it('redacts under every name the way its strength says', () => {
    expect(redact({ DB_PASS: 'hunter2', apiKeys: 'short', 'x-api-key': 'a8Fk2LmQ9zX7pR4t', passport: 'P1234567' }).value).toEqual({
      DB_PASS: '[REDACTED:secret_value]',
      apiKeys: 'short',
      'x-api-key': '[REDACTED:secret_value]',
      passport: 'P1234567',
    });
  });
});
