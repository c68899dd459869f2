#!/usr/bin/env node
// What users pay: one long session driven through the OpenClaw engine's host path
// (assemble → afterTurn → maintain, as OpenClaw calls them) at two token budgets,
// with a loopback summarizer standing in for the host LLM. Every turn's request is
// serialized as a provider receives it (system prompt, then one JSON line per
// message) and compared with the previous turn's: the longest common prefix is
// what a provider's prompt cache can serve.
//
//   node bench/cost.mjs [--messages 6000] [--seed 1] [--budgets 32000,128000] [--json out.json]
//                       [--config '{"key":value}'] [--exact] [--root DIR]
//
// `--exact` builds bench/tokcount (OpenAI's o200k / cl100k BPE, a separate crate:
// its tables are not shipped in the addon) and counts the 40 largest assembled
// contexts and every 10th turn's exactly.
//
// Loads the addon the way the plugin does (`native.js`: the build in the package
// root, `npm run build:debug` or `npm run build`). Prints, per budget: tokens sent,
// cache-hit ratio (always warm, and with a 5 min and a 1 h TTL over the workload's
// timestamps), prefix breaks (and how many on consecutive turns), compactions,
// summarizer calls and tokens, a cost index per 1,000 turns and the largest request
// by each count. Counts: `chars/4` of the serialized JSON (what the issue measured),
// the engine's `estimatedTokens`, and `o200k` when the addon exposes `countTokens`.
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const { generator, readJsonl, toTurns } = require('./common.js')
const argv = process.argv.slice(2)
const opt = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d)
/** The package measured (`--root DIR`: another checkout with its build, for a before/after). */
const PACKAGE = opt('--root', root)
const { createContextEngine } = await import(pathToFileURL(join(PACKAGE, 'openclaw', 'engine.mjs')).href)
const MESSAGES = Number(opt('--messages', 6000))
const SEED = Number(opt('--seed', 1))
const BUDGETS = String(opt('--budgets', '32000,128000')).split(',').map(Number)
const JSON_OUT = opt('--json', null)
/** Extra plugin config (JSON), e.g. '{"freshTailCount":32}'. */
const EXTRA = JSON.parse(opt('--config', '{}'))
const EXACT = argv.includes('--exact')
/** Exact counts: the largest assembled contexts and a sample of the others. */
const EXACT_LARGEST = 40
const EXACT_EVERY = 10

/** The exact counter's binary (built on first use), or null without --exact. */
function exactCounter() {
  if (!EXACT) return null
  const manifest = join(root, 'bench', 'tokcount', 'Cargo.toml')
  const targetDir = join(root, 'target', 'tokcount')
  const b = spawnSync('cargo', ['build', '--release', '--quiet', '--manifest-path', manifest, '--target-dir', targetDir], { stdio: 'inherit' })
  if (b.status !== 0) throw new Error('building bench/tokcount failed')
  const bin = join(targetDir, 'release', 'lcm-bench-tokcount')
  return (texts) => {
    const r = spawnSync(bin, [], { input: texts.join('\0'), maxBuffer: 1 << 26, encoding: 'utf8' })
    if (r.status !== 0) throw new Error(r.stderr)
    return r.stdout.trim().split('\n').map((l) => l.split(' ').map(Number))
  }
}
const COUNT = exactCounter()

/** Prices relative to one uncached input token (the cost index). */
const PRICE = { uncached: 1, cacheWrite: 1.25, cacheRead: 0.1, summaryIn: 1, summaryOut: 5 }
const TTL_5M = 5 * 60_000
const TTL_1H = 60 * 60_000
/** The host's own system prompt (fixed: its cost is the same for every engine). */
const BASE_SYSTEM = `You are a helpful coding agent.\n${'Follow the workspace rules. '.repeat(300)}`
const PROVIDER = { provider: 'anthropic', modelId: 'claude-sonnet-4-5' }

const chars4 = (s) => Math.ceil(s.length / 4)

/** The request a provider receives, as text whose prefix is its cacheable prefix. */
function serialize(system, messages) {
  let s = JSON.stringify({ system }) + '\n'
  for (const m of messages) s += JSON.stringify(m) + '\n'
  return s
}

