#!/usr/bin/env node
'use strict'
// `npm run demo`: a conversation goes into .tmp/demo/lcm-demo.db (gitignored; large
// files go beside it, in .tmp/demo/lcm-files/) turn by turn through the
// plugin's lifecycle hook (afterTurn: ingest, then a threshold sweep when the
// context is over contextThreshold × budget), then the result is shown: message
// and summary counts, tokens before/after, the summary DAG as a tree with time
// ranges, and the start of the context the model would see.
//
//   npm run demo -- [--messages 2000] [--seed 1] [--input conv.jsonl] [--db .tmp/demo/lcm-demo.db]
//                   [--budget 32000] [--leaf-chunk-tokens N] [--fresh-tail N] [--timezone Zone]
//
// The summarizer is the engine's default: offline extractive, or Anthropic / OpenAI
// when ANTHROPIC_API_KEY / OPENAI_API_KEY is set (LCM_DEMO_OFFLINE=1 keeps it offline).
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const root = path.join(__dirname, '..')

function parseArgs(argv) {
  const o = { messages: 2000, seed: 1, input: null, db: path.join(root, '.tmp', 'demo', 'lcm-demo.db'), budget: 32000, leafChunkTokens: null, freshTail: null, timezone: null }
  const num = (k, v) => {
    const n = Number(v)
    if (!Number.isFinite(n) || n < 0) throw new Error(`${k} needs a non-negative number, got ${v}`)
    return n
  }
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i]
    const v = argv[i + 1]
    if (k === '--messages') o.messages = num(k, v)
    else if (k === '--seed') o.seed = num(k, v)
    else if (k === '--input') o.input = v
    else if (k === '--db') o.db = v
    else if (k === '--budget') o.budget = num(k, v)
    else if (k === '--leaf-chunk-tokens') o.leafChunkTokens = num(k, v)
    else if (k === '--fresh-tail') o.freshTail = num(k, v)
    else if (k === '--timezone') o.timezone = v
    else if (k === '-h' || k === '--help') {
      console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(2, 13).join('\n'))
      process.exit(0)
    } else throw new Error(`unknown option ${k} (see --help)`)
    i++
  }
  return o
}

function generatorPath() {
  const candidates = [
    path.join(root, '..', 'shared', 'bench', 'gen-workload.mjs'),
    path.join(root, '..', '..', 'shared', 'bench', 'gen-workload.mjs'), // a git worktree under <repo>/wt/
    path.join(root, 'bench', 'gen-workload.mjs'),
  ]
  const found = candidates.find((p) => fs.existsSync(p))
  if (!found) throw new Error('gen-workload.mjs not found (expected ../shared/bench/ beside the checkout); pass --input FILE')
  return found
}

function loadConversation(o) {
  let file = o.input
  if (!file) {
    file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-demo-')), 'conv.jsonl')
    execFileSync(process.execPath, [generatorPath(), '--messages', String(o.messages), '--seed', String(o.seed), '--out', file])
  }
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => {
      try {
        return JSON.parse(l)
      } catch (e) {
        throw new Error(`${file}:${i + 1}: not JSON (${e.message})`)
      }
    })
}

function turns(messages) {
  const out = []
  for (const m of messages) {
    if (m.role === 'user' || out.length === 0) out.push([])
    out[out.length - 1].push(m)
  }
  return out
}

function removeDb(db) {
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(db + suffix, { force: true })
}

const fmt = (n) => n.toLocaleString('en-US')
const short = (iso) => (iso ? iso.replace('T', ' ').slice(0, 16) : '?')
const range = (s) => {
  const a = short(s.earliestAt)
  const b = short(s.latestAt)
  return a.slice(0, 10) === b.slice(0, 10) ? `${a}–${b.slice(11)}` : `${a} – ${b}`
}
const head = (text, n) => {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > n ? line.slice(0, n - 1) + '…' : line
}

function printTree(summaries, items) {
  const byId = new Map(summaries.map((s) => [s.summaryId, s]))
  const walk = (id, indent) => {
    const s = byId.get(id)
    const kids = s.kind === 'leaf' ? `${s.messageIds.length} msgs` : `${s.parentIds.length} children`
    console.log(`${'  '.repeat(indent)}${s.summaryId} d${s.depth} [${range(s)}] ${kids}, ${fmt(s.tokenCount)} tok — ${head(s.content, 60)}`)
    for (const p of s.parentIds) walk(p, indent + 1)
  }
  for (const it of items) if (it.itemType === 'summary') walk(it.summaryId, 1)
}

function messageText(m) {
  if (typeof m.content === 'string') return m.content
  return (m.content ?? [])
    .map((b) => (b.type === 'text' ? b.text : b.type === 'toolCall' ? `[tool call ${b.name}]` : `[${b.type}]`))
    .join(' ')
}

