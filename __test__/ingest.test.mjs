import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { writeFileSync, mkdirSync, chmodSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { spawn } from 'node:child_process'
import { LcmEngine, tempDir, workload, turns, rejectsWithCode, root } from './helpers.mjs'
import { turnMessages } from './fixtures/ingest-child.mjs'

const open = (extra = {}) => LcmEngine.open({ dbPath: join(tempDir(), 'lcm.db'), ...extra })
const user = (content, extra = {}) => ({ role: 'user', content, ...extra })

describe('idempotency', () => {
  it('a message carrying a known transcript entry id is not stored twice', async () => {
    const e = await open()
    const a = await e.ingest({ sessionId: 's', message: user('hello'), entryId: 'entry-1' })
    expect(a.ingested).toBe(true)
    const b = await e.ingest({ sessionId: 's', message: user('hello'), entryId: 'entry-1' })
    expect(b).toMatchObject({ ingested: false, messageId: a.messageId, seq: a.seq })
    const batch = await e.ingestBatch({ sessionId: 's', messages: [user('hello'), user('again')], entryIds: ['entry-1', 'entry-2'] })
    expect(batch.results.map((r) => r.ingested)).toEqual([false, true])
    expect((await e.getStats(a.conversationId)).messageCount).toBe(2)
    await e.close()
  })

  it('an identical replay inside one batch is stored once; distinct timestamps are distinct messages', async () => {
    const e = await open()
    const m = user('same', { timestamp: 1000 })
    const r = await e.ingestBatch({ sessionId: 's', messages: [m, m, user('same', { timestamp: 2000 })] })
    expect(r.results.map((x) => x.ingested)).toEqual([true, false, true])
    expect(r.ingestedCount).toBe(2)
    await e.close()
  })

  it('messages that differ only in their tool calls are not mistaken for replays', async () => {
    const e = await open()
    const call = (id, command) => ({ role: 'assistant', content: [{ type: 'toolCall', id, name: 'exec', arguments: { command } }] })
    const r = await e.ingestBatch({ sessionId: 's', messages: [call('call_1', 'ls'), call('call_2', 'pwd'), call('call_2', 'pwd')] })
    expect(r.results.map((x) => x.ingested)).toEqual([true, true, false])
    const back = await e.getMessages(r.conversationId)
    expect(back).toEqual([call('call_1', 'ls'), call('call_2', 'pwd')])
    await e.close()
  })

  it('heartbeat turns are not stored', async () => {
    const e = await open()
    const r = await e.ingestBatch({ sessionId: 's', messages: [user('ping')], isHeartbeat: true })
    expect(r.ingestedCount).toBe(0)
    expect(await e.getConversation({ sessionId: 's' })).toBe(null)
    await e.close()
  })
})

describe('conversations', () => {
  it('are found by session key first and by session id second', async () => {
    const e = await open()
    const a = await e.ingest({ sessionId: 'run-1', sessionKey: 'agent:main:chat', message: user('x') })
    const b = await e.ingest({ sessionId: 'run-2', sessionKey: 'agent:main:chat', message: user('y') })
    expect(b.conversationId).toBe(a.conversationId)
    const c = await e.ingest({ sessionId: 'run-3', message: user('z') })
    expect(c.conversationId).not.toBe(a.conversationId)
    expect((await e.getConversation({ sessionKey: 'agent:main:chat' })).sessionId).toBe('run-1')
    expect((await e.listConversations()).length).toBe(2)
    await rejectsWithCode(e.getConversation({}), 'LCM_INVALID_INPUT')
    await e.close()
  })
})

describe('concurrency', () => {
  it('unawaited calls for one session are applied in call order', async () => {
    const e = await open()
    const calls = []
    for (let i = 0; i < 200; i++) calls.push(e.ingest({ sessionId: 's', message: user(`m${i}`) }))
    const results = await Promise.all(calls)
    expect(results.map((r) => r.seq)).toEqual(results.map((_, i) => i + 1))
    const back = await e.getMessages(results[0].conversationId)
    expect(back.map((m) => m.content)).toEqual(results.map((_, i) => `m${i}`))
    await e.close()
  })

  it('different sessions ingest concurrently without interfering', async () => {
    const e = await open()
    const sessions = ['a', 'b', 'c', 'd']
    await Promise.all(sessions.flatMap((s) => Array.from({ length: 50 }, (_, i) => e.ingest({ sessionId: s, message: user(`${s}${i}`) }))))
    for (const s of sessions) {
      const conv = await e.getConversation({ sessionId: s })
      const msgs = await e.getMessages(conv.conversationId)
      expect(msgs.map((m) => m.content)).toEqual(Array.from({ length: 50 }, (_, i) => `${s}${i}`))
    }
    await e.close()
  })
})

describe('bad input never crashes and never loses earlier data', () => {
  it('rejects malformed messages with LCM_INVALID_INPUT naming the problem', async () => {
    const e = await open()
    const first = await e.ingest({ sessionId: 's', message: user('kept') })
    const cases = [
      // Only a message that is not an object, or has no role, is bad input: every
      // role and content shape is stored (see host.test.mjs).
      [{ content: 'no role' }, /no role/],
      [{ role: 7, content: 'x' }, /role must be a string/],
      ['just a string', /must be an object/],
      [null, /must be an object/],
    ]
    for (const [message, pattern] of cases) {
      const err = await rejectsWithCode(e.ingest({ sessionId: 's', message }), 'LCM_INVALID_INPUT')
      expect(err.message).toMatch(pattern)
    }
    await rejectsWithCode(e.ingest({ message: user('x') }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(e.ingestBatch({ sessionId: 's', messages: 'nope' }), 'LCM_INVALID_INPUT')
    // A bad message anywhere in a batch rejects the whole batch, naming its index.
    const err = await rejectsWithCode(e.ingestBatch({ sessionId: 's', messages: [user('fine'), { content: 'x' }] }), 'LCM_INVALID_INPUT')
    expect(err.message).toMatch(/messages\[1\]/)
    const back = await e.getMessages(first.conversationId)
    expect(back).toEqual([user('kept')])
    await e.close()
  })

  it('stores a 50 MB message and rebuilds it; refuses one over maxMessageBytes', async () => {
    const e = await open()
    const big = 'x'.repeat(50 * 1024 * 1024)
    const r = await e.ingest({ sessionId: 's', message: user(big) })
    expect(r.ingested).toBe(true)
    const back = await e.getMessages(r.conversationId)
    expect(back[0].content.length).toBe(big.length)
    await e.close()
    const small = await open({ maxMessageBytes: 1024 })
    const err = await rejectsWithCode(small.ingest({ sessionId: 's', message: user('y'.repeat(4096)) }), 'LCM_INVALID_INPUT')
    expect(err.message).toMatch(/maxMessageBytes/)
    await small.close()
  })

  it('keeps NUL bytes and stores lone surrogates as U+FFFD', async () => {
    const e = await open()
    const nul = 'before\u0000after'
    const lone = 'broken \ud83d emoji and \udc00 low'
    const r = await e.ingestBatch({ sessionId: 's', messages: [user(nul), user(lone), user('pair 😀 ok')] })
    const back = await e.getMessages(r.conversationId)
    expect(back[0].content).toBe(nul)
    expect(back[1].content).toBe('broken \ufffd emoji and \ufffd low')
    expect(back[2].content).toBe('pair 😀 ok')
    await e.close()
  })

  it('reports an unwritable path and a file that is not SQLite with LCM_DB_OPEN', async () => {
    const dir = tempDir()
    const notDb = join(dir, 'notes.txt')
    writeFileSync(notDb, 'this is not a database, just some text that is long enough to have a header'.repeat(20))
    let err = await rejectsWithCode(LcmEngine.open({ dbPath: notDb }), 'LCM_DB_OPEN')
    expect(err.message).toMatch(/not a SQLite database|not a database/)
    const blocker = join(dir, 'file-not-dir')
    writeFileSync(blocker, 'x')
    err = await rejectsWithCode(LcmEngine.open({ dbPath: join(blocker, 'lcm.db') }), 'LCM_DB_OPEN')
    expect(err.message).toMatch(/directory|cannot open/)
    if (process.getuid && process.getuid() !== 0) {
      const ro = join(dir, 'ro')
      mkdirSync(ro)
      chmodSync(ro, 0o500)
      await rejectsWithCode(LcmEngine.open({ dbPath: join(ro, 'lcm.db') }), 'LCM_DB_OPEN')
    }
    await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', freshTailCount: -1 }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', notAnOption: true }), 'LCM_INVALID_INPUT')
    // The memory map is opt-in and bounded by SQLite's ceiling (just under 2 GiB).
    for (const bad of [-1, 2 ** 31, 1.5, '1']) {
      await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', mmapSizeBytes: bad }), 'LCM_INVALID_INPUT')
    }
    const mapped = await LcmEngine.open({ dbPath: join(dir, 'mapped.db'), mmapSizeBytes: 64 * 1024 * 1024 })
    await mapped.close()
  })
})

