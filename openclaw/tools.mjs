// The four recall tools as OpenClaw agent tools, bound to the calling session:
// a sub-agent session with a delegation grant works under that grant; any other
// session reads its own conversation unless it names another one.

export const TOOL_NAMES = Object.freeze(['lcm_grep', 'lcm_describe', 'lcm_expand', 'lcm_expand_query'])

function toolError(message, code = 'LCM_INVALID_INPUT') {
  return Object.assign(new Error(message), { code })
}

function textResult(text, details) {
  return { content: [{ type: 'text', text }], details }
}

/**
 * The scope of a tool call: `{ grantId }` for a delegated session, else an
 * explicit `conversationId` / `allConversations`, else the session's own
 * conversation. Null when the session has no conversation yet.
 */
async function scopeOf(engine, handle, session, args) {
  const grantId = session.sessionKey ? handle.bindings.get(session.sessionKey) : undefined
  if (grantId) return { grantId }
  if (typeof args.conversationId === 'number') return { conversationId: args.conversationId }
  if (args.allConversations === true) return { allConversations: true }
  // A session key's family: its active conversation and the archived ones of
  // earlier sessions (`/reset`, rotations), never another key's.
  const family = session.sessionKey ? await engine.sessionFamily(session.sessionKey) : []
  if (family.length > 1) {
    const archived = new Map(family.filter((c) => !c.active).map((c) => [c.conversationId, c]))
    return { conversationIds: family.map((c) => c.conversationId), archived }
  }
  const lookup = session.sessionKey ? { sessionKey: session.sessionKey } : session.sessionId ? { sessionId: session.sessionId } : null
  const conversation = family[0] ?? (lookup ? await engine.getConversation(lookup) : null)
  return conversation ? { conversationId: conversation.conversationId } : null
}

/** The engine-facing part of a scope (without the archived map). */
function scopeParams(scope) {
  const { archived, ...rest } = scope
  return rest
}

/** A line naming the archived conversations `ids` belong to, or ''. */
function archivedNote(scope, ids) {
  if (!scope.archived) return ''
  const hit = [...new Set(ids)].filter((id) => scope.archived.has(id))
  if (hit.length === 0) return ''
  const parts = hit.map((id) => {
    const c = scope.archived.get(id)
    return `conversation ${id} (${c.archiveCause ?? 'archived'}${c.archivedAt ? ` ${c.archivedAt} UTC` : ''})`
  })
  return `\n\n[Archived: results from ${parts.join(', ')} come from earlier sessions of this session key.]`
}

/** `hits` with `archived: true` on those of an archived conversation. */
function markArchived(scope, hits) {
  if (!scope.archived || !Array.isArray(hits)) return hits
  return hits.map((h) => (scope.archived.has(h.conversationId) ? { ...h, archived: true } : h))
}

const NO_CONVERSATION = 'No LCM history is stored for this session yet.'

function pick(args, keys) {
  const out = {}
  for (const k of keys) if (args[k] !== undefined) out[k] = args[k]
  return out
}

/** Runs `lcm_grep`. */
async function grep(ctx, args) {
  if (typeof args.pattern !== 'string' || args.pattern === '') throw toolError('lcm_grep: pattern is required')
  const scope = await scopeOf(ctx.engine, ctx.handle, ctx.session, args)
  if (!scope) return textResult(NO_CONVERSATION, { totalMatches: 0 })
  const r = await ctx.engine.grep({ ...pick(args, ['pattern', 'mode', 'scope', 'since', 'before', 'limit', 'sort']), ...scopeParams(scope) })
  const note = archivedNote(scope, [...r.messages, ...r.summaries].map((h) => h.conversationId))
  return textResult(r.text + note, { totalMatches: r.totalMatches, truncated: r.truncated, messages: markArchived(scope, r.messages), summaries: markArchived(scope, r.summaries), grant: r.grant })
}

