#!/usr/bin/env node
// grep latency over a large conversation (regex and full_text), with the event
// loop's max delay while the queries run.
//
//   node bench/grep.mjs [--messages 100000] [--seed 1] [--iterations 5] [--no-summaries]
//                       [--keep DIR] [--reopen-only] [--reopens 5] [--no-10k] [--addon FILE]
//
// Ingests the shared generator's workload (gen-workload.mjs) into a temp database
// at 10k messages and at --messages (or reuses DIR/<n>/ from an earlier --keep
// run), then measures restarts (bench/reopen.js, the same code as bench/run.js):
// per scope (one conversation / all) and mode, a fresh LcmEngine.open, the first
// grep right after it (the catalog is still being built in the background), the
// median of the next 20, and the catalog's memory; then what closing costs (a
// close right after open, and the JS thread's time finalizing a closed engine);
// --reopen-only stops there.
// Then it times warm grep calls at --messages end to end from JavaScript (binding
// + core); "core" columns are the engine's own time (elapsedMs), without the
// binding and event-loop hops.
import { createRequire } from 'node:module'
import { createReadStream, mkdtempSync, mkdirSync, readFileSync, existsSync, rmSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execFileSync } from 'node:child_process'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { grepAfterReopen, closeAfterOpen, formatReopen, esc } = require(join(root, 'bench', 'reopen.js'))
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []))
// --addon FILE loads another build of the addon (e.g. a copy of the one before a change).
const { LcmEngine } = args.addon ? require(args.addon) : require(join(root, 'index.js'))
const N = Number(args.messages ?? 100000)
const SEED = Number(args.seed ?? 1)
const ITER = Number(args.iterations ?? 5)

const gen = [join(root, '..', 'shared', 'bench', 'gen-workload.mjs'), join(root, '..', '..', 'shared', 'bench', 'gen-workload.mjs'), join(root, 'bench', 'gen-workload.mjs')].find(existsSync)
if (!gen) throw new Error('gen-workload.mjs not found (../shared/bench)')
const keep = args.keep
// Read line by line: a million-message workload is larger than one JS string.
async function* chunksOf(file, size) {
  let chunk = []
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    if (!line) continue
    chunk.push(JSON.parse(line))
    if (chunk.length === size) {
      yield chunk
      chunk = []
    }
  }
  if (chunk.length) yield chunk
}
const textOf = (m) => (typeof m.content === 'string' ? m.content : (m.content || []).filter((b) => b.type === 'text').map((b) => b.text).join('\n'))

