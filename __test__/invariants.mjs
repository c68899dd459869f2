// Reusable DAG invariant checker, reading only through the engine's public API.
//
//   const base = await captureBaseline(engine, conversationId)   // before compaction
//   ...compact...
//   const report = await checkInvariants(engine, conversationId, base)
//
// Checks (throws an Error naming the first violation):
//  1. context ordinals are 0..n-1;
//  2. every message is covered exactly once, by a context item or a summary reachable
//     from one, and expanding the context list in order yields the messages in order;
//  3. every summary is reachable exactly once (no orphans, no shared children);
//  4. depth, earliestAt/latestAt, descendantCount, descendantTokenCount and
//     sourceMessageTokenCount equal their recomputation from the sources (leaf times and
//     tokens need the baseline: the messages' token counts and timestamps);
//  5. getStats agrees with the lists.
// Returns { deepest, summaries, depthCounts, contextItems, contextTokens }.

/** Message ids, token counts and times before compaction (the context is all raw then). */
export async function captureBaseline(engine, conversationId) {
  const items = await engine.getContextItems(conversationId)
  const messages = await engine.getMessages(conversationId)
  const raw = items.filter((i) => i.itemType === 'message')
  if (raw.length !== items.length) throw new Error('captureBaseline needs an uncompacted conversation')
  if (raw.length !== messages.length) throw new Error('baseline: context and messages disagree')
  const byId = new Map()
  raw.forEach((it, i) => byId.set(it.messageId, { tokens: it.tokenCount, time: storedTime(messages[i].timestamp) }))
  return { ids: raw.map((i) => i.messageId), byId }
}

/** The ISO time the store derives from a message timestamp (whole seconds, UTC). */
function storedTime(ts) {
  const ms = typeof ts === 'number' ? ts : typeof ts === 'string' ? Date.parse(ts) : NaN
  if (!Number.isFinite(ms)) return null
  return new Date(Math.floor(ms / 1000) * 1000).toISOString()
}

function fail(msg) {
  throw new Error(`invariant violated: ${msg}`)
}

const minOf = (xs) => xs.filter((x) => x != null).sort()[0] ?? null
const maxOf = (xs) => xs.filter((x) => x != null).sort().at(-1) ?? null
const sum = (xs) => xs.reduce((a, b) => a + b, 0)

export async function checkInvariants(engine, conversationId, baseline) {
  const items = await engine.getContextItems(conversationId)
  const summaries = await engine.getSummaries(conversationId)
  const stats = await engine.getStats(conversationId)
  const byId = new Map(summaries.map((s) => [s.summaryId, s]))

  items.forEach((it, i) => it.ordinal === i || fail(`ordinal ${it.ordinal} at position ${i}`))

  // Coverage, in order.
  const reached = new Set()
  const order = []
  const expand = (id) => {
    const s = byId.get(id) ?? fail(`context or parent link to unknown summary ${id}`)
    if (reached.has(id)) fail(`summary ${id} reached twice`)
    reached.add(id)
    if (s.kind === 'leaf') {
      if (s.parentIds.length) fail(`leaf ${id} has parent links`)
      order.push(...s.messageIds)
    } else {
      if (s.messageIds.length) fail(`condensed ${id} has message links`)
      s.parentIds.forEach(expand)
    }
  }
  for (const it of items) {
    if (it.itemType === 'message') order.push(it.messageId)
    else expand(it.summaryId)
  }
  if (reached.size !== summaries.length) fail(`${summaries.length - reached.size} summaries are unreachable`)
  if (new Set(order).size !== order.length) fail('a message is covered twice')
  if (order.length !== stats.messageCount) fail(`${order.length} messages covered, ${stats.messageCount} stored`)
  for (let i = 1; i < order.length; i++) if (order[i] <= order[i - 1]) fail(`coverage out of order at ${order[i]}`)
  if (baseline) {
    const known = baseline.ids
    for (let i = 0; i < Math.min(known.length, order.length); i++) {
      if (order[i] !== known[i]) fail(`message ${known[i]} not covered in place`)
    }
  }

  // Metadata equals its recomputation.
  const depthCounts = {}
  let deepest = -1
  for (const s of summaries) {
    depthCounts[s.depth] = (depthCounts[s.depth] ?? 0) + 1
    deepest = Math.max(deepest, s.depth)
    if (s.kind === 'leaf') {
      if (s.depth !== 0) fail(`leaf ${s.summaryId} at depth ${s.depth}`)
      if (s.descendantCount !== 0 || s.descendantTokenCount !== 0) fail(`leaf ${s.summaryId} has descendants`)
      if (baseline && s.messageIds.every((m) => baseline.byId.has(m))) {
        const src = s.messageIds.map((m) => baseline.byId.get(m))
        if (s.sourceMessageTokenCount !== sum(src.map((m) => m.tokens))) fail(`leaf ${s.summaryId} source tokens`)
        const times = src.map((m) => m.time)
        if (times.every(Boolean)) {
          if (s.earliestAt !== minOf(times)) fail(`leaf ${s.summaryId} earliestAt ${s.earliestAt} ≠ ${minOf(times)}`)
          if (s.latestAt !== maxOf(times)) fail(`leaf ${s.summaryId} latestAt ${s.latestAt} ≠ ${maxOf(times)}`)
        }
      }
    } else {
      const kids = s.parentIds.map((p) => byId.get(p))
      const d = kids[0].depth
      if (kids.some((k) => k.depth !== d)) fail(`condensed ${s.summaryId} mixes depths`)
      if (s.depth !== d + 1) fail(`condensed ${s.summaryId} depth ${s.depth}, sources at ${d}`)
      if (s.descendantCount !== sum(kids.map((k) => k.descendantCount + 1))) fail(`${s.summaryId} descendantCount`)
      if (s.descendantTokenCount !== sum(kids.map((k) => k.tokenCount + k.descendantTokenCount))) fail(`${s.summaryId} descendantTokenCount`)
      if (s.sourceMessageTokenCount !== sum(kids.map((k) => k.sourceMessageTokenCount))) fail(`${s.summaryId} sourceMessageTokenCount`)
      if (s.earliestAt !== minOf(kids.map((k) => k.earliestAt))) fail(`${s.summaryId} earliestAt`)
      if (s.latestAt !== maxOf(kids.map((k) => k.latestAt))) fail(`${s.summaryId} latestAt`)
    }
    if (!/^sum_[0-9a-f]{16}$/.test(s.summaryId)) fail(`bad summary id ${s.summaryId}`)
  }

  const contextTokens = sum(items.map((i) => i.tokenCount))
  if (stats.summaryCount !== summaries.length) fail('stats.summaryCount')
  if (stats.contextItems !== items.length) fail('stats.contextItems')
  if (stats.contextTokens !== contextTokens) fail('stats.contextTokens')
  return { deepest, summaries: summaries.length, depthCounts, contextItems: items.length, contextTokens }
}
