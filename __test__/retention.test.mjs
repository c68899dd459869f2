// Issue 64: retention policies archive, then prune, idle conversations; archives
// put them back byte for byte; a crash at any point of a prune, an archive or a
// vacuum leaves every acknowledged message in the database or in a complete archive.
import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { LcmEngine, tempDir, workload, turns, rejectsWithCode, root } from './helpers.mjs'
import { query } from './sqlfile.mjs'
import { register, ENGINE_ID } from '../openclaw/index.mjs'
import { resolveConfig } from '../openclaw/config.mjs'
import { fakeApi, fakeLlm, freshConfig } from './openclaw-fixture.mjs'

const DAY = 86_400_000
const CRON = 'agent:main:cron:report:run'

/** Messages of a workload re-stamped to start `daysAgo` days ago. */
function aged(n, seed, daysAgo) {
  const t0 = Date.now() - daysAgo * DAY
  return workload(n, seed).messages.map((m, i) => ({ ...m, timestamp: t0 + i * 1000 }))
}

async function seed(e, { crons = 3, size = 60, daysAgo = 30 } = {}) {
  const convs = []
  for (let k = 0; k < crons; k++) {
    const key = `${CRON}:${k}`
    const msgs = aged(size, 40 + k, daysAgo + k)
    let r
    for (const t of turns(msgs)) r = await e.ingestBatch({ sessionId: `cron-${k}`, sessionKey: key, messages: t })
    convs.push({ key, id: r.conversationId })
  }
  // One conversation with summaries and links (leaf, then condensed).
  const c = convs[0].id
  const items = await e.getContextItems(c)
  const ids = items.filter((x) => x.itemType === 'message').map((x) => x.messageId)
  const a = await e.insertSummary({ conversationId: c, content: 'Leaf A: the dashboards were fine.', messageIds: ids.slice(0, 10) })
  const b = await e.insertSummary({ conversationId: c, content: 'Leaf B: an alert on the queue.', messageIds: ids.slice(10, 20) })
  await e.insertSummary({ conversationId: c, content: 'Condensed: one alert, otherwise fine.', summaryIds: [a, b] })
  const main = await e.ingestBatch({ sessionId: 'main', sessionKey: 'agent:main:main', messages: aged(20, 99, 0.01) })
  return { convs, main: main.conversationId, leaf: a }
}

async function snapshot(e, id) {
  return { messages: await e.getMessages(id), summaries: await e.getSummaries(id), context: await e.getContextItems(id), conv: await e.getConversation({ sessionKey: (await e.listConversations()).find((c) => c.conversationId === id)?.sessionKey }) }
}

/** Every row of the tables a conversation lives in, from the closed file. */
function rowsOf(dbPath) {
  const out = {}
  for (const [t, order] of [['conversations', 'conversation_id'], ['messages', 'message_id'], ['message_parts', 'part_id'], ['summaries', 'summary_id'],
    ['summary_messages', 'summary_id, message_id'], ['summary_parents', 'summary_id, parent_summary_id'], ['context_items', 'conversation_id, ordinal'], ['lcm_turn_receipts', 'advancement_key']]) {
    out[t] = query(dbPath, `SELECT * FROM ${t} ORDER BY ${order}`)
  }
  return out
}

function archives(dir) {
  const out = []
  if (!existsSync(dir)) return out
  for (const c of readdirSync(dir)) for (const s of readdirSync(join(dir, c))) if (existsSync(join(dir, c, s, 'manifest.json'))) out.push(join(dir, c, s))
  return out
}

