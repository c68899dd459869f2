import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest'
import { createServer } from 'node:http'
import { LcmEngine, addon, tempDir, workload, rejectsWithCode } from './helpers.mjs'

const { formatTimestamp } = addon

/** ~600 tokens of realistic source text with `[timestamp] [role]` headers. */
const SOURCE = [
  '[2026-02-17 09:00 UTC] [user]\nWe need to migrate the billing service from MySQL to Postgres before the March 3 deadline.',
  '[2026-02-17 09:05 UTC] [assistant]\nI created migrations/001_init.sql with the Postgres DDL and changed amount_cents to BIGINT.',
  '[2026-02-17 09:08 UTC] [tool]\nERROR: relation "customers" does not exist (SQLSTATE 42P01)',
  '[2026-02-17 09:10 UTC] [assistant]\nThe migration failed because invoices references customers before it is created; I reordered the statements.',
  ...Array.from({ length: 12 }, (_, i) => `[2026-02-17 09:${20 + i} UTC] [assistant]\nStep ${i}: checked the export job output, everything looked consistent with the previous run and nothing changed.`),
].join('\n\n')
const SOURCE_TOKENS = Math.ceil(SOURCE.length / 4)
/** The leaf targets for SOURCE (anchor-core §5.2, HEAD). */
const LEAF_TARGET = Math.min(2400, Math.max(192, Math.floor((SOURCE_TOKENS * 35) / 100)))
const LEAF_AGGRESSIVE_TARGET = Math.max(96, Math.min(1320, Math.floor(SOURCE_TOKENS / 5)))
const GOOD = 'Billing moves from MySQL to Postgres by March 3; migrations/001_init.sql fixed (42P01, statement order).\nExpand for details about: export job checks'
const LONG = 'padding words that make this answer long '.repeat(120)
const emptyDir = () => tempDir('lcm-prompts-')

function open(extra) {
  return LcmEngine.open({ dbPath: ':memory:', promptDir: emptyDir(), ...extra })
}

// ── host callback ────────────────────────────────────────────────────────────

describe('host callback summarizer', () => {
  it('resolves with a string or { content, model } and sees the full request', async () => {
    const seen = []
    const e = await open({
      summaryModel: 'hint-model',
      summarizer: async (req) => {
        seen.push(req)
        return req.depth === 0 ? GOOD : { content: `condensed ${req.depth}`, model: 'host-model-1' }
      },
    })
    const leaf = await e.summarizeText({ depth: 0, sourceText: SOURCE })
    expect(leaf).toEqual({ content: GOOD, level: 'normal', model: 'hint-model', tokensIn: SOURCE_TOKENS, tokensOut: Math.ceil(GOOD.length / 4) })
    const cond = await e.summarizeText({ depth: 3, sourceText: SOURCE, timeRange: '2026-02-17 09:00–09:31 UTC' })
    expect(cond).toMatchObject({ content: 'condensed 3', level: 'normal', model: 'host-model-1' })
    expect(seen).toHaveLength(2)
    const [r0, r1] = seen
    expect(Object.keys(r0).sort()).toEqual(['aggressive', 'depth', 'model', 'prompt', 'sourceText', 'systemPrompt', 'targetTokens'])
    expect(r0).toMatchObject({ depth: 0, aggressive: false, model: 'hint-model', sourceText: SOURCE, targetTokens: LEAF_TARGET })
    expect(r0.prompt).toContain(`<conversation_segment>\n${SOURCE}\n</conversation_segment>`)
    expect(r1.targetTokens).toBe(2000)
    expect(r1.prompt).toContain('<conversation_to_condense>')
    expect(r1.prompt).toContain('covering 2026-02-17 09:00–09:31 UTC')
    await e.close()
  })

  it('accepts a synchronous return', async () => {
    const e = await open({ summarizer: () => ({ content: 'sync summary' }) })
    expect(await e.summarizeText({ sourceText: SOURCE })).toMatchObject({ content: 'sync summary', level: 'normal', model: 'host-callback' })
  })

  it('turns a rejection, a synchronous throw and wrong return types into LCM_CALLBACK', async () => {
    const cases = [
      [async () => { throw new Error('provider down') }, /rejected: provider down/],
      [() => { throw new TypeError('sync boom') }, /threw: sync boom/],
      [() => 42, /got a number/],
      [async () => ({ text: 'no content field' }), /without a string `content`/],
      [async () => ({ content: 7 }), /without a string `content`/],
      [() => undefined, /without a JSON form/],
      [async () => null, /got null/],
      [() => Promise.reject('a bare string'), /rejected/],
    ]
    for (const [summarizer, message] of cases) {
      const e = await open({ summarizer })
      const err = await rejectsWithCode(e.summarizeText({ sourceText: SOURCE }), 'LCM_CALLBACK')
      expect(err.message).toMatch(message)
      await e.close()
    }
  })

  it('fails a callback that never settles after summaryTimeoutMs', async () => {
    const e = await open({ summaryTimeoutMs: 150, summarizer: () => new Promise(() => {}) })
    const t0 = Date.now()
    const err = await rejectsWithCode(e.summarizeText({ sourceText: SOURCE }), 'LCM_CALLBACK')
    // Either the timeout fires, or the unreachable Promise is collected first.
    expect(err.message).toMatch(/did not settle within 150 ms|never settled/)
    expect(Date.now() - t0).toBeLessThan(5000)
  })

  it('rejects a non-function summarizer option', async () => {
    await rejectsWithCode(open({ summarizer: 'gpt' }), 'LCM_INVALID_INPUT')
  })
})

