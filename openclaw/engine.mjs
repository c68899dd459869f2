// The ContextEngine OpenClaw runs: each lifecycle method maps the host's params
// onto the shared LcmEngine and never throws where the host would quarantine the
// engine (results say what went wrong); only a malformed durable turn, a
// conflicting commit and programmer errors reject.

import { createRequire } from 'node:module'
import { existsSync } from 'node:fs'
import { resolveConfig } from './config.mjs'
import { SessionPolicy } from './sessions.mjs'
import { acquire, largeFileModelRef } from './shared.mjs'
import { boundLiveMessages } from './fallback.mjs'
import { checkTurnAnchors } from './turn.mjs'
import { hostTranscript, transcriptTarget } from './transcript.mjs'
import { callModel, overridesOf, selectRule } from './overrides.mjs'
import { isHeartbeatOkTurn, settled } from './lifecycle.mjs'

const require = createRequire(import.meta.url)
const { version } = require('../package.json')

/** The plugin manifest, home of the plugin's id, name and description. */
const manifest = require('../openclaw.plugin.json')
/** The id the engine registers under (`plugins.slots.contextEngine`). */
export const ENGINE_ID = manifest.id
/** Human-readable engine name. */
export const ENGINE_NAME = manifest.name
/** What the plugin does, in one sentence. */
export const ENGINE_DESCRIPTION = manifest.description

/** Host params the engine reads; the host leaves the others out. */
export const ACCEPTED_HOST_PARAMS = Object.freeze(['sessionKey', 'runtimeSettings', 'sessionTarget', 'runtimeContext', 'abortSignal'])

const NO_REWRITE = { changed: false, bytesFreed: 0, rewrittenEntries: 0 }

/** How often `maintain` runs the retention policies (per database), at most. */
const RETENTION_EVERY_MS = 10 * 60_000
/** Conversations one retention step archives or prunes at most. */
const RETENTION_STEP = 4
/** Per shared engine handle: when retention last ran, whether a step is running. */
const retentionState = new WeakMap()

function positive(n) {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : undefined
}

/**
 * The token budget of a call: `tokenBudget` → `runtimeContext.tokenBudget` →
 * `runtimeSettings.limits.promptTokenBudget` → the configured default, capped by
 * `maxAssemblyTokenBudget`.
 */
export function resolveTokenBudget(params, cfg) {
  const budget =
    positive(params?.tokenBudget) ??
    positive(params?.runtimeContext?.tokenBudget) ??
    positive(params?.runtimeSettings?.limits?.promptTokenBudget) ??
    cfg.defaultTokenBudget
  const cap = positive(cfg.maxAssemblyTokenBudget)
  return cap ? Math.min(budget, cap) : budget
}

/** The key a session's spend guard and cache clock are kept under. */
function sessionOf(params) {
  return params?.sessionKey || params?.sessionId || ''
}

function describeError(err) {
  return err?.code ? `${err.code}: ${err.message}` : String(err?.message ?? err)
}

function abortError(signal) {
  return signal.reason ?? Object.assign(new Error('The operation was aborted'), { name: 'AbortError' })
}

/** Large files sent to the large-file model per maintenance turn (each is one model call). */
const LARGE_FILES_PER_TURN = 2

/** The lcm-native context engine (create it with `createContextEngine`). */
export class LcmContextEngine {
  /**
   * @param {object} options see `createContextEngine`
   */
  constructor(options = {}) {
    this.config = options.resolvedConfig ?? resolveConfig(options.config, options.env ?? process.env)
    this.logger = options.logger ?? console
    this.policy = new SessionPolicy(this.config)
    const llm = options.llm && typeof options.llm.complete === 'function' ? options.llm : undefined
    /** The clock of the spend guard and the prompt-cache TTL (injectable for tests and the bench). */
    this.now = typeof options.now === 'function' ? options.now : Date.now
    const { handle, release } = acquire(this.config.engineOptions, {
      llm,
      summaryModel: this.config.summaryModel,
      summaryThinking: this.config.enableSummaryThinking,
      fallbackModels: (this.config.fallbackProviders ?? []).map((p) => `${p.provider}/${p.model}`),
      spend: { windowMs: this.config.summaryCallWindowMs, maxCalls: this.config.summaryMaxCallsPerWindow, backoffMs: this.config.summarySpendBackoffMs },
      largeFileModel: largeFileModelRef(this.config),
      breaker: { threshold: this.config.circuitBreakerThreshold, cooldownMs: this.config.circuitBreakerCooldownMs },
      packageDir: options.packageDir,
    })
    this.handle = handle
    this.release = release
    this.disposed = false
    /** Resolves once the shared database is open (or failed to open). */
    this.ready = handle.ready.then(() => undefined)
  }

