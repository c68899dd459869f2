// lcm-native/openclaw registered through a fake OpenClaw api, driving one whole
// session the way the host does.
import { describe, it, expect } from 'vitest'
import { execFileSync } from 'node:child_process'
import { root } from './helpers.mjs'
import { register, ENGINE_ID } from '../openclaw/index.mjs'
import { fakeApi, fakeLlm, freshConfig, conversation, writeTranscript, turnAnchors } from './openclaw-fixture.mjs'

describe('lcm-native/openclaw through a fake OpenClaw api', () => {
  it('registers the engine and the tools, then runs a whole session end to end', async () => {
    const llm = fakeLlm()
    const host = fakeApi({ llm, pluginConfig: freshConfig() })
    const plugin = register(host.api)
    await plugin.ready

    // What the host checks at registration and factory time.
    expect([...host.engines.keys()]).toEqual([ENGINE_ID])
    expect(host.tools.map((t) => t.opts.name)).toEqual(['lcm_grep', 'lcm_describe', 'lcm_expand', 'lcm_expand_query'])
    expect(host.hooks.has('gateway_stop')).toBe(true)
    const engine = await host.engines.get(ENGINE_ID)({})
    expect(engine.info.id).toBe('lcm-native')
    expect(engine.info.name.length).toBeGreaterThan(0)
    for (const m of ['ingest', 'assemble', 'compact', 'commitTurn', 'bootstrap', 'maintain', 'afterTurn', 'dispose']) expect(typeof engine[m]).toBe('function')
    expect(engine.info.transcriptSemantics).toEqual({ currentTurnFence: 'before-current-turn-entry-v1', turnAdvancementIdempotency: 'atomic-idempotent-v1' })
    expect(engine.info.ownsCompaction).toBe(true)

    const session = { sessionId: 'sess-1', sessionKey: 'agent:main:main' }
    const history = conversation(20, 60)
    history[7] = { role: 'assistant', content: [{ type: 'text', text: 'The deploy key is NEEDLE-ZEBRA-4411, stored in vault.' }] }
    const sessionFile = writeTranscript(history)

    // Bootstrap from the JSONL transcript.
    const boot = await engine.bootstrap({ ...session, sessionFile })
    expect(boot.bootstrapped).toBe(true)
    expect(boot.importedMessages).toBe(40)

    // Assemble under the runtime budget.
    const assembled = await engine.assemble({ ...session, messages: history, runtimeSettings: { limits: { promptTokenBudget: 100_000 } } })
    expect(assembled.messages.length).toBeGreaterThan(0)
    expect(assembled.estimatedTokens).toBeLessThanOrEqual(100_000)

    // A durable turn, committed then replayed, then a conflicting payload.
    const turn = [
      { role: 'user', content: 'turn 21 question: what is the deploy key?' },
      { role: 'assistant', content: [{ type: 'text', text: 'It is in the vault.' }] },
    ]
    const anchors = turnAnchors({ ...session, turnId: 'lt-21', from: 40, count: 2 })
    expect(await engine.commitTurn({ ...anchors, ...session, messages: turn })).toEqual({ status: 'committed' })
    expect(await engine.commitTurn({ ...anchors, ...session, messages: turn })).toEqual({ status: 'duplicate' })
    const changed = [turn[0], { role: 'assistant', content: [{ type: 'text', text: 'Something else.' }] }]
    await expect(engine.commitTurn({ ...anchors, ...session, messages: changed })).rejects.toMatchObject({ code: 'LCM_TURN_CONFLICT' })

    // Compact: an aborted call is a result; then a real one under a small budget.
    const controller = new AbortController()
    controller.abort()
    const aborted = await engine.compact({ ...session, tokenBudget: 2000, force: true, abortSignal: controller.signal })
    expect(aborted).toMatchObject({ ok: false, compacted: false, reason: 'aborted' })
    const compacted = await engine.compact({ ...session, tokenBudget: 4000, force: true, compactionTarget: 'threshold' })
    expect(compacted.compacted).toBe(true)
    expect(compacted.result.tokensAfter).toBeLessThan(compacted.result.tokensBefore)
    expect(llm.calls.length).toBeGreaterThan(0)

    // Maintenance after the turn.
    const maintained = await engine.maintain({ ...session, sessionFile, runtimeSettings: { limits: { promptTokenBudget: 3000 } } })
    expect(maintained).toMatchObject({ changed: false, bytesFreed: 0, rewrittenEntries: 0 })
    expect(typeof maintained.reason).toBe('string')

    // Sub-agent spawn rolled back, then a real spawn the child works under.
    const child = 'agent:main:subagent:child-1'
    const spawn = await engine.prepareSubagentSpawn({ parentSessionKey: session.sessionKey, childSessionKey: child })
    expect(typeof spawn.rollback).toBe('function')
    await spawn.rollback()
    expect(host.tool('lcm_grep', { sessionKey: child }) ).not.toBeNull()
    const orphan = await host.tool('lcm_grep', { sessionKey: child, sessionId: 'child-sess' }).execute('t0', { pattern: 'NEEDLE' })
    expect(orphan.content[0].text).toMatch(/No LCM history/)
    const spawned = await engine.prepareSubagentSpawn({ parentSessionKey: session.sessionKey, childSessionKey: child })
    expect(spawned).toBeDefined()

    // Each tool's execute, bound to the calling session.
    const grep = await host.tool('lcm_grep').execute('t1', { pattern: 'NEEDLE-ZEBRA-\\d+' })
    expect(grep.content[0].text).toContain('NEEDLE-ZEBRA-4411')
    const childGrep = await host.tool('lcm_grep', { sessionKey: child }).execute('t2', { pattern: 'NEEDLE-ZEBRA' })
    expect(childGrep.details.grant).not.toBeNull()
    const summaryId = grep.details.summaries[0]?.summaryId ?? compactedSummaryId(await host.tool('lcm_grep').execute('t3', { pattern: 'turn', scope: 'summaries' }))
    expect(summaryId).toMatch(/^sum_/)
    const described = await host.tool('lcm_describe').execute('t4', { id: summaryId })
    expect(described.details.found).toBe(true)
    const expanded = await host.tool('lcm_expand').execute('t5', { summaryIds: [summaryId], includeMessages: true })
    expect(expanded.details.citedIds).toContain(summaryId)
    const answerLlm = llm.calls.length
    const answered = await host.tool('lcm_expand_query').execute('t6', { prompt: 'What did the early turns discuss?', summaryIds: [summaryId] })
    expect(llm.calls.length).toBe(answerLlm + 1)
    expect(answered.details.answer.length).toBeGreaterThan(0)
    expect(answered.details.citedIds).toContain(summaryId)

    await engine.onSubagentEnded({ childSessionKey: child, reason: 'deleted' })
    await engine.dispose()
    await host.emit('gateway_stop')
    expect(host.tool('lcm_grep')).toBeNull()
  })

  it('is importable as lcm-native/openclaw (ESM) while require("lcm-native") keeps working', () => {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', `
      import { createRequire } from 'node:module'
      const m = await import('lcm-native/openclaw')
      const cjs = createRequire(import.meta.url)('lcm-native')
      const manifest = createRequire(import.meta.url)('lcm-native/openclaw.plugin.json')
      console.log(JSON.stringify([typeof m.register, typeof m.createContextEngine, m.default.id, typeof cjs.LcmEngine.open, manifest.id]))
    `], { cwd: root, encoding: 'utf8' })
    expect(JSON.parse(out)).toEqual(['function', 'function', 'lcm-native', 'function', 'lcm-native'])
  })

  it('a fresh install carries the module, its types and the plugin manifest (package files)', () => {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
    const [packed] = JSON.parse(execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' }))
    const files = packed.files.map((f) => f.path)
    for (const f of ['openclaw/index.mjs', 'openclaw/index.d.mts', 'openclaw/engine.mjs', 'openclaw/shared.mjs', 'openclaw/tools.mjs', 'openclaw.plugin.json', 'index.js', 'index.d.ts']) {
      expect(files).toContain(f)
    }
  })
})

function compactedSummaryId(result) {
  return result.details.summaries[0]?.summaryId
}
