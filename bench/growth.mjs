#!/usr/bin/env node
// Growth simulation: N simulated days of one gateway ingested through the engine with
// compaction (the offline summarizer), printing the database's bytes per table and
// index (SQLite's dbstat, through `engine.storageStats({ tables: true })`) at days 7,
// 30, 60 and 120, bytes per message and per day.
//
//   node bench/growth.mjs [--days 120] [--scale 1] [--seed 1] [--budget 64000]
//                         [--json out.json] [--backup] [--policy cron[,heartbeat]] [--keep]
//
// The gateway: a main chat, four agents, an hourly cron job (one new session per run,
// as OpenClaw's cron does) and a heartbeat every 30 minutes (its own session, stored:
// the worst case, when the host does not flag heartbeat turns). Messages come from the
// shared seeded generator (bench/gen-workload.mjs: tool outputs of KBs, every 400th
// tool result a large file dump, which the engine externalizes to largeFilesDir).
//
// Full scale (--scale 1) per day: main 120 messages, each agent 40, cron 24 runs of
// ~10 messages, heartbeat 48 turns of 2 messages (≈ 616 messages/day, 74k in 120
// days). --scale s multiplies every stream's messages per day and the cron and
// heartbeat runs per day by s; every run keeps its size. Bytes per message do not
// depend on the scale; bytes per day at full scale are the printed figure / s.
//
// --policy: retention on, applied once per simulated day (`engine.prune` with the
// day's end as `now`): `cron` archives and prunes cron runs idle more than 7 days,
// `heartbeat` the heartbeat session idle more than 2 days (it never is: it runs
// every 30 minutes; shown to make the point). Archive bytes are printed beside.
//
// --backup: at the end, the online backup of the final database (time, size) and
// the p99 of awaited ingestBatch calls from a writer meanwhile against the same
// writer without a backup running.
import { createRequire } from 'node:module'
import { mkdtempSync, statSync, existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execFileSync } from 'node:child_process'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { LcmEngine } = require(join(root, 'index.js'))
const { generator, readJsonl, toTurns } = require('./common.js')

const argv = process.argv
const arg = (k, d) => { const i = argv.indexOf(k); return i > 0 ? argv[i + 1] : d }
const DAYS = Number(arg('--days', 120))
const SCALE = Number(arg('--scale', 1))
const SEED = Number(arg('--seed', 1))
const BUDGET = Number(arg('--budget', 64000))
const JSON_OUT = arg('--json', null)
const POLICIES = { cron: { match: 'agent:*:cron:**', pruneAfterDays: 7 }, heartbeat: { match: 'agent:*:heartbeat', pruneAfterDays: 2 } }
const retention = (arg('--policy', '') || '').split(',').filter(Boolean).map((k) => {
  if (!POLICIES[k]) throw new Error(`--policy: unknown ${k} (cron, heartbeat)`)
  return POLICIES[k]
})
const MARKS = [7, 30, 60, 120].filter((d) => d <= DAYS)
if (!MARKS.includes(DAYS)) MARKS.push(DAYS)

const DAY_MS = 86_400_000
const T0 = Date.UTC(2026, 7, 10, 0, 0, 0)

const work = mkdtempSync(join(tmpdir(), 'lcm-growth-'))
function pool(n, seed) {
  const out = join(work, `pool-${seed}.jsonl`)
  execFileSync(process.execPath, [generator(), '--messages', String(Math.max(2, Math.ceil(n))), '--seed', String(seed), '--out', out])
  return toTurns(readJsonl(out))
}

// A stream hands out whole turns from its seeded pool until a day's quota is met.
function stream(name, sessionKey, perDay, seed) {
  const turns = pool(perDay * DAYS * 1.05 + 50, seed)
  let next = 0
  return { name, sessionKey, perDay, take(quota) {
    const out = []
    let n = 0
    while (n < quota && next < turns.length) { out.push(turns[next]); n += turns[next].length; next++ }
    return out
  } }
}