  /** Engine metadata; `ownsCompaction` turns true once the database opened. */
  get info() {
    return {
      id: ENGINE_ID,
      name: ENGINE_NAME,
      version,
      ownsCompaction: this.handle.opened,
      turnMaintenanceMode: 'background',
      transcriptSemantics: {
        currentTurnFence: 'before-current-turn-entry-v1',
        turnAdvancementIdempotency: 'atomic-idempotent-v1',
      },
      acceptedHostParams: [...ACCEPTED_HOST_PARAMS],
    }
  }

  warn(message) {
    try {
      this.logger.warn?.(`[lcm-native] ${message}`)
    } catch {
      /* a broken logger must not break the turn */
    }
  }

  /**
   * Waits for the session key's pending lifecycle change (a `/new` or `/reset`
   * hook the host fired without awaiting), so this call sees its result.
   */
  async afterLifecycle(params) {
    const pending = settled(this.handle, params?.sessionKey)
    if (pending) await pending
  }

  /** Whether `pruneHeartbeatOk` drops this turn (a heartbeat that only acknowledged). */
  prunesHeartbeat(messages) {
    return this.config.pruneHeartbeatOk === true && isHeartbeatOkTurn(messages)
  }

  /** Stores one message (nothing for ignored/stateless sessions). */
  async ingest(params) {
    if (this.policy.skipsWrites(params.sessionKey)) return { ingested: false }
    await this.afterLifecycle(params)
    try {
      const engine = await this.handle.use()
      const r = await engine.ingest({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        message: params.message,
        isHeartbeat: params.isHeartbeat === true,
      })
      return { ingested: r.ingested }
    } catch (err) {
      this.warn(`ingest failed for session ${params.sessionId}: ${describeError(err)}`)
      return { ingested: false }
    }
  }

  /** Stores a batch in one transaction (nothing for ignored/stateless sessions). */
  async ingestBatch(params) {
    if (this.policy.skipsWrites(params.sessionKey)) return { ingestedCount: 0 }
    await this.afterLifecycle(params)
    try {
      const engine = await this.handle.use()
      const r = await engine.ingestBatch({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        messages: params.messages,
        isHeartbeat: params.isHeartbeat === true || this.prunesHeartbeat(params.messages),
      })
      return { ingestedCount: r.ingestedCount }
    } catch (err) {
      this.warn(`ingestBatch failed for session ${params.sessionId}: ${describeError(err)}`)
      return { ingestedCount: 0 }
    }
  }

  /**
   * The call's policy overrides: the `contextThresholdOverrides` rule that fits
   * the session and the model best (undefined when none does).
   */
  overridesFor(params) {
    return overridesOf(selectRule(this.config.contextThresholdOverrides, { sessionKey: params?.sessionKey, ...callModel(params) }))
  }

  /**
   * Builds the model context under the resolved budget. When the store cannot
   * answer, returns the newest live messages that fit the budget.
   */
  async assemble(params) {
    const budget = resolveTokenBudget(params, this.config)
    this.handle.noteSession(params, { budget, overrides: this.overridesFor(params) })
    const live = Array.isArray(params.messages) ? params.messages : []
    if (this.policy.isIgnored(params.sessionKey)) return boundLiveMessages(live, budget)
    await this.afterLifecycle(params)
    try {
      const engine = await this.handle.use()
      const r = await engine.assemble({ sessionId: params.sessionId, sessionKey: params.sessionKey, tokenBudget: budget, messages: live })
      this.handle.lastRequestAt.set(sessionOf(params), this.now())
      // What providers see per stored token: scales the thresholds of maintenance.
      if (r.stats?.storedTokens > 0 && !r.stats.liveFallback) this.handle.wireRatio.set(sessionOf(params), r.estimatedTokens / r.stats.storedTokens)
      const out = { messages: r.messages, estimatedTokens: r.estimatedTokens }
      if (r.systemPromptAddition) out.systemPromptAddition = r.systemPromptAddition
      return out
    } catch (err) {
      this.warn(`assemble fell back to live messages for session ${params.sessionId}: ${describeError(err)}`)
      return boundLiveMessages(live, budget)
    }
  }

