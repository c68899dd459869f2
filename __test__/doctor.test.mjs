import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { LcmEngine, rejectsWithCode, tempDir, turns, workload } from './helpers.mjs'
import { query } from './sqlfile.mjs'
import { build, damaged, sha } from './operator-fixture.mjs'

const open = (path, extra = {}) => LcmEngine.open({ dbPath: path, ...extra })

/** Runs doctor on a closed file with a fresh engine; returns the report. */
async function doctor(path, params, extra = {}) {
  const e = await open(path, extra)
  try {
    return await e.doctor(params)
  } finally {
    await e.close()
  }
}

const byKind = (r, kind) => r.violations.filter((v) => v.kind === kind)

describe('doctor: integrity', () => {
  it('finds nothing wrong in a healthy database, per conversation and for all', async () => {
    const f = await build()
    const one = await doctor(f.path, { conversationId: f.conv })
    expect(one).toMatchObject({ ok: true, applied: false, conversationIds: [f.conv], violations: [], brokenSummaries: [], remaining: null })
    const all = await doctor(f.path, { all: true })
    expect(all.ok).toBe(true)
    // A summary that quotes a marker mid-text is healthy.
    expect(all.brokenSummaries).toEqual([])
  })

  it('leaves the file byte-identical on a dry run, even with damage to report', async () => {
    const f = await build()
    const before = sha(f.path)
    expect((await doctor(f.path, { all: true })).ok).toBe(true)
    expect(sha(f.path)).toBe(before)
    await damaged(f.path, `UPDATE summaries SET descendant_count = 99 WHERE summary_id = '${f.d1[2]}';
      UPDATE summaries SET content = 'cut short\n[Truncated from 2400 tokens]' WHERE summary_id = '${f.leaves[6]}';
      DELETE FROM summary_messages WHERE message_id = ${f.ids[3]}`)
    const damagedSum = sha(f.path)
    const calls = []
    const r = await doctor(f.path, { conversationId: f.conv }, { summarizer: (req) => (calls.push(req), 'never used') })
    expect(r.ok).toBe(false)
    expect(calls).toEqual([])
    expect(sha(f.path)).toBe(damagedSum)
  })

  it('names a deleted link and links it back (the leaf\'s stored counts prove it)', async () => {
    const f = await build()
    await damaged(f.path, `DELETE FROM summary_messages WHERE message_id = ${f.ids[3]}`)
    const r = await doctor(f.path, { conversationId: f.conv })
    expect(r.violations).toHaveLength(1)
    expect(r.violations[0]).toMatchObject({ kind: 'uncoveredMessages', messageIds: [f.ids[3]], repairable: true, details: { restoreTo: f.leaves[0] } })
    const fixed = await doctor(f.path, { conversationId: f.conv, apply: true })
    expect(fixed.ok).toBe(true)
    expect(fixed.repairs.map((x) => x.kind)).toEqual(['relinked'])
    expect(query(f.path, 'SELECT summary_id, ordinal FROM summary_messages WHERE message_id = ?', [f.ids[3]])).toEqual([{ summary_id: f.leaves[0], ordinal: 3 }])
    expect((await doctor(f.path, { conversationId: f.conv })).ok).toBe(true)
  })

  it('puts a summary whose context item was lost back into the list in message order', async () => {
    const f = await build()
    await damaged(f.path, `DELETE FROM context_items WHERE summary_id = '${f.d1[2]}'`)
    const r = await doctor(f.path, { conversationId: f.conv })
    const lost = byKind(r, 'uncoveredMessages')
    expect(lost).toHaveLength(1)
    expect(lost[0].summaryIds).toEqual([f.d1[2]])
    expect(lost[0].messageIds).toEqual(f.ids.slice(24, 36))
    expect(byKind(r, 'ordinalGap')).toHaveLength(1)
    expect((await doctor(f.path, { conversationId: f.conv, apply: true })).ok).toBe(true)
    const items = query(f.path, 'SELECT ordinal, summary_id FROM context_items WHERE conversation_id = ? ORDER BY ordinal LIMIT 3', [f.conv])
    expect(items).toEqual([
      { ordinal: 0, summary_id: f.top },
      { ordinal: 1, summary_id: f.d1[2] },
      { ordinal: 2, summary_id: f.d1[3] },
    ])
  })

  it('names a wrong descendant count (only that summary) and recomputes it', async () => {
    const f = await build()
    await damaged(f.path, `UPDATE summaries SET descendant_count = 99 WHERE summary_id = '${f.d1[2]}'`)
    const r = await doctor(f.path, { conversationId: f.conv })
    expect(r.violations).toHaveLength(1)
    expect(r.violations[0]).toMatchObject({
      kind: 'metadata',
      summaryIds: [f.d1[2]],
      details: { fields: [{ column: 'descendant_count', stored: 99, expected: 2 }] },
    })
    const fixed = await doctor(f.path, { conversationId: f.conv, apply: true })
    expect(fixed.ok).toBe(true)
    expect(query(f.path, 'SELECT descendant_count FROM summaries WHERE summary_id = ?', [f.d1[2]])).toEqual([{ descendant_count: 2 }])
  })

  it('names a stale full-text row and rewrites it', async () => {
    const f = await build()
    await damaged(f.path, `UPDATE summaries SET content = 'Rewritten by hand: zeppelin logistics.' WHERE summary_id = '${f.leaves[7]}'`)
    const r = await doctor(f.path, { conversationId: f.conv })
    const stale = byKind(r, 'ftsOutdated')
    expect(stale.map((v) => v.details.table).sort()).toEqual(['summaries_fts', 'summaries_fts_cjk'])
    for (const v of stale) expect(v.summaryIds).toEqual([f.leaves[7]])
    // The hand edit also left the token counts of the leaf and the node above it stale.
    expect(byKind(r, 'metadata').map((v) => v.summaryIds[0]).sort()).toEqual([f.leaves[7], f.d1[3]].sort())
    const fixed = await doctor(f.path, { conversationId: f.conv, apply: true })
    expect(fixed.ok).toBe(true)
    expect(fixed.repairs.some((x) => x.kind === 'ftsRows' && x.summaryIds.includes(f.leaves[7]))).toBe(true)
  })

  it('names an ordinal gap and renumbers the list', async () => {
    const f = await build()
    await damaged(f.path, `UPDATE context_items SET ordinal = ordinal + 100 WHERE conversation_id = ${f.conv} AND ordinal >= 3`)
    const r = await doctor(f.path, { conversationId: f.conv })
    expect(r.violations.map((v) => v.kind)).toEqual(['ordinalGap'])
    expect(r.violations[0].details.ordinals.slice(0, 4)).toEqual([0, 1, 2, 103])
    expect((await doctor(f.path, { conversationId: f.conv, apply: true })).ok).toBe(true)
    const ords = query(f.path, 'SELECT ordinal FROM context_items WHERE conversation_id = ? ORDER BY ordinal', [f.conv]).map((x) => x.ordinal)
    expect(ords).toEqual(ords.map((_, i) => i))
  })

  it('reports what it cannot repair without loss, and exits not ok', async () => {
    const f = await build()
    await damaged(f.path, `INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES ('${f.leaves[0]}', '${f.top}', 9)`)
    const r = await doctor(f.path, { conversationId: f.conv, apply: true })
    expect(r.ok).toBe(false)
    const cycle = byKind(r.remaining, 'cycle')
    expect(cycle).toHaveLength(1)
    expect(cycle[0].repairable).toBe(false)
    expect(cycle[0].summaryIds).toEqual(expect.arrayContaining([f.leaves[0], f.top]))
  })

  it('repairs several kinds of damage at once, across conversations', async () => {
    const f = await build()
    const g = await build({ session: 'second', seed: 11, dir: f.dir })
    expect(g.conv).not.toBe(f.conv)
    await damaged(f.path, `DELETE FROM summary_messages WHERE message_id = ${f.ids[3]};
      UPDATE summaries SET latest_at = '2001-01-01T00:00:00.000Z' WHERE summary_id = '${g.top}';
      UPDATE context_items SET ordinal = ordinal + 100 WHERE conversation_id = ${g.conv} AND ordinal >= 5`)
    const r = await doctor(f.path, { all: true })
    expect(new Set(r.violations.map((v) => v.conversationId))).toEqual(new Set([f.conv, g.conv]))
    const fixed = await doctor(f.path, { all: true, apply: true })
    expect(fixed.ok).toBe(true)
    expect(fixed.remaining).toEqual({ violations: [], brokenSummaries: [] })
  })
})

