import { describe, expect, it } from '@jest/globals';
import { actionWords, isMemoryRead, memoryReadRule, memoryReadRuleFor, PROVIDERS, READ_VERBS, STORES } from '../../policies/memory-reads.js';
import { redactAuditItem } from '../../src/modules/ingest/redaction.js';
import { AUDIT_CONTENT_FIELDS } from '../../src/modules/ingest/service.js';

/** The rule of policies/memory-reads.ts: which audit actions keep only their label. */

describe('the built-in rule', () => {
  it.each([
    // memory, any separator, any case, resource or verb first
    'memory.read',
    'memory_read',
    'memory-read',
    'memory:get',
    'memory/list',
    'memoryRead',
    'MemoryRead',
    'MEMORY.READ',
    ' memory.retrieve ',
    'read_memory',
    'readMemory',
    'search_memories',
    'memories.list',
    'memory.recall',
    'workbench.memory.read',
    'mcp.memory.fetch',
    'memory.entries.read',
    // searches of any naming
    'memory.search',
    'memory.semantic_search',
    'memory.semanticSearch',
    'memories.vector.search',
    'semantic_search',
    'semantic.search',
    'embeddings.similarity.search',
    // knowledge bases
    'knowledge.query',
    'knowledge.search',
    'knowledge_base.lookup',
    'knowledgebase.get',
    'kb.search',
    'KBSearch',
    'kb.articles.read',
    'rag.retrieve',
    'rag.query',
    // vectors
    'vector.lookup',
    'vector_store.query',
    'vectorstore.search',
    'vectordb.nearest',
    'vector.knn',
    'vector.similar',
    // exports
    'export.memories',
    'memories.export',
    'memory.dump',
    'knowledge.download',
    'export_knowledge',
    // tenses and plurals
    'memory.queried',
    'memory.searching',
    'memories.fetched',
    'memory.lookups',
    // outcomes of a read still carry what was read or asked
    'memory.read.failed',
    'memory.search.completed',
  ])('%s is a memory read', (action) => {
    expect(isMemoryRead(action)).toBe(true);
  });

  it.each([
    'memory.write',
    'memory.delete',
    'memory_update',
    'write_memory',
    'memory.save',
    'memory.forget',
    'memory.import',
    'knowledge.upload',
    'kb.articles.create',
    'vector.upsert',
    'vector_store.insert',
    'memory.write.read_only',
    'memory.write.readonly',
    'memories.clear',
    'memory.forget',
    'mem0.add',
    'mem0.delete',
    'zep.memory.add',
    'letta.insert',
    'memory.update',
    'vector.upsert',
    'membership.get',
    'memo.read',
    'member.list',
    'git.log',
    'http.get',
    'db.query',
    'semanticversion',
    'forget',
    'target.get',
    'file.read',
    'web.search',
    'code.search',
    'export.audit',
    'memory',
    'read',
    'knowledge',
    '',
    '   ',
    'memory.readme',
    'memorize.read',
    'kbd.read',
    'remember.read',
  ])('%s is not a memory read', (action) => {
    expect(isMemoryRead(action)).toBe(false);
  });

  it.each([
    // the spellings the review found missed
    'memory.lookUp',
    'memory.look_up',
    'memory.look-up',
    'memory.retrieval',
    'mem0.search',
    'memory.get_or_create',
    // providers
    'mem0.get_all',
    'mem0.history',
    'zep.memory.get',
    'zep.graph.search',
    'letta.archival_memory_search',
    'letta.passages.list',
    'langmem.search_memory',
    'Mem0Search',
    'MEM0_SEARCH',
    'pinecone.query',
    'qdrant.scroll',
    // glued words
    'searchmemories',
    'kbsearch',
    'lookupmemory',
    'getallmemories',
    'memory.found',
    'knowledge_base.looked_up',
    // recalling is reading memory, whatever else the action names
    'agent.recall',
    'recall',
    'total_recall',
    'context.recollect',
  ])('%s is a memory read', (action) => {
    expect(isMemoryRead(action)).toBe(true);
  });

  it('refuses what is not a string rather than failing', () => {
    expect(isMemoryRead(undefined as unknown as string)).toBe(false);
    expect(isMemoryRead(42 as unknown as string)).toBe(false);
  });

  it('reads actions as words, whatever the case and the separators', () => {
    expect(actionWords('Memory-Semantic_searchAPI:v2/Get')).toEqual(['memory', 'semantic', 'search', 'api', 'v2', 'get']);
    expect(actionWords('KBSearch')).toEqual(['kb', 'search']);
  });
});

