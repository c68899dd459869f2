// One open LcmEngine per database file, shared by every context-engine instance
// the host creates (it builds one per logical turn) and by the recall tools.
// Reference-counted: the last release closes the database.

import { createRequire } from 'node:module'
import { resolve } from 'node:path'

const require = createRequire(import.meta.url)
// The addon is loaded at the first open, not at import: describing the plugin
// needs none.
const { loadNative } = require('../native.js')

/** Sessions whose last budget a handle remembers (two entries each: key and id). */
const MAX_REMEMBERED_SESSIONS = 2048

/** @type {Map<string, SharedHandle>} */
const handles = new Map()

/** The sharing key of a database: the resolved path, or the default location. */
export function databaseKey(dbPath) {
  if (!dbPath) return '(default)'
  if (dbPath === ':memory:') return ':memory:'
  return resolve(dbPath)
}

/**
 * Consecutive summarizer authentication failures trip the breaker: compaction is
 * then skipped (with a reason) until the cooldown has passed, instead of asking a
 * provider that refuses the credentials on every turn.
 */
export class AuthBreaker {
  constructor(threshold, cooldownMs, now = Date.now) {
    this.threshold = threshold
    this.cooldownMs = cooldownMs
    this.now = now
    this.failures = 0
    this.openUntil = 0
  }

  /** True while the breaker is open. */
  isOpen() {
    if (this.openUntil && this.now() >= this.openUntil) {
      this.openUntil = 0
      this.failures = 0
    }
    return this.openUntil > 0
  }

  /** Milliseconds until the breaker closes (0 when closed). */
  remainingMs() {
    return this.isOpen() ? this.openUntil - this.now() : 0
  }

  /** Counts a compaction outcome: an auth failure, or anything else (which resets). */
  record({ authFailure, summarized }) {
    if (authFailure) {
      this.failures += 1
      if (this.failures >= this.threshold) this.openUntil = this.now() + this.cooldownMs
    } else if (summarized) {
      this.failures = 0
    }
  }
}

/**
 * The summary spend guard of one session: past `maxCalls` summarizer calls within
 * `windowMs`, automatic compaction backs off for `backoffMs` (it defers and says
 * so; nothing is written for lack of budget). A manual compaction clears the
 * backoff.
 */
export class SpendGuard {
  constructor({ windowMs, maxCalls, backoffMs }, now = Date.now) {
    this.windowMs = windowMs
    this.maxCalls = maxCalls
    this.backoffMs = backoffMs
    this.now = now
    /** Times of the calls inside the window, oldest first. */
    this.calls = []
    this.backoffUntil = 0
  }

  prune() {
    const since = this.now() - this.windowMs
    while (this.calls.length && this.calls[0] <= since) this.calls.shift()
  }

  /** Milliseconds of backoff left (0: automatic compaction may run). */
  remainingMs() {
    return Math.max(0, this.backoffUntil - this.now())
  }

  /** Calls counted in the current window. */
  windowCalls() {
    this.prune()
    return this.calls.length
  }

  /** Counts `n` summarizer calls made now; starts the backoff past the allowance. */
  record(n) {
    const t = this.now()
    for (let i = 0; i < n; i++) this.calls.push(t)
    if (this.windowCalls() >= this.maxCalls) this.backoffUntil = t + this.backoffMs
  }

  /** A manual compaction: the backoff ends (its calls still count). */
  clear() {
    this.backoffUntil = 0
  }
}

/** Whether an error of a host LLM call should hand the request to the next model: overload, timeout, rate limit, or an unusable answer. */
export function isRetryableLlmError(err) {
  if (err?.lcmBadResponse) return true
  const status = err?.status ?? err?.statusCode ?? err?.response?.status
  if (status === 408 || status === 425 || status === 429 || (typeof status === 'number' && status >= 500)) return true
  const text = `${err?.code ?? ''} ${err?.name ?? ''} ${err?.message ?? ''}`
  return /\b(overloaded|overload|rate[ _-]?limit|too many requests|timed? ?out|timeout|ETIMEDOUT|ECONNRESET|ECONNREFUSED|unavailable|529|503|502|500|429|AbortError)\b/i.test(text)
}

/** Whether an error thrown by a host LLM looks like refused credentials. */
export function isAuthError(err) {
  const status = err?.status ?? err?.statusCode ?? err?.response?.status
  if (status === 401 || status === 403) return true
  const text = `${err?.code ?? ''} ${err?.name ?? ''} ${err?.message ?? ''}`
  return /\b(401|403|unauthori[sz]ed|forbidden|invalid[ _-]?api[ _-]?key|authentication|auth[ _-]?(error|failed|failure))\b/i.test(text)
}

