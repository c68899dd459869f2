'use strict'
// What bench/run.js and the focused bench scripts share: the workload generator's
// path, the split into turns, event-loop measurement, the instant summarizer whose
// time is subtracted, and the full-sweep measurement (the "full sweep" rows).
const { execFileSync } = require('node:child_process')
const { existsSync, readdirSync, readFileSync } = require('node:fs')
const { join } = require('node:path')
const { monitorEventLoopDelay, performance, PerformanceObserver } = require('node:perf_hooks')
const v8 = require('node:v8')
const vm = require('node:vm')

// A full garbage collection on demand, before each measured phase (without
// --expose-gc on the command line: the flag, then the function from a new context).
v8.setFlagsFromString('--expose-gc')
const collectGarbage = vm.runInNewContext('gc')

const root = join(__dirname, '..')

/** The shared generator (../shared/bench) when present, else this repo's copy. */
function generator() {
  const shared = join(root, '..', 'shared', 'bench', 'gen-workload.mjs')
  return existsSync(shared) ? shared : join(root, 'bench', 'gen-workload.mjs')
}

/**
 * The records of a JSON-lines file, parsed line by line from its bytes: a
 * million-message workload is ≈ 800 MB, more than one JavaScript string can hold
 * (`ERR_STRING_TOO_LONG` past 512 MiB), while its parsed messages take ≈ 0.9 GB
 * of heap. `limit` stops after that many records.
 */
