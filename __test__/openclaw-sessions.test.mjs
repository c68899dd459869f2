// Session lifecycle through the plugin's `register(api)` with a fake api that
// records `api.on`: every hook reason gives the specified store state and next
// assemble; /new retain depths; restart / shutdown keep the conversation; hooks
// fired without awaiting are ordered before the next turn; recall finds archived
// family members and never another key's; heartbeats and cron runs.
import { describe, it, expect } from 'vitest'
import { register } from '../openclaw/index.mjs'
import { isHeartbeatOkTurn } from '../openclaw/lifecycle.mjs'
import { resolveConfig } from '../openclaw/config.mjs'
import { SessionPolicy } from '../openclaw/sessions.mjs'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from './helpers.mjs'
import { fakeApi, freshConfig } from './openclaw-fixture.mjs'

const KEY = 'agent:main:main'

/** A session transcript whose entry ids are the session's own (as OpenClaw's random ids are). */
function writeTranscript(messages, { sessionId }) {
  const lines = [{ type: 'session', version: 3, id: sessionId, timestamp: new Date(1_700_000_000_000).toISOString(), cwd: '/tmp' }]
  let parent = null
  messages.forEach((message, i) => {
    const id = `${sessionId}-e${i + 1}`
    lines.push({ type: 'message', id, parentId: parent, timestamp: new Date(1_700_000_000_000 + i * 1000).toISOString(), message })
    parent = id
  })
  const file = join(tempDir('lcm-oc-jsonl-'), `${sessionId}.jsonl`)
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
  return file
}

/** The plugin registered on a fake api, with its context engine built. */
async function plugin(config = {}) {
  const host = fakeApi({ pluginConfig: freshConfig(config) })
  const reg = register(host.api, { env: {} })
  await reg.ready
  const engine = await host.engines.get('lcm-native')()
  const core = await engine.handle.use()
  return { host, reg, engine, core }
}

function turn(tag, i = 0) {
  return [
    { role: 'user', content: `${tag} question ${i}` },
    { role: 'assistant', content: [{ type: 'text', text: `${tag} answer ${i}` }] },
  ]
}

const texts = (messages) => messages.map((m) => (typeof m.content === 'string' ? m.content : m.content.map((b) => b.text ?? '').join(''))).join('\n')

async function seen(engine, sessionId, sessionKey = KEY) {
  const r = await engine.assemble({ sessionId, sessionKey, messages: [], tokenBudget: 100_000 })
  return texts(r.messages)
}

/** Ingests, then builds a context [depth 2, depth 1, leaf, messages…] in session s1. */
async function layered(engine, core, sessionId = 's1') {
  await engine.ingestBatch({ sessionId, sessionKey: KEY, messages: [...turn('old', 0), ...turn('old', 1), ...turn('old', 2), ...turn('old', 3), ...turn('old', 4), ...turn('old', 5)] })
  const conv = await core.getConversation({ sessionKey: KEY })
  const ids = (await core.getContextItems(conv.conversationId)).map((i) => i.messageId)
  const l = []
  for (const from of [0, 2, 4, 6, 8]) l.push(await core.insertSummary({ conversationId: conv.conversationId, content: `leaf memory ${from}`, messageIds: ids.slice(from, from + 2) }))
  const c1 = await core.insertSummary({ conversationId: conv.conversationId, content: 'condensed memory one', summaryIds: [l[0], l[1]] })
  await core.insertSummary({ conversationId: conv.conversationId, content: 'condensed memory two', summaryIds: [l[2], l[3]] })
  await core.insertSummary({ conversationId: conv.conversationId, content: 'deepest memory', summaryIds: [c1] })
  return conv.conversationId
}

describe('register subscribes the lifecycle hooks', () => {
  it('records before_reset, session_end and session_start on api.on', async () => {
    const { host, reg } = await plugin()
    for (const name of ['before_reset', 'session_end', 'session_start', 'gateway_stop']) expect(host.hooks.get(name)?.length).toBe(1)
    await reg.shutdown()
  })
})