/** The start of the context the model would see (assembly, when the addon has it). */
async function printAssembled(engine, sessionId, budget) {
  const r = await engine.assemble({ sessionId, tokenBudget: budget })
  console.log(`\nassembled context (${fmt(r.messages.length)} messages, ~${fmt(r.estimatedTokens)} tokens), first lines:`)
  const lines = r.messages.flatMap((m) => messageText(m).split('\n').map((l) => `  ${m.role.padEnd(10)} ${head(l, 100)}`))
  for (const line of lines.slice(0, 24)) console.log(line)
  if (lines.length > 24) console.log(`  … ${fmt(lines.length - 24)} more lines`)
}

/** Without assembly in the addon: the context list, summaries with their heads. */
function printContextList(items, summaries) {
  console.log('\ncontext list, first entries (this build has no assemble(); assembly wraps summaries in XML):')
  const byId = new Map(summaries.map((s) => [s.summaryId, s]))
  for (const it of items.slice(0, 12)) {
    if (it.itemType === 'summary') {
      const s = byId.get(it.summaryId)
      console.log(`  #${it.ordinal} summary d${s.depth} [${range(s)}] ${head(s.content, 90)}`)
    } else {
      console.log(`  #${it.ordinal} ${it.role} (${fmt(it.tokenCount)} tok)`)
    }
  }
  if (items.length > 12) console.log(`  … ${items.length - 12} more (the fresh tail is raw messages)`)
}

async function main() {
  const o = parseArgs(process.argv)
  const { LcmEngine } = require(path.join(root, 'index.js'))
  const messages = loadConversation(o)
  removeDb(o.db)
  fs.mkdirSync(path.dirname(path.resolve(o.db)), { recursive: true })
  const options = { dbPath: o.db }
  if (o.leafChunkTokens != null) options.leafChunkTokens = o.leafChunkTokens
  if (o.freshTail != null) options.freshTailCount = o.freshTail
  if (o.timezone) options.timezone = o.timezone
  // A configured key means the operator wants a real model; LCM_DEMO_OFFLINE=1 keeps
  // the demo offline anyway.
  if (!process.env.LCM_DEMO_OFFLINE) {
    if (process.env.ANTHROPIC_API_KEY) options.summaryProvider = 'anthropic'
    else if (process.env.OPENAI_API_KEY) options.summaryProvider = 'openai'
  }
  const engine = await LcmEngine.open(options)
  const sessionId = 'lcm-demo'
  const started = Date.now()
  let passes = 0
  let sweeps = 0
  let conversationId = null
  let lastFailure = null
  for (const turn of turns(messages)) {
    // The host passes the session's messages and how many preceded this turn; the
    // demo passes just the turn (prePromptMessageCount 0) to keep the calls small.
    const r = await engine.afterTurn({
      sessionId,
      messages: turn,
      prePromptMessageCount: 0,
      tokenBudget: o.budget,
      onProgress: () => passes++,
    })
    conversationId = r.ingest.conversationId ?? conversationId
    if (r.compaction.compacted) sweeps++
    if (!r.compaction.ok) lastFailure = r.compaction.reason
  }
  const elapsed = Date.now() - started
  const stats = await engine.getStats(conversationId)
  const summaries = await engine.getSummaries(conversationId)
  const items = await engine.getContextItems(conversationId)
  const perDepth = {}
  for (const s of summaries) perDepth[s.depth] = (perDepth[s.depth] ?? 0) + 1
  const model = summaries[0]?.model ?? 'none'

  console.log(`lcm-native demo — ${o.db}`)
  console.log(`messages      ${fmt(stats.messageCount)} in ${fmt(turns(messages).length)} turns (${o.input ? o.input : `generated, seed ${o.seed}`})`)
  console.log(`summarizer    ${model}`)
  console.log(`budget        ${fmt(o.budget)} tokens (compaction above ${fmt(Math.floor(0.75 * o.budget))})`)
  console.log(`compaction    ${passes} passes in ${sweeps} threshold sweeps, ${fmt(elapsed)} ms total`)
  if (lastFailure) console.log(`last failure  ${lastFailure}`)
  console.log(`summaries     ${summaries.length} — ${Object.entries(perDepth).map(([d, n]) => `d${d}: ${n}`).join(', ') || 'none'}`)
  console.log(`tokens        ${fmt(stats.messageTokens)} stored → ${fmt(stats.contextTokens)} in context (${items.length} items)`)
  console.log('\nsummary DAG (context order, sources indented):')
  printTree(summaries, items)
  if (typeof engine.assemble === 'function') await printAssembled(engine, sessionId, o.budget)
  else printContextList(items, summaries)
  const check = await engine.integrityCheck()
  console.log(`\nintegrity     ${check.join(', ')}`)
  await engine.close()
}

main().catch((e) => {
  console.error(`demo failed: ${e.code ? e.code + ': ' : ''}${e.message}`)
  process.exit(1)
})
