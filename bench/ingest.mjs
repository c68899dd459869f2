#!/usr/bin/env node
// Ingest throughput: one awaited ingestBatch per turn (what an agent does), on the
// shared seeded workload. Prints msgs/s, MB/s, event-loop delay and bytes/message.
//   node bench/ingest.mjs [--messages 10000] [--seed 1] [--runs 3]
import { createRequire } from 'node:module'
import { mkdtempSync, readFileSync, statSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execFileSync } from 'node:child_process'
import { monitorEventLoopDelay } from 'node:perf_hooks'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const { LcmEngine } = createRequire(import.meta.url)(join(root, 'index.js'))
const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? Number(process.argv[i + 1]) : d }
const N = arg('--messages', 10000), SEED = arg('--seed', 1), RUNS = arg('--runs', 3)

function generator() {
  const shared = join(root, '..', 'shared', 'bench', 'gen-workload.mjs')
  return existsSync(shared) ? shared : join(root, 'bench', 'gen-workload.mjs')
}

export function loadWorkload(n, seed) {
  const dir = mkdtempSync(join(tmpdir(), 'lcm-bench-'))
  const out = join(dir, 'conv.jsonl')
  execFileSync(process.execPath, [generator(), '--messages', String(n), '--seed', String(seed), '--out', out])
  const text = readFileSync(out, 'utf8')
  const messages = text.split('\n').filter(Boolean).map((l) => JSON.parse(l))
  rmSync(dir, { recursive: true })
  return { messages, bytes: Buffer.byteLength(text) }
}

export function toTurns(messages) {
  const out = []
  for (const m of messages) {
    if (m.role === 'user' || out.length === 0) out.push([])
    out[out.length - 1].push(m)
  }
  return out
}

function dbBytes(path) {
  let total = 0
  for (const suffix of ['', '-wal', '-shm']) if (existsSync(path + suffix)) total += statSync(path + suffix).size
  return total
}

async function run(turns, bytes) {
  const dir = mkdtempSync(join(tmpdir(), 'lcm-bench-db-'))
  const dbPath = join(dir, 'lcm.db')
  const engine = await LcmEngine.open({ dbPath })
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  const t0 = performance.now()
  let count = 0
  const marks = []
  for (const turn of turns) {
    await engine.ingestBatch({ sessionId: 'bench', messages: turn })
    count += turn.length
    if (marks.length < Math.floor(count / (N / 4))) marks.push({ count, ms: performance.now() - t0 })
  }
  const secs = (performance.now() - t0) / 1000
  h.disable()
  await engine.close()
  const size = dbBytes(dbPath)
  rmSync(dir, { recursive: true })
  return { msgsPerSec: count / secs, mbPerSec: bytes / 1e6 / secs, loopMax: h.max / 1e6, loopP99: h.percentile(99) / 1e6, bytesPerMsg: size / count, marks }
}

const stat = (xs) => { const s = [...xs].sort((a, b) => a - b); return { min: s[0], median: s[Math.floor(s.length / 2)], max: s[s.length - 1] } }

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { messages, bytes } = loadWorkload(N, SEED)
  const turns = toTurns(messages)
  console.log(`workload: ${messages.length} messages in ${turns.length} turns, ${(bytes / 1e6).toFixed(1)} MB JSONL`)
  const results = []
  for (let i = 0; i < RUNS; i++) results.push(await run(turns, bytes))
  const row = (name, key, digits = 0) => {
    const s = stat(results.map((r) => r[key]))
    console.log(`${name.padEnd(28)} ${s.min.toFixed(digits).padStart(10)} ${s.median.toFixed(digits).padStart(10)} ${s.max.toFixed(digits).padStart(10)}`)
  }
  console.log(`${'metric'.padEnd(28)} ${'min'.padStart(10)} ${'median'.padStart(10)} ${'max'.padStart(10)}`)
  row('ingest msgs/s', 'msgsPerSec')
  row('ingest MB/s', 'mbPerSec', 2)
  row('event-loop max delay ms', 'loopMax', 2)
  row('event-loop p99 delay ms', 'loopP99', 2)
  row('db bytes/message', 'bytesPerMsg')
  const m = results[results.length - 1].marks
  const rates = m.map((x, i) => ((x.count - (i ? m[i - 1].count : 0)) / ((x.ms - (i ? m[i - 1].ms : 0)) / 1000)).toFixed(0))
  console.log(`rate by quarter (last run): ${rates.join(' → ')} msgs/s`)
}
