// largeFileSummaryModel: a model-written exploration summary replaces the
// deterministic one of an externalized file, off the writer (engine call
// `summarizeLargeFiles`, run by the plugin's `maintain`); the deterministic one
// stays when the model fails or none is configured.
import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { LcmEngine, tempDir } from './helpers.mjs'
import { register, ENGINE_ID } from '../openclaw/index.mjs'
import { fakeApi, fakeLlm, freshConfig } from './openclaw-fixture.mjs'

const THRESHOLD = 2000
const MODEL_TEXT = 'Inventory export of 300 rows; fields id, name, tags, ok. Quokkafield marks the audit rows.'

function bigJson(n) {
  const rows = Array.from({ length: n }, (_, i) => ({ id: i, name: `item-${i}`, tags: ['a', 'β', '漢'], ok: i % 2 === 0 }))
  return JSON.stringify({ kind: 'inventory', rows }, null, 2)
}

const FILE_MESSAGE = { role: 'user', content: `Here:\n<file name="exports/inventory.json" mime="application/json">${bigJson(300)}</file>\nCheck it.`, timestamp: Date.UTC(2026, 2, 1) }
const TOOL_MESSAGE = { role: 'toolResult', toolCallId: 'c1', toolName: 'exec', content: [{ type: 'text', text: 'build log line with details\n'.repeat(600) }], isError: false, timestamp: Date.UTC(2026, 2, 1, 0, 1) }

/** An OpenAI-compatible loopback server: each request takes the next scripted reply. */
function modelServer() {
  const state = { replies: [], requests: [] }
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      state.requests.push(JSON.parse(body))
      const next = state.replies.length > 1 ? state.replies.shift() : state.replies[0]
      const reply = typeof next === 'function' ? next(state.requests.at(-1)) : next
      if (!reply) return res.writeHead(500).end('{}')
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(reply.body ?? {}))
    })
  })
  return { server, state }
}

const answer = (text) => ({ status: 200, body: { id: 'c1', object: 'chat.completion', model: 'gpt-large', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }] } })

