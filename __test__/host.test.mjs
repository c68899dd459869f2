// What the OpenClaw host needs from the core: every role stored, tolerant params,
// commitTurn (atomic, idempotent), bootstrap from transcripts, reference rows rebuilt.
import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { appendFileSync, writeFileSync } from 'node:fs'
import { LcmEngine, root, tempDir, workload, rejectsWithCode } from './helpers.mjs'
import { writeDb, query } from './sqlfile.mjs'
import { writeSession } from './fixtures/session-jsonl.mjs'

const open = (opts = {}) => LcmEngine.open({ dbPath: ':memory:', ...opts })
const user = (text, extra = {}) => ({ role: 'user', content: text, ...extra })
const assistant = (text) => ({ role: 'assistant', content: [{ type: 'text', text }] })

const HOST_ROLES = [
  { role: 'bashExecution', command: 'grep -rn needle-bash src', output: 'src/a.rs:1: needle-bash', exitCode: 0, cancelled: false, truncated: false, timestamp: 1771313820000 },
  { role: 'custom', customType: 'reminder', content: 'needle-custom remember the deploy', display: true, details: { k: [1, 2] }, timestamp: 1771313821000 },
  { role: 'branchSummary', summary: 'needle-branch we tried the other approach', fromId: 'e7', timestamp: 1771313822000 },
  { role: 'compactionSummary', summary: 'needle-compaction earlier work on the parser', tokensBefore: 12000, timestamp: '2026-02-17T07:37:03.000Z' },
  { role: 'myPluginRole', payload: { note: 'needle-plugin' } },
  { role: 'custom', customType: 'blocks', content: [{ type: 'text', text: 'needle-blocks' }, { type: 'image', data: 'AAAA', mimeType: 'image/png' }], display: false },
]

describe('every message the host sends is stored', () => {
  it('each host role round-trips byte-exact, is searchable, and a batch mixing them commits', async () => {
    const e = await open()
    const batch = [user('run it'), ...HOST_ROLES, assistant('done')]
    const r = await e.ingestBatch({ sessionId: 'roles', messages: batch })
    expect(r.ingestedCount).toBe(batch.length)
    const back = await e.getMessages(r.conversationId)
    expect(JSON.stringify(back)).toBe(JSON.stringify(batch))
    for (const needle of ['needle-bash', 'needle-custom', 'needle-branch', 'needle-compaction', 'needle-plugin', 'needle-blocks']) {
      const g = await e.grep({ pattern: needle, mode: 'full_text', scope: 'messages', conversationId: r.conversationId })
      expect(g.messages.length, needle).toBe(1)
    }
    const items = await e.getContextItems(r.conversationId)
    expect(items.slice(1, 7).map((i) => i.role)).toEqual(Array(6).fill('assistant'))
    await e.close()
  })

  it('stores the reference plain text: `$ command` + output, summary text, JSON of an unknown role', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'lcm.db')
    const e = await LcmEngine.open({ dbPath })
    await e.ingestBatch({ sessionId: 'roles', messages: HOST_ROLES })
    await e.close()
    const rows = query(dbPath, 'SELECT role, content, token_count FROM messages ORDER BY seq')
    expect(rows.map((r) => r.content)).toEqual([
      '$ grep -rn needle-bash src\nsrc/a.rs:1: needle-bash',
      'needle-custom remember the deploy',
      'needle-branch we tried the other approach',
      'needle-compaction earlier work on the parser',
      JSON.stringify(HOST_ROLES[4]),
      'needle-blocks',
    ])
    expect(rows.every((r) => r.role === 'assistant' && r.token_count > 0)).toBe(true)
  })

  it('host roles are summarizable: a forced sweep covers them', async () => {
    const e = await open({ freshTailCount: 2, leafChunkTokens: 200, leafMinFanout: 2 })
    const msgs = []
    for (let i = 0; i < 12; i++) msgs.push(user(`question ${i} ${'x '.repeat(40)}`), HOST_ROLES[i % HOST_ROLES.length])
    const r = await e.ingestBatch({ sessionId: 'sum', messages: msgs })
    const c = await e.compact({ sessionId: 'sum', tokenBudget: 300, force: true })
    expect(c.compacted).toBe(true)
    const leaves = (await e.getSummaries(r.conversationId)).filter((s) => s.kind === 'leaf')
    expect(leaves.flatMap((s) => s.messageIds).length).toBeGreaterThan(4)
    await e.close()
  })

  it('only a non-object or role-less message is bad input', async () => {
    const e = await open()
    for (const [message, pattern] of [[{ content: 'x' }, /no role/], [{ role: 5, content: 'x' }, /role must be a string/], ['text', /must be an object/], [{ role: '' }, /role is empty/]]) {
      const err = await rejectsWithCode(e.ingest({ sessionId: 's', message }), 'LCM_INVALID_INPUT')
      expect(err.message).toMatch(pattern)
    }
    const odd = [{ role: 'user', content: 42 }, { role: 'user' }, { role: 'assistant', content: ['bare', null] }]
    const r = await e.ingestBatch({ sessionId: 's', messages: odd })
    expect(await e.getMessages(r.conversationId)).toEqual(odd)
    await e.close()
  })
})