/** The note for a summary retention pruned (its sources are in an archive), or null. */
async function prunedNote(engine, id) {
  if (typeof engine.prunedSummary !== 'function' || !id.startsWith('sum_')) return null
  const p = await engine.prunedSummary(id).catch(() => null)
  if (!p) return null
  return {
    archive: p.archive,
    text: `${id} and its sources were pruned by a retention policy with conversation ${p.conversationId}; they are archived at ${p.archive} (an operator can put them back with \`lcm-tui restore ${p.archive}\`).`,
  }
}

/** Runs `lcm_describe`. */
async function describe(ctx, args) {
  if (typeof args.id !== 'string' || args.id === '') throw toolError('lcm_describe: id is required')
  const scope = await scopeOf(ctx.engine, ctx.handle, ctx.session, args)
  if (!scope) return textResult(NO_CONVERSATION, { found: false })
  const options = { ...pick(args, ['tokenCap', 'expandFile', 'expandFileMaxBytes', 'startLine', 'endLine']), ...scopeParams(scope) }
  const r = await ctx.engine.describe(args.id, options)
  if (!r) {
    const pruned = await prunedNote(ctx.engine, args.id)
    if (pruned) return textResult(pruned.text, { found: false, id: args.id, pruned: true, archive: pruned.archive })
    return textResult(`${args.id} was not found in this session's LCM history.`, { found: false, id: args.id })
  }
  const owner = r.summary?.conversationId ?? r.file?.conversationId
  const archived = owner !== undefined && scope.archived?.has(owner) === true
  return textResult(r.text + (owner !== undefined ? archivedNote(scope, [owner]) : ''), { found: true, id: r.id, type: r.type, grant: r.grant, ...(archived ? { archived: true } : {}) })
}

/** Runs `lcm_expand`. */
async function expand(ctx, args) {
  const scope = await scopeOf(ctx.engine, ctx.handle, ctx.session, args)
  if (!scope) return textResult(NO_CONVERSATION, { totalTokens: 0 })
  // Summaries retention removed (with their conversation) are named with their
  // archive, and the others expanded.
  const notes = []
  let rest = args.summaryIds
  if (Array.isArray(args.summaryIds)) {
    rest = []
    for (const id of args.summaryIds) {
      const pruned = typeof id === 'string' ? await prunedNote(ctx.engine, id) : null
      if (pruned) notes.push(pruned.text)
      else rest.push(id)
    }
    if (rest.length === 0 && notes.length > 0) return textResult(notes.join('\n\n'), { citedIds: [], totalTokens: 0, truncated: false, pruned: true })
  }
  const r = await ctx.engine.expand({ ...pick({ ...args, summaryIds: rest }, ['summaryIds', 'query', 'maxDepth', 'tokenCap', 'includeMessages']), ...scopeParams(scope) })
  const owners = (r.roots ?? []).map((root) => root.conversationId)
  const text = notes.length ? [r.text, ...notes].filter(Boolean).join('\n\n') : r.text
  return textResult(text + archivedNote(scope, owners), { citedIds: r.citedIds, totalTokens: r.totalTokens, truncated: r.truncated, grant: r.grant })
}

const ANSWER_SYSTEM_PROMPT =
  'You answer one question about an earlier part of a conversation, using only the expanded history you are given. ' +
  'Be concise and exact (names, numbers, commands, errors verbatim). Cite the sum_… and msg# ids you relied on. ' +
  'If the history does not contain the answer, say so plainly.'

/**
 * Runs `lcm_expand_query`: expands the chosen summaries with their messages
 * under a delegation grant (the session's own, or a temporary one capped at
 * `maxExpandTokens` and revoked afterwards), then asks the host LLM the question
 * over that text. Returns the answer and the ids the expansion covered.
 */