describe('/reset and session_end reasons', () => {
  it('/reset: before_reset (not awaited) then the next turn sees nothing of the old conversation', async () => {
    const { host, reg, engine, core } = await plugin()
    await engine.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: turn('secret plan') })
    // OpenClaw fires before_reset without awaiting it: the next turn's calls come at once.
    for (const h of host.hooks.get('before_reset')) h({ reason: 'reset', messages: [] }, { sessionKey: KEY, sessionId: 's1', agentId: 'main' })
    const next = await seen(engine, 's2')
    expect(next).not.toMatch(/secret plan/)
    await host.emit('session_end', { sessionId: 's1', sessionKey: KEY, reason: 'reset', messageCount: 2, nextSessionId: 's2' }, { sessionId: 's1', sessionKey: KEY })
    const family = await core.sessionFamily(KEY)
    expect(family.map((c) => [c.active, c.archiveCause])).toEqual([
      [true, null],
      [false, 'manual-reset'],
    ])
    await engine.ingestBatch({ sessionId: 's2', sessionKey: KEY, messages: turn('new topic') })
    expect(await seen(engine, 's2')).toMatch(/new topic/)
    await reg.shutdown()
  })

  it.each([
    ['idle', 'idle-reset', true],
    ['daily', 'daily-reset', true],
    ['compaction', 'compaction-rollover', true],
    ['deleted', 'session-deleted', false],
  ])('session_end %s archives (cause %s; successor %s)', async (reason, cause, successor) => {
    const { host, reg, engine, core } = await plugin()
    await engine.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: turn(`${reason} era`) })
    await host.emit('session_end', { sessionId: 's1', sessionKey: KEY, reason, messageCount: 2, nextSessionId: 's2' }, { sessionId: 's1', sessionKey: KEY })
    const family = await core.sessionFamily(KEY)
    expect(family.find((c) => !c.active).archiveCause).toBe(cause)
    expect(family.some((c) => c.active)).toBe(successor)
    expect(await seen(engine, 's2')).not.toMatch(new RegExp(`${reason} era`))
    await reg.shutdown()
  })

  it.each(['restart', 'shutdown'])('session_end %s keeps the conversation', async (reason) => {
    const { host, reg, engine, core } = await plugin()
    await engine.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: turn('still here') })
    await host.emit('session_end', { sessionId: 's1', sessionKey: KEY, reason, messageCount: 2 }, { sessionId: 's1', sessionKey: KEY })
    expect(await seen(engine, 's1')).toMatch(/still here/)
    expect((await core.sessionFamily(KEY)).every((c) => c.active)).toBe(true)
    await reg.shutdown()
  })

  it('ignores hooks for ignored and stateless sessions', async () => {
    const { host, reg, engine, core } = await plugin({ statelessSessionPatterns: ['agent:*:probe'] })
    await engine.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: turn('kept') })
    await host.emit('session_end', { sessionId: 'p1', sessionKey: 'agent:main:probe', reason: 'reset', messageCount: 0 }, {})
    expect((await core.listConversations()).length).toBe(1)
    await reg.shutdown()
  })
})

describe('/new', () => {
  it.each([
    [-1, true, true],
    [0, true, false],
    [2, true, false],
    [1000, false, false],
  ])('retain depth %i: deepest summary seen %s, old messages seen %s', async (depth, deepest, messages) => {
    const { host, reg, engine, core } = await plugin({ newSessionRetainDepth: depth })
    const c = await layered(engine, core)
    for (const h of host.hooks.get('before_reset')) h({ reason: 'new' }, { sessionKey: KEY, sessionId: 's1' })
    const next = await seen(engine, 's2')
    expect(next.includes('deepest memory')).toBe(deepest)
    expect(next.includes('old question 5')).toBe(messages)
    expect(next.includes('leaf memory')).toBe(depth <= 0)
    // The session_end of the same /new changes nothing more, and nothing was deleted.
    await host.emit('session_end', { sessionId: 's1', sessionKey: KEY, reason: 'new', messageCount: 12, nextSessionId: 's2' }, {})
    expect((await core.getMessages(c)).length).toBe(12)
    expect((await core.getConversation({ sessionKey: KEY })).conversationId).toBe(c)
    await reg.shutdown()
  })

  it('a gateway restart between /new and the next turn changes nothing', async () => {
    const config = freshConfig()
    const first = fakeApi({ pluginConfig: config })
    const reg = register(first.api, { env: {} })
    await reg.ready
    const engine = await first.engines.get('lcm-native')()
    const core = await engine.handle.use()
    await layered(engine, core)
    await first.emit('before_reset', { reason: 'new' }, { sessionKey: KEY, sessionId: 's1' })
    const before = await seen(engine, 's2')
    await first.emit('session_end', { sessionId: 's1', sessionKey: KEY, reason: 'restart', messageCount: 0 }, {})
    await engine.dispose()
    await reg.shutdown()
    const second = fakeApi({ pluginConfig: config })
    const reg2 = register(second.api, { env: {} })
    await reg2.ready
    const again = await second.engines.get('lcm-native')()
    expect(await seen(again, 's2')).toBe(before)
    await again.dispose()
    await reg2.shutdown()
  })
})

