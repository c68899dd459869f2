// engine.status and `lcm-tui status`: the database and one session's context.
import { describe, it, expect } from 'vitest'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { statSync } from 'node:fs'
import { LcmEngine, rejectsWithCode, tempDir, root } from './helpers.mjs'

const SMALL = { freshTailCount: 4, leafChunkTokens: 400, leafMinFanout: 2, condensedMinFanout: 2, leafTargetTokens: 40, condensedTargetTokens: 40, timezone: 'UTC' }

function messages(n) {
  return Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i} ${'budget review slides venue '.repeat(12)}`, timestamp: 1_700_000_000_000 + i * 1000 }))
}

describe('engine.status', () => {
  it('reports the database, the conversations, and the session before and after a compaction', async () => {
    const path = join(tempDir('lcm-status-'), 'lcm.db')
    const engine = await LcmEngine.open({ dbPath: path, ...SMALL })
    const S = { sessionId: 's1', sessionKey: 'agent:main:main' }
    await engine.ingestBatch({ ...S, messages: messages(30) })
    // The checkpointer may move pages from the WAL into the file at any moment: the
    // sizes reported are the file's as of just before or just after the call.
    const sizes = () => [statSync(path).size, statSync(`${path}-wal`).size]
    const before = sizes()
    const db = await engine.status()
    const after = sizes()
    expect(db.session).toBeNull()
    expect(db.database.path).toBe(path)
    expect([before[0], after[0]]).toContain(db.database.fileBytes)
    expect([before[1], after[1]]).toContain(db.database.walBytes)
    expect(db.database.fileBytes % db.database.pageSize).toBe(0)
    // Pages as the connection sees them, the write-ahead log included.
    expect(db.database.pageSize * db.database.pageCount).toBeGreaterThan(db.database.largestTables[0].bytes)
    expect(db.database.largestTables).toHaveLength(3)
    expect(db.conversations).toEqual({ active: 1, archived: 0 })
    const s0 = (await engine.status({ ...S, tokenBudget: 2_000 })).session
    expect(s0).toMatchObject({ messages: 30, contextItems: 30, tokenBudget: 2_000, threshold: 1_500, contextThreshold: 0.75, summariesByDepth: [], lastCompaction: null })
    expect(s0.pending).toEqual({ compactionsRunning: 0, compactionDue: s0.contextTokens > 1_500, contextGap: false })
    const r = await engine.compact({ ...S, tokenBudget: 2_000, force: true })
    expect(r.compacted).toBe(true)
    const s1 = (await engine.status({ ...S, tokenBudget: 2_000, contextThreshold: 0.5, tables: false })).session
    expect(s1.threshold).toBe(1_000)
    expect(s1.lastCompaction).toMatchObject({ tokensBefore: r.tokensBefore, tokensAfter: r.tokensAfter, passes: r.passes.length, mode: r.mode, reason: r.reason })
    expect(s1.lastCompaction.at).toMatch(/^\d{4}-\d\d-\d\dT/)
    const summaries = await engine.getSummaries(s1.conversationId)
    expect(s1.summariesByDepth.reduce((a, d) => a + d.count, 0)).toBe(summaries.length)
    expect(s1.contextTokens).toBe(r.tokensAfter)
    await engine.close()
  })

  it('rejects bad params with LCM_INVALID_INPUT', async () => {
    const engine = await LcmEngine.open({ dbPath: ':memory:' })
    await rejectsWithCode(engine.status({ sessionId: 's', tokenBudget: 0 }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(engine.status({ sessionId: 's', contextThreshold: 2 }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(engine.status({ session: 's' }), 'LCM_INVALID_INPUT')
    expect((await engine.status({ sessionKey: 'nobody' })).session.conversationId).toBeNull()
    await engine.close()
  })
})

describe('lcm-tui status', () => {
  it('prints the same figures as text and as JSON', async () => {
    const path = join(tempDir('lcm-status-cli-'), 'lcm.db')
    const engine = await LcmEngine.open({ dbPath: path, ...SMALL })
    await engine.ingestBatch({ sessionId: 's1', messages: messages(12) })
    const expected = await engine.status({ sessionId: 's1', tokenBudget: 10_000, tables: false })
    await engine.close()
    const run = (...args) => spawnSync(process.execPath, [join(root, 'bin', 'lcm-tui.js'), 'status', '--db', path, ...args], { encoding: 'utf8' })
    const json = run('--session', 's1', '--budget', '10000', '--no-tables', '--json')
    expect(json.status).toBe(0)
    const got = JSON.parse(json.stdout)
    expect(got.session).toEqual(expected.session)
    expect(got.conversations).toEqual(expected.conversations)
    const text = run('--session', 's1', '--budget', '10000')
    expect(text.status).toBe(0)
    expect(text.stdout).toContain(`context: 12 items, ${expected.session.contextTokens.toLocaleString('en-US')} tokens of 10,000 budget`)
    expect(text.stdout).toMatch(/largest: /)
  })
})
