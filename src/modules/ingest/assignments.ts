import {
  isMarker,
  isPlaceholder,
  looksLikeCredentialWord,
  looksLikeToken,
  marker,
  nameInfo,
  NOT_A_VALUE,
  PAIR_NAME_FIELDS,
  PAIR_VALUE_FIELDS,
  type NameInfo,
  type SecretStrength,
} from './redaction-rules.js';

/**
 * `name = value` and `name: value` in free text (`.env` files, shell commands, YAML, INI, JSON
 * written into a string, HTTP headers, connection strings, XML), found in one pass and judged by
 * the name's words (`classifyName`: `DB_PASS`, `password2`, `x-api-key`, `client_secret`…).
 *
 * Forms: `name=value`, `name = value`, `name: value`, `name := value`, `name => value`,
 * `name == value`, `'name', 'value'` (a quoted name, a comma, a quoted value: `define()`,
 * `setenv()`), any number of spaces or tabs around the sign; the name bare or quoted (`"name"`,
 * `'name'`, `\"name\"` in JSON written into JSON); the value bare, quoted (the same three ways),
 * or an object or array (`"password": {"value": …}`, replaced whole). Also `--flag value`,
 * `<Password>value</Password>`, `curl -u user:password`, and the header forms `Cookie: …` (the whole
 * line of pairs) and `Authorization: [<scheme>] <credential>` (the credential; AUTH_SCHEMES stay).
 *
 * A value is replaced (`[REDACTED:assignment]`, `cookie` or `authorization`) unless it is empty,
 * already a marker, a placeholder (`${VAR}`, `$VAR`, `<your key>`, `{{ x }}`) or a configuration
 * literal (`true`, `none`, `***`), and, after a `:` with a bare value (prose reads "Password:
 * required"), unless it looks like a credential word (`looksLikeCredentialWord`). Under a
 * TOKEN_WORDS name the value must always look like one, and a number never does (`token=expired`,
 * `max_tokens=4096` stay).
 *
 * Linear: each character is read a bounded number of times. A name is classified only when a
 * separator follows it; a bare value is read once and scanning continues after it; a quoted value
 * that is kept is scanned again for names inside it, but values quoted by the same quote at the
 * same escape level never overlap (the scan of one stops at the next such quote), and escape
 * levels above MAX_ESCAPES are not read as quotes; the line of a `Cookie:` value is measured once
 * for every `cookie` name on it.
 */

/** `\\\\\\"`: quotes escaped more deeply than this are not read as quotes. */
const MAX_ESCAPES = 3;

const BACKSLASH = 92;
const NEWLINE = 10;
const RETURN = 13;

function isNameChar(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 48 && code <= 57) || code === 95 || code === 46 || code === 45;
}

const isBlank = (code: number): boolean => code === 32 || code === 9;
const isQuote = (code: number): boolean => code === 34 || code === 39 || code === 96;
const isSpace = (code: number): boolean => code === 32 || code === 9 || code === NEWLINE || code === RETURN || code === 12 || code === 11;
/** Where a bare value ends: white space, quotes, and the punctuation that separates pairs (a comma
 * does not: `API_KEYS=k1,k2` is one list; a trailing comma is left out). */
const BARE_STOPS = new Set([...'"\'`;&<>(){}[]'].map((char) => char.charCodeAt(0)));

/** The quote at `index`, with the backslashes before it: `\"` is one escape, at `"` none. */
interface Quote {
  code: number;
  escapes: number;
  /** Index just after the quote. */
  end: number;
}

function quoteAt(text: string, index: number): Quote | undefined {
  let cursor = index;
  while (cursor < text.length && cursor - index <= MAX_ESCAPES && text.charCodeAt(cursor) === BACKSLASH) cursor++;
  if (cursor >= text.length || cursor - index > MAX_ESCAPES || !isQuote(text.charCodeAt(cursor))) return undefined;
  return { code: text.charCodeAt(cursor), escapes: cursor - index, end: cursor + 1 };
}

/**
 * The end of a quoted value opened by `open` at `from`: the index of the first backslash of the
 * closing quote (the same quote with as many backslashes before it), else the end of the line or
 * of the text. Answers [contentEnd, after].
 */
