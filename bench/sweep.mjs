#!/usr/bin/env node
// Full-sweep overhead, as bench/run.js measures it ("full sweep 10k" and "full
// sweep <big>" rows): ingest the seeded workload per turn, then one
// `compact({ mode: 'sweep', force: true })` with the instant deterministic callback
// summarizer, whose time is subtracted (wall − summarizer), per 10k messages; plus
// the event loop's max / p99 during the sweep beside an idle baseline of this
// process, and its p99 with the same waits replayed without the engine.
//
//   node bench/sweep.mjs [--big 100000] [--no-10k] [--no-big] [--runs 1] [--seed 1]
//                        [--addon path/to/lcm-native.node] [--confined]
//
// --confined keeps the engine's threads off one CPU during each sweep, as the
// second sweep of bench/run.js does (confineEngineThreads in common.js).
//
// --addon loads that addon file instead of the worktree's (e.g. a copy of the
// previous build, for a before/after from the same machine state: interleave runs).
// Workloads are cached under .tmp/bench-sweep/ (delete it when done).
import { createRequire } from 'node:module'
import { mkdtempSync, mkdirSync, existsSync, rmSync } from 'node:fs'
import { join, dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execFileSync } from 'node:child_process'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { generator, readJsonl, measureLoop, sweepRun } = require('./common.js')

const argv = process.argv.slice(2)
const opt = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d)
const BIG = Number(opt('--big', 100000))
const RUNS = Number(opt('--runs', 1))
const SEED = Number(opt('--seed', 1))
const addon = opt('--addon')
const CONFINED = argv.includes('--confined')
const { LcmEngine } = require(addon ? resolve(addon) : join(root, 'index.js'))

const cache = join(root, '.tmp', 'bench-sweep')
mkdirSync(cache, { recursive: true })
function workload(n) {
  const file = join(cache, `conv-${n}-${SEED}.jsonl`)
  if (!existsSync(file)) execFileSync(process.execPath, [generator(), '--messages', String(n), '--seed', String(SEED), '--out', file])
  return readJsonl(file)
}

const idle = await measureLoop(() => new Promise((r) => setTimeout(r, 1000)))
console.log(`addon: ${addon ?? 'worktree'}; event loop idle (1 s): max ${idle.loopMax.toFixed(2)} ms, p99 ${idle.loopP99.toFixed(2)} ms`)
const sizes = [...(argv.includes('--no-10k') ? [] : [10000]), ...(argv.includes('--no-big') ? [] : [BIG])]
const fmt = (v, d = 0) => v.toFixed(d).padStart(9)
console.log(`${'messages'.padStart(9)} ${'passes'.padStart(9)} ${'wall ms'.padStart(9)} ${'summ. ms'.padStart(9)} ${'overhead'.padStart(9)} ${'per 10k'.padStart(9)} ${'loop max'.padStart(9)} ${'loop p99'.padStart(9)} ${'replay'.padStart(9)} ${'cpu ms'.padStart(9)}`)
for (const n of sizes) {
  const messages = workload(n)
  for (let r = 0; r < RUNS; r++) {
    const dir = mkdtempSync(join(cache, 'db-'))
    try {
      const s = await sweepRun(LcmEngine, join(dir, 'lcm.db'), messages, { confined: CONFINED })
      if (!s) {
        console.log('cannot keep the engine off one CPU here (one CPU, or no taskset)')
        process.exit(1)
      }
      console.log(`${fmt(n)} ${fmt(s.passes)} ${fmt(s.wallMs)} ${fmt(s.summarizerMs)} ${fmt(s.overheadMs)} ${fmt(s.per10k)} ${fmt(s.loopMax, 2)} ${fmt(s.loopP99, 2)} ${fmt(s.replayP99, 2)} ${fmt(s.cpuMs)}`)
      console.log(`RESULT ${JSON.stringify({ n, addon: addon ?? 'worktree', confined: CONFINED, ...s })}`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
