// Type confusion over the whole LcmEngine surface (fixed seed): every method is
// called with valid parameters, mutated ones and values of the wrong type. Each
// call must resolve, or reject with a stable LCM_ code that is not LCM_INTERNAL (a
// contained panic); a method that returns a Promise must never throw instead; and
// the engine must still answer, with an intact database, afterwards.
import { describe, it, expect, afterEach } from 'vitest'
import { join } from 'node:path'
import { LcmEngine, tempDir } from './helpers.mjs'

let engine
afterEach(async () => {
  await engine?.close()
  engine = undefined
})

/** xorshift32: the same calls on every run. */
function rng(seed) {
  let s = seed >>> 0
  const next = () => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s / 4294967296
  }
  return { next, pick: (a) => a[Math.floor(next() * a.length)] }
}

const STRINGS = ['', ' ', 'a', 'x'.repeat(5000), '\u00a0', '\u3000', '한국어 텍스트', '中文', '👩‍👩‍👧‍👦', '\u202eRTL', '\ud800', '\u0000', 'NEEDLE-1-7', '(', '[', '\\', '.*', 'a{99999}', 'sum_0000000000000000', 'file_x', '1970-01-01T00:00:00Z', 'not a date', 'NaN', 'ﬁ', 'İ', '"', '*', 'OR NOT', 'NEAR(', 'user', 'assistant', 'toolResult', 'regex', 'full_text', 'sweep', 's']
const NUMBERS = [0, -0, 1, -1, 2, 200, 201, 1e9, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, NaN, Infinity, -Infinity, 0.5]
const SYNC = new Set(['cancel', 'getRecallToolDefinitions'])

function fuzzer(seed) {
  const { next, pick } = rng(seed)
  const value = (depth = 0) => {
    const r = next()
    if (r < 0.3) return pick(STRINGS)
    if (r < 0.55) return pick(NUMBERS)
    if (r < 0.62) return next() < 0.5
    if (r < 0.7) return null
    if (r < 0.73) return undefined
    if (depth > 2) return pick(STRINGS)
    if (r < 0.85) return Array.from({ length: Math.floor(next() * 4) }, () => value(depth + 1))
    const o = {}
    for (let i = 0; i < Math.floor(next() * 4); i++) o[pick(['role', 'content', 'type', 'text', 'id', 'name', 'arguments', 'timestamp'])] = value(depth + 1)
    return o
  }
  const message = () => {
    const m = { role: pick(['user', 'assistant', 'toolResult', 'system', 'developer', 'bashExecution', 'custom']) }
    const r = next()
    if (r < 0.3) m.content = pick(STRINGS)
    else if (r < 0.6) m.content = [{ type: 'text', text: pick(STRINGS) }]
    else if (r < 0.8) m.content = [{ type: 'toolCall', id: pick(STRINGS), name: pick(STRINGS), arguments: value() }, { type: 'thinking', thinking: pick(STRINGS) }]
    else m.content = value()
    if (next() < 0.3) m.toolCallId = pick(STRINGS)
    if (next() < 0.3) m.timestamp = pick([...NUMBERS, ...STRINGS])
    return m
  }
  const mutate = (base) => {
    const o = { ...base }
    const keys = Object.keys(o)
    for (let i = 0; i < 1 + Math.floor(next() * 2); i++) {
      const k = keys.length && next() < 0.8 ? pick(keys) : pick(['limit', 'mode', 'scope', 'conversationId', 'tokenBudget', 'since', 'force'])
      o[k] = next() < 0.15 ? undefined : value()
    }
    return o
  }
  return { next, pick, value, message, mutate }
}