async function expandQuery(ctx, args, signal) {
  if (typeof args.prompt !== 'string' || args.prompt.trim() === '') throw toolError('lcm_expand_query: prompt is required')
  const hasIds = Array.isArray(args.summaryIds) && args.summaryIds.length > 0
  if (!hasIds && !(typeof args.query === 'string' && args.query.trim())) {
    throw toolError('lcm_expand_query: give summaryIds, or a query to find the summaries to expand')
  }
  if (!ctx.llm) throw toolError('lcm_expand_query needs the host LLM (api.runtime.llm.complete), which this host does not offer', 'LCM_CONFIG')
  const { engine, handle, session, config } = ctx
  const scope = await scopeOf(engine, handle, session, args)
  if (!scope) return textResult(NO_CONVERSATION, { answer: null, citedIds: [] })
  const cap = Math.max(1, Math.min(typeof args.tokenCap === 'number' ? args.tokenCap : config.maxExpandTokens, config.maxExpandTokens))
  let grantId = scope.grantId
  let temporary = false
  if (!grantId) {
    const ids = scope.conversationId !== undefined ? [scope.conversationId] : scope.conversationIds ?? (await engine.listConversations()).map((c) => c.conversationId)
    const grant = await engine.createGrant({ conversationIds: ids, tokenCap: cap, ttlMs: config.delegationTimeoutMs, issuer: session.sessionKey ?? session.sessionId ?? 'lcm_expand_query' })
    grantId = grant.grantId
    temporary = true
  }
  try {
    const expansion = await engine.expand({
      ...(hasIds ? { summaryIds: args.summaryIds } : { query: args.query }),
      includeMessages: true,
      tokenCap: cap,
      grantId,
    })
    if (expansion.citedIds.length === 0) {
      return textResult('Nothing matched: no summaries to expand for this question.', { answer: null, citedIds: [], totalTokens: 0 })
    }
    const completion = await ctx.llm.complete({
      messages: [{ role: 'user', content: `${expansion.text}\n\nQuestion: ${args.prompt.trim()}` }],
      systemPrompt: ANSWER_SYSTEM_PROMPT,
      maxTokens: typeof args.maxTokens === 'number' && args.maxTokens > 0 ? Math.floor(args.maxTokens) : 2000,
      ...(expansionModelRef(config) ? { model: expansionModelRef(config) } : {}),
      purpose: 'lcm_expand_query',
      ...(signal ? { signal } : {}),
    })
    const answer = String(completion?.text ?? '').trim()
    const text = `${answer}\n\n[Expanded: ${expansion.citedIds.join(', ')}${expansion.truncated ? ' (truncated at the token cap)' : ''}]`
    return textResult(text, { answer, citedIds: expansion.citedIds, totalTokens: expansion.totalTokens, truncated: expansion.truncated, model: completion?.model ?? null })
  } finally {
    if (temporary) await engine.revokeGrant(grantId).catch(() => false)
  }
}

const RUNNERS = { lcm_grep: grep, lcm_describe: describe, lcm_expand: expand, lcm_expand_query: expandQuery }

/**
 * The agent tool `name` for one session, or null while the database is not open
 * (the host then offers the run without it).
 * @param {string} name
 * @param {{ handle: import('./shared.mjs').SharedHandle, config: object, llm?: object, session: { sessionKey?: string, sessionId?: string } }} binding
 */
export function createRecallTool(name, binding) {
  const definition = binding.handle.toolDefinitions?.find((d) => d.name === name)
  if (!definition || !binding.handle.opened) return null
  const run = RUNNERS[name]
  return {
    name: definition.name,
    label: definition.label,
    description: definition.description,
    parameters: definition.parameters,
    async execute(_toolCallId, params, signal) {
      if (signal?.aborted) throw signal.reason ?? toolError('aborted', 'LCM_ABORTED')
      const engine = await binding.handle.use()
      const args = params && typeof params === 'object' ? params : {}
      return run({ ...binding, engine }, args, signal)
    },
  }
}

/**
 * The model ref `lcm_expand_query` asks the host for: `expansionModel`, prefixed
 * with `expansionProvider` when it names no provider itself (undefined: the host's
 * model).
 */
export function expansionModelRef(config) {
  const model = config.expansionModel?.trim()
  if (!model) return undefined
  const provider = config.expansionProvider?.trim()
  return provider && !model.includes('/') ? `${provider}/${model}` : model
}