// The database of `n` workload messages: generated and ingested, or reused from an
// earlier --keep run (DIR/<n>/; the workload file alone is reused too).
async function prepare(n) {
  const dir = keep ? join(keep, String(n)) : mkdtempSync(join(tmpdir(), 'lcm-bench-grep-'))
  mkdirSync(dir, { recursive: true })
  const out = join(dir, 'conv.jsonl')
  const needleFile = join(dir, 'needles.jsonl')
  const reuse = keep && existsSync(join(dir, 'lcm.db')) && existsSync(needleFile)
  if (!(existsSync(out) && existsSync(needleFile))) execFileSync(process.execPath, [gen, '--messages', String(n), '--seed', String(SEED), '--out', out, '--needles', needleFile])
  const needles = readFileSync(needleFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const openOpts = { dbPath: join(dir, 'lcm.db'), largeFilesDir: join(dir, 'files') }
  const e = await LcmEngine.open(openOpts)
  // Ingest in chunks of 1000; after each chunk, 10 leaf summaries over its first 1000
  // messages' worth (100 messages each) and one condensed summary over those leaves,
  // so scope "both" searches a realistic summary DAG too (--no-summaries to skip).
  const withSummaries = !process.argv.includes('--no-summaries')
  const t0 = performance.now()
  let conversationId
  let summaryCount = 0
  let i = 0
  for await (const chunk of reuse ? [] : chunksOf(out, 1000)) {
    i += chunk.length
    const r = await e.ingestBatch({ sessionId: 'bench', messages: chunk })
    conversationId = r.conversationId
    if (!withSummaries || chunk.length < 1000) continue
    const ids = r.results.map((x) => x.messageId)
    const leaves = []
    for (let k = 0; k < 10; k++) {
      const part = chunk.slice(k * 100, k * 100 + 100)
      const content = part.map((m) => textOf(m).replace(/\s+/g, ' ').slice(0, 40)).join(' | ')
      leaves.push(await e.insertSummary({ conversationId, content: `Leaf ${(i - 1000) / 100 + k}: ${content}`, messageIds: ids.slice(k * 100, k * 100 + 100) }))
    }
    await e.insertSummary({ conversationId, content: `Condensed ${(i - 1000) / 1000}: ${leaves.join(' ')}`, summaryIds: leaves })
    summaryCount += 11
  }
  const ingestMs = performance.now() - t0
  if (reuse) conversationId = (await e.getConversation({ sessionId: 'bench' })).conversationId
  await e.close()
  return { dir, needles, openOpts, conversationId, summaryCount, ingestMs }
}

const REOPENS = Number(args.reopens ?? 5)
const sizes = process.argv.includes('--no-10k') || N === 10000 ? [N] : [10000, N]
const prepared = []
for (const n of sizes) prepared.push([n, await prepare(n)])
console.log(`grep after a restart, limit 20, ${REOPENS} restarts per scope and mode, medians (bench/reopen.js; ms)`)
for (const [n, p] of prepared) {
  const label = n >= 1e6 ? `${n / 1e6}M` : `${n / 1000}k`
  const rows = await grepAfterReopen({ open: () => LcmEngine.open(p.openOpts), needles: p.needles.map((x) => x.id), conversationId: p.conversationId, runs: REOPENS })
  for (const r of rows) console.log(formatReopen(label, r))
  const c = await closeAfterOpen({ open: () => LcmEngine.open(p.openOpts), runs: REOPENS })
  console.log(`${label.padEnd(5)} close right after open: median ${c.closeMs.toFixed(2)} ms, max ${c.closeMaxMs.toFixed(2)} ms; JS thread held finalizing a closed engine: ${c.finalizeMs.toFixed(2)} ms`)
}
const done = () => {
  if (!keep) for (const [, p] of prepared) rmSync(p.dir, { recursive: true, force: true })
}
if (process.argv.includes('--reopen-only')) {
  done()
  process.exit(0)
}
const { needles, openOpts, conversationId, summaryCount, ingestMs } = prepared[prepared.length - 1][1]
const e = await LcmEngine.open(openOpts)

const ids = needles.map((n) => n.text.match(/NEEDLE-\d+-\d+-\d+/)[0])
const sample = ids.filter((_, i) => i % Math.max(1, Math.floor(ids.length / 40)) === 0).slice(0, 40)

const rssBefore = process.memoryUsage().rss
let t0 = performance.now()
const cold = await e.grep({ pattern: esc(sample[0]), conversationId })
const coldMs = performance.now() - t0
const built = await e.warmRecallIndex()
const rssAfter = process.memoryUsage().rss

const sets = [
  ['regex', 'needle ids (literal)', sample.map(esc)],
  ['regex', 'needle ids, case-insensitive', sample.map((s) => `(?i)${esc(s.toLowerCase())}`)],
  ['regex', 'error strings', ['ECONNRESET', 'SQLITE_BUSY: database is locked', 'panic: index out of range', 'Too Many Requests \\(retry-after: \\d+\\)']],
  ['regex', 'word + class', ['rollback \\w+ incident', 'invoice (draft|report)', 'flight_\\d+ =']],
  ['regex', 'no literal (bounded scan)', ['\\(\\d{4}\\);\\n\\s+fn']],
  ['full_text', 'needle ids', sample],
  ['full_text', 'rare words', ['ECONNRESET', '"database is locked"', 'refusing unrelated']],
  ['full_text', 'common words', ['invoice', 'rollback incident', 'flight hotel', 'the']],
]

const pct = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]
const h = monitorEventLoopDelay({ resolution: 1 })
h.enable()
const rows = []
for (const [mode, label, patterns] of sets) {
  const times = []
  const core = []
  let hits = 0
  let scanned = 0
  let truncated = false
  for (let it = 0; it < ITER; it++) {
    for (const pattern of patterns) {
      const s = performance.now()
      const r = await e.grep({ pattern, mode, conversationId, limit: 50 })
      times.push(performance.now() - s)
      core.push(r.elapsedMs)
      if (it === 0) {
        hits += r.totalMatches
        scanned = Math.max(scanned, r.messageStats.scanned, r.summaryStats.scanned)
        truncated ||= r.truncated
      }
    }
  }
  rows.push({ mode, queries: label, n: times.length, p50: pct(times, 50), p99: pct(times, 99), max: Math.max(...times), c50: pct(core, 50), c99: pct(core, 99), hits, maxScanned: scanned, truncated })
}
h.disable()

console.log(`grep bench: ${N} messages (seed ${SEED}) + ${summaryCount} summaries, ingest ${(ingestMs / 1000).toFixed(1)} s, needles ${needles.length}, scope "both", limit 50`)
console.log(`first grep after open: ${coldMs.toFixed(1)} ms, found ${cold.totalMatches}; catalog ${(built.indexBytes / 1048576).toFixed(1)} MiB for ${built.indexedMessages} messages (process RSS +${((rssAfter - rssBefore) / 1048576).toFixed(1)} MiB incl. SQLite page cache)`)
console.log('')
console.log('mode       queries                        calls   p50 ms   p99 ms   max ms  core p50  core p99   hits  max scanned  truncated')
for (const r of rows) {
  console.log(`${r.mode.padEnd(10)} ${r.queries.padEnd(30)} ${String(r.n).padStart(5)} ${r.p50.toFixed(2).padStart(8)} ${r.p99.toFixed(2).padStart(8)} ${r.max.toFixed(2).padStart(8)} ${r.c50.toFixed(2).padStart(9)} ${r.c99.toFixed(2).padStart(9)} ${String(r.hits).padStart(6)} ${String(r.maxScanned).padStart(12)}  ${r.truncated}`)
}
console.log('')
console.log(`event loop delay while querying: max ${(h.max / 1e6).toFixed(2)} ms, p99 ${(h.percentile(99) / 1e6).toFixed(2)} ms, mean ${(h.mean / 1e6).toFixed(2)} ms`)
await e.close()
done()