describe('tolerant params', () => {
  const host = { sessionFile: '/tmp/x.jsonl', runtimeContext: { provider: 'p', modelId: 'm', tokenBudget: 5000 }, runtimeSettings: { limits: { promptTokenBudget: 5000 } }, sessionTarget: { kind: 'x' }, prompt: 'hi', model: 'm', availableTools: new Set(['a']), citationsMode: 'on', autoCompactionSummary: 's', agentId: 'a' }

  it('lifecycle methods accept and ignore the host keys', async () => {
    const e = await open()
    await e.ingest({ sessionId: 's', message: user('one'), ...host })
    await e.ingestBatch({ sessionId: 's', messages: [user('two')], ...host })
    const a = await e.assemble({ sessionId: 's', tokenBudget: 1000, messages: [], ...host })
    expect(a.messages.length).toBe(2)
    // Without tokenBudget, the host's stated budget is used.
    expect((await e.assemble({ sessionId: 's', messages: [], ...host })).stats.tokenBudget).toBe(5000)
    const { runtimeContext, ...noContext } = host
    expect((await e.assemble({ sessionId: 's', messages: [], ...noContext, runtimeSettings: { limits: { promptTokenBudget: 7000 } } })).stats.tokenBudget).toBe(7000)
    const ac = new AbortController()
    const c = await e.compact({ sessionId: 's', sessionKey: 'k', tokenBudget: 1000, abortSignal: ac.signal, compactionTarget: 'budget', ...host })
    expect(c.ok).toBe(true)
    const t = await e.afterTurn({ sessionId: 's', messages: [user('three')], prePromptMessageCount: 0, tokenBudget: 1000, ...host })
    expect(t.ingest.ingestedCount).toBe(1)
    const k = await e.commitTurn({ sessionId: 's', advancementKey: 'k1', messages: [user('four')], ...host })
    expect(k.status).toBe('committed')
    const b = await e.bootstrap({ sessionId: 'fresh', transcriptEntries: [], ...host, sessionFile: undefined })
    expect(b.reason).toBe('no messages in session file')
    await e.close()
  })

  it('compact and afterTurn take the host budget and compactionTarget', async () => {
    const e = await open({ freshTailCount: 2, leafChunkTokens: 400 })
    await e.ingestBatch({ sessionId: 's', messages: Array.from({ length: 30 }, (_, i) => user(`m${i} ${'y '.repeat(200)}`)) })
    const c = await e.compact({ sessionId: 's', sessionKey: 's', runtimeContext: { tokenBudget: 1500 }, compactionTarget: 'budget', force: true })
    expect(c).toMatchObject({ mode: 'untilUnder', targetTokens: 1500 })
    expect(c.compacted).toBe(true)
    expect(c.tokensAfter).toBeLessThan(c.tokensBefore)
    const t = await e.afterTurn({ sessionId: 's', messages: [user('next')], prePromptMessageCount: 0, runtimeSettings: { limits: { promptTokenBudget: 100000 } } })
    expect(t.compaction.reason).toBe('below threshold')
    const err = await rejectsWithCode(e.compact({ sessionId: 's' }), 'LCM_INVALID_INPUT')
    expect(err.message).toMatch(/tokenBudget/)
    await e.close()
  })

  it('abortSignal (the host name) stops a compaction like signal does', async () => {
    const e = await open()
    await e.ingestBatch({ sessionId: 's', messages: Array.from({ length: 30 }, (_, i) => user(`m${i} ${'y '.repeat(200)}`)) })
    const ac = new AbortController()
    ac.abort()
    const c = await e.compact({ sessionId: 's', tokenBudget: 500, force: true, abortSignal: ac.signal })
    expect(c.aborted).toBe(true)
    await e.close()
  })

  it('LcmEngine.open stays strict and takes the reference names as aliases', async () => {
    const err = await rejectsWithCode(LcmEngine.open({ dbPth: ':memory:' }), 'LCM_INVALID_INPUT')
    expect(err.message).toMatch(/dbPth/)
    const dir = tempDir()
    const e = await LcmEngine.open({ databasePath: join(dir, 'ref.db'), largeFileThresholdTokens: 30000 })
    expect(e.dbPath).toBe(join(dir, 'ref.db'))
    await e.close()
  })
})