/**
 * A summarizer callback over the host's `llm.complete`: the configured model (the
 * host's own when none), then each of `fallbacks` (`provider/model` refs) in order
 * when a call is overloaded, times out, is rate limited or answers no text. Marks
 * refused credentials on `state` so the breaker can count them; refused
 * credentials end the chain.
 */
export function hostSummarizer(llm, { model, state, thinking, purpose, fallbacks = [] }) {
  const candidates = [model, ...fallbacks.filter((m) => m && m !== model)]
  return async (request) => {
    let last
    for (const candidate of candidates) {
      try {
        const result = await llm.complete({
          messages: [{ role: 'user', content: request.prompt }],
          systemPrompt: request.systemPrompt,
          maxTokens: Math.max(256, Math.ceil(request.targetTokens * 1.5)),
          ...(candidate ? { model: candidate } : {}),
          // enableSummaryThinking: false asks the host for no reasoning; otherwise the model's default.
          ...(thinking === false ? { reasoning: 'off' } : {}),
          purpose: purpose ?? (request.depth === 0 ? 'lcm-native leaf summary' : `lcm-native condensed summary (depth ${request.depth})`),
        })
        state.lastAuthFailure = false
        const text = String(result?.text ?? '')
        if (!text.trim()) throw Object.assign(new Error(`summarizer model ${candidate ?? '(host default)'} answered no text`), { lcmBadResponse: true })
        return { content: text, ...(result?.model ? { model: result.model } : {}) }
      } catch (err) {
        state.lastAuthFailure = isAuthError(err)
        last = err
        if (state.lastAuthFailure || !isRetryableLlmError(err)) throw err
      }
    }
    throw last
  }
}

/**
 * The model ref the host is asked for large files' exploration summaries:
 * `largeFileSummaryModel`, prefixed with `largeFileSummaryProvider` when it names
 * no provider itself (undefined when unset: no large-file model).
 */
export function largeFileModelRef(config) {
  const model = config.largeFileSummaryModel?.trim()
  if (!model) return undefined
  const provider = config.largeFileSummaryProvider?.trim()
  return provider && !model.includes('/') ? `${provider}/${model}` : model
}

/** An open (or opening) engine and the state every instance over it shares. */
export class SharedHandle {
  /**
   * @param {string} [packageDir] where the package is installed, named by the error
   *   when the addon is not built (OpenClaw runs the plugin from a copy)
   */
  constructor(key, options, breakerConfig, summarizerState, packageDir) {
    this.key = key
    this.refs = 0
    this.closed = false
    /** @type {import('../index.js').LcmEngine | null} */
    this.engine = null
    this.error = null
    /** Grants of sub-agent sessions: child session key → grant id. */
    this.bindings = new Map()
    this.breaker = new AuthBreaker(breakerConfig.threshold, breakerConfig.cooldownMs)
    /** The spend guard's settings; one guard per session key (`spendGuard`). */
    this.spendConfig = { windowMs: 600_000, maxCalls: 24, backoffMs: 1_800_000 }
    /** @type {Map<string, SpendGuard>} */
    this.spendGuards = new Map()
    /** Session key → when its last request was assembled (ms), for the prompt-cache TTL. */
    this.lastRequestAt = new Map()
    /** Session key → wire tokens per stored token of its last assembled context. */
    this.wireRatio = new Map()
    /** Sessions whose last maintenance compacted. */
    this.compactedLastTurn = new Set()
    /** Set by the host-LLM summarizer: whether its last failure was refused credentials. */
    this.summarizerState = summarizerState
    this.toolDefinitions = null
    /** The last budget and overrides seen per session (key and id), for `/lcm`. */
    this.budgets = new Map()
    // A missing addon fails the open like an unreadable file: the engine falls back
    // to the live context and the host keeps compacting, instead of the plugin
    // failing to register (OpenClaw then refuses every agent run).
    let opening
    try {
      opening = loadNative(packageDir).LcmEngine.open(options)
    } catch (err) {
      opening = Promise.reject(err)
    }
    this.ready = opening.then(
      (engine) => {
        this.engine = engine
        this.toolDefinitions = engine.getRecallToolDefinitions()
        if (this.closed) return engine.close().then(() => null)
        return engine
      },
      (err) => {
        // The next acquire opens again (a busy or briefly missing file may recover).
        this.error = err
        if (handles.get(this.key) === this) handles.delete(this.key)
        return null
      },
    )
  }