describe("an organisation's settings (audit.memoryReads)", () => {
  it('adds stores whose reads count', () => {
    const rule = memoryReadRule({ stores: ['journal', 'Notebook'] });
    for (const action of ['journal.read', 'search_journals', 'notebook.query', 'memory.read']) expect(rule(action)).toBe(true);
    for (const action of ['journal.write', 'journal', 'notebook.delete']) expect(rule(action)).toBe(false);
    expect(isMemoryRead('journal.read')).toBe(false);
  });

  it('includes actions by pattern, case and separators ignored, * for any run', () => {
    const rule = memoryReadRule({ include: ['assistant.context.get', 'crm.*', '*recall*', 'Ctx-Peek'] });
    for (const action of ['assistant.context.get', 'assistantContextGet', 'ASSISTANT_CONTEXT_GET', 'crm.contacts.read', 'crm.delete', 'agent.total_recall', 'recall', 'ctx.peek', 'ctxPeek']) {
      expect(rule(action)).toBe(true);
    }
    for (const action of ['assistant.context.set', 'crm', 'crmx.read', 'ctx.peek.more']) expect(rule(action)).toBe(false);
  });

  it('excludes actions by pattern, before anything else', () => {
    const rule = memoryReadRule({ exclude: ['memory.list*', 'kb.*'], include: ['kb.search', 'journal.read'], stores: ['journal'] });
    expect(rule('memory.list')).toBe(false);
    expect(rule('memory.list_sizes')).toBe(false);
    expect(rule('kb.search')).toBe(false);
    expect(rule('journal.read')).toBe(true);
    expect(rule('memory.read')).toBe(true);
    expect(rule('memory.search')).toBe(true);
  });

  it('stays fast on hostile patterns: many stars never backtrack exponentially', () => {
    const rule = memoryReadRule({ include: [`${'*a'.repeat(45)}*b`] });
    const started = process.hrtime.bigint();
    expect(rule('a'.repeat(100))).toBe(false);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(500);
  });

  it('compiles a settings object once', () => {
    const settings = { stores: ['journal'], include: [], exclude: [] };
    expect(memoryReadRuleFor(settings)).toBe(memoryReadRuleFor(settings));
    expect(memoryReadRuleFor(undefined)).toBe(isMemoryRead);
    expect(memoryReadRuleFor(settings)('journal.read')).toBe(true);
  });
});

/** The spelling styles of actions: the same words written every way a workbench names tools. */
const STYLES: readonly ((words: string[]) => string)[] = [
  (words) => words.join('.'),
  (words) => words.join('_'),
  (words) => words.join('-'),
  (words) => words.join('/'),
  (words) => words.join(':'),
  (words) => words.join('_').toUpperCase(),
  (words) => words[0]! + words.slice(1).map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join(''),
  (words) => words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join(''),
  (words) => words.join(''),
];

describe('every read verb of every store, in every spelling (generated)', () => {
  const nouns = [...STORES, ...PROVIDERS, 'knowledge base', 'vector store', 'memories'];
  const verbs = [...READ_VERBS, 'look up', 'retrieval', 'searching', 'fetched', 'lookups'];
  const split = (phrase: string) => phrase.split(' ');

  it(`${nouns.length} nouns x ${verbs.length} verbs x ${STYLES.length} styles x both orders are memory reads, and their content is dropped`, () => {
    let checked = 0;
    for (const noun of nouns) {
      for (const verb of verbs) {
        for (const words of [[...split(noun), ...split(verb)], [...split(verb), ...split(noun)], ['agent', ...split(noun), 'entries', ...split(verb)]]) {
          // Glued into one word, only the words the rule knows can be told apart (not `agent…entries`).
          for (const style of words[0] === 'agent' ? STYLES.slice(0, -1) : STYLES) {
            const action = style(words);
            if (!isMemoryRead(action)) throw new Error(`${action} (${words.join(' ')}) is not read as a memory read`);
            const item = { id: 'a1', action, label: 'l', target: 'what was read', details: { content: 'recalled text' } };
            expect(redactAuditItem(item, AUDIT_CONTENT_FIELDS).value).toEqual({ id: 'a1', action, label: 'l' });
            checked += 1;
          }
        }
      }
    }
    expect(checked).toBe(nouns.length * verbs.length * (STYLES.length * 3 - 1));
  });

  it('keeps the content of writes, deletes and reads of anything else, in every spelling', () => {
    const benign = [
      ['memory', 'write'],
      ['memory', 'add'],
      ['memory', 'delete'],
      ['memory', 'update'],
      ['memory', 'forget'],
      ['mem0', 'add'],
      ['zep', 'memory', 'add'],
      ['letta', 'insert'],
      ['knowledge', 'upload'],
      ['vector', 'upsert'],
      ['file', 'read'],
      ['web', 'search'],
      ['code', 'search'],
      ['git', 'log'],
      ['http', 'get'],
      ['db', 'query'],
      ['export', 'audit'],
      ['tool', 'call'],
      ['memory', 'write', 'read', 'only'],
    ];
    for (const words of benign) {
      for (const style of STYLES) {
        const action = style(words);
        expect([action, isMemoryRead(action)]).toEqual([action, false]);
        const item = { id: 'a1', action, label: 'l', target: 'src/x.ts', details: { bytes: 10 } };
        expect(redactAuditItem(item, AUDIT_CONTENT_FIELDS).value).toEqual(item);
      }
    }
  });
});
