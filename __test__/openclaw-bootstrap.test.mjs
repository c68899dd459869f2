// The plugin's bootstrap over the host's SQLite transcript (OpenClaw's
// `session-transcript-runtime`, stood in for here): the host calls it before
// every turn, so the newest row goes to the engine first and the whole
// transcript only when the engine asks for it.
import { describe, it, expect, vi } from 'vitest'
import { createContextEngine } from '../openclaw/index.mjs'
import { freshConfig, conversation } from './openclaw-fixture.mjs'

const host = vi.hoisted(() => ({ rows: [] }))
vi.mock('openclaw/plugin-sdk/session-transcript-runtime', () => ({
  readVisibleSessionTranscriptMessageEntries: async () => host.rows,
}))

const S = { sessionId: 'sess-b', sessionKey: 'agent:main:boot' }
const target = { agentId: 'main', sessionId: S.sessionId, sessionKey: S.sessionKey, storePath: '/state/agents/main/sessions.sqlite' }
const params = { ...S, sessionTarget: target, sessionFile: '/nonexistent.jsonl', runtimeContext: { transcriptStorage: { kind: 'sqlite' } } }
const rowsOf = (messages) => messages.map((message, i) => ({ entryId: `r${i}`, parentId: i ? `r${i - 1}` : null, message }))

describe('bootstrap from the host transcript', () => {
  it('sends the newest row first and the whole transcript only when the engine asks', async () => {
    const e = createContextEngine({ config: freshConfig(), env: {}, logger: { warn() {}, info() {}, error() {} } })
    const lcm = await e.handle.use()
    const sent = []
    const bootstrap = lcm.bootstrap.bind(lcm)
    lcm.bootstrap = (p) => {
      sent.push({ rows: p.transcriptEntries.length, tail: p.transcriptTail === true })
      return bootstrap(p)
    }
    const messages = conversation(6, 10)
    host.rows = rowsOf(messages.slice(0, 8))
    expect(await e.bootstrap(params)).toMatchObject({ bootstrapped: true, importedMessages: 8 })
    expect(sent).toEqual([{ rows: 1, tail: true }, { rows: 8, tail: false }])
    // Before the next turn, nothing new: the newest row alone answers.
    sent.length = 0
    expect(await e.bootstrap(params)).toMatchObject({ bootstrapped: false, importedMessages: 0, reason: 'conversation already up to date' })
    expect(sent).toEqual([{ rows: 1, tail: true }])
    // Rows the engine lacks: asked for the whole, imports exactly those.
    sent.length = 0
    host.rows = rowsOf(messages)
    expect(await e.bootstrap(params)).toMatchObject({ bootstrapped: true, importedMessages: 4 })
    expect(sent).toEqual([{ rows: 1, tail: true }, { rows: 12, tail: false }])
    const conv = await lcm.getConversation({ sessionKey: S.sessionKey })
    expect(await lcm.getMessages(conv.conversationId)).toEqual(messages)
    await e.dispose()
  })
})