// ── escalation ───────────────────────────────────────────────────────────────

/** An engine whose callback plays back `answers` and records requests. */
async function scripted(answers, extra = {}) {
  const calls = []
  const e = await open({
    ...extra,
    summarizer: (req) => {
      calls.push(req)
      const next = answers.shift()
      if (next === undefined) throw new Error('script exhausted')
      return next
    },
  })
  return { e, calls }
}

describe('escalation', () => {
  it('retries with the aggressive prompt when the summary is not smaller', async () => {
    const { e, calls } = await scripted([LONG, GOOD])
    const out = await e.summarizeText({ sourceText: SOURCE })
    expect(out.level).toBe('aggressive')
    expect(out.content).toBe(GOOD)
    expect(calls.map((c) => c.aggressive)).toEqual([false, true])
    expect(calls[1].prompt).toContain('strict: a previous attempt was too long')
    expect(calls[1].targetTokens).toBe(LEAF_AGGRESSIVE_TARGET)
  })

  it('falls back to deterministic truncation with the exact marker at the end', async () => {
    const { e, calls } = await scripted([LONG, LONG], { fallbackMaxTokens: 100 })
    const out = await e.summarizeText({ sourceText: SOURCE })
    expect(calls).toHaveLength(2)
    expect(out.level).toBe('fallback')
    expect(out.model).toBe('deterministic')
    expect(out.content.endsWith(`\n[Truncated from ${SOURCE_TOKENS} tokens]`)).toBe(true)
    expect(out.content.startsWith('[2026-02-17 09:00 UTC] [user]')).toBe(true)
    expect(out.tokensOut).toBeLessThanOrEqual(100)
  })

  it('retries empty output once, then falls back', async () => {
    let { e, calls } = await scripted(['   ', GOOD])
    expect((await e.summarizeText({ sourceText: SOURCE })).level).toBe('normal')
    expect(calls).toHaveLength(2)
    ;({ e, calls } = await scripted(['', '<think>only reasoning</think>']))
    const out = await e.summarizeText({ sourceText: SOURCE })
    expect(calls).toHaveLength(2)
    expect(out.level).toBe('fallback')
    expect(out.content).not.toContain('only reasoning')
  })

  it('caps an over-long summary with the capped level', async () => {
    const { e } = await scripted(['word '.repeat(900)], { condensedTargetTokens: 512, summaryMaxOverageFactor: 1 })
    const out = await e.summarizeText({ depth: 1, sourceText: SOURCE.repeat(4) })
    expect(out.level).toBe('capped')
    expect(out.tokensOut).toBeLessThanOrEqual(512)
    expect(out.content).toMatch(/\n\[Capped from 1125 tokens to ~512\]$/)
  })

  it('validates parameters and refuses to run on a closed engine', async () => {
    const { e, calls } = await scripted([GOOD])
    await rejectsWithCode(e.summarizeText({ depth: -1, sourceText: SOURCE }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(e.summarizeText({ sourceTxt: SOURCE }), 'LCM_INVALID_INPUT')
    await e.close()
    await rejectsWithCode(e.summarizeText({ sourceText: SOURCE }), 'LCM_CLOSED')
    expect(calls).toHaveLength(0)
  })

  it('marks an empty source as a fallback without calling the summarizer', async () => {
    const { e, calls } = await scripted([])
    expect(await e.summarizeText({ sourceText: '  \n ' })).toMatchObject({ content: '[Truncated from 0 tokens]', level: 'fallback' })
    expect(calls).toHaveLength(0)
  })
})

// ── offline summarizer ───────────────────────────────────────────────────────

describe('offline extractive summarizer (default)', () => {
  function leafSource(messages) {
    const text = (m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((b) => b.text ?? '').join('\n'))
    return messages
      .filter((m) => text(m).trim())
      .map((m) => `[${formatTimestamp(m.timestamp ?? 0, 'UTC')}] [${m.role}]\n${text(m).trim()}`)
      .join('\n\n')
  }

  it('is used when nothing is configured: deterministic, smaller, with a footer', async () => {
    const { messages } = workload(60, 7)
    const sourceText = leafSource(messages)
    const a = await open({})
    const b = await open({})
    const r1 = await a.summarizeText({ sourceText })
    const r2 = await b.summarizeText({ sourceText })
    expect(r1).toEqual(r2)
    expect(r1.model).toBe('lcm-offline-extractive')
    expect(r1.level).toBe('normal')
    expect(r1.tokensOut).toBeLessThan(r1.tokensIn)
    const lines = r1.content.split('\n')
    expect(lines.at(-1)).toMatch(/^Expand for details about: .+/)
    expect(lines[0]).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d UTC\] \[\w+\]$/)
    expect((await a.summarizeText({ depth: 2, sourceText: r1.content.repeat(3) })).level).toBe('normal')
  })

  it('keeps identifiers, paths, numbers and errors', async () => {
    const e = await open({ summaryProvider: 'offline' })
    const out = await e.summarizeText({ sourceText: SOURCE })
    for (const needle of ['March 3', 'migrations/001_init.sql', '42P01', '[2026-02-17 09:00 UTC] [user]']) expect(out.content).toContain(needle)
    expect(out.tokensOut).toBeLessThanOrEqual(LEAF_TARGET)
  })
})