describe('commitTurn', () => {
  const turn = (key, texts, extra = {}) => ({ sessionId: 's', advancementKey: key, messages: texts.map((t, i) => (i === 0 ? user(t) : assistant(t))), ...extra })

  it('commits, answers duplicate for the same payload, and fails closed on another', async () => {
    const e = await open()
    const first = await e.commitTurn(turn('t1', ['q', 'a']))
    expect(first).toEqual({ status: 'committed', conversationId: first.conversationId, ingestedCount: 2 })
    const again = await e.commitTurn({ ...turn('t1', ['q', 'a']), runtimeContext: { other: true } })
    expect(again).toEqual({ status: 'duplicate', conversationId: first.conversationId, ingestedCount: 0 })
    const err = await rejectsWithCode(e.commitTurn(turn('t1', ['q', 'changed'])), 'LCM_TURN_CONFLICT')
    expect(err.message).toMatch(/t1/)
    // An explicit payload hash is used as given.
    await e.commitTurn(turn('t2', ['x'], { payloadHash: 'h1' }))
    expect((await e.commitTurn(turn('t2', ['different'], { payloadHash: 'h1' }))).status).toBe('duplicate')
    await rejectsWithCode(e.commitTurn(turn('t2', ['x'], { payloadHash: 'h2' })), 'LCM_TURN_CONFLICT')
    expect((await e.getMessages(first.conversationId)).length).toBe(3)
    await e.close()
  })

  it('heartbeat and empty turns write a receipt and no message', async () => {
    const e = await open()
    const hb = await e.commitTurn(turn('hb', ['ping'], { isHeartbeat: true }))
    expect(hb).toEqual({ status: 'committed', conversationId: null, ingestedCount: 0 })
    expect(await e.getConversation({ sessionId: 's' })).toBe(null)
    expect((await e.commitTurn(turn('hb', ['ping'], { isHeartbeat: true }))).status).toBe('duplicate')
    const empty = await e.commitTurn(turn('empty', []))
    expect(empty.ingestedCount).toBe(0)
    expect((await e.commitTurn(turn('empty', []))).status).toBe('duplicate')
    await e.close()
  })

  it('rolls back the whole turn when one message is bad (no receipt either)', async () => {
    const e = await open()
    await e.commitTurn(turn('ok', ['kept']))
    const bad = { sessionId: 's', advancementKey: 'bad', messages: [user('lost'), { content: 'no role' }] }
    const err = await rejectsWithCode(e.commitTurn(bad), 'LCM_INVALID_INPUT')
    expect(err.message).toMatch(/messages\[1\]/)
    const conv = await e.getConversation({ sessionId: 's' })
    expect((await e.getMessages(conv.conversationId)).map((m) => m.content)).toEqual(['kept'])
    // The key was not consumed: the corrected turn commits.
    expect((await e.commitTurn({ ...bad, messages: [user('lost')] })).status).toBe('committed')
    await e.close()
  })

  it('uses the host anchors: entry ids on the first and last message, positions checked', async () => {
    const e = await open()
    const admission = { entryId: 'e10', activeMessagePosition: 10, logicalTurnId: 'turn-a', role: 'user' }
    const terminal = { entryId: 'e12', activeMessagePosition: 12 }
    const r = await e.commitTurn({ ...turn('turn-a', ['q', 'tool', 'a']), admission, terminal })
    expect(r.ingestedCount).toBe(3)
    await rejectsWithCode(e.commitTurn({ ...turn('turn-b', ['q']), admission: { ...admission, logicalTurnId: 'turn-b' }, terminal }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(e.commitTurn({ ...turn('turn-c', ['q', 'a', 'b']), admission, terminal }), 'LCM_INVALID_INPUT')
    // A later bootstrap of the same transcript does not import the anchored entries again.
    const entries = [
      { type: 'message', id: 'e10', parentId: null, message: user('q') },
      { type: 'message', id: 'e11', parentId: 'e10', message: assistant('tool') },
      { type: 'message', id: 'e12', parentId: 'e11', message: assistant('a') },
    ]
    const b = await e.bootstrap({ sessionId: 's', transcriptEntries: entries })
    expect(b.importedMessages).toBe(0)
    expect((await e.getMessages(r.conversationId)).length).toBe(3)
    await e.close()
  })

  it('survives a restart and SIGKILL at any point: every turn whole with its receipt, or absent', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'lcm.db')
    const child = spawn(process.execPath, [join(root, '__test__', 'fixtures', 'commit-child.mjs'), dbPath, '5'], { stdio: ['ignore', 'pipe', 'inherit'] })
    const acked = []
    await new Promise((resolve) => {
      child.stdout.on('data', (d) => {
        for (const line of String(d).split('\n')) {
          if (line.startsWith('committed ')) acked.push(line.slice(10))
          if (acked.length >= 25 && !child.killed) child.kill('SIGKILL')
        }
      })
      child.on('exit', resolve)
    })
    expect(acked.length).toBeGreaterThanOrEqual(25)
    const e = await LcmEngine.open({ dbPath })
    expect(await e.integrityCheck()).toEqual(['ok'])
    const conv = await e.getConversation({ sessionId: 'crash' })
    const msgs = await e.getMessages(conv.conversationId)
    await e.close()
    const receipts = query(dbPath, 'SELECT advancement_key, ingested_count FROM lcm_turn_receipts')
    const keys = new Set(receipts.map((r) => r.advancement_key))
    for (const k of acked) expect(keys.has(k)).toBe(true)
    expect(msgs.length).toBe(receipts.length * 5)
    expect(receipts.every((r) => r.ingested_count === 5)).toBe(true)
    // Every stored turn is whole.
    const perTurn = new Map()
    for (const m of msgs) {
      const t = String(typeof m.content === 'string' ? m.content : m.content[0].text).split(' ')[1]
      perTurn.set(t, (perTurn.get(t) ?? 0) + 1)
    }
    expect([...perTurn.values()].every((n) => n === 5)).toBe(true)
    // The host replays the last acknowledged turn after the restart: duplicate.
    const again = await LcmEngine.open({ dbPath })
    const last = acked.length - 1
    const messages = Array.from({ length: 5 }, (_, i) =>
      i === 0 ? { role: 'user', content: `turn ${last} question ${'q'.repeat(2000)}` } : { role: 'assistant', content: [{ type: 'text', text: `turn ${last} answer ${i} ${'a'.repeat(2000)}` }] },
    )
    const r = await again.commitTurn({ sessionId: 'crash', advancementKey: `turn-${last}`, messages, entryIds: messages.map((_, i) => `t${last}-e${i}`) })
    expect(r.status).toBe('duplicate')
    await again.close()
  }, 60000)
})

