// Configuration of the OpenClaw plugin: the plugin config object
// (`plugins.entries.lcm-native.config`) and the reference plugin's environment
// variables, under the reference's names. Precedence: environment, then plugin
// config, then defaults (the reference's order).

import { parseRules, RULE_SCHEMA, RULES_TS_TYPE } from './overrides.mjs'

/** Default token budget when neither the host nor the config gives one. */
export const DEFAULT_TOKEN_BUDGET = 128_000

/**
 * The one table of the plugin's keys. One row per key: the config name, its
 * aliases, the environment variable, the value type, and the `LcmEngine.open`
 * option it feeds (none: used by the plugin). `description`, `default`, `minimum`,
 * `maximum` and `label` (a UI hint's label) feed the manifest's `configSchema` and
 * `uiHints` and the types in `config.d.mts`, all generated from this table by
 * `npm run gen:config` (scripts/gen-config.mjs); `default` documents the engine's
 * default for an engine option. `resolved`: `resolveConfig` sets the key to its
 * `default` when neither config nor environment gives it.
 * @type {ReadonlyArray<import('./index.mjs').ConfigKey>}
 */
export const CONFIG_KEYS = [
  { key: 'enabled', env: 'LCM_ENABLED', type: 'boolean', default: true, resolved: true, label: 'Enabled', description: 'Turn lcm-native off without uninstalling it' },
  { key: 'databasePath', aliases: ['dbPath'], env: 'LCM_DATABASE_PATH', type: 'string', option: 'dbPath', label: 'Database path', description: 'SQLite file (default ${OPENCLAW_STATE_DIR}/lcm.db, else ~/.openclaw/lcm.db)' },
  { key: 'largeFilesDir', env: 'LCM_LARGE_FILES_DIR', type: 'string', option: 'largeFilesDir', description: 'Where file blocks too large for the database are stored (default lcm-files beside the database)' },
  { key: 'ignoreSessionPatterns', env: 'LCM_IGNORE_SESSION_PATTERNS', type: 'list', default: [], resolved: true, label: 'Ignored sessions', description: 'Session-key globs LCM skips entirely' },
  { key: 'statelessSessionPatterns', env: 'LCM_STATELESS_SESSION_PATTERNS', type: 'list', default: [], resolved: true, label: 'Stateless sessions', description: 'Session-key globs that read from LCM but never write' },
  { key: 'skipStatelessSessions', env: 'LCM_SKIP_STATELESS_SESSIONS', type: 'boolean', default: true, resolved: true, description: 'Whether statelessSessionPatterns apply (false: those sessions are written too)' },
  { key: 'contextThreshold', env: 'LCM_CONTEXT_THRESHOLD', type: 'number', option: 'contextThreshold', default: 0.75, minimum: 0, maximum: 1, label: 'Context threshold', description: 'Fraction of the token budget above which compaction runs' },
  { key: 'freshTailCount', env: 'LCM_FRESH_TAIL_COUNT', type: 'integer', option: 'freshTailCount', default: 64, minimum: 1, label: 'Fresh tail count', description: 'Newest messages never compacted' },
  { key: 'freshTailMaxTokens', env: 'LCM_FRESH_TAIL_MAX_TOKENS', type: 'integer', option: 'freshTailMaxTokens', minimum: 0, description: 'Token cap on the fresh tail (the newest user turn is always kept whole); default none' },
  { key: 'leafMinFanout', env: 'LCM_LEAF_MIN_FANOUT', type: 'integer', option: 'leafMinFanout', default: 8, minimum: 1, description: 'Leaf summaries needed before they are condensed' },
  { key: 'condensedMinFanout', env: 'LCM_CONDENSED_MIN_FANOUT', type: 'integer', option: 'condensedMinFanout', default: 4, minimum: 1, description: 'Condensed summaries of one depth needed before they are condensed' },
  { key: 'condensedMinFanoutHard', env: 'LCM_CONDENSED_MIN_FANOUT_HARD', type: 'integer', option: 'condensedMinFanoutHard', default: 2, minimum: 1, description: 'Condensation fanout when the context is over budget' },
  { key: 'sweepMaxDepth', aliases: ['incrementalMaxDepth'], env: ['LCM_SWEEP_MAX_DEPTH', 'LCM_INCREMENTAL_MAX_DEPTH'], type: 'integer', option: 'incrementalMaxDepth', default: 1, minimum: -1, description: 'Deepest source depth condensed at normal fanout, by sweeps and incremental passes (0: leaves only, -1: unlimited); deeper condensation only under summary-prefix pressure' },
  { key: 'leafChunkTokens', env: 'LCM_LEAF_CHUNK_TOKENS', type: 'integer', option: 'leafChunkTokens', default: 20_000, minimum: 1, description: 'Tokens of messages one leaf summary covers at most' },
  { key: 'maxSweepIterations', env: 'LCM_MAX_SWEEP_ITERATIONS', type: 'integer', option: 'maxSweepIterations', default: 200, minimum: 1, description: 'Passes one sweep may run' },
  { key: 'sweepDeadlineMs', env: 'LCM_SWEEP_DEADLINE_MS', type: 'integer', option: 'sweepDeadlineMs', default: 300_000, minimum: 1, description: 'Wall-clock limit of one compaction call, in milliseconds' },
  { key: 'leafTargetTokens', env: 'LCM_LEAF_TARGET_TOKENS', type: 'integer', option: 'leafTargetTokens', default: 2_400, minimum: 1, description: 'Upper bound of a leaf summary\'s target length, in tokens' },
  { key: 'condensedTargetTokens', env: 'LCM_CONDENSED_TARGET_TOKENS', type: 'integer', option: 'condensedTargetTokens', default: 2_000, minimum: 1, description: 'Target length of a condensed summary, in tokens' },
  { key: 'summaryMaxOverageFactor', env: 'LCM_SUMMARY_MAX_OVERAGE_FACTOR', type: 'number', option: 'summaryMaxOverageFactor', default: 3, minimum: 1, description: 'A summary longer than this factor times its target is capped' },
  { key: 'fallbackMaxTokens', env: 'LCM_FALLBACK_MAX_TOKENS', type: 'integer', option: 'fallbackMaxTokens', default: 512, minimum: 1, description: 'Size of the deterministic truncation used when the summarizer fails, in tokens' },
  { key: 'largeFileThresholdTokens', aliases: ['largeFileTokenThreshold'], env: 'LCM_LARGE_FILE_TOKEN_THRESHOLD', type: 'integer', option: 'largeFileTokenThreshold', default: 25_000, minimum: 1, description: 'File blocks larger than this many tokens are stored outside the database' },
  { key: 'maxAssemblyTokenBudget', env: 'LCM_MAX_ASSEMBLY_TOKEN_BUDGET', type: 'integer', minimum: 1, description: 'Cap on the token budget of an assembled context, whatever the host asks; default none' },
  { key: 'maxExpandTokens', env: 'LCM_MAX_EXPAND_TOKENS', type: 'integer', option: 'maxExpandTokens', default: 4_000, minimum: 1, resolved: true, description: 'Default token cap of expansions and delegation grants' },
  { key: 'summaryModel', env: 'LCM_SUMMARY_MODEL', type: 'string', label: 'Summary model', description: 'Model for summaries; provider/model names a provider. Default: the host model through api.runtime.llm' },
  { key: 'summaryProvider', env: 'LCM_SUMMARY_PROVIDER', type: 'string', description: 'Provider of summaryModel when it names none (anthropic, openai, openai-responses, offline)' },
  { key: 'expansionModel', env: 'LCM_EXPANSION_MODEL', type: 'string', description: 'Model that answers lcm_expand_query; provider/model names a provider (default: the host model)' },
  { key: 'delegationTimeoutMs', env: 'LCM_DELEGATION_TIMEOUT_MS', type: 'integer', default: 120_000, minimum: 1, resolved: true, description: 'Time to live of an lcm_expand_query delegation grant, in milliseconds' },
  { key: 'summaryTimeoutMs', env: 'LCM_SUMMARY_TIMEOUT_MS', type: 'integer', option: 'summaryTimeoutMs', default: 60_000, minimum: 1, description: 'Timeout of one summarizer request, in milliseconds' },
  { key: 'customInstructions', env: 'LCM_CUSTOM_INSTRUCTIONS', type: 'string', option: 'customInstructions', description: 'Operator instructions added to every summarization prompt' },
  { key: 'circuitBreakerThreshold', env: 'LCM_CIRCUIT_BREAKER_THRESHOLD', type: 'integer', default: 5, minimum: 1, resolved: true, description: 'Consecutive summarizer failures after which compaction pauses' },
  { key: 'circuitBreakerCooldownMs', env: 'LCM_CIRCUIT_BREAKER_COOLDOWN_MS', type: 'integer', default: 1_800_000, minimum: 1, resolved: true, description: 'How long compaction pauses once the circuit breaker trips, in milliseconds' },
  // Ours (no reference equivalent).
  { key: 'defaultTokenBudget', env: 'LCM_DEFAULT_TOKEN_BUDGET', type: 'integer', default: DEFAULT_TOKEN_BUDGET, minimum: 1, resolved: true, description: 'Token budget when the host gives none' },
  { key: 'timezone', env: 'LCM_TIMEZONE', type: 'string', option: 'timezone', description: 'IANA zone of the timestamps in prompts and summaries (default TZ, else UTC)' },
  { key: 'busyTimeoutMs', env: 'LCM_BUSY_TIMEOUT_MS', type: 'integer', option: 'busyTimeoutMs', default: 30_000, minimum: 0, description: 'How long a write waits for another process\'s lock on the database, in milliseconds' },
  // Issue 59: reference keys.
  { key: 'contextThresholdOverrides', type: 'array', items: RULE_SCHEMA, tsType: RULES_TS_TYPE, parse: parseRules, default: [], resolved: true, description: 'Rules {name?, match: {model?, modelContextWindowMin?, modelContextWindowMax?, sessionPattern?}, contextThreshold, freshTailCount?, leafChunkTokens?} for matching calls; every matcher of a rule must match, the most specific rule applies (model > sessionPattern > window), ties by order' },
  { key: 'summaryPrefixTargetTokens', env: 'LCM_SUMMARY_PREFIX_TARGET_TOKENS', type: 'integer', option: 'summaryPrefixTargetTokens', minimum: 1, description: 'A sweep condenses beyond sweepMaxDepth while summaries outside the fresh tail weigh more than this; default max(condensedTargetTokens, min(leafChunkTokens, threshold / 2))' },
  { key: 'compactUntilUnderDeadlineMs', env: 'LCM_COMPACT_UNTIL_UNDER_DEADLINE_MS', type: 'integer', option: 'compactUntilUnderDeadlineMs', default: 300_000, minimum: 1, description: 'Wall-clock limit of a compaction toward the budget (all its sweeps), in milliseconds' },
  { key: 'largeFileSummaryModel', env: 'LCM_LARGE_FILE_SUMMARY_MODEL', type: 'string', description: 'Model that rewrites the exploration summary of large files during maintenance (the deterministic one stays until then, and when the model fails); provider/model names a provider. Unset: no model is called' },
  { key: 'largeFileSummaryProvider', env: 'LCM_LARGE_FILE_SUMMARY_PROVIDER', type: 'string', description: 'Provider of largeFileSummaryModel when it names none (default: the host model through api.runtime.llm, else summaryProvider)' },
  { key: 'expansionProvider', env: 'LCM_EXPANSION_PROVIDER', type: 'string', description: 'Provider of expansionModel when it names none' },
  { key: 'hostFallbackMode', env: 'LCM_HOST_FALLBACK_MODE', type: 'string', enum: ['error', 'capture-only'], noEffect: 'when the store cannot answer, lcm-native always falls back to the live context and lets the host compact', description: 'Reference key, no effect: what the host does when LCM is unavailable' },
  { key: 'promptAwareEviction', env: 'LCM_PROMPT_AWARE_EVICTION_ENABLED', type: 'boolean', noEffect: 'assembly keeps the newest context under the budget; prompt-aware eviction is not implemented', description: 'Reference key, no effect: evict context by relevance to the prompt' },
  { key: 'stubLargeToolPayloads', env: 'LCM_STUB_LARGE_TOOL_PAYLOADS', type: 'boolean', noEffect: 'large tool results are externalized at ingest (largeFileThresholdTokens) instead of stubbed', description: 'Reference key, no effect: stub large tool payloads in assembly' },
  { key: 'transcriptGcEnabled', env: 'LCM_TRANSCRIPT_GC_ENABLED', type: 'boolean', noEffect: 'lcm-native never rewrites OpenClaw\'s session transcripts', description: 'Reference key, no effect: garbage-collect session transcript entries' },
  { key: 'enableSummaryThinking', env: 'LCM_ENABLE_SUMMARY_THINKING', type: 'boolean', default: true, resolved: true, description: 'false: summaries through the host model ask for no reasoning (reasoning: off); true: the model\'s default' },
  { key: 'proactiveThresholdCompactionMode', env: 'LCM_PROACTIVE_THRESHOLD_COMPACTION_MODE', type: 'string', enum: ['deferred', 'inline'], noEffect: 'threshold compaction always runs in turn maintenance, after the reply (as deferred)', description: 'Reference key, no effect: run threshold compaction inline or deferred' },
  {
    key: 'autoRotateSessionFiles',
    type: 'object',
    noEffect: 'OpenClaw keeps transcripts in its own store; lcm-native never rotates session files',
    description: 'Reference key, no effect: rotation of oversized session JSONL files',
    properties: [
      { key: 'enabled', env: 'LCM_AUTO_ROTATE_SESSION_FILES_ENABLED', type: 'boolean', description: 'Rotate oversized session files' },
      { key: 'createBackups', env: 'LCM_AUTO_ROTATE_SESSION_FILES_CREATE_BACKUPS', type: 'boolean', description: 'Keep a backup of a rotated file' },
      { key: 'sizeBytes', env: 'LCM_AUTO_ROTATE_SESSION_FILES_SIZE_BYTES', type: 'integer', minimum: 1, description: 'Size that triggers a rotation' },
      { key: 'startup', env: 'LCM_AUTO_ROTATE_SESSION_FILES_STARTUP', type: 'string', description: 'Rotation at start-up' },
      { key: 'runtime', env: 'LCM_AUTO_ROTATE_SESSION_FILES_RUNTIME', type: 'string', description: 'Rotation while running' },
    ],
  },
  {
    key: 'independentLogFile',
    type: 'object',
    noEffect: 'lcm-native logs through OpenClaw\'s plugin logger, into the gateway\'s log',
    description: 'Reference key, no effect: a log file of the plugin\'s own',
    properties: [
      { key: 'enabled', env: 'LCM_LOG_FILE_ENABLED', type: 'boolean', description: 'Write the log file' },
      { key: 'file', env: 'LCM_LOG_FILE', type: 'string', description: 'Its path' },
      { key: 'maxFileBytes', env: 'LCM_LOG_MAX_FILE_BYTES', type: 'integer', minimum: 1, description: 'Its size limit' },
    ],
  },
  { key: 'replayFloodThresholdExternal', env: 'LCM_REPLAY_FLOOD_THRESHOLD_EXTERNAL', type: 'integer', minimum: 0, noEffect: 'turns are deduplicated by their transcript entry ids and durable-turn receipts, so a replay stores nothing twice', description: 'Reference key, no effect: replayed external messages tolerated per turn' },
  { key: 'replayFloodThresholdInternal', env: 'LCM_REPLAY_FLOOD_THRESHOLD_INTERNAL', type: 'integer', minimum: 0, noEffect: 'turns are deduplicated by their transcript entry ids and durable-turn receipts, so a replay stores nothing twice', description: 'Reference key, no effect: replayed internal messages tolerated per turn' },
  // Issue 63: cost.
  { key: 'summaryCallWindowMs', env: 'LCM_SUMMARY_CALL_WINDOW_MS', type: 'integer', default: 600_000, minimum: 1, resolved: true, description: 'Window of the summary spend guard, in milliseconds' },
  { key: 'summaryMaxCallsPerWindow', env: 'LCM_SUMMARY_MAX_CALLS_PER_WINDOW', type: 'integer', default: 24, minimum: 1, resolved: true, description: 'Summarizer calls one session may make per window before automatic compaction backs off (a manual /compact still runs)' },
  { key: 'summarySpendBackoffMs', env: 'LCM_SUMMARY_SPEND_BACKOFF_MS', type: 'integer', default: 1_800_000, minimum: 1, resolved: true, description: 'How long automatic compaction of a session backs off once it used its allowance, in milliseconds' },
  { key: 'fallbackProviders', env: 'LCM_FALLBACK_PROVIDERS', type: 'providers', default: [], resolved: true, description: 'Summarizers tried in order when the configured one is overloaded, times out, is rate limited or answers nothing usable: [{provider, model}] (environment: provider/model,provider/model)' },
  { key: 'freshTailMaxBudgetRatio', env: 'LCM_FRESH_TAIL_MAX_BUDGET_RATIO', type: 'number', default: 0.25, minimum: 0, maximum: 1, resolved: true, description: 'Token cap of the fresh tail as a share of the token budget (0: none); with contextThreshold it sets the headroom a compaction leaves' },
  { key: 'leafMinChunkTokens', env: 'LCM_LEAF_MIN_CHUNK_TOKENS', type: 'integer', default: 4_000, minimum: 0, resolved: true, description: 'Raw tokens outside the fresh tail below which automatic compaction waits, unless the context nears the budget (never a few messages at a time)' },
  {
    key: 'cacheAwareCompaction',
    type: 'object',
    default: { enabled: true, cacheTTLSeconds: 300, criticalBudgetPressureRatio: 0.9 },
    resolved: true,
    description: 'Prompt-cache-aware automatic compaction: enabled, cacheTTLSeconds (the provider\'s cache lifetime), criticalBudgetPressureRatio (share of the budget past which compaction runs at once); the reference\'s other fields are accepted without effect',
    properties: [
      { key: 'enabled', type: 'boolean', description: 'Wait for a cold cache or a full context before compacting' },
      { key: 'cacheTTLSeconds', type: 'integer', minimum: 0, description: 'The provider\'s prompt-cache lifetime, in seconds' },
      { key: 'criticalBudgetPressureRatio', type: 'number', minimum: 0, maximum: 1, description: 'Share of the budget past which compaction runs at once, warm cache or not' },
      { key: 'maxColdCacheCatchupPasses', type: 'integer', minimum: 0, noEffect: 'a compaction sweeps every raw message outside the fresh tail at once', description: 'Reference field, no effect' },
      { key: 'hotCachePressureFactor', type: 'number', minimum: 0, noEffect: 'the warm-cache wait is bounded by dynamicLeafChunkTokens.max and criticalBudgetPressureRatio', description: 'Reference field, no effect' },
      { key: 'hotCacheBudgetHeadroomRatio', type: 'number', minimum: 0, maximum: 1, noEffect: 'the headroom a compaction leaves is set by freshTailMaxBudgetRatio and contextThreshold', description: 'Reference field, no effect' },
      { key: 'coldCacheObservationThreshold', type: 'integer', minimum: 0, noEffect: 'a cold cache is read from the host\'s prompt-cache telemetry, not inferred from observations', description: 'Reference field, no effect' },
    ],
  },
  {
    key: 'dynamicLeafChunkTokens',
    type: 'object',
    default: { enabled: true },
    resolved: true,
    description: 'While the prompt cache is warm, the leaf trigger waits until max (default 2 × leafChunkTokens) raw tokens lie outside the fresh tail, so compactions are fewer and larger',
    properties: [
      { key: 'enabled', type: 'boolean', description: 'Let the leaf trigger wait while the cache is warm' },
      { key: 'max', type: 'integer', minimum: 1, description: 'Raw tokens outside the fresh tail the trigger waits for at most (default 2 × leafChunkTokens)' },
    ],
  },
  // Issue 58: session lifecycle.
  { key: 'newSessionRetainDepth', env: 'LCM_NEW_SESSION_RETAIN_DEPTH', type: 'integer', default: 2, minimum: -1, resolved: true, description: 'After /new, summaries of at least this depth stay in the context (-1 keeps everything, 0 keeps all summaries)' },
  { key: 'pruneHeartbeatOk', env: 'LCM_PRUNE_HEARTBEAT_OK', type: 'boolean', default: false, resolved: true, description: 'Store nothing of a heartbeat turn whose reply is HEARTBEAT_OK (the turn mentions heartbeat.md)' },
  { key: 'stripInjectedContextTags', env: 'LCM_STRIP_INJECTED_CONTEXT_TAGS', type: 'list', option: 'stripInjectedContextTags', default: ['active_memory_plugin', 'relevant-memories', 'relevant_memories', 'hindsight_memories'], resolved: true, description: 'XML-style tags whose blocks memory plugins inject into user messages: removed from the summarizer input (the stored message stays exact); an empty string disables' },
  { key: 'bootstrapMaxTokens', env: 'LCM_BOOTSTRAP_MAX_TOKENS', type: 'integer', minimum: 0, description: 'Tokens a first bootstrap (a fork, a sub-agent, a rolled-over session) imports at most from the transcript tail (default max(6000, 0.3 x leafChunkTokens))' },
  // Issue 64: retention.
  { key: 'retention', env: 'LCM_RETENTION', type: 'retention', option: 'retention', label: 'Retention', description: 'Policies by session-key glob: archive conversations idle past archiveAfterDays; archive, then remove, those idle past pruneAfterDays (run by maintain); default none' },
  { key: 'archiveDir', env: 'LCM_ARCHIVE_DIR', type: 'string', option: 'archiveDir', description: 'Where retention writes archives (default archive beside the large-files directory)' },
  { key: 'maxDatabaseBytes', env: 'LCM_MAX_DATABASE_BYTES', type: 'integer', option: 'maxDatabaseBytes', minimum: 1, description: 'Soft cap on the database file: over it, maintain prunes what the policies allow, oldest first (no policy: a warning only); default none' },
]

