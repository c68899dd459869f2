// The reference plugin (lossless-claw) reads our rows with its own SQL and its own
// reconstruction rules. This file models that reader from the rules it follows
// (reads `messages` and `message_parts` by id with the statements it issues, then
// role from part metadata or the DB role, tool-call id / name / error flag from the
// part columns and metadata, content from the parts — parts flagged
// `topLevelReasoningOnly` left out, falling back to `messages.content` when none
// remain, a user's lone text block collapsed to a string) and checks that every
// message we store reads back the same for it, in particular tool results, whose
// text we store once (in `messages.content`).
import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { LcmEngine, tempDir, workload, turns } from './helpers.mjs'
import { query } from './sqlfile.mjs'

const TOOL_CALL_TYPES = new Set(['toolCall', 'toolUse', 'tool_use', 'tool-use', 'functionCall', 'function_call'])
const TOOL_RESULT_TYPES = new Set(['toolResult', 'tool_result', 'function_call_output'])

function meta(part) {
  try {
    const v = JSON.parse(part.metadata)
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {}
  } catch {
    return {}
  }
}

const nonEmpty = (v) => (typeof v === 'string' && v.length > 0 ? v : undefined)

function runtimeRole(dbRole, parts) {
  const original = parts.map((p) => nonEmpty(meta(p).originalRole)).find(Boolean)
  if (original === 'toolResult' || original === 'assistant' || original === 'user') return original
  if (original === 'system') return 'user'
  if (dbRole === 'tool') return 'toolResult'
  return dbRole === 'assistant' ? 'assistant' : 'user'
}

/** First non-empty value of a part column, else of the same key in part metadata. */
function pick(parts, column, key) {
  for (const p of parts) {
    const v = nonEmpty(p[column]) ?? nonEmpty(meta(p)[key])
    if (v) return v
  }
  return undefined
}

function parsed(text) {
  if (typeof text !== 'string' || text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

function block(part) {
  const m = meta(part)
  const rawType = m.raw && typeof m.raw === 'object' ? (m.raw.type ?? m.rawType) : m.rawType
  if (m.raw && typeof m.raw === 'object' && !TOOL_CALL_TYPES.has(rawType) && !TOOL_RESULT_TYPES.has(rawType)) return m.raw
  if (part.part_type === 'reasoning') {
    const type = m.rawType === 'thinking' ? 'thinking' : 'reasoning'
    if (!nonEmpty(part.text_content)) return { type }
    return type === 'thinking' ? { type, thinking: part.text_content } : { type, text: part.text_content }
  }
  if (part.part_type === 'tool' && m.originalRole !== 'toolResult') {
    const type = TOOL_CALL_TYPES.has(m.rawType) ? m.rawType : 'toolCall'
    const b = { type, id: nonEmpty(part.tool_call_id) ?? `toolu_lcm_${part.part_id}` }
    if (nonEmpty(part.tool_name)) b.name = part.tool_name
    const input = parsed(part.tool_input)
    if (input !== undefined) b.arguments = input
    return b
  }
  if (part.part_type === 'text') return { type: 'text', text: part.text_content ?? '' }
  return { type: 'text', text: part.text_content ?? '' }
}

function content(parts, role, fallback) {
  const blocks = parts.filter((p) => meta(p).topLevelReasoningOnly !== true).map(block)
  if (blocks.length === 0) {
    if (role === 'assistant') return fallback ? [{ type: 'text', text: fallback }] : []
    if (role === 'toolResult') return [{ type: 'text', text: fallback }]
    return fallback
  }
  if (role === 'user' && blocks.length === 1 && blocks[0].type === 'text' && typeof blocks[0].text === 'string') return blocks[0].text
  return blocks
}

/** One stored message as the reference's assembler rebuilds it, read with its SQL. */
function referenceRead(dbPath, messageId) {
  const [msg] = query(dbPath, 'SELECT message_id, conversation_id, seq, role, content, token_count, created_at FROM messages WHERE message_id = ?', [messageId])
  const parts = query(dbPath, `SELECT part_id, message_id, session_id, part_type, ordinal, text_content, tool_call_id, tool_name, tool_input, tool_output, metadata
    FROM message_parts WHERE message_id = ? ORDER BY ordinal`, [messageId])
  const stored = runtimeRole(msg.role, parts)
  const out = { role: stored }
  if (stored === 'toolResult') {
    out.toolCallId = pick(parts, 'tool_call_id', 'toolCallId')
    out.toolName = pick(parts, 'tool_name', 'toolName') ?? 'unknown'
    const flag = parts.map((p) => meta(p).isError).find((v) => typeof v === 'boolean')
    if (flag !== undefined) out.isError = flag
    // A result without a call id is downgraded to assistant text.
    if (!out.toolCallId) return { role: 'assistant', content: content(parts, 'assistant', msg.content) }
  }
  out.content = content(parts, out.role, msg.content)
  return out
}

/** What the reference's reader should give for an ingested message. */
function expected(m) {
  const out = { role: m.role }
  if (m.role === 'toolResult') {
    out.toolCallId = m.toolCallId
    out.toolName = m.toolName ?? 'unknown'
    if (typeof m.isError === 'boolean') out.isError = m.isError
  }
  const lone = Array.isArray(m.content) && m.content.length === 1 && m.content[0].type === 'text'
  out.content = m.role === 'user' && lone ? m.content[0].text : m.content
  return out
}

describe('the reference plugin reads our rows', () => {
  it('rebuilds every workload message and every one-text-block shape the same, tool results included', async () => {
    const { messages } = workload(400, 5, ['--big-every', '0'])
    const shapes = [
      { role: 'user', content: [{ type: 'text', text: 'one block from the user' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'only text' }] },
      { role: 'toolResult', toolCallId: 'c_empty', toolName: 'exec', content: [{ type: 'text', text: '' }], isError: false },
      { role: 'toolResult', toolCallId: 'c_two', toolName: 'read', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], isError: false },
      { role: 'toolResult', toolCallId: 'c_err', toolName: 'exec', content: [{ type: 'text', text: 'Error: boom\n  at x' }], isError: true },
    ]
    const all = [...messages, ...shapes]
    const dbPath = join(tempDir(), 'lcm.db')
    const e = await LcmEngine.open({ dbPath })
    const ids = []
    for (const turn of [...turns(messages), shapes]) {
      const r = await e.ingestBatch({ sessionId: 's', messages: turn })
      ids.push(...r.results.map((x) => x.messageId))
    }
    // Our own rebuild stays byte-exact.
    const back = await e.getMessages(1)
    await e.close()
    for (let i = 0; i < all.length; i++) expect(JSON.stringify(back[i])).toBe(JSON.stringify(all[i]))
    let toolResults = 0
    for (let i = 0; i < all.length; i++) {
      expect(referenceRead(dbPath, ids[i]), `message ${i}`).toEqual(expected(all[i]))
      if (all[i].role === 'toolResult') toolResults++
    }
    expect(toolResults).toBeGreaterThan(100)
    // The text of a tool result made of one text block is stored once.
    const twice = query(dbPath, `SELECT COUNT(*) AS n FROM message_parts p JOIN messages m ON m.message_id = p.message_id
      WHERE m.role = 'tool' AND p.text_content = m.content AND m.content <> ''`)
    expect(twice[0].n).toBe(0)
  })
})
