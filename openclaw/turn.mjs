// Durable turns: the one check `commitTurn` makes before the core. The core owns
// the rest of the turn's rules (advancement key = admission.logicalTurnId, the
// message count spanning the anchors' positions, entry ids from the anchors, the
// canonical payload hash, duplicate / conflict); this module owns the OpenClaw
// rule that both anchors name the same transcript as the call.

/** The anchor fields that must agree between the admission and the terminal entry. */
const SAME_TRANSCRIPT_FIELDS = ['agentId', 'sessionId', 'sessionKey', 'storePath', 'generation']

/** An error for a turn the host should not have sent (code `LCM_INVALID_INPUT`). */
function turnError(message) {
  return Object.assign(new Error(`commitTurn: ${message}`), { code: 'LCM_INVALID_INPUT' })
}

/**
 * Checks that the admission and terminal anchors are present and agree on agent,
 * session, session key, store and generation, and that they belong to the call's
 * session. Throws `LCM_INVALID_INPUT` naming the first mismatch.
 */
export function checkTurnAnchors(params) {
  const { admission, terminal } = params ?? {}
  if (!admission || typeof admission !== 'object') throw turnError('admission anchor is missing')
  if (!terminal || typeof terminal !== 'object') throw turnError('terminal anchor is missing')
  for (const field of SAME_TRANSCRIPT_FIELDS) {
    if (admission[field] !== terminal[field]) {
      throw turnError(`admission and terminal disagree on ${field} (${JSON.stringify(admission[field])} vs ${JSON.stringify(terminal[field])})`)
    }
  }
  if (admission.sessionId !== undefined && admission.sessionId !== params.sessionId) {
    throw turnError(`the anchors belong to session ${JSON.stringify(admission.sessionId)}, not ${JSON.stringify(params.sessionId)}`)
  }
}
