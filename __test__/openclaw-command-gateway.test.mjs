// OpenClaw's gateway with lcm-native installed from the packed archive and a
// lossless-claw configuration carried over whole (every key of the reference's
// table): the plugin loads with only the documented warnings, and `/lcm status`
// sent to a session the agent talked in (two turns through `openclaw agent`)
// answers in that session's chat with its figures.
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { join } from 'node:path'
import { LcmEngine } from './helpers.mjs'
import { gatewayState, openclawCliAsync, openclawSkipReason, startGateway } from './openclaw-installed.mjs'
import { chatCompletionsServer } from './openclaw-model.mjs'
import { FULL_REFERENCE_CONFIG } from './reference-config.mjs'
import { CONFIG_KEYS } from '../openclaw/config.mjs'

const skipReason = openclawSkipReason()
const TOKEN = 'command-gateway-token'
const SESSION = 'agent:main:main'

let model
beforeAll(async () => {
  if (skipReason === null) model = await chatCompletionsServer((body, n) => ({ text: body.tools ? `Reply ${n}: noted.` : `Summary ${n}: notes.` }))
})
afterAll(() => model?.server.close())

const textOf = (m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((b) => b.text ?? '').join(''))

/** The assistant message that follows the user message `asked` in the session's chat history (polled). */
async function commandReply(state, asked, waitMs = 60_000) {
  const until = Date.now() + waitMs
  for (;;) {
    const r = await openclawCliAsync(state, ['gateway', 'call', 'chat.history', '--json', '--params', JSON.stringify({ sessionKey: SESSION })])
    const messages = JSON.parse(r.stdout).messages ?? []
    const at = messages.findLastIndex((m) => m.role === 'user' && textOf(m) === asked)
    const reply = at >= 0 ? messages.slice(at + 1).find((m) => m.role === 'assistant') : undefined
    if (reply) return textOf(reply)
    if (Date.now() > until) throw new Error(`no reply to ${asked} within ${waitMs} ms: ${r.stdout.slice(-2000)}`)
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}

describe.skipIf(skipReason !== null)(`/lcm in OpenClaw's gateway${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('loads a full lossless-claw config and answers /lcm status with this session\'s figures', async () => {
    // The reference's example, with paths and models this machine has.
    const pluginConfig = {
      ...FULL_REFERENCE_CONFIG,
      databasePath: undefined,
      largeFilesDir: undefined,
      summaryModel: 'loop/loop-model',
      summaryProvider: undefined,
      expansionModel: 'loop/loop-model',
      expansionProvider: undefined,
      largeFileSummaryModel: 'loop/loop-model',
      largeFileSummaryProvider: undefined,
      independentLogFile: { enabled: false },
    }
    const { state, port } = await gatewayState('lcm-oc-command-', { modelPort: model.port, token: TOKEN, pluginConfig: JSON.parse(JSON.stringify(pluginConfig)) })
    const gateway = await startGateway(state, port)
    let status
    try {
      for (const text of ['First: the deploy moved to Friday.', 'Second: Dana owns the slides.']) {
        const r = await openclawCliAsync(state, ['agent', '--session-key', SESSION, '--message', text, '--json'])
        expect(JSON.parse(r.stdout).status, r.stderr).toBe('ok')
      }
      // `openclaw agent` runs the agent directly (2026.9.6 expands skill commands
      // there, not plugin commands); the gateway's chat path — what the Control UI
      // and channels use — dispatches plugin commands. Sent as the CLI operator.
      const before = model.requests.length
      const sent = await openclawCliAsync(state, ['gateway', 'call', 'chat.send', '--json', '--params', JSON.stringify({ sessionKey: SESSION, message: '/lcm status', idempotencyKey: 'lcm-status-1' })])
      expect(JSON.parse(sent.stdout).status).toBe('started')
      status = await commandReply(state, '/lcm status')
      // Answered by the plugin, not by the model.
      expect(model.requests.slice(before).filter((r) => JSON.stringify(r.body).includes('/lcm status'))).toEqual([])
    } finally {
      const stopped = await gateway.stop()
      expect(stopped, gateway.log()).toEqual({ code: 0, signal: null, forced: false })
    }
    const log = gateway.log()
    // Loaded, with one warning per key that has no effect, and nothing unknown.
    expect(log).not.toMatch(/unknown key|expected an? /)
    for (const row of CONFIG_KEYS.filter((k) => k.noEffect && pluginConfig[k.key] !== undefined)) expect(log).toContain(`config ${row.key}: accepted for lossless-claw compatibility`)
    // The figures are this session's, as the database has them.
    const e = await LcmEngine.open({ dbPath: join(state, 'lcm.db') })
    try {
      const conv = await e.getConversation({ sessionKey: SESSION })
      const stats = await e.getStats(conv.conversationId)
      expect(status).toContain(`Session ${SESSION} (conversation ${conv.conversationId})`)
      expect(status).toContain(`stored: ${stats.messageCount.toLocaleString('en-US')} messages`)
      expect(status).toMatch(/Conversations: \d+ active, \d+ archived/)
      expect(status).toContain('Summarizer breaker: closed')
      expect(status.length).toBeLessThanOrEqual(2000)
    } finally {
      await e.close()
    }
  }, 600_000)
})
