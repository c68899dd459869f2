import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { copyFileSync, writeFileSync } from 'node:fs'
import { LcmEngine, tempDir, rejectsWithCode } from './helpers.mjs'
import { buildDb, checksum, emptyPromptDir, marker } from './rewrite-fixture.mjs'

/** Opens the fixture with a recording callback summarizer. */
async function open(fx, { fail, delay } = {}) {
  const seen = []
  const engine = await LcmEngine.open({
    dbPath: fx.dbPath,
    promptDir: emptyPromptDir(),
    summarizer: async (req) => {
      seen.push(req)
      if (fail && fail(req)) throw new Error('provider said 401')
      if (delay) await new Promise((r) => setTimeout(r, delay(req)))
      return { content: marker(req), model: 'echo-model' }
    },
  })
  return { engine, seen }
}

/**
 * Every column of every summary except content/token_count and the derived
 * descendantTokenCount (checked against its recomputation instead), plus links and context.
 */
async function structure(engine, conversationId) {
  const sums = (await engine.getSummaries(conversationId)).map(({ content, tokenCount, descendantTokenCount, ...rest }) => rest)
  // A context item's tokenCount is its summary's token count, read through.
  const items = (await engine.getContextItems(conversationId)).map(({ tokenCount, ...rest }) => rest)
  return { sums, items }
}

