// Messages the host marks `excludeFromContext: true` (a context-free command, a
// nested tool's display record) are kept and searchable like any other, but never
// given to the model: not assembled, and not part of a summarizer's input (the
// leaf still covers them, so every invariant holds).
import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { LcmEngine, tempDir } from './helpers.mjs'
import { captureBaseline, checkInvariants } from './invariants.mjs'

const SMALL = { timezone: 'UTC', leafChunkTokens: 400, leafTargetTokens: 80, condensedTargetTokens: 80, leafMinFanout: 2, condensedMinFanout: 2, freshTailCount: 2, maxSweepIterations: 200 }
const words = (tag, n) => Array.from({ length: n }, (_, i) => `${tag}${i % 7}`).join(' ')

/** A turn with one hidden command, one hidden display record and an excluded tool result. */
function turn(i) {
  return [
    { role: 'user', content: `question ${i}: ${words('alpha', 40)}` },
    { role: 'user', content: `/status SECRETCMD${i}`, excludeFromContext: true },
    { role: 'assistant', content: [{ type: 'text', text: `looking ${i}` }, { type: 'toolCall', id: `c${i}`, name: 'exec', arguments: { cmd: 'ls' } }] },
    { role: 'toolResult', toolCallId: `c${i}`, toolName: 'exec', content: [{ type: 'text', text: `HIDDENRESULT${i} ${words('beta', 30)}` }], excludeFromContext: true },
    { role: 'custom', customType: 'openclaw.nested-tool.v1', display: true, excludeFromContext: true, content: `NESTEDRECORD${i} ${words('gamma', 30)}` },
    { role: 'assistant', content: [{ type: 'text', text: `answer ${i}: ${words('delta', 40)}` }] },
  ]
}

describe('messages excluded from context', () => {
  it('are stored byte-exact and found by grep, but not assembled; their tool call is stripped', async () => {
    const e = await LcmEngine.open({ dbPath: join(tempDir(), 'lcm.db'), ...SMALL })
    const sent = turn(1)
    const { conversationId } = await e.ingestBatch({ sessionId: 's', messages: sent })
    expect(await e.getMessages(conversationId)).toEqual(sent)
    const a = await e.assemble({ sessionId: 's', tokenBudget: 50_000 })
    expect(a.stats.repair.droppedExcludedMessages).toBe(3)
    const text = JSON.stringify(a.messages)
    for (const hidden of ['SECRETCMD1', 'HIDDENRESULT1', 'NESTEDRECORD1']) expect(text).not.toContain(hidden)
    // The call whose result the host excluded is unpaired now: stripped, its text kept.
    expect(a.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'assistant'])
    expect(a.messages[1].content).toEqual([{ type: 'text', text: 'looking 1' }])
    const g = await e.grep({ pattern: 'HIDDENRESULT1', conversationId })
    expect(g.totalMatches).toBe(1)
    await e.close()
  })

  it('are covered by leaves but never in a summarizer input, even a leaf of only excluded messages', async () => {
    const requests = []
    const summarizer = async (req) => {
      requests.push(req)
      return `summary ${requests.length}: ${String(req.sourceText).split(/\s+/).slice(0, 40).join(' ')}`
    }
    const e = await LcmEngine.open({ dbPath: join(tempDir(), 'lcm.db'), ...SMALL, summarizer })
    let conversationId
    for (let i = 0; i < 12; i++) conversationId = (await e.ingestBatch({ sessionId: 's', messages: turn(i) })).conversationId
    // A run of excluded messages long enough to fill a leaf chunk on its own.
    const run = Array.from({ length: 12 }, (_, i) => ({ role: 'custom', customType: 'x', excludeFromContext: true, content: `ONLYHIDDEN${i} ${words('eps', 60)}` }))
    await e.ingestBatch({ sessionId: 's', messages: run })
    await e.ingestBatch({ sessionId: 's', messages: turn(99) })
    const baseline = await captureBaseline(e, conversationId)
    const r = await e.compact({ sessionId: 's', tokenBudget: 1000, mode: 'sweep', force: true })
    expect(r.ok).toBe(true)
    expect(r.passes.length).toBeGreaterThan(2)
    await checkInvariants(e, conversationId, baseline)
    const inputs = JSON.stringify(requests.map((q) => q.sourceText))
    expect(inputs).toContain('alpha')
    for (const hidden of ['SECRETCMD', 'HIDDENRESULT', 'NESTEDRECORD', 'ONLYHIDDEN']) expect(inputs).not.toContain(hidden)
    // A leaf of only excluded messages is recorded without the summarizer, and says what it covers.
    const leaves = (await e.getSummaries(conversationId)).filter((s) => s.kind === 'leaf')
    const hiddenOnly = leaves.filter((s) => / kept out of the model's context\]$/.test(s.content))
    expect(hiddenOnly.length).toBeGreaterThan(0)
    for (const leaf of hiddenOnly) {
      const n = leaf.messageIds.length
      expect(leaf.content).toBe(`[${n} source ${n === 1 ? 'item' : 'items'} kept out of the model's context]`)
      expect(leaf.model).toBe('deterministic')
    }
    expect(await e.integrityCheck()).toEqual(['ok'])
    await e.close()
  })
})
