import { describe, it, expect } from 'vitest'
import { LcmEngine, rejectsWithCode, workload } from './helpers.mjs'
import { query } from './sqlfile.mjs'
import { build, sha } from './operator-fixture.mjs'

const open = (path) => LcmEngine.open({ dbPath: path })

/** Context list as ids: summary ids, or `m<id>` for messages. */
async function context(e, conv) {
  return (await e.getContextItems(conv)).map((i) => i.summaryId ?? `m${i.messageId}`)
}

async function clean(e, conv) {
  const r = await e.doctor(conv == null ? { all: true } : { conversationId: conv })
  expect(r.violations).toEqual([])
  expect(r.ok).toBe(true)
}

describe('dissolve', () => {
  it('plans without writing, then puts a condensed summary\'s children in its place', async () => {
    const f = await build()
    const before = sha(f.path)
    let e = await open(f.path)
    const plan = await e.dissolve({ conversationId: f.conv, summaryId: f.top })
    await e.close()
    expect(sha(f.path)).toBe(before)
    expect(plan).toMatchObject({ applied: false, keep: false, shift: 1, contextItemsBefore: 15, contextItemsAfter: 16 })
    expect(plan.target).toMatchObject({ summaryId: f.top, kind: 'condensed', depth: 2, ordinal: 0 })
    expect(plan.restored.map((r) => r.summaryId)).toEqual(f.d1.slice(0, 2))
    expect(plan.itemsShifted).toBe(14)
    expect(plan.tokenDelta).toBe(plan.restored.reduce((n, r) => n + r.tokenCount, 0) - plan.target.tokenCount)
    expect(plan.contextTokensAfter - plan.contextTokensBefore).toBe(plan.tokenDelta)

    e = await open(f.path)
    const before2 = await context(e, f.conv)
    const done = await e.dissolve({ conversationId: f.conv, summaryId: f.top, apply: true })
    expect(done.applied).toBe(true)
    const after = await context(e, f.conv)
    expect(after).toEqual([f.d1[0], f.d1[1], ...before2.slice(1)])
    expect((await e.getContextItems(f.conv)).map((i) => i.ordinal)).toEqual(after.map((_, i) => i))
    await clean(e, f.conv)
    await e.close()
    for (const t of ['summaries', 'summary_parents']) {
      expect(query(f.path, `SELECT COUNT(*) AS n FROM ${t} WHERE summary_id = ?`, [f.top])[0].n).toBe(0)
    }
  })

  it('puts a leaf\'s messages back, and removes its links and FTS rows', async () => {
    const f = await build()
    const e = await open(f.path)
    await e.dissolve({ conversationId: f.conv, summaryId: f.d1[3], apply: true })
    const done = await e.dissolve({ conversationId: f.conv, summaryId: f.leaves[7], apply: true })
    expect(done.restored.map((r) => r.messageId)).toEqual(f.ids.slice(42, 48))
    expect(done.restored[0]).toMatchObject({ itemType: 'message', seq: expect.any(Number) })
    const ctx = await context(e, f.conv)
    expect(ctx.slice(0, 9)).toEqual([f.top, f.d1[2], f.leaves[6], ...f.ids.slice(42, 48).map((m) => `m${m}`)])
    await clean(e, f.conv)
    await e.close()
    expect(query(f.path, 'SELECT COUNT(*) AS n FROM summary_messages WHERE summary_id = ?', [f.leaves[7]])[0].n).toBe(0)
  })

  it('keep leaves the row unreferenced; its sources are then protected from deletion', async () => {
    const f = await build()
    const e = await open(f.path)
    await e.dissolve({ conversationId: f.conv, summaryId: f.d1[2], apply: true, keep: true })
    await clean(e, f.conv)
    const err = await rejectsWithCode(e.dissolve({ conversationId: f.conv, summaryId: f.leaves[4], apply: true }), 'LCM_INVALID_INPUT')
    expect(err.message).toContain(f.d1[2])
    await e.dissolve({ conversationId: f.conv, summaryId: f.leaves[4], apply: true, keep: true })
    await clean(e, f.conv)
    await e.close()
    expect(query(f.path, 'SELECT COUNT(*) AS n FROM summaries WHERE summary_id IN (?, ?)', [f.d1[2], f.leaves[4]])[0].n).toBe(2)
    expect(query(f.path, 'SELECT COUNT(*) AS n FROM context_items WHERE summary_id = ?', [f.d1[2]])[0].n).toBe(0)
  })

  it('errors name the holder of a summary that is not a context item, and list what exists', async () => {
    const f = await build()
    const e = await open(f.path)
    let err = await rejectsWithCode(e.dissolve({ conversationId: f.conv, summaryId: f.leaves[0] }), 'LCM_INVALID_INPUT')
    expect(err.message).toContain(`${f.d1[0]} (d1) holds it, which ${f.top} (d2) holds (context item 0); dissolve ${f.top} first`)
    err = await rejectsWithCode(e.dissolve({ conversationId: f.conv, summaryId: 'sum_0000000000000000' }), 'LCM_NOT_FOUND')
    expect(err.message).toContain(`${f.top} (d2), ${f.d1[2]} (d1), ${f.d1[3]} (d1)`)
    err = await rejectsWithCode(e.dissolve({ conversationId: 999, summaryId: f.top }), 'LCM_NOT_FOUND')
    expect(err.message).toContain(`conversations: ${f.conv}`)
    await rejectsWithCode(e.dissolve({ conversationId: f.conv }), 'LCM_INVALID_INPUT')
    await e.close()
  })
})