const streams = [
  stream('main', 'agent:main:main', 120 * SCALE, SEED),
  ...[1, 2, 3, 4].map((k) => stream(`agent${k}`, `agent:agent${k}:main`, 40 * SCALE, SEED + k)),
]
const CRON_RUNS = Math.max(1, Math.round(24 * SCALE))
const HEARTBEATS = Math.max(1, Math.round(48 * SCALE))
const cronPool = pool(CRON_RUNS * DAYS * 10 * 1.1 + 50, SEED + 100)
let cronNext = 0

const dbDir = join(work, 'db')
const dbPath = join(dbDir, 'lcm.db')
const largeFilesDir = join(dbDir, 'large-files')
const archiveDir = join(work, 'archive')
const engine = await LcmEngine.open({ dbPath, largeFilesDir, archiveDir, ...(retention.length ? { retention } : {}) })
let pruned = 0

let messages = 0
let conversations = 0
const seen = new Set()
function stamp(turn, at) {
  return turn.map((m, i) => ({ ...m, timestamp: at + i * 1000 }))
}
async function turnOf(sessionKey, turn, at) {
  const sessionId = sessionKey
  if (!seen.has(sessionId)) { seen.add(sessionId); conversations++ }
  const msgs = stamp(turn, at)
  await engine.afterTurn({ sessionId, sessionKey, messages: msgs, prePromptMessageCount: 0, tokenBudget: BUDGET })
  messages += msgs.length
}

function dirBytes(dir) {
  if (!existsSync(dir)) return 0
  let total = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    total += e.isDirectory() ? dirBytes(p) : statSync(p).size
  }
  return total
}

// Group a table's FTS shadow tables and a table's indexes under one heading.
function family(name) {
  if (name.startsWith('messages_fts')) return 'messages_fts*'
  if (name.startsWith('summaries_fts_cjk')) return 'summaries_fts_cjk*'
  if (name.startsWith('summaries_fts')) return 'summaries_fts*'
  return name
}

const rows = []
const t0 = performance.now()
for (let day = 1; day <= DAYS; day++) {
  const start = T0 + (day - 1) * DAY_MS
  // Interleave the day's work in time order: chat streams spread over waking hours.
  for (const s of streams) {
    const turns = s.take(s.perDay)
    turns.forEach((t, i) => { t.at = start + 8 * 3600_000 + Math.floor((i / Math.max(1, turns.length)) * 14 * 3600_000) })
    for (const t of turns) await turnOf(s.sessionKey, t, t.at)
  }
  for (let r = 0; r < CRON_RUNS; r++) {
    const at = start + Math.floor((r / CRON_RUNS) * DAY_MS)
    const run = []
    let n = 0
    while (n < 8 && cronNext < cronPool.length) { run.push(...cronPool[cronNext]); n += cronPool[cronNext].length; cronNext++ }
    await turnOf(`agent:main:cron:hourly-report:run:${day}-${r}`, [{ role: 'user', content: 'Run the hourly report: check the dashboards and summarize anything unusual.', timestamp: at }, ...run], at)
  }
  for (let h = 0; h < HEARTBEATS; h++) {
    const at = start + Math.floor((h / HEARTBEATS) * DAY_MS)
    await turnOf('agent:main:heartbeat', [
      { role: 'user', content: 'Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. Do not infer or repeat old tasks from prior chats. If nothing needs attention, reply HEARTBEAT_OK.', timestamp: at },
      { role: 'assistant', content: [{ type: 'text', text: 'HEARTBEAT_OK' }], timestamp: at + 1000 },
    ], at)
  }
  if (retention.length) {
    const r = await engine.prune({ now: new Date(start + DAY_MS).toISOString(), limit: 100000 })
    pruned += r.messagesRemoved
  }
  if (MARKS.includes(day)) {
    // Messages' full-text rows are written when the writer is idle or a search asks
    // (deferred indexing): a full-text search first, so the index is complete.
    await engine.grep({ pattern: 'flush', mode: 'full_text', allConversations: true, limit: 1 })
    const stats = await engine.storageStats({ tables: true })
    const fam = {}
    for (const t of stats.tables) fam[family(t.name)] = (fam[family(t.name)] ?? 0) + t.bytes
    const files = dirBytes(largeFilesDir)
    const archived = dirBytes(archiveDir)
    const row = { day, messages, conversations, pruned, dbBytes: stats.databaseBytes, freePages: stats.freelistCount, largeFileBytes: files, archiveBytes: archived, tables: fam, elapsedS: (performance.now() - t0) / 1000 }
    rows.push(row)
    console.log(`day ${day}: ${messages} messages ingested in ${conversations} conversations${retention.length ? ` (${pruned} pruned to ${(archived / 1e6).toFixed(1)} MB of archives)` : ''}, db ${(stats.databaseBytes / 1e6).toFixed(1)} MB (${(stats.databaseBytes / messages).toFixed(0)} B per ingested msg, ${(stats.databaseBytes / day / 1e6 / SCALE).toFixed(2)} MB/day at full scale), large files ${(files / 1e6).toFixed(1)} MB, ${row.elapsedS.toFixed(0)} s`)
  }
}

