#!/usr/bin/env node
// Ingest throughput: one awaited ingestBatch per turn (what an agent does), on the
// shared seeded workload, interleaved run by run with the raw-SQLite reference of
// the same rows (commit per turn, one transaction), so every ratio compares figures
// of the same moment. Prints msgs/s, MB/s, event-loop delay, bytes/message (file
// size after close, as `bench/run.js` measures it, and dbstat per table/index).
//   node bench/ingest.mjs [--messages 10000] [--seed 1] [--runs 3] [--sessions 8]
//                         [--profile fastrelease]
// --sessions K adds the run of K sessions ingesting concurrently (one awaited batch
// per session per turn, all K in flight at once: group commit), compared with raw
// one-transaction and with raw committing once per K turns (the most K awaiting
// sessions can put in one commit). The raw reference is target/<triple>/<profile>/examples/raw_sqlite
// (`cargo build --profile <profile> --example raw_sqlite`); without it only our
// figures print.
import { createRequire } from 'node:module'
import { mkdtempSync, writeFileSync, statSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execFileSync } from 'node:child_process'
import { monitorEventLoopDelay } from 'node:perf_hooks'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { LcmEngine } = require(join(root, 'index.js'))
const { targetTriple } = require(join(root, 'scripts', 'platform.js'))
const { generator, readJsonl, toTurns, stolenCpuMs, stolenShare } = require('./common.js')
const argv = process.argv
const arg = (k, d) => { const i = argv.indexOf(k); return i > 0 ? argv[i + 1] : d }
const N = Number(arg('--messages', 10000)), SEED = Number(arg('--seed', 1)), RUNS = Number(arg('--runs', 3))
const SESSIONS = Number(arg('--sessions', 0))
const PROFILE = arg('--profile', 'fastrelease')
const rawBin = join(root, 'target', targetTriple(), PROFILE, 'examples', 'raw_sqlite')

/** The seeded workload: its messages, JSONL bytes and the JSONL file (kept in `dir`). */
export function loadWorkload(n, seed, dir = mkdtempSync(join(tmpdir(), 'lcm-bench-'))) {
  const out = join(dir, 'conv.jsonl')
  execFileSync(process.execPath, [generator(), '--messages', String(n), '--seed', String(seed), '--out', out])
  return { messages: readJsonl(out), bytes: statSync(out).size, file: out }
}

function dbBytes(path) {
  let total = 0
  for (const suffix of ['', '-wal', '-shm']) if (existsSync(path + suffix)) total += statSync(path + suffix).size
  return total
}

function tables(path, count) {
  if (!existsSync(rawBin)) return null
  const out = execFileSync(rawBin, ['dbstat', path], { encoding: 'utf8' })
  const by = {}
  for (const m of out.matchAll(/name=(\S+) bytes=(\d+)/g)) by[m[1]] = Number(m[2]) / count
  return by
}

async function run(turns, bytes, sessions, work) {
  const dir = mkdtempSync(join(work, 'db-'))
  const dbPath = join(dir, 'lcm.db')
  const engine = await LcmEngine.open({ dbPath })
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  const steal0 = stolenCpuMs()
  const t0 = performance.now()
  let count = 0
  const marks = []
  const ids = Array.from({ length: Math.max(1, sessions) }, (_, k) => (sessions ? `bench-${k}` : 'bench'))
  for (const turn of turns) {
    if (ids.length === 1) await engine.ingestBatch({ sessionId: ids[0], messages: turn })
    else await Promise.all(ids.map((sessionId) => engine.ingestBatch({ sessionId, messages: turn })))
    count += turn.length * ids.length
    if (marks.length < Math.floor(count / ((N * ids.length) / 4))) marks.push({ count, ms: performance.now() - t0 })
  }
  const secs = (performance.now() - t0) / 1000
  const stolen = stolenShare(steal0, stolenCpuMs(), secs * 1000)
  h.disable()
  await engine.close()
  const size = dbBytes(dbPath)
  const perTable = tables(dbPath, count)
  rmSync(dir, { recursive: true })
  return { msgsPerSec: count / secs, mbPerSec: (bytes * ids.length) / 1e6 / secs, loopMax: h.max / 1e6, loopP99: h.percentile(99) / 1e6, bytesPerMsg: size / count, marks, perTable, stolenPct: stolen === undefined ? undefined : 100 * stolen }
}

