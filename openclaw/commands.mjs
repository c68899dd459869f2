// `/lcm` (alias `/lossless`): lcm-native from the chat, scoped to the calling
// session. Subcommands: status, doctor [apply], compact, backup, prune --dry-run,
// help. Answers are plain text that fits one chat message.

import { dirname, isAbsolute, join } from 'node:path'
import { resolveTokenBudget } from './engine.mjs'

/** The command's names: `/lcm`, and `/lossless` as the reference calls it. */
export const COMMAND_NAMES = Object.freeze(['lcm', 'lossless'])

/** Longest answer, in characters (one chat message on every channel OpenClaw has). */
export const MAX_REPLY_CHARS = 2000

const fmt = (n) => (typeof n === 'number' && Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : String(n))

/** `1.4 MiB`. */
export function formatBytes(n) {
  if (!(n >= 1024)) return `${fmt(n ?? 0)} B`
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  let v = n / 1024
  let u = 0
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return `${v.toFixed(1)} ${units[u]}`
}

const HELP = [
  '/lcm (alias /lossless): lcm-native for this session',
  '  /lcm status: database, conversations, this session\'s context and last compaction',
  '  /lcm doctor: check this conversation (report only)',
  '  /lcm doctor apply: repair it (lossless repairs, then re-summarize broken summaries)',
  '  /lcm compact: compact this session now and report the result',
  '  /lcm backup [path]: a consistent copy of the database (default: backups/ beside it)',
  '  /lcm prune [--apply]: what retention would archive and remove (--apply: do it)',
  '  /lcm help: this list',
].join('\n')

/** Cuts `text` to `max` characters on a line boundary, saying so. */
export function fitReply(text, max = MAX_REPLY_CHARS) {
  // No terminal control sequences in a chat message.
  const clean = String(text).replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, '').replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '')
  if (clean.length <= max) return clean
  const note = '\n… (cut; lcm-tui gives the whole report)'
  const room = max - note.length
  const cut = clean.lastIndexOf('\n', room)
  return clean.slice(0, cut > 0 ? cut : room) + note
}

/** The text of `/lcm status` for a status result and the breaker. */
export function formatStatus(s, { breaker, session, budgetSeen = true } = {}) {
  const lines = []
  const d = s.database
  lines.push(`Database: ${d.path}`)
  lines.push(`  ${formatBytes(d.fileBytes)} (+${formatBytes(d.walBytes)} WAL), ${fmt(d.freelistPages)} free pages`)
  if (d.largestTables?.length) lines.push(`  largest: ${d.largestTables.map((t) => `${t.name} ${formatBytes(t.bytes)}`).join(', ')}`)
  if (d.unindexedMessages > 0) lines.push(`  ${fmt(d.unindexedMessages)} messages waiting for the search index`)
  lines.push(`Conversations: ${fmt(s.conversations.active)} active, ${fmt(s.conversations.archived)} archived`)
  const x = s.session
  const who = session?.sessionKey ?? session?.sessionId ?? 'this session'
  if (!x || x.conversationId == null) {
    lines.push(`Session ${who}: nothing stored yet`)
  } else {
    lines.push(`Session ${who} (conversation ${x.conversationId})`)
    const pct = x.tokenBudget ? ` (${((100 * x.contextTokens) / x.tokenBudget).toFixed(0)}%)` : ''
    const which = budgetSeen ? 'budget' : 'budget (the configured default: no turn of this session since the gateway started)'
    const budget = x.tokenBudget ? ` of ${fmt(x.tokenBudget)} ${which}${pct}; compacts above ${fmt(x.threshold)} (${x.contextThreshold})` : ''
    lines.push(`  context: ${fmt(x.contextItems)} items, ${fmt(x.contextTokens)} tokens${budget}`)
    lines.push(`  stored: ${fmt(x.messages)} messages, ${fmt(x.messageTokens)} tokens`)
    lines.push(
      x.summariesByDepth.length
        ? `  summaries: ${x.summariesByDepth.map((c) => `depth ${c.depth}: ${fmt(c.count)} (${fmt(c.inContext)} in context)`).join(', ')}`
        : '  summaries: none',
    )
    const c = x.lastCompaction
    if (c) {
      const fb = c.fallbacks ? `, ${fmt(c.fallbacks)} fell back to truncation` : ''
      lines.push(`  last compaction ${c.at.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC')}: ${fmt(c.tokensBefore)} → ${fmt(c.tokensAfter)} tokens`)
      lines.push(`    ${fmt(c.passes)} summaries, ${fmt(c.summarizerCalls)} summarizer calls, ~${fmt(c.tokensIn)} tokens in, ~${fmt(c.tokensOut)} out${fb}`)
    } else if (x.newestSummaryAt) {
      lines.push(`  last compaction: before the last restart (newest summary ${x.newestSummaryAt} UTC)`)
    } else {
      lines.push('  last compaction: none yet')
    }
    const pending = []
    if (x.pending.compactionsRunning > 0) pending.push(`${fmt(x.pending.compactionsRunning)} compaction running`)
    if (x.pending.compactionDue) pending.push('compaction due (over threshold)')
    if (x.pending.contextGap) pending.push('an interrupted compaction to close')
    lines.push(`  pending: ${pending.length ? pending.join(', ') : 'nothing'}`)
  }
  if (breaker) {
    lines.push(
      breaker.isOpen()
        ? `Summarizer breaker: OPEN after ${fmt(breaker.failures)} authentication failures, retry in ${fmt(Math.ceil(breaker.remainingMs() / 60_000))} min`
        : `Summarizer breaker: closed (${fmt(breaker.failures)}/${fmt(breaker.threshold)} failures)`,
    )
  }
  return lines.join('\n')
}