describe('the event loop stays free', () => {
  it('ingesting a 10,000-message workload turn by turn never stalls it for long', async () => {
    const { messages } = workload(10000, 1)
    const e = await open()
    const h = monitorEventLoopDelay({ resolution: 1 })
    h.enable()
    const start = performance.now()
    for (const turn of turns(messages)) await e.ingestBatch({ sessionId: 'loop', messages: turn })
    const secs = (performance.now() - start) / 1000
    h.disable()
    const maxMs = h.max / 1e6
    console.log(`ingest: ${Math.round(messages.length / secs)} msgs/s, event-loop max delay ${maxMs.toFixed(1)} ms, p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms`)
    // Loose bounds: the suite shares a 2-core machine with other processes, so single
    // scheduling hiccups happen; blocking the loop on SQLite would show as seconds.
    expect(h.percentile(99) / 1e6).toBeLessThan(25)
    expect(maxMs).toBeLessThan(300)
    const conv = await e.getConversation({ sessionId: 'loop' })
    expect((await e.getStats(conv.conversationId)).messageCount).toBe(10000)
    await e.close()
  })
})

describe('group commit', () => {
  it('unawaited ingests of several sessions commit together; a bad one fails alone', async () => {
    const dir = tempDir()
    const e = await LcmEngine.open({ dbPath: join(dir, 'lcm.db') })
    const calls = []
    for (let i = 0; i < 12; i++) {
      const message = i === 5 ? 42 : user(`message ${i}`)
      calls.push(e.ingestBatch({ sessionId: `s${i % 4}`, messages: [message, user(`second ${i}`)] }))
    }
    const settled = await Promise.allSettled(calls)
    expect(settled[5].status).toBe('rejected')
    expect(settled[5].reason.code).toBe('LCM_INVALID_INPUT')
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(11)
    await e.close()
    // Every acknowledged batch is durable (read back after close) and the failed
    // one left nothing, not even its valid second message.
    const again = await LcmEngine.open({ dbPath: join(dir, 'lcm.db') })
    const texts = []
    for (let s = 0; s < 4; s++) {
      const conv = await again.getConversation({ sessionId: `s${s}` })
      for (const m of await again.getMessages(conv.conversationId)) texts.push(m.content)
    }
    expect(texts).toHaveLength(22)
    expect(texts).not.toContain('second 5')
    expect(texts).toContain('second 11')
    await again.close()
  })

  it('no ingest resolves before its commit: a reader sees it at once', async () => {
    const dir = tempDir()
    const e = await LcmEngine.open({ dbPath: join(dir, 'lcm.db') })
    const seen = []
    const calls = Array.from({ length: 20 }, (_, i) => e.ingest({ sessionId: 'one', message: user(`m${i}`) }).then(async (r) => {
      // Reads run on a separate read connection: only committed rows are visible.
      const msgs = await e.getMessages(r.conversationId)
      seen.push(msgs.some((m) => m.content === `m${i}`))
      return r
    }))
    const results = await Promise.all(calls)
    expect(results.map((r) => r.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
    expect(seen).toEqual(Array(20).fill(true))
    await e.close()
  })
})

describe('a crash during group commits', () => {
  it('SIGKILL while 8 sessions ingest: every acknowledged turn is stored byte-exact, every stored turn is whole', async () => {
    const dbPath = join(tempDir(), 'lcm.db')
    const child = spawn(process.execPath, [join(root, '__test__', 'fixtures', 'ingest-child.mjs'), dbPath, '8'], { stdio: ['ignore', 'pipe', 'inherit'] })
    const acked = new Map()
    let total = 0
    let buffered = ''
    await new Promise((resolve) => {
      child.stdout.on('data', (d) => {
        buffered += String(d)
        const lines = buffered.split('\n')
        buffered = lines.pop()
        for (const line of lines) {
          const m = /^acked (\d+) (\d+)$/.exec(line)
          if (!m) continue
          acked.set(Number(m[1]), Number(m[2]))
          if (++total >= 400 && !child.killed) child.kill('SIGKILL')
        }
      })
      child.on('exit', resolve)
    })
    expect(total).toBeGreaterThanOrEqual(400)
    const e = await LcmEngine.open({ dbPath })
    expect(await e.integrityCheck()).toEqual(['ok'])
    for (let s = 0; s < 8; s++) {
      const conv = await e.getConversation({ sessionId: `crash-${s}` })
      const stored = conv ? await e.getMessages(conv.conversationId) : []
      // Whole turns only, in order, and at least every acknowledged one.
      expect(stored.length % 3).toBe(0)
      const turnsStored = stored.length / 3
      expect(turnsStored).toBeGreaterThanOrEqual((acked.get(s) ?? -1) + 1)
      for (let t = 0; t < turnsStored; t++) expect(stored.slice(t * 3, t * 3 + 3)).toEqual(turnMessages(s, t))
    }
    await e.close()
  }, 60000)
})