describe('bootstrap', () => {
  it('imports a new conversation from a branched JSONL, then is idempotent', async () => {
    const dir = tempDir()
    const { messages } = workload(120, 21)
    const file = join(dir, 'session.jsonl')
    writeSession(file, messages, { branchAt: 40 })
    const e = await open()
    const r = await e.bootstrap({ sessionId: 'b', sessionFile: file })
    expect(r).toMatchObject({ bootstrapped: true, importedMessages: 120, reason: 'imported session messages', transcriptMessages: 120 })
    expect(r.skippedEntries).toBeGreaterThan(3)
    const back = await e.getMessages(r.conversationId)
    expect(back).toEqual(messages)
    const again = await e.bootstrap({ sessionId: 'b', sessionFile: file })
    expect(again).toMatchObject({ bootstrapped: false, importedMessages: 0, reason: 'conversation already up to date' })
    await e.close()
  })

  it('reconciles the missing tail after a crash: by entry id, then by content for rows without ids', async () => {
    const dir = tempDir()
    const { messages } = workload(60, 22)
    const file = join(dir, 'session.jsonl')
    const lines = writeSession(file, messages)
    const entries = lines.filter((l) => l.type === 'message')
    const e = await open()
    // The store got the first 30 with ids, then 10 more without ids (afterTurn without ids), then crashed.
    await e.ingestBatch({ sessionId: 'c', messages: messages.slice(0, 30), entryIds: entries.slice(0, 30).map((l) => l.id) })
    await e.ingestBatch({ sessionId: 'c', messages: messages.slice(30, 40) })
    const r = await e.bootstrap({ sessionId: 'c', sessionFile: file })
    expect(r).toMatchObject({ bootstrapped: true, importedMessages: 20, reason: 'reconciled missing session messages' })
    expect(await e.getMessages(r.conversationId)).toEqual(messages)
    // Rows written without any id: anchored on the newest stored message's content.
    await e.ingestBatch({ sessionId: 'd', messages: messages.slice(0, 45) })
    const d = await e.bootstrap({ sessionId: 'd', transcriptEntries: entries })
    expect(d).toMatchObject({ importedMessages: 15, reason: 'reconciled missing session messages' })
    expect(await e.getMessages(d.conversationId)).toEqual(messages)
    // A conversation sharing nothing with the transcript gets nothing (never a duplicate).
    await e.ingest({ sessionId: 'x', message: user('something else entirely') })
    const x = await e.bootstrap({ sessionId: 'x', sessionFile: file })
    expect(x).toMatchObject({ bootstrapped: false, importedMessages: 0, reason: 'no common message with the stored conversation' })
    await e.close()
  })

  it('a transcriptTail call settles an up-to-date conversation from the newest row and asks for the whole otherwise', async () => {
    const { messages } = workload(40, 23)
    const entries = messages.map((message, i) => ({ type: 'message', entryId: `t${i}`, parentId: i ? `t${i - 1}` : null, message }))
    const e = await open()
    const tail = (rows) => e.bootstrap({ sessionId: 't', sessionKey: 'agent:main:t', transcriptEntries: rows, transcriptTail: true })
    // A new session: nothing is created, the whole transcript is asked for.
    expect(await tail(entries.slice(-1))).toMatchObject({ bootstrapped: false, importedMessages: 0, needsWholeTranscript: true, reason: 'the transcript tail is not stored: pass the whole transcript', conversationId: null })
    expect(await e.getConversation({ sessionKey: 'agent:main:t' })).toBeNull()
    const first = await e.bootstrap({ sessionId: 't', sessionKey: 'agent:main:t', transcriptEntries: entries.slice(0, 30) })
    expect(first).toMatchObject({ importedMessages: 30, needsWholeTranscript: false })
    // Stored newest row: up to date from it alone (counts are of the rows given).
    expect(await tail(entries.slice(29, 30))).toMatchObject({ bootstrapped: false, reason: 'conversation already up to date', needsWholeTranscript: false, conversationId: first.conversationId, transcriptMessages: 1 })
    // A newer row: asked for the whole, which imports exactly what is missing.
    expect(await tail(entries.slice(-3))).toMatchObject({ needsWholeTranscript: true, importedMessages: 0 })
    const whole = await e.bootstrap({ sessionId: 't', sessionKey: 'agent:main:t', transcriptEntries: entries })
    expect(whole).toMatchObject({ importedMessages: 10, reason: 'reconciled missing session messages' })
    expect(await e.getMessages(first.conversationId)).toEqual(messages)
    // A newest row that is no message, or has no id, proves nothing.
    expect(await tail([...entries, { type: 'model_change', id: 'mc', parentId: 't39' }])).toMatchObject({ needsWholeTranscript: true })
    expect(await tail([{ message: messages[39] }])).toMatchObject({ needsWholeTranscript: true })
    await e.close()
  })

  it('a transcriptTail call on a session file reads only its last line', async () => {
    const dir = tempDir()
    const { messages } = workload(40, 25)
    const file = join(dir, 'session.jsonl')
    const lines = writeSession(file, messages)
    const e = await open()
    const tail = () => e.bootstrap({ sessionId: 'f', sessionFile: file, transcriptTail: true })
    expect(await tail()).toMatchObject({ needsWholeTranscript: true, importedMessages: 0, conversationId: null })
    const first = await e.bootstrap({ sessionId: 'f', sessionFile: file })
    expect(first.importedMessages).toBe(40)
    expect(await tail()).toMatchObject({ reason: 'conversation already up to date', needsWholeTranscript: false, transcriptMessages: 1 })
    // A line the store lacks, then a torn line after it: the whole file is asked for.
    const last = lines.filter((l) => l.type === 'message').at(-1)
    appendFileSync(file, JSON.stringify({ type: 'message', id: 'late', parentId: last.id, message: user('one more') }) + '\n')
    expect(await tail()).toMatchObject({ needsWholeTranscript: true })
    expect(await e.bootstrap({ sessionId: 'f', sessionFile: file })).toMatchObject({ importedMessages: 1 })
    expect(await tail()).toMatchObject({ needsWholeTranscript: false })
    appendFileSync(file, '{"type":"message","id":"torn","parentId":"late","mess')
    expect(await tail()).toMatchObject({ needsWholeTranscript: true })
    await rejectsWithCode(e.bootstrap({ sessionId: 'f', sessionFile: join(dir, 'missing.jsonl'), transcriptTail: true }), 'LCM_IO')
    await e.close()
  })

  it('reports an empty transcript and bad parameters clearly', async () => {
    const dir = tempDir()
    const file = join(dir, 'empty.jsonl')
    writeFileSync(file, JSON.stringify({ type: 'session', id: 's', cwd: '/' }) + '\n')
    const e = await open()
    expect(await e.bootstrap({ sessionId: 'e', sessionFile: file })).toMatchObject({ bootstrapped: false, reason: 'no messages in session file' })
    await rejectsWithCode(e.bootstrap({ sessionId: 'e', sessionFile: join(dir, 'missing.jsonl') }), 'LCM_IO')
    await rejectsWithCode(e.bootstrap({ sessionId: 'e' }), 'LCM_INVALID_INPUT')
    await e.close()
  })
})

