// Behaviours any LCM context engine must share (the groups the reference plugin's
// suite pins down), each expressed as our own test against lcm-native/openclaw.
import { describe, it, expect } from 'vitest'
import { readFileSync, appendFileSync, writeFileSync, rmSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { root, tempDir } from './helpers.mjs'
import { createContextEngine, register, resolveConfig, resolveTokenBudget, CONFIG_KEYS, ACCEPTED_HOST_PARAMS } from '../openclaw/index.mjs'
import { openHandleCount } from '../openclaw/shared.mjs'
import { boundLiveMessages } from '../openclaw/fallback.mjs'
import { fakeApi, fakeLlm, freshConfig, dbFile, conversation, filler, writeTranscript, turnAnchors, SMALL_CONFIG } from './openclaw-fixture.mjs'

const S = { sessionId: 'sess-1', sessionKey: 'agent:main:main' }
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const manifest = JSON.parse(readFileSync(join(root, 'openclaw.plugin.json'), 'utf8'))

/** A standalone engine over a fresh database, opened. */
async function openEngine(config = {}, options = {}) {
  const engine = createContextEngine({ config: freshConfig(config), env: {}, logger: quietLogger(), ...options })
  await engine.ready
  return engine
}

function quietLogger() {
  const logs = { warn: [], info: [], error: [] }
  return { logs, warn: (m) => logs.warn.push(m), info: (m) => logs.info.push(m), error: (m) => logs.error.push(m) }
}

async function core(engine) {
  return engine.handle.use()
}

async function storedCount(engine, lookup = { sessionKey: S.sessionKey }) {
  const lcm = await core(engine)
  const conv = await lcm.getConversation(lookup)
  return conv ? (await lcm.getStats(conv.conversationId)).messageCount : 0
}

async function seeded(config = {}, options = {}, turns = 20, tokens = 60) {
  const engine = await openEngine(config, options)
  const messages = conversation(turns, tokens)
  await engine.ingestBatch({ ...S, messages })
  return { engine, messages }
}

function commitParams(turnId, from, messages, session = S) {
  return { ...turnAnchors({ ...session, turnId, from, count: messages.length }), ...session, messages }
}

function userTurn(i, text = `question ${i}`) {
  return [
    { role: 'user', content: text },
    { role: 'assistant', content: [{ type: 'text', text: `answer ${i}` }] },
  ]
}

describe('lifecycle: info metadata', () => {
  it('info declares the engine id, a name and the package version', async () => {
    const e = await openEngine()
    expect(e.info).toMatchObject({ id: 'lcm-native', version: pkg.version })
    expect(e.info.name).toMatch(/lcm-native/)
    await e.dispose()
  })

  it('info declares both durable-turn transcript semantics', async () => {
    const e = await openEngine()
    expect(e.info.transcriptSemantics).toEqual({ currentTurnFence: 'before-current-turn-entry-v1', turnAdvancementIdempotency: 'atomic-idempotent-v1' })
    await e.dispose()
  })

  it('info declares background turn maintenance', async () => {
    const e = await openEngine()
    expect(e.info.turnMaintenanceMode).toBe('background')
    await e.dispose()
  })

  it('info lists its accepted host params explicitly (and not the prompt it never reads)', async () => {
    const e = await openEngine()
    expect(e.info.acceptedHostParams).toEqual([...ACCEPTED_HOST_PARAMS])
    expect(e.info.acceptedHostParams).toEqual(expect.arrayContaining(['sessionKey', 'runtimeSettings', 'runtimeContext', 'abortSignal', 'sessionTarget']))
    expect(e.info.acceptedHostParams).not.toContain('prompt')
    await e.dispose()
  })

  it('ownsCompaction is true once the database opened', async () => {
    const e = await openEngine()
    expect(e.info.ownsCompaction).toBe(true)
    await e.dispose()
  })

  it('ownsCompaction stays false when the database cannot open, so the host keeps its own compaction', async () => {
    const e = createContextEngine({ config: { databasePath: '/proc/definitely/not/writable/lcm.db' }, env: {}, logger: quietLogger() })
    await e.ready
    expect(e.info.ownsCompaction).toBe(false)
    await e.dispose()
  })
})

describe('lifecycle: one shared database handle across engine instances', () => {
  it('engine instances over one database file share one open engine', async () => {
    const config = freshConfig()
    const before = openHandleCount()
    const a = createContextEngine({ config, env: {} })
    const b = createContextEngine({ config, env: {} })
    await Promise.all([a.ready, b.ready])
    expect(a.handle).toBe(b.handle)
    expect(openHandleCount()).toBe(before + 1)
    await a.dispose()
    await b.dispose()
  })

  it('disposing one instance leaves the database open for the next turn', async () => {
    const config = freshConfig()
    const a = createContextEngine({ config, env: {} })
    const b = createContextEngine({ config, env: {} })
    await a.ready
    await a.dispose()
    expect((await b.ingest({ ...S, message: { role: 'user', content: 'still open' } })).ingested).toBe(true)
    await b.dispose()
  })

  it('the last dispose closes the database', async () => {
    const before = openHandleCount()
    const a = await openEngine()
    expect(openHandleCount()).toBe(before + 1)
    await a.dispose()
    await a.dispose()
    expect(openHandleCount()).toBe(before)
  })

  it('the gateway stop closes the database; engines still held fall back to live messages', async () => {
    const host = fakeApi()
    const plugin = register(host.api, { env: {} })
    await plugin.ready
    const engine = await host.engines.get('lcm-native')({})
    await host.emit('gateway_stop')
    const live = conversation(2, 10)
    const r = await engine.assemble({ ...S, messages: live, tokenBudget: 10_000 })
    expect(r.messages).toEqual(live)
    expect(engine.info.ownsCompaction).toBe(false)
  })
})

describe('plugin registration (fake api)', () => {
  it('a database that failed to open is opened again for the next engine the host asks for', async () => {
    const dir = tempDir('lcm-oc-retry-')
    const blocker = join(dir, 'state')
    writeFileSync(blocker, 'a file where the database directory should be')
    const host = fakeApi({ pluginConfig: { ...SMALL_CONFIG, databasePath: join(blocker, 'lcm.db') } })
    const plugin = register(host.api, { env: {} })
    await plugin.ready
    const first = await host.engines.get('lcm-native')({})
    expect(first.info.ownsCompaction).toBe(false)
    expect(host.logs.error.join('\n')).toMatch(/unavailable, falling back to live context/)
    rmSync(blocker)
    mkdirSync(blocker)
    const second = await host.engines.get('lcm-native')({})
    expect(second.info.ownsCompaction).toBe(true)
    expect(host.tool('lcm_grep')).not.toBeNull()
    await first.dispose()
    await second.dispose()
    await plugin.shutdown()
  })

  it('after the gateway stops the tools are withdrawn, and a restarted gateway opens the database again', async () => {
    const host = fakeApi()
    const plugin = register(host.api, { env: {} })
    await plugin.ready
    await host.emit('gateway_stop')
    expect(host.tool('lcm_grep')).toBeNull()
    await host.emit('gateway_start')
    const engine = await host.engines.get('lcm-native')({})
    expect(engine.info.ownsCompaction).toBe(true)
    expect(host.tool('lcm_grep')).not.toBeNull()
    await engine.dispose()
    await host.emit('gateway_stop')
  })

  it('registers the engine id and the four tools with session scope', async () => {
    const host = fakeApi()
    const plugin = register(host.api, { env: {} })
    await plugin.ready
    expect([...host.engines.keys()]).toEqual(['lcm-native'])
    expect(host.tools.map((t) => t.opts.name)).toEqual(['lcm_grep', 'lcm_describe', 'lcm_expand', 'lcm_expand_query'])
    const tool = host.tool('lcm_grep', { sessionKey: 'agent:x:y', sessionId: 's' })
    expect(tool).toMatchObject({ name: 'lcm_grep', label: expect.any(String), description: expect.any(String) })
    expect(tool.parameters.required).toEqual(['pattern'])
    await plugin.shutdown()
  })

  it('cli-metadata registration mode registers nothing and opens no database', () => {
    const before = openHandleCount()
    const host = fakeApi({ registrationMode: 'cli-metadata' })
    register(host.api, { env: {} })
    expect(host.engines.size).toBe(0)
    expect(host.tools.length).toBe(0)
    expect(openHandleCount()).toBe(before)
  })

  it('enabled: false in the plugin config registers nothing', () => {
    const host = fakeApi({ pluginConfig: freshConfig({ enabled: false }) })
    register(host.api, { env: {} })
    expect(host.engines.size).toBe(0)
  })

  it('LCM_ENABLED=false disables the plugin whatever the config says', () => {
    const host = fakeApi({ pluginConfig: freshConfig({ enabled: true }) })
    register(host.api, { env: { LCM_ENABLED: 'false' } })
    expect(host.engines.size).toBe(0)
  })

  it('summaries go through api.runtime.llm.complete when the host offers it', async () => {
    const llm = fakeLlm()
    const host = fakeApi({ llm })
    const plugin = register(host.api, { env: {} })
    await plugin.ready
    const engine = await host.engines.get('lcm-native')({})
    await engine.ingestBatch({ ...S, messages: conversation(20, 60) })
    const r = await engine.compact({ ...S, tokenBudget: 3000, force: true })
    expect(r.compacted).toBe(true)
    expect(llm.calls.length).toBeGreaterThan(0)
    expect(llm.calls[0].purpose).toMatch(/lcm-native/)
    expect(llm.calls[0].systemPrompt.length).toBeGreaterThan(0)
    await plugin.shutdown()
  })

  it('without a host LLM the configured offline summarizer compacts', async () => {
    const { engine } = await seeded({ summaryProvider: 'offline' })
    const r = await engine.compact({ ...S, tokenBudget: 3000, force: true })
    expect(r.compacted).toBe(true)
    await engine.dispose()
  })
})

describe('config resolution from plugin config and env', () => {
  it('environment variables win over the plugin config', () => {
    const c = resolveConfig({ contextThreshold: 0.5 }, { LCM_CONTEXT_THRESHOLD: '0.9' })
    expect(c.contextThreshold).toBe(0.9)
    expect(c.engineOptions.contextThreshold).toBe(0.9)
  })

  it('databasePath, its alias dbPath and LCM_DATABASE_PATH feed the database path', () => {
    expect(resolveConfig({ dbPath: '/a.db' }, {}).engineOptions.dbPath).toBe('/a.db')
    expect(resolveConfig({ databasePath: '/b.db' }, {}).engineOptions.dbPath).toBe('/b.db')
    expect(resolveConfig({ databasePath: '/b.db' }, { LCM_DATABASE_PATH: '/c.db' }).engineOptions.dbPath).toBe('/c.db')
  })

  it('sweepMaxDepth and its alias incrementalMaxDepth feed incrementalMaxDepth', () => {
    expect(resolveConfig({ incrementalMaxDepth: 2 }, {}).engineOptions.incrementalMaxDepth).toBe(2)
    expect(resolveConfig({}, { LCM_SWEEP_MAX_DEPTH: '-1' }).engineOptions.incrementalMaxDepth).toBe(-1)
  })

  it('session pattern lists come from arrays or comma-separated env values', () => {
    expect(resolveConfig({}, { LCM_IGNORE_SESSION_PATTERNS: 'cron:*, agent:*:probe' }).ignoreSessionPatterns).toEqual(['cron:*', 'agent:*:probe'])
  })

  it('unknown keys and unparsable values are warnings, never failures', () => {
    const c = resolveConfig({ nonsense: 1, freshTailCount: 'many' }, { LCM_LEAF_CHUNK_TOKENS: 'lots' })
    expect(c.warnings).toEqual(expect.arrayContaining([expect.stringMatching(/nonsense/), expect.stringMatching(/freshTailCount/), expect.stringMatching(/LCM_LEAF_CHUNK_TOKENS/)]))
    expect(c.engineOptions.freshTailCount).toBeUndefined()
  })

  it('a provider/model summaryModel names the provider and the model', () => {
    const c = resolveConfig({ summaryModel: 'anthropic/claude-haiku' }, {})
    expect(c.engineOptions).toMatchObject({ summaryProvider: 'anthropic', summaryModel: 'claude-haiku' })
  })

  it('the manifest config schema accepts exactly the documented keys and aliases', () => {
    const names = CONFIG_KEYS.flatMap((r) => [r.key, ...(r.aliases ?? [])]).sort()
    expect(Object.keys(manifest.configSchema.properties).sort()).toEqual(names)
    expect(manifest.configSchema.additionalProperties).toBe(false)
  })

  it('the manifest declares the context-engine kind and owns the four tools', () => {
    expect(manifest).toMatchObject({ id: 'lcm-native', kind: 'context-engine' })
    expect(manifest.contracts.tools).toEqual(['lcm_grep', 'lcm_describe', 'lcm_expand', 'lcm_expand_query'])
    expect(pkg.openclaw.extensions).toEqual(['./openclaw/index.mjs'])
  })
})

describe('budget resolution', () => {
  const cfg = resolveConfig({ defaultTokenBudget: 5000 }, {})
  it('tokenBudget wins', () => {
    expect(resolveTokenBudget({ tokenBudget: 900, runtimeContext: { tokenBudget: 800 }, runtimeSettings: { limits: { promptTokenBudget: 700 } } }, cfg)).toBe(900)
  })
  it('runtimeContext.tokenBudget comes next', () => {
    expect(resolveTokenBudget({ runtimeContext: { tokenBudget: 800 }, runtimeSettings: { limits: { promptTokenBudget: 700 } } }, cfg)).toBe(800)
  })
  it('runtimeSettings.limits.promptTokenBudget comes next', () => {
    expect(resolveTokenBudget({ runtimeSettings: { limits: { promptTokenBudget: 700 } } }, cfg)).toBe(700)
  })
  it('the configured default comes last (and non-positive values are skipped)', () => {
    expect(resolveTokenBudget({ tokenBudget: 0, runtimeContext: { tokenBudget: -1 }, runtimeSettings: { limits: { promptTokenBudget: null } } }, cfg)).toBe(5000)
  })
  it('maxAssemblyTokenBudget caps every source', () => {
    expect(resolveTokenBudget({ tokenBudget: 200_000 }, resolveConfig({ maxAssemblyTokenBudget: 32_000 }, {}))).toBe(32_000)
  })
})

describe('assemble', () => {
  it('output is clamped to the budget', async () => {
    const { engine } = await seeded({ freshTailCount: 8 }, {}, 40, 80)
    const r = await engine.assemble({ ...S, messages: [], tokenBudget: 2500 })
    expect(r.estimatedTokens).toBeLessThanOrEqual(2500)
    expect(r.messages.length).toBeGreaterThan(0)
    await engine.dispose()
  })

  it('falls back to the live messages when the store is unavailable, bounded by the budget', async () => {
    const e = createContextEngine({ config: { databasePath: '/proc/nope/lcm.db' }, env: {}, logger: quietLogger() })
    await e.ready
    const live = conversation(30, 100)
    const r = await e.assemble({ ...S, messages: live, tokenBudget: 1500 })
    expect(r.messages.length).toBeLessThan(live.length)
    expect(r.messages.length).toBeGreaterThan(0)
    expect(r.estimatedTokens).toBeLessThanOrEqual(1500)
    expect(r.messages.at(-1)).toEqual(live.at(-1))
    await e.dispose()
  })

  it("live messages returned for a session the store does not know are bounded by the budget too", async () => {
    const e = await openEngine()
    const live = conversation(30, 100)
    const r = await e.assemble({ sessionId: 'unknown', sessionKey: 'agent:main:unknown', messages: live, tokenBudget: 1500 })
    expect(r.estimatedTokens).toBeLessThanOrEqual(1500)
    expect(r.messages.length).toBeLessThan(live.length)
    expect(r.messages.at(-1)).toEqual(live.at(-1))
    await e.dispose()
  })

  it('a completed trailing assistant reply is kept: the host sends the current turn separately (prefill tail)', async () => {
    const e = await openEngine()
    const live = [{ role: 'user', content: 'first turn' }, { role: 'assistant', content: 'first reply' }]
    const r = await e.assemble({ sessionId: 'fresh', sessionKey: 'agent:main:fresh', messages: live, tokenBudget: 1000 })
    expect(r.messages).toEqual(live)
    await e.ingestBatch({ sessionId: 'fresh', sessionKey: 'agent:main:fresh', messages: live })
    const stored = await e.assemble({ sessionId: 'fresh', sessionKey: 'agent:main:fresh', messages: live, tokenBudget: 1000 })
    expect(stored.messages.at(-1).role).toBe('assistant')
    expect(JSON.stringify(stored.messages.at(-1).content)).toContain('first reply')
    await e.dispose()
  })

  it('the live fallback never starts on a tool result whose call was cut off', () => {
    const live = [
      { role: 'user', content: filler(400) },
      { role: 'assistant', content: [{ type: 'toolCall', id: 'c1', name: 'read', arguments: {} }] },
      { role: 'toolResult', toolCallId: 'c1', content: [{ type: 'text', text: 'ok' }] },
      { role: 'user', content: 'next' },
    ]
    const r = boundLiveMessages(live, 60)
    expect(r.messages[0].role).not.toBe('toolResult')
    expect(r.messages.at(-1).content).toBe('next')
  })

  it('the live fallback keeps the newest user prompt even when it alone is over the budget', () => {
    const r = boundLiveMessages([{ role: 'user', content: filler(5000) }], 100)
    expect(r.messages).toHaveLength(1)
  })

  it('an ignored session assembles from live messages and stores nothing', async () => {
    const e = await openEngine({ ignoreSessionPatterns: ['agent:*:probe'] })
    const probe = { sessionId: 'p', sessionKey: 'agent:main:probe' }
    expect(await e.ingest({ ...probe, message: { role: 'user', content: 'x' } })).toEqual({ ingested: false })
    const live = conversation(2, 5)
    expect((await e.assemble({ ...probe, messages: live, tokenBudget: 10_000 })).messages).toEqual(live)
    expect(await storedCount(e, { sessionKey: probe.sessionKey })).toBe(0)
    await e.dispose()
  })

  it('a session without stored history gets its live messages back', async () => {
    const e = await openEngine()
    const live = conversation(3, 5)
    const r = await e.assemble({ sessionId: 'new', sessionKey: 'agent:main:new', messages: live, tokenBudget: 10_000 })
    expect(r.messages).toEqual(live)
    await e.dispose()
  })

  it('systemPromptAddition is present when summaries are assembled', async () => {
    const { engine } = await seeded()
    await engine.compact({ ...S, tokenBudget: 3000, force: true })
    const r = await engine.assemble({ ...S, messages: [], tokenBudget: 3000 })
    expect(r.messages.some((m) => JSON.stringify(m.content).includes('<summary'))).toBe(true)
    expect(r.systemPromptAddition).toMatch(/lcm_grep/)
    await engine.dispose()
  })

  it('systemPromptAddition is absent when no summary is assembled', async () => {
    const { engine } = await seeded({}, {}, 2, 10)
    const r = await engine.assemble({ ...S, messages: [], tokenBudget: 100_000 })
    expect(r.systemPromptAddition).toBeUndefined()
    await engine.dispose()
  })

  it('summary text is XML-escaped in the assembled context', async () => {
    const llm = fakeLlm({ answer: 'Decided to use <b>bold</b> & "quotes" </summary>' })
    const { engine } = await seeded({}, { llm })
    await engine.compact({ ...S, tokenBudget: 3000, force: true })
    const r = await engine.assemble({ ...S, messages: [], tokenBudget: 3000 })
    const text = JSON.stringify(r.messages)
    expect(text).toContain('&lt;b&gt;bold&lt;/b&gt; &amp;')
    expect(text).not.toContain('<b>bold</b>')
    await engine.dispose()
  })

  it('tool calls and results are paired in the assembled context', async () => {
    const e = await openEngine()
    await e.ingestBatch({
      ...S,
      messages: [
        { role: 'user', content: 'read the file' },
        { role: 'assistant', content: [{ type: 'toolCall', id: 'call_1', name: 'read', arguments: { path: 'a' } }] },
        { role: 'toolResult', toolCallId: 'orphan_9', toolName: 'read', content: [{ type: 'text', text: 'stray' }] },
        { role: 'user', content: 'and then?' },
      ],
    })
    const r = await e.assemble({ ...S, messages: [], tokenBudget: 10_000 })
    const calls = new Set()
    const results = new Set()
    for (const m of r.messages) {
      if (m.role === 'assistant' && Array.isArray(m.content)) for (const b of m.content) if (b.type === 'toolCall') calls.add(b.id)
      if (m.role === 'toolResult') results.add(m.toolCallId)
    }
    for (const id of results) expect(calls.has(id)).toBe(true)
    for (const id of calls) expect(results.has(id)).toBe(true)
    await e.dispose()
  })

  it('heartbeat batches are not stored and do not show in the context', async () => {
    const e = await openEngine()
    const r = await e.ingestBatch({ ...S, messages: [{ role: 'user', content: 'HEARTBEAT' }, { role: 'assistant', content: 'HEARTBEAT_OK' }], isHeartbeat: true })
    expect(r.ingestedCount).toBe(0)
    expect(await storedCount(e)).toBe(0)
    await e.dispose()
  })

  it('extra host params (tools, citations, model, prompt) do not disturb assembly', async () => {
    const { engine } = await seeded({}, {}, 3, 10)
    const r = await engine.assemble({ ...S, messages: [], tokenBudget: 50_000, availableTools: new Set(['lcm_grep']), citationsMode: 'auto', model: 'claude-x', prompt: 'hi', runtimeContext: { tokenBudget: 50_000, currentTokenCount: 10 } })
    expect(r.messages.length).toBe(6)
    await engine.dispose()
  })
})

describe('ingest and afterTurn', () => {
  it('ingest stores one message', async () => {
    const e = await openEngine()
    expect(await e.ingest({ ...S, message: { role: 'user', content: 'hello' } })).toEqual({ ingested: true })
    expect(await storedCount(e)).toBe(1)
    await e.dispose()
  })

  it('a stateless session reads but never writes', async () => {
    const e = await openEngine({ statelessSessionPatterns: ['agent:*:cron:**'] })
    const cron = { sessionId: 'c', sessionKey: 'agent:main:cron:nightly:1' }
    expect(await e.ingest({ ...cron, message: { role: 'user', content: 'x' } })).toEqual({ ingested: false })
    expect(await e.commitTurn(commitParams('c-1', 0, userTurn(1), cron))).toEqual({ status: 'committed' })
    expect(await storedCount(e, { sessionKey: cron.sessionKey })).toBe(0)
    await e.dispose()
  })

  it('afterTurn stores only the messages after prePromptMessageCount', async () => {
    const e = await openEngine()
    const messages = conversation(5, 10)
    await e.afterTurn({ ...S, sessionFile: '/nonexistent', messages, prePromptMessageCount: 6 })
    expect(await storedCount(e)).toBe(4)
    await e.dispose()
  })

  it('afterTurn of a heartbeat run stores nothing', async () => {
    const e = await openEngine()
    await e.afterTurn({ ...S, sessionFile: '/x', messages: conversation(2, 5), prePromptMessageCount: 0, isHeartbeat: true })
    expect(await storedCount(e)).toBe(0)
    await e.dispose()
  })

  it('a failing store is logged, not thrown, by ingest', async () => {
    const logger = quietLogger()
    const e = createContextEngine({ config: { databasePath: '/proc/nope/lcm.db' }, env: {}, logger })
    expect(await e.ingest({ ...S, message: { role: 'user', content: 'x' } })).toEqual({ ingested: false })
    expect(logger.logs.warn.join('\n')).toMatch(/ingest failed/)
    await e.dispose()
  })
})

describe('compact', () => {
  it('the budget target compacts until the context is under the budget', async () => {
    const { engine } = await seeded({}, {}, 30, 60)
    const r = await engine.compact({ ...S, tokenBudget: 3000, compactionTarget: 'budget', force: true })
    expect(r.ok).toBe(true)
    expect(r.compacted).toBe(true)
    expect(r.result.tokensAfter).toBeLessThanOrEqual(3000)
    expect(r.result.details.target).toBe('budget')
    await engine.dispose()
  })

  it('the threshold target below the threshold does nothing and says so', async () => {
    const { engine } = await seeded({}, {}, 3, 10)
    const r = await engine.compact({ ...S, tokenBudget: 100_000, compactionTarget: 'threshold' })
    expect(r).toMatchObject({ ok: true, compacted: false })
    expect(r.reason).toMatch(/below threshold/)
    await engine.dispose()
  })

  it('force compacts even below the threshold', async () => {
    const { engine } = await seeded({}, {}, 20, 60)
    const r = await engine.compact({ ...S, tokenBudget: 1_000_000, compactionTarget: 'threshold', force: true })
    expect(r.compacted).toBe(true)
    await engine.dispose()
  })

  it('nothing to compact is a result, not an error', async () => {
    const e = await openEngine()
    const r = await e.compact({ sessionId: 'empty', sessionKey: 'agent:main:empty', tokenBudget: 1000, force: true })
    expect(r.compacted).toBe(false)
    expect(typeof r.reason).toBe('string')
    await e.dispose()
  })

  it('a summarizer authentication failure trips the breaker instead of retrying forever', async () => {
    const llm = fakeLlm({ fail: () => Object.assign(new Error('401 Unauthorized: invalid api key'), { status: 401 }) })
    const { engine } = await seeded({ circuitBreakerThreshold: 2 }, { llm })
    const first = await engine.compact({ ...S, tokenBudget: 3000, force: true })
    expect(first.ok).toBe(false)
    await engine.compact({ ...S, tokenBudget: 3000, force: true })
    const calls = llm.calls.length
    // Automatic compaction stops asking; a manual /compact still runs (issue 63).
    const maintained = await engine.maintain({ ...S, sessionFile: '/x', tokenBudget: 500 })
    expect(maintained.reason).toMatch(/circuit breaker open/)
    expect(llm.calls.length).toBe(calls)
    const manual = await engine.compact({ ...S, tokenBudget: 3000, force: true })
    expect(manual.reason).toMatch(/LCM_CALLBACK/)
    expect(llm.calls.length).toBeGreaterThan(calls)
    await engine.dispose()
  })

  it('the breaker closes again after its cooldown', async () => {
    let fail = true
    const llm = fakeLlm({ answer: () => { if (fail) throw Object.assign(new Error('forbidden'), { status: 403 }); return 'short summary' } })
    const { engine } = await seeded({ circuitBreakerThreshold: 1, circuitBreakerCooldownMs: 50 }, { llm })
    await engine.compact({ ...S, tokenBudget: 3000, force: true })
    expect((await engine.maintain({ ...S, sessionFile: '/x', tokenBudget: 500 })).reason).toMatch(/circuit breaker/)
    fail = false
    await new Promise((r) => setTimeout(r, 80))
    expect((await engine.maintain({ ...S, sessionFile: '/x', tokenBudget: 500 })).reason).toMatch(/^lcm store: compacted/)
    await engine.dispose()
  })

  it('other summarizer failures do not trip the breaker', async () => {
    const llm = fakeLlm({ fail: () => new Error('model overloaded') })
    const { engine } = await seeded({ circuitBreakerThreshold: 1 }, { llm })
    await engine.compact({ ...S, tokenBudget: 3000, force: true })
    const again = await engine.compact({ ...S, tokenBudget: 3000, force: true })
    expect(again.reason).not.toMatch(/circuit breaker/)
    await engine.dispose()
  })

  it('a transcript that cannot shrink ends with a terminal verdict, not a loop', async () => {
    // No budget share caps the tail: it alone is over the budget.
    const e = await openEngine({ freshTailCount: 4, freshTailMaxBudgetRatio: 0 })
    await e.ingestBatch({ ...S, messages: conversation(2, 600) })
    const first = await e.compact({ ...S, tokenBudget: 300, force: true })
    expect(first).toMatchObject({ ok: false, compacted: false })
    expect(first.reason).toMatch(/terminal/)
    const second = await e.compact({ ...S, tokenBudget: 300, force: true })
    expect(second.reason).toBe(first.reason)
    await e.dispose()
  })

  it('a store failure during compaction is a result, not a throw', async () => {
    const e = createContextEngine({ config: { databasePath: '/proc/nope/lcm.db' }, env: {}, logger: quietLogger() })
    const r = await e.compact({ ...S, tokenBudget: 1000, force: true })
    expect(r).toMatchObject({ ok: false, compacted: false })
    expect(r.reason).toMatch(/compaction failed/)
    await e.dispose()
  })

  it('an abort during compaction stops it between passes', async () => {
    const controller = new AbortController()
    const llm = fakeLlm({ answer: () => { controller.abort(); return 'summary written while aborting' } })
    const { engine } = await seeded({}, { llm }, 30, 60)
    const r = await engine.compact({ ...S, tokenBudget: 2000, force: true, abortSignal: controller.signal })
    expect(r.ok).toBe(false)
    expect(r.reason).toMatch(/abort/)
    expect(llm.calls.length).toBe(1)
    await engine.dispose()
  })
})

describe('commitTurn (durable turns)', () => {
  it('rejects a turn whose advancementKey is not the admission logical turn id', async () => {
    const e = await openEngine()
    const p = commitParams('t-1', 0, userTurn(1))
    await expect(e.commitTurn({ ...p, advancementKey: 'other' })).rejects.toMatchObject({ code: 'LCM_INVALID_INPUT' })
    await e.dispose()
  })

  it('rejects anchors that disagree on the transcript generation', async () => {
    const e = await openEngine()
    const p = commitParams('t-1', 0, userTurn(1))
    await expect(e.commitTurn({ ...p, terminal: { ...p.terminal, generation: 'g2' } })).rejects.toThrow(/generation/)
    await e.dispose()
  })

  it('rejects a message count that does not span the admitted positions', async () => {
    const e = await openEngine()
    const p = commitParams('t-1', 0, userTurn(1))
    await expect(e.commitTurn({ ...p, messages: [p.messages[0]] })).rejects.toMatchObject({ code: 'LCM_INVALID_INPUT', message: expect.stringMatching(/positions 0\.\.=1/) })
    expect(await storedCount(e)).toBe(0)
    await e.dispose()
  })

  it('commits the turn delta and answers duplicate on replay without writing again', async () => {
    const e = await openEngine()
    const p = commitParams('t-1', 0, userTurn(1))
    expect(await e.commitTurn(p)).toEqual({ status: 'committed' })
    expect(await storedCount(e)).toBe(2)
    expect(await e.commitTurn(p)).toEqual({ status: 'duplicate' })
    expect(await storedCount(e)).toBe(2)
    await e.dispose()
  })

  it('a different payload under a committed key is refused (fail closed)', async () => {
    const e = await openEngine()
    await e.commitTurn(commitParams('t-1', 0, userTurn(1)))
    await expect(e.commitTurn(commitParams('t-1', 0, userTurn(1, 'edited question')))).rejects.toMatchObject({ code: 'LCM_TURN_CONFLICT', message: expect.stringMatching(/^lcm-native: LCM_TURN_CONFLICT: /) })
    expect(await storedCount(e)).toBe(2)
    await e.dispose()
  })

  it('a heartbeat turn commits without storing', async () => {
    const e = await openEngine()
    expect(await e.commitTurn({ ...commitParams('hb-1', 0, userTurn(1)), isHeartbeat: true })).toEqual({ status: 'committed' })
    expect(await storedCount(e)).toBe(0)
    await e.dispose()
  })

  it('a committed turn survives a restart (replay after reopening is a duplicate)', async () => {
    const config = freshConfig()
    const a = createContextEngine({ config, env: {} })
    const p = commitParams('t-9', 0, userTurn(9))
    expect(await a.commitTurn(p)).toEqual({ status: 'committed' })
    await a.dispose()
    const b = createContextEngine({ config, env: {} })
    expect(await b.commitTurn(p)).toEqual({ status: 'duplicate' })
    await b.dispose()
  })

  it('successive turns append in order', async () => {
    const e = await openEngine()
    await e.commitTurn(commitParams('t-1', 0, userTurn(1)))
    await e.commitTurn(commitParams('t-2', 2, userTurn(2)))
    const lcm = await core(e)
    const conv = await lcm.getConversation({ sessionKey: S.sessionKey })
    expect((await lcm.getMessages(conv.conversationId)).map((m) => m.content)).toEqual(['question 1', [{ type: 'text', text: 'answer 1' }], 'question 2', [{ type: 'text', text: 'answer 2' }]])
    await e.dispose()
  })

  it('a replay whose anchors list their keys in another order is still a duplicate', async () => {
    const e = await openEngine()
    const p = commitParams('t-1', 0, userTurn(1))
    await e.commitTurn(p)
    const reordered = { ...p, admission: Object.fromEntries(Object.entries(p.admission).reverse()), terminal: Object.fromEntries(Object.entries(p.terminal).reverse()) }
    expect(await e.commitTurn(reordered)).toEqual({ status: 'duplicate' })
    await e.dispose()
  })

  it('host runtime params do not change the identity of a turn', async () => {
    const e = await openEngine()
    const p = commitParams('t-1', 0, userTurn(1))
    await e.commitTurn({ ...p, runtimeSettings: { limits: { promptTokenBudget: 1000 } } })
    expect(await e.commitTurn({ ...p, runtimeContext: { tokenBudget: 5 }, sessionTarget: { sessionId: S.sessionId } })).toEqual({ status: 'duplicate' })
    await e.dispose()
  })

  it('rejects anchors that belong to another session than the call', async () => {
    const e = await openEngine()
    const p = commitParams('t-1', 0, userTurn(1))
    await expect(e.commitTurn({ ...p, sessionId: 'someone-else' })).rejects.toThrow(/belong to session/)
    await e.dispose()
  })
})

describe('bootstrap', () => {
  it('first bootstrap imports the transcript messages', async () => {
    const e = await openEngine()
    const file = writeTranscript(conversation(5, 10))
    const r = await e.bootstrap({ ...S, sessionFile: file })
    expect(r).toMatchObject({ bootstrapped: true, importedMessages: 10 })
    expect(await storedCount(e)).toBe(10)
    await e.dispose()
  })

  it('a second bootstrap of the same transcript imports nothing', async () => {
    const e = await openEngine()
    const file = writeTranscript(conversation(5, 10))
    await e.bootstrap({ ...S, sessionFile: file })
    const again = await e.bootstrap({ ...S, sessionFile: file })
    expect(again.importedMessages ?? 0).toBe(0)
    expect(await storedCount(e)).toBe(10)
    await e.dispose()
  })

  it('a tail appended after a crash is reconciled on the next bootstrap', async () => {
    const e = await openEngine()
    const file = writeTranscript(conversation(5, 10))
    await e.bootstrap({ ...S, sessionFile: file })
    appendFileSync(file, [
      { type: 'message', id: 'e11', parentId: 'e10', timestamp: new Date().toISOString(), message: { role: 'user', content: 'after the crash' } },
      { type: 'message', id: 'e12', parentId: 'e11', timestamp: new Date().toISOString(), message: { role: 'assistant', content: [{ type: 'text', text: 'recovered' }] } },
    ].map((l) => JSON.stringify(l)).join('\n') + '\n')
    await e.bootstrap({ ...S, sessionFile: file })
    expect(await storedCount(e)).toBe(12)
    await e.dispose()
  })

  it('non-message transcript entries are skipped', async () => {
    const e = await openEngine()
    const file = writeTranscript(conversation(2, 10), { extraEntries: [{ type: 'model_change', id: 'm1', provider: 'x', modelId: 'y' }, { type: 'custom', id: 'c1', customType: 'state', data: {} }] })
    const r = await e.bootstrap({ ...S, sessionFile: file })
    expect(r.importedMessages).toBe(4)
    await e.dispose()
  })

  it('a missing transcript is a reason, not an error', async () => {
    const e = await openEngine()
    const r = await e.bootstrap({ ...S, sessionFile: '/nonexistent/session.jsonl' })
    expect(r.bootstrapped).toBe(false)
    expect(r.reason).toMatch(/no transcript/)
    await e.dispose()
  })
})

describe('maintain', () => {
  it('below the threshold maintenance does nothing and calls no model', async () => {
    const llm = fakeLlm()
    const { engine } = await seeded({}, { llm }, 2, 10)
    const r = await engine.maintain({ ...S, sessionFile: '/x', runtimeSettings: { limits: { promptTokenBudget: 100_000 } } })
    expect(r).toEqual({ changed: false, bytesFreed: 0, rewrittenEntries: 0, reason: 'below threshold' })
    expect(llm.calls.length).toBe(0)
    await engine.dispose()
  })

  it('over the threshold maintenance runs one incremental compaction', async () => {
    const { engine } = await seeded({}, {}, 20, 60)
    const r = await engine.maintain({ ...S, sessionFile: '/x', runtimeContext: { tokenBudget: 3000 } })
    expect(r.changed).toBe(false)
    expect(r.reason).toMatch(/lcm store: .*incremental|lcm store:/)
    const lcm = await core(engine)
    const conv = await lcm.getConversation({ sessionKey: S.sessionKey })
    expect((await lcm.getStats(conv.conversationId)).summaryCount).toBeGreaterThan(0)
    await engine.dispose()
  })

  it('an aborted maintenance rejects with the abort reason', async () => {
    const e = await openEngine()
    const controller = new AbortController()
    controller.abort()
    await expect(e.maintain({ ...S, sessionFile: '/x', abortSignal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' })
    await e.dispose()
  })
})

describe('sub-agent grants bound to the child session key', () => {
  async function withHost() {
    const llm = fakeLlm()
    const host = fakeApi({ llm })
    const plugin = register(host.api, { env: {} })
    await plugin.ready
    const engine = await host.engines.get('lcm-native')({})
    const messages = conversation(20, 60)
    messages[5] = { role: 'assistant', content: [{ type: 'text', text: 'secret word PELICAN-77' }] }
    await engine.ingestBatch({ ...S, messages })
    return { host, engine, plugin, llm }
  }
  const child = 'agent:main:subagent:c1'

  it('the child works under the grant over the parent conversation', async () => {
    const { host, engine, plugin } = await withHost()
    await engine.prepareSubagentSpawn({ parentSessionKey: S.sessionKey, childSessionKey: child, ttlMs: 60_000 })
    const r = await host.tool('lcm_grep', { sessionKey: child }).execute('t', { pattern: 'PELICAN-\\d+' })
    expect(r.content[0].text).toContain('PELICAN-77')
    expect(r.details.grant.issuer).toBe(S.sessionKey)
    await plugin.shutdown()
  })

  it('a rollback revokes the grant and unbinds the child', async () => {
    const { host, engine, plugin } = await withHost()
    const prep = await engine.prepareSubagentSpawn({ parentSessionKey: S.sessionKey, childSessionKey: child })
    await prep.rollback()
    const r = await host.tool('lcm_grep', { sessionKey: child }).execute('t', { pattern: 'PELICAN' })
    expect(r.content[0].text).toMatch(/No LCM history/)
    await plugin.shutdown()
  })

  it('a deleted child has its grant revoked and its binding removed', async () => {
    const { host, engine, plugin } = await withHost()
    await engine.prepareSubagentSpawn({ parentSessionKey: S.sessionKey, childSessionKey: child })
    await engine.onSubagentEnded({ childSessionKey: child, reason: 'deleted' })
    const r = await host.tool('lcm_grep', { sessionKey: child }).execute('t', { pattern: 'PELICAN' })
    expect(r.content[0].text).toMatch(/No LCM history/)
    await plugin.shutdown()
  })

  it('a completed child keeps its binding but its grant is revoked', async () => {
    const { host, engine, plugin } = await withHost()
    await engine.prepareSubagentSpawn({ parentSessionKey: S.sessionKey, childSessionKey: child })
    await engine.onSubagentEnded({ childSessionKey: child, reason: 'completed' })
    await expect(host.tool('lcm_grep', { sessionKey: child }).execute('t', { pattern: 'PELICAN' })).rejects.toMatchObject({ code: expect.stringMatching(/^LCM_GRANT/) })
    await plugin.shutdown()
  })

  it('a released child loses the binding', async () => {
    const { host, engine, plugin } = await withHost()
    await engine.prepareSubagentSpawn({ parentSessionKey: S.sessionKey, childSessionKey: child })
    await engine.onSubagentEnded({ childSessionKey: child, reason: 'released' })
    expect(engine.handle.bindings.has(child)).toBe(false)
    await plugin.shutdown()
  })

  it("a grandchild's grant is no wider than its parent's", async () => {
    const { engine, plugin } = await withHost()
    await engine.prepareSubagentSpawn({ parentSessionKey: S.sessionKey, childSessionKey: child })
    await engine.prepareSubagentSpawn({ parentSessionKey: child, childSessionKey: `${child}:g` })
    const lcm = await core(engine)
    const parentGrant = await lcm.getGrant(engine.handle.bindings.get(child))
    const grand = await lcm.getGrant(engine.handle.bindings.get(`${child}:g`))
    expect(grand.tokenCap).toBeLessThanOrEqual(parentGrant.remainingTokens)
    expect(grand.maxDepth).toBeLessThan(parentGrant.maxDepth)
    expect(grand.conversationIds).toEqual(parentGrant.conversationIds)
    await plugin.shutdown()
  })

  it('no grant is prepared for a parent without stored history', async () => {
    const { engine, plugin } = await withHost()
    expect(await engine.prepareSubagentSpawn({ parentSessionKey: 'agent:main:other', childSessionKey: child })).toBeUndefined()
    await plugin.shutdown()
  })
})

describe('recall tools', () => {
  async function host(options = {}) {
    const h = fakeApi(options)
    const plugin = register(h.api, { env: {} })
    await plugin.ready
    const engine = await h.engines.get('lcm-native')({})
    await engine.ingestBatch({ ...S, messages: conversation(20, 60) })
    await engine.compact({ ...S, tokenBudget: 3000, force: true })
    const lcm = await core(engine)
    const conv = await lcm.getConversation({ sessionKey: S.sessionKey })
    const summaryId = (await lcm.getSummaries(conv.conversationId))[0].summaryId
    return { h, plugin, engine, lcm, summaryId }
  }

  it('lcm_expand_query answers through the host LLM and returns the ids it used', async () => {
    const llm = fakeLlm({ answer: 'The early turns discussed alpha and bravo.' })
    const { h, plugin, summaryId } = await host({ llm })
    const r = await h.tool('lcm_expand_query').execute('q', { prompt: 'What came first?', summaryIds: [summaryId] })
    expect(r.details.answer).toBe('The early turns discussed alpha and bravo.')
    expect(r.details.citedIds).toContain(summaryId)
    expect(llm.calls.at(-1).purpose).toBe('lcm_expand_query')
    expect(llm.calls.at(-1).messages[0].content).toContain('What came first?')
    await plugin.shutdown()
  })

  it('lcm_expand_query stays within its token cap and revokes its temporary grant', async () => {
    const llm = fakeLlm({ answer: 'ok' })
    const { h, plugin, summaryId } = await host({ llm })
    const r = await h.tool('lcm_expand_query').execute('q', { prompt: 'details?', summaryIds: [summaryId], tokenCap: 50 })
    expect(r.details.totalTokens).toBeLessThanOrEqual(50)
    await plugin.shutdown()
  })

  it('lcm_expand_query without a host LLM fails with a clear error', async () => {
    const { h, plugin, summaryId } = await host()
    await expect(h.tool('lcm_expand_query').execute('q', { prompt: 'x', summaryIds: [summaryId] })).rejects.toThrow(/host LLM/)
    await plugin.shutdown()
  })

  it('lcm_describe of an unknown id says it was not found', async () => {
    const { h, plugin } = await host()
    const r = await h.tool('lcm_describe').execute('d', { id: 'sum_0000000000000000' })
    expect(r.details.found).toBe(false)
    await plugin.shutdown()
  })

  it("each session's tools read that session's conversation only", async () => {
    const { h, plugin, engine } = await host()
    await engine.ingest({ sessionId: 'other', sessionKey: 'agent:main:other', message: { role: 'user', content: 'OTHER-SESSION-ONLY' } })
    const own = await h.tool('lcm_grep').execute('g', { pattern: 'OTHER-SESSION-ONLY' })
    expect(own.details.totalMatches).toBe(0)
    const other = await h.tool('lcm_grep', { sessionKey: 'agent:main:other', sessionId: 'other' }).execute('g', { pattern: 'OTHER-SESSION-ONLY' })
    expect(other.details.totalMatches).toBe(1)
    await plugin.shutdown()
  })

  it('lcm_describe and lcm_expand walk a summary of the session', async () => {
    const { h, plugin, summaryId } = await host()
    expect((await h.tool('lcm_describe').execute('d', { id: summaryId })).content[0].text).toContain(summaryId)
    const x = await h.tool('lcm_expand').execute('x', { summaryIds: [summaryId], includeMessages: true })
    expect(x.details.totalTokens).toBeGreaterThan(0)
    await plugin.shutdown()
  })
})

it('the SMALL fixture config is accepted by the engine', () => {
  expect(resolveConfig(SMALL_CONFIG, {}).warnings).toEqual([])
  expect(dbFile()).toMatch(/lcm\.db$/)
})