/** Adds a second conversation with its own messages and one leaf; returns ids. */
async function target(path) {
  const e = await open(path)
  const { messages } = workload(10, 23)
  const r = await e.ingestBatch({ sessionId: 'target', messages })
  const ids = r.results.map((x) => x.messageId).filter((x) => x != null)
  const leaf = await e.insertSummary({ conversationId: r.conversationId, content: 'Target leaf: its own history.', messageIds: ids.slice(0, 4) })
  await e.close()
  return { conv: r.conversationId, leaf, ids }
}

describe('transplant', () => {
  it('plans without writing, copies the DAG with messages and parts, prepends it, and keeps every invariant', async () => {
    const f = await build()
    const t = await target(f.path)
    const before = sha(f.path)
    let e = await open(f.path)
    const plan = await e.transplant({ sourceConversationId: f.conv, targetConversationId: t.conv })
    await e.close()
    expect(sha(f.path)).toBe(before)
    expect(plan.contextSummaries.map((s) => s.summaryId)).toEqual([f.top, f.d1[2], f.d1[3]])
    expect(plan).toMatchObject({ applied: false, summaryCount: 13, messageCount: 48, targetSummaryItems: 1, targetMessageItems: 6 })
    expect(plan.summariesByDepth).toEqual([{ depth: 0, count: 8 }, { depth: 1, count: 4 }, { depth: 2, count: 1 }])
    expect(plan.tokenOverhead).toBe(plan.contextSummaries.reduce((n, s) => n + s.tokenCount, 0))

    e = await open(f.path)
    const own = await context(e, t.conv)
    const done = await e.transplant({ sourceConversationId: f.conv, targetConversationId: t.conv, apply: true })
    expect(done.applied).toBe(true)
    expect(done.mapping.map((m) => m.from)).toEqual([f.top, f.d1[2], f.d1[3]])
    expect(done.messagesIndexed).toBe(48)
    expect(done.seqRange).toEqual([11, 58])
    const ctx = await context(e, t.conv)
    expect(ctx).toEqual([...done.mapping.map((m) => m.to), ...own])
    await clean(e, null)
    // Copies rebuild exactly as the source's messages were ingested.
    const src = await e.getMessages(f.conv)
    const dst = await e.getMessages(t.conv)
    expect(dst.slice(10)).toEqual(src.slice(0, 48))
    // The copied DAG is owned by the target and linked to the copies.
    const sums = await e.getSummaries(t.conv)
    expect(sums).toHaveLength(14)
    const topCopy = sums.find((s) => s.summaryId === done.mapping[0].to)
    expect(topCopy).toMatchObject({ depth: 2, descendantCount: 6, content: expect.stringContaining('D2 (doctor)') })
    expect(topCopy.parentIds.every((p) => sums.some((s) => s.summaryId === p))).toBe(true)
    // A second transplant would duplicate the copies: refused, with the list.
    const err = await rejectsWithCode(e.transplant({ sourceConversationId: f.conv, targetConversationId: t.conv, apply: true }), 'LCM_INVALID_INPUT')
    expect(err.message).toContain(`${f.top} = ${done.mapping[0].to}`)
    await e.close()
    const parts = query(f.path, 'SELECT COUNT(*) AS n FROM message_parts p JOIN messages m ON m.message_id = p.message_id WHERE m.conversation_id = ? AND p.session_id = ?', [t.conv, 'target'])
    // The copies (seq 11..58 of the target) carry exactly the source messages' parts.
    const copiedParts = query(f.path, 'SELECT COUNT(*) AS n FROM message_parts p JOIN messages m ON m.message_id = p.message_id WHERE m.conversation_id = ? AND m.seq BETWEEN 11 AND 58', [t.conv])
    const srcParts = query(f.path, 'SELECT COUNT(*) AS n FROM message_parts p WHERE p.message_id IN (SELECT message_id FROM messages WHERE conversation_id = ? ORDER BY seq LIMIT 48)', [f.conv])
    expect(copiedParts[0].n).toBeGreaterThan(0)
    expect(copiedParts[0].n).toBe(srcParts[0].n)
    expect(parts[0].n).toBeGreaterThanOrEqual(copiedParts[0].n)
    expect(query(f.path, 'SELECT COUNT(*) AS n FROM messages WHERE conversation_id = ? AND transcript_entry_id IS NOT NULL', [t.conv])[0].n).toBe(0)
  })

  it('refuses bad pairs and empty sources, listing the conversations', async () => {
    const f = await build()
    const t = await target(f.path)
    const e = await open(f.path)
    await rejectsWithCode(e.transplant({ sourceConversationId: f.conv, targetConversationId: f.conv }), 'LCM_INVALID_INPUT')
    const err = await rejectsWithCode(e.transplant({ sourceConversationId: f.conv, targetConversationId: 77 }), 'LCM_NOT_FOUND')
    expect(err.message).toContain(`conversations: ${f.conv}, ${t.conv}`)
    await e.dissolve({ conversationId: t.conv, summaryId: t.leaf, apply: true })
    const none = await rejectsWithCode(e.transplant({ sourceConversationId: t.conv, targetConversationId: f.conv }), 'LCM_INVALID_INPUT')
    expect(none.message).toContain('no summaries in its context list')
    await e.close()
  })
})