describe('planRewrite', () => {
  it('orders bottom-up and chronologically for all, a depth, one summary and a subtree', async () => {
    const fx = await buildDb()
    const { engine } = await open(fx)
    const ids = (p) => p.map((s) => s.summaryId)
    const conversationId = fx.conversationId
    const all = await engine.planRewrite({ conversationId, all: true })
    expect(ids(all)).toEqual(fx.all)
    expect(all.map((s) => s.depth)).toEqual([0, 0, 0, 0, 0, 0, 1, 1, 1, 2])
    expect(all[0]).toMatchObject({ kind: 'leaf', childCount: 6 })
    expect(all[9]).toMatchObject({ kind: 'condensed', childCount: 3 })
    for (let i = 1; i < 6; i++) expect(all[i].earliestAt >= all[i - 1].earliestAt).toBe(true)
    expect(ids(await engine.planRewrite({ conversationId, depth: 1 }))).toEqual(fx.d1)
    expect(ids(await engine.planRewrite({ conversationId, summaryId: fx.leaves[3] }))).toEqual([fx.leaves[3]])
    expect(ids(await engine.planRewrite({ conversationId, summaryId: fx.d2, subtree: false }))).toEqual([fx.d2])
    expect(ids(await engine.planRewrite({ conversationId, summaryId: fx.d1[1] }))).toEqual([fx.leaves[2], fx.leaves[3], fx.d1[1]])
    expect(ids(await engine.planRewrite({ conversationId, summaryId: fx.d2 }))).toEqual(fx.all)

    const e1 = await rejectsWithCode(engine.planRewrite({ conversationId, summaryId: 'sum_ffffffffffffffff' }), 'LCM_NOT_FOUND')
    expect(e1.message).toContain('10 summaries (d0 ×6, d1 ×3, d2 ×1)')
    expect(e1.message).toContain(fx.d2)
    const e2 = await rejectsWithCode(engine.planRewrite({ conversationId, depth: 4 }), 'LCM_NOT_FOUND')
    expect(e2.message).toContain('no summaries at depth 4')
    const e3 = await rejectsWithCode(engine.planRewrite({ conversationId: 777, all: true }), 'LCM_NOT_FOUND')
    expect(e3.message).toContain(`conversation 777 does not exist; the database has 1 conversation: ${conversationId}`)
    await rejectsWithCode(engine.planRewrite({ conversationId }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(engine.planRewrite({ conversationId, all: true, depth: 0 }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(engine.planRewrite({ conversationId, all: true, bogus: 1 }), 'LCM_INVALID_INPUT')
    await engine.close()
    await rejectsWithCode(engine.planRewrite({ conversationId, all: true }), 'LCM_CLOSED')
  })
})

describe('rewrite', () => {
  it('a dry run leaves the database file byte-identical', async () => {
    const fx = await buildDb()
    const before = checksum(fx.dbPath)
    const { engine, seen } = await open(fx)
    const report = await engine.rewrite({ conversationId: fx.conversationId, all: true })
    expect(report.dryRun).toBe(true)
    expect(report.entries).toHaveLength(10)
    expect(report.entries.every((e) => !e.applied && e.newContent.startsWith(`MARK-d${e.depth}-`))).toBe(true)
    expect(seen).toHaveLength(10)
    expect(checksum(fx.dbPath)).toBe(before)
    await engine.close()
    expect(checksum(fx.dbPath)).toBe(before)
  })

  it('apply changes only content and token_count (and keeps links and context items)', async () => {
    const fx = await buildDb()
    const { engine } = await open(fx)
    const conversationId = fx.conversationId
    const before = await structure(engine, conversationId)
    const dry = await engine.rewrite({ conversationId, all: true })
    const report = await engine.rewrite({ conversationId, all: true, apply: true })
    expect(report.dryRun).toBe(false)
    expect(report.entries.map((e) => e.summaryId)).toEqual(fx.all)
    expect(report.entries.every((e) => e.applied)).toBe(true)
    // The dry run previewed exactly what apply wrote, cascade included.
    expect(report.entries.map((e) => e.newContent)).toEqual(dry.entries.map((e) => e.newContent))
    expect(await structure(engine, conversationId)).toEqual(before)
    const after = await engine.getSummaries(conversationId)
    for (const e of report.entries) {
      const row = after.find((s) => s.summaryId === e.summaryId)
      expect(row.content).toBe(e.newContent)
      expect(row.tokenCount).toBe(e.newTokens)
      expect(e.delta).toBe(e.newTokens - e.oldTokens)
      expect(e.diff).toContain(`--- old/${e.summaryId}\n+++ new/${e.summaryId}\n`)
      expect(e).toMatchObject({ level: 'normal', model: 'echo-model', skipped: null })
    }
    // Summaries built on rewritten ones keep descendantTokenCount equal to its recomputation.
    const byId = Object.fromEntries(after.map((s) => [s.summaryId, s]))
    for (const s of after.filter((x) => x.parentIds.length > 0)) {
      const sum = s.parentIds.reduce((a, id) => a + byId[id].tokenCount + byId[id].descendantTokenCount, 0)
      expect(s.descendantTokenCount).toBe(sum)
    }
    expect(report.oldTokens).toBe(report.entries.reduce((a, e) => a + e.oldTokens, 0))
    expect(report.delta).toBe(report.newTokens - report.oldTokens)
    await engine.close()
  })

  it("feeds a rewritten leaf's new text into its parent's source and the next leaf's previous context", async () => {
    const fx = await buildDb()
    const { engine, seen } = await open(fx)
    const report = await engine.rewrite({ conversationId: fx.conversationId, summaryId: fx.d1[0], apply: true })
    expect(report.entries.map((e) => e.summaryId)).toEqual([fx.leaves[0], fx.leaves[1], fx.d1[0]])
    const [leaf0, leaf1, parent] = seen
    expect(leaf0.depth).toBe(0)
    expect(leaf0.sourceText).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d UTC\] \[(user|assistant|tool|system)\]\n/)
    expect(leaf0.prompt).not.toContain('<previous_context>')
    expect(leaf1.prompt).toContain(`<previous_context>\n${report.entries[0].newContent}\n</previous_context>`)
    expect(parent.depth).toBe(1)
    for (const leaf of report.entries.slice(0, 2)) expect(parent.sourceText).toContain(`]\n${leaf.newContent}`)
    expect(parent.sourceText).not.toContain('Old leaf')
    expect(parent.sourceText).toMatch(/^\[2026-\d\d-\d\d \d\d:\d\d(–\d\d:\d\d UTC| – )/)
    await engine.close()
  })

  it('timestamps: false drops the time headers but keeps roles', async () => {
    const fx = await buildDb()
    const { engine, seen } = await open(fx)
    await engine.rewrite({ conversationId: fx.conversationId, summaryId: fx.d1[2], timestamps: false })
    expect(seen[0].sourceText).toMatch(/^\[(user|assistant|tool|system)\]\n/)
    expect(seen[0].sourceText).not.toMatch(/\d\d:\d\d UTC\]/)
    expect(seen[2].sourceText).toMatch(/^MARK-d0-/)
    await engine.close()
  })

  it('gives the same result with concurrency 1 and 8', async () => {
    const fx = await buildDb()
    const copies = [1, 8].map((c) => {
      const dbPath = join(tempDir('lcm-rw-copy-'), 'lcm.db')
      copyFileSync(fx.dbPath, dbPath)
      return { ...fx, dbPath, concurrency: c }
    })
    const results = []
    for (const c of copies) {
      // Later requests finish sooner, so completion order differs from plan order.
      let n = 0
      const { engine } = await open(c, { delay: () => Math.max(0, 40 - 5 * n++) })
      const r = await engine.rewrite({ conversationId: c.conversationId, all: true, apply: true, concurrency: c.concurrency })
      results.push({ report: r.entries.map((e) => [e.summaryId, e.newContent, e.newTokens]), rows: (await engine.getSummaries(c.conversationId)).map((s) => [s.summaryId, s.content, s.tokenCount]) })
      await engine.close()
    }
    expect(results[0]).toEqual(results[1])
    const { engine } = await open(fx)
    await rejectsWithCode(engine.rewrite({ conversationId: fx.conversationId, all: true, concurrency: 0 }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(engine.rewrite({ conversationId: fx.conversationId, all: true, concurrency: 65 }), 'LCM_INVALID_INPUT')
    await engine.close()
  })

  it('a summarizer error stops the run; earlier rewrites stay and nothing partial is written', async () => {
    const fx = await buildDb()
    const { engine } = await open(fx, { fail: (req) => req.depth === 1 && req.sourceText.includes('MARK-d0') && fail1() })
    let calls = 0
    function fail1() {
      calls++
      return calls === 2
    }
    const events = []
    const err = await rejectsWithCode(
      engine.rewrite({ conversationId: fx.conversationId, all: true, apply: true, concurrency: 1, onProgress: (ev) => events.push(ev) }),
      'LCM_CALLBACK',
    )
    expect(err.message).toContain(`rewrite stopped at ${fx.d1[1]} (d1, 8 of 10)`)
    expect(err.message).toContain('the 7 rewrites applied before it stay')
    expect(events.map((e) => e.completed)).toEqual([1, 2, 3, 4, 5, 6, 7])
    expect(events.every((e) => e.total === 10 && e.entry.applied)).toBe(true)
    const rows = await engine.getSummaries(fx.conversationId)
    const content = (id) => rows.find((s) => s.summaryId === id).content
    for (const id of fx.leaves) expect(content(id)).toMatch(/^MARK-d0-/)
    expect(content(fx.d1[0])).toMatch(/^MARK-d1-/)
    expect(content(fx.d1[1])).toBe('Old d1 node 1.')
    expect(content(fx.d1[2])).toBe('Old d1 node 2.')
    expect(content(fx.d2)).toBe('Old d2 node.')
    await engine.close()
  })

  it('per-call provider, prompt directory and a throwing onProgress', async () => {
    const fx = await buildDb()
    const { engine, seen } = await open(fx)
    const dir = tempDir('lcm-rw-prompts-')
    writeFileSync(join(dir, 'condensed-d2.jinja'), 'CUSTOM D2 PROMPT for {{ child_count }} nodes, about {{ target_tokens }} tokens:\n{{ source_text }}\n')
    await engine.rewrite({ conversationId: fx.conversationId, depth: 2, promptDir: dir, onProgress: () => { throw new Error('ignored') } })
    expect(seen).toHaveLength(1)
    expect(seen[0].prompt).toMatch(/^CUSTOM D2 PROMPT for 3 nodes, about 2000 tokens:\n\[/)
    const offline = await engine.rewrite({ conversationId: fx.conversationId, depth: 0, provider: 'offline' })
    expect(seen).toHaveLength(1)
    expect(offline.entries).toHaveLength(6)
    expect(offline.entries.every((e) => e.newContent.length > 0 && !e.newContent.startsWith('MARK'))).toBe(true)
    await rejectsWithCode(engine.rewrite({ conversationId: fx.conversationId, depth: 0, provider: 'gemini' }), 'LCM_CONFIG')
    await rejectsWithCode(engine.rewrite({ conversationId: fx.conversationId, depth: 0, onProgress: 5 }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(engine.rewrite({ conversationId: fx.conversationId, depth: 0, dryRun: true }), 'LCM_INVALID_INPUT')
    await engine.close()
  })
})