/** What `resolveConfig` sets when neither config nor environment gives a key. */
const DEFAULTS = Object.fromEntries(CONFIG_KEYS.filter((r) => r.resolved).map((r) => [r.key, r.default]))

/** The environment variables of a row, first one winning. */
export const envNames = (row) => (row.env === undefined ? [] : Array.isArray(row.env) ? row.env : [row.env])

/** Parses one value of `row` from config (any JSON) or env (a string); undefined when absent. */
function parseValue(row, raw, fromEnv) {
  const type = row.type
  if (raw === undefined || raw === null) return undefined
  if (fromEnv && typeof raw === 'string' && raw.trim() === '' && type !== 'list' && type !== 'string') return undefined
  switch (type) {
    case 'boolean':
      if (typeof raw === 'boolean') return raw
      if (typeof raw === 'string' && /^(1|true|yes|on)$/i.test(raw.trim())) return true
      if (typeof raw === 'string' && /^(0|false|no|off)$/i.test(raw.trim())) return false
      return INVALID
    case 'number':
    case 'integer': {
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' ? Number(raw.trim()) : NaN
      if (!Number.isFinite(n) || (type === 'integer' && !Number.isInteger(n))) return INVALID
      if ((row.minimum !== undefined && n < row.minimum) || (row.maximum !== undefined && n > row.maximum)) return INVALID
      return n
    }
    case 'string':
      if (typeof raw !== 'string') return INVALID
      return row.enum && !row.enum.includes(raw.trim()) ? INVALID : raw
    case 'providers': {
      // [{provider, model}], or `provider/model` strings (the environment's form).
      const items = typeof raw === 'string' ? raw.split(',').map((s) => s.trim()).filter(Boolean) : raw
      if (!Array.isArray(items)) return INVALID
      const out = []
      for (const item of items) {
        if (typeof item === 'string') {
          const slash = item.indexOf('/')
          if (slash <= 0 || slash === item.length - 1) return INVALID
          out.push({ provider: item.slice(0, slash).trim(), model: item.slice(slash + 1).trim() })
        } else if (item && typeof item.provider === 'string' && typeof item.model === 'string' && item.provider.trim() && item.model.trim()) {
          out.push({ provider: item.provider.trim(), model: item.model.trim() })
        } else return INVALID
      }
      return out
    }
    case 'retention': {
      // An array of policies, or its JSON text (the environment's form).
      let v = raw
      if (typeof raw === 'string') {
        try {
          v = JSON.parse(raw)
        } catch {
          return INVALID
        }
      }
      return Array.isArray(v) && v.every((p) => p && typeof p === 'object' && typeof p.match === 'string') ? v : INVALID
    }
    case 'list':
      if (Array.isArray(raw)) return raw.every((s) => typeof s === 'string') ? raw.map((s) => s.trim()).filter(Boolean) : INVALID
      if (typeof raw === 'string') return raw.split(',').map((s) => s.trim()).filter(Boolean)
      return INVALID
    default:
      return INVALID
  }
}
const INVALID = Symbol('invalid')

