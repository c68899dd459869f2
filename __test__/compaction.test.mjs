import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { LcmEngine, tempDir, workload, turns, rejectsWithCode, root } from './helpers.mjs'
import { captureBaseline, checkInvariants } from './invariants.mjs'

// Small chunks so a 2,000-message workload (~290k tokens) builds a deep DAG: ~100
// leaves of ≤3,000 source tokens, condensed 4+ at a time at depth 0, 2+ above.
const SMALL = {
  timezone: 'UTC',
  leafChunkTokens: 3000,
  leafTargetTokens: 400,
  condensedTargetTokens: 400,
  leafMinFanout: 4,
  condensedMinFanout: 2,
  freshTailCount: 16,
  maxSweepIterations: 1000,
}

/** A host summarizer callback: deterministic, short, and counting its calls. */
function callbackSummarizer({ failAt = Infinity, delayMs = 0 } = {}) {
  const state = { calls: 0, inFlight: 0, maxInFlight: 0, requests: [] }
  const fn = async (req) => {
    state.calls++
    state.inFlight++
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight)
    state.requests.push(req)
    try {
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs))
      if (state.calls >= failAt) throw new Error('host summarizer refused')
      const words = String(req.sourceText ?? req.prompt).split(/\s+/).slice(0, 180).join(' ')
      return `Depth ${req.depth} summary ${state.calls}: ${words}`
    } finally {
      state.inFlight--
    }
  }
  return { fn, state }
}

const CALLBACK_OPTION = 'summarizer'

async function loaded(n, seed, options) {
  const { messages } = workload(n, seed)
  const engine = await LcmEngine.open({ dbPath: join(tempDir(), 'lcm.db'), ...options })
  let conversationId
  for (const turn of turns(messages)) {
    conversationId = (await engine.ingestBatch({ sessionId: 's', messages: turn })).conversationId
  }
  const baseline = await captureBaseline(engine, conversationId)
  return { engine, conversationId, baseline, messages }
}

async function fullSweep(engine, extra = {}) {
  const seen = []
  const r = await engine.compact({ sessionId: 's', tokenBudget: 4000, mode: 'sweep', force: true, onProgress: (p) => seen.push(p), ...extra })
  await new Promise((res) => setTimeout(res, 20)) // progress events are fire-and-forget
  return { r, seen }
}

describe('full sweeps on a 2,000-message workload', () => {
  it('offline summarizer: every invariant holds and the DAG goes deeper than depth 1', async () => {
    const { engine, conversationId, baseline } = await loaded(2000, 7, SMALL)
    const { r, seen } = await fullSweep(engine)
    expect(r.ok).toBe(true)
    expect(r.compacted).toBe(true)
    expect(r.tokensAfter).toBeLessThan(r.tokensBefore)
    const report = await checkInvariants(engine, conversationId, baseline)
    expect(report.deepest).toBeGreaterThan(1)
    expect(report.summaries).toBe(r.passes.length)
    expect(seen.map((p) => p.summaryId)).toEqual(r.passes.map((p) => p.summaryId))
    const leaves = r.passes.filter((p) => p.kind === 'leaf')
    expect(leaves.every((p) => p.depth === 0)).toBe(true)
    expect(r.passes.filter((p) => p.kind === 'condensed').every((p) => p.depth >= 1)).toBe(true)
    // Only the fresh tail (and whatever the newest user turn needs) stays raw.
    const items = await engine.getContextItems(conversationId)
    const raw = items.filter((i) => i.itemType === 'message')
    expect(raw.length).toBeGreaterThanOrEqual(16)
    expect(items.slice(-raw.length).every((i) => i.itemType === 'message')).toBe(true)
    expect(await engine.integrityCheck()).toEqual(['ok'])
    await engine.close()
  })

  it('callback summarizer: same invariants, one host call per pass, never two at once', async () => {
    const cb = callbackSummarizer()
    const { engine, conversationId, baseline } = await loaded(2000, 8, { ...SMALL, [CALLBACK_OPTION]: cb.fn })
    const { r } = await fullSweep(engine)
    expect(r.ok).toBe(true)
    const report = await checkInvariants(engine, conversationId, baseline)
    expect(report.deepest).toBeGreaterThan(1)
    expect(cb.state.calls).toBeGreaterThanOrEqual(r.passes.length)
    expect(cb.state.maxInFlight).toBe(1)
    const summaries = await engine.getSummaries(conversationId)
    expect(summaries.every((s) => /^Depth \d+ summary \d+:/.test(s.content) || s.content.includes('[Truncated from'))).toBe(true)
    // The request's shape: these keys in this order, `prompt` the whole rendered
    // prompt around the source text (built from pieces on the JavaScript side).
    for (const req of cb.state.requests) {
      expect(Object.keys(req)).toEqual(['prompt', 'systemPrompt', 'targetTokens', 'depth', 'aggressive', 'model', 'sourceText'])
      expect([typeof req.prompt, typeof req.systemPrompt, typeof req.targetTokens, typeof req.depth, typeof req.aggressive]).toEqual(['string', 'string', 'number', 'number', 'boolean'])
      expect(req.model).toBe(null)
      expect(req.sourceText.length).toBeGreaterThan(0)
      const at = req.prompt.indexOf(req.sourceText)
      expect(at).toBeGreaterThan(0)
      expect(req.prompt.length).toBeGreaterThan(at + req.sourceText.length)
      expect(JSON.parse(JSON.stringify(req)).prompt).toBe(req.prompt)
    }
    await engine.close()
  })
})