describe('doctor: broken summaries', () => {
  const cut = (id, marker = '[Truncated from 2400 tokens]') => `UPDATE summaries SET content = 'cut short\n${marker}' WHERE summary_id = '${id}'`

  it('lists marker-ended summaries bottom-up and summarizes them again with the current summarizer', async () => {
    const f = await build()
    await damaged(f.path, [cut(f.top, '[LCM fallback summary; truncated for context management]'), cut(f.leaves[6]), cut(f.leaves[1], '[Capped from 9000 tokens to ~6000]')].join(';'))
    const dry = await doctor(f.path, { conversationId: f.conv })
    expect(dry.brokenSummaries.map((b) => [b.order, b.summaryId, b.marker, b.depth])).toEqual([
      [1, f.leaves[1], 'capped', 0],
      [2, f.leaves[6], 'truncated', 0],
      [3, f.top, 'referenceFallback', 2],
    ])
    expect(dry.brokenSummaries[2]).toMatchObject({ contextOrdinal: 0, reachable: true, markerText: '[LCM fallback summary; truncated for context management]' })
    const calls = []
    const summarizer = (req) => {
      calls.push(req)
      return { content: `Repaired d${req.depth} summary.`, model: 'test-model' }
    }
    const r = await doctor(f.path, { conversationId: f.conv, apply: true }, { summarizer })
    expect(r.ok).toBe(true)
    expect(r.resummarized.map((x) => [x.summaryId, x.status, x.model])).toEqual([
      [f.leaves[1], 'repaired', 'test-model'],
      [f.leaves[6], 'repaired', 'test-model'],
      [f.top, 'repaired', 'test-model'],
    ])
    expect(calls.map((c) => c.depth)).toEqual([0, 0, 2])
    // Leaves see their messages and up to two preceding summaries; the top sees its (fresh) children.
    expect(calls[1].prompt).toContain('Leaf 5')
    expect(calls[2].sourceText).toContain('D1 0')
    const rows = query(f.path, 'SELECT summary_id, content, model FROM summaries WHERE summary_id IN (?, ?)', [f.leaves[6], f.top])
    expect(rows.map((x) => x.content).sort()).toEqual(['Repaired d0 summary.', 'Repaired d2 summary.'])
  })

  it('a summarizer error stops the repairs and writes nothing for that summary', async () => {
    const f = await build()
    await damaged(f.path, [cut(f.leaves[1]), cut(f.leaves[6])].join(';'))
    let n = 0
    const summarizer = () => {
      if (++n === 2) throw new Error('provider exploded')
      return 'Repaired.'
    }
    const r = await doctor(f.path, { conversationId: f.conv, apply: true }, { summarizer })
    expect(r.ok).toBe(false)
    expect(r.error).toMatchObject({ summaryId: f.leaves[6], code: 'LCM_CALLBACK' })
    expect(r.error.message).toContain('provider exploded')
    expect(r.resummarized.map((x) => x.summaryId)).toEqual([f.leaves[1]])
    expect(r.remaining.brokenSummaries.map((b) => b.summaryId)).toEqual([f.leaves[6]])
    expect(query(f.path, 'SELECT content FROM summaries WHERE summary_id = ?', [f.leaves[6]])[0].content).toBe('cut short\n[Truncated from 2400 tokens]')
  })

  it('does not write an answer that would itself end with a marker', async () => {
    const f = await build()
    await damaged(f.path, cut(f.leaves[2]))
    const r = await doctor(f.path, { conversationId: f.conv, apply: true }, { summarizer: () => 'Still bad\n[Truncated from 5 tokens]' })
    expect(r.ok).toBe(false)
    expect(r.resummarized[0]).toMatchObject({ summaryId: f.leaves[2], status: 'stillBroken' })
    expect(query(f.path, 'SELECT content FROM summaries WHERE summary_id = ?', [f.leaves[2]])[0].content).toBe('cut short\n[Truncated from 2400 tokens]')
  })
})