/** What a row's values must be, for a warning. */
function expected(row) {
  if (row.enum) return `one of ${row.enum.join(', ')}`
  if (row.type === 'providers') return '[{provider, model}] or provider/model strings'
  if (row.type === 'retention') return 'an array of {match, archiveAfterDays?, pruneAfterDays?} (the environment: its JSON)'
  const range = row.maximum !== undefined ? ` from ${row.minimum} to ${row.maximum}` : row.minimum !== undefined ? ` of at least ${row.minimum}` : ''
  return `${row.type === 'integer' ? 'an integer' : `a ${row.type}`}${range}`
}

/** Levenshtein distance, for "did you mean". */
function distance(a, b) {
  const x = a.toLowerCase()
  const y = b.toLowerCase()
  let prev = Array.from({ length: y.length + 1 }, (_, j) => j)
  for (let i = 1; i <= x.length; i++) {
    const cur = [i]
    for (let j = 1; j <= y.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x[i - 1] === y[j - 1] ? 0 : 1))
    prev = cur
  }
  return prev[y.length]
}

/** The known name closest to `name`, when close enough to be a typo (a third of its length, at least 2 edits). */
export function closestKey(name, known) {
  let best
  let bestD = Infinity
  for (const k of known) {
    const d = distance(name, k)
    if (d < bestD) [best, bestD] = [k, d]
  }
  return bestD <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined
}

