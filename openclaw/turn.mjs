// Durable turns: what `commitTurn` checks before it reaches the core, and the
// payload hash that tells a replay (same hash: duplicate) from a conflicting
// commit under the same advancement key (different hash: refused).

/** The anchor fields that must agree between the admission and the terminal entry. */
const SAME_TURN_FIELDS = ['agentId', 'sessionId', 'sessionKey', 'storePath', 'generation']

/** An error for a turn the host should not have sent (code `LCM_INVALID_INPUT`). */
export function turnError(message) {
  return Object.assign(new Error(`commitTurn: ${message}`), { code: 'LCM_INVALID_INPUT' })
}

/**
 * Checks a durable turn: the advancement key is the admission's logical turn id,
 * both anchors belong to the same agent/session/store/generation (and to the
 * session of the call), and the messages span exactly the admitted range.
 * Throws `LCM_INVALID_INPUT` naming the first mismatch.
 */
export function validateTurn(params) {
  const { advancementKey, admission, terminal, messages } = params ?? {}
  if (typeof advancementKey !== 'string' || advancementKey === '') throw turnError('advancementKey must be a non-empty string')
  if (!admission || typeof admission !== 'object') throw turnError('admission anchor is missing')
  if (!terminal || typeof terminal !== 'object') throw turnError('terminal anchor is missing')
  if (!Array.isArray(messages)) throw turnError('messages must be an array')
  if (advancementKey !== admission.logicalTurnId) {
    throw turnError(`advancementKey ${JSON.stringify(advancementKey)} differs from admission.logicalTurnId ${JSON.stringify(admission.logicalTurnId)}`)
  }
  for (const field of SAME_TURN_FIELDS) {
    if (admission[field] !== terminal[field]) {
      throw turnError(`admission and terminal disagree on ${field} (${JSON.stringify(admission[field])} vs ${JSON.stringify(terminal[field])})`)
    }
  }
  if (typeof params.sessionId === 'string' && admission.sessionId !== undefined && admission.sessionId !== params.sessionId) {
    throw turnError(`anchors belong to session ${JSON.stringify(admission.sessionId)}, not ${JSON.stringify(params.sessionId)}`)
  }
  const from = admission.activeMessagePosition
  const to = terminal.activeMessagePosition
  if (!Number.isInteger(from) || !Number.isInteger(to) || to < from) {
    throw turnError(`activeMessagePosition range ${from}..${to} is not a forward range`)
  }
  if (messages.length !== to - from + 1) {
    throw turnError(`${messages.length} messages for positions ${from}..${to} (expected ${to - from + 1})`)
  }
}

/** JSON with object keys sorted at every level (arrays keep their order). */
export function canonicalJson(value) {
  return JSON.stringify(value, (_key, v) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const sorted = {}
      for (const k of Object.keys(v).sort()) sorted[k] = v[k]
      return sorted
    }
    return v
  })
}

/**
 * sha256 (hex) of the canonical turn `{admission, terminal, messages, sessionId,
 * sessionKey, isHeartbeat}`. Hashed with WebCrypto, which runs off the JS thread.
 */
export async function turnPayloadHash(params) {
  const canonical = canonicalJson({
    admission: params.admission,
    terminal: params.terminal,
    messages: params.messages,
    sessionId: params.sessionId,
    sessionKey: params.sessionKey ?? null,
    isHeartbeat: params.isHeartbeat === true,
  })
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonical))
  return Buffer.from(digest).toString('hex')
}

/** Transcript entry ids known for the turn's messages: the admission's and the terminal's. */
export function turnEntryIds(params) {
  const n = params.messages.length
  const ids = new Array(n).fill(null)
  if (n > 0 && typeof params.admission.entryId === 'string') ids[0] = params.admission.entryId
  if (n > 0 && typeof params.terminal.entryId === 'string') ids[n - 1] = params.terminal.entryId
  return ids
}
