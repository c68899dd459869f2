// Issue 64: consistent copies while writers write (online backup), the space of the
// file (auto_vacuum = INCREMENTAL on new files, storage stats, reclaimSpace) and the
// operator commands `lcm-tui backup`, `lcm-tui vacuum`, `lcm-tui space`.
import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync, copyFileSync, mkdirSync } from 'node:fs'
import { LcmEngine, tempDir, workload, turns, rejectsWithCode, root } from './helpers.mjs'
import { turnMessages } from './fixtures/ingest-child.mjs'
import { writeDb, query } from './sqlfile.mjs'

function tui(args) {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'lcm-tui.js'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '' },
    timeout: 120_000,
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

/** Spawns a fixture child and calls `onLine` for each stdout line until it exits. */
function child(script, args, onLine) {
  const p = spawn(process.execPath, [join(root, '__test__', 'fixtures', script), ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
  let buffered = ''
  const exited = new Promise((resolve) => p.on('exit', resolve))
  p.stdout.on('data', (d) => {
    buffered += String(d)
    const lines = buffered.split('\n')
    buffered = lines.pop()
    for (const line of lines) onLine(line, p)
  })
  return { p, exited }
}

async function filled(dbPath, n = 300) {
  const e = await LcmEngine.open({ dbPath })
  for (const t of turns(workload(n, 5).messages)) await e.ingestBatch({ sessionId: 'base', messages: t })
  return e
}

describe('backup', () => {
  it('takes a consistent copy while 4 processes write; the copy passes integrity_check and doctor and holds every turn acknowledged before it began', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'lcm.db')
    const e = await filled(dbPath, 2000)
    const baseMsgs = await e.getMessages((await e.getConversation({ sessionId: 'base' })).conversationId)
    // The workload's file dumps are externalized: the copy must carry them.
    expect(existsSync(join(dir, 'lcm-files'))).toBe(true)
    const acked = new Map()
    let total = 0
    const writers = [0, 1, 2, 3].map((k) => child('ingest-child.mjs', [dbPath, '1', `w${k}`], (line) => {
      const m = /^acked (\d+) (\d+)$/.exec(line)
      if (m) { acked.set(k, Number(m[2])); total++ }
    }))
    while (total < 40) await new Promise((r) => setTimeout(r, 20))
    const before = new Map(acked)
    const totalBefore = total
    const to = join(dir, 'copies', 'copy.db')
    const report = await e.backup({ to })
    const duringWrites = total - totalBefore
    for (const w of writers) w.p.kill('SIGKILL')
    await Promise.all(writers.map((w) => w.exited))
    // The writers kept committing while the copy was taken.
    expect(duringWrites).toBeGreaterThan(0)
    expect(report).toMatchObject({ path: to, integrity: ['ok'] })
    expect(report.steps).toBeGreaterThanOrEqual(1)
    expect(report.bytes).toBe(statSync(to).size)
    expect(existsSync(`${to}.partial`)).toBe(false)
    const copy = await LcmEngine.open({ dbPath: to })
    expect(await copy.integrityCheck()).toEqual(['ok'])
    const doc = await copy.doctor({ all: true })
    expect(doc.violations).toEqual([])
    expect(doc.ok).toBe(true)
    const base = await copy.getConversation({ sessionId: 'base' })
    expect(await copy.getMessages(base.conversationId)).toEqual(baseMsgs)
    expect(existsSync(join(dir, 'copies', 'lcm-files'))).toBe(true)
    for (let k = 0; k < 4; k++) {
      const conv = await copy.getConversation({ sessionId: `w${k}-0` })
      const stored = conv ? await copy.getMessages(conv.conversationId) : []
      // A snapshot: whole turns, in order, at least those acknowledged before the backup.
      expect(stored.length % 3).toBe(0)
      expect(stored.length / 3).toBeGreaterThanOrEqual((before.get(k) ?? -1) + 1)
      for (let t = 0; t < stored.length / 3; t++) expect(stored.slice(t * 3, t * 3 + 3)).toEqual(turnMessages(0, t))
    }
    await copy.close()
    await e.close()
  }, 120000)

  it('refuses the database itself, a relative path and an in-memory engine; rejects a missing `to`', async () => {
    const dbPath = join(tempDir(), 'lcm.db')
    const e = await filled(dbPath, 20)
    await rejectsWithCode(e.backup({ to: dbPath }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(e.backup({}), 'LCM_INVALID_INPUT')
    await rejectsWithCode(e.backup({ to: '' }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(e.backup({ to: 'relative.db' }), 'LCM_INVALID_INPUT')
    await e.close()
    const m = await LcmEngine.open({ dbPath: ':memory:' })
    await rejectsWithCode(m.backup({ to: join(tempDir(), 'x.db') }), 'LCM_INVALID_INPUT')
    await m.close()
  })

  it('SIGKILL in the middle of backups leaves the source whole and the copy either absent or complete', async () => {
    for (let round = 0; round < 3; round++) {
      const dir = tempDir()
      const dbPath = join(dir, 'lcm.db')
      const e = await filled(dbPath, 600)
      const msgs = await e.getMessages((await e.getConversation({ sessionId: 'base' })).conversationId)
      await e.close()
      const to = join(dir, 'copy.db')
      let done = 0
      const c = child('backup-child.mjs', [dbPath, to], (line, p) => {
        if (line.startsWith('backup ')) done++
        // Kill at a different moment each round: after 0, 1 or 2 finished copies,
        // a few ms into the next.
        if (line === 'ready' || line.startsWith('backup ')) {
          if (done >= round) setTimeout(() => p.kill('SIGKILL'), 3 + round * 4)
        }
      })
      await c.exited
      const src = await LcmEngine.open({ dbPath })
      expect(await src.integrityCheck()).toEqual(['ok'])
      expect(await src.getMessages((await src.getConversation({ sessionId: 'base' })).conversationId)).toEqual(msgs)
      await src.close()
      if (existsSync(to)) {
        const copy = await LcmEngine.open({ dbPath: to })
        expect(await copy.integrityCheck()).toEqual(['ok'])
        expect(await copy.getMessages((await copy.getConversation({ sessionId: 'base' })).conversationId)).toEqual(msgs)
        expect((await copy.doctor({ all: true })).ok).toBe(true)
        await copy.close()
      }
    }
  }, 120000)

  it('lcm-tui backup --to DIR --keep N keeps the N newest copies; --keep needs a directory', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'lcm.db')
    const e = await filled(dbPath, 40)
    const copies = join(dir, 'copies') + '/'
    for (let i = 0; i < 3; i++) {
      const r = tui(['backup', '--db', dbPath, '--to', copies, '--keep', '2', '--json'])
      expect(r.code).toBe(0)
      const out = JSON.parse(r.out)
      expect(out.integrity).toEqual(['ok'])
      expect(out.removed.length).toBe(i < 2 ? 0 : 1)
      await new Promise((res) => setTimeout(res, 5))
    }
    const names = readdirSync(copies).filter((n) => n.startsWith('lcm-'))
    expect(names.length).toBe(2)
    expect(tui(['backup', '--db', dbPath, '--to', join(dir, 'one.db'), '--keep', '2']).code).toBe(2)
    const r = tui(['backup', '--db', dbPath, '--to', join(dir, 'one.db')])
    expect(r.code).toBe(0)
    expect(r.out).toContain('integrity ok')
    const copy = await LcmEngine.open({ dbPath: join(dir, 'one.db') })
    expect((await copy.listConversations()).length).toBe(1)
    await copy.close()
    await e.close()
  }, 120000)
})

describe('space', () => {
  it('a new database is in incremental auto-vacuum; storageStats measures every table; reclaimSpace on a file without free pages', async () => {
    const dbPath = join(tempDir(), 'lcm.db')
    const e = await filled(dbPath, 200)
    const s = await e.storageStats({ tables: true })
    expect(s.autoVacuum).toBe('incremental')
    expect(s.overCap).toBe(false)
    expect(s.pageCount * s.pageSize).toBe(s.databaseBytes)
    const names = s.tables.map((t) => t.name)
    for (const t of ['messages', 'message_parts', 'context_items']) expect(names).toContain(t)
    const sum = s.tables.reduce((a, t) => a + t.pages, 0)
    // Every page but the free ones and the pointer-map pages belongs to a btree.
    expect(sum).toBeLessThanOrEqual(s.pageCount)
    expect(sum).toBeGreaterThan(s.pageCount * 0.9)
    expect((await e.storageStats()).tables).toEqual([])
    const r = await e.reclaimSpace()
    expect(r).toMatchObject({ autoVacuum: 'incremental', freelistCount: 0 })
    await rejectsWithCode(e.reclaimSpace({ maxPages: 'x' }), 'LCM_INVALID_INPUT')
    await e.close()
  })

  it('lcm-tui vacuum converts an older file to incremental, keeps every row, and lcm-tui space reports it', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'lcm.db')
    // An older file: made without the engine (auto_vacuum NONE), then opened by it.
    writeDb(dbPath, 'CREATE TABLE conversations (conversation_id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT (datetime(\'now\')), updated_at TEXT NOT NULL DEFAULT (datetime(\'now\')));')
    const e = await filled(dbPath, 300)
    expect((await e.storageStats()).autoVacuum).toBe('none')
    const conv = (await e.getConversation({ sessionId: 'base' })).conversationId
    const msgs = await e.getMessages(conv)
    await e.close()
    let r = tui(['space', '--db', dbPath, '--json'])
    expect(r.code).toBe(0)
    expect(JSON.parse(r.out)).toMatchObject({ autoVacuum: 'none' })
    r = tui(['vacuum', '--db', dbPath, '--json'])
    expect(r.code).toBe(0)
    const v = JSON.parse(r.out)
    expect(v).toMatchObject({ autoVacuumBefore: 'none', autoVacuum: 'incremental' })
    r = tui(['space', '--db', dbPath])
    expect(r.code).toBe(0)
    expect(r.out).toContain('auto_vacuum incremental')
    expect(r.out).toContain('message_parts')
    const again = await LcmEngine.open({ dbPath })
    expect(await again.getMessages(conv)).toEqual(msgs)
    expect(await again.integrityCheck()).toEqual(['ok'])
    expect((await again.doctor({ all: true })).ok).toBe(true)
    await again.close()
  }, 120000)
})