function unknownKey(where, name, known) {
  const guess = closestKey(name, known)
  return `config ${where}${name}: unknown key, ignored${guess ? ` (did you mean ${where}${guess}?)` : ''}`
}

/** One row's value from config and environment (environment wins); pushes warnings. */
function resolveRow(row, cfg, env, warnings, prefix = '') {
  const names = [row.key, ...(row.aliases ?? [])]
  let value
  const given = names.find((n) => cfg[n] !== undefined)
  if (given) {
    const raw = cfg[given]
    if (row.type === 'object') {
      if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
        value = resolveObject(row, raw, env, warnings, `${prefix}${given}.`)
      } else warnings.push(`config ${prefix}${given}: expected an object, ignored`)
    } else if (row.parse) {
      const r = row.parse(raw)
      if (r === undefined) warnings.push(`config ${prefix}${given}: expected ${row.type === 'array' ? 'an array' : `a ${row.type}`}, ignored`)
      else {
        warnings.push(...r.warnings)
        value = r.value
      }
    } else {
      const v = parseValue(row, raw, false)
      if (v === INVALID) warnings.push(`config ${prefix}${given}: expected ${expected(row)}, ignored`)
      else value = v
    }
  } else if (row.type === 'object') {
    // Only environment variables: the object is made of them.
    const fromEnv = resolveObject(row, {}, env, warnings, `${prefix}${row.key}.`)
    if (Object.keys(fromEnv).length) value = fromEnv
  }
  for (const name of row.type === 'object' ? [] : envNames(row).slice().reverse()) {
    if (env[name] === undefined) continue
    const v = parseValue(row, env[name], true)
    if (v === INVALID) warnings.push(`${name}: expected ${expected(row)}, ignored`)
    else if (v !== undefined) value = v
  }
  return value
}

