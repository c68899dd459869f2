// `lcm-tui conversations`, `lcm-tui archive` and `lcm-tui unarchive`: archived
// conversations listed with their cause (text and --json), and the operator's
// archive / unarchive round trip.
import { describe, it, expect } from 'vitest'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { root, LcmEngine, tempDir } from './helpers.mjs'

function tui(args) {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'lcm-tui.js'), ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

async function store() {
  const dbPath = join(tempDir(), 'lcm.db')
  const e = await LcmEngine.open({ dbPath })
  const key = 'agent:main:main'
  await e.ingestBatch({ sessionId: 's1', sessionKey: key, messages: [{ role: 'user', content: 'before the reset' }] })
  await e.endSession({ sessionId: 's1', sessionKey: key, reason: 'reset', nextSessionId: 's2' })
  await e.ingestBatch({ sessionId: 's2', sessionKey: key, messages: [{ role: 'user', content: 'after the reset' }] })
  const family = await e.sessionFamily(key)
  await e.close()
  return { dbPath, old: family.find((c) => !c.active).conversationId, current: family.find((c) => c.active).conversationId }
}

describe('lcm-tui conversations / archive / unarchive', () => {
  it('lists archived conversations with their cause, in text and --json', async () => {
    const { dbPath, old, current } = await store()
    const text = tui(['conversations', '--db', dbPath])
    expect(text.code, text.stderr).toBe(0)
    expect(text.stdout).toMatch(new RegExp(`\\b${old}\\b.*archived: manual-reset at \\d{4}-\\d\\d-\\d\\d`))
    expect(text.stdout).toMatch(new RegExp(`\\b${current}\\b.*active`))
    const json = JSON.parse(tui(['conversations', '--db', dbPath, '--json', '--archived']).stdout)
    expect(json.map((c) => [c.conversationId, c.archived, c.archiveCause])).toEqual([[old, true, 'manual-reset']])
  })

  it('archive and unarchive swap the active conversation of the key', async () => {
    const { dbPath, old, current } = await store()
    const back = tui(['unarchive', String(old), '--db', dbPath, '--json'])
    expect(back.code, back.stderr).toBe(0)
    expect(JSON.parse(back.stdout)).toMatchObject({ conversationId: old, changed: true, displacedId: current })
    const again = tui(['archive', String(old), '--db', dbPath])
    expect(again.stdout).toMatch(new RegExp(`conversation ${old} archived`))
    const list = JSON.parse(tui(['conversations', '--db', dbPath, '--json']).stdout)
    expect(list.filter((c) => !c.archived)).toEqual([])
    expect(list.find((c) => c.conversationId === old).archiveCause).toBe('operator')
    const missing = tui(['archive', '4242', '--db', dbPath])
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toMatch(/no conversation 4242/)
  })
})
