// The host's SQLite transcript as `bootstrap` reads it. OpenClaw calls `bootstrap`
// before every turn, and reading the whole visible transcript costs the host a
// full pass over the session (≈ 100 ms at 10k messages, on its event loop). So the
// newest visible message comes from OpenClaw's cursor-paged delta reader, resumed
// where this session's last read ended (≈ 2 ms, whatever the length), and the
// whole transcript is read only when the core asks for it.

/** How many sessions' read positions are kept (the oldest used are dropped). */
export const MAX_TRACKED_SESSIONS = 1_000
/** One delta page: the reader's own ceilings. */
const PAGE = { maxMessages: 10_000, maxBytes: 64 * 1024 * 1024 }
/** Pages read in one call before giving up on the delta (then the whole is read). */
const MAX_PAGES = 1_000

/** Where each session's last delta read ended: key → `{ cursor, newest }`. */
const positions = new Map()

/** OpenClaw's transcript reader module, or null when the host has none. */
async function hostReader() {
  try {
    return await import('openclaw/plugin-sdk/session-transcript-runtime')
  } catch {
    return null
  }
}

/** The transcript target of a call, or null when the host keeps no SQLite transcript. */
export function transcriptTarget(params) {
  if (params.runtimeContext?.transcriptStorage?.kind !== 'sqlite') return null
  const target = params.sessionTarget ?? params.runtimeContext?.sessionTarget
  if (!target) return null
  return { ...target, sessionId: target.sessionId ?? params.sessionId, sessionKey: target.sessionKey ?? params.sessionKey }
}

/** A visible entry of the host as the core's transcript row. */
function row(e) {
  return { type: 'message', entryId: e.entryId, parentId: e.parentId ?? null, message: e.message }
}

/**
 * The host's transcript for `target`: `{ newest, whole }`, or null when the
 * host exposes no reader. `newest()` resolves the newest visible message as a
 * one-row transcript tail (`[]` for an empty transcript), or null when the delta
 * reader cannot tell (the caller then reads the whole); `whole()` resolves every
 * visible message, oldest first, read once (a host without the delta reader has
 * its whole read for `newest()` too).
 */
export async function hostTranscript(target) {
  const reader = await hostReader()
  if (typeof reader?.readVisibleSessionTranscriptMessageEntries !== 'function') return null
  let all
  const whole = async () => (all ??= (await reader.readVisibleSessionTranscriptMessageEntries(target)).map(row))
  if (typeof reader.readSessionTranscriptVisibleMessageDelta !== 'function') {
    return { newest: async () => (await whole()).slice(-1), whole }
  }
  return { newest: () => newestByDelta(reader, target), whole }
}

function keyOf(target) {
  return JSON.stringify([target.storePath ?? null, target.agentId ?? null, target.sessionId])
}

/**
 * Reads the delta from the session's last position to the end and keeps the new
 * position. A reset (the host rewrote or rolled over the transcript) starts again
 * from its start; anything the reader does not answer with pages gives null.
 */
async function newestByDelta(reader, target) {
  const key = keyOf(target)
  const known = positions.get(key)
  positions.delete(key)
  let cursor = known?.cursor
  let newest = known?.newest ?? null
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    let r
    try {
      r = await reader.readSessionTranscriptVisibleMessageDelta({ ...target, ...PAGE, ...(cursor ? { cursor } : {}) })
    } catch {
      return null
    }
    if (r?.kind === 'reset' && typeof r.cursor === 'string') {
      ;[cursor, newest] = [r.cursor, null]
      continue
    }
    if (r?.kind !== 'page' || !Array.isArray(r.entries) || typeof r.cursor !== 'string') return null
    const last = r.entries.at(-1)
    // Only what the core's tail check reads: the entry's id, parent and that it is a message.
    if (last) newest = { type: 'message', entryId: last.entryId, parentId: last.parentId ?? null, message: { role: last.message?.role } }
    cursor = r.cursor
    if (!r.hasMore) {
      remember(key, { cursor, newest })
      return newest ? [newest] : []
    }
    if (r.entries.length === 0) return null // one message larger than a page
  }
  return null
}

function remember(key, position) {
  positions.set(key, position)
  if (positions.size > MAX_TRACKED_SESSIONS) positions.delete(positions.keys().next().value)
}

/** Forgets every session's read position (tests). */
export function forgetTranscriptPositions() {
  positions.clear()
}