/** The text of `/lcm doctor [apply]`. */
export function formatDoctor(r, conversationId) {
  const lines = [`Doctor, conversation ${conversationId}${r.applied ? ' (apply)' : ' (report only)'}: ${r.ok ? 'OK' : 'problems found'}`]
  const list = (title, items, show) => {
    if (!items?.length) return
    lines.push(`${title}: ${fmt(items.length)}`)
    for (const it of items.slice(0, 5)) lines.push(`  - ${show(it)}`)
    if (items.length > 5) lines.push(`  … and ${fmt(items.length - 5)} more`)
  }
  list('Violations', r.violations, (v) => `[${v.kind}] ${v.message}${v.repairable ? '' : ' (not repairable without loss)'}`)
  list('Broken summaries', r.brokenSummaries, (b) => `${b.summaryId} depth ${b.depth}, ${fmt(b.tokenCount)} tokens`)
  list('Repairs made', r.repairs, (x) => x.message)
  list('Re-summarized', r.resummarized, (x) => `${x.summaryId}: ${x.status}`)
  if (r.error) lines.push(`Stopped: ${r.error.code} on ${r.error.summaryId}: ${r.error.message}`)
  if (r.remaining) lines.push(`Remaining: ${fmt(r.remaining.violations.length)} violations, ${fmt(r.remaining.brokenSummaries.length)} broken summaries`)
  if (!r.applied && !r.ok) lines.push('Run /lcm doctor apply to repair.')
  return lines.join('\n')
}

/** The text of `/lcm compact`. */
export function formatCompact(r) {
  const lines = [`Compaction: ${r.reason}`]
  lines.push(`  ${fmt(r.tokensBefore)} → ${fmt(r.tokensAfter)} tokens, ${fmt(r.passes.length)} summaries written`)
  if (r.errorCode) lines.push(`  error: ${r.errorCode}`)
  return lines.join('\n')
}

/**
 * Where `/lcm backup [path]` writes: an absolute path as given; a relative one
 * under the database's `backups/` directory; none: `backups/lcm-<UTC time>.db` there.
 */
export function backupPath(dbPath, given, now = new Date()) {
  if (given && isAbsolute(given)) return given
  const dir = join(dirname(dbPath), 'backups')
  if (given) return join(dir, given)
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z').replace('T', '-')
  return join(dir, `lcm-${stamp}.db`)
}

/** The text of `/lcm backup`. */
export function formatBackup(r) {
  const ok = r.integrity?.length === 1 && r.integrity[0] === 'ok'
  return [
    `Backup written: ${r.path}`,
    `  ${formatBytes(r.bytes)}, ${fmt(r.pages)} pages in ${fmt(r.steps)} steps, ${(r.elapsedMs / 1000).toFixed(1)} s (longest step ${r.longestStepMs.toFixed(1)} ms)`,
    `  integrity check: ${ok ? 'ok' : r.integrity?.slice(0, 3).join('; ')}`,
  ].join('\n')
}