describe('reading databases the reference wrote', () => {
  it('rebuilds timestamp, toolCallId, toolName and isError from the columns and part metadata', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'ref.db')
    writeDb(dbPath, `
CREATE TABLE conversations (conversation_id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, title TEXT,
  bootstrapped_at TEXT, created_at TEXT NOT NULL DEFAULT (datetime('now')), updated_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE messages (message_id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id INTEGER NOT NULL, seq INTEGER NOT NULL,
  role TEXT NOT NULL, content TEXT NOT NULL, token_count INTEGER NOT NULL, created_at TEXT NOT NULL DEFAULT (datetime('now')), UNIQUE (conversation_id, seq));
CREATE TABLE message_parts (part_id TEXT PRIMARY KEY, message_id INTEGER NOT NULL, session_id TEXT NOT NULL, part_type TEXT NOT NULL,
  ordinal INTEGER NOT NULL, text_content TEXT, tool_call_id TEXT, tool_name TEXT, tool_input TEXT, tool_output TEXT, metadata TEXT, UNIQUE (message_id, ordinal));
INSERT INTO conversations (conversation_id, session_id) VALUES (1, 'ref');
INSERT INTO messages VALUES (1, 1, 1, 'user', 'read the file', 4, '2026-02-17 07:37:00');
INSERT INTO message_parts VALUES ('p1', 1, 'ref', 'text', 0, 'read the file', NULL, NULL, NULL, NULL, '{"originalRole":"user"}');
INSERT INTO messages VALUES (2, 1, 2, 'assistant', '', 5, '2026-02-17 07:37:01');
INSERT INTO message_parts VALUES ('p2', 2, 'ref', 'tool', 0, NULL, 'call_1', 'read', '{"path":"a.txt"}', NULL, '{"originalRole":"assistant","rawType":"toolCall"}');
INSERT INTO messages VALUES (3, 1, 3, 'tool', 'ENOENT', 2, '2026-02-17 07:37:02');
INSERT INTO message_parts VALUES ('p3', 3, 'ref', 'tool', 0, NULL, 'call_1', 'read', NULL, 'ENOENT', '{"originalRole":"toolResult","toolCallId":"call_1","toolName":"read","isError":true}');
`)
    const e = await LcmEngine.open({ dbPath })
    const back = await e.getMessages(1)
    expect(back).toEqual([
      { role: 'user', content: 'read the file', timestamp: Date.parse('2026-02-17T07:37:00Z') },
      { role: 'assistant', content: [{ type: 'toolCall', id: 'call_1', name: 'read', arguments: { path: 'a.txt' } }], timestamp: Date.parse('2026-02-17T07:37:01Z') },
      { role: 'toolResult', content: [{ type: 'text', text: 'ENOENT' }], toolCallId: 'call_1', toolName: 'read', isError: true, timestamp: Date.parse('2026-02-17T07:37:02Z') },
    ])
    await e.close()
  })
})