function closingOf(text: string, from: number, open: Quote): [number, number] {
  let backslashes = 0;
  for (let index = from; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === NEWLINE || code === RETURN) return [index, index];
    if (code === open.code && backslashes === open.escapes) return [index - backslashes, index + 1];
    backslashes = code === BACKSLASH ? backslashes + 1 : 0;
  }
  return [text.length, text.length];
}

/** A `{…}` or `[…]` value: to its balancing bracket (quotes are not read), or to the end of the text. */
function bracketedEnd(text: string, from: number): number {
  let depth = 0;
  for (let index = from; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 123 || code === 91) depth++;
    else if (code === 125 || code === 93) {
      depth--;
      if (depth === 0) return index + 1;
    }
  }
  return text.length;
}

function bareEnd(text: string, from: number): number {
  let index = from;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (isSpace(code) || BARE_STOPS.has(code)) break;
    // `\"`: the end of a value inside JSON written into a string.
    if (code === BACKSLASH && quoteAt(text, index) !== undefined) break;
    index++;
  }
  return index;
}

const ABSOLUTE_PATH = /^(?:\/|~\/|[A-Za-z]:\\)/;
const MARKER_START = '[REDACTED:';
/** HTTP authentication schemes (IANA registry and common vendor ones): the word after `Authorization:` that stays. */
const AUTH_SCHEMES: ReadonlySet<string> = new Set(
  ['basic', 'bearer', 'digest', 'dpop', 'hoba', 'mutual', 'negotiate', 'ntlm', 'oauth', 'scram-sha-1', 'scram-sha-256', 'vapid', 'token', 'apikey', 'api-key', 'key', 'jwt', 'mac', 'hawk', 'sharedkey', 'sharedkeylite', 'ssws', 'splunk', 'aws4-hmac-sha256', 'googlelogin', 'privatetoken', 'gitlab', 'sso-key', 'otoken'],
);
const VARIABLE = /^(?:\$[A-Za-z_][A-Za-z0-9_]{0,100}|%[A-Za-z_][A-Za-z0-9_]{0,100}%)$/;
const NUMBER_LIKE = /^[0-9][0-9.,_]{0,100}$/;

/** Whether `value` after a name of this strength is a secret to replace. */
function isSecretValue(value: string, strength: SecretStrength, proseRisk: boolean): boolean {
  if (value === '' || isMarker(value) || value.startsWith('[REDACTED:')) return false;
  if (NOT_A_VALUE.test(value) || isPlaceholder(value) || VARIABLE.test(value)) return false;
  // `token=expired`, `max_tokens=4096`, `signature=valid`: a token looks like one.
  if (strength === 'random') return !NUMBER_LIKE.test(value) && looksLikeCredentialWord(value, 6);
  // `Password: required` is prose; `password: hunter2` is a credential.
  if (proseRisk) return looksLikeCredentialWord(value, 6);
  return true;
}

type NameKind = 'plain' | 'cookie' | 'authorization' | 'user';

/** The kinds of marker this scanner writes. */
export const ASSIGNMENT_KINDS = ['assignment', 'cookie', 'authorization'] as const;

/** `curl -u user:password`, `--user`, `--proxy-user`: the part after the first `:` is a password. */
const USER_FLAGS: ReadonlySet<string> = new Set(['-u', '-U', '--user', '--proxy-user']);

/**
 * `-p` is a password only for some commands, and only in their own spelling of it: the MySQL and
 * MariaDB clients take it attached (`mysql -pSecret`; `-p secret` prompts, and `secret` is a
 * database), `sshpass` and the registry logins (`docker login -u bob -p secret`) take it as the
 * next word. Elsewhere `-p` is a port, a parent directory or a preserve flag, and stays.
 */
const ATTACHED_PASSWORD_COMMANDS: ReadonlySet<string> = new Set(['mysql', 'mysqldump', 'mysqladmin', 'mysqlimport', 'mysqlshow', 'mysqlcheck', 'mariadb', 'mariadb-dump', 'mariadb-admin', 'mariadb-import', 'mariadb-check']);
const SEPARATE_PASSWORD_COMMANDS: ReadonlySet<string> = new Set(['sshpass']);
/** Commands whose `login` subcommand takes `-p <password>`. */
const LOGIN_COMMANDS: ReadonlySet<string> = new Set(['docker', 'podman', 'nerdctl', 'buildah', 'skopeo', 'helm', 'oras', 'crane', 'cf']);
/** How far back a `-p` looks for the start of its line, and how many words of it it reads. */
const COMMAND_REACH = 160;

