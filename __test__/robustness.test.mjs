// Real text never crashes anything: the multibyte-whitespace grep repro on both
// kinds of database, contained panics (write and read jobs, `onLog`), and a
// database moved or copied to another directory.
import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { cpSync, readdirSync, existsSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { LcmEngine, tempDir, rejectsWithCode, root } from './helpers.mjs'

const SPACES = ['\u00a0', '\u3000', '\u2028', '\u0085', '\u1680', '\u202f', '\u205f', '\u2009']

function dbKinds() {
  return [
    ['a :memory: database', () => ({ dbPath: ':memory:' })],
    ['a file database', () => ({ dbPath: join(tempDir(), 'lcm.db') })],
  ]
}

describe('grep on real text', () => {
  for (const [kind, opts] of dbKinds()) {
    it(`finds the hit after multibyte whitespace in both modes on ${kind}`, async () => {
      const e = await LcmEngine.open(opts())
      let conv
      for (const ws of SPACES) {
        const r = await e.ingest({ sessionId: 's', message: { role: 'user', content: 'x'.repeat(60) + ws + 'y'.repeat(10) + ' needle here' } })
        conv = r.conversationId
      }
      for (const mode of ['regex', 'full_text']) {
        const r = await e.grep({ pattern: 'needle', mode, conversationId: conv })
        expect(r.messages.length).toBe(SPACES.length)
        for (const h of r.messages) expect(JSON.stringify(h)).toContain('needle here')
      }
      // Still serving afterwards (a :memory: engine used to lose its writer thread).
      await e.ingest({ sessionId: 's', message: { role: 'user', content: 'after' } })
      expect((await e.getMessages(conv)).length).toBe(SPACES.length + 1)
      await e.close()
    })
  }
})

describe('a panic never takes the engine down', () => {
  for (const [kind, opts] of dbKinds()) {
    it(`contains a panic in a write job and in a read job on ${kind}`, async () => {
      const logs = []
      const e = await LcmEngine.open({ ...opts(), onLog: (r) => logs.push(r) })
      const r = await e.ingest({ sessionId: 's', message: { role: 'user', content: 'first' } })

      e._debugPanicNextJob('write')
      const w = await rejectsWithCode(e.ingest({ sessionId: 's', message: { role: 'user', content: 'lost' } }), 'LCM_INTERNAL')
      expect(w.message).toMatch(/internal error in \S*ingest/)
      expect(w.message).toContain('rolled back')
      const next = await e.ingest({ sessionId: 's', message: { role: 'user', content: 'second' } })
      expect(next.ingested).toBe(true)

      e._debugPanicNextJob('read')
      const rd = await rejectsWithCode(e.getMessages(r.conversationId), 'LCM_INTERNAL')
      expect(rd.message).toMatch(/get_messages/)
      const msgs = await e.getMessages(r.conversationId)
      expect(msgs.map((m) => m.content)).toEqual(['first', 'second'])
      expect((await e.grep({ pattern: 'second', conversationId: r.conversationId })).messages.length).toBe(1)

      await new Promise((res) => setTimeout(res, 50))
      expect(logs.length).toBe(2)
      for (const l of logs) {
        expect(l).toMatchObject({ level: 'error', code: 'LCM_INTERNAL' })
        expect(l.message).toContain('debug: panic injected')
        expect(typeof l.operation).toBe('string')
      }
      await e.close()
    })
  }

  it('prints nothing on stderr for a contained panic, and a throwing onLog is harmless', () => {
    const script = `
      const { LcmEngine } = require(${JSON.stringify(join(root, 'index.js'))})
      ;(async () => {
        const e = await LcmEngine.open({ dbPath: ':memory:', onLog: () => { throw new Error('hook broke') } })
        e._debugPanicNextJob('write')
        const err = await e.ingest({ sessionId: 's', message: { role: 'user', content: 'x' } }).catch((x) => x)
        await new Promise((r) => setTimeout(r, 50))
        const ok = await e.ingest({ sessionId: 's', message: { role: 'user', content: 'y' } })
        await e.close()
        console.log(JSON.stringify({ code: err.code, ok: ok.ingested }))
      })()`
    const env = { ...process.env }
    delete env.RUST_BACKTRACE
    const out = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8' })
    expect(out.stderr).toBe('')
    expect(JSON.parse(out.stdout.trim())).toEqual({ code: 'LCM_INTERNAL', ok: true })
  })

  it('rejects an onLog that is not a function and an unknown debug kind', async () => {
    await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', onLog: 'stderr' }), 'LCM_INVALID_INPUT')
    const e = await LcmEngine.open({ dbPath: ':memory:' })
    expect(() => e._debugPanicNextJob('sometimes')).toThrow(/'write' or 'read'/)
    await e.close()
  })
})

describe('a moved database keeps working', () => {
  const THRESHOLD = 2000

  async function original() {
    const dir = tempDir()
    const db = join(dir, 'lcm.db')
    const e = await LcmEngine.open({ dbPath: db, largeFileTokenThreshold: THRESHOLD })
    const big = `<file name="dump.sql">${'INSERT INTO t VALUES (1, \'漢字 é\');\n'.repeat(600)}</file>`
    const msgs = [
      { role: 'user', content: 'before the file' },
      { role: 'user', content: `here it is: ${big} done` },
      { role: 'assistant', content: [{ type: 'text', text: 'after the file' }] },
    ]
    const r = await e.ingestBatch({ sessionId: 'mv', messages: msgs })
    const stored = await e.getMessages(r.conversationId, { expandFiles: false })
    expect(stored[1].content).toMatch(/\[LCM File: file_/)
    await e.close()
    return { dir, msgs, conv: r.conversationId }
  }

  it('rebuilds every message when lcm-files was copied beside it', async () => {
    const { dir, msgs, conv } = await original()
    const moved = tempDir()
    cpSync(join(dir, 'lcm.db'), join(moved, 'lcm.db'))
    cpSync(join(dir, 'lcm-files'), join(moved, 'lcm-files'), { recursive: true })
    const e = await LcmEngine.open({ dbPath: join(moved, 'lcm.db') })
    const back = await e.getMessages(conv)
    expect(back.map((m) => JSON.stringify(m))).toEqual(msgs.map((m) => JSON.stringify(m)))
    const fileId = JSON.stringify(await e.getMessages(conv, { expandFiles: false })).match(/file_[0-9a-f]{16}/)[0]
    const d = await e.describe(fileId, { includeContent: true })
    expect(d.file.content).toContain('INSERT INTO t')
    // The doctor reports the stale stored path and, asked to, records the new one.
    const report = await e.doctor({ conversationId: conv })
    expect(report.violations.map((v) => [v.kind, v.repairable])).toEqual([['largeFileMoved', true]])
    expect(report.violations[0].details.fileId).toBe(fileId)
    const fixed = await e.doctor({ conversationId: conv, apply: true })
    expect(fixed.repairs.map((r) => r.kind)).toEqual(['relocatedLargeFile'])
    expect(fixed.ok).toBe(true)
    expect((await e.describe(fileId)).file.storageUri.startsWith(join(moved, 'lcm-files'))).toBe(true)
    expect((await e.getMessages(conv)).map((m) => JSON.stringify(m))).toEqual(msgs.map((m) => JSON.stringify(m)))
    await e.close()
  })

  it('without lcm-files, returns the other messages and flags the one whose file is gone', async () => {
    const { dir, msgs, conv } = await original()
    const moved = tempDir()
    cpSync(join(dir, 'lcm.db'), join(moved, 'lcm.db'))
    const e = await LcmEngine.open({ dbPath: join(moved, 'lcm.db') })
    const back = await e.getMessages(conv)
    expect(back[0]).toEqual(msgs[0])
    expect(back[2]).toEqual(msgs[2])
    expect(back[1].content).toMatch(/^here it is: \[LCM File: file_[0-9a-f]{16}/)
    expect(back[1].lcmMissingFiles).toEqual([back[1].content.match(/file_[0-9a-f]{16}/)[0]])
    // The original directory still holds the file, but nothing outside largeFilesDir is read.
    expect(existsSync(join(dir, 'lcm-files'))).toBe(true)
    const d = await e.describe(back[1].lcmMissingFiles[0], { expandFile: true })
    expect(d.file.content).toBeUndefined()
    expect(d.file.contentError).toMatch(/is missing/)
    const whole = await rejectsWithCode(e.describe(back[1].lcmMissingFiles[0], { includeContent: true }), 'LCM_NOT_FOUND')
    expect(whole.message).toMatch(/outside largeFilesDir/)
    const report = await e.doctor({ conversationId: conv, apply: true })
    expect(report.violations.map((v) => [v.kind, v.repairable])).toEqual([['largeFileMissing', false]])
    expect(report.ok).toBe(false)
    await e.close()
    expect(readdirSync(moved)).not.toContain('lcm-files')
  })
})