/** The text of `/lcm prune [--apply]`. */
export function formatPrune(r) {
  const lines = []
  const cap = r.maxDatabaseBytes ? ` of ${formatBytes(r.maxDatabaseBytes)} cap${r.overCap ? ' (over it)' : ''}` : ''
  lines.push(`Prune${r.dryRun ? ' (dry run: nothing changed; /lcm prune --apply to run it)' : ''}: database ${formatBytes(r.databaseBytes)}${cap}`)
  if (r.capWarning) lines.push(`  warning: ${r.capWarning}`)
  if (!r.actions.length) lines.push('  nothing due under the retention policies')
  for (const a of r.actions.slice(0, 8)) {
    const what = a.action === 'prune' ? 'archive, then remove' : 'archive'
    const state = r.dryRun ? 'would' : a.done ? 'did' : `skipped (${a.skipped ?? 'changed meanwhile'})`
    lines.push(`  - ${a.session}: ${state} ${what}, ${fmt(a.messages)} messages, idle ${fmt(a.idleDays)} days (${a.policy}, ${a.reason})`)
  }
  if (r.actions.length > 8) lines.push(`  … and ${fmt(r.actions.length - 8)} more`)
  if (r.remaining > 0) lines.push(`  ${fmt(r.remaining)} more due in a later step`)
  if (!r.dryRun) lines.push(`  removed ${fmt(r.messagesRemoved)} messages, gave back ${formatBytes(r.bytesReclaimed)}`)
  return lines.join('\n')
}

/**
 * Runs one `/lcm` invocation; resolves with the reply text (never rejects).
 * @param {string} args what follows the command name
 * @param {{ sessionKey?: string, sessionId?: string }} session the caller's session
 * @param {{ handle: import('./shared.mjs').SharedHandle, config: object }} deps
 */
export async function runLcmCommand(args, session, { handle, config }) {
  const words = String(args ?? '').trim().split(/\s+/).filter(Boolean)
  const sub = (words[0] ?? 'help').toLowerCase()
  const rest = words.slice(1)
  const scope = { ...(session.sessionId ? { sessionId: session.sessionId } : {}), ...(session.sessionKey ? { sessionKey: session.sessionKey } : {}) }
  const named = Object.keys(scope).length > 0
  try {
    if (sub === 'help') return HELP
    if (!handle) return 'lcm-native is not running (disabled, or the gateway is stopping).'
    const engine = await handle.use()
    // The budget and the contextThresholdOverrides rule of the session's last turn.
    const seen = handle.sessionOf?.(session)
    const budget = resolveTokenBudget({ tokenBudget: seen?.budget }, config)
    const overrides = seen?.overrides
    switch (sub) {
      case 'status': {
        const s = await engine.status({ ...scope, tokenBudget: budget, ...(overrides ? { contextThreshold: overrides.contextThreshold } : {}) })
        return formatStatus(s, { breaker: handle.breaker, session, budgetSeen: seen !== undefined })
      }
      case 'doctor': {
        if (!named) return 'No session in this context: /lcm doctor needs a chat session.'
        const conv = await engine.getConversation(scope)
        if (!conv) return 'Nothing stored for this session yet: nothing to check.'
        const apply = rest[0]?.toLowerCase() === 'apply' || rest.includes('--apply')
        const r = await engine.doctor({ conversationId: conv.conversationId, apply })
        return formatDoctor(r, conv.conversationId)
      }
      case 'compact': {
        if (!named) return 'No session in this context: /lcm compact needs a chat session.'
        // A manual compaction runs even while the automatic breaker is open (it may be what closes it).
        const open = handle.breaker.isOpen() ? 'The summarizer breaker is open for automatic compaction; this manual one runs anyway.\n' : ''
        const r = await engine.compact({ ...scope, tokenBudget: budget, mode: 'sweep', force: true, ...(overrides ? { overrides } : {}) })
        handle.recordCompaction(r)
        return open + formatCompact(r)
      }
      case 'backup': {
        // A path given in the chat is taken under the database's directory unless absolute.
        const dbPath = (await engine.status({ tables: false })).database.path
        const to = backupPath(dbPath, rest[0])
        return formatBackup(await engine.backup({ to }))
      }
      case 'prune': {
        const apply = rest.includes('--apply')
        return formatPrune(await engine.prune({ dryRun: !apply }))
      }
      default:
        return `Unknown subcommand "${sub}".\n${HELP}`
    }
  } catch (err) {
    return `/lcm ${sub} failed: ${err?.code ? `${err.code}: ` : ''}${err?.message ?? err}`
  }
}

/**
 * The command definitions to hand to `api.registerCommand` (one per name).
 * @param {() => (import('./shared.mjs').SharedHandle | null)} getHandle the live handle
 * @param {object} config the resolved plugin config
 */
export function lcmCommands(getHandle, config) {
  return COMMAND_NAMES.map((name) => ({
    name,
    description: name === 'lcm' ? 'lcm-native: status, doctor, compact, backup, prune, help' : 'Alias of /lcm (lcm-native)',
    acceptsArgs: true,
    requireAuth: true,
    handler: async (ctx) => ({
      text: fitReply(await runLcmCommand(ctx?.args, { sessionKey: ctx?.sessionKey, sessionId: ctx?.sessionId }, { handle: getHandle(), config })),
    }),
  }))
}
