// Session lifecycle in the plugin: OpenClaw's `before_reset`, `session_end` and
// `session_start` hooks mapped onto the core's `endSession`, ordered before the
// next calls for the same session key, and the heartbeat-turn rule.
//
// OpenClaw fires `before_reset` without awaiting it, and the next turn may start
// before a hook handler has finished: each hook registers its store change in a
// per-key queue *synchronously*, and every engine method for that key awaits the
// queue first (`settled`), so the change is applied before the turn's calls.

/** Per-handle queues: sessionKey → the tail promise of its lifecycle changes. */
const queues = new WeakMap()

function queueOf(handle) {
  let q = queues.get(handle)
  if (!q) {
    q = new Map()
    queues.set(handle, q)
  }
  return q
}

/**
 * Runs `job` after the key's earlier lifecycle changes; the returned promise
 * settles with the job (errors are passed to `onError`, never thrown).
 */
export function enqueue(handle, key, job, onError) {
  const q = queueOf(handle)
  const slot = key ?? ''
  const prev = q.get(slot) ?? Promise.resolve()
  const next = prev.then(job).catch((err) => {
    onError?.(err)
  })
  q.set(slot, next)
  next.finally(() => {
    if (q.get(slot) === next) q.delete(slot)
  })
  return next
}

/** The key's pending lifecycle change, if any (await it before the key's calls). */
export function settled(handle, key) {
  const q = queues.get(handle)
  if (!q || q.size === 0) return undefined
  return q.get(typeof key === 'string' ? key : '') ?? undefined
}

/** OpenClaw `session_end` reasons the core knows; anything else is `unknown`. */
const END_REASONS = new Set(['new', 'reset', 'idle', 'daily', 'compaction', 'deleted', 'shutdown', 'restart', 'unknown'])

function text(s) {
  return typeof s === 'string' && s.trim() ? s.trim() : undefined
}

function describeError(err) {
  return err?.code ? `${err.code}: ${err.message}` : String(err?.message ?? err)
}

/**
 * Subscribes the lifecycle hooks on `api`. `handleOf()` gives the shared handle
 * (or null after shutdown); `policy` skips ignored and stateless sessions.
 * @returns {{ onBeforeReset: Function, onSessionEnd: Function, onSessionStart: Function }}
 */
export function subscribeLifecycle(api, { handleOf, policy, config, logger }) {
  const warn = (m) => {
    try {
      logger.warn?.(`[lcm-native] ${m}`)
    } catch {
      /* a broken logger must not break the hook */
    }
  }
  const info = (m) => {
    try {
      logger.info?.(`[lcm-native] ${m}`)
    } catch {
      /* a broken logger must not break the hook */
    }
  }
  const retainDepth = config.newSessionRetainDepth
  /** Queues `endSession` for the key now (synchronously), returns its promise. */
  const end = (params) => {
    const handle = handleOf()
    const key = text(params.sessionKey)
    if (!handle || (key && policy.skipsWrites(key))) return Promise.resolve(undefined)
    return enqueue(
      handle,
      key,
      async () => {
        const engine = await handle.use()
        let sessionId = text(params.sessionId)
        if (!sessionId && key) sessionId = (await engine.getConversation({ sessionKey: key }))?.sessionId
        if (!sessionId) return undefined
        const r = await engine.endSession({
          sessionId,
          ...(key ? { sessionKey: key } : {}),
          reason: params.reason,
          ...(text(params.nextSessionId) ? { nextSessionId: text(params.nextSessionId) } : {}),
          ...(params.reason === 'new' ? { retainDepth } : {}),
        })
        if (r.action === 'archived' || r.action === 'pruned') {
          const what = r.action === 'archived' ? `archived conversation ${r.conversationId} (${r.cause})` : `kept ${r.keptItems} context items of conversation ${r.conversationId}, pruned ${r.prunedMessages} messages and ${r.prunedSummaries} summaries`
          info(`${params.hook} ${params.reason} for ${key ?? sessionId}: ${what}`)
        }
        return r
      },
      (err) => warn(`${params.hook} (${params.reason}) failed for session ${params.sessionKey ?? params.sessionId}: ${describeError(err)}`),
    )
  }
  // `/new` and `/reset`: the context is the ending session's (its id in ctx).
  const onBeforeReset = (event, ctx) => {
    const reason = event?.reason === 'new' ? 'new' : event?.reason === 'reset' ? 'reset' : undefined
    if (!reason) return Promise.resolve(undefined)
    return end({ hook: 'before_reset', sessionId: ctx?.sessionId, sessionKey: ctx?.sessionKey, reason })
  }
  const onSessionEnd = (event, ctx) => {
    const reason = END_REASONS.has(event?.reason) ? event.reason : 'unknown'
    return end({
      hook: 'session_end',
      sessionId: event?.sessionId ?? ctx?.sessionId,
      sessionKey: event?.sessionKey ?? ctx?.sessionKey,
      reason,
      nextSessionId: event?.nextSessionId,
    })
  }
  // A session resumed from another continues its conversation under the new id.
  const onSessionStart = (event, ctx) => {
    const from = text(event?.resumedFrom)
    const id = text(event?.sessionId ?? ctx?.sessionId)
    if (!from || !id || from === id) return Promise.resolve(undefined)
    return end({ hook: 'session_start', sessionId: from, sessionKey: event?.sessionKey ?? ctx?.sessionKey, reason: 'continued', nextSessionId: id })
  }
  api.on?.('before_reset', onBeforeReset)
  api.on?.('session_end', onSessionEnd)
  api.on?.('session_start', onSessionStart)
  return { onBeforeReset, onSessionEnd, onSessionStart }
}

/** The text of a message's content (strings and text blocks). */
function contentText(message) {
  const c = message?.content
  if (typeof c === 'string') return c
  if (Array.isArray(c)) return c.map((b) => (typeof b === 'string' ? b : b?.type === 'text' && typeof b.text === 'string' ? b.text : '')).join('\n')
  return ''
}

/** The host's heartbeat acknowledgement (compared case-insensitively, trimmed). */
const HEARTBEAT_ACK = 'heartbeat_ok'

/** What marks a turn as a heartbeat: the reference's `heartbeat.md`, and OpenClaw 2026.9's wake prompt. */
const HEARTBEAT_MARK = /heartbeat\.md|\[openclaw heartbeat poll\]/i

/**
 * Whether `messages` are a heartbeat turn that only acknowledged
 * (`pruneHeartbeatOk`): the newest assistant reply is exactly `HEARTBEAT_OK`
 * (case-insensitive) and the turn mentions `heartbeat.md` (or is OpenClaw's
 * `[OpenClaw heartbeat poll]`). The core's `lifecycle::is_heartbeat_ok_turn` is
 * the same rule for imports.
 */
export function isHeartbeatOkTurn(messages) {
  if (!Array.isArray(messages) || messages.length === 0) return false
  const replies = messages.filter((m) => m?.role === 'assistant')
  const last = replies.at(-1)
  if (!last || contentText(last).trim().toLowerCase() !== HEARTBEAT_ACK) return false
  return messages.some((m) => HEARTBEAT_MARK.test(contentText(m)))
}
