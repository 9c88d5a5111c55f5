/**
 * Memory reads (spec 4.7: "a memory read is audited by label, never by content").
 *
 * When a workbench uploads an audit record whose action reads an agent's memory or knowledge,
 * the service keeps its label and identifiers and drops its content (`details`, `target`): what
 * was recalled, searched for or exported must not end up in the organisation's audit store. This
 * file is the one rule that decides which actions those are; ingest applies it
 * (src/modules/ingest/redaction.ts) with the settings of the effective policy of the envelope's
 * organisation and project (`audit.memoryReads`).
 *
 * An action is first read as words: split at `.`, `_`, `-`, `:`, `/`, spaces and case changes,
 * and lower-cased, so `memory.read`, `memory_read`, `Memory-Read` and `memoryRead` are the same
 * action (`memory.read`). Words are compared in their plain form: plurals and tenses are reduced
 * (`memories` is `memory`, `queried` is `query`, `searching` is `search`).
 *
 * 1. An action matching one of the policy's `exclude` patterns is not a memory read.
 * 2. An action matching one of the policy's `include` patterns is one.
 * 3. Otherwise it is a memory read when it names a memory store (STORES, or a word of the policy's
 *    `stores`), a read verb (READ_VERBS), and no write verb (WRITE_VERBS), in any order:
 *    `memory.read`, `read_memory`, `memory.semantic_search`, `knowledge.query`, `kb.search`,
 *    `export.memories`, `vector.lookup`, `memories.vector.search`, `memory.read.failed` (a failed
 *    read may still carry the query). `memory.write`, `memory.delete`, `file.read` (no store) and
 *    `memory.write.read_only` (a write verb) are not.
 *
 * A pattern is written like an action (case and separators do not matter) and `*` stands for any
 * run of characters, across words too: `kb.*` is every action of `kb`, `*.recall` every recall
 * after some other word, `*recall*` every action with `recall` in it, `assistant.context.get`
 * exactly that action. Erring towards "read" only drops content,
 * never keeps it; `exclude` is there to keep the content of an action these words misjudge.
 */

/** What an organisation's policy adds (`audit.memoryReads`); every list may be empty. */
export interface MemoryReadSettings {
  /** Extra words naming memory-like stores, e.g. `journal`: their reads count too. */
  stores?: readonly string[];
  /** Action patterns that are always memory reads. */
  include?: readonly string[];
  /** Action patterns that are never memory reads (checked first). */
  exclude?: readonly string[];
}

export type MemoryReadRule = (action: string) => boolean;

/** Stores whose content is an agent's memory or knowledge. */
export const STORES: ReadonlySet<string> = new Set([
  'memory',
  'mem',
  'knowledge',
  'knowledgebase',
  'kb',
  'vector',
  'vectorstore',
  'vectordb',
  'embedding',
  'rag',
  'semantic',
]);

/** Verbs that read, search or take content out of a store. */
export const READ_VERBS: ReadonlySet<string> = new Set([
  'read',
  'get',
  'search',
  'query',
  'list',
  'recall',
  'retrieve',
  'fetch',
  'lookup',
  'find',
  'load',
  'view',
  'show',
  'browse',
  'peek',
  'export',
  'dump',
  'download',
  'match',
  'similar',
  'nearest',
  'knn',
]);

/**
 * Verbs that change a store. An action that holds one is a write whatever else it says. Words
 * that are also nouns of stores (`store`, `index`) are left out: `vector_store.query` reads.
 */
export const WRITE_VERBS: ReadonlySet<string> = new Set([
  'write',
  'delete',
  'update',
  'save',
  'create',
  'remove',
  'put',
  'set',
  'insert',
  'upsert',
  'add',
  'append',
  'edit',
  'patch',
  'modify',
  'replace',
  'overwrite',
  'forget',
  'clear',
  'erase',
  'purge',
  'reset',
  'drop',
  'import',
  'upload',
  'ingest',
]);

/** The words of an action (or a pattern): case changes and separators split, lower-cased. */
export function actionWords(action: string): string[] {
  return action
    .trim()
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[\s._:/-]+/)
    .filter((word) => word !== '');
}

/** A word and its plain forms: `memories` → `memory`, `queried` → `query`, `searching` → `search`. */
function forms(word: string): string[] {
  const out = [word];
  if (word.endsWith('ies')) out.push(`${word.slice(0, -3)}y`);
  if (word.endsWith('ied')) out.push(`${word.slice(0, -3)}y`);
  if (word.endsWith('es')) out.push(word.slice(0, -2));
  if (word.endsWith('s')) out.push(word.slice(0, -1));
  if (word.endsWith('ed')) out.push(word.slice(0, -2), word.slice(0, -1));
  if (word.endsWith('ing')) out.push(word.slice(0, -3), `${word.slice(0, -3)}e`);
  return out;
}

const inSet = (set: ReadonlySet<string>, extra: ReadonlySet<string>) => (word: string) => forms(word).some((form) => set.has(form) || extra.has(form));

/** `*` matches any run of characters; linear in practice, O(action × pattern) at worst, never exponential. */
function globMatches(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern[p] !== '*' && pattern[p] === text[t]) {
      p += 1;
      t += 1;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p;
      resume = t;
      p += 1;
    } else if (star >= 0) {
      p = star + 1;
      resume += 1;
      t = resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p += 1;
  return p === pattern.length;
}

/** A pattern in the normal form of actions: words joined by dots, `*` kept where it stands. */
function normalisePattern(pattern: string): string {
  return actionWords(pattern).join('.');
}

/** The rule with an organisation's settings applied (none: the built-in rule). */
export function memoryReadRule(settings: MemoryReadSettings = {}): MemoryReadRule {
  const include = (settings.include ?? []).map(normalisePattern);
  const exclude = (settings.exclude ?? []).map(normalisePattern);
  const isStore = inSet(STORES, new Set((settings.stores ?? []).flatMap(actionWords)));
  const isRead = inSet(READ_VERBS, new Set());
  const isWrite = inSet(WRITE_VERBS, new Set());
  return (action: string): boolean => {
    if (typeof action !== 'string') return false;
    const words = actionWords(action);
    if (words.length === 0) return false;
    const normal = words.join('.');
    if (exclude.some((pattern) => globMatches(pattern, normal))) return false;
    if (include.some((pattern) => globMatches(pattern, normal))) return true;
    return words.some(isStore) && words.some(isRead) && !words.some(isWrite);
  };
}

/** The built-in rule, for an organisation whose policy adds nothing. */
export const isMemoryRead: MemoryReadRule = memoryReadRule();

const compiled = new WeakMap<object, MemoryReadRule>();

/**
 * The rule of a policy's `audit.memoryReads`, compiled once per settings object: the policy
 * service keeps one effective document per revision, so a busy ingest compiles nothing.
 */
export function memoryReadRuleFor(settings: MemoryReadSettings | undefined): MemoryReadRule {
  if (settings === undefined) return isMemoryRead;
  let rule = compiled.get(settings);
  if (!rule) {
    rule = memoryReadRule(settings);
    compiled.set(settings, rule);
  }
  return rule;
}