/** What the last `-p` learned of its line, so that the next `-p` of the same line reads nothing twice. */
interface CommandMemo {
  /** Where the last `-p` stood (-1: none yet). */
  at: number;
  /** The start of its line, or -1 when that is further back than COMMAND_REACH. */
  lineStart: number;
  /** Its line's verdict. */
  form: 'attached' | 'separate' | undefined;
}

/**
 * The command of the line `at` stands in, as far as `-p` needs it: 'attached', 'separate', or
 * undefined. Reads back to the line's start (at most COMMAND_REACH characters) and its first
 * words (after `sudo`, `env` and `NAME=value` prefixes), once per line: a later `-p` of the same
 * line reads back only to the one before it (`memo`), so a line of a million `-p` costs one scan.
 */
function passwordFlagOf(text: string, at: number, memo: CommandMemo): 'attached' | 'separate' | undefined {
  const reachLimit = Math.max(0, at - COMMAND_REACH);
  const memoLimit = memo.at >= 0 && memo.at < at ? memo.at : -1;
  const limit = Math.max(reachLimit, memoLimit);
  let start = at;
  let found = false;
  while (start > limit) {
    const code = text.charCodeAt(start - 1);
    // The line, or the command of it: a line break, `;`, `|`, `&`, `$(`, or a quote ends it.
    if (code === NEWLINE || code === RETURN || code === 59 || code === 124 || code === 38 || code === 36 || code === 34 || code === 96) {
      found = true;
      break;
    }
    start--;
  }
  if (!found && memoLimit >= 0 && start === memoLimit) {
    // No break since the last `-p`: the same line, already judged.
    memo.at = at;
    return memo.form;
  }
  const lineStart = found || start === 0 ? start : -1;
  memo.at = at;
  memo.lineStart = lineStart;
  memo.form = lineStart < 0 ? undefined : commandForm(text, lineStart, at);
  return memo.form;
}

function commandForm(text: string, start: number, at: number): 'attached' | 'separate' | undefined {
  const words: string[] = [];
  let index = start;
  while (index < at && words.length < 4) {
    while (index < at && isBlank(text.charCodeAt(index))) index++;
    const wordStart = index;
    while (index < at && !isSpace(text.charCodeAt(index))) index++;
    if (index > wordStart) words.push(text.slice(wordStart, index));
  }
  let first = 0;
  while (first < words.length && (words[first] === 'sudo' || words[first] === 'env' || words[first]!.includes('='))) first++;
  const command = words[first]?.split('/').pop();
  if (command === undefined) return undefined;
  if (ATTACHED_PASSWORD_COMMANDS.has(command)) return 'attached';
  if (SEPARATE_PASSWORD_COMMANDS.has(command)) return 'separate';
  if (LOGIN_COMMANDS.has(command) && words.slice(first + 1).includes('login')) return 'separate';
  return undefined;
}

class Rewriter {
  private out = '';
  private copied = 0;
  count = 0;

  constructor(
    private readonly text: string,
    private readonly found: string[],
  ) {}

  replace(start: number, end: number, kind: string, replacement = marker(kind)): void {
    this.out += this.text.slice(this.copied, start) + replacement;
    this.copied = end;
    this.count++;
    this.found.push(kind);
  }

  result(): string {
    return this.count === 0 ? this.text : this.out + this.text.slice(this.copied);
  }
}

