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
 * An action is first read as words (`actionWords`): split at every character that is not a
 * letter or a digit (`.`, `_`, `-`, `:`, `/`, spaces…) and at case changes (`lookUp`, `KBSearch`,
 * `Mem0Search`), lower-cased; so `memory.read`, `memory_read`, `Memory-Read`, `MEMORY_READ`,
 * `memory/read` and `memoryRead` are the same action (`memory.read`). Then:
 * - two words that spell one (`look up`, `knowledge base`, `vector store`, `read only`) are
 *   joined, and a word glued from known words (`searchmemories`, `kbsearch`, `lookupmemory`) is
 *   split into them;
 * - words are compared in their plain form: plurals, tenses and the nouns of the verbs are reduced
 *   (`memories` is `memory`, `queried` is `query`, `searching` is `search`, `retrieval` is
 *   `retrieve`, `lookups` is `lookup`, `found` is `find`).
 *
 * 1. An action matching one of the policy's `exclude` patterns is not a memory read.
 * 2. An action matching one of the policy's `include` patterns is one.
 * 3. Otherwise it is a memory read when it says `recall` (MEMORY_VERBS: recalling is reading
 *    memory, whatever else the action names), or names a memory store (STORES, a provider of
 *    PROVIDERS, or a word of the policy's `stores`) and a read verb (READ_VERBS), in any order and with any
 *    other words: `memory.read`, `read_memory`, `memory.lookUp`, `memory.retrieval`,
 *    `mem0.search`, `zep.memory.get`, `letta.archival_memory_search`, `kb.search`,
 *    `export.memories`, `memory.read.failed` (a failed read may still carry the query). An action
 *    that reads and writes (`memory.get_or_create`, `search_and_update`) is a read: its answer
 *    carries what it found. `read only` / `readonly` is a description, not a verb:
 *    `memory.write.read_only` is not a read, nor are `memory.write`, `memory.delete`, `file.read`
 *    (no store) or `web.search`.
 *
 * A pattern is written like an action (case and separators do not matter) and `*` stands for any
 * run of characters, across words too: `kb.*` is every action of `kb`, `*.recall` every recall
 * after some other word, `*recall*` every action with `recall` in it, `assistant.context.get`
 * exactly that action. Erring towards "read" only drops content, never keeps it; `exclude` is
 * there to keep the content of an action these words misjudge.
 *
 * No regular expression reads an action: words are split by one pass over its characters, so the
 * work is linear in its length (the glued-word split is bounded by MAX_GLUED).
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
  'episodic',
  'archival',
  'retriever',
]);

/**
 * Memory and knowledge providers whose name alone says "memory store" (`mem0.search`,
 * `zep.graph.search`, `letta.passages.list`), and vector databases, whose reads are retrievals
 * of an agent's knowledge.
 */
export const PROVIDERS: ReadonlySet<string> = new Set([
  'mem0',
  'zep',
  'letta',
  'langmem',
  'memgpt',
  'cognee',
  'supermemory',
  'graphiti',
  'motorhead',
  'memobase',
  'memary',
  'chroma',
  'chromadb',
  'pinecone',
  'weaviate',
  'qdrant',
  'milvus',
  'pgvector',
  'lancedb',
  'faiss',
]);

/** Verbs that look up, search, recall, retrieve, list, export or dump: read content out of a store. */
export const READ_VERBS: ReadonlySet<string> = new Set([
  'read',
  'get',
  'search',
  'query',
  'list',
  'recall',
  'recollect',
  'retrieve',
  'fetch',
  'lookup',
  'find',
  'load',
  'view',
  'show',
  'browse',
  'peek',
  'inspect',
  'scan',
  'scroll',
  'select',
  'grep',
  'explore',
  'enumerate',
  'access',
  'open',
  'pull',
  'ask',
  'summarize',
  'summarise',
  'export',
  'dump',
  'download',
  'extract',
  'print',
  'display',
  'preview',
  'history',
  'match',
  'similar',
  'similarity',
  'nearest',
  'knn',
  'rerank',
]);