/** Argument lists for every method, built from the fixture's ids. */
function calls(f, ids) {
  const { next, pick, value, message } = f
  const conv = () => pick([ids.conversationId, ids.other, ...NUMBERS])
  const sum = () => pick([ids.summaryId, 'sum_0000000000000000', value()])
  return {
    ingest: () => [{ sessionId: 's', message: message(), entryId: next() < 0.3 ? pick(STRINGS) : undefined }],
    ingestBatch: () => [{ sessionId: pick(['s', 'other', 'new']), messages: [message(), message()] }],
    commitTurn: () => [{ sessionId: 's', advancementKey: pick(STRINGS), messages: [message()] }],
    bootstrap: () => [{ sessionId: 'boot', transcriptEntries: [{ type: 'message', id: pick(STRINGS), message: message() }], transcriptTail: next() < 0.4 }],
    afterTurn: () => [{ sessionId: 's', tokenBudget: 500, messages: [message(), message()], prePromptMessageCount: pick([0, 1, 2, 3]) }],
    assemble: () => [{ sessionId: 's', tokenBudget: pick([50, 1000, 100000]), messages: [message()] }],
    evaluate: () => [{ sessionId: 's', tokenBudget: 500 }],
    compact: () => [{ sessionId: 's', tokenBudget: 500, mode: pick(['sweep', 'incremental']), force: next() < 0.5 }],
    cancel: () => [pick(['s', 'nobody'])],
    grep: () => [{ pattern: pick(STRINGS), mode: pick(['regex', 'full_text']), scope: pick(['messages', 'summaries', 'both']), allConversations: true, limit: 10 }],
    describe: () => [sum(), next() < 0.5 ? { includeContent: next() < 0.5 } : undefined],
    expand: () => [{ summaryIds: [sum()], maxDepth: 2, tokenCap: 1000 }],
    createGrant: () => [{ conversationIds: [ids.conversationId], tokenCap: 100 }],
    getGrant: () => [pick(['grant_x', value()])],
    revokeGrant: () => [pick(['grant_x', value()])],
    warmRecallIndex: () => [],
    getRecallToolDefinitions: () => [],
    doctor: () => [{ conversationId: conv() }],
    dissolve: () => [{ conversationId: ids.conversationId, summaryId: sum(), apply: next() < 0.3 }],
    transplant: () => [{ sourceConversationId: conv(), targetConversationId: conv(), apply: next() < 0.3 }],
    planRewrite: () => [{ conversationId: ids.conversationId, ...pick([{ all: true }, { depth: pick([0, 1, 2]) }, { summaryId: sum() }]) }],
    rewrite: () => [{ conversationId: ids.conversationId, ...pick([{ all: true }, { depth: 0 }, { summaryId: sum() }]), apply: next() < 0.3 }],
    insertSummary: () => [{ conversationId: ids.conversationId, content: pick(STRINGS), messageIds: [pick([1, 2, 3, 80]), pick([2, 3, 82])] }],
    summarizeText: () => [{ depth: pick([0, 1, 2, 3]), sourceText: pick(STRINGS), childCount: pick([0, 1, 3]) }],
    getConversation: () => [{ sessionId: pick(['s', 'other', 'none']) }],
    listConversations: () => [],
    getMessages: () => [conv(), next() < 0.5 ? { limit: 5 } : undefined],
    getContextItems: () => [conv()],
    getSummaries: () => [conv()],
    getStats: () => [conv()],
    status: () => [next() < 0.3 ? undefined : { sessionId: pick(['s', 'other', 'none']), tokenBudget: pick([1, 1000, 200_000]), tables: next() < 0.5 }],
    integrityCheck: () => [],
    endSession: () => [{ sessionId: pick(['s', 'other', 'none', value()]), sessionKey: next() < 0.5 ? pick(STRINGS) : undefined, reason: pick(['new', 'reset', 'idle', 'deleted', 'restart', 'continued', value()]), retainDepth: next() < 0.5 ? pick(NUMBERS) : undefined, nextSessionId: next() < 0.3 ? pick(STRINGS) : undefined }],
    archiveConversation: () => [{ conversationId: conv(), cause: next() < 0.5 ? pick(['operator', 'manual-reset', value()]) : undefined, successor: next() < 0.5 }],
    unarchiveConversation: () => [conv()],
    pruneContext: () => [{ conversationId: conv(), retainDepth: next() < 0.7 ? pick(NUMBERS) : undefined }],
    sessionFamily: () => [pick([...STRINGS, value()])],
    summarizeLargeFiles: () => [next() < 0.3 ? undefined : { sessionId: pick(['s', 'other', 'none']), limit: pick([1, 5, 100]) }],
    // Paths only under a temporary directory (or invalid): never the working directory.
    backup: () => [pick([{ to: join(ids.dir, 'copy.db') }, { to: '' }, { to: 0 }, { to: null }, {}, null, 'x', { to: join(ids.dir, 'copy.db'), extra: 1 }])],
    storageStats: () => [next() < 0.5 ? { tables: pick([true, false, value()]) } : undefined],
    reclaimSpace: () => [next() < 0.5 ? { maxPages: pick(NUMBERS) } : undefined],
    prune: () => [next() < 0.5 ? { dryRun: pick([true, false, value()]), limit: pick(NUMBERS), now: pick(STRINGS) } : undefined],
    restoreArchive: () => [{ path: pick([join(ids.dir, 'nothing'), '', value()]) }],
    prunedSummary: () => [sum()],
  }
}

