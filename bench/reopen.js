'use strict'
// grep after a restart: the one home of this measurement (bench/run.js and
// bench/grep.mjs both call it). For each scope (one conversation, all
// conversations) and mode (regex, full_text): `runs` fresh opens, each followed by
// the first grep (the recall catalog is still being built in the background) and
// 20 more; medians of the open, of the first calls and of the rest, the event
// loop's max delay meanwhile, how the first calls were answered (the message
// search's strategy: `fts` / `fts-words` come from SQLite alone, the others from
// the catalog; `scan-newest` too) and the catalog's memory once built. Needles are
// planted ids of the shared workload; a regex gets them escaped. Two more kinds
// use the workload's vocabulary: full text of common words (thousands of
// matches, newest first) and regexes whose literals hold no whole word for the
// full-text index to narrow by.
const { performance, monitorEventLoopDelay } = require('node:perf_hooks')
const { collectGarbage } = require('./common.js')

const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** Common words of the shared workload (bench/gen-workload.mjs), for full text. */
const COMMON_WORDS = ['invoice', 'rollback incident', 'flight hotel', 'customer', 'budget review']
/** Regexes over the workload's words with no whole word in their literals. */
const NO_WORD_REGEXES = ['invoice (draft|report)', '(?i)flight', 'rollback \\w+ incident', 'hotel[.!?]', 'deploy(ed)? \\w+ build']

/**
 * @param {object} o
 * @param {() => Promise<any>} o.open opens a fresh engine on the database
 * @param {string[]} o.needles patterns (plain text; escaped for regex)
 * @param {number} o.conversationId the conversation of the "conversation" scope
 * @param {number} [o.runs] reopens per mode and scope (default 3)
 * @param {number} [o.limit] grep limit (default 20)
 * @returns {Promise<Array<{scope: string, mode: string, openMs: number, firstMs: number, firstMinMs: number, nextMs: number, loopMaxMs: number, strategies: string, indexBytes: number, indexedMessages: number}>>}
 */
async function grepAfterReopen({ open, needles, conversationId, runs = 3, limit = 20 }) {
  const out = []
  for (const scope of ['conversation', 'all']) {
    const kinds = [
      ['regex', 'regex', needles.map(esc)],
      ['full_text', 'full_text', needles],
      ['full_text', 'ft-common', COMMON_WORDS],
      ['regex', 're-noword', NO_WORD_REGEXES],
    ]
    for (const [mode, kind, patterns] of kinds) {
      const opens = []
      const firsts = []
      const rest = []
      const how = new Map()
      let loopMax = 0
      let info
      for (let k = 0; k < runs; k++) {
        const t0 = performance.now()
        const engine = await open()
        opens.push(performance.now() - t0)
        const h = monitorEventLoopDelay({ resolution: 1 })
        h.enable()
        for (let i = 0; i < 21; i++) {
          const p = patterns[(k * 31 + i * 7919 + (scope === 'all' ? 17 : 0)) % patterns.length]
          const where = scope === 'all' ? { allConversations: true } : { conversationId }
          const t = performance.now()
          const r = await engine.grep({ pattern: p, mode, ...where, limit })
          const ms = performance.now() - t
          if (i === 0) {
            firsts.push(ms)
            const s = r.messageStats ? r.messageStats.strategy : 'none'
            how.set(s, (how.get(s) || 0) + 1)
          } else {
            rest.push(ms)
          }
        }
        h.disable()
        loopMax = Math.max(loopMax, h.max / 1e6)
        info = await engine.warmRecallIndex()
        await engine.close()
      }
      out.push({
        scope,
        mode: kind,
        openMs: median(opens),
        firstMs: median(firsts),
        firstMinMs: Math.min(...firsts),
        nextMs: median(rest),
        loopMaxMs: loopMax,
        strategies: [...how].map(([s, n]) => `${s} ×${n}`).join(', '),
        indexBytes: info.indexBytes,
        indexedMessages: info.indexedMessages,
      })
    }
  }
  return out
}

/**
 * What closing costs a host, `runs` times each: `close()` called right after
 * `open()` (the recall catalog is still being built in the background; close
 * stops the build instead of waiting for its end), and, for an engine opened,
 * warmed, closed and no longer referenced, how long the JS thread is held once the
 * collector has found it (the turn of the loop after a full collection, where
 * finalizers run: whatever the engine still held would be freed there).
 * @param {object} o
 * @param {() => Promise<any>} o.open opens a fresh engine on the database
 * @param {number} [o.runs] default 3
 * @returns {Promise<{closeMs: number, closeMaxMs: number, finalizeMs: number}>} medians, and the slowest close
 */
async function closeAfterOpen({ open, runs = 3 }) {
  const closes = []
  const finals = []
  for (let k = 0; k < runs; k++) {
    const fresh = await open()
    const t = performance.now()
    await fresh.close()
    closes.push(performance.now() - t)
    let warm = await open()
    await warm.warmRecallIndex()
    await warm.close()
    warm = null
    collectGarbage()
    const f = performance.now()
    await new Promise((r) => setImmediate(r))
    finals.push(performance.now() - f)
  }
  return { closeMs: median(closes), closeMaxMs: Math.max(...closes), finalizeMs: median(finals) }
}

/** One line of a `grepAfterReopen` result. */
function formatReopen(label, r) {
  const f = (v) => v.toFixed(2).padStart(7)
  return `${label.padEnd(5)} ${r.scope.padEnd(12)} ${r.mode.padEnd(9)} open ${f(r.openMs)}  first ${f(r.firstMs)} (min ${r.firstMinMs.toFixed(2)}; ${r.strategies})  next ${f(r.nextMs)}  loop max ${f(r.loopMaxMs)}  catalog ${(r.indexBytes / 1048576).toFixed(1)} MiB / ${r.indexedMessages} msgs`
}

module.exports = { grepAfterReopen, closeAfterOpen, formatReopen, esc }
