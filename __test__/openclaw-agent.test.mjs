// OpenClaw's own agent loop (`openclaw agent --local`) runs a turn before the
// addon is built (it completes on the live context), then turns of one session
// with lcm-native installed from the packed archive in its context-engine slot and
// a loopback OpenAI-compatible model server: every message lands in lcm.db as the
// host sent it, compaction runs through the host's LLM (our summarizer prompt
// reaches the model server), later turns send the model our XML summaries, and a
// model's `lcm_grep` call (through OpenClaw's `tool_call`) answers from the store.
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LcmEngine, tempDir } from './helpers.mjs'
import { addAddon, installPackedPlugin, openclawCliAsync, openclawSkipReason } from './openclaw-installed.mjs'
import { chatCompletionsServer, loopProvider, textOf } from './openclaw-model.mjs'

const skipReason = openclawSkipReason()

/**
 * Every request gets one fixed-length reply, except a turn whose user message says
 * RECALL: it first calls `lcm_grep` through OpenClaw's `tool_call`, then replies
 * once the tool's result is back.
 */
function respond(body, n) {
  const msgs = body.messages ?? []
  const asked = msgs.findLastIndex((m) => m.role === 'user' && textOf(m).includes('RECALL'))
  if (body.stream && asked >= 0 && !msgs.slice(asked).some((m) => m.role === 'tool')) {
    return { toolCall: { id: 'call_recall', name: 'tool_call', arguments: { id: 'lcm_grep', args: { pattern: 'rollout of build 3' } } } }
  }
  return { text: `Reply ${n}: ` + 'the deploy finished and the cache was warmed. '.repeat(12) }
}

let model
beforeAll(async () => {
  if (skipReason === null) model = await chatCompletionsServer(respond)
})
afterAll(() => model?.server.close())

describe.skipIf(skipReason !== null)(`OpenClaw's agent loop with lcm-native${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('stores every turn, compacts through the host LLM and sends summaries to the model', async () => {
    const state = tempDir('lcm-oc-agent-')
    const { installed } = installPackedPlugin(state)
    const configFile = join(state, 'openclaw.json')
    const config = JSON.parse(readFileSync(configFile, 'utf8'))
    config.agents = { defaults: { model: { primary: 'loop/loop-model' } } }
    config.models = loopProvider(model.port)
    config.plugins.entries['lcm-native'].config = { freshTailCount: 4, leafChunkTokens: 600, leafMinFanout: 2, condensedMinFanout: 2, leafTargetTokens: 120, condensedTargetTokens: 120, contextThreshold: 0.2 }
    writeFileSync(configFile, JSON.stringify(config, null, 2))

    // Without the addon (no install script ran) a turn still completes on the live
    // context, and the log says how to build it where OpenClaw installed it.
    const fallback = await openclawCliAsync(state, ['agent', '--local', '--session-key', 'agent:main:before-build', '--message', 'hello', '--json'])
    expect(JSON.parse(fallback.stdout).meta.completion.stopReason).toBe('stop')
    expect(fallback.stderr).toContain('falling back to live context')
    expect(fallback.stderr).toContain(`node ${join(installed, 'scripts', 'install.js')}`)
    addAddon(installed)

    const sessionKey = 'agent:main:lcm-e2e'
    const sent = []
    for (let i = 1; i <= 6; i++) {
      const text = `turn ${i}: 한국어 テスト\u00a0— ${'the rollout of build '.repeat(30)}${i}`
      sent.push(text)
      const r = await openclawCliAsync(state, ['agent', '--local', '--session-key', sessionKey, '--message', text, '--json'])
      expect(JSON.parse(r.stdout).meta.completion.stopReason, r.stderr).toBe('stop')
    }

    const e = await LcmEngine.open({ dbPath: join(state, 'lcm.db') })
    try {
      const conv = await e.getConversation({ sessionKey })
      const messages = await e.getMessages(conv.conversationId)
      expect(messages.map((m) => m.role)).toEqual(sent.flatMap(() => ['user', 'assistant']))
      expect(messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(sent)
      const stats = await e.getStats(conv.conversationId)
      expect(stats.summaryCount).toBeGreaterThan(0)
    } finally {
      await e.close()
    }
    const chats = model.requests.filter((r) => r.url.endsWith('/chat/completions')).map((r) => JSON.stringify(r.body.messages))
    expect(chats.some((m) => m.includes('You are the summarization engine'))).toBe(true)
    expect(chats.some((m) => m.includes('<summary id=\\"sum_'))).toBe(true)

    // The model calls lcm_grep through OpenClaw; the tool answers from this session's store.
    await openclawCliAsync(state, ['agent', '--local', '--session-key', sessionKey, '--message', 'RECALL: when was build 3 rolled out?', '--json'])
    const toolResults = model.requests
      .flatMap((r) => r.body.messages ?? [])
      .filter((m) => m.role === 'tool')
      .map(textOf)
    const grep = toolResults.find((t) => t.includes('lcm_grep')) ?? toolResults.join('\n')
    expect(grep).toContain('LCM Grep Results')
    expect(grep).toContain('**Total matches:** 1')
    expect(grep).toContain('rollout of build 3')
  }, 600_000)
})
