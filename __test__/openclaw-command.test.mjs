// `/lcm` (alias `/lossless`) through a fake `api.registerCommand`: the answers a
// chat gets, scoped to the calling session.
import { describe, it, expect } from 'vitest'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { register } from '../openclaw/index.mjs'
import { runLcmCommand, fitReply, formatBytes, MAX_REPLY_CHARS, COMMAND_NAMES } from '../openclaw/commands.mjs'
import { fakeApi, fakeLlm, conversation, freshConfig } from './openclaw-fixture.mjs'

const S = { sessionId: 'sess-1', sessionKey: 'agent:main:main' }
const BUDGET = 4_000

/** A registered plugin with one session of `turns` turns, assembled once at BUDGET. */
async function seeded(turns = 20) {
  const llm = fakeLlm()
  const host = fakeApi({ llm })
  const plugin = register(host.api, { env: {} })
  await plugin.ready
  const engine = await host.engines.get('lcm-native')({})
  const messages = conversation(turns, 60)
  await engine.afterTurn({ ...S, messages, prePromptMessageCount: 0 })
  await engine.assemble({ ...S, messages, tokenBudget: BUDGET })
  const lcm = await engine.handle.use()
  const conv = await lcm.getConversation({ sessionKey: S.sessionKey })
  return { host, plugin, engine, lcm, conv, llm }
}

function checkReply(reply) {
  expect(typeof reply.text).toBe('string')
  expect(reply.text.length).toBeLessThanOrEqual(MAX_REPLY_CHARS)
  expect(reply.text).not.toMatch(/\x1b/)
  return reply.text
}

