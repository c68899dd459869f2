// OpenClaw's gateway (`openclaw gateway run`, one long-lived process) with
// lcm-native installed from the packed archive: three sessions take turns at once
// through `openclaw agent` (the gateway path, not --local), one of them running a
// real `exec` tool every turn. One shared engine serves them all: every message
// lands byte-exact in its own conversation, each compacts through the host's LLM,
// the model server (which refuses unpaired tool calls the way OpenAI does) sees our
// summaries, and a SIGTERM stops the gateway cleanly with a consistent database.
// The gateway loads the plugin from several staging copies: one addon (one SQLite)
// serves them all.
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { join } from 'node:path'
import { existsSync, readFileSync } from 'node:fs'
import { LcmEngine } from './helpers.mjs'
import { gatewayState, openclawCliAsync, openclawSkipReason, startGateway } from './openclaw-installed.mjs'
import { chatCompletionsServer, textOf } from './openclaw-model.mjs'

const skipReason = openclawSkipReason()
const TURNS = 4
const TOKEN = 'gateway-test-token'

/** Why `messages` would be refused by OpenAI: tool results without their call, calls without results. */
function unpaired(messages) {
  const out = []
  messages.forEach((m, i) => {
    if (m.role === 'tool') {
      let j = i - 1
      while (j >= 0 && messages[j].role === 'tool') j--
      if (!(messages[j]?.tool_calls ?? []).some((c) => c.id === m.tool_call_id)) out.push(`tool result ${m.tool_call_id} without its call`)
    }
    if (m.role === 'assistant' && m.tool_calls?.length) {
      const answered = new Set()
      for (let j = i + 1; messages[j]?.role === 'tool'; j++) answered.add(messages[j].tool_call_id)
      for (const c of m.tool_calls) if (!answered.has(c.id)) out.push(`tool call ${c.id} without a result`)
    }
  })
  return out
}

const refusals = []

/**
 * The addon files mapped into process `pid` (Linux), else null. OpenClaw loads the
 * plugin from several staging copies; they must share one addon, one SQLite.
 */
function addonsMapped(pid) {
  const maps = `/proc/${pid}/maps`
  if (!existsSync(maps)) return null
  const paths = readFileSync(maps, 'utf8').split('\n').map((l) => l.split(/\s+/).slice(5).join(' '))
  return [...new Set(paths.filter((p) => /lcm-native[^/]*\.node$/.test(p)))]
}

/**
 * Agent turns (requests with tools): a user message `RUN <n> please` gets an `exec`
 * call first and a reply once its result is back; any other turn gets a reply.
 * Summarizer requests (no tools) get a short summary.
 */
function respond(body, n) {
  const msgs = body.messages ?? []
  const bad = unpaired(msgs)
  if (bad.length) refusals.push(bad)
  if (!body.tools) return { text: `Summary ${n}: the deploys and the runs were discussed.` }
  const ask = msgs.findLastIndex((m) => m.role === 'user' && /RUN \d+ please/.test(textOf(m)))
  if (ask >= 0 && !msgs.slice(ask).some((m) => m.role === 'tool')) {
    const run = /RUN (\d+)/.exec(textOf(msgs[ask]))[1]
    const command = `for i in $(seq 1 40); do echo "run ${run} line $i: 한국어 テスト\u00a0🎉"; done`
    return { toolCall: { id: `call_${run}_${n}`, name: 'exec', arguments: { command } } }
  }
  return { text: `Reply ${n}: ` + 'the deploy finished and the cache was warmed. '.repeat(12) }
}

let model
beforeAll(async () => {
  if (skipReason === null) model = await chatCompletionsServer(respond)
})
afterAll(() => model?.server.close())

describe.skipIf(skipReason !== null)(`OpenClaw's gateway with lcm-native${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('serves concurrent sessions from one process, tool turns included, and stops cleanly', async () => {
    // A tiny budget: compaction must not wait for the default minimum chunk (4,000 tokens).
    const pluginConfig = { freshTailCount: 4, leafChunkTokens: 600, leafMinChunkTokens: 0, leafMinFanout: 2, condensedMinFanout: 2, leafTargetTokens: 120, condensedTargetTokens: 120, contextThreshold: 0.1 }
    const { state, port } = await gatewayState('lcm-oc-gateway-', { modelPort: model.port, token: TOKEN, pluginConfig })
    const gateway = await startGateway(state, port)
    const sent = { 'agent:main:talk-1': [], 'agent:main:talk-2': [], 'agent:main:tools': [] }
    try {
      await Promise.all(
        Object.entries(sent).map(async ([sessionKey, texts]) => {
          for (let i = 1; i <= TURNS; i++) {
            const text = sessionKey.endsWith('tools') ? `RUN ${i} please` : `${sessionKey} turn ${i}: 한국어 テスト\u00a0— ${'about the deploy '.repeat(250)}(end of turn ${i})`
            texts.push(text)
            const r = await openclawCliAsync(state, ['agent', '--session-key', sessionKey, '--message', text, '--json'])
            expect(JSON.parse(r.stdout).status, `${sessionKey} turn ${i}: ${r.stderr}`).toBe('ok')
          }
        }),
      )
      const addons = addonsMapped(gateway.pid)
      if (addons !== null) expect(addons, 'addon copies in the gateway process').toHaveLength(1)
    } finally {
      const stopped = await gateway.stop()
      expect(stopped, gateway.log()).toEqual({ code: 0, signal: null, forced: false })
    }
    expect(refusals).toEqual([])

    const e = await LcmEngine.open({ dbPath: join(state, 'lcm.db') })
    try {
      for (const [sessionKey, texts] of Object.entries(sent)) {
        const conv = await e.getConversation({ sessionKey })
        const messages = await e.getMessages(conv.conversationId)
        const perTurn = sessionKey.endsWith('tools') ? ['user', 'assistant', 'toolResult', 'assistant'] : ['user', 'assistant']
        expect(messages.map((m) => m.role), sessionKey).toEqual(texts.flatMap(() => perTurn))
        expect(messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(texts)
        expect((await e.getStats(conv.conversationId)).summaryCount, sessionKey).toBeGreaterThan(0)
        if (sessionKey.endsWith('tools')) {
          const results = messages.filter((m) => m.role === 'toolResult').map(textOf)
          results.forEach((r, i) => expect(r).toContain(`run ${i + 1} line 40: 한국어 テスト\u00a0🎉`))
        }
      }
      const report = await e.doctor({ all: true })
      expect(report.violations).toEqual([])
      expect(report.brokenSummaries).toEqual([])
      expect(await e.integrityCheck()).toEqual(['ok'])
    } finally {
      await e.close()
    }
    // Each session's later turns reached the model with our summaries in place of its oldest messages.
    for (const sessionKey of Object.keys(sent)) {
      const turns = model.requests.filter((r) => r.body.tools && JSON.stringify(r.body.messages).includes(`session=${sessionKey}`))
      expect(turns.length, sessionKey).toBeGreaterThanOrEqual(TURNS)
      expect(turns.some((r) => JSON.stringify(r.body.messages).includes('<summary id=\\"sum_')), sessionKey).toBe(true)
    }
  }, 600_000)
})