  /**
   * Compacts toward the budget (`compactionTarget: "budget"`, the default: sweeps
   * until under it) or the threshold (`"threshold"`: one threshold sweep). Every
   * outcome is a result: nothing to do, aborted, summarizer failure, and a context
   * that cannot shrink further (`ok: false`, terminal). The host calls it for a
   * manual `/compact` and when the budget forces it: it runs even while the
   * automatic breaker is open or the spend guard backs off (and ends that backoff).
   */
  async compact(params) {
    const budget = resolveTokenBudget(params, this.config)
    if (this.policy.skipsWrites(params.sessionKey)) return { ok: true, compacted: false, reason: 'session excluded from LCM' }
    if (params.abortSignal?.aborted) return { ok: false, compacted: false, reason: 'aborted' }
    const guard = this.handle.spendGuard(sessionOf(params), this.now)
    guard.clear()
    const target = params.compactionTarget === 'threshold' ? 'threshold' : 'budget'
    await this.afterLifecycle(params)
    try {
      const engine = await this.handle.use()
      const r = await engine.compact({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        tokenBudget: budget,
        // The core maps the target: "budget" sweeps until under the budget, "threshold" sweeps once.
        compactionTarget: target,
        force: params.force === true,
        ...this.overridesParam(params),
        ...(positive(params.currentTokenCount) ? { currentTokenCount: positive(params.currentTokenCount) } : {}),
        ...(typeof params.customInstructions === 'string' && params.customInstructions ? { customInstructions: params.customInstructions } : {}),
        ...(params.abortSignal ? { signal: params.abortSignal } : {}),
      })
      this.handle.recordCompaction(r)
      guard.record(r.summarizer?.calls ?? 0)
      const terminal = r.exhausted && !r.compacted
      return {
        ok: r.ok && !r.aborted && !terminal,
        compacted: r.compacted,
        reason: terminal ? `${r.reason}; nothing left to compact (terminal: the context cannot shrink further)` : r.reason,
        result: {
          tokensBefore: r.tokensBefore,
          tokensAfter: r.tokensAfter,
          details: {
            target,
            mode: r.mode,
            passes: r.passes.length,
            rounds: r.rounds,
            exhausted: r.exhausted,
            aborted: r.aborted,
            errorCode: r.errorCode,
            conversationId: r.conversationId,
            threshold: r.threshold,
            targetTokens: r.targetTokens,
            summarizer: r.summarizer,
          },
        },
      }
    } catch (err) {
      return { ok: false, compacted: false, reason: `compaction failed: ${describeError(err)}` }
    }
  }

  /** `{ overrides }` for an engine call, or nothing. */
  overridesParam(params) {
    const overrides = this.overridesFor(params)
    return overrides ? { overrides } : {}
  }

  breakerReason() {
    const minutes = Math.ceil(this.handle.breaker.remainingMs() / 60_000)
    return `summarizer circuit breaker open after ${this.handle.breaker.failures} authentication failures; retrying in ${minutes} min`
  }

  /**
   * Legacy post-turn hook: stores `messages.slice(prePromptMessageCount)` in one
   * batch. Compaction runs in `maintain` (background turn maintenance).
   */
  async afterTurn(params) {
    if (this.policy.skipsWrites(params.sessionKey)) return
    const start = Number.isInteger(params.prePromptMessageCount) && params.prePromptMessageCount >= 0 ? params.prePromptMessageCount : 0
    const fresh = Array.isArray(params.messages) ? params.messages.slice(start) : []
    // The turn's last model call just ended: the prompt cache was touched now.
    if (this.handle.lastRequestAt.has(sessionOf(params))) this.handle.lastRequestAt.set(sessionOf(params), this.now())
    if (fresh.length === 0 || this.prunesHeartbeat(fresh)) return
    await this.ingestBatch({ sessionId: params.sessionId, sessionKey: params.sessionKey, messages: fresh, isHeartbeat: params.isHeartbeat })
  }

