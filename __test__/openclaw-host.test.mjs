// One turn driven through OpenClaw's own context-engine lifecycle helpers
// (`openclaw/plugin-sdk/agent-harness-runtime`), which load only on Node ≥ 24.16
// and only where the published `openclaw` package is installed (CI installs it
// outside the checkout for the type fixture; LCM_OPENCLAW_DIR points elsewhere).
import { describe, it, expect } from 'vitest'
import { pathToFileURL } from 'node:url'
import { tempDir } from './helpers.mjs'
import { findOpenclaw, openclawSkipReason } from './openclaw-installed.mjs'
import { createContextEngine } from '../openclaw/index.mjs'
import { freshConfig, conversation, writeTranscript } from './openclaw-fixture.mjs'

const openclaw = findOpenclaw()
const skipReason = openclawSkipReason()

describe.skipIf(skipReason !== null)(`OpenClaw's own turn helpers${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('bootstrap, assemble, finalize (afterTurn + maintenance) and compact run through the host helpers', async () => {
    process.env.OPENCLAW_STATE_DIR ??= tempDir('lcm-oc-state-')
    const host = await import(pathToFileURL(openclaw.harness).href)
    const engine = createContextEngine({ config: freshConfig(), env: {} })
    await engine.ready
    expect(host.isActiveHarnessContextEngine(engine)).toBe(true)

    const warnings = []
    const warn = (m) => warnings.push(m)
    const history = conversation(10, 60)
    const sessionFile = writeTranscript(history)
    const session = { sessionId: 'sess-1', sessionKey: 'agent:main:main' }

    await host.bootstrapHarnessContextEngine({ contextEngine: engine, hadSessionFile: true, ...session, sessionFile, warn, tokenBudget: 50_000, modelId: 'test-model' })
    expect(warnings).toEqual([])

    const assembled = await host.assembleHarnessContextEngine({ contextEngine: engine, ...session, messages: history, tokenBudget: 50_000, modelId: 'test-model', prompt: 'next question' })
    // Bootstrap maintenance may already have summarized the oldest chunk (leaf trigger).
    expect(assembled.messages.length).toBeGreaterThan(0)
    expect(assembled.messages.length).toBeLessThanOrEqual(20)
    expect(assembled.messages.at(-1)).toEqual(history.at(-1))
    expect(assembled.estimatedTokens).toBeLessThanOrEqual(50_000)

    const turn = [...history, { role: 'user', content: 'turn 10 question' }, { role: 'assistant', content: [{ type: 'text', text: 'turn 10 answer' }] }]
    const done = await host.finalizeHarnessContextEngineTurn({
      contextEngine: engine,
      promptError: false,
      aborted: false,
      yieldAborted: false,
      sessionIdUsed: session.sessionId,
      sessionKey: session.sessionKey,
      sessionFile,
      messagesSnapshot: turn,
      prePromptMessageCount: history.length,
      tokenBudget: 50_000,
      modelId: 'test-model',
      warn,
    })
    expect(done.postTurnFinalizationSucceeded).toBe(true)
    expect(warnings).toEqual([])
    const lcm = await engine.handle.use()
    const conv = await lcm.getConversation({ sessionKey: session.sessionKey })
    expect((await lcm.getStats(conv.conversationId)).messageCount).toBe(22)

    const compacted = await host.compactContextEngineWithSafetyTimeout(engine, { ...session, tokenBudget: 2000, force: true }, 60_000)
    expect(compacted).toMatchObject({ ok: true })
    expect(compacted.result.tokensAfter).toBeLessThanOrEqual(2000)
    await engine.dispose()
  })
})