describe('sweep bookkeeping', () => {
  it('pass records chain exactly and end at getStats().contextTokens (the sweep keeps the list in memory)', async () => {
    const cb = callbackSummarizer()
    const { engine, conversationId, baseline } = await loaded(2000, 21, { ...SMALL, [CALLBACK_OPTION]: cb.fn })
    const { r, seen } = await fullSweep(engine)
    expect(r.ok).toBe(true)
    expect(r.passes.length).toBeGreaterThan(20)
    expect(r.passes[0].contextTokensBefore).toBe(r.tokensBefore)
    for (let i = 1; i < r.passes.length; i++) {
      expect(r.passes[i].contextTokensBefore).toBe(r.passes[i - 1].contextTokensAfter)
    }
    const stats = await engine.getStats(conversationId)
    expect(r.passes.at(-1).contextTokensAfter).toBe(stats.contextTokens)
    expect(r.tokensAfter).toBe(stats.contextTokens)
    const items = await engine.getContextItems(conversationId)
    expect(items.reduce((a, i) => a + i.tokenCount, 0)).toBe(stats.contextTokens)
    expect(items.map((i) => i.ordinal)).toEqual(items.map((_, i) => i))
    expect(seen.map((p) => [p.summaryId, p.contextTokensAfter])).toEqual(r.passes.map((p) => [p.summaryId, p.contextTokensAfter]))
    await checkInvariants(engine, conversationId, baseline)
    // A second forced sweep after more messages starts from the stored state.
    const more = workload(300, 22).messages.map((m, i) => ({ ...m, timestamp: Date.now() + i }))
    for (const turn of turns(more)) await engine.ingestBatch({ sessionId: 's', messages: turn })
    const before = (await engine.getStats(conversationId)).contextTokens
    const { r: r2 } = await fullSweep(engine)
    expect(r2.tokensBefore).toBe(before)
    expect(r2.passes.at(-1).contextTokensAfter).toBe((await engine.getStats(conversationId)).contextTokens)
    await checkInvariants(engine, conversationId)
    await engine.close()
  })
})