  /**
   * Commits one durable turn atomically and idempotently: the anchors are checked
   * here, the rest of the turn (key, positions, payload hash, receipt) by the core.
   * A replay answers `duplicate`; the same key with another payload rejects
   * (`LCM_TURN_CONFLICT`). Heartbeats store nothing; ignored and stateless
   * sessions commit without writing. A rejection (e.g. `LCM_DB_BUSY` after
   * `busyTimeoutMs`) leaves the turn in the host's outbox, which commits it before
   * the session's next turn; its message starts `lcm-native: <code>:`.
   */
  async commitTurn(params) {
    try {
      checkTurnAnchors(params)
      if (this.policy.skipsWrites(params.sessionKey)) return { status: 'committed' }
      await this.afterLifecycle(params)
      const engine = await this.handle.use()
      const r = await engine.commitTurn({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        advancementKey: params.advancementKey,
        admission: params.admission,
        terminal: params.terminal,
        messages: params.messages,
        isHeartbeat: params.isHeartbeat === true || this.prunesHeartbeat(params.messages),
      })
      return { status: r.status }
    } catch (err) {
      // The host keeps the turn queued and logs only the message: name us and the code.
      throw Object.assign(new Error(`lcm-native: ${describeError(err)}`, { cause: err }), err?.code ? { code: err.code } : {})
    }
  }

  /**
   * Imports the session's existing transcript on first use: the host's SQLite
   * transcript when it offers one, else the JSONL `sessionFile`. The host calls
   * it before every turn; a conversation that already holds the transcript's
   * newest entry answers from that entry alone. Never throws.
   */
  async bootstrap(params) {
    if (this.policy.isIgnored(params.sessionKey)) return { bootstrapped: false, reason: 'session excluded from LCM' }
    if (this.policy.isStateless(params.sessionKey)) return { bootstrapped: false, reason: 'stateless session: LCM is read-only here' }
    await this.afterLifecycle(params)
    try {
      const engine = await this.handle.use()
      const base = { sessionId: params.sessionId, sessionKey: params.sessionKey }
      // A first import (a fork, a sub-agent, a rolled-over session) takes only the
      // transcript's tail within bootstrapMaxTokens; pruneHeartbeatOk leaves
      // acknowledged heartbeat turns out of an import too.
      const cap = {
        ...(Number.isInteger(this.config.bootstrapMaxTokens) ? { maxImportTokens: this.config.bootstrapMaxTokens } : {}),
        ...(this.config.pruneHeartbeatOk === true ? { skipHeartbeatTurns: true } : {}),
      }
      // Called before every turn: the newest entry settles the usual case, so the
      // whole transcript is read (and crosses to the engine) only when asked for.
      const target = transcriptTarget(params)
      const host = target ? await hostTranscript(target) : null
      let r
      if (host) {
        const newest = await host.newest()
        r = await tailFirst(engine, base, newest?.length ? { transcriptEntries: newest } : null, async () => ({ transcriptEntries: await host.whole(), ...cap }))
      } else if (typeof params.sessionFile === 'string' && params.sessionFile && existsSync(params.sessionFile)) {
        const file = { sessionFile: params.sessionFile }
        r = await tailFirst(engine, base, file, () => ({ ...file, ...cap }))
      } else return { bootstrapped: false, reason: 'no transcript to import' }
      return { bootstrapped: r.bootstrapped, importedMessages: r.importedMessages, reason: r.reason }
    } catch (err) {
      this.warn(`bootstrap failed for session ${params.sessionId}: ${describeError(err)}`)
      return { bootstrapped: false, reason: `bootstrap failed: ${describeError(err)}` }
    }
  }

