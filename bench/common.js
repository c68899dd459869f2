'use strict'
// What bench/run.js and the focused bench scripts share: the workload generator's
// path, the split into turns, event-loop measurement, the instant summarizer whose
// time is subtracted, and the full-sweep measurement (the "full sweep" rows).
const { existsSync } = require('node:fs')
const { join } = require('node:path')
const { monitorEventLoopDelay, performance } = require('node:perf_hooks')

const root = join(__dirname, '..')

/** The shared generator (../shared/bench) when present, else this repo's copy. */
function generator() {
  const shared = join(root, '..', 'shared', 'bench', 'gen-workload.mjs')
  return existsSync(shared) ? shared : join(root, 'bench', 'gen-workload.mjs')
}

/** Messages → turns: a turn starts at each user message. */
function toTurns(messages) {
  const out = []
  for (const m of messages) {
    if (m.role === 'user' || out.length === 0) out.push([])
    out[out.length - 1].push(m)
  }
  return out
}

/** Runs `fn` and reports its wall time and the event loop's max / p99 delay meanwhile (ms). */
async function measureLoop(fn) {
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  const t0 = performance.now()
  const value = await fn()
  const ms = performance.now() - t0
  h.disable()
  return { value, ms, loopMax: h.max / 1e6, loopP99: h.percentile(99) / 1e6 }
}

/** Time spent inside {@link instantSummarizer} since the last reset (ms). */
const summarizerClock = { ms: 0, calls: 0 }

/** An instant deterministic summarizer: the first 300 characters of the source plus the footer. */
function instantSummarizer(req) {
  const t = performance.now()
  const text = `${req.sourceText.slice(0, 300)}\nExpand for details about: everything else`
  summarizerClock.ms += performance.now() - t
  summarizerClock.calls += 1
  return text
}

/** Engine options of a full sweep: one sweep compacts the whole backlog. */
const SWEEP_OPTIONS = { maxSweepIterations: 1000000, sweepDeadlineMs: 3600000 }

/**
 * A sweep of everything eligible in an engine holding a session's ingested
 * messages: wall − summarizer time, per 10k of `count` messages, and the event loop
 * meanwhile.
 */
async function sweepOnly(engine, sessionId, count) {
  summarizerClock.ms = 0
  summarizerClock.calls = 0
  // Monotonic seconds (perf's CLOCK_MONOTONIC), to cut a profile to the sweep.
  const monoStart = Number(process.hrtime.bigint()) / 1e9
  const cpu0 = process.cpuUsage()
  const m = await measureLoop(() => engine.compact({ sessionId, tokenBudget: 200000, mode: 'sweep', force: true }))
  const overheadMs = m.ms - summarizerClock.ms
  const cpu = process.cpuUsage(cpu0)
  return {
    wallMs: m.ms,
    summarizerMs: summarizerClock.ms,
    summarizerCalls: summarizerClock.calls,
    overheadMs,
    per10k: overheadMs / (count / 10000),
    passes: m.value.passes.length,
    tokensBefore: m.value.tokensBefore,
    tokensAfter: m.value.tokensAfter,
    loopMax: m.loopMax,
    loopP99: m.loopP99,
    // CPU time of every thread of the process meanwhile (steadier than wall time
    // on a busy machine; the summarizer's share is not subtracted).
    cpuMs: (cpu.user + cpu.system) / 1000,
    monoStart,
    monoEnd: Number(process.hrtime.bigint()) / 1e9,
  }
}

/** Ingests `messages` per turn into a new engine at `dbPath`, then {@link sweepOnly}. */
async function sweepRun(LcmEngine, dbPath, messages) {
  const engine = await LcmEngine.open({ dbPath, summarizer: instantSummarizer, ...SWEEP_OPTIONS })
  try {
    for (const t of toTurns(messages)) await engine.ingestBatch({ sessionId: 'sw', messages: t })
    return await sweepOnly(engine, 'sw', messages.length)
  } finally {
    await engine.close()
  }
}

module.exports = { generator, toTurns, measureLoop, summarizerClock, instantSummarizer, SWEEP_OPTIONS, sweepOnly, sweepRun }