describe('thresholds and modes', () => {
  it('evaluate: floor(ratio × budget), strictly greater, observed count wins when higher', async () => {
    const { engine } = await loaded(200, 3, SMALL)
    const base = await engine.evaluate({ sessionId: 's', tokenBudget: 1_000_000 })
    const stored = base.storedTokens
    expect(base.shouldCompact).toBe(false)
    const budget = Math.ceil(stored / 0.75) + 3 // threshold ≥ stored
    const e = await engine.evaluate({ sessionId: 's', tokenBudget: budget })
    expect(e.threshold).toBe(Math.floor(0.75 * budget))
    const atThreshold = await engine.evaluate({ sessionId: 's', tokenBudget: budget, currentTokenCount: e.threshold })
    expect(atThreshold.shouldCompact).toBe(false)
    const over = await engine.evaluate({ sessionId: 's', tokenBudget: budget, currentTokenCount: e.threshold + 1 })
    expect(over.shouldCompact).toBe(true)
    expect(over.currentTokens).toBe(e.threshold + 1)
    await rejectsWithCode(engine.evaluate({ sessionId: 's' }), 'LCM_INVALID_INPUT')
    await engine.close()
  })

  it('under the threshold and not forced: nothing to do, as a result', async () => {
    const { engine } = await loaded(200, 3, SMALL)
    const r = await engine.compact({ sessionId: 's', tokenBudget: 10_000_000 })
    expect(r).toMatchObject({ ok: true, compacted: false, reason: 'below threshold', exhausted: false, passes: [] })
    const none = await engine.compact({ sessionId: 'no-such-session', tokenBudget: 100 })
    expect(none).toMatchObject({ ok: true, compacted: false })
    await rejectsWithCode(engine.compact({ sessionId: 's', tokenBudget: 100, mode: 'everything' }), 'LCM_INVALID_INPUT')
    await engine.close()
  })

  it('untilUnder reaches its target; an unreachable one reports exhausted', async () => {
    const { engine, conversationId, baseline } = await loaded(600, 4, SMALL)
    const before = (await engine.getStats(conversationId)).contextTokens
    const target = Math.floor(before / 3)
    const r = await engine.compact({ sessionId: 's', tokenBudget: before, mode: 'untilUnder', targetTokens: target, force: true })
    expect(r.ok).toBe(true)
    expect(r.tokensAfter).toBeLessThanOrEqual(target)
    const hopeless = await engine.compact({ sessionId: 's', tokenBudget: before, mode: 'untilUnder', targetTokens: 10, force: true })
    expect(hopeless).toMatchObject({ ok: false, exhausted: true, reason: 'could not reach target' })
    await checkInvariants(engine, conversationId, baseline)
    await engine.close()
  })

  it('incremental: one leaf pass, then condensation only up to incrementalMaxDepth', async () => {
    const { engine, conversationId, baseline } = await loaded(600, 5, { ...SMALL, incrementalMaxDepth: 1 })
    for (let i = 0; i < 12; i++) {
      const r = await engine.compact({ sessionId: 's', tokenBudget: 1_000_000, mode: 'incremental', force: true })
      expect(r.passes.filter((p) => p.kind === 'leaf').length).toBeLessThanOrEqual(1)
    }
    const report = await checkInvariants(engine, conversationId, baseline)
    expect(report.deepest).toBe(1)
    await engine.close()
  })

  it('afterTurn ingests messages.slice(prePromptMessageCount) and sweeps over the threshold', async () => {
    const { messages } = workload(400, 6)
    const engine = await LcmEngine.open({ dbPath: join(tempDir(), 'lcm.db'), ...SMALL })
    let transcript = []
    let compactedTurns = 0
    let conversationId
    for (const turn of turns(messages)) {
      const pre = transcript.length
      transcript = transcript.concat(turn)
      const r = await engine.afterTurn({ sessionId: 's', messages: transcript, prePromptMessageCount: pre, tokenBudget: 8000 })
      expect(r.ingest.ingestedCount).toBe(turn.length)
      conversationId = r.ingest.conversationId
      if (r.compaction.compacted) compactedTurns++
      else expect(['below threshold', 'nothing to compact']).toContain(r.compaction.reason)
    }
    expect(compactedTurns).toBeGreaterThan(0)
    expect((await engine.getStats(conversationId)).messageCount).toBe(400)
    expect((await engine.evaluate({ sessionId: 's', tokenBudget: 8000 })).currentTokens).toBeLessThan(12000)
    await checkInvariants(engine, conversationId)
    await engine.close()
  })
})