  /**
   * Turn maintenance: evaluates the session against its budget and compacts when
   * due, keeping provider prompt caches warm. Over `contextThreshold` it sweeps
   * every raw message outside the fresh tail (capped by `freshTailMaxBudgetRatio`,
   * so the next compaction is far away), unless fewer than `leafMinChunkTokens`
   * lie there and the context is not near the budget; under it, the leaf trigger
   * waits while the prompt cache is warm until `dynamicLeafChunkTokens.max` raw
   * tokens lie outside the tail. Skipped while the auth breaker is open or the
   * spend guard backs off. The host transcript is never rewritten, so `changed`
   * stays false; `reason` says why it compacted or waited. Rejects with the abort
   * reason when `abortSignal` aborts (hosts do not quarantine that).
   */
  async maintain(params) {
    const signal = params.abortSignal
    if (signal?.aborted) throw abortError(signal)
    this.runRetention()
    if (this.policy.skipsWrites(params.sessionKey)) return { ...NO_REWRITE, reason: 'session excluded from LCM' }
    if (this.handle.breaker.isOpen()) return { ...NO_REWRITE, reason: this.breakerReason() }
    await this.afterLifecycle(params)
    const guard = this.handle.spendGuard(sessionOf(params), this.now)
    if (guard.remainingMs() > 0) return { ...NO_REWRITE, reason: this.spendReason(guard) }
    const budget = resolveTokenBudget(params, this.config)
    let r
    let why
    let files = ''
    try {
      const engine = await this.handle.use()
      files = await this.summarizeLargeFiles(engine, params)
      if (signal?.aborted) throw abortError(signal)
      const current = positive(params.runtimeContext?.currentTokenCount)
      const evaluation = await engine.evaluate({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        tokenBudget: budget,
        ...(current ? { currentTokenCount: current } : {}),
        ...this.overridesParam(params),
      })
      const decision = this.decide(this.wireScaled(evaluation, params), budget, params)
      if (!decision.run) {
        this.handle.compactedLastTurn.delete(sessionOf(params))
        return { ...NO_REWRITE, reason: `${decision.reason}${files}` }
      }
      why = decision.reason
      if (signal?.aborted) throw abortError(signal)
      r = await engine.compact({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        tokenBudget: budget,
        mode: 'sweep',
        force: true,
        ...this.overridesParam(params),
        ...(signal ? { signal } : {}),
      })
    } catch (err) {
      if (signal?.aborted) throw abortError(signal)
      return { ...NO_REWRITE, reason: `maintenance failed: ${describeError(err)}` }
    }
    this.handle.recordCompaction(r)
    guard.record(r.summarizer?.calls ?? 0)
    if (r.passes.length > 0) this.handle.compactedLastTurn.add(sessionOf(params))
    else this.handle.compactedLastTurn.delete(sessionOf(params))
    if (r.aborted && signal?.aborted) throw abortError(signal)
    const calls = r.summarizer ? `, ${r.summarizer.calls} summarizer calls` : ''
    return { ...NO_REWRITE, reason: `lcm store: ${r.reason} (${why}; ${r.passes.length} passes, ${r.tokensBefore} → ${r.tokensAfter} tokens${calls})${files}` }
  }

  /**
   * The evaluation in the tokens providers count: stored counts scaled by the
   * session's last assembled wire ratio (`estimatedTokens / stats.storedTokens`),
   * so that the threshold is reached before the budget clamp has to drop the
   * oldest messages (each drop is a prompt-cache break).
   */
  wireScaled(evaluation, params) {
    const ratio = Math.max(1, this.handle.wireRatio.get(sessionOf(params)) ?? 1)
    const current = Math.max(evaluation.currentTokens, Math.ceil(evaluation.storedTokens * ratio))
    return {
      ...evaluation,
      currentTokens: current,
      shouldCompact: current > evaluation.threshold,
      rawTokensOutsideTail: Math.ceil(evaluation.rawTokensOutsideTail * ratio),
    }
  }