describe('recall across the session family', () => {
  it('lcm_grep finds the archived conversation of the key (marked), never another key', async () => {
    const { host, reg, engine } = await plugin()
    await engine.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: [{ role: 'user', content: 'the launch code is zebra-17' }] })
    await engine.ingestBatch({ sessionId: 'o1', sessionKey: 'agent:other:main', messages: [{ role: 'user', content: 'the launch code is tiger-99' }] })
    await host.emit('before_reset', { reason: 'reset' }, { sessionKey: KEY, sessionId: 's1' })
    await engine.ingestBatch({ sessionId: 's2', sessionKey: KEY, messages: [{ role: 'user', content: 'what was the launch code?' }] })
    const tool = host.tool('lcm_grep', { sessionKey: KEY, sessionId: 's2' })
    const r = await tool.execute('t1', { pattern: 'launch code is', mode: 'full_text' })
    const text = r.content[0].text
    expect(text).toMatch(/zebra-17/)
    expect(text).not.toMatch(/tiger-99/)
    expect(text).toMatch(/\[Archived: .*manual-reset/)
    expect(r.details.messages.find((m) => /zebra/.test(m.snippet)).archived).toBe(true)
    await reg.shutdown()
  })
})

describe('lcm_describe / lcm_expand across the family', () => {
  it('reach an archived conversation of the key, never another key', async () => {
    const { host, reg, engine, core } = await plugin()
    const summaryOf = async (sessionId, sessionKey, text) => {
      const r = await core.ingestBatch({ sessionId, sessionKey, messages: [{ role: 'user', content: text }, { role: 'assistant', content: 'noted' }] })
      return core.insertSummary({ conversationId: r.conversationId, content: `summary: ${text}`, messageIds: r.results.map((m) => m.messageId) })
    }
    const mine = await summaryOf('s1', KEY, 'the boat is blue')
    const theirs = await summaryOf('o1', 'agent:other:main', 'the car is red')
    await host.emit('before_reset', { reason: 'reset' }, { sessionKey: KEY, sessionId: 's1' })
    await engine.ingestBatch({ sessionId: 's2', sessionKey: KEY, messages: turn('after') })
    const describe = host.tool('lcm_describe', { sessionKey: KEY, sessionId: 's2' })
    const found = await describe.execute('t1', { id: mine })
    expect(found.details).toMatchObject({ found: true, archived: true })
    expect(found.content[0].text).toMatch(/\[Archived: .*manual-reset/)
    expect((await describe.execute('t2', { id: theirs })).details.found).toBe(false)
    const expand = host.tool('lcm_expand', { sessionKey: KEY, sessionId: 's2' })
    const opened = await expand.execute('t3', { summaryIds: [mine], includeMessages: true })
    expect(opened.content[0].text).toMatch(/the boat is blue/)
    await expect(expand.execute('t4', { summaryIds: [theirs] })).rejects.toThrow(/not in conversation/)
    await reg.shutdown()
  })
})

describe('rollover without hooks, cron runs, bootstrapMaxTokens', () => {
  it('a new session id whose transcript does not continue the conversation starts a fresh one', async () => {
    const { reg, engine, core } = await plugin()
    const f1 = writeTranscript(turn('first session'), { sessionId: 's1' })
    await engine.bootstrap({ sessionId: 's1', sessionKey: KEY, sessionFile: f1 })
    const f2 = writeTranscript(turn('unrelated session'), { sessionId: 's2' })
    const r = await engine.bootstrap({ sessionId: 's2', sessionKey: KEY, sessionFile: f2 })
    expect(r.importedMessages).toBe(2)
    expect(await seen(engine, 's2')).not.toMatch(/first session/)
    expect((await core.sessionFamily(KEY)).find((c) => !c.active).archiveCause).toBe('session-rollover')
    await reg.shutdown()
  })

  it('each cron run is its own conversation', async () => {
    const { reg, engine, core } = await plugin()
    for (const run of ['r1', 'r2']) {
      const key = `agent:main:cron:nightly:run:${run}`
      await engine.ingestBatch({ sessionId: run, sessionKey: key, messages: turn(`cron ${run}`) })
    }
    // A cron job key reused by runs (a new session id each) rolls over on bootstrap.
    const jobKey = 'agent:main:cron:weekly'
    for (const run of ['w1', 'w2']) {
      const file = writeTranscript(turn(`weekly ${run}`), { sessionId: run })
      await engine.bootstrap({ sessionId: run, sessionKey: jobKey, sessionFile: file })
    }
    expect(await seen(engine, 'w2', jobKey)).not.toMatch(/weekly w1/)
    expect((await core.listConversations()).length).toBe(4)
    await reg.shutdown()
  })

  it('the documented ignore patterns match OpenClaw 2026.9 cron, heartbeat and active-memory keys only', () => {
    const policy = new SessionPolicy(resolveConfig({ ignoreSessionPatterns: ['agent:*:cron:**', 'cron:**', '**:heartbeat', '**:active-memory:*'] }, {}))
    for (const key of ['agent:main:cron:nightly:run:0f3a', 'agent:main:cron:nightly', 'cron:nightly', 'agent:main:main:heartbeat', 'agent:main:main:active-memory:3e1f0a9b2c4d']) expect(policy.isIgnored(key), key).toBe(true)
    for (const key of ['agent:main:main', 'agent:main:subagent:42', 'agent:main:telegram:direct:123']) expect(policy.isIgnored(key), key).toBe(false)
  })

  it('a first bootstrap imports at most bootstrapMaxTokens of the transcript tail', async () => {
    const { reg, engine, core } = await plugin({ bootstrapMaxTokens: 40 })
    const many = []
    for (let i = 0; i < 20; i++) many.push(...turn(`fork ${i}`, i))
    const file = writeTranscript(many, { sessionId: 'child' })
    const r = await engine.bootstrap({ sessionId: 'child', sessionKey: 'agent:main:subagent:x', sessionFile: file })
    expect(r.importedMessages).toBeGreaterThan(0)
    expect(r.importedMessages).toBeLessThan(40)
    const conv = await core.getConversation({ sessionKey: 'agent:main:subagent:x' })
    const stats = await core.getStats(conv.conversationId)
    expect(stats.messageTokens).toBeLessThanOrEqual(40)
    expect(stats.messageTokens).toBeGreaterThan(0)
    expect(resolveConfig({}, {}).bootstrapMaxTokens).toBe(6000)
    expect(resolveConfig({ leafChunkTokens: 40_000 }, {}).bootstrapMaxTokens).toBe(12_000)
    await reg.shutdown()
  })
})

describe('heartbeats and injected tags', () => {
  const heartbeat = [
    { role: 'user', content: 'Read HEARTBEAT.md if it exists and follow it. If nothing needs attention, reply HEARTBEAT_OK.' },
    { role: 'assistant', content: [{ type: 'text', text: ' heartbeat_ok ' }] },
  ]

  it('isHeartbeatOkTurn: exact ack (case-insensitive) and a turn that mentions heartbeat.md', () => {
    expect(isHeartbeatOkTurn(heartbeat)).toBe(true)
    expect(isHeartbeatOkTurn([heartbeat[0], { role: 'assistant', content: 'HEARTBEAT_OK, and also I fixed the build' }])).toBe(false)
    expect(isHeartbeatOkTurn([{ role: 'user', content: 'say HEARTBEAT_OK' }, heartbeat[1]])).toBe(false)
    expect(isHeartbeatOkTurn([{ role: 'user', content: '[OpenClaw heartbeat poll]' }, { role: 'assistant', content: 'HEARTBEAT_OK' }])).toBe(true)
  })

  it('pruneHeartbeatOk stores nothing of such a turn; off by default', async () => {
    for (const [prune, stored] of [
      [true, 2],
      [false, 4],
    ]) {
      const { reg, engine, core } = await plugin({ pruneHeartbeatOk: prune })
      await engine.afterTurn({ sessionId: 's1', sessionKey: KEY, messages: turn('real work'), prePromptMessageCount: 0 })
      await engine.afterTurn({ sessionId: 's1', sessionKey: KEY, messages: heartbeat, prePromptMessageCount: 0 })
      const conv = await core.getConversation({ sessionKey: KEY })
      expect((await core.getMessages(conv.conversationId)).length).toBe(stored)
      await reg.shutdown()
    }
    expect(resolveConfig({}, {}).pruneHeartbeatOk).toBe(false)
  })

  it('pruneHeartbeatOk: bootstrap leaves acknowledged heartbeat turns out of an import', async () => {
    for (const [prune, stored] of [
      [true, 2],
      [false, 4],
    ]) {
      const { reg, engine, core } = await plugin({ pruneHeartbeatOk: prune })
      const file = writeTranscript([...turn('real work'), ...heartbeat], { sessionId: `hb-${prune}` })
      await engine.bootstrap({ sessionId: `hb-${prune}`, sessionKey: KEY, sessionFile: file })
      const conv = await core.getConversation({ sessionKey: KEY })
      expect((await core.getMessages(conv.conversationId)).length).toBe(stored)
      await reg.shutdown()
    }
  })

  it('stripInjectedContextTags defaults to the reference list; an empty string disables', () => {
    expect(resolveConfig({}, {}).stripInjectedContextTags).toEqual(['active_memory_plugin', 'relevant-memories', 'relevant_memories', 'hindsight_memories'])
    expect(resolveConfig({}, { LCM_STRIP_INJECTED_CONTEXT_TAGS: '' }).stripInjectedContextTags).toEqual([])
    expect(resolveConfig({ newSessionRetainDepth: 3 }, {}).newSessionRetainDepth).toBe(3)
    expect(resolveConfig({}, { LCM_NEW_SESSION_RETAIN_DEPTH: '-1' }).newSessionRetainDepth).toBe(-1)
  })
})