describe('failures, cancellation and concurrency', () => {
  it('a rejecting host callback mid-sweep stops with LCM_CALLBACK and no partial summary', async () => {
    const cb = callbackSummarizer({ failAt: 6 })
    const { engine, conversationId, baseline } = await loaded(600, 9, { ...SMALL, [CALLBACK_OPTION]: cb.fn })
    const { r } = await fullSweep(engine)
    expect(r.ok).toBe(false)
    expect(r.errorCode).toBe('LCM_CALLBACK')
    expect(r.reason).toContain('LCM_CALLBACK')
    expect(r.passes.length).toBe(5)
    expect((await engine.getStats(conversationId)).summaryCount).toBe(5)
    await checkInvariants(engine, conversationId, baseline)
    await engine.close()
  })

  it('a provider auth error (HTTP 401) stops with LCM_LLM_AUTH and writes nothing', async () => {
    let hits = 0
    const server = createServer((req, res) => {
      hits++
      req.resume()
      res.writeHead(401, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }))
    })
    await new Promise((r) => server.listen(0, '127.0.0.1', r))
    const url = `http://127.0.0.1:${server.address().port}`
    const { engine, conversationId } = await loaded(300, 10, { ...SMALL, summaryProvider: 'anthropic', summaryApiKey: 'bad', summaryBaseUrl: url })
    const { r } = await fullSweep(engine)
    server.close()
    expect(r).toMatchObject({ ok: false, compacted: false, errorCode: 'LCM_LLM_AUTH' })
    expect(hits).toBeGreaterThan(0)
    expect((await engine.getStats(conversationId)).summaryCount).toBe(0)
    await engine.close()
  })

  it('an AbortSignal stops between passes and keeps the finished ones', async () => {
    const cb = callbackSummarizer({ delayMs: 15 })
    const { engine, conversationId, baseline } = await loaded(600, 11, { ...SMALL, [CALLBACK_OPTION]: cb.fn })
    const ac = new AbortController()
    const r = await engine.compact({
      sessionId: 's', tokenBudget: 4000, mode: 'sweep', force: true, signal: ac.signal,
      onProgress: (p) => { if (p.kind === 'leaf') ac.abort() },
    })
    expect(r).toMatchObject({ ok: true, aborted: true, reason: 'aborted' })
    expect(r.passes.length).toBeGreaterThanOrEqual(1)
    expect(r.passes.length).toBeLessThanOrEqual(2)
    expect((await engine.getStats(conversationId)).summaryCount).toBe(r.passes.length)
    await checkInvariants(engine, conversationId, baseline)
    // An already-aborted signal does nothing at all.
    const pre = await engine.compact({ sessionId: 's', tokenBudget: 4000, force: true, signal: AbortSignal.abort() })
    expect(pre).toMatchObject({ aborted: true, compacted: false })
    await engine.close()
  })

  it('a throwing onProgress neither crashes the process nor stops the sweep', async () => {
    const { engine, conversationId, baseline } = await loaded(300, 15, SMALL)
    const uncaught = []
    const onUncaught = (e) => uncaught.push(e)
    process.on('uncaughtException', onUncaught)
    let calls = 0
    const r = await engine.compact({ sessionId: 's', tokenBudget: 4000, force: true, onProgress: () => { calls++; throw new Error('listener bug') } })
    await new Promise((res) => setTimeout(res, 50))
    process.off('uncaughtException', onUncaught)
    expect(r.ok && r.compacted).toBe(true)
    expect(calls).toBe(r.passes.length)
    expect(uncaught).toEqual([])
    await checkInvariants(engine, conversationId, baseline)
    await engine.close()
  })

  it('cancel(sessionId) right after compact() stops it at once', async () => {
    const { engine, conversationId, baseline } = await loaded(600, 12, SMALL)
    const pending = engine.compact({ sessionId: 's', tokenBudget: 4000, force: true })
    expect(engine.cancel('s')).toBe(1)
    const r = await pending
    expect(r).toMatchObject({ ok: true, aborted: true, reason: 'aborted' })
    // The call is already running when cancel() returns; at most the pass whose
    // write was already queued lands, and nothing after it.
    expect(r.passes.length).toBeLessThanOrEqual(1)
    expect((await engine.getStats(conversationId)).summaryCount).toBe(r.passes.length)
    expect(engine.cancel('s')).toBe(0)
    await checkInvariants(engine, conversationId, baseline)
    await engine.close()
  })

  it('two concurrent compactions of one conversation never interleave passes; ingest is not blocked', async () => {
    const { engine, conversationId, baseline } = await loaded(1000, 13, SMALL)
    const order = []
    const done = {}
    const a = engine.compact({ sessionId: 's', tokenBudget: 4000, force: true, onProgress: () => order.push('a') }).then((r) => ((done.a = Date.now()), r))
    const b = engine.compact({ sessionId: 's', tokenBudget: 4000, force: true, mode: 'incremental', onProgress: () => order.push('b') }).then((r) => ((done.b = Date.now()), r))
    await engine.ingest({ sessionId: 's', message: { role: 'user', content: 'arrives mid-compaction', timestamp: Date.now() } })
    done.ingest = Date.now()
    const [ra, rb] = await Promise.all([a, b])
    await new Promise((res) => setTimeout(res, 20))
    expect(ra.ok && rb.ok).toBe(true)
    expect(ra.passes.length + rb.passes.length).toBeGreaterThan(5)
    // Whichever took the conversation's lock first ran all its passes before the other's.
    const seq = order.join('')
    const aFirst = 'a'.repeat(ra.passes.length) + 'b'.repeat(rb.passes.length)
    const bFirst = 'b'.repeat(rb.passes.length) + 'a'.repeat(ra.passes.length)
    expect([aFirst, bFirst]).toContain(seq)
    // The ingest did not wait for the compactions (no LLM call or lock in its path).
    expect(done.ingest).toBeLessThan(Math.max(done.a, done.b))
    const stats = await engine.getStats(conversationId)
    expect(stats.summaryCount).toBe(ra.passes.length + rb.passes.length)
    expect(stats.messageCount).toBe(1001)
    await checkInvariants(engine, conversationId, baseline)
    await engine.close()
  })
})