  /**
   * Whether automatic compaction runs now, and why (or why it waits). See
   * `maintain`.
   */
  decide(evaluation, budget, params) {
    const raw = evaluation.rawTokensOutsideTail
    const cache = this.config.cacheAwareCompaction ?? {}
    const aware = cache.enabled !== false
    const critical = evaluation.currentTokens > Math.floor((cache.criticalBudgetPressureRatio ?? 0.9) * budget)
    const cold = this.cacheCold(params)
    const temperature = cold ? 'prompt cache cold' : 'prompt cache warm'
    const minChunk = this.config.leafMinChunkTokens ?? 0
    // Two breaks in a row cost the cache twice: right after a compaction, wait while
    // the context still fits the budget.
    if (evaluation.shouldCompact && this.handle.compactedLastTurn.has(sessionOf(params)) && evaluation.currentTokens <= budget) {
      return { run: false, reason: `waiting: over threshold (${evaluation.currentTokens} > ${evaluation.threshold} tokens) but compacted on the previous turn and within the budget` }
    }
    if (evaluation.shouldCompact) {
      if (raw === 0) return { run: false, reason: `over threshold (${evaluation.currentTokens} > ${evaluation.threshold} tokens) with nothing outside the fresh tail` }
      if (raw < minChunk && !critical) {
        return { run: false, reason: `waiting: over threshold (${evaluation.currentTokens} > ${evaluation.threshold} tokens) but only ${raw} tokens outside the fresh tail (minimum chunk ${minChunk})` }
      }
      return { run: true, reason: `${critical ? 'near the budget' : 'over threshold'}, ${temperature}` }
    }
    if (!evaluation.leafTrigger) return { run: false, reason: 'below threshold' }
    const dynamic = this.config.dynamicLeafChunkTokens ?? {}
    const max = positive(dynamic.max) ?? 2 * (this.config.engineOptions.leafChunkTokens ?? 20_000)
    if (aware && dynamic.enabled !== false && !cold && raw < max) {
      return { run: false, reason: `waiting: ${raw} raw tokens outside the fresh tail, ${temperature}; compacting at ${max} or once the cache is cold` }
    }
    return { run: true, reason: `leaf trigger (${raw} raw tokens outside the fresh tail), ${temperature}` }
  }

  /**
   * Whether the session's prompt cache has expired: the host's prompt-cache
   * telemetry when given (`runtimeContext.promptCache`: retention none, `expiresAt`,
   * `lastCacheTouchAt`), else the time since this engine last assembled the
   * session's request, against `cacheAwareCompaction.cacheTTLSeconds`.
   */
  cacheCold(params) {
    const now = this.now()
    const ttlMs = 1000 * (positive(this.config.cacheAwareCompaction?.cacheTTLSeconds) ?? 300)
    const info = params.runtimeContext?.promptCache
    if (info?.retention === 'none') return true
    if (typeof info?.expiresAt === 'number') return info.expiresAt <= now
    const touched = typeof info?.lastCacheTouchAt === 'number' ? info.lastCacheTouchAt : this.handle.lastRequestAt.get(sessionOf(params))
    return touched === undefined || now - touched > ttlMs
  }

  spendReason(guard) {
    const minutes = Math.ceil(guard.remainingMs() / 60_000)
    return `deferred: summary spend guard (${guard.windowCalls()} summarizer calls in the last ${Math.round(guard.windowMs / 60_000)} min, allowance ${guard.maxCalls}); automatic compaction resumes in ${minutes} min, a manual /compact runs now`
  }

  /**
   * Maintenance step of `largeFileSummaryModel`: the session's large files whose
   * exploration summary is still the deterministic one get the model's (a few per
   * turn, before compaction may summarize the messages that show them). A failure
   * keeps the deterministic summary (the engine retries later) and never fails the
   * turn. Returns a note for `reason` ('' when nothing happened).
   */
  async summarizeLargeFiles(engine, params) {
    if (!this.config.largeFileSummaryModel?.trim()) return ''
    try {
      const r = await engine.summarizeLargeFiles({ sessionId: params.sessionId, sessionKey: params.sessionKey, limit: LARGE_FILES_PER_TURN })
      if (r.failed > 0) this.warn(`large-file summary failed for session ${params.sessionId} (kept the deterministic one, will retry): ${r.lastError}`)
      return r.summarized || r.failed ? `; large files: ${r.summarized} summarized by the model, ${r.failed} failed` : ''
    } catch (err) {
      this.warn(`large-file summaries skipped for session ${params.sessionId}: ${describeError(err)}`)
      return ''
    }
  }

  /**
   * Runs the retention policies (`retention`, `maxDatabaseBytes`) in the
   * background, one small step (RETENTION_STEP conversations) at a time, at most
   * every RETENTION_EVERY_MS per database, or at the next `maintain` while more
   * are due. Never awaited by the turn; failures and the size warning go to the
   * log.
   */
  runRetention() {
    if (!this.config.retention?.length && !this.config.maxDatabaseBytes) return
    let st = retentionState.get(this.handle)
    if (!st) retentionState.set(this.handle, (st = { at: 0, running: false }))
    const now = Date.now()
    if (st.running || now - st.at < RETENTION_EVERY_MS) return
    st.running = true
    st.at = now
    st.done = (async () => {
      try {
        const engine = await this.handle.use()
        if (typeof engine.prune !== 'function') return
        const r = await engine.prune({ limit: RETENTION_STEP })
        if (r.capWarning) this.warn(r.capWarning)
        if (r.remaining > 0) st.at = 0
      } catch (err) {
        this.warn(`retention failed: ${describeError(err)}`)
      } finally {
        st.running = false
      }
    })()
  }