/** Only the assembled part (what `tokenBudget` bounds): messages and the system prompt addition. */
function assembledText(out) {
  return serialize(out.systemPromptAddition ?? '', out.messages)
}

function lcp(a, b) {
  const n = Math.min(a.length, b.length)
  let i = 0
  // Compare in chunks first (fast path for long equal prefixes).
  const step = 4096
  while (i + step <= n && a.slice(i, i + step) === b.slice(i, i + step)) i += step
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++
  return i
}

/**
 * A loopback summarizer with the host LLM's shape (`llm.complete`): answers an
 * extract of its prompt, as long as a summary of that target would be (60 % of
 * `maxTokens / 1.5`, the target the plugin asks for), and counts calls and tokens.
 */
function loopbackLlm(meter) {
  return {
    async complete({ messages, systemPrompt, maxTokens }) {
      const prompt = messages.map((m) => m.content).join('\n')
      const target = Math.floor((maxTokens / 1.5) * 0.6)
      const text = prompt.slice(Math.max(0, prompt.length - target * 4))
      meter.calls += 1
      meter.inTokens += chars4(prompt) + chars4(systemPrompt ?? '')
      meter.outTokens += chars4(text)
      return { text: `Summary of the span.\n${text}` }
    },
  }
}

async function runBudget(turns, budget) {
  const dir = mkdtempSync(join(tmpdir(), 'lcm-cost-'))
  const meter = { calls: 0, inTokens: 0, outTokens: 0 }
  const config = { databasePath: join(dir, 'lcm.db'), largeFilesDir: join(dir, 'files'), ...EXTRA }
  // The engine's clock follows the workload's timestamps (spend window, cache TTL).
  const clock = { now: 0 }
  const engine = createContextEngine({ config, llm: loopbackLlm(meter), now: () => clock.now, logger: { warn: (m) => console.error(m) } })
  await engine.ready
  const native = await engine.handle.use()
  /** Assembled texts kept for the exact count: [estimatedTokens, text]. */
  const largest = []
  const sampled = []
  const session = { sessionId: 'bench-cost', sessionKey: 'agent:main:bench-cost' }
  const history = []
  let prev = null
  let prevTouch = 0
  const t = {
    turns: 0, sent: 0, read: { warm: 0, m5: 0, h1: 0 }, breaks: 0, consecutive: 0, lostWarm: 0, lostH1: 0,
    compactions: 0, compactTurns: [], maxChars4: 0, maxEstimate: 0, maxO200k: 0, overBudget: 0, overBudgetChars4: 0, overBudgetEstimate: 0,
    under: 0, estimateLow: 0, assembleMs: 0, reasons: new Map(),
  }
  let lastBreak = -2
  const started = performance.now()
  for (let i = 0; i < turns.length; i++) {
    const turn = turns[i]
    const now = turn[0].timestamp
    clock.now = now
    const a0 = performance.now()
    const out = await engine.assemble({ ...session, tokenBudget: budget, messages: history, runtimeContext: { ...PROVIDER, tokenBudget: budget } })
    t.assembleMs += performance.now() - a0
    // The host appends the current prompt after the assembled context (currentTurnFence).
    const request = serialize(BASE_SYSTEM + (out.systemPromptAddition ? `\n\n${out.systemPromptAddition}` : ''), [...out.messages, turn[0]])
    const assembled = assembledText(out)
    const c4 = chars4(assembled)
    t.maxChars4 = Math.max(t.maxChars4, c4)
    t.maxEstimate = Math.max(t.maxEstimate, out.estimatedTokens)
    if (c4 > budget) t.overBudgetChars4 += 1
    if (out.estimatedTokens > budget) t.overBudgetEstimate += 1
    if (COUNT && out.messages.length > 0) {
      const entry = [out.estimatedTokens, assembled, c4]
      if (i % EXACT_EVERY === 0) sampled.push(entry)
      largest.push(entry)
      if (largest.length > EXACT_LARGEST * 4) {
        largest.sort((a, b) => b[2] - a[2])
        largest.length = EXACT_LARGEST
      }
    }
    const total = chars4(request)
    t.sent += total
    t.turns += 1
    if (prev !== null) {
      const common = lcp(prev, request)
      const shared = chars4(prev.slice(0, common))
      const broke = common < prev.length
      if (broke) {
        t.breaks += 1
        if (lastBreak === i - 1) t.consecutive += 1
        lastBreak = i
      }
      const lost = chars4(prev) - shared
      t.read.warm += shared
      t.lostWarm += lost
      const gap = now - prevTouch
      if (gap <= TTL_5M) t.read.m5 += shared
      if (gap <= TTL_1H) {
        t.read.h1 += shared
        t.lostH1 += lost
      }
    }
    prev = request
    // The turn runs; the host stores it, then runs turn maintenance.
    const before = history.length
    history.push(...turn)
    prevTouch = turn[turn.length - 1].timestamp
    clock.now = prevTouch
    await engine.afterTurn({ ...session, messages: history, prePromptMessageCount: before })
    const m = await engine.maintain({ ...session, tokenBudget: budget, runtimeContext: { ...PROVIDER, tokenBudget: budget } })
    const reason = m.reason ?? ''
    const key = reason.replace(/\d[\d,.]*/g, 'N').replace(/; N passes.*$/, '').replace(/ \(N passes.*$/, '')
    t.reasons.set(key, (t.reasons.get(key) ?? 0) + 1)
    if (/[(;] ?([1-9]\d*) passes/.test(reason)) {
      t.compactions += 1
      t.compactTurns.push(i)
    }
  }
  const wallMs = performance.now() - started
  let stats = null
  try {
    const conv = await native.getConversation({ sessionKey: session.sessionKey })
    stats = conv ? await native.getStats(conv.conversationId) : null
  } catch {
    stats = null
  }
  await engine.dispose()
  rmSync(dir, { recursive: true, force: true })
  if (COUNT) {
    largest.sort((a, b) => b[2] - a[2])
    const entries = [...largest.slice(0, EXACT_LARGEST), ...sampled]
    const counts = COUNT(entries.map((e) => e[1]))
    t.exactSamples = entries.length
    t.maxCl100k = 0
    t.minEstimateRatio = Infinity
    counts.forEach(([o, c], k) => {
      t.maxO200k = Math.max(t.maxO200k, o)
      t.maxCl100k = Math.max(t.maxCl100k, c)
      if (Math.max(o, c) > budget) t.overBudget += 1
      const ratio = entries[k][0] / Math.max(o, c, 1)
      t.minEstimateRatio = Math.min(t.minEstimateRatio, ratio)
      if (ratio < 0.97) t.estimateLow += 1
    })
  }
  return summarize(t, meter, budget, wallMs, stats, COUNT !== null)
}

function costIndex(t, meter, read) {
  // Every token past the cached prefix is written to the cache (automatic prefix caching).
  const write = t.sent - read
  return (write * PRICE.cacheWrite + read * PRICE.cacheRead + meter.inTokens * PRICE.summaryIn + meter.outTokens * PRICE.summaryOut) / (t.turns / 1000)
}

function summarize(t, meter, budget, wallMs, stats, exact) {
  const pct = (x) => (100 * x) / t.sent
  const consecutiveRuns = t.compactTurns.filter((x, k, a) => k > 0 && a[k - 1] === x - 1).length
  return {
    budget,
    turns: t.turns,
    tokensSent: t.sent,
    meanRequestTokens: Math.round(t.sent / t.turns),
    cacheHitWarm: pct(t.read.warm),
    cacheHit5m: pct(t.read.m5),
    cacheHit1h: pct(t.read.h1),
    prefixBreaks: t.breaks,
    breaksOnConsecutiveTurns: t.consecutive,
    tokensLostToBreaksWarm: t.lostWarm,
    tokensLostToBreaks1h: t.lostH1,
    compactions: t.compactions,
    compactionsOnConsecutiveTurns: consecutiveRuns,
    summarizerCalls: meter.calls,
    summarizerInTokens: meter.inTokens,
    summarizerOutTokens: meter.outTokens,
    costPer1kTurnsWarm: costIndex(t, meter, t.read.warm),
    costPer1kTurns5m: costIndex(t, meter, t.read.m5),
    costPer1kTurns1h: costIndex(t, meter, t.read.h1),
    costPer1kTurnsUncached: (t.sent + meter.inTokens + meter.outTokens * PRICE.summaryOut) / (t.turns / 1000),
    largestChars4: t.maxChars4,
    largestEstimate: t.maxEstimate,
    largestO200k: exact ? t.maxO200k : null,
    largestCl100k: exact ? t.maxCl100k : null,
    exactSamples: exact ? t.exactSamples : null,
    minEstimateOverExact: exact ? t.minEstimateRatio : null,
    overBudgetChars4: t.overBudgetChars4,
    overBudgetEstimate: t.overBudgetEstimate,
    overBudgetExact: exact ? t.overBudget : null,
    estimateBelowO200kBy3pct: exact ? t.estimateLow : null,
    assembleMeanMs: t.assembleMs / t.turns,
    wallSeconds: wallMs / 1000,
    maintainReasons: Object.fromEntries([...t.reasons].sort((a, b) => b[1] - a[1])),
    stats,
  }
}

const work = mkdtempSync(join(tmpdir(), 'lcm-cost-work-'))
const file = join(work, 'conv.jsonl')
const gen = spawnSync(process.execPath, [generator(), '--messages', String(MESSAGES), '--seed', String(SEED), '--out', file], { encoding: 'utf8' })
if (gen.status !== 0) throw new Error(gen.stderr)
const turns = toTurns(readJsonl(file))
console.log(`workload: ${MESSAGES} messages, ${turns.length} turns (seed ${SEED}); package ${PACKAGE}`)
const results = []
for (const budget of BUDGETS) {
  const r = await runBudget(turns, budget)
  results.push(r)
  const f = (x, d = 1) => (typeof x === 'number' ? x.toFixed(d) : String(x))
  console.log(`\n== tokenBudget ${budget} (${f(r.wallSeconds)} s) ==`)
  console.log(`tokens sent ${r.tokensSent} (mean ${r.meanRequestTokens}/request)`)
  console.log(`cache hit: warm ${f(r.cacheHitWarm, 2)} %  5 min ${f(r.cacheHit5m, 2)} %  1 h ${f(r.cacheHit1h, 2)} %`)
  console.log(`prefix breaks ${r.prefixBreaks} (${r.breaksOnConsecutiveTurns} on consecutive turns); tokens lost to breaks: warm ${r.tokensLostToBreaksWarm}, 1 h ${r.tokensLostToBreaks1h}`)
  console.log(`compactions ${r.compactions} (${r.compactionsOnConsecutiveTurns} right after another)`)
  console.log(`summarizer: ${r.summarizerCalls} calls, ${r.summarizerInTokens} in, ${r.summarizerOutTokens} out`)
  console.log(`cost index / 1k turns: warm ${f(r.costPer1kTurnsWarm, 0)}  5 min ${f(r.costPer1kTurns5m, 0)}  1 h ${f(r.costPer1kTurns1h, 0)}  no cache ${f(r.costPer1kTurnsUncached, 0)}`)
  console.log(`largest assembled: chars/4 ${r.largestChars4}, engine estimate ${r.largestEstimate}, o200k ${r.largestO200k ?? 'n/a'}, cl100k ${r.largestCl100k ?? 'n/a'}; over budget: chars/4 ${r.overBudgetChars4}, estimate ${r.overBudgetEstimate}, exact ${r.overBudgetExact ?? 'n/a'} of ${r.exactSamples ?? 'n/a'} counted`)
  if (r.exactSamples) console.log(`estimate ÷ max(o200k, cl100k): lowest ${f(r.minEstimateOverExact, 3)}; below 0.97 in ${r.estimateBelowO200kBy3pct} of ${r.exactSamples}`)
  console.log(`assemble mean ${f(r.assembleMeanMs, 2)} ms; maintain: ${JSON.stringify(r.maintainReasons)}`)
}
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify(results, null, 2))
rmSync(work, { recursive: true, force: true })