const last = rows[rows.length - 1]
console.log('\nbytes per message by table (FTS shadow tables grouped; indexes under their own names):')
const names = Object.keys(last.tables).sort((a, b) => last.tables[b] - last.tables[a])
console.log(['table', ...rows.map((r) => `day ${r.day}`), 'share'].join('\t'))
for (const n of names) {
  console.log([n.padEnd(36), ...rows.map((r) => ((r.tables[n] ?? 0) / r.messages).toFixed(0)), `${(100 * last.tables[n] / last.dbBytes).toFixed(1)}%`].join('\t'))
}

let backup = null
if (argv.includes('--backup')) backup = await backupRun()
await engine.close()
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify({ days: DAYS, scale: SCALE, seed: SEED, budget: BUDGET, rows, backup }, null, 2))
if (argv.includes('--keep')) console.log(`kept ${dbPath}`)
else rmSync(work, { recursive: true, force: true })

// Writer latency with and without a backup running, on the simulated database.
async function backupRun() {
  const extra = pool(4000, SEED + 500)
  let k = 0
  async function writer(ms) {
    const lat = []
    const until = performance.now() + ms
    while (performance.now() < until) {
      const t = extra[k++ % extra.length]
      const s = performance.now()
      await engine.ingestBatch({ sessionId: 'bench-writer', messages: t })
      lat.push(performance.now() - s)
    }
    return lat
  }
  const p99 = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] }
  const quiet = await writer(3000)
  const dest = join(work, 'backup.db')
  const b0 = performance.now()
  let report
  const during = []
  const bk = engine.backup({ to: dest }).then((r) => { report = r })
  while (!report) {
    const t = extra[k++ % extra.length]
    const s = performance.now()
    await engine.ingestBatch({ sessionId: 'bench-writer', messages: t })
    during.push(performance.now() - s)
  }
  await bk
  const out = { bytes: report.bytes, ms: performance.now() - b0, steps: report.steps, longestStepMs: report.longestStepMs, writerP99QuietMs: p99(quiet), writerP99DuringMs: p99(during), writesDuring: during.length }
  console.log(`\nbackup of ${(report.bytes / 1e6).toFixed(1)} MB: ${out.ms.toFixed(0)} ms (${report.steps} steps, longest ${report.longestStepMs.toFixed(1)} ms, integrity ${report.integrity.join(',')}); writer p99 ${out.writerP99QuietMs.toFixed(2)} ms without, ${out.writerP99DuringMs.toFixed(2)} ms during (${during.length} writes)`)
  return out
}