/** The properties of an object row. */
function resolveObject(row, raw, env, warnings, prefix) {
  const out = {}
  const known = row.properties.map((p) => p.key)
  for (const k of Object.keys(raw)) if (!known.includes(k)) warnings.push(unknownKey(prefix, k, known))
  for (const p of row.properties) {
    const v = resolveRow(p, raw, env, warnings, prefix)
    if (v === undefined) continue
    out[p.key] = v
    if (p.noEffect && !row.noEffect) warnings.push(`config ${prefix}${p.key}: accepted for lossless-claw compatibility, no effect in lcm-native (${p.noEffect})`)
  }
  return out
}

/**
 * Resolves the plugin configuration. Unknown config keys (with the closest known
 * one), unparsable values and reference keys that have no effect here are
 * reported in `warnings` (once each), never thrown.
 * @param {Record<string, unknown> | undefined} pluginConfig
 * @param {Record<string, string | undefined>} [env]
 */
export function resolveConfig(pluginConfig, env = process.env) {
  const cfg = pluginConfig && typeof pluginConfig === 'object' ? pluginConfig : {}
  const values = { ...DEFAULTS }
  const warnings = []
  const known = []
  for (const row of CONFIG_KEYS) {
    known.push(row.key, ...(row.aliases ?? []))
    const value = resolveRow(row, cfg, env, warnings)
    if (value === undefined) continue
    // An object row's given fields replace its default's, field by field.
    values[row.key] = row.type === 'object' && row.default ? { ...row.default, ...value } : value
    if (row.noEffect) warnings.push(`config ${row.key}: accepted for lossless-claw compatibility, no effect in lcm-native (${row.noEffect})`)
  }
  for (const k of Object.keys(cfg)) if (!known.includes(k)) warnings.push(unknownKey('', k, known))
  values.bootstrapMaxTokens ??= Math.max(6000, Math.floor(0.3 * (values.leafChunkTokens ?? 20_000)))
  return { ...values, engineOptions: engineOptionsOf(values), warnings }
}

