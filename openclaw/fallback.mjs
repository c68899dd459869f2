// The live-message fallback of `assemble`, used only when the store cannot answer
// (database unavailable, session excluded, core failure): the newest live messages
// that fit the budget, never starting on an orphaned tool result.
//
// The core's token estimator is not reachable when the core is what failed, so the
// bound uses a deliberately pessimistic estimate: one token per 3 UTF-8 bytes of
// the message's JSON, plus a small per-message overhead. It over-counts, so the
// result stays under the budget whenever the core's estimate would.

const PER_MESSAGE_OVERHEAD = 4

/** Pessimistic token estimate of one message. */
export function pessimisticTokens(message) {
  let json
  try {
    json = JSON.stringify(message) ?? ''
  } catch {
    json = String(message)
  }
  return Math.ceil(Buffer.byteLength(json, 'utf8') / 3) + PER_MESSAGE_OVERHEAD
}

function isToolResult(message) {
  return message?.role === 'toolResult' || message?.role === 'tool'
}

/**
 * The newest suffix of `messages` within `budget` tokens, starting after any
 * leading tool results whose call was cut off. Always keeps the newest message
 * when it is a user message, so the model sees the prompt it must answer.
 */
export function boundLiveMessages(messages, budget) {
  const list = Array.isArray(messages) ? messages : []
  const kept = []
  let total = 0
  for (let i = list.length - 1; i >= 0; i--) {
    const t = pessimisticTokens(list[i])
    if (total + t > budget && !(kept.length === 0 && list[i]?.role === 'user')) break
    kept.push(list[i])
    total += t
  }
  kept.reverse()
  while (kept.length > 0 && isToolResult(kept[0])) total -= pessimisticTokens(kept.shift())
  return { messages: kept, estimatedTokens: total }
}
