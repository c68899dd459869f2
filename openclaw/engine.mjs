// The ContextEngine OpenClaw runs: each lifecycle method maps the host's params
// onto the shared LcmEngine and never throws where the host would quarantine the
// engine (results say what went wrong); only a malformed durable turn, a
// conflicting commit and programmer errors reject.

import { createRequire } from 'node:module'
import { existsSync } from 'node:fs'
import { resolveConfig } from './config.mjs'
import { SessionPolicy } from './sessions.mjs'
import { acquire } from './shared.mjs'
import { boundLiveMessages } from './fallback.mjs'
import { checkTurnAnchors } from './turn.mjs'
import { hostTranscript, transcriptTarget } from './transcript.mjs'

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

function describeError(err) {
  return err?.code ? `${err.code}: ${err.message}` : String(err?.message ?? err)
}

function abortError(signal) {
  return signal.reason ?? Object.assign(new Error('The operation was aborted'), { name: 'AbortError' })
}

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
    const { handle, release } = acquire(this.config.engineOptions, {
      llm,
      summaryModel: this.config.summaryModel,
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

  /** Stores one message (nothing for ignored/stateless sessions). */
  async ingest(params) {
    if (this.policy.skipsWrites(params.sessionKey)) return { ingested: false }
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
    try {
      const engine = await this.handle.use()
      const r = await engine.ingestBatch({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        messages: params.messages,
        isHeartbeat: params.isHeartbeat === true,
      })
      return { ingestedCount: r.ingestedCount }
    } catch (err) {
      this.warn(`ingestBatch failed for session ${params.sessionId}: ${describeError(err)}`)
      return { ingestedCount: 0 }
    }
  }

  /**
   * Builds the model context under the resolved budget. When the store cannot
   * answer, returns the newest live messages that fit the budget.
   */
  async assemble(params) {
    const budget = resolveTokenBudget(params, this.config)
    const live = Array.isArray(params.messages) ? params.messages : []
    if (this.policy.isIgnored(params.sessionKey)) return boundLiveMessages(live, budget)
    try {
      const engine = await this.handle.use()
      const r = await engine.assemble({ sessionId: params.sessionId, sessionKey: params.sessionKey, tokenBudget: budget, messages: live })
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
   * outcome is a result: nothing to do, aborted, summarizer failure, breaker open,
   * and a context that cannot shrink further (`ok: false`, terminal).
   */
  async compact(params) {
    const budget = resolveTokenBudget(params, this.config)
    if (this.policy.skipsWrites(params.sessionKey)) return { ok: true, compacted: false, reason: 'session excluded from LCM' }
    if (params.abortSignal?.aborted) return { ok: false, compacted: false, reason: 'aborted' }
    if (this.handle.breaker.isOpen()) return { ok: false, compacted: false, reason: this.breakerReason() }
    const target = params.compactionTarget === 'threshold' ? 'threshold' : 'budget'
    try {
      const engine = await this.handle.use()
      const r = await engine.compact({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        tokenBudget: budget,
        // The core maps the target: "budget" sweeps until under the budget, "threshold" sweeps once.
        compactionTarget: target,
        force: params.force === true,
        ...(positive(params.currentTokenCount) ? { currentTokenCount: positive(params.currentTokenCount) } : {}),
        ...(typeof params.customInstructions === 'string' && params.customInstructions ? { customInstructions: params.customInstructions } : {}),
        ...(params.abortSignal ? { signal: params.abortSignal } : {}),
      })
      this.handle.recordCompaction(r)
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
          },
        },
      }
    } catch (err) {
      return { ok: false, compacted: false, reason: `compaction failed: ${describeError(err)}` }
    }
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
    if (fresh.length === 0) return
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
      const engine = await this.handle.use()
      const r = await engine.commitTurn({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        advancementKey: params.advancementKey,
        admission: params.admission,
        terminal: params.terminal,
        messages: params.messages,
        isHeartbeat: params.isHeartbeat === true,
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
    try {
      const engine = await this.handle.use()
      const base = { sessionId: params.sessionId, sessionKey: params.sessionKey }
      // Called before every turn: the newest entry settles the usual case, so the
      // whole transcript is read (and crosses to the engine) only when asked for.
      const target = transcriptTarget(params)
      const host = target ? await hostTranscript(target) : null
      let r
      if (host) {
        const newest = await host.newest()
        r = await tailFirst(engine, base, newest?.length ? { transcriptEntries: newest } : null, async () => ({ transcriptEntries: await host.whole() }))
      } else if (typeof params.sessionFile === 'string' && params.sessionFile && existsSync(params.sessionFile)) {
        const file = { sessionFile: params.sessionFile }
        r = await tailFirst(engine, base, file, () => file)
      } else return { bootstrapped: false, reason: 'no transcript to import' }
      return { bootstrapped: r.bootstrapped, importedMessages: r.importedMessages, reason: r.reason }
    } catch (err) {
      this.warn(`bootstrap failed for session ${params.sessionId}: ${describeError(err)}`)
      return { bootstrapped: false, reason: `bootstrap failed: ${describeError(err)}` }
    }
  }

  /**
   * Turn maintenance: evaluates the session against its budget, then runs one
   * incremental compaction when due. The host transcript is never rewritten, so
   * `changed` stays false; `reason` says what happened in the LCM store. Rejects
   * with the abort reason when `abortSignal` aborts (hosts do not quarantine that).
   */
  async maintain(params) {
    const signal = params.abortSignal
    if (signal?.aborted) throw abortError(signal)
    this.runRetention()
    if (this.policy.skipsWrites(params.sessionKey)) return { ...NO_REWRITE, reason: 'session excluded from LCM' }
    if (this.handle.breaker.isOpen()) return { ...NO_REWRITE, reason: this.breakerReason() }
    const budget = resolveTokenBudget(params, this.config)
    let r
    try {
      const engine = await this.handle.use()
      const current = positive(params.runtimeContext?.currentTokenCount)
      const evaluation = await engine.evaluate({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        tokenBudget: budget,
        ...(current ? { currentTokenCount: current } : {}),
      })
      if (!evaluation.shouldCompact && !evaluation.leafTrigger) return { ...NO_REWRITE, reason: 'below threshold' }
      if (signal?.aborted) throw abortError(signal)
      r = await engine.compact({
        sessionId: params.sessionId,
        sessionKey: params.sessionKey,
        tokenBudget: budget,
        mode: 'incremental',
        ...(signal ? { signal } : {}),
      })
    } catch (err) {
      if (signal?.aborted) throw abortError(signal)
      return { ...NO_REWRITE, reason: `maintenance failed: ${describeError(err)}` }
    }
    this.handle.recordCompaction(r)
    if (r.aborted && signal?.aborted) throw abortError(signal)
    return { ...NO_REWRITE, reason: `lcm store: ${r.reason} (${r.passes.length} passes, ${r.tokensBefore} → ${r.tokensAfter} tokens)` }
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
