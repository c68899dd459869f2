// Issue 63: what compaction costs. The summary spend guard defers and says so, the
// fallback chain moves past an overloaded model (built-in providers and the host
// LLM, each against a loopback server answering 529 then 200), a manual /compact
// runs while the automatic breaker is open, and summarizer calls and tokens are
// counted per session.
import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest'
import { createServer } from 'node:http'
import { createContextEngine, resolveConfig } from '../openclaw/index.mjs'
import { fakeLlm, freshConfig, conversation } from './openclaw-fixture.mjs'
import { LcmEngine } from './helpers.mjs'

const S = { sessionId: 'sess-cost', sessionKey: 'agent:main:cost' }

async function openEngine(config = {}, options = {}) {
  const engine = createContextEngine({ config: freshConfig(config), env: {}, logger: { warn() {}, info() {}, error() {} }, ...options })
  await engine.ready
  return engine
}

async function stats(engine) {
  const lcm = await engine.handle.use()
  const conv = await lcm.getConversation({ sessionKey: S.sessionKey })
  return lcm.getStats(conv.conversationId)
}

/** A loopback OpenAI-compatible server: 529 (overloaded) for `overloaded` models, a summary for the others. */
function loopback(overloaded) {
  const seen = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      const model = JSON.parse(body).model
      seen.push(model)
      if (overloaded.includes(model)) {
        res.writeHead(529, { 'content-type': 'application/json' })
        return res.end(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }))
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', model, choices: [{ index: 0, message: { role: 'assistant', content: `short summary by ${model}` }, finish_reason: 'stop' }] }))
    })
  })
  return { server, seen }
}

describe('summary spend guard', () => {
  it('past the allowance automatic compaction defers and reports it, writing nothing; a manual /compact runs', async () => {
    let t = 1_000_000
    const llm = fakeLlm()
    const engine = await openEngine({ summaryMaxCallsPerWindow: 2, summaryCallWindowMs: 60_000, summarySpendBackoffMs: 600_000 }, { llm, now: () => t })
    await engine.ingestBatch({ ...S, messages: conversation(30, 80) })
    const first = await engine.maintain({ ...S, tokenBudget: 1500 })
    expect(first.reason).toMatch(/^lcm store: /)
    expect(llm.calls.length).toBeGreaterThanOrEqual(2)
    const before = await stats(engine)
    expect(before.summaryCount).toBeGreaterThan(0)
    // Counted per session, as the engine's stats.
    expect(before.summarizerCalls).toBe(llm.calls.length)
    expect(before.summarizerInputTokens).toBeGreaterThan(0)
    expect(before.summarizerOutputTokens).toBeGreaterThan(0)
    await engine.ingestBatch({ ...S, messages: conversation(30, 80, 'later') })
    const calls = llm.calls.length
    const deferred = await engine.maintain({ ...S, tokenBudget: 1500 })
    expect(deferred.reason).toMatch(/deferred: summary spend guard .*allowance 2.*resumes in 10 min/)
    expect(llm.calls.length).toBe(calls)
    const during = await stats(engine)
    expect(during.summaryCount).toBe(before.summaryCount)
    // Still deferred later in the backoff; over once it has passed.
    t += 599_000
    expect((await engine.maintain({ ...S, tokenBudget: 1500 })).reason).toMatch(/deferred/)
    // A manual /compact runs during the backoff and ends it.
    t -= 300_000
    const manual = await engine.compact({ ...S, tokenBudget: 1500, force: true })
    expect(manual.compacted).toBe(true)
    expect(manual.result.details.summarizer.calls).toBeGreaterThan(0)
    expect(llm.calls.length).toBeGreaterThan(calls)
    expect((await stats(engine)).summarizerCalls).toBe(llm.calls.length)
    await engine.dispose()
  })

  it('the reference keys resolve, from config and environment', () => {
    const cfg = resolveConfig({ summaryMaxCallsPerWindow: 5, fallbackProviders: [{ provider: 'openai', model: 'gpt-x' }] }, { LCM_SUMMARY_SPEND_BACKOFF_MS: '1000' })
    expect(cfg).toMatchObject({ summaryCallWindowMs: 600_000, summaryMaxCallsPerWindow: 5, summarySpendBackoffMs: 1000 })
    expect(cfg.engineOptions.fallbackProviders).toEqual([{ provider: 'openai', model: 'gpt-x' }])
    const env = resolveConfig({}, { LCM_FALLBACK_PROVIDERS: 'anthropic/claude-x, openai/gpt-y' })
    expect(env.fallbackProviders).toEqual([{ provider: 'anthropic', model: 'claude-x' }, { provider: 'openai', model: 'gpt-y' }])
    expect(resolveConfig({ fallbackProviders: 'no-slash' }, {}).warnings).toEqual(['config fallbackProviders: expected [{provider, model}] or provider/model strings, ignored'])
    const cache = resolveConfig({ cacheAwareCompaction: { cacheTTLSeconds: 3600, hotCachePressureFactor: 4, bogus: 1 } }, {})
    expect(cache.cacheAwareCompaction).toMatchObject({ enabled: true, cacheTTLSeconds: 3600, hotCachePressureFactor: 4 })
    expect(cache.warnings).toEqual([
      'config cacheAwareCompaction.bogus: unknown key, ignored',
      expect.stringMatching(/^config cacheAwareCompaction\.hotCachePressureFactor: accepted for lossless-claw compatibility, no effect in lcm-native \(.+\)$/),
    ])
  })
})