describe('doctor: parameters', () => {
  it('rejects bad scopes and names the conversations that exist', async () => {
    const f = await build()
    const e = await open(f.path)
    await rejectsWithCode(e.doctor({}), 'LCM_INVALID_INPUT')
    await rejectsWithCode(e.doctor({ conversationId: f.conv, all: true }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(e.doctor({ all: true, repair: true }), 'LCM_INVALID_INPUT')
    const err = await rejectsWithCode(e.doctor({ conversationId: 4242 }), 'LCM_NOT_FOUND')
    expect(err.message).toContain(`conversations: ${f.conv}`)
    await e.close()
    await rejectsWithCode(e.doctor({ all: true }), 'LCM_CLOSED')
  })
})

describe('doctor: after compaction', () => {
  const SMALL = { timezone: 'UTC', leafChunkTokens: 3000, leafTargetTokens: 400, condensedTargetTokens: 400, leafMinFanout: 4, condensedMinFanout: 2, freshTailCount: 16 }
  const short = (req) => `Depth ${req.depth} summary: ${String(req.sourceText).split(/\s+/).slice(0, 60).join(' ')}`

  async function compacted(summarizer) {
    const { messages } = workload(300, 5)
    const path = join(tempDir(), 'lcm.db')
    const engine = await LcmEngine.open({ dbPath: path, ...SMALL, summarizer })
    let conv
    for (const turn of turns(messages)) conv = (await engine.ingestBatch({ sessionId: 's', messages: turn })).conversationId
    const r = await engine.compact({ sessionId: 's', tokenBudget: 4000, mode: 'sweep', force: true })
    expect(r.ok).toBe(true)
    return { engine, conv, path }
  }

  it('finds a compacted DAG clean, and still clean after dissolve and transplant', async () => {
    const { engine, conv } = await compacted(short)
    const sums = await engine.getSummaries(conv)
    expect(sums.some((s) => s.depth >= 1)).toBe(true)
    expect((await engine.doctor({ conversationId: conv })).violations).toEqual([])
    const top = (await engine.getContextItems(conv)).find((i) => i.itemType === 'summary' && i.depth >= 1)
    await engine.dissolve({ conversationId: conv, summaryId: top.summaryId, apply: true })
    const other = (await engine.ingestBatch({ sessionId: 'other', messages: workload(6, 8).messages })).conversationId
    await engine.transplant({ sourceConversationId: conv, targetConversationId: other, apply: true })
    const all = await engine.doctor({ all: true })
    expect(all.violations).toEqual([])
    expect(all.ok).toBe(true)
    await engine.close()
  })

  it('lists the deterministic fallbacks compaction wrote, and repairs them', async () => {
    // A summarizer that never shortens its input makes the pipeline fall back.
    const { engine, conv, path } = await compacted((req) => `${req.sourceText} ${req.sourceText}`)
    const r = await engine.doctor({ conversationId: conv })
    await engine.close()
    expect(r.violations).toEqual([])
    const fallbacks = query(path, "SELECT summary_id FROM summaries WHERE model = 'deterministic'").map((x) => x.summary_id)
    expect(fallbacks.length).toBeGreaterThan(0)
    expect(r.brokenSummaries.map((b) => b.summaryId).sort()).toEqual(fallbacks.sort())
    expect(r.brokenSummaries.every((b) => b.marker === 'truncated')).toBe(true)
    const depths = r.brokenSummaries.map((b) => b.depth)
    expect(depths).toEqual([...depths].sort((a, b) => a - b))
    const fixed = await doctor(path, { conversationId: conv, apply: true }, { ...SMALL, summarizer: short })
    expect(fixed.ok).toBe(true)
    expect(fixed.resummarized.every((x) => x.status === 'repaired')).toBe(true)
    expect(query(path, "SELECT COUNT(*) AS n FROM summaries WHERE content LIKE '%[Truncated from %'")[0].n).toBe(0)
  })
})
