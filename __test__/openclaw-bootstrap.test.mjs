// The plugin's bootstrap, which the host calls before every turn: over the host's
// SQLite transcript (OpenClaw's `session-transcript-runtime`, stood in for here)
// the newest row goes to the engine first and the whole transcript only when the
// engine asks for it; over a JSONL session file the engine reads its last line
// first and the whole file only when asked.
import { describe, it, expect, vi } from 'vitest'
import { createContextEngine } from '../openclaw/index.mjs'
import { appendFileSync } from 'node:fs'
import { freshConfig, conversation, writeTranscript } from './openclaw-fixture.mjs'

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
      sent.push({ rows: p.transcriptEntries?.length ?? 'file', tail: p.transcriptTail === true })
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

  it('over a session file: its last line first, the whole file only when asked', async () => {
    const e = createContextEngine({ config: freshConfig(), env: {}, logger: { warn() {}, info() {}, error() {} } })
    const lcm = await e.handle.use()
    const sent = []
    const bootstrap = lcm.bootstrap.bind(lcm)
    lcm.bootstrap = (p) => {
      sent.push({ file: Boolean(p.sessionFile), tail: p.transcriptTail === true })
      return bootstrap(p)
    }
    const messages = conversation(4, 10)
    const file = writeTranscript(messages, { sessionId: S.sessionId })
    const fileParams = { ...S, sessionFile: file }
    expect(await e.bootstrap(fileParams)).toMatchObject({ bootstrapped: true, importedMessages: 8 })
    expect(sent).toEqual([{ file: true, tail: true }, { file: true, tail: false }])
    sent.length = 0
    expect(await e.bootstrap(fileParams)).toMatchObject({ bootstrapped: false, reason: 'conversation already up to date' })
    expect(sent).toEqual([{ file: true, tail: true }])
    sent.length = 0
    appendFileSync(file, JSON.stringify({ type: 'message', id: 'e9', parentId: 'e8', message: { role: 'user', content: 'one more' } }) + '\n')
    expect(await e.bootstrap(fileParams)).toMatchObject({ bootstrapped: true, importedMessages: 1 })
    expect(sent).toEqual([{ file: true, tail: true }, { file: true, tail: false }])
    await e.dispose()
  })
})