/** Replaces the values of secret-named assignments in `text`; the kinds replaced are pushed onto `found`. */
export function redactAssignments(text: string, found: string[]): string {
  const steps = assignmentSteps(text, found, () => false);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** How often a long text's scan offers to yield: every this many characters. */
const SCAN_STEP = 65_536;

/**
 * The same as steps: after about every SCAN_STEP characters it asks `spend` (the caller's meter)
 * whether to yield, so that a megabyte of text does not hold the event loop in one piece.
 */
export function* assignmentSteps(text: string, found: string[], spend: (work: number) => boolean): Generator<void, string, void> {
  let nextOffer = SCAN_STEP;
  const length = text.length;
  const rewriter = new Rewriter(text, found);
  // The secret name a pair's name field just gave, for its value field.
  let pairName: { info: NameInfo; until: number } | undefined;
  // The line a `Cookie:` value runs to, measured once: [start, end, last `=` in it].
  let cookieLine: [number, number, number] = [-1, -1, -1];
  const commandMemo: CommandMemo = { at: -1, lineStart: -1, form: undefined };
  let index = 0;
  while (index < length) {
    if (index >= nextOffer) {
      nextOffer = index + SCAN_STEP;
      if (spend(SCAN_STEP)) yield;
    }
    if (!isNameChar(text.charCodeAt(index))) {
      index++;
      continue;
    }
    const nameStart = index;
    while (index < length && isNameChar(text.charCodeAt(index))) index++;
    const nameEnd = index;

    // `mysql -pSecret`, `sshpass -p secret`, `docker login -p secret`: a word of its own, `-p`
    // first, on a line of a command that takes a password that way.
    if (text.charCodeAt(nameStart) === 45 && text.charCodeAt(nameStart + 1) === 112 && (nameStart === 0 || isSpace(text.charCodeAt(nameStart - 1)))) {
      const attachedValue = nameEnd - nameStart > 2;
      const form = attachedValue || nameEnd === nameStart + 2 ? passwordFlagOf(text, nameStart, commandMemo) : undefined;
      if (form === 'attached' && attachedValue) {
        const end = bareEnd(text, nameStart + 2);
        rewriter.replace(nameStart + 2, end, 'assignment');
        index = end;
        continue;
      }
      if (form === 'separate' && !attachedValue) {
        let valueStart = nameEnd;
        while (valueStart < length && isBlank(text.charCodeAt(valueStart))) valueStart++;
        const open = quoteAt(text, valueStart);
        const [valueEnd, after] = open ? closingOf(text, open.end, open) : [bareEnd(text, valueStart), bareEnd(text, valueStart)];
        const contentStart = open ? open.end : valueStart;
        if (valueEnd > contentStart && !text.startsWith(MARKER_START, contentStart)) {
          rewriter.replace(contentStart, valueEnd, 'assignment');
          index = after;
          continue;
        }
      }
    }

    // What follows the name: a closing quote, blanks, a separator.
    let cursor = nameEnd;
    const nameQuote = quoteAt(text, cursor);
    if (nameQuote) cursor = nameQuote.end;
    const afterQuote = cursor;
    while (cursor < length && isBlank(text.charCodeAt(cursor))) cursor++;
    // `--name value`, and curl's `-u user:password`.
    const dash = text.charCodeAt(nameStart) === 45;
    const flag = dash && (text.charCodeAt(nameStart + 1) === 45 || (nameEnd - nameStart === 2 && (text.charCodeAt(nameStart + 1) | 32) === 117));
    const xml = !nameQuote && nameStart > 0 && text.charCodeAt(nameStart - 1) === 60 && text.charCodeAt(nameEnd) === 62;
    let separator: string;
    let valueStart: number;
    const code = text.charCodeAt(cursor);
    if (xml) {
      separator = '>';
      valueStart = nameEnd + 1;
    } else if (code === 61) {
      let end = cursor + 1;
      if (text.charCodeAt(end) === 62) end++;
      else while (end < length && end - cursor < 3 && text.charCodeAt(end) === 61) end++;
      separator = '=';
      valueStart = end;
    } else if (code === 58 && text.charCodeAt(cursor + 1) !== 58) {
      separator = text.charCodeAt(cursor + 1) === 61 ? ':=' : ':';
      valueStart = cursor + separator.length;
    } else if (flag && cursor > afterQuote && cursor < length && !isSpace(code)) {
      separator = ' ';
      valueStart = cursor;
    } else if (code === 44 && nameQuote && quotedAfterComma(text, cursor + 1)) {
      // `define('DB_PASSWORD', 'x')`, `setenv("TOKEN", "x")`: a quoted name, a comma, a quoted value.
      separator = ',';
      valueStart = cursor + 1;
    } else {
      index = Math.max(cursor, nameEnd);
      continue;
    }

    const name = text.slice(nameStart, nameEnd);
    const user = flag && USER_FLAGS.has(name);
    const field = name.length <= 10 ? name.toLowerCase() : '';
    let info = user ? undefined : nameInfo(name);
    // A pair written out (`name: DB_PASSWORD` then `value: …`, YAML env lists, header arrays):
    // the value field takes the name of the name field just before it.
    if (info === undefined && pairName !== undefined && nameStart <= pairName.until && PAIR_VALUE_FIELDS.has(field)) info = pairName.info;
    if (!user && info === undefined) {
      if (PAIR_NAME_FIELDS.has(field)) pairName = namedBy(text, valueStart);
      index = valueStart;
      continue;
    }
    pairName = undefined;
    if (!xml) while (valueStart < length && isBlank(text.charCodeAt(valueStart))) valueStart++;
    if (valueStart >= length) {
      index = valueStart;
      continue;
    }
    const kind: NameKind = user ? 'user' : info!.kind;
    const strength: SecretStrength = user ? 'always' : info!.strength;
    const assignment: Assignment = { strength, kind, lonePwd: info?.lonePwd === true, separator, valueStart, nameQuote, lastCookieLine: cookieLine, cookieLine: undefined };
    index = judgeValue(text, rewriter, assignment);
    if (assignment.cookieLine) cookieLine = assignment.cookieLine;
  }
  return rewriter.result();
}

interface Assignment {
  strength: SecretStrength;
  kind: NameKind;
  lonePwd: boolean;
  separator: string;
  valueStart: number;
  nameQuote: Quote | undefined;
  lastCookieLine: [number, number, number];
  /** Set when the value measured a new `Cookie:` line. */
  cookieLine: [number, number, number] | undefined;
}

/** Whether blanks and then a quote follow `from` (a quoted value after a comma). */
function quotedAfterComma(text: string, from: number): boolean {
  let cursor = from;
  while (cursor < text.length && cursor - from < 16 && isBlank(text.charCodeAt(cursor))) cursor++;
  return quoteAt(text, cursor) !== undefined;
}

/** How far after a pair's name its value field may come (`name: X` / `value: …` on the next lines). */
const PAIR_REACH = 200;

/** The secret name a name field holds (`name: "X-Api-Key"`), read as one run of name characters. */
function namedBy(text: string, from: number): { info: NameInfo; until: number } | undefined {
  let start = from;
  while (start < text.length && isBlank(text.charCodeAt(start))) start++;
  const quote = quoteAt(text, start);
  if (quote) start = quote.end;
  let end = start;
  while (end < text.length && end - start <= MAX_PAIR_NAME && isNameChar(text.charCodeAt(end))) end++;
  if (end === start || end - start > MAX_PAIR_NAME) return undefined;
  const info = nameInfo(text.slice(start, end));
  return info ? { info, until: end + PAIR_REACH } : undefined;
}

const MAX_PAIR_NAME = 100;

/** Judges and maybe replaces the value of one assignment; answers where scanning goes on. */
function judgeValue(text: string, rewriter: Rewriter, a: Assignment): number {
  const start = a.valueStart;
  // Already replaced by a text rule: nothing more to do here.
  if (text.startsWith(MARKER_START, start)) return start + MARKER_START.length;
  const open = a.separator === '>' ? undefined : quoteAt(text, start);
  const assignmentKind = a.kind === 'cookie' ? 'cookie' : a.kind === 'authorization' ? 'authorization' : 'assignment';

  if (a.kind === 'authorization' && (a.separator === ':' || a.separator === '=')) {
    // `<scheme> <credential>`: the scheme stays; a credential alone is taken as it is.
    let cursor = open ? open.end : start;
    const wordStart = cursor;
    while (cursor < text.length && (isNameChar(text.charCodeAt(cursor)) || text.charCodeAt(cursor) === 43)) cursor++;
    let credentialStart = wordStart;
    if (cursor > wordStart && isBlank(text.charCodeAt(cursor)) && AUTH_SCHEMES.has(text.slice(wordStart, cursor).toLowerCase())) {
      let after = cursor;
      while (after < text.length && isBlank(text.charCodeAt(after))) after++;
      if (after < text.length && !isSpace(text.charCodeAt(after)) && !isQuote(text.charCodeAt(after))) credentialStart = after;
    }
    let credentialEnd = credentialStart;
    while (credentialEnd < text.length) {
      const code = text.charCodeAt(credentialEnd);
      if (isSpace(code) || isQuote(code) || (code === BACKSLASH && quoteAt(text, credentialEnd))) break;
      credentialEnd++;
    }
    const credential = text.slice(credentialStart, credentialEnd);
    if (credential !== '' && !isMarker(credential) && !credential.startsWith('[REDACTED:') && !isPlaceholder(credential) && looksLikeToken(credential)) {
      rewriter.replace(credentialStart, credentialEnd, 'authorization');
    }
    return Math.max(credentialEnd, start + 1);
  }

  if (a.kind === 'cookie' && !open && a.separator === ':') {
    // The whole line (to a quote or a line break) is the cookie list; it holds pairs.
    let [lineStart, lineEnd, lastEquals] = a.lastCookieLine;
    if (!(start >= lineStart && start < lineEnd)) {
      lineStart = start;
      lineEnd = start;
      lastEquals = -1;
      while (lineEnd < text.length) {
        const code = text.charCodeAt(lineEnd);
        if (code === NEWLINE || code === RETURN || isQuote(code) || (code === BACKSLASH && quoteAt(text, lineEnd))) break;
        if (code === 61) lastEquals = lineEnd;
        lineEnd++;
      }
      a.cookieLine = [lineStart, lineEnd, lastEquals];
    }
    let end = lineEnd;
    while (end > start && isBlank(text.charCodeAt(end - 1))) end--;
    if (lastEquals >= start && end - start >= 3) {
      rewriter.replace(start, end, 'cookie');
      return lineEnd;
    }
    // No pairs: judged as any other value below.
  }

  if (open) {
    const [contentEnd, after] = closingOf(text, open.end, open);
    const value = text.slice(open.end, contentEnd);
    if (a.kind === 'user') return userValue(text, rewriter, open.end, contentEnd) ? after : open.end;
    if (isSecretValue(value, a.strength, false)) {
      rewriter.replace(open.end, contentEnd, assignmentKind);
      return after;
    }
    // Kept: names inside it are read too (`"note": "password=x"`).
    return open.end;
  }

  const first = text.charCodeAt(start);
  if ((first === 123 || first === 91) && a.separator !== '>') {
    if (a.strength !== 'always') return start;
    // `"password": {"value": …}`: everything beneath the name goes; quoted like the name, so JSON stays JSON.
    const end = bracketedEnd(text, start);
    const quote = a.nameQuote ? `${'\\'.repeat(a.nameQuote.escapes)}${String.fromCharCode(a.nameQuote.code)}` : '';
    rewriter.replace(start, end, assignmentKind, `${quote}${marker(assignmentKind)}${quote}`);
    return end;
  }

  if (a.separator === '>') {
    // `<Password>value</Password>`: to the next tag.
    let end = start;
    while (end < text.length && text.charCodeAt(end) !== 60 && text.charCodeAt(end) !== NEWLINE) end++;
    const value = text.slice(start, end).trim();
    if (isSecretValue(value, a.strength, false)) {
      rewriter.replace(start, end, assignmentKind);
      return end;
    }
    return start;
  }

  // `${VAR}`: a template, not a value.
  if (text.charCodeAt(start) === 36 && text.charCodeAt(start + 1) === 123) return start + 2;
  const scanned = bareEnd(text, start);
  let end = scanned;
  while (end > start && text.charCodeAt(end - 1) === 44) end--;
  // Scanning goes on after everything read, kept or not: a bare value is read once.
  const next = Math.max(scanned, start + 1);
  if (a.kind === 'user') {
    userValue(text, rewriter, start, end);
    return next;
  }
  const value = text.slice(start, end);
  if (a.lonePwd && ABSOLUTE_PATH.test(value)) return next;
  if (isSecretValue(value, a.strength, a.separator === ':' || a.separator === ':=' ? !a.nameQuote : false)) rewriter.replace(start, end, assignmentKind);
  return next;
}

/** `user:password` after `-u`: the password goes, the user stays. */
function userValue(text: string, rewriter: Rewriter, start: number, end: number): boolean {
  const colon = text.slice(start, end).indexOf(':') + start;
  if (colon < start || colon >= end - 1) return false;
  const password = text.slice(colon + 1, end);
  if (!isSecretValue(password, 'always', false)) return false;
  rewriter.replace(colon + 1, end, 'assignment');
  return true;
}