function readJsonl(file, limit = Infinity) {
  const bytes = readFileSync(file)
  const out = []
  let start = 0
  while (start < bytes.length && out.length < limit) {
    let end = bytes.indexOf(10, start)
    if (end < 0) end = bytes.length
    if (end > start) out.push(JSON.parse(bytes.toString('utf8', start, end)))
    start = end + 1
  }
  return out
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

/**
 * CPU time the hypervisor has taken from this machine's CPUs so far (ms, all CPUs
 * together: the `steal` column of `/proc/stat`, in USER_HZ ticks of 10 ms), and
 * the count of CPUs; `null` where there is no `/proc/stat`. A virtual CPU that the
 * host does not run (a neighbour's load, or a halted vCPU's wake-up waiting for
 * the host) shows here: a phase that lost a share of its CPU this way ran slower
 * and with longer event-loop stalls than the same code on a quiet host.
 */
function stolenCpuMs() {
  let stat
  try {
    stat = readFileSync('/proc/stat', 'utf8')
  } catch {
    return null
  }
  const lines = stat.split('\n')
  const fields = lines[0].trim().split(/\s+/)
  if (fields[0] !== 'cpu' || fields.length < 9) return null
  const cpus = lines.filter((l) => /^cpu\d/.test(l)).length
  return { ms: Number(fields[8]) * 10, cpus }
}

/**
 * The share of the CPUs' capacity the host took between two
 * {@link stolenCpuMs} readings `wallMs` apart (0–1), `undefined` without them.
 */
function stolenShare(before, after, wallMs) {
  if (!before || !after || wallMs <= 0) return undefined
  return (after.ms - before.ms) / (wallMs * after.cpus)
}

/**
 * Runs `fn` and reports its wall time and the event loop's max / p99 delay
 * meanwhile (ms). `fn` gets a {@link Spells} recorder; when it marks its waits,
 * the same spells are then replayed without the engine ({@link replayLoop}) and
 * `replayMax` / `replayP99` report what the histogram shows for them alone.
 *
 * A full garbage collection runs first, so that what the bench allocated to set
 * the phase up (its workload, turns) is not collected inside it; `gcMax` is the
 * longest pause of V8's collector during the phase (ms), to set beside `loopMax`;
 * `stolen` the share of the CPUs the host took meanwhile ({@link stolenShare}).
 */
async function measureLoop(fn) {
  collectGarbage()
  const spells = new Spells()
  const pauses = []
  const gc = new PerformanceObserver((list) => pauses.push(...list.getEntries()))
  gc.observe({ entryTypes: ['gc'] })
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  const steal0 = stolenCpuMs()
  const t0 = performance.now()
  const value = await fn(spells)
  const ms = performance.now() - t0
  const stolen = stolenShare(steal0, stolenCpuMs(), ms)
  h.disable()
  spells.end()
  // Entries are delivered on a later turn of the loop.
  await new Promise((r) => setImmediate(r))
  gc.disconnect()
  const inPhase = pauses.filter((e) => e.startTime >= t0 && e.startTime <= t0 + ms)
  const gcMax = Math.max(0, ...inPhase.map((e) => e.duration))
  const out = { value, ms, loopMax: h.max / 1e6, loopP99: h.percentile(99) / 1e6, gcMax, stolen }
  if (spells.waits() === 0) return out
  const replay = await replayLoop(spells)
  return { ...out, replayMax: replay.loopMax, replayP99: replay.loopP99 }
}

const BUSY = 1
const WAITING = 0

/**
 * The JavaScript thread's spells during a phase, alternately busy (running the
 * bench's code or a callback of the engine) and waiting (for a call to settle,
 * or between two callbacks), as times of the changes.
 *
 * Why: `monitorEventLoopDelay` is a 1 ms libuv timer, and libuv sleeps in whole
 * milliseconds counted from its clock rounded down. A thread that goes to sleep
 * at a fraction φ into a millisecond with the timer due at the next one sleeps a
 * full millisecond and fires the timer φ late, though nothing ran. So a phase
 * whose calls sometimes take more than a millisecond shows a p99 near 2 ms
 * however idle the thread was. Replaying the same spells with no engine (a
 * worker thread sleeps the waits) measures that floor in the same run.
 */
class Spells {
  constructor() {
    this.marks = [[performance.now(), BUSY]]
  }
  /** The thread waits from now (a call was made, or a callback returned). */
  wait() {
    this.marks.push([performance.now(), WAITING])
  }
  /** The thread is busy from now (a call settled, or a callback began). */
  busy() {
    this.marks.push([performance.now(), BUSY])
  }
  /** Marks a wait until `promise` settles; resolves as it does. */
  waitFor(promise) {
    this.wait()
    return promise.finally(() => this.busy())
  }
  /** Closes the last spell. */
  end() {
    this.busy()
  }
  /** How many waits were marked. */
  waits() {
    return this.marks.filter(([, state]) => state === WAITING).length
  }
}

/** A worker thread that sleeps the milliseconds it is sent, then answers. */
let sleeper
function sleeperThread() {
  if (!sleeper) {
    const { Worker } = require('node:worker_threads')
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads')
       const cell = new Int32Array(new SharedArrayBuffer(4))
       parentPort.on('message', (ms) => {
         const end = performance.now() + ms
         let left
         while ((left = end - performance.now()) > 0.1) Atomics.wait(cell, 0, 0, left - 0.1)
         while (performance.now() < end);
         parentPort.postMessage(0)
       })`,
      { eval: true },
    )
    worker.unref()
    sleeper = (ms) => new Promise((resolve) => {
      worker.once('message', resolve)
      worker.postMessage(ms)
    })
  }
  return sleeper
}

/**
 * The event loop's max / p99 delay while the thread goes through `spells` again
 * without the engine: it spins for each busy spell and awaits the sleeper thread
 * for each wait (less the sleeper's own round trip). Nothing competes with the
 * thread for a core, so what this reports is the measurement's floor for that
 * pattern of waits.
 */
async function replayLoop(spells) {
  const sleep = sleeperThread()
  const trips = []
  for (let i = 0; i < 200; i++) {
    const t = performance.now()
    await sleep(0)
    trips.push(performance.now() - t)
  }
  const trip = trips.sort((a, b) => a - b)[trips.length >> 1]
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  const { marks } = spells
  for (let i = 0; i + 1 < marks.length; i++) {
    const [at, state] = marks[i]
    const ms = marks[i + 1][0] - at
    if (state === BUSY) spin(ms)
    else await sleep(Math.max(0, ms - trip))
  }
  h.disable()
  return { loopMax: h.max / 1e6, loopP99: h.percentile(99) / 1e6 }
}

/** Keeps the thread busy for `ms`. */
function spin(ms) {
  const end = performance.now() + ms
  while (performance.now() < end);
}

/**
 * Time spent inside {@link instantSummarizer} since the last reset (ms), and the
 * {@link Spells} its calls mark while a sweep is measured.
 */
const summarizerClock = { ms: 0, calls: 0, spells: null }

/** An instant deterministic summarizer: the first 300 characters of the source plus the footer. */
function instantSummarizer(req) {
  summarizerClock.spells?.busy()
  const t = performance.now()
  const text = `${req.sourceText.slice(0, 300)}\nExpand for details about: everything else`
  summarizerClock.ms += performance.now() - t
  summarizerClock.calls += 1
  summarizerClock.spells?.wait()
  return text
}

/** CPU numbers of a `taskset` list (`0-2,5`). */
function cpuList(text) {
  return text.split(',').flatMap((part) => {
    const [a, b = a] = part.trim().split('-').map(Number)
    return Array.from({ length: b - a + 1 }, (_, i) => a + i)
  })
}

/**
 * Keeps the engine's threads (the addon's tokio runtime, `lcm-writer`,
 * `lcm-checkpoint`) off the first CPU this process may use, so that the event
 * loop always has a CPU the engine does not use. Returns a function that gives
 * them every CPU back, or null where this cannot be done (one CPU, no `taskset`).
 * Threads the runtime starts meanwhile inherit the setting from the thread that
 * starts them.
 *
 * A diagnostic of the bench, not a setting of the engine. This VM's kernel packs
 * vCPUs (`sched_vcpu_pack=15` on its command line, and `haltpoll.guest_halt_poll_ns=0`):
 * a thread woken by a busy thread is queued on the waker's vCPU, not on the idle
 * one, until the load balancer moves it. A helper woken to share 3 ms of work
 * ran beside its waker at once in 8 of 40 tries, behind it on the same vCPU in
 * 16, and 0.6-1.8 ms late in 16; with the two threads pinned apart, it started
 * within 0.03-0.11 ms every time. A sweep wakes the event loop for every
 * summarizer call, from a busy thread of the engine.
 */
function confineEngineThreads() {
  let allowed
  try {
    const out = execFileSync('taskset', ['-pc', String(process.pid)], { encoding: 'utf8' })
    allowed = cpuList(out.slice(out.lastIndexOf(':') + 1))
  } catch {
    return null
  }
  if (allowed.length < 2) return null
  const engineThreads = () =>
    readdirSync('/proc/self/task').filter((tid) => {
      if (tid === String(process.pid)) return false
      try {
        const name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()
        return name.startsWith('tokio') || name.startsWith('lcm-')
      } catch {
        return false // the thread ended meanwhile
      }
    })
  const set = (cpus) => {
    for (const tid of engineThreads()) {
      try {
        execFileSync('taskset', ['-pc', cpus, tid], { stdio: 'ignore' })
      } catch {
        // the thread ended meanwhile
      }
    }
  }
  set(allowed.slice(1).join(','))
  return () => set(allowed.join(','))
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
  const m = await measureLoop(async (spells) => {
    // The thread waits for the sweep except while it runs the summarizer.
    summarizerClock.spells = spells
    try {
      return await spells.waitFor(engine.compact({ sessionId, tokenBudget: 200000, mode: 'sweep', force: true }))
    } finally {
      summarizerClock.spells = null
    }
  })
  const overheadMs = m.ms - summarizerClock.ms
  const cpu = process.cpuUsage(cpu0)
  // The messages the sweep summarized (its leaf passes' sources): the overhead is
  // per 10k of those, which is all but the fresh tail unless the sweep stopped
  // early (its `reason` says why).
  const summarized = m.value.passes.filter((p) => p.kind === 'leaf').reduce((a, p) => a + p.sourceCount, 0)
  return {
    wallMs: m.ms,
    summarizerMs: summarizerClock.ms,
    summarizerCalls: summarizerClock.calls,
    overheadMs,
    per10k: overheadMs / (Math.max(1, summarized) / 10000),
    messages: count,
    summarized,
    reason: m.value.reason,
    passes: m.value.passes.length,
    tokensBefore: m.value.tokensBefore,
    tokensAfter: m.value.tokensAfter,
    loopMax: m.loopMax,
    loopP99: m.loopP99,
    gcMax: m.gcMax,
    stolen: m.stolen,
    replayMax: m.replayMax,
    replayP99: m.replayP99,
    // CPU time of every thread of the process meanwhile (steadier than wall time
    // on a busy machine; the summarizer's share is not subtracted).
    cpuMs: (cpu.user + cpu.system) / 1000,
    monoStart,
    monoEnd: Number(process.hrtime.bigint()) / 1e9,
  }
}

/**
 * Ingests `messages` per turn into a new engine at `dbPath`, then {@link sweepOnly}
 * (with `confined`, its threads kept off one CPU meanwhile: {@link confineEngineThreads};
 * null where that cannot be done).
 */
async function sweepRun(LcmEngine, dbPath, messages, { confined = false } = {}) {
  const engine = await LcmEngine.open({ dbPath, summarizer: instantSummarizer, ...SWEEP_OPTIONS })
  try {
    for (const t of toTurns(messages)) await engine.ingestBatch({ sessionId: 'sw', messages: t })
    if (!confined) return await sweepOnly(engine, 'sw', messages.length)
    const release = confineEngineThreads()
    if (!release) return null
    try {
      return await sweepOnly(engine, 'sw', messages.length)
    } finally {
      release()
    }
  } finally {
    await engine.close()
  }
}

module.exports = {
  generator,
  readJsonl,
  toTurns,
  measureLoop,
  stolenCpuMs,
  stolenShare,
  summarizerClock,
  instantSummarizer,
  SWEEP_OPTIONS,
  sweepOnly,
  sweepRun,
  confineEngineThreads,
  collectGarbage,
}