  /** The running retention step, if any (for tests and shutdown). */
  retentionDone() {
    return retentionState.get(this.handle)?.done
  }

  /**
   * Before a sub-agent starts: a delegation grant over the parent's conversation,
   * bound to the child session key (narrowed by the parent's own grant, if any).
   * The rollback revokes it. Undefined when there is nothing to delegate.
   */
  async prepareSubagentSpawn(params) {
    const parentKey = params.parentSessionKey?.trim()
    const childKey = params.childSessionKey?.trim()
    if (!parentKey || !childKey) return undefined
    if (this.policy.isIgnored(parentKey) || this.policy.isIgnored(childKey)) return undefined
    try {
      const engine = await this.handle.use()
      const bindings = this.handle.bindings
      const parentGrantId = bindings.get(parentKey)
      const parentGrant = parentGrantId ? await engine.getGrant(parentGrantId) : null
      const conversation = parentGrant ? null : await engine.getConversation({ sessionKey: parentKey })
      if (!parentGrant && !conversation) return undefined
      if (parentGrant && (parentGrant.revoked || Date.parse(parentGrant.expiresAt) <= Date.now())) return undefined
      const cap = this.config.maxExpandTokens
      const grant = await engine.createGrant({
        conversationIds: parentGrant ? parentGrant.conversationIds : [conversation.conversationId],
        tokenCap: parentGrant ? Math.max(1, Math.min(parentGrant.remainingTokens, cap)) : cap,
        ...(positive(params.ttlMs) ? { ttlMs: positive(params.ttlMs) } : {}),
        ...(parentGrant?.summaryIds?.length ? { summaryIds: parentGrant.summaryIds } : {}),
        ...(parentGrant ? { maxDepth: Math.max(1, parentGrant.maxDepth - 1) } : {}),
        issuer: parentKey,
      })
      bindings.set(childKey, grant.grantId)
      return {
        rollback: async () => {
          if (bindings.get(childKey) === grant.grantId) bindings.delete(childKey)
          await engine.revokeGrant(grant.grantId).catch(() => false)
        },
      }
    } catch (err) {
      this.warn(`prepareSubagentSpawn failed for ${childKey}: ${describeError(err)}`)
      return undefined
    }
  }

  /**
   * When a sub-agent ends: `deleted` revokes its grant and forgets the binding,
   * `completed` revokes it (later tool calls see a revoked grant), `released` and
   * `swept` forget the binding.
   */
  async onSubagentEnded(params) {
    const childKey = params.childSessionKey?.trim()
    if (!childKey) return
    const bindings = this.handle.bindings
    const grantId = bindings.get(childKey)
    if (!grantId) return
    try {
      if (params.reason === 'deleted' || params.reason === 'completed') {
        const engine = await this.handle.use()
        await engine.revokeGrant(grantId)
      }
    } catch (err) {
      this.warn(`revoking the grant of ${childKey} failed: ${describeError(err)}`)
    }
    if (params.reason !== 'completed') bindings.delete(childKey)
  }

  /** Releases this instance's reference on the shared database (the last one closes it). */
  async dispose() {
    if (this.disposed) return
    this.disposed = true
    await this.release()
  }
}

/**
 * Bootstraps from the transcript's `tail` first (`transcriptTail`) and from the
 * whole (`whole()`) only when the core asks for it, or when there is no tail.
 */
async function tailFirst(engine, base, tail, whole) {
  const r = tail ? await engine.bootstrap({ ...base, ...tail, transcriptTail: true }) : null
  return r && !r.needsWholeTranscript ? r : engine.bootstrap({ ...base, ...(await whole()) })
}

/**
 * A ContextEngine over the shared LcmEngine of the configured database.
 * @param {{ config?: Record<string, unknown>, env?: Record<string, string|undefined>, llm?: { complete: Function }, logger?: object }} [options]
 */
export function createContextEngine(options = {}) {
  return new LcmContextEngine(options)
}
