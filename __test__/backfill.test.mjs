// lcm-tui backfill: a session JSONL (made here from the shared workload generator's
// messages, with branches and non-message entries) imported as an operator runs it.
import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { LcmEngine, root, tempDir, workload } from './helpers.mjs'
import { writeSession } from './fixtures/session-jsonl.mjs'

function tui(args) {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'lcm-tui.js'), ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, timeout: 120_000 })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

function session(n = 240, seed = 31) {
  const dir = tempDir()
  const { messages } = workload(n, seed)
  const file = join(dir, 'session.jsonl')
  writeSession(file, messages, { branchAt: Math.floor(n / 3) })
  return { dir, file, messages, db: join(dir, 'lcm.db') }
}

describe('lcm-tui backfill', () => {
  it('dry run reports counts and tokens and writes nothing', async () => {
    const s = session()
    const r = tui(['backfill', s.file, '--db', s.db, '--json'])
    expect(r.code, r.err).toBe(0)
    const j = JSON.parse(r.out)
    expect(j).toMatchObject({ dryRun: true, sessionId: 'sess-1', bootstrap: null, existingConversationId: null })
    expect(j.transcript.messages).toBe(s.messages.length)
    expect(j.transcript.tokens).toBeGreaterThan(1000)
    expect(j.transcript.skippedEntries).toBeGreaterThan(2)
    expect(Object.values(j.transcript.roles).reduce((a, b) => a + b, 0)).toBe(s.messages.length)
    expect(existsSync(s.db)).toBe(false)
    const text = tui(['backfill', s.file, '--db', s.db])
    expect(text.out).toMatch(/Dry run: nothing was written/)
    expect(text.out).toMatch(/240 on the leaf path/)
  })

  it('--apply imports the leaf path (then is idempotent); --compact summarizes it', async () => {
    const s = session()
    const r = tui(['backfill', s.file, '--db', s.db, '--session-id', 'ops', '--apply', '--json'])
    expect(r.code, r.err).toBe(0)
    const j = JSON.parse(r.out)
    expect(j.bootstrap).toMatchObject({ bootstrapped: true, importedMessages: 240, reason: 'imported session messages' })
    const e = await LcmEngine.open({ dbPath: s.db })
    expect(await e.getMessages(j.bootstrap.conversationId)).toEqual(s.messages)
    await e.close()
    const again = JSON.parse(tui(['backfill', s.file, '--db', s.db, '--session-id', 'ops', '--apply', '--json']).out)
    expect(again).toMatchObject({ existingConversationId: j.bootstrap.conversationId, bootstrap: { importedMessages: 0, reason: 'conversation already up to date' } })
    const c = tui(['backfill', s.file, '--db', s.db, '--session-id', 'other', '--apply', '--compact', '--budget', '4000', '--provider', 'offline', '--json'])
    expect(c.code, c.err).toBe(0)
    const cj = JSON.parse(c.out)
    expect(cj.compaction.compacted).toBe(true)
    expect(cj.compaction.tokensAfter).toBeLessThan(cj.compaction.tokensBefore)
  })

  it('shows a progress bar on a terminal', () => {
    const s = session(1500, 32)
    const cmd = `${process.execPath} ${join(root, 'bin', 'lcm-tui.js')} backfill ${s.file} --db ${s.db} --apply`
    const r = spawnSync('script', ['-qfec', cmd, '/dev/null'], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', COLUMNS: '120' }, timeout: 120_000 })
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toMatch(/\d+\/1500 importing/)
    expect(r.stdout).toMatch(/imported +1,500 messages/)
  })

  it('refuses a bad command line', () => {
    expect(tui(['backfill']).code).toBe(2)
    const s = session(20, 33)
    expect(tui(['backfill', s.file, '--compact']).code).toBe(2)
  })
})
