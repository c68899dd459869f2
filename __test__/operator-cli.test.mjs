// lcm-tui doctor / dissolve / transplant, spawned as an operator runs them:
// `node bin/lcm-tui.js …`, checking stdout, stderr, exit codes and the file.
import { describe, it, expect } from 'vitest'
import { spawnSync } from 'node:child_process'
import { join, dirname } from 'node:path'
import { root, LcmEngine, workload } from './helpers.mjs'
import { query } from './sqlfile.mjs'
import { build, damaged, sha } from './operator-fixture.mjs'

function tui(args, env = {}) {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'lcm-tui.js'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '', ...env },
    timeout: 60_000,
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

const json = (text) => JSON.parse(text)
const ESC = '\u001b['

async function second(path) {
  const e = await LcmEngine.open({ dbPath: path })
  const { messages } = workload(8, 31)
  const r = await e.ingestBatch({ sessionId: 'second', messages })
  const ids = r.results.map((x) => x.messageId).filter((x) => x != null)
  await e.insertSummary({ conversationId: r.conversationId, content: 'Second conversation leaf.', messageIds: ids.slice(0, 3) })
  await e.close()
  return r.conversationId
}

describe('lcm-tui doctor', () => {
  it('reports a healthy database (text, --json, --all, --dry-run, $OPENCLAW_STATE_DIR)', async () => {
    const f = await build()
    const c = String(f.conv)
    let r = tui(['doctor', c, '--db', f.path])
    expect(r.code).toBe(0)
    expect(r.out).toContain(`Doctor — conversation ${c} — dry run`)
    expect(r.out).toContain('✓ no violations')
    expect(r.out).toContain('OK: no violation, no broken summary.')
    expect(r.out).not.toContain(ESC)
    expect(r.err).toBe('')
    r = tui(['doctor', '--all', '--json', '--db', f.path])
    expect(r.code).toBe(0)
    expect(json(r.out)).toMatchObject({ ok: true, applied: false, conversationIds: [f.conv], violations: [], brokenSummaries: [] })
    r = tui(['--json', 'doctor', '--dry-run', c], { OPENCLAW_STATE_DIR: dirname(f.path) })
    expect(r.code).toBe(0)
    expect(json(r.out).ok).toBe(true)
  })

  it('exits 1 naming the damage without touching the file, and --apply mends it', async () => {
    const f = await build()
    await damaged(f.path, `UPDATE summaries SET descendant_count = 99 WHERE summary_id = '${f.d1[2]}';
      DELETE FROM summary_messages WHERE message_id = ${f.ids[3]};
      UPDATE context_items SET ordinal = ordinal + 100 WHERE conversation_id = ${f.conv} AND ordinal >= 3;
      UPDATE summaries SET content = 'cut short\n[Truncated from 2400 tokens]' WHERE summary_id = '${f.leaves[6]}'`)
    const before = sha(f.path)
    const c = String(f.conv)
    let r = tui(['doctor', c, '--db', f.path])
    expect(r.code).toBe(1)
    expect(r.out).toContain(`summary ${f.d1[2]}: descendant_count is 99 but should be 2`)
    expect(r.out).toContain(`message ${f.ids[3]} is covered neither`)
    expect(r.out).toContain('[ordinalGap]')
    expect(r.out).toMatch(new RegExp(`1\\. conversation ${c}  ${f.leaves[6]}  leaf d0 .*\\[Truncated from 2400 tokens\\]`))
    expect(r.out).toContain('Run with --apply to repair.')
    r = tui(['doctor', c, '--db', f.path, '--json'])
    expect(r.code).toBe(1)
    const rep = json(r.out)
    expect(rep.violations.find((v) => v.kind === 'metadata' && v.summaryIds[0] === f.d1[2])).toBeTruthy()
    expect(rep.brokenSummaries.map((b) => b.summaryId)).toEqual([f.leaves[6]])
    expect(sha(f.path)).toBe(before)

    r = tui(['doctor', c, '--apply', '--provider', 'offline', '--db', f.path, '--json'])
    expect(r.code).toBe(0)
    const fixed = json(r.out)
    expect(fixed).toMatchObject({ ok: true, applied: true, remaining: { violations: [], brokenSummaries: [] } })
    expect(fixed.repairs.map((x) => x.kind)).toEqual(expect.arrayContaining(['relinked', 'metadata', 'resequenced', 'ftsRows', 'resummarized']))
    expect(fixed.resummarized[0]).toMatchObject({ summaryId: f.leaves[6], status: 'repaired', model: expect.any(String) })
    expect(query(f.path, 'SELECT content FROM summaries WHERE summary_id = ?', [f.leaves[6]])[0].content).not.toContain('[Truncated from')
    r = tui(['doctor', '--all', '--db', f.path])
    expect(r.code).toBe(0)
  })

  it('bad usage exits 2; unknown conversations and missing files exit 1 with what exists', async () => {
    const f = await build()
    const c = String(f.conv)
    for (const args of [['doctor'], ['doctor', c, '--all'], ['doctor', c, '--apply', '--dry-run'], ['doctor', 'abc'], ['doctor', c, '--frobnicate'], ['doctor', c, '--provider', 'nope']]) {
      const r = tui([...args, '--db', f.path])
      expect(r.code, args.join(' ')).toBe(2)
      expect(r.err).toMatch(/error|Usage/)
    }
    let r = tui(['doctor', '404', '--db', f.path])
    expect(r.code).toBe(1)
    expect(r.err).toContain(`conversation 404 does not exist (conversations: ${c})`)
    r = tui(['doctor', '404', '--db', f.path, '--json'])
    expect(json(r.out).error).toMatchObject({ code: 'LCM_NOT_FOUND', exit: 1 })
    r = tui(['doctor', c, '--db', join(dirname(f.path), 'missing.db')])
    expect(r.code).toBe(1)
    expect(r.err).toContain('database not found')
  })

  it('colours only when asked or on a terminal without NO_COLOR', async () => {
    const f = await build()
    const c = String(f.conv)
    expect(tui(['doctor', c, '--db', f.path, '--color', 'always']).out).toContain(ESC)
    expect(tui(['doctor', c, '--db', f.path, '--color', 'always'], { NO_COLOR: '1' }).out).toContain(ESC)
    expect(tui(['doctor', c, '--db', f.path], { NO_COLOR: '1' }).out).not.toContain(ESC)
    expect(tui(['doctor', c, '--db', f.path, '--color', 'never']).out).not.toContain(ESC)
  })
})