/** Raw SQLite's rate for the same rows: `args` says how often it commits. */
function raw(file, work, args) {
  const dir = mkdtempSync(join(work, 'raw-'))
  const out = execFileSync(rawBin, ['insert', file, join(dir, 'raw.db'), ...args], { encoding: 'utf8' })
  rmSync(dir, { recursive: true })
  return Number(/msgs_per_sec=(\d+)/.exec(out)[1])
}

const stat = (xs) => { const s = [...xs].sort((a, b) => a - b); return { min: s[0], median: s[Math.floor(s.length / 2)], max: s[s.length - 1] } }

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const work = mkdtempSync(join(tmpdir(), 'lcm-bench-'))
  const { messages, bytes, file } = loadWorkload(N, SEED, work)
  const turns = toTurns(messages)
  console.log(`workload: ${messages.length} messages in ${turns.length} turns, ${(bytes / 1e6).toFixed(1)} MB JSONL`)
  const hasRaw = existsSync(rawBin)
  const ours = [], multi = [], rawTurn = [], rawOne = [], rawK = []
  for (let i = 0; i < RUNS; i++) {
    ours.push(await run(turns, bytes, 0, work))
    if (hasRaw) rawTurn.push(raw(file, work, ['--per-turn']))
    if (SESSIONS) multi.push(await run(turns, bytes, SESSIONS, work))
    if (hasRaw) rawOne.push(raw(file, work, []))
    // K awaiting sessions make at best one commit per round of their turns.
    if (hasRaw && SESSIONS) rawK.push(raw(file, work, ['--turns-per-commit', String(SESSIONS)]))
  }
  const line = (name, s, digits = 0) =>
    console.log(`${name.padEnd(36)} ${s.min.toFixed(digits).padStart(10)} ${s.median.toFixed(digits).padStart(10)} ${s.max.toFixed(digits).padStart(10)}`)
  const row = (name, rs, key, digits = 0) => line(name, stat(rs.map((r) => r[key])), digits)
  console.log(`${'metric'.padEnd(36)} ${'min'.padStart(10)} ${'median'.padStart(10)} ${'max'.padStart(10)}`)
  row('ingest msgs/s (awaited, per turn)', ours, 'msgsPerSec')
  row('ingest MB/s', ours, 'mbPerSec', 2)
  row('event-loop max delay ms', ours, 'loopMax', 2)
  row('event-loop p99 delay ms', ours, 'loopP99', 2)
  row('db bytes/message', ours, 'bytesPerMsg')
  // The hypervisor's steal during the runs (see stolenCpuMs in common.js).
  if (ours.every((r) => r.stolenPct !== undefined)) row('CPU the host took meanwhile %', ours, 'stolenPct', 1)
  if (SESSIONS) row(`${SESSIONS} sessions concurrently msgs/s`, multi, 'msgsPerSec')
  if (hasRaw) {
    line('raw SQLite, commit per turn msgs/s', stat(rawTurn))
    line('raw SQLite, one transaction msgs/s', stat(rawOne))
    if (SESSIONS) line(`raw SQLite, commit per ${SESSIONS} turns msgs/s`, stat(rawK))
    // Ratios of the same round, then their median: load drifts between rounds.
    const ratio = (a, b) => stat(a.map((x, i) => x / b[i]))
    line('ours / raw per turn (target ≥ 2)', ratio(ours.map((r) => r.msgsPerSec), rawTurn), 2)
    if (SESSIONS) line(`${SESSIONS} sessions / raw one txn (target ≥ 1)`, ratio(multi.map((r) => r.msgsPerSec), rawOne), 2)
    if (SESSIONS) line(`${SESSIONS} sessions / raw per ${SESSIONS} turns (same commits)`, ratio(multi.map((r) => r.msgsPerSec), rawK), 2)
  }
  const m = ours[ours.length - 1].marks
  const rates = m.map((x, i) => ((x.count - (i ? m[i - 1].count : 0)) / ((x.ms - (i ? m[i - 1].ms : 0)) / 1000)).toFixed(0))
  console.log(`rate by quarter (last run): ${rates.join(' → ')} msgs/s`)
  const t = ours[0].perTable
  if (t) {
    const named = Object.entries(t).sort((a, b) => b[1] - a[1])
    console.log(`bytes/msg per table and index (dbstat, first run; Σ ${named.reduce((a, [, b]) => a + b, 0).toFixed(0)}):`)
    for (const [name, b] of named) if (b >= 1) console.log(`  ${name.padEnd(40)} ${b.toFixed(0).padStart(6)}`)
  }
  if (argv.includes('--json')) writeFileSync(arg('--json'), JSON.stringify({ ours, multi, rawTurn, rawOne, rawK }, null, 1))
  rmSync(work, { recursive: true, force: true })
}