describe('type confusion over every method (fixed seed)', () => {
  it('every call resolves or rejects with an LCM_ code, never LCM_INTERNAL, never a synchronous throw', async () => {
    const logs = []
    engine = await LcmEngine.open({
      dbPath: join(tempDir(), 'lcm.db'),
      timezone: 'UTC',
      leafChunkTokens: 600,
      leafTargetTokens: 100,
      condensedTargetTokens: 100,
      freshTailCount: 2,
      onLog: (r) => logs.push(r),
      summarizer: async (req) => `summary of ${String(req?.prompt ?? '').length} chars, 요약`,
    })
    const ids = { dir: tempDir() }
    for (let i = 0; i < 40; i++) {
      const r = await engine.ingestBatch({ sessionId: i % 2 ? 's' : 'other', messages: [{ role: 'user', content: `hello ${i} NEEDLE-1-${i}` }, { role: 'assistant', content: [{ type: 'text', text: `reply ${i} ` + 'word '.repeat(80) }] }] })
      ids[i % 2 ? 'conversationId' : 'other'] = r.conversationId
    }
    await engine.compact({ sessionId: 's', tokenBudget: 500, mode: 'sweep', force: true })
    ids.summaryId = (await engine.getSummaries(ids.conversationId))[0]?.summaryId
    expect(ids.summaryId).toMatch(/^sum_/)

    const f = fuzzer(20261128)
    const table = calls(f, ids)
    // A method added to LcmEngine without an entry here fails this test.
    const methods = Object.getOwnPropertyNames(LcmEngine.prototype).filter((m) => m !== 'constructor' && typeof Object.getOwnPropertyDescriptor(LcmEngine.prototype, m).value === 'function' && !['close', '_debugPanicNextJob'].includes(m))
    expect(methods.filter((m) => !table[m])).toEqual([])

    const problems = []
    const outcomes = { resolved: 0, rejected: 0 }
    for (let i = 0; i < 1500; i++) {
      const method = f.pick(methods)
      const base = table[method]()
      const r = f.next()
      const args = r < 0.05 ? [f.value()] : r < 0.5 ? base : base.map((a) => (a && typeof a === 'object' && !Array.isArray(a) ? f.mutate(a) : f.next() < 0.3 ? f.value() : a))
      const shown = () => `${method}(${JSON.stringify(args, (k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v))?.slice(0, 200)})`
      let returned
      try {
        returned = engine[method](...args)
      } catch (e) {
        if (!SYNC.has(method)) problems.push(`threw instead of rejecting: ${shown()}: ${e?.code} ${e?.message}`)
        else if (!String(e?.code).startsWith('LCM_')) problems.push(`uncoded throw: ${shown()}: ${e?.message}`)
        continue
      }
      if (SYNC.has(method)) continue
      try {
        await returned
        outcomes.resolved++
      } catch (e) {
        outcomes.rejected++
        if (!String(e?.code).startsWith('LCM_') || e.code === 'LCM_INTERNAL') problems.push(`${e?.code}: ${shown()}: ${e?.message}`)
      }
    }
    expect(problems).toEqual([])
    expect(logs.filter((l) => l.level === 'error')).toEqual([])
    // Enough of the calls got past validation to reach the engine's work.
    expect(outcomes.resolved).toBeGreaterThan(300)
    expect(await engine.integrityCheck()).toEqual(['ok'])
    expect((await engine.getStats(ids.conversationId)).messageCount).toBeGreaterThan(0)
  }, 120_000)
})