/** The `LcmEngine.open` options the resolved values imply (without a summarizer). */
function engineOptionsOf(values) {
  const options = {}
  for (const row of CONFIG_KEYS) if (row.option && values[row.key] !== undefined) options[row.option] = values[row.key]
  if (values.fallbackProviders?.length) options.fallbackProviders = values.fallbackProviders
  if (values.freshTailMaxBudgetRatio > 0) options.freshTailMaxBudgetRatio = values.freshTailMaxBudgetRatio
  // `provider/model` names a provider; a bare model reuses `summaryProvider`.
  const model = values.summaryModel?.trim()
  const slash = model ? model.indexOf('/') : -1
  if (slash > 0) {
    options.summaryProvider = model.slice(0, slash)
    options.summaryModel = model.slice(slash + 1)
  } else {
    if (model) options.summaryModel = model
    if (values.summaryProvider?.trim()) options.summaryProvider = values.summaryProvider.trim()
  }
  // The large-file model goes as written: the engine reads a `provider/` prefix
  // only when it names a built-in provider (a host's model refs have others).
  if (values.largeFileSummaryModel?.trim()) options.largeFileSummaryModel = values.largeFileSummaryModel.trim()
  if (values.largeFileSummaryProvider?.trim()) options.largeFileSummaryProvider = values.largeFileSummaryProvider.trim()
  return options
}