describe('crash safety', () => {
  it('SIGKILL during a sweep leaves a database that opens, passes integrity_check and every invariant', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'lcm.db')
    const { messages } = workload(2000, 14)
    const seed = await LcmEngine.open({ dbPath, ...SMALL })
    let conversationId
    for (const turn of turns(messages)) conversationId = (await seed.ingestBatch({ sessionId: 'crash', messages: turn })).conversationId
    const baseline = await captureBaseline(seed, conversationId)
    await seed.close()

    const child = spawn(process.execPath, [join(root, '__test__', 'fixtures', 'sweep-child.mjs'), dbPath, JSON.stringify(SMALL)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let passes = 0
    let finished = false
    await new Promise((resolve) => {
      child.stdout.on('data', (d) => {
        for (const line of String(d).split('\n')) {
          if (line.startsWith('pass ')) passes++
          if (line.startsWith('done')) finished = true
          if (passes >= 7 && !child.killed) child.kill('SIGKILL')
        }
      })
      child.on('exit', resolve)
    })
    expect(finished).toBe(false)
    expect(passes).toBeGreaterThanOrEqual(7)

    const after = await LcmEngine.open({ dbPath, ...SMALL })
    expect(await after.integrityCheck()).toEqual(['ok'])
    const report = await checkInvariants(after, conversationId, baseline)
    expect(report.summaries).toBeGreaterThanOrEqual(7)
    // The interrupted sweep can simply be resumed.
    const r = await after.compact({ sessionId: 'crash', tokenBudget: 1000, force: true })
    expect(r.ok).toBe(true)
    await checkInvariants(after, conversationId, baseline)
    await after.close()
  })
})
