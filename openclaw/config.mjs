// Configuration of the OpenClaw plugin: the plugin config object
// (`plugins.entries.lcm-native.config`) and the reference plugin's environment
// variables, under the reference's names. Precedence: environment, then plugin
// config, then defaults (the reference's order).

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
  { key: 'sweepMaxDepth', aliases: ['incrementalMaxDepth'], env: 'LCM_SWEEP_MAX_DEPTH', type: 'integer', option: 'incrementalMaxDepth', default: 1, minimum: -1, description: 'Condensation depth after an incremental leaf pass (-1: unlimited)' },
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
  { key: 'expansionModel', env: 'LCM_EXPANSION_MODEL', type: 'string', description: 'Model that answers lcm_expand_query (default: the host model)' },
  { key: 'delegationTimeoutMs', env: 'LCM_DELEGATION_TIMEOUT_MS', type: 'integer', default: 120_000, minimum: 1, resolved: true, description: 'Time to live of an lcm_expand_query delegation grant, in milliseconds' },
  { key: 'summaryTimeoutMs', env: 'LCM_SUMMARY_TIMEOUT_MS', type: 'integer', option: 'summaryTimeoutMs', default: 60_000, minimum: 1, description: 'Timeout of one summarizer request, in milliseconds' },
  { key: 'customInstructions', env: 'LCM_CUSTOM_INSTRUCTIONS', type: 'string', option: 'customInstructions', description: 'Operator instructions added to every summarization prompt' },
  { key: 'circuitBreakerThreshold', env: 'LCM_CIRCUIT_BREAKER_THRESHOLD', type: 'integer', default: 5, minimum: 1, resolved: true, description: 'Consecutive summarizer failures after which compaction pauses' },
  { key: 'circuitBreakerCooldownMs', env: 'LCM_CIRCUIT_BREAKER_COOLDOWN_MS', type: 'integer', default: 1_800_000, minimum: 1, resolved: true, description: 'How long compaction pauses once the circuit breaker trips, in milliseconds' },
  // Ours (no reference equivalent).
  { key: 'defaultTokenBudget', env: 'LCM_DEFAULT_TOKEN_BUDGET', type: 'integer', default: DEFAULT_TOKEN_BUDGET, minimum: 1, resolved: true, description: 'Token budget when the host gives none' },
  { key: 'timezone', env: 'LCM_TIMEZONE', type: 'string', option: 'timezone', description: 'IANA zone of the timestamps in prompts and summaries (default TZ, else UTC)' },
  { key: 'busyTimeoutMs', env: 'LCM_BUSY_TIMEOUT_MS', type: 'integer', option: 'busyTimeoutMs', default: 30_000, minimum: 0, description: 'How long a write waits for another process\'s lock on the database, in milliseconds' },
  // Issue 64: retention.
  { key: 'retention', env: 'LCM_RETENTION', type: 'retention', option: 'retention', label: 'Retention', description: 'Policies by session-key glob: archive conversations idle past archiveAfterDays; archive, then remove, those idle past pruneAfterDays (run by maintain); default none' },
  { key: 'archiveDir', env: 'LCM_ARCHIVE_DIR', type: 'string', option: 'archiveDir', description: 'Where retention writes archives (default archive beside the large-files directory)' },
  { key: 'maxDatabaseBytes', env: 'LCM_MAX_DATABASE_BYTES', type: 'integer', option: 'maxDatabaseBytes', minimum: 1, description: 'Soft cap on the database file: over it, maintain prunes what the policies allow, oldest first (no policy: a warning only); default none' },
]

/** What `resolveConfig` sets when neither config nor environment gives a key. */
const DEFAULTS = Object.fromEntries(CONFIG_KEYS.filter((r) => r.resolved).map((r) => [r.key, r.default]))

/** Parses one value of `type` from config (any JSON) or env (a string); undefined when absent or invalid. */
function parseValue(type, raw, fromEnv) {
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
      return n
    }
    case 'string':
      return typeof raw === 'string' ? raw : INVALID
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

/**
 * Resolves the plugin configuration. Unknown config keys and unparsable values
 * are reported in `warnings` (and otherwise ignored), never thrown.
 * @param {Record<string, unknown> | undefined} pluginConfig
 * @param {Record<string, string | undefined>} [env]
 */
export function resolveConfig(pluginConfig, env = process.env) {
  const cfg = pluginConfig && typeof pluginConfig === 'object' ? pluginConfig : {}
  const values = { ...DEFAULTS }
  const warnings = []
  const known = new Set()
  for (const row of CONFIG_KEYS) {
    const names = [row.key, ...(row.aliases ?? [])]
    names.forEach((n) => known.add(n))
    let value
    const fromConfigName = names.find((n) => cfg[n] !== undefined)
    if (fromConfigName) {
      const v = parseValue(row.type, cfg[fromConfigName], false)
      if (v === INVALID) warnings.push(`config ${fromConfigName}: expected ${row.type}, ignored`)
      else value = v
    }
    if (row.env && env[row.env] !== undefined) {
      const v = parseValue(row.type, env[row.env], true)
      if (v === INVALID) warnings.push(`${row.env}: expected ${row.type}, ignored`)
      else if (v !== undefined) value = v
    }
    if (value !== undefined) values[row.key] = value
  }
  for (const k of Object.keys(cfg)) if (!known.has(k)) warnings.push(`config ${k}: unknown key, ignored`)
  return { ...values, engineOptions: engineOptionsOf(values), warnings }
}

/** The `LcmEngine.open` options the resolved values imply (without a summarizer). */
function engineOptionsOf(values) {
  const options = {}
  for (const row of CONFIG_KEYS) if (row.option && values[row.key] !== undefined) options[row.option] = values[row.key]
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
  return options
}
