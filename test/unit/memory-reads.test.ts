import { describe, expect, it } from '@jest/globals';
import { actionWords, isMemoryRead, memoryReadRule, memoryReadRuleFor } from '../../policies/memory-reads.js';

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
    'memories.clear',
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
