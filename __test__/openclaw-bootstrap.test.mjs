// The plugin's bootstrap, which the host calls before every turn. Over the host's
// SQLite transcript (OpenClaw's `session-transcript-runtime`, stood in for here by
// a reader with the same contract): the newest visible message comes from the
// cursor-paged delta reader, resumed where the session's last read ended, and the
// whole transcript is read, and crosses to the engine, only when the engine asks.
// Over a JSONL session file the engine reads its last line first and the whole
// file only when asked.
import { describe, it, expect, vi, beforeEach } from 'vitest'
import { appendFileSync } from 'node:fs'
import { createContextEngine } from '../openclaw/index.mjs'
import { forgetTranscriptPositions } from '../openclaw/transcript.mjs'
import { freshConfig, conversation, writeTranscript } from './openclaw-fixture.mjs'

/** The host's transcript: its visible rows, a generation (a rewrite resets cursors), what was read. */
const host = vi.hoisted(() => ({ rows: [], generation: 1, fullReads: 0, deltaReads: [], failDelta: false }))
vi.mock('openclaw/plugin-sdk/session-transcript-runtime', () => ({
  readVisibleSessionTranscriptMessageEntries: async () => {
    host.fullReads++
    return host.rows
  },
  // Pages of `maxMessages` from the cursor `"<generation>:<rows read>"`.
  readSessionTranscriptVisibleMessageDelta: async ({ cursor, maxMessages }) => {
    if (host.failDelta) throw new Error('projection unavailable')
    const [generation, at] = (cursor ?? `${host.generation}:0`).split(':').map(Number)
    if (generation !== host.generation) return { kind: 'reset', cursor: `${host.generation}:0`, reason: 'generation_mismatch' }
    const entries = host.rows.slice(at, at + Math.min(maxMessages, 3))
    host.deltaReads.push({ from: at, entries: entries.length })
    return { kind: 'page', cursor: `${generation}:${at + entries.length}`, entries, hasMore: at + entries.length < host.rows.length }
  },
}))

const S = { sessionId: 'sess-b', sessionKey: 'agent:main:boot' }
const target = { agentId: 'main', sessionId: S.sessionId, sessionKey: S.sessionKey, storePath: '/state/agents/main/sessions.sqlite' }
const params = { ...S, sessionTarget: target, sessionFile: '/nonexistent.jsonl', runtimeContext: { transcriptStorage: { kind: 'sqlite' } } }
const rowsOf = (messages, tag = 'r') => messages.map((message, i) => ({ entryId: `${tag}${i}`, parentId: i ? `${tag}${i - 1}` : null, message, role: message.role, seq: i }))

/** An engine whose core records what each bootstrap call sent. */
async function recordingEngine() {
  const e = createContextEngine({ config: freshConfig(), env: {}, logger: { warn() {}, info() {}, error() {} } })
  const lcm = await e.handle.use()
  const sent = []
  const bootstrap = lcm.bootstrap.bind(lcm)
  lcm.bootstrap = (p) => {
    sent.push({ rows: p.transcriptEntries?.length ?? 'file', tail: p.transcriptTail === true })
    return bootstrap(p)
  }
  return { e, lcm, sent }
}

beforeEach(() => {
  forgetTranscriptPositions()
  Object.assign(host, { rows: [], generation: 1, fullReads: 0, deltaReads: [], failDelta: false })
})

