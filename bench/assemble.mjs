#!/usr/bin/env node
// Context assembly latency on a large conversation after a compaction sweep.
//
//   node bench/assemble.mjs [--messages 100000] [--iterations 300] [--seed 1] [--db path]
//
// With --db, an existing file from an earlier run is reused (delete it to rebuild).
//
// Builds the conversation with the shared workload generator, then mimics a sweep
// with insertSummary: every 240 messages become 8 leaves of 30 messages, condensed
// into one depth-1 node; the newest messages stay raw (the fresh tail). Then it
// times `assemble` at 32k and 200k token budgets (p50 / p99 / max) and reports the
// largest event-loop delay seen while assembling (perf_hooks.monitorEventLoopDelay).
import { createRequire } from 'node:module'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execFileSync } from 'node:child_process'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const { LcmEngine } = createRequire(import.meta.url)(join(root, 'index.js'))
const { readJsonl } = createRequire(import.meta.url)('./common.js')

const LEAF_RUN = 30
const FANOUT = 8
const RAW_TAIL = 100
const BUDGETS = [32_000, 200_000]

function options() {
  const o = { messages: 100_000, iterations: 300, seed: 1, db: null }
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '')
    if (!(key in o)) throw new Error(`unknown option ${argv[i]}`)
    o[key] = key === 'db' ? argv[i + 1] : Number(argv[i + 1])
  }
  return o
}

function generate(n, seed, dir) {
  // The vendored copy, else the shared one in a parent directory (worktrees sit deeper).
  const candidates = [join(root, 'bench', 'gen-workload.mjs')]
  for (let up = join(root, '..'); up !== dirname(up); up = dirname(up)) candidates.push(join(up, 'shared', 'bench', 'gen-workload.mjs'))
  const script = candidates.find(existsSync)
  if (!script) throw new Error('gen-workload.mjs not found (bench/ or a parent shared/bench/)')
  const out = join(dir, 'conv.jsonl')
  execFileSync(process.execPath, [script, '--messages', String(n), '--seed', String(seed), '--out', out], { maxBuffer: 1 << 30 })
  return readJsonl(out)
}

/** Deterministic summary-like prose of about `chars` characters. */
function prose(label, chars, seed) {
  const words = 'deploy config schema migration retry budget cache index worker queue latency error fix review release branch test rollback metric alert decision'.split(' ')
  let x = seed >>> 0
  const parts = [`${label}:`]
  let len = parts[0].length
  while (len < chars) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0
    const w = words[x % words.length]
    parts.push(w)
    len += w.length + 1
  }
  return `${parts.join(' ')}.\nExpand for details about: exact commands, error output, config values`
}

async function build(e, messages) {
  let conversationId
  let leaves = 0
  let condensed = 0
  const chunk = LEAF_RUN * FANOUT
  const summarizedUpTo = Math.floor((messages.length - RAW_TAIL) / chunk) * chunk
  for (let start = 0; start < messages.length; start += chunk) {
    const batch = messages.slice(start, start + chunk)
    const r = await e.ingestBatch({ sessionId: 'bench', messages: batch })
    conversationId = r.conversationId
    if (start + chunk > summarizedUpTo) continue
    const ids = r.results.map((x) => x.messageId)
    const leafIds = []
    for (let k = 0; k < FANOUT; k++) {
      const content = prose(`Leaf ${leaves}`, 1100, leaves)
      leafIds.push(await e.insertSummary({ conversationId, content, messageIds: ids.slice(k * LEAF_RUN, (k + 1) * LEAF_RUN) }))
      leaves++
    }
    await e.insertSummary({ conversationId, content: prose(`Condensed ${condensed}`, 1800, 1e6 + condensed), summaryIds: leafIds })
    condensed++
  }
  return { conversationId, leaves, condensed }
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

async function measure(e, budget, iterations) {
  for (let i = 0; i < 20; i++) await e.assemble({ sessionId: 'bench', tokenBudget: budget })
  const times = []
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  const elu0 = performance.eventLoopUtilization()
  const t0 = performance.now()
  let last
  for (let i = 0; i < iterations; i++) {
    const t = performance.now()
    last = await e.assemble({ sessionId: 'bench', tokenBudget: budget })
    times.push(performance.now() - t)
  }
  const elu = performance.eventLoopUtilization(elu0)
  const wall = performance.now() - t0
  h.disable()
  times.sort((a, b) => a - b)
  return {
    budget,
    p50: pct(times, 50),
    p99: pct(times, 99),
    max: times[times.length - 1],
    jsThreadPerCall: (elu.utilization * wall) / iterations,
    loopDelayMax: h.max / 1e6,
    loopDelayP99: h.percentile(99) / 1e6,
    out: last,
  }
}

/** Event-loop delay while the loop only waits on timers: the machine's own noise. */
async function baseline(ms) {
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  await new Promise((resolve) => setTimeout(resolve, ms))
  h.disable()
  return { max: h.max / 1e6, p99: h.percentile(99) / 1e6 }
}

async function main() {
  const o = options()
  // The generated workload, and the database unless --db names one: removed at the end.
  const dir = mkdtempSync(join(tmpdir(), 'lcm-bench-assemble-'))
  try {
    await run(o, dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function run(o, dir) {
  const dbPath = o.db ?? join(dir, 'lcm.db')
  const t0 = performance.now()
  const reuse = o.db && existsSync(o.db)
  const e = await LcmEngine.open({ dbPath })
  let conversationId
  if (reuse) {
    conversationId = (await e.getConversation({ sessionId: 'bench' }))?.conversationId
    if (!conversationId) throw new Error(`${o.db} has no bench conversation; remove it to rebuild`)
    const stats = await e.getStats(conversationId)
    console.log(`reusing ${o.db}: ${stats.messageCount} messages, ${stats.summaryCount} summaries`)
  } else {
    const messages = generate(o.messages, o.seed, dir)
    const built = await build(e, messages)
    conversationId = built.conversationId
    console.log(
      `built ${messages.length} messages, ${built.leaves} leaves, ${built.condensed} condensed nodes in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    )
  }
  const items = await e.getContextItems(conversationId)
  console.log(`context list: ${items.length} items (${items.filter((i) => i.itemType === 'summary').length} summaries)`)
  for (const budget of BUDGETS) {
    const r = await measure(e, budget, o.iterations)
    const s = r.out.stats
    console.log(
      `budget ${String(budget).padStart(6)}: p50 ${r.p50.toFixed(3)} ms  p99 ${r.p99.toFixed(3)} ms  max ${r.max.toFixed(3)} ms  | ` +
        `JS-thread busy ${r.jsThreadPerCall.toFixed(3)} ms/call  | ` +
        `event-loop delay max ${r.loopDelayMax.toFixed(3)} ms (p99 ${r.loopDelayP99.toFixed(3)} ms)  | ` +
        `${r.out.messages.length} messages (${s.summariesIncluded} summaries, ${s.messagesIncluded} raw), ${r.out.estimatedTokens} tokens, ${s.droppedForBudget} dropped`,
    )
  }
  const idle = await baseline(2000)
  console.log(`idle baseline (2 s of timers only): event-loop delay max ${idle.max.toFixed(3)} ms (p99 ${idle.p99.toFixed(3)} ms) — the machine's own scheduling noise`)
  await e.close()
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