/** Verbs that name a read of memory by themselves, store or no store (`agent.recall`, `total_recall`). */
export const MEMORY_VERBS: ReadonlySet<string> = new Set(['recall', 'recollect']);

/** Irregular and noun forms of read verbs and stores. */
const PLAIN_FORMS: ReadonlyMap<string, string> = new Map([
  ['retrieval', 'retrieve'],
  ['retrievals', 'retrieve'],
  ['found', 'find'],
  ['got', 'get'],
  ['gotten', 'get'],
  ['shown', 'show'],
  ['memories', 'memory'],
  ['mems', 'mem'],
  ['kbs', 'kb'],
  ['summary', 'summarize'],
  ['summaries', 'summarize'],
  ['listing', 'list'],
  ['listings', 'list'],
  ['lookups', 'lookup'],
]);

/** Two words that spell one: `look up`, `knowledge base`, `vector store`, `read only`. */
const JOINED: ReadonlyMap<string, string> = new Map([
  ['look up', 'lookup'],
  ['looked up', 'lookup'],
  ['looking up', 'lookup'],
  ['looks up', 'lookup'],
  ['knowledge base', 'knowledgebase'],
  ['knowledge bases', 'knowledgebase'],
  ['vector store', 'vectorstore'],
  ['vector stores', 'vectorstore'],
  ['vector db', 'vectordb'],
  ['read only', 'readonly'],
  ['read write', 'readwrite'],
]);

/**
 * Verbs that change a store. They do not decide anything (a read verb beside them still makes a
 * read); they are known so that a glued action splits right: `memoryforget` is `memory forget`,
 * not `memory for get`.
 */
export const WRITE_VERBS: ReadonlySet<string> = new Set([
  'write', 'add', 'delete', 'update', 'save', 'create', 'remove', 'put', 'set', 'insert', 'upsert', 'append', 'edit', 'patch',
  'modify', 'replace', 'overwrite', 'forget', 'clear', 'erase', 'purge', 'reset', 'drop', 'import', 'upload', 'ingest', 'store', 'index',
]);

/** Small words an action glues between the others (`getallmemories`, `search_by_query`). */
const FILLERS: ReadonlySet<string> = new Set(['all', 'and', 'or', 'by', 'from', 'for', 'to', 'the', 'my', 'in', 'of', 'with', 'a', 'an', 'on', 'one', 'many', 'batch']);

/** Glued words longer than this are not split (an action is at most 100 characters anyway). */
const MAX_GLUED = 64;

/** Character classes of an action (numbers, not a const enum: every compiler reads them the same). */
const OTHER = 0;
const LOWER = 1;
const UPPER = 2;
const DIGIT = 3;
const STAR = 4;

function charType(code: number): number {
  if (code >= 97 && code <= 122) return LOWER;
  if (code >= 65 && code <= 90) return UPPER;
  if (code >= 48 && code <= 57) return DIGIT;
  if (code === 42) return STAR;
  return OTHER;
}

/**
 * The words of an action (or a pattern), in one pass: split at every character that is not an
 * ASCII letter or digit and at case changes (`lookUp`, `KBSearch` is `kb search`,
 * `Mem0Search` is `mem0 search`), lower-cased. Digits stay with the letters before them (`mem0`).
 * `*` (in a pattern) stays in the word it touches.
 */
export function actionWords(action: string): string[] {
  const words: string[] = [];
  let start = -1;
  let previous = OTHER;
  for (let index = 0; index <= action.length; index++) {
    const type = index < action.length ? charType(action.charCodeAt(index)) : OTHER;
    let boundary = type === OTHER || start < 0 || (type === UPPER && (previous === LOWER || previous === DIGIT));
    let next = index;
    if (!boundary && type === LOWER && previous === UPPER && index - start > 1) {
      // `KBSearch`: the last capital starts the next word.
      boundary = true;
      next = index - 1;
    }
    if (boundary) {
      if (start >= 0 && next > start) words.push(action.slice(start, next).toLowerCase());
      start = type === OTHER ? -1 : next;
    }
    previous = type;
  }
  return words;
}

