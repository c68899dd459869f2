// `/new` and `/reset` in OpenClaw's gateway (`openclaw gateway run`, turns through
// `openclaw agent`) with lcm-native installed from the packed archive: after
// `/reset` the model's next request carries no summary and no message of the old
// conversation; after `/new` it carries only summaries of depth ≥ 2 (the default
// newSessionRetainDepth); a gateway restart in between changes nothing.
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { join } from 'node:path'
import { appendFileSync } from 'node:fs'
import { LcmEngine } from './helpers.mjs'
import { gatewayState, openclawCliAsync, openclawSkipReason, startGateway } from './openclaw-installed.mjs'
import { chatCompletionsServer } from './openclaw-model.mjs'

const skipReason = openclawSkipReason()
const TOKEN = 'lifecycle-test-token'
const KEY_NEW = 'agent:main:lifecycle-new'
const KEY_RESET = 'agent:main:lifecycle-reset'

/** Agent turns get a long reply (so compaction has work); summarizer requests a short summary. */
function respond(body, n) {
  if (!body.tools) return { text: `Summary ${n}: ${(body.messages ?? []).length} items about the rollout were condensed.` }
  return { text: `Reply ${n}: ` + 'the rollout went on and the cache was warmed. '.repeat(12) }
}

let model
beforeAll(async () => {
  if (skipReason === null) model = await chatCompletionsServer(respond)
})
afterAll(() => model?.server.close())

/** The agent requests of a session key sent after request index `from`. */
function turnsOf(sessionKey, from = 0) {
  return model.requests.slice(from).filter((r) => r.body.tools && JSON.stringify(r.body.messages).includes(`session=${sessionKey}`))
}

/** The summary ids and depths carried by a request (`<summary id="sum_…" … depth="n"`). */
function summariesIn(request) {
  const text = JSON.stringify(request.body.messages)
  return [...text.matchAll(/<summary id=\\"(sum_[0-9a-f]+)\\"[^>]*?depth=\\"(\d+)\\"/g)].map((m) => ({ id: m[1], depth: Number(m[2]) }))
}

async function say(state, sessionKey, text) {
  const r = await openclawCliAsync(state, ['agent', '--session-key', sessionKey, '--message', text, '--json'])
  expect(JSON.parse(r.stdout).status, `${sessionKey} "${text.slice(0, 20)}": ${r.stderr}`).toBe('ok')
}

describe.skipIf(skipReason !== null)(`/new and /reset in OpenClaw's gateway${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('after /reset nothing of the old conversation reaches the model; after /new only summaries of depth ≥ 2; a restart changes nothing', async () => {
    // The gateway itself does not compact here (threshold 1, a leaf chunk larger than the
    // session): the setup below builds the summary DAG from the raw messages in one known
    // sweep, so the depths /new acts on do not depend on when maintenance compacts.
    const pluginConfig = { freshTailCount: 2, leafChunkTokens: 100_000, contextThreshold: 1 }
    const { state, port } = await gatewayState('lcm-oc-lifecycle-', { modelPort: model.port, token: TOKEN, pluginConfig })
    let gateway = await startGateway(state, port)
    try {
      for (const key of [KEY_NEW, KEY_RESET]) {
        for (let i = 1; i <= 12; i++) await say(state, key, `${key} OLDFACT-${i}: ${'about the rollout plan '.repeat(60)}(end ${i})`)
      }
      // Setup only: condense KEY_NEW's history to depth ≥ 2 now, from this process,
      // beside the running gateway (the file is shared under WAL).
      // A chunk cap of a few summaries first; a larger one condenses what the first left
      // at depth 1 (the summaries' sizes, hence how many fit a chunk, follow the messages').
      let depths = []
      for (const leafChunkTokens of [400, 1_000, 2_500]) {
        const side = await LcmEngine.open({ dbPath: join(state, 'lcm.db'), freshTailCount: 2, leafChunkTokens, leafMinFanout: 2, condensedMinFanout: 2, condensedMinFanoutHard: 2, incrementalMaxDepth: -1, leafTargetTokens: 80, condensedTargetTokens: 80 })
        const conv = await side.getConversation({ sessionKey: KEY_NEW })
        await side.compact({ sessionId: conv.sessionId, sessionKey: KEY_NEW, tokenBudget: 400, mode: 'untilUnder', force: true })
        depths = (await side.getContextItems(conv.conversationId)).map((i) => i.depth ?? 'm')
        await side.close()
        if (depths.some((d) => d >= 2)) break
      }
      expect(depths.some((d) => d >= 2), `context before /new: ${depths}`).toBe(true)
      expect(depths.some((d) => d === 'm' || d < 2), `context before /new: ${depths}`).toBe(true)
      await say(state, KEY_NEW, `${KEY_NEW} OLDFACT-13: one more turn after the sweep`)
      const e0 = model.requests.length
      await say(state, KEY_RESET, '/reset')
      await say(state, KEY_NEW, '/new')
      // A gateway restart between the command and the next turn.
      appendFileSync(join(state, 'gateway.log'), gateway.log())
      expect(await gateway.stop()).toMatchObject({ code: 0, forced: false })
      gateway = await startGateway(state, port)
      const e1 = model.requests.length
      await say(state, KEY_RESET, 'FRESH after reset')
      await say(state, KEY_NEW, 'FRESH after new')
      const afterReset = turnsOf(KEY_RESET, e1).at(-1)
      const afterNew = turnsOf(KEY_NEW, e1).at(-1)
      expect(afterReset, 'a model request after /reset').toBeTruthy()
      expect(afterNew, 'a model request after /new').toBeTruthy()
      const resetText = JSON.stringify(afterReset.body.messages)
      expect(resetText).not.toMatch(/OLDFACT-/)
      expect(summariesIn(afterReset)).toEqual([])
      // No message of the old session outside the kept summaries (whose text may
      // quote it: the offline summarizer is extractive).
      const newText = JSON.stringify(afterNew.body.messages).replace(/<summary id=[\s\S]*?<\/summary>/g, '')
      expect(newText).not.toMatch(/OLDFACT-/)
      const kept = summariesIn(afterNew)
      expect(kept.length, 'summaries of depth ≥ 2 reach the model after /new').toBeGreaterThan(0)
      expect(kept.every((s) => s.depth >= 2), JSON.stringify(kept)).toBe(true)
      // Before /new the model saw the session's latest messages.
      const beforeNew = turnsOf(KEY_NEW).filter((r) => model.requests.indexOf(r) < e0).at(-1)
      expect(JSON.stringify(beforeNew.body.messages)).toMatch(/OLDFACT-13/)
      expect(e1).toBeGreaterThanOrEqual(e0)
    } finally {
      appendFileSync(join(state, 'gateway.log'), gateway.log())
      await gateway.stop()
    }
    const e = await LcmEngine.open({ dbPath: join(state, 'lcm.db') })
    try {
      const resetFamily = await e.sessionFamily(KEY_RESET)
      expect(resetFamily.filter((c) => !c.active).map((c) => c.archiveCause)).toContain('manual-reset')
      const newFamily = await e.sessionFamily(KEY_NEW)
      expect(newFamily.filter((c) => c.active).length).toBe(1)
      const report = await e.doctor({ all: true })
      expect(report.violations).toEqual([])
    } finally {
      await e.close()
    }
  }, 900_000)
})