const fileIdsOf = (text) => [...text.matchAll(/\[LCM (?:File|Tool Output): (file_[0-9a-f]{16})/g)].map((m) => m[1])

describe('summarizeLargeFiles with a model over HTTP', () => {
  const { server, state } = modelServer()
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

  async function open(extra = {}) {
    const dir = tempDir()
    return LcmEngine.open({
      dbPath: join(dir, 'lcm.db'),
      largeFilesDir: join(dir, 'files'),
      largeFileTokenThreshold: THRESHOLD,
      summaryProvider: 'offline',
      summaryBaseUrl: baseUrl,
      summaryMaxRetries: 0,
      ...extra,
    })
  }

  it('replaces the summary in the row and the reference text; getMessages stays byte-exact', async () => {
    const e = await open({ largeFileSummaryModel: 'openai/gpt-large' })
    const r = await e.ingestBatch({ sessionId: 'lf', messages: [FILE_MESSAGE, TOOL_MESSAGE] })
    const conv = r.conversationId
    const before = await e.getMessages(conv, { expandFiles: false })
    const [fileId] = fileIdsOf(before[0].content)
    const deterministic = (await e.describe(fileId)).file.explorationSummary
    expect(before[0].content).toContain(`Exploration Summary:\n${deterministic}`)

    // The recall catalog is built and has seen the deterministic text.
    await e.warmRecallIndex()
    expect((await e.grep({ pattern: 'Quokkafield', mode: 'regex', conversationId: conv })).messages.length).toBe(0)
    const promptOf = (body) => body.messages.map((m) => m.content).join('\n')
    state.replies = [(body) => (promptOf(body).includes('inventory.json') ? answer(`<think>plan</think>\n${MODEL_TEXT}\n`) : answer('Build log: 600 identical lines of build output.'))]
    const done = await e.summarizeLargeFiles({ sessionId: 'lf' })
    expect(done).toMatchObject({ enabled: true, summarized: 2, failed: 0, messagesUpdated: 2, remaining: 0 })
    expect(state.requests.length).toBe(2)
    expect(state.requests[0].model).toBe('gpt-large')
    const prompt = state.requests.map(promptOf).find((p) => p.includes('inventory.json'))
    expect(state.requests.map(promptOf).find((p) => !p.includes('inventory.json'))).toContain('Tool output: output of exec (text/plain, 16800 bytes, 600 lines)')
    expect(prompt).toContain('File: exports/inventory.json (application/json')
    expect(prompt).toContain('"name": "item-0"')
    expect(prompt).toContain(deterministic.split('\n')[0])

    const after = await e.getMessages(conv, { expandFiles: false })
    expect(after[0].content.endsWith(`Exploration Summary:\n${MODEL_TEXT}\nCheck it.`)).toBe(true)
    expect(after[0].content).not.toContain(deterministic)
    expect(after[1].content[0].text).toContain('Exploration Summary:\nBuild log: 600 identical lines of build output.\n\nCall lcm_describe(')
    const back = await e.getMessages(conv)
    expect(JSON.stringify(back)).toBe(JSON.stringify([FILE_MESSAGE, TOOL_MESSAGE]))
    expect((await e.describe(fileId)).file.explorationSummary).toBe(MODEL_TEXT)
    for (const mode of ['regex', 'full_text']) {
      const hits = await e.grep({ pattern: 'Quokkafield', mode, conversationId: conv })
      expect(hits.messages.length, mode).toBe(1)
    }

    // Done once: nothing is due, no model call.
    expect(await e.summarizeLargeFiles({})).toMatchObject({ enabled: true, summarized: 0, remaining: 0 })
    expect(state.requests.length).toBe(2)
    await e.close()
  })

  it('keeps the deterministic summary when the model fails, and backs off', async () => {
    const e = await open({ largeFileSummaryModel: 'gpt-large', largeFileSummaryProvider: 'openai' })
    const r = await e.ingest({ sessionId: 'lf', message: FILE_MESSAGE })
    const [stored] = await e.getMessages(r.conversationId, { expandFiles: false })
    state.replies = [{ status: 500, body: { error: { message: 'down' } } }]
    const failed = await e.summarizeLargeFiles({ sessionKey: undefined, sessionId: 'lf', limit: 5 })
    expect(failed).toMatchObject({ enabled: true, summarized: 0, failed: 1, remaining: 1 })
    expect(failed.lastError).toMatch(/LCM_LLM_/)
    expect(state.requests.length).toBe(1)
    const [kept] = await e.getMessages(r.conversationId, { expandFiles: false })
    expect(kept.content).toBe(stored.content)
    // The retry waits: an immediate call asks nothing.
    expect(await e.summarizeLargeFiles({ sessionId: 'lf' })).toMatchObject({ summarized: 0, failed: 0, remaining: 1 })
    expect(state.requests.length).toBe(1)
    await e.close()
  })

  it('does nothing without largeFileSummaryModel, and an unknown session is not an error', async () => {
    const e = await open()
    await e.ingest({ sessionId: 'lf', message: FILE_MESSAGE })
    expect(await e.summarizeLargeFiles()).toEqual({ enabled: false, summarized: 0, failed: 0, messagesUpdated: 0, remaining: 0, lastError: null })
    expect(state.requests.length).toBe(0)
    await e.close()
    const m = await open({ largeFileSummaryModel: 'openai/gpt-large' })
    expect(await m.summarizeLargeFiles({ sessionId: 'nobody' })).toMatchObject({ enabled: true, summarized: 0, remaining: 0 })
    await expect(m.summarizeLargeFiles({ limit: 'x' })).rejects.toMatchObject({ code: 'LCM_INVALID_INPUT' })
    await m.close()
    expect(state.requests.length).toBe(0)
    // A provider that cannot be used fails the open, naming the key.
    await expect(open({ largeFileSummaryModel: 'x', largeFileSummaryProvider: 'gemini' })).rejects.toMatchObject({ code: 'LCM_CONFIG', message: expect.stringContaining('largeFileSummaryModel') })
  })
})

describe('largeFileSummaryModel through the plugin and the host LLM', () => {
  const isLargeFile = (p) => /large-file/.test(p.purpose ?? '')

  async function plugin(llm, extra = {}) {
    const host = fakeApi({ llm, pluginConfig: freshConfig({ largeFileTokenThreshold: THRESHOLD, ...extra }) })
    const p = register(host.api)
    await p.ready
    const engine = await host.engines.get(ENGINE_ID)({})
    return { host, engine }
  }
  const session = { sessionId: 'sess-1', sessionKey: 'agent:main:main' }

  it('maintain asks the host model; the reference, getMessages and lcm_describe follow', async () => {
    const llm = fakeLlm({ answer: (p) => (isLargeFile(p) ? MODEL_TEXT : 'Summary of the turns.') })
    const { host, engine } = await plugin(llm, { largeFileSummaryModel: 'big-model', largeFileSummaryProvider: 'anthropic' })
    expect(host.logs.warn.join('\n')).not.toMatch(/largeFileSummary/)
    await engine.ingest({ ...session, message: FILE_MESSAGE })
    const native = await engine.handle.use()
    const conv = (await native.getConversation(session)).conversationId
    const [fileId] = fileIdsOf((await native.getMessages(conv, { expandFiles: false }))[0].content)

    const maintained = await engine.maintain({ ...session, runtimeSettings: { limits: { promptTokenBudget: 200_000 } } })
    expect(maintained.reason).toMatch(/large files: 1 summarized by the model/)
    const calls = llm.calls.filter(isLargeFile)
    expect(calls.length).toBe(1)
    expect(calls[0].model).toBe('anthropic/big-model')
    expect(calls[0].messages[0].content).toContain('exports/inventory.json')

    const [stored] = await native.getMessages(conv, { expandFiles: false })
    expect(stored.content).toContain(`Exploration Summary:\n${MODEL_TEXT}`)
    expect(JSON.stringify((await native.getMessages(conv))[0])).toBe(JSON.stringify(FILE_MESSAGE))
    const described = await host.tool('lcm_describe').execute('t1', { id: fileId })
    expect(JSON.stringify(described)).toContain('Quokkafield marks the audit rows')

    // The next turn has nothing left to summarize.
    await engine.maintain({ ...session, runtimeSettings: { limits: { promptTokenBudget: 200_000 } } })
    expect(llm.calls.filter(isLargeFile).length).toBe(1)
    await engine.dispose()
    await host.emit('gateway_stop')
  })

  it('a failing host model keeps the deterministic summary and does not fail the turn', async () => {
    const llm = fakeLlm({ fail: () => new Error('model overloaded') })
    const { host, engine } = await plugin(llm, { largeFileSummaryModel: 'big-model' })
    await engine.ingest({ ...session, message: FILE_MESSAGE })
    const native = await engine.handle.use()
    const conv = (await native.getConversation(session)).conversationId
    const [before] = await native.getMessages(conv, { expandFiles: false })
    const maintained = await engine.maintain({ ...session, runtimeSettings: { limits: { promptTokenBudget: 200_000 } } })
    expect(maintained).toMatchObject({ changed: false })
    expect(maintained.reason).toMatch(/0 summarized by the model, 1 failed/)
    expect(llm.calls.filter(isLargeFile).length).toBe(1)
    expect(llm.calls[0].model).toBe('big-model')
    expect(host.logs.warn.join('\n')).toMatch(/large-file summary failed.*model overloaded/)
    const [after] = await native.getMessages(conv, { expandFiles: false })
    expect(after.content).toBe(before.content)
    await engine.dispose()
    await host.emit('gateway_stop')
  })

  it('no large-file model configured: no large-file calls', async () => {
    const llm = fakeLlm()
    const { host, engine } = await plugin(llm)
    await engine.ingest({ ...session, message: FILE_MESSAGE })
    const maintained = await engine.maintain({ ...session, runtimeSettings: { limits: { promptTokenBudget: 200_000 } } })
    expect(maintained.reason).not.toMatch(/large files/)
    expect(llm.calls.filter(isLargeFile).length).toBe(0)
    await engine.dispose()
    await host.emit('gateway_stop')
  })
})