describe('bootstrap from the host transcript', () => {
  it('reads the delta since the last bootstrap, and the whole transcript only when the engine asks', async () => {
    const { e, lcm, sent } = await recordingEngine()
    const messages = conversation(6, 10)
    host.rows = rowsOf(messages.slice(0, 8))
    expect(await e.bootstrap(params)).toMatchObject({ bootstrapped: true, importedMessages: 8 })
    expect(sent).toEqual([{ rows: 1, tail: true }, { rows: 8, tail: false }])
    expect(host.fullReads).toBe(1)
    // Before the next turn, nothing new: one delta page from where the last read ended.
    sent.length = 0
    host.deltaReads = []
    expect(await e.bootstrap(params)).toMatchObject({ bootstrapped: false, importedMessages: 0, reason: 'conversation already up to date' })
    expect(sent).toEqual([{ rows: 1, tail: true }])
    expect(host.deltaReads).toEqual([{ from: 8, entries: 0 }])
    expect(host.fullReads).toBe(1)
    // Rows the engine lacks: the delta holds only them; the whole is read once more.
    sent.length = 0
    host.deltaReads = []
    host.rows = rowsOf(messages)
    expect(await e.bootstrap(params)).toMatchObject({ bootstrapped: true, importedMessages: 4 })
    expect(sent).toEqual([{ rows: 1, tail: true }, { rows: 12, tail: false }])
    expect(host.deltaReads).toEqual([{ from: 8, entries: 3 }, { from: 11, entries: 1 }])
    expect(host.fullReads).toBe(2)
    // Rows the store got meanwhile (commitTurn): the tail alone says up to date.
    const more = conversation(1, 10, 'later')
    await lcm.ingestBatch({ ...S, messages: more, entryIds: ['r12', 'r13'] })
    host.rows = rowsOf([...messages, ...more])
    sent.length = 0
    expect(await e.bootstrap(params)).toMatchObject({ reason: 'conversation already up to date' })
    expect(sent).toEqual([{ rows: 1, tail: true }])
    expect(host.fullReads).toBe(2)
    const conv = await lcm.getConversation({ sessionKey: S.sessionKey })
    expect(await lcm.getMessages(conv.conversationId)).toEqual([...messages, ...more])
    await e.dispose()
  })

  it('starts the delta over after a reset, and reads the whole when the delta reader fails', async () => {
    const { e, sent } = await recordingEngine()
    const messages = conversation(3, 10)
    host.rows = rowsOf(messages)
    await e.bootstrap(params)
    // The host rewrote the transcript (a new generation): the delta starts from its start.
    host.generation = 2
    host.deltaReads = []
    sent.length = 0
    expect(await e.bootstrap(params)).toMatchObject({ reason: 'conversation already up to date' })
    expect(host.deltaReads).toEqual([{ from: 0, entries: 3 }, { from: 3, entries: 3 }])
    expect(sent).toEqual([{ rows: 1, tail: true }])
    host.failDelta = true
    sent.length = 0
    const reads = host.fullReads
    expect(await e.bootstrap(params)).toMatchObject({ reason: 'conversation already up to date' })
    expect(sent).toEqual([{ rows: 6, tail: false }])
    expect(host.fullReads).toBe(reads + 1)
    await e.dispose()
  })

  it('over a session file: its last line first, the whole file only when asked', async () => {
    const { e, sent } = await recordingEngine()
    const messages = conversation(4, 10)
    const file = writeTranscript(messages, { sessionId: S.sessionId })
    const fileParams = { ...S, sessionFile: file }
    expect(await e.bootstrap(fileParams)).toMatchObject({ bootstrapped: true, importedMessages: 8 })
    expect(sent).toEqual([{ rows: 'file', tail: true }, { rows: 'file', tail: false }])
    sent.length = 0
    expect(await e.bootstrap(fileParams)).toMatchObject({ bootstrapped: false, reason: 'conversation already up to date' })
    expect(sent).toEqual([{ rows: 'file', tail: true }])
    sent.length = 0
    appendFileSync(file, JSON.stringify({ type: 'message', id: 'e9', parentId: 'e8', message: { role: 'user', content: 'one more' } }) + '\n')
    expect(await e.bootstrap(fileParams)).toMatchObject({ bootstrapped: true, importedMessages: 1 })
    expect(sent).toEqual([{ rows: 'file', tail: true }, { rows: 'file', tail: false }])
    await e.dispose()
  })
})
