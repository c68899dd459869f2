import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { existsSync } from 'node:fs'
import { LcmEngine, addon, tempDir, workload, turns, rejectsWithCode } from './helpers.mjs'

describe('open / close', () => {
  it('opens a file database (creating parent directories) and an in-memory one', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'nested', 'deeper', 'lcm.db')
    const e = await LcmEngine.open({ dbPath })
    expect(e.dbPath).toBe(dbPath)
    expect(existsSync(dbPath)).toBe(true)
    await e.close()
    const m = await LcmEngine.open({ dbPath: ':memory:' })
    await m.close()
    expect(addon.sqliteVersion()).toMatch(/^3\.\d+\.\d+$/)
  })

  it('closing twice is harmless and later calls reject with LCM_CLOSED', async () => {
    const e = await LcmEngine.open({ dbPath: ':memory:' })
    await e.close()
    await e.close()
    await rejectsWithCode(e.getMessages(1), 'LCM_CLOSED')
    await rejectsWithCode(e.ingest({ sessionId: 's', message: { role: 'user', content: 'x' } }), 'LCM_CLOSED')
  })
})

describe('ingest round trip', () => {
  it('stores a workload turn by turn and rebuilds every message exactly', async () => {
    const { messages } = workload(600, 3)
    const e = await LcmEngine.open({ dbPath: join(tempDir(), 'lcm.db') })
    let conversationId
    for (const turn of turns(messages)) {
      const r = await e.ingestBatch({ sessionId: 'sess-1', messages: turn })
      expect(r.ingestedCount).toBe(turn.length)
      conversationId = r.conversationId
    }
    const back = await e.getMessages(conversationId)
    expect(back.length).toBe(messages.length)
    for (let i = 0; i < messages.length; i++) expect(JSON.stringify(back[i])).toBe(JSON.stringify(messages[i]))
    const items = await e.getContextItems(conversationId)
    expect(items.map((x) => x.ordinal)).toEqual(messages.map((_, i) => i))
    const stats = await e.getStats(conversationId)
    expect(stats.messageCount).toBe(messages.length)
    await e.close()
  })
})