describe('fallbackProviders against a loopback server answering 529, then 200', () => {
  const { server, seen } = loopback(['primary-model', 'loop/primary-model'])
  let baseUrl
  beforeAll(async () => {
    await new Promise((r) => server.listen(0, '127.0.0.1', r))
    baseUrl = `http://127.0.0.1:${server.address().port}/v1`
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  })
  beforeEach(() => {
    seen.length = 0
  })

  it('a built-in provider moves to the next candidate on overload', async () => {
    const e = await LcmEngine.open({
      dbPath: ':memory:',
      summaryProvider: 'openai',
      summaryBaseUrl: baseUrl,
      summaryApiKey: 'k',
      summaryModel: 'primary-model',
      summaryMaxRetries: 0,
      fallbackProviders: [{ provider: 'openai', model: 'backup-model' }],
    })
    const out = await e.summarizeText({ sourceText: `[2026-01-01 10:00] user: ${'a long message about the deployment plan '.repeat(40)}` })
    expect(out.model).toBe('backup-model')
    expect(out.content).toBe('short summary by backup-model')
    expect(seen).toEqual(['primary-model', 'backup-model'])
    await e.close()
  })

  it('without a fallback the overload is the answer (nothing written)', async () => {
    const e = await LcmEngine.open({ dbPath: ':memory:', summaryProvider: 'openai', summaryBaseUrl: baseUrl, summaryApiKey: 'k', summaryModel: 'primary-model', summaryMaxRetries: 0 })
    await expect(e.summarizeText({ sourceText: 'some text to summarize' })).rejects.toMatchObject({ code: 'LCM_LLM_TRANSIENT' })
    expect(seen).toEqual(['primary-model'])
    await e.close()
  })

  it('the host LLM tries the fallback models in order', async () => {
    const llm = {
      calls: [],
      async complete(params) {
        this.calls.push(params.model)
        const r = await fetch(`${baseUrl}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: params.model ?? 'primary-model' }) })
        if (!r.ok) throw Object.assign(new Error(`provider answered ${r.status}`), { status: r.status })
        const body = await r.json()
        return { text: body.choices[0].message.content, model: body.model, provider: 'loopback' }
      },
    }
    const engine = await openEngine({ summaryModel: 'loop/primary-model', fallbackProviders: [{ provider: 'loop', model: 'backup-model' }] }, { llm })
    await engine.ingestBatch({ ...S, messages: conversation(20, 60) })
    const r = await engine.compact({ ...S, tokenBudget: 1500, force: true })
    expect(r.compacted).toBe(true)
    expect(llm.calls.slice(0, 2)).toEqual(['loop/primary-model', 'loop/backup-model'])
    expect(seen.slice(0, 2)).toEqual(['loop/primary-model', 'loop/backup-model'])
    await engine.dispose()
  })
})

describe('the auth breaker', () => {
  it('blocks automatic compaction only: a manual /compact runs while it is open', async () => {
    let fail = true
    const llm = fakeLlm({ answer: () => { if (fail) throw Object.assign(new Error('401 Unauthorized'), { status: 401 }); return 'short summary' } })
    const engine = await openEngine({ circuitBreakerThreshold: 1 }, { llm })
    await engine.ingestBatch({ ...S, messages: conversation(20, 60) })
    const refused = await engine.compact({ ...S, tokenBudget: 1500, force: true })
    expect(refused.ok).toBe(false)
    expect(engine.handle.breaker.isOpen()).toBe(true)
    const calls = llm.calls.length
    expect((await engine.maintain({ ...S, tokenBudget: 1500 })).reason).toMatch(/circuit breaker open/)
    expect(llm.calls.length).toBe(calls)
    fail = false
    const manual = await engine.compact({ ...S, tokenBudget: 1500, force: true })
    expect(manual.compacted).toBe(true)
    expect(llm.calls.length).toBeGreaterThan(calls)
    await engine.dispose()
  })
})