// ── HTTP providers against a local server ────────────────────────────────────

/** A local server speaking the three wire formats; each request takes the next scripted reply. */
function mockServer() {
  const state = { replies: [], requests: [] }
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      state.requests.push({ method: req.method, url: req.url, headers: req.headers, body: body ? JSON.parse(body) : null, at: Date.now() })
      const reply = state.replies.length > 1 ? state.replies.shift() : state.replies[0]
      if (!reply || reply.hang) return // never answer: the client times out
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...(reply.headers ?? {}) })
      res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body))
    })
  })
  return { server, state }
}

const ok = (body) => ({ status: 200, body })
const WIRE = {
  anthropic: {
    path: '/v1/messages',
    good: (text) => ok({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [{ type: 'thinking', thinking: 'SECRET-REASONING', signature: 's' }, { type: 'text', text }], stop_reason: 'end_turn' }),
    empty: () => ok({ id: 'msg_2', type: 'message', model: 'claude-test', content: [], stop_reason: 'end_turn' }),
    reasoningOnly: () => ok({ id: 'msg_3', type: 'message', model: 'claude-test', content: [{ type: 'thinking', thinking: 'SECRET-REASONING', signature: 's' }], stop_reason: 'max_tokens' }),
    model: 'claude-test',
  },
  openai: {
    path: '/v1/chat/completions',
    good: (text) => ok({ id: 'c1', object: 'chat.completion', model: 'gpt-test', choices: [{ index: 0, message: { role: 'assistant', content: text, reasoning_content: 'SECRET-REASONING' }, finish_reason: 'stop' }] }),
    empty: () => ok({ id: 'c2', object: 'chat.completion', model: 'gpt-test', choices: [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'stop' }] }),
    reasoningOnly: () => ok({ id: 'c3', object: 'chat.completion', model: 'gpt-test', choices: [{ index: 0, message: { role: 'assistant', content: '<think>SECRET-REASONING</think>', reasoning_content: 'SECRET-REASONING' }, finish_reason: 'length' }] }),
    model: 'gpt-test',
  },
  'openai-responses': {
    path: '/v1/responses',
    good: (text) => ok({ id: 'r1', object: 'response', model: 'gpt-resp', status: 'completed', output: [{ type: 'reasoning', summary: [{ type: 'summary_text', text: 'SECRET-REASONING' }] }, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }] }),
    empty: () => ok({ id: 'r2', object: 'response', model: 'gpt-resp', status: 'completed', output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: '' }] }] }),
    reasoningOnly: () => ok({ id: 'r3', object: 'response', model: 'gpt-resp', status: 'incomplete', output: [{ type: 'reasoning', summary: [{ type: 'summary_text', text: 'SECRET-REASONING' }] }] }),
    model: 'gpt-resp',
  },
}