describe('/lcm through api.registerCommand', () => {
  it('registers /lcm and /lossless, one handler each, accepting arguments', async () => {
    const { host, plugin, engine } = await seeded(2)
    expect(host.commands.map((c) => c.name)).toEqual([...COMMAND_NAMES])
    for (const c of host.commands) expect(c).toMatchObject({ acceptsArgs: true, description: expect.any(String), handler: expect.any(Function) })
    const a = checkReply(await host.command('lcm', 'help'))
    const b = checkReply(await host.command('lossless', ''))
    expect(a).toBe(b)
    for (const sub of ['status', 'doctor', 'doctor apply', 'compact', 'backup [path]', 'prune [--apply]', 'help']) expect(a).toContain(`/lcm ${sub}`)
    await engine.dispose()
    await plugin.shutdown()
  })

  it('status answers with this session\'s figures, the database and the breaker', async () => {
    const { host, plugin, engine, lcm, conv } = await seeded()
    const stats = await lcm.getStats(conv.conversationId)
    const text = checkReply(await host.command('lcm', 'status'))
    expect(text).toContain(`Session agent:main:main (conversation ${conv.conversationId})`)
    expect(text).toContain(`context: ${stats.contextItems.toLocaleString('en-US')} items, ${stats.contextTokens.toLocaleString('en-US')} tokens of 4,000 budget`)
    expect(text).toContain(`compacts above 3,000 (0.75)`)
    expect(text).toContain(`stored: ${stats.messageCount} messages`)
    expect(text).toContain('Conversations: 1 active, 0 archived')
    expect(text).toMatch(/largest: \w+ [\d.]+ (KiB|MiB)/)
    expect(text).toContain('summaries: none')
    expect(text).toContain('last compaction: none yet')
    expect(text).toContain('pending: compaction due (over threshold)')
    expect(text).toContain('Summarizer breaker: closed (0/5 failures)')
    // Another session of the same gateway sees its own scope.
    const other = checkReply(await host.command('lcm', 'status', { sessionKey: 'agent:main:other', sessionId: 'sess-2' }))
    expect(other).toContain('Session agent:main:other: nothing stored yet')
    // A session stored before this gateway saw a turn of it: the default budget, said so.
    await engine.afterTurn({ sessionId: 'sess-3', sessionKey: 'agent:main:third', messages: conversation(2, 20), prePromptMessageCount: 0 })
    const third = checkReply(await host.command('lcm', 'status', { sessionKey: 'agent:main:third', sessionId: 'sess-3' }))
    expect(third).toContain('tokens of 128,000 budget (the configured default: no turn of this session since the gateway started)')
    await engine.dispose()
    await plugin.shutdown()
  })

  it('compact sweeps this session and reports the result; status then shows that compaction', async () => {
    const { host, plugin, engine, lcm, conv, llm } = await seeded()
    const before = (await lcm.getStats(conv.conversationId)).contextTokens
    const text = checkReply(await host.command('lcm', 'compact'))
    const after = (await lcm.getStats(conv.conversationId)).contextTokens
    const summaries = await lcm.getSummaries(conv.conversationId)
    expect(summaries.length).toBeGreaterThan(0)
    expect(after).toBeLessThan(before)
    expect(text).toContain(`${before.toLocaleString('en-US')} → ${after.toLocaleString('en-US')} tokens, ${summaries.length} summaries written`)
    const status = checkReply(await host.command('lcm', 'status'))
    expect(status).toMatch(new RegExp(`last compaction \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC: ${before.toLocaleString('en-US')} → ${after.toLocaleString('en-US')} tokens`))
    expect(status).toContain(`${summaries.length} summaries, ${llm.calls.length} summarizer calls`)
    const depth0 = summaries.filter((s) => s.depth === 0).length
    expect(status).toContain(`depth 0: ${depth0} (`)
    await engine.dispose()
    await plugin.shutdown()
  })

  it('doctor reports this conversation; doctor apply repairs what the doctor found', async () => {
    const { host, plugin, engine, lcm, conv, llm } = await seeded()
    await host.command('lcm', 'compact')
    const ok = checkReply(await host.command('lcm', 'doctor'))
    expect(ok).toBe(`Doctor, conversation ${conv.conversationId} (report only): OK`)
    // A summary that ended in the fallback marker: the doctor lists it, apply
    // summarizes it again with the host's LLM.
    const messages = (await lcm.getContextItems(conv.conversationId)).filter((i) => i.messageId != null).slice(0, 2)
    const id = await lcm.insertSummary({ conversationId: conv.conversationId, messageIds: messages.map((m) => m.messageId), content: 'Partial notes about the budget.\n[Truncated from 900 tokens]' })
    const found = checkReply(await host.command('lcm', 'doctor'))
    expect(found).toContain('problems found')
    expect(found).toContain(`Broken summaries: 1\n  - ${id} depth 0`)
    expect(found).toContain('Run /lcm doctor apply to repair.')
    const calls = llm.calls.length
    const fixed = checkReply(await host.command('lossless', 'doctor apply'))
    expect(fixed).toContain('(apply): OK')
    expect(fixed).toContain(`Re-summarized: 1\n  - ${id}: repaired`)
    expect(fixed).toContain('Remaining: 0 violations, 0 broken summaries')
    expect(llm.calls.length).toBe(calls + 1)
    expect(checkReply(await host.command('lcm', 'doctor'))).toContain(': OK')
    await engine.dispose()
    await plugin.shutdown()
  })

  it('backup writes a checked copy beside the database (or where an absolute path says); prune reports the policies', async () => {
    const { host, plugin, engine, lcm } = await seeded(4)
    const dbPath = (await lcm.status({ tables: false })).database.path
    const text = checkReply(await host.command('lcm', 'backup'))
    const written = text.match(/^Backup written: (.+)$/m)?.[1]
    expect(written).toBe(join(dirname(dbPath), 'backups', basename(written)))
    expect(basename(written)).toMatch(/^lcm-\d{8}-\d{6}Z\.db$/)
    expect(existsSync(written)).toBe(true)
    expect(text).toMatch(/\d+ pages in \d+ steps/)
    expect(text).toContain('integrity check: ok')
    const dir = mkdtempSync(join(tmpdir(), 'lcm-cmd-backup-'))
    expect(checkReply(await host.command('lcm', `backup ${join(dir, 'copy.db')}`))).toContain(`Backup written: ${join(dir, 'copy.db')}`)
    expect(checkReply(await host.command('lcm', 'backup named.db'))).toContain(`Backup written: ${join(dirname(dbPath), 'backups', 'named.db')}`)
    // No retention policy: a dry run and an apply both find nothing due.
    const dry = checkReply(await host.command('lcm', 'prune'))
    expect(dry).toMatch(/^Prune \(dry run: nothing changed; \/lcm prune --apply to run it\): database [\d.]+ (KiB|MiB)/)
    expect(dry).toContain('nothing due under the retention policies')
    expect(checkReply(await host.command('lcm', 'prune --apply'))).toContain('removed 0 messages')
    expect(checkReply(await host.command('lcm', 'frobnicate'))).toMatch(/^Unknown subcommand "frobnicate"\.\n\/lcm \(alias/)
    await engine.dispose()
    await plugin.shutdown()
  })

  it('prune lists what a policy makes due, as the engine reports it', async () => {
    const host = fakeApi({ llm: fakeLlm(), pluginConfig: freshConfig({ retention: [{ match: 'agent:old:**', pruneAfterDays: 1 }] }) })
    const plugin = register(host.api, { env: {} })
    await plugin.ready
    const engine = await host.engines.get('lcm-native')({})
    const old = { sessionId: 'old-1', sessionKey: 'agent:old:main' }
    await engine.afterTurn({ ...old, messages: conversation(2, 20), prePromptMessageCount: 0 })
    const lcm = await engine.handle.use()
    const later = new Date(Date.now() + 3 * 86_400_000).toISOString()
    const report = await lcm.prune({ dryRun: true, now: later })
    // The chat formats exactly what the engine reports (here: one conversation, if the policy makes it due).
    const { formatPrune } = await import('../openclaw/commands.mjs')
    const text = formatPrune(report)
    expect(report.actions.map((a) => a.session)).toEqual(['agent:old:main'])
    expect(text).toContain(`- agent:old:main: would archive, then remove, ${report.actions[0].messages} messages`)
    expect(text).toContain('(agent:old:**, age)')
    await engine.dispose()
    await plugin.shutdown()
  })

  it('compact runs even while the automatic summarizer breaker is open, and says so', async () => {
    const { host, plugin, engine } = await seeded(20)
    const handle = engine.handle
    for (let i = 0; i < handle.breaker.threshold; i++) handle.breaker.record({ authFailure: true })
    expect(handle.breaker.isOpen()).toBe(true)
    const text = checkReply(await host.command('lcm', 'compact'))
    expect(text).toMatch(/^The summarizer breaker is open for automatic compaction; this manual one runs anyway\./)
    expect(text).not.toMatch(/^Not compacting/m)
    await engine.dispose()
    await plugin.shutdown()
  })

  it('errors answer in the chat instead of throwing; long answers are cut on a line', async () => {
    const handle = { use: async () => { throw Object.assign(new Error('database is locked'), { code: 'LCM_BUSY' }) }, breaker: { isOpen: () => false } }
    expect(await runLcmCommand('status', S, { handle, config: {} })).toBe('/lcm status failed: LCM_BUSY: database is locked')
    expect(await runLcmCommand('status', S, { handle: null, config: {} })).toMatch(/not running/)
    const long = Array.from({ length: 400 }, (_, i) => `line ${i} \x1b[31mred\x1b[0m`).join('\n')
    const cut = fitReply(long)
    expect(cut.length).toBeLessThanOrEqual(MAX_REPLY_CHARS)
    expect(cut).not.toMatch(/\x1b/)
    expect(cut).toMatch(/line \d+ red\n… \(cut; lcm-tui gives the whole report\)$/)
    expect(formatBytes(1536)).toBe('1.5 KiB')
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.0 GiB')
    expect(formatBytes(12)).toBe('12 B')
  })
})