describe('lcm-tui dissolve', () => {
  it('prints the plan without writing, applies it, keeps with --keep, and names holders', async () => {
    const f = await build()
    const c = String(f.conv)
    const before = sha(f.path)
    let r = tui(['dissolve', c, '--summary', f.top, '--db', f.path])
    expect(r.code).toBe(0)
    expect(r.out).toContain(`Dissolve ${f.top} (condensed, d2`)
    expect(r.out).toContain('Restores 2 child summaries:')
    expect(r.out).toContain(`[0] ${f.d1[0]} (condensed, d1)`)
    expect(r.out).toContain('Shift: 14 item(s) after ordinal 0 move by +1')
    expect(r.out).toContain('Dry run: nothing was written.')
    r = tui(['--json', 'dissolve', c, '--summary', f.top, '--dry-run', '--db', f.path])
    expect(json(r.out)).toMatchObject({ applied: false, shift: 1, contextItemsAfter: 16 })
    expect(sha(f.path)).toBe(before)

    r = tui(['dissolve', c, '--summary', f.top, '--apply', '--db', f.path])
    expect(r.code).toBe(0)
    expect(r.out).toContain('Done: dissolved in one transaction.')
    r = tui(['dissolve', c, '--summary', f.d1[2], '--apply', '--keep', '--json', '--db', f.path])
    expect(json(r.out)).toMatchObject({ applied: true, keep: true })
    expect(query(f.path, 'SELECT COUNT(*) AS n FROM summaries WHERE summary_id = ?', [f.d1[2]])[0].n).toBe(1)
    expect(tui(['doctor', c, '--db', f.path]).code).toBe(0)

    r = tui(['dissolve', c, '--summary', f.leaves[6], '--db', f.path])
    expect(r.code).toBe(1)
    expect(r.err).toContain(`${f.d1[3]} (d1) holds it (context item`)
    r = tui(['dissolve', c, '--summary', 'sum_ffffffffffffffff', '--json', '--db', f.path])
    expect(r.code).toBe(1)
    expect(json(r.out).error.code).toBe('LCM_NOT_FOUND')
    expect(json(r.out).error.message).toContain(f.d1[3])
    expect(tui(['dissolve', c, '--db', f.path]).code).toBe(2)
    expect(tui(['dissolve', '--summary', f.top, '--db', f.path]).code).toBe(2)
    expect(tui(['dissolve', c, '--summary', f.top, '--apply', '--dry-run', '--db', f.path]).code).toBe(2)
  })
})

describe('lcm-tui transplant', () => {
  it('prints the plan without writing, copies with --apply, and refuses a repeat', async () => {
    const f = await build()
    const dst = await second(f.path)
    const [s, t] = [String(f.conv), String(dst)]
    const before = sha(f.path)
    let r = tui(['transplant', s, t, '--db', f.path])
    expect(r.code).toBe(0)
    expect(r.out).toContain(`Transplant: conversation ${s} → conversation ${t}`)
    expect(r.out).toContain('Source context summaries (3):')
    expect(r.out).toContain('Summaries to copy: 13 (3 in the context list, 10 beneath)')
    expect(r.out).toContain('Messages to copy: 48')
    expect(r.out).toContain('Dry run: nothing was written.')
    r = tui(['--json', 'transplant', s, t, '--dry-run', '--db', f.path])
    expect(json(r.out)).toMatchObject({ applied: false, summaryCount: 13, messageCount: 48 })
    expect(sha(f.path)).toBe(before)

    r = tui(['transplant', s, t, '--apply', '--db', f.path])
    expect(r.code).toBe(0)
    expect(r.out).toContain('Done: copied in one transaction.')
    expect(r.out).toContain('Full-text index: 48 of 48 copied messages indexed')
    expect(tui(['doctor', '--all', '--db', f.path]).code).toBe(0)
    r = tui(['transplant', s, t, '--apply', '--json', '--db', f.path])
    expect(r.code).toBe(1)
    expect(json(r.out).error.message).toContain('already holds the text')
    expect(tui(['transplant', s, '--db', f.path]).code).toBe(2)
    expect(tui(['transplant', s, 'x', '--db', f.path]).code).toBe(2)
    r = tui(['transplant', s, '99', '--db', f.path])
    expect(r.code).toBe(1)
    expect(r.err).toContain(`conversations: ${s}, ${t}`)
  })
})