describe.each(Object.keys(WIRE))('%s provider over HTTP', (provider) => {
  const wire = WIRE[provider]
  const { server, state } = mockServer()
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
    state.replies = []
    state.requests = []
  })

  const engine = (extra = {}) =>
    open({
      summaryProvider: provider,
      summaryBaseUrl: baseUrl,
      summaryApiKey: 'test-key-123',
      summaryModel: 'model-x',
      summaryTimeoutMs: 2000,
      summaryMaxRetries: 2,
      summaryRetryBaseMs: 10,
      summaryRetryMaxWaitMs: 1000,
      ...extra,
    })

  it('a good summary: normal level, the answer model, reasoning dropped, well-formed request', async () => {
    state.replies = [wire.good(GOOD)]
    const e = await engine()
    const out = await e.summarizeText({ sourceText: SOURCE })
    expect(out).toMatchObject({ content: GOOD, level: 'normal', model: wire.model })
    expect(out.content).not.toContain('SECRET')
    expect(state.requests).toHaveLength(1)
    const [r] = state.requests
    expect(r.method).toBe('POST')
    expect(r.url).toBe(wire.path)
    expect(r.body.model).toBe('model-x')
    expect(r.body).not.toHaveProperty('temperature')
    if (provider === 'anthropic') {
      expect(r.headers['x-api-key']).toBe('test-key-123')
      expect(r.headers['anthropic-version']).toBe('2023-06-01')
      expect(r.body.system).toMatch(/summar/i)
      expect(r.body.messages).toEqual([{ role: 'user', content: expect.stringContaining('<conversation_segment>') }])
      expect(r.body.max_tokens).toBe(LEAF_TARGET * 2 + 512)
    } else if (provider === 'openai') {
      expect(r.headers.authorization).toBe('Bearer test-key-123')
      expect(r.body.messages.map((m) => m.role)).toEqual(['system', 'user'])
      expect(r.body.max_tokens).toBe(LEAF_TARGET * 2 + 512)
    } else {
      expect(r.headers.authorization).toBe('Bearer test-key-123')
      expect(r.body.instructions).toMatch(/summar/i)
      expect(r.body.input).toContain('<conversation_segment>')
      expect(r.body.max_output_tokens).toBe(LEAF_TARGET * 2 + 512)
    }
  })

  it('429 with retry-after: waits as told, retries, then succeeds', async () => {
    state.replies = [{ status: 429, headers: { 'retry-after-ms': '250' }, body: { error: { type: 'rate_limit_error', message: 'slow down' } } }, wire.good(GOOD)]
    const e = await engine()
    const out = await e.summarizeText({ sourceText: SOURCE })
    expect(out.level).toBe('normal')
    expect(state.requests).toHaveLength(2)
    expect(state.requests[1].at - state.requests[0].at).toBeGreaterThanOrEqual(240)
  })

  it('429 with a long retry-after is capped by summaryRetryMaxWaitMs; persistent 429 is LCM_LLM_RATE_LIMIT', async () => {
    state.replies = [{ status: 429, headers: { 'retry-after': '3600' }, body: { error: { message: 'quota' } } }]
    const e = await engine({ summaryRetryMaxWaitMs: 50, summaryMaxRetries: 2 })
    const t0 = Date.now()
    const err = await rejectsWithCode(e.summarizeText({ sourceText: SOURCE }), 'LCM_LLM_RATE_LIMIT')
    expect(Date.now() - t0).toBeLessThan(3000)
    expect(state.requests).toHaveLength(3)
    expect(err.message).toMatch(/HTTP 429: quota/)
    expect(err.message).toMatch(/3 attempts/)
  })

  it('500: retried with backoff, then succeeds; persistent 5xx is LCM_LLM_TRANSIENT', async () => {
    state.replies = [{ status: 500, body: { error: { message: 'internal' } } }, { status: 503, body: 'upstream unavailable' }, wire.good(GOOD)]
    const e = await engine()
    expect((await e.summarizeText({ sourceText: SOURCE })).level).toBe('normal')
    expect(state.requests).toHaveLength(3)

    state.requests = []
    state.replies = [{ status: 500, body: { error: { message: 'still broken' } } }]
    const err = await rejectsWithCode(e.summarizeText({ sourceText: SOURCE }), 'LCM_LLM_TRANSIENT')
    expect(err.message).toMatch(/HTTP 500: still broken/)
    expect(state.requests).toHaveLength(3)
  })

  it('a timeout is retried and surfaces as LCM_LLM_TRANSIENT', async () => {
    state.replies = [{ hang: true }]
    const e = await engine({ summaryTimeoutMs: 200, summaryMaxRetries: 1 })
    const t0 = Date.now()
    const err = await rejectsWithCode(e.summarizeText({ sourceText: SOURCE }), 'LCM_LLM_TRANSIENT')
    expect(err.message).toMatch(/timed out after 200 ms/)
    expect(state.requests).toHaveLength(2)
    expect(Date.now() - t0).toBeGreaterThanOrEqual(380)
  })

  it('a timeout then a good answer succeeds', async () => {
    state.replies = [{ hang: true }, wire.good(GOOD)]
    const e = await engine({ summaryTimeoutMs: 200 })
    expect((await e.summarizeText({ sourceText: SOURCE })).level).toBe('normal')
    expect(state.requests).toHaveLength(2)
  })

  it('malformed JSON is LCM_LLM_BAD_RESPONSE without retries', async () => {
    state.replies = [{ status: 200, body: '{"content": [ this is not json' }]
    const e = await engine()
    const err = await rejectsWithCode(e.summarizeText({ sourceText: SOURCE }), 'LCM_LLM_BAD_RESPONSE')
    expect(err.message).toMatch(/malformed JSON/)
    expect(state.requests).toHaveLength(1)
  })

  it('empty content is retried once, then the deterministic fallback is used', async () => {
    state.replies = [wire.empty()]
    const e = await engine()
    const out = await e.summarizeText({ sourceText: SOURCE })
    expect(state.requests).toHaveLength(2)
    expect(out.level).toBe('fallback')
    expect(out.content.endsWith(`[Truncated from ${SOURCE_TOKENS} tokens]`)).toBe(true)
  })

  it('reasoning-only content counts as empty and never becomes summary text', async () => {
    state.replies = [wire.reasoningOnly(), wire.good(GOOD)]
    const e = await engine()
    const out = await e.summarizeText({ sourceText: SOURCE })
    expect(state.requests).toHaveLength(2)
    expect(out).toMatchObject({ level: 'normal', content: GOOD })

    state.requests = []
    state.replies = [wire.reasoningOnly()]
    const fb = await e.summarizeText({ sourceText: SOURCE })
    expect(state.requests).toHaveLength(2)
    expect(fb.level).toBe('fallback')
    expect(fb.content).not.toContain('SECRET')
  })

  it('401 is LCM_LLM_AUTH immediately: no retries, no summary', async () => {
    state.replies = [{ status: 401, body: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } } }]
    const e = await engine()
    const err = await rejectsWithCode(e.summarizeText({ sourceText: SOURCE }), 'LCM_LLM_AUTH')
    expect(err.message).toMatch(/invalid x-api-key/)
    expect(state.requests).toHaveLength(1)
  })

  it('escalates to the aggressive prompt over HTTP too', async () => {
    state.replies = [wire.good(LONG), wire.good(GOOD)]
    const e = await engine()
    const out = await e.summarizeText({ sourceText: SOURCE })
    expect(out.level).toBe('aggressive')
    const prompts = state.requests.map((r) => (provider === 'openai-responses' ? r.body.input : r.body.messages.at(-1).content))
    expect(prompts[0]).not.toContain('strict')
    expect(prompts[1]).toContain('strict: a previous attempt was too long')
  })
})

describe('provider configuration', () => {
  it('reports configuration problems at open with LCM_CONFIG', async () => {
    await rejectsWithCode(open({ summaryProvider: 'gemini' }), 'LCM_CONFIG')
    await rejectsWithCode(open({ summaryProvider: 'openai', summaryBaseUrl: 'http://127.0.0.1:9/v1' }), 'LCM_CONFIG')
    await rejectsWithCode(open({ summaryBaseUrl: 'localhost:11434', summaryModel: 'llama3' }), 'LCM_CONFIG')
    await rejectsWithCode(open({ summaryMaxOverageFactor: 0.5 }), 'LCM_INVALID_INPUT')
  })

  it('a connection refused is transient', async () => {
    const srv = createServer()
    await new Promise((r) => srv.listen(0, '127.0.0.1', r))
    const port = srv.address().port
    await new Promise((r) => srv.close(r))
    const e = await open({ summaryBaseUrl: `http://127.0.0.1:${port}/v1`, summaryModel: 'llama3', summaryMaxRetries: 1, summaryRetryBaseMs: 10 })
    await rejectsWithCode(e.summarizeText({ sourceText: SOURCE }), 'LCM_LLM_TRANSIENT')
  })
})