describe('assemble never returns more than the budget', () => {
  const big = (c, i) => `${c}${i} ${'w'.repeat(400)}`

  it('clamps an over-budget fresh tail: oldest dropped first, newest user turn kept, drops reported', async () => {
    const e = await open({ freshTailCount: 64 })
    const msgs = []
    for (let i = 0; i < 6; i++) {
      msgs.push(user(big('q', i)))
      msgs.push({ role: 'assistant', content: [{ type: 'toolCall', id: `c${i}`, name: 'read', arguments: { i } }] })
      msgs.push({ role: 'toolResult', toolCallId: `c${i}`, toolName: 'read', content: [{ type: 'text', text: big('r', i) }], isError: false })
    }
    await e.ingestBatch({ sessionId: 's', messages: msgs })
    const r = await e.assemble({ sessionId: 's', tokenBudget: 400 })
    expect(r.estimatedTokens).toBeLessThanOrEqual(400)
    expect(r.stats.overBudget).toBe(false)
    expect(r.stats.clampedMessages).toBeGreaterThan(0)
    expect(r.stats.clampedMessages + r.messages.length).toBe(msgs.length)
    expect(r.messages[r.messages.length - 1]).toEqual(msgs[msgs.length - 1])
    expect(r.messages.some((m) => m.content === big('q', 5))).toBe(true)
    // Never starts with a result whose call was dropped, never ends on a dangling call.
    const calls = new Set(r.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []).filter((b) => b.type === 'toolCall').map((b) => b.id)))
    for (const m of r.messages.filter((m) => m.role === 'toolResult')) expect(calls.has(m.toolCallId)).toBe(true)
    // The newest user turn alone over the budget: kept, and reported over.
    const tiny = await e.assemble({ sessionId: 's', tokenBudget: 10 })
    expect(tiny.messages[0].content).toBe(big('q', 5))
    expect(tiny.stats.overBudget).toBe(true)
    await e.close()
  })

  it('keeps the live fallback bounded the same way', async () => {
    const e = await open()
    const live = Array.from({ length: 10 }, (_, i) => (i % 2 ? assistant(big('a', i)) : user(big('u', i))))
    const r = await e.assemble({ sessionId: 'nobody', tokenBudget: 450, messages: live })
    expect(r.stats.liveFallback).toBe(true)
    expect(r.estimatedTokens).toBeLessThanOrEqual(450)
    expect(r.stats.clampedMessages).toBe(live.length - r.messages.length)
    expect(r.messages[r.messages.length - 1]).toBe(live[live.length - 1])
    const all = await e.assemble({ sessionId: 'nobody', tokenBudget: 100000, messages: live })
    expect(all.messages).toBe(live)
    expect(all.stats.clampedMessages).toBe(0)
    await e.close()
  })
})