/** A word's plain forms: itself, and `memories` → `memory`, `queried` → `query`, `searching` → `search`. */
function forms(word: string): string[] {
  const out = [word];
  const plain = PLAIN_FORMS.get(word);
  if (plain) out.push(plain);
  if (word.endsWith('ies')) out.push(`${word.slice(0, -3)}y`);
  if (word.endsWith('ied')) out.push(`${word.slice(0, -3)}y`);
  if (word.endsWith('es')) out.push(word.slice(0, -2));
  if (word.endsWith('s')) out.push(word.slice(0, -1));
  if (word.endsWith('ed')) out.push(word.slice(0, -2), word.slice(0, -1));
  if (word.endsWith('ing')) out.push(word.slice(0, -3), `${word.slice(0, -3)}e`);
  return out;
}

type Vocabulary = (word: string) => boolean;

/**
 * A glued word split into known words (`searchmemories` → `search memories`), or undefined when
 * it cannot be wholly made of words the rule knows and FILLERS. Dynamic programming over the
 * positions: at most MAX_GLUED² look-ups.
 */
function splitGlued(word: string, known: Vocabulary): string[] | undefined {
  if (word.length > MAX_GLUED || word.length < 4) return undefined;
  const best: (string[] | undefined)[] = new Array<string[] | undefined>(word.length + 1);
  best[0] = [];
  for (let end = 1; end <= word.length; end++) {
    // The longest known last piece first: `memoryforget` ends in `forget`, not `get`.
    for (let start = 0; start < end; start++) {
      const before = best[start];
      if (before === undefined) continue;
      const piece = word.slice(start, end);
      if (known(piece) || FILLERS.has(piece)) {
        best[end] = [...before, piece];
        break;
      }
    }
  }
  const pieces = best[word.length];
  // A filler neither starts nor ends a glued action: `forget` is no `for get`.
  if (pieces === undefined || pieces.length < 2 || FILLERS.has(pieces[0]!) || FILLERS.has(pieces[pieces.length - 1]!)) return undefined;
  return pieces;
}

/** The words of an action as the rule reads them: joined pairs joined, glued words split. */
function readingWords(action: string, known: Vocabulary): string[] {
  const raw = actionWords(action);
  const joined: string[] = [];
  for (let index = 0; index < raw.length; index++) {
    const pair = index + 1 < raw.length ? JOINED.get(`${raw[index]} ${raw[index + 1]}`) : undefined;
    if (pair) {
      joined.push(pair);
      index++;
    } else {
      joined.push(raw[index]!);
    }
  }
  const words: string[] = [];
  for (const word of joined) {
    const pieces = known(word) ? undefined : splitGlued(word, known);
    if (pieces) words.push(...readingWords(pieces.join(' '), () => false));
    else words.push(word);
  }
  return words;
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
  const extraStores = new Set((settings.stores ?? []).flatMap((store) => actionWords(store)));
  const isStore = inSet(STORES, new Set([...PROVIDERS, ...extraStores]));
  const isRead = inSet(READ_VERBS, new Set());
  const isWrite = inSet(WRITE_VERBS, new Set());
  const isRecall = inSet(MEMORY_VERBS, new Set());
  const known: Vocabulary = (word) => isStore(word) || isRead(word) || isWrite(word);
  const decided = new Map<string, boolean>();
  return (action: string): boolean => {
    if (typeof action !== 'string') return false;
    const cached = decided.get(action);
    if (cached !== undefined) return cached;
    const answer = decide(action);
    if (decided.size >= 10_000) decided.clear();
    if (action.length <= 200) decided.set(action, answer);
    return answer;
  };

  function decide(action: string): boolean {
    const plain = actionWords(action);
    if (plain.length === 0) return false;
    const normal = plain.join('.');
    if (exclude.some((pattern) => globMatches(pattern, normal))) return false;
    if (include.some((pattern) => globMatches(pattern, normal))) return true;
    const words = readingWords(action, known);
    return words.some(isRecall) || (words.some(isStore) && words.some(isRead));
  }
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