describe('retention', () => {
  it('prune → archive → restore round trip is byte-exact; dry run changes nothing; doctor stays clean', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'lcm.db')
    const archiveDir = join(dir, 'archive')
    const opts = { dbPath, archiveDir, retention: [{ match: 'agent:*:cron:**', pruneAfterDays: 14 }] }
    let e = await LcmEngine.open(opts)
    const { convs, main, leaf } = await seed(e)
    await e.close()
    const rowsBefore = rowsOf(dbPath)
    expect(rowsBefore.message_parts.length).toBeGreaterThan(180)
    expect(rowsBefore.summary_parents.length).toBe(2)
    e = await LcmEngine.open(opts)
    const before = {}
    for (const c of convs) before[c.id] = await snapshot(e, c.id)
    const mainBefore = await e.getMessages(main)

    // The recall catalogs are loaded before the prune (they keep the pruned ids).
    expect((await e.grep({ pattern: 'Leaf A', allConversations: true, scope: 'summaries' })).summaries.length).toBe(1)
    const first = before[convs[2].id].messages[0]
    const needle = (typeof first.content === 'string' ? first.content : first.content[0].text).match(/[a-z]{6,}/)[0]
    expect((await e.grep({ pattern: needle, conversationId: convs[2].id, scope: 'messages' })).messages.length).toBeGreaterThan(0)
    expect((await e.grep({ pattern: needle, allConversations: true, scope: 'messages', limit: 200 })).messages.length).toBeGreaterThan(0)
    const dry = await e.prune({ dryRun: true })
    expect(dry.dryRun).toBe(true)
    expect(dry.actions.map((a) => [a.conversationId, a.action, a.reason, a.done])).toEqual(
      [...convs].reverse().map((c) => [c.id, 'prune', 'age', false]),
    )
    expect(archives(archiveDir)).toEqual([])
    expect((await e.listConversations()).length).toBe(4)

    const r = await e.prune()
    expect(r.actions.every((a) => a.action === 'prune' && a.done)).toBe(true)
    expect(r.messagesRemoved).toBe(180)
    expect(r.bytesReclaimed).toBeGreaterThan(0)
    const list = await e.listConversations()
    expect(list.map((c) => c.conversationId)).toEqual([main])
    expect(await e.getMessages(main)).toEqual(mainBefore)
    expect(await e.integrityCheck()).toEqual(['ok'])
    expect((await e.doctor({ all: true })).ok).toBe(true)
    expect((await e.storageStats()).freelistCount).toBe(0)
    // Nothing of them is searchable any more; the pruned summary names its archive.
    expect((await e.grep({ pattern: 'Leaf A', allConversations: true, scope: 'summaries' })).summaries ?? []).toHaveLength(0)
    const pruneIds = new Set(convs.map((c) => c.id))
    expect((await e.grep({ pattern: needle, allConversations: true, scope: 'messages', limit: 200 })).messages.filter((h) => pruneIds.has(h.conversationId))).toEqual([])
    const pruned = await e.prunedSummary(leaf)
    expect(pruned.conversationId).toBe(convs[0].id)
    expect(existsSync(join(pruned.archive, 'manifest.json'))).toBe(true)
    expect(await e.prunedSummary('sum_nothing')).toBe(null)

    const made = archives(archiveDir)
    expect(made.length).toBe(3)
    for (const a of made) {
      const m = JSON.parse(readFileSync(join(a, 'manifest.json'), 'utf8'))
      expect(m.format).toBe('lcm-archive/1')
      expect(m.counts.messages).toBe(60)
      const names = m.files.map((f) => f.name)
      expect(names).toContain('conversation.jsonl.zst')
      expect(names.some((n) => /^\d{4}-\d{2}\.jsonl\.zst$/.test(n))).toBe(true)
      for (const f of m.files) expect(f.sha256).toMatch(/^[0-9a-f]{64}$/)
    }

    for (const c of convs) {
      const a = made.find((p) => p.includes(`-c${c.id}/`))
      const back = await e.restoreArchive({ path: a })
      expect(back).toMatchObject({ conversationId: c.id, messages: 60, active: true })
      expect(await snapshot(e, c.id)).toEqual(before[c.id])
    }
    expect(await e.prunedSummary(leaf)).toBe(null)
    expect(await e.integrityCheck()).toEqual(['ok'])
    expect((await e.doctor({ all: true })).ok).toBe(true)
    // Searchable again (full text and regex).
    const text = before[convs[1].id].messages[0].content
    const word = (typeof text === 'string' ? text : text[0].text).split(' ').slice(0, 3).join(' ')
    const hits = await e.grep({ pattern: word, mode: 'full_text', allConversations: true })
    expect(hits.messages.some((h) => h.conversationId === convs[1].id)).toBe(true)
    const re = await e.grep({ pattern: 'Leaf B', allConversations: true, scope: 'summaries' })
    expect(re.summaries.length).toBe(1)
    // Restoring twice is refused.
    await rejectsWithCode(e.restoreArchive({ path: made[0] }), 'LCM_INVALID_INPUT')
    await e.close()
    // Every row of every table, byte for byte, as before the prune.
    expect(rowsOf(dbPath)).toEqual(rowsBefore)
  }, 120000)

  it('archiveAfterDays writes an archive once and removes nothing; a damaged archive is refused', async () => {
    const dir = tempDir()
    const archiveDir = join(dir, 'arch')
    const e = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), archiveDir, retention: [{ match: 'agent:*:cron:**', archiveAfterDays: 7 }] })
    const { convs } = await seed(e, { crons: 2 })
    const r = await e.prune()
    expect(r.actions.map((a) => [a.action, a.done])).toEqual([['archive', true], ['archive', true]])
    expect(r.messagesRemoved).toBe(0)
    expect((await e.listConversations()).length).toBe(3)
    expect((await e.prune()).actions).toEqual([])
    const [a] = archives(archiveDir)
    const m = JSON.parse(readFileSync(join(a, 'manifest.json'), 'utf8'))
    const f = join(a, m.files[0].name)
    const bytes = readFileSync(f)
    bytes[bytes.length - 1] ^= 0xff
    writeFileSync(f, bytes)
    const other = await LcmEngine.open({ dbPath: join(tempDir(), 'lcm.db') })
    await rejectsWithCode(other.restoreArchive({ path: a }), 'LCM_IO')
    await other.close()
    expect(convs.length).toBe(2)
    await e.close()
  })

  it('maxDatabaseBytes with no policy only warns (onLog, report); with a policy it prunes oldest first ahead of its days', async () => {
    const dir = tempDir()
    const logs = []
    const e = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), maxDatabaseBytes: 4096, onLog: (r) => logs.push(r) })
    await seed(e, { crons: 2, daysAgo: 3 })
    expect(await e.storageStats()).toMatchObject({ maxDatabaseBytes: 4096, overCap: true })
    const r = await e.prune()
    expect(r.overCap).toBe(true)
    expect(r.actions).toEqual([])
    expect(r.capWarning).toMatch(/maxDatabaseBytes/)
    expect(logs.some((l) => l.level === 'warn' && l.code === 'LCM_CONFIG' && /maxDatabaseBytes/.test(l.message))).toBe(true)
    expect((await e.listConversations()).length).toBe(3)
    await e.close()

    const f = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), archiveDir: join(dir, 'a'), maxDatabaseBytes: 4096, retention: [{ match: 'agent:*:cron:**', pruneAfterDays: 90 }] })
    const p = await f.prune()
    // Both cron runs are idle 3–4 days (< 90) but over the cap: pruned, oldest first;
    // the main chat (no policy) stays.
    expect(p.actions.map((a) => [a.reason, a.done])).toEqual([['cap', true], ['cap', true]])
    expect(p.actions[0].lastActivity <= p.actions[1].lastActivity).toBe(true)
    expect((await f.listConversations()).map((c) => c.sessionKey)).toEqual(['agent:main:main'])
    await f.close()
  })

  it('rejects bad policies with LCM_CONFIG / LCM_INVALID_INPUT', async () => {
    await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', retention: [{ match: 'x' }] }), 'LCM_CONFIG')
    await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', retention: [{ match: 'x', pruneAfterDays: -1 }] }), 'LCM_CONFIG')
    await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', retention: [{ match: 'x', pruneAfterDayz: 1 }] }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(LcmEngine.open({ dbPath: ':memory:', maxDatabaseBytes: 0 }), 'LCM_INVALID_INPUT')
  })

  it('SIGKILL at random points of prune/archive: every acknowledged message is in the database or a complete archive', async () => {
    let kept = 0
    let restored = 0
    for (let round = 0; round < 4; round++) {
      const dir = tempDir()
      const dbPath = join(dir, 'lcm.db')
      const archiveDir = join(dir, 'archive')
      const e = await LcmEngine.open({ dbPath })
      const { convs } = await seed(e, { crons: 8, size: 40, daysAgo: 10 })
      const before = {}
      for (const c of convs) before[c.id] = await e.getMessages(c.id)
      await e.close()
      const child = spawn(process.execPath, [join(root, '__test__', 'fixtures', 'prune-child.mjs'), dbPath, archiveDir], { stdio: ['ignore', 'pipe', 'inherit'] })
      let done = 0
      const killAfter = round * 2
      let buffered = ''
      child.stdout.on('data', (d) => {
        buffered += String(d)
        const lines = buffered.split('\n')
        buffered = lines.pop()
        for (const line of lines) {
          if (line.startsWith('pruned ')) done++
          if ((line === 'ready' && killAfter === 0) || (line.startsWith('pruned ') && done >= killAfter)) {
            setTimeout(() => child.kill('SIGKILL'), 2 + Math.floor(Math.random() * 25))
          }
        }
      })
      await new Promise((res) => child.on('exit', res))
      const f = await LcmEngine.open({ dbPath, archiveDir })
      expect(await f.integrityCheck()).toEqual(['ok'])
      expect((await f.doctor({ all: true })).ok).toBe(true)
      const present = new Set((await f.listConversations()).map((c) => c.conversationId))
      const made = archives(archiveDir)
      for (const c of convs) {
        if (present.has(c.id)) {
          expect(await f.getMessages(c.id)).toEqual(before[c.id])
          kept++
          continue
        }
        restored++
        // Not in the database: its archive must be complete and restore it exactly.
        const a = made.filter((p) => p.includes(`-c${c.id}/`)).sort().pop()
        expect(a, `conversation ${c.id} neither in the database nor archived (round ${round})`).toBeTruthy()
        await f.restoreArchive({ path: a })
        expect(await f.getMessages(c.id)).toEqual(before[c.id])
      }
      expect((await f.doctor({ all: true })).ok).toBe(true)
      await f.close()
    }
    // The kills landed both before and after removals.
    expect(kept).toBeGreaterThan(0)
    expect(restored).toBeGreaterThan(0)
  }, 180000)

  it('SIGKILL during lcm-tui vacuum leaves the file whole', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'lcm.db')
    const e = await LcmEngine.open({ dbPath })
    for (const t of turns(workload(3000, 8).messages)) await e.ingestBatch({ sessionId: 'v', messages: t })
    const id = (await e.getConversation({ sessionId: 'v' })).conversationId
    const msgs = await e.getMessages(id)
    await e.close()
    for (const delay of [150, 400, 900]) {
      const child = spawn(process.execPath, [join(root, 'bin', 'lcm-tui.js'), 'vacuum', '--db', dbPath, '--force'], { stdio: 'ignore' })
      setTimeout(() => child.kill('SIGKILL'), delay)
      await new Promise((res) => child.on('exit', res))
      const f = await LcmEngine.open({ dbPath })
      expect(await f.integrityCheck()).toEqual(['ok'])
      expect(await f.getMessages(id)).toEqual(msgs)
      expect((await f.doctor({ all: true })).ok).toBe(true)
      await f.close()
    }
  }, 120000)

  it('lcm-tui prune (dry run, --apply) and lcm-tui restore', async () => {
    const dir = tempDir()
    const dbPath = join(dir, 'lcm.db')
    const e = await LcmEngine.open({ dbPath })
    const { convs } = await seed(e, { crons: 2 })
    const msgs = await e.getMessages(convs[1].id)
    await e.close()
    const tui = (args) => spawnSync(process.execPath, [join(root, 'bin', 'lcm-tui.js'), ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '' }, timeout: 60000 })
    const archiveDir = join(dir, 'arch')
    let r = tui(['prune', '--db', dbPath, '--match', 'agent:*:cron:**', '--prune-after-days', '7', '--archive-dir', archiveDir])
    expect(r.status).toBe(0)
    expect(r.stdout).toContain('would prune')
    expect(r.stdout).toContain('dry run')
    expect(archives(archiveDir)).toEqual([])
    expect(tui(['prune', '--db', dbPath]).status).toBe(2)
    r = tui(['prune', '--db', dbPath, '--match', 'agent:*:cron:**', '--prune-after-days', '7', '--archive-dir', archiveDir, '--apply', '--json'])
    expect(r.status).toBe(0)
    const rep = JSON.parse(r.stdout)
    expect(rep.actions.filter((a) => a.done).length).toBe(2)
    const a = archives(archiveDir).find((p) => p.includes(`-c${convs[1].id}/`))
    r = tui(['restore', join(a, 'manifest.json'), '--db', dbPath])
    expect(r.status).toBe(0)
    expect(r.stdout).toContain(`restored conversation ${convs[1].id} (60 messages)`)
    const f = await LcmEngine.open({ dbPath })
    expect(await f.getMessages(convs[1].id)).toEqual(msgs)
    await f.close()
  }, 120000)

  it('the plugin runs the policies in maintain, in the background; lcm_describe of a pruned summary names its archive', async () => {
    const config = freshConfig({ retention: [{ match: 'agent:*:cron:**', pruneAfterDays: 14 }], archiveDir: join(tempDir(), 'arch') })
    const seeded = await LcmEngine.open({ dbPath: config.databasePath })
    const { convs, leaf } = await seed(seeded)
    await seeded.close()
    const host = fakeApi({ llm: fakeLlm(), pluginConfig: config })
    register(host.api)
    const engine = await host.engines.get(ENGINE_ID)({})
    const session = { sessionId: 'main', sessionKey: 'agent:main:main' }
    const m = await engine.maintain({ ...session, runtimeSettings: { limits: { promptTokenBudget: 100_000 } } })
    expect(m.changed).toBe(false)
    await engine.retentionDone()
    const r = await host.tool('lcm_describe', session).execute('t1', { id: leaf })
    expect(r.content[0].text).toContain('pruned by a retention policy')
    expect(r.content[0].text).toContain(`-c${convs[0].id}/`)
    expect(r.details).toMatchObject({ found: false, pruned: true })
    const x = await host.tool('lcm_expand', session).execute('t2', { summaryIds: [leaf] })
    expect(x.content[0].text).toContain('pruned by a retention policy')
    await engine.dispose()
    await host.emit('gateway_stop')
    const after = await LcmEngine.open({ dbPath: config.databasePath })
    expect((await after.listConversations()).map((c) => c.sessionKey)).toEqual(['agent:main:main'])
    await after.close()
  })

  it('plugin config: retention from the config object or LCM_RETENTION (JSON); bad values warn', () => {
    const policies = [{ match: 'agent:*:cron:**', pruneAfterDays: 14 }]
    let c = resolveConfig({ retention: policies, archiveDir: '/tmp/a', maxDatabaseBytes: 1e9 }, {})
    expect(c.engineOptions).toMatchObject({ retention: policies, archiveDir: '/tmp/a', maxDatabaseBytes: 1e9 })
    c = resolveConfig({}, { LCM_RETENTION: JSON.stringify(policies) })
    expect(c.engineOptions.retention).toEqual(policies)
    c = resolveConfig({ retention: 'nope' }, { LCM_RETENTION: '[{' })
    expect(c.engineOptions.retention).toBeUndefined()
    expect(c.warnings).toEqual([
      'config retention: expected an array of {match, archiveAfterDays?, pruneAfterDays?} (the environment: its JSON), ignored',
      'LCM_RETENTION: expected an array of {match, archiveAfterDays?, pruneAfterDays?} (the environment: its JSON), ignored',
    ])
  })
})