  /** True once the database opened (and until it is closed). */
  get opened() {
    return this.engine !== null && !this.closed
  }

  /** The engine, or throws the reason it is unavailable. */
  async use() {
    const engine = await this.ready
    if (this.closed) throw Object.assign(new Error('lcm-native engine was shut down'), { code: 'LCM_CLOSED' })
    if (!engine) throw this.error
    return engine
  }

  /**
   * Remembers the budget and policy overrides a session's turn used (`/lcm`
   * answers and compacts with them).
   * @param {{ sessionKey?: string, sessionId?: string }} session
   * @param {{ budget: number, overrides?: object }} seen
   */
  noteSession(session, seen) {
    for (const k of [session?.sessionKey, session?.sessionId]) {
      if (!k) continue
      this.budgets.delete(k)
      this.budgets.set(k, seen)
    }
    // Bounds memory on a gateway that sees many sessions: the oldest go first.
    while (this.budgets.size > MAX_REMEMBERED_SESSIONS) this.budgets.delete(this.budgets.keys().next().value)
  }

  /** What was last noted for the session (by key, then id), if anything. */
  sessionOf(session) {
    return this.budgets.get(session?.sessionKey) ?? this.budgets.get(session?.sessionId)
  }

  /** The spend guard of a session (by key, else id). */
  spendGuard(session, now = Date.now) {
    let g = this.spendGuards.get(session)
    if (!g) {
      g = new SpendGuard(this.spendConfig, now)
      this.spendGuards.set(session, g)
    }
    return g
  }

  /** Feeds a compaction result to the auth breaker. */
  recordCompaction(result) {
    const auth = result.errorCode === 'LCM_LLM_AUTH' || (result.errorCode === 'LCM_CALLBACK' && this.summarizerState.lastAuthFailure)
    this.breaker.record({ authFailure: auth, summarized: result.passes?.length > 0 })
  }

  /** Closes the database now, whoever still holds it (gateway stop). */
  async close() {
    if (this.closed) return
    this.closed = true
    if (handles.get(this.key) === this) handles.delete(this.key)
    const engine = await this.ready
    if (engine) await engine.close()
  }
}

/**
 * Takes a reference on the shared engine of `options.dbPath`, opening it on first
 * use. `summarizer` (a host LLM callback) is installed only by the opener.
 * @returns {{ handle: SharedHandle, release: () => Promise<void> }}
 */
export function acquire(options, { breaker, llm, summaryModel, summaryThinking, fallbackModels, spend, largeFileModel, packageDir } = {}) {
  const key = databaseKey(options.dbPath)
  let handle = handles.get(key)
  if (!handle) {
    const breakerConfig = breaker ?? { threshold: 5, cooldownMs: 1_800_000 }
    const state = { lastAuthFailure: false }
    // The host's LLM wins over a configured provider (whose name the host may own).
    let open = options
    if (llm) {
      // The host's LLM tries the fallbacks itself (as `provider/model` refs).
      const { summaryProvider: _p, fallbackProviders: _f, ...rest } = options
      open = { ...rest, summarizer: hostSummarizer(llm, { model: summaryModel, state, thinking: summaryThinking, fallbacks: fallbackModels }) }
      // Large files' exploration summaries: the host's model too, asked for
      // `largeFileSummaryModel` (prefixed with its provider when it names none).
      if (largeFileModel && open.largeFileSummaryModel) {
        const { largeFileSummaryProvider: _lp, ...withoutProvider } = open
        const purpose = 'lcm-native large-file exploration summary'
        open = { ...withoutProvider, largeFileSummarizer: hostSummarizer(llm, { model: largeFileModel, state: { lastAuthFailure: false }, thinking: summaryThinking, purpose }) }
      }
    }
    handle = new SharedHandle(key, open, breakerConfig, state, packageDir)
    if (spend) handle.spendConfig = spend
    handles.set(key, handle)
  }
  handle.refs += 1
  let released = false
  return {
    handle,
    release: async () => {
      if (released) return
      released = true
      handle.refs -= 1
      if (handle.refs <= 0) await handle.close()
    },
  }
}

/** How many databases are open through this module (for tests and diagnostics). */
export function openHandleCount() {
  return handles.size
}
