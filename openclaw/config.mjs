// Configuration of the OpenClaw plugin: the plugin config object
// (`plugins.entries.lcm-native.config`) and the reference plugin's environment
// variables, under the reference's names. Precedence: environment, then plugin
// config, then defaults (the reference's order).

/** Default token budget when neither the host nor the config gives one. */
export const DEFAULT_TOKEN_BUDGET = 128_000

/**
 * One row per key: the config name, its aliases, the environment variable, the
 * value type, and the `LcmEngine.open` option it feeds (null: used by the plugin).
 * @type {Array<{ key: string, aliases?: string[], env?: string, type: 'number'|'integer'|'boolean'|'string'|'list', option?: string }>}
 */
export const CONFIG_KEYS = [
  { key: 'enabled', env: 'LCM_ENABLED', type: 'boolean' },
  { key: 'databasePath', aliases: ['dbPath'], env: 'LCM_DATABASE_PATH', type: 'string', option: 'dbPath' },
  { key: 'largeFilesDir', env: 'LCM_LARGE_FILES_DIR', type: 'string', option: 'largeFilesDir' },
  { key: 'ignoreSessionPatterns', env: 'LCM_IGNORE_SESSION_PATTERNS', type: 'list' },
  { key: 'statelessSessionPatterns', env: 'LCM_STATELESS_SESSION_PATTERNS', type: 'list' },
  { key: 'skipStatelessSessions', env: 'LCM_SKIP_STATELESS_SESSIONS', type: 'boolean' },
  { key: 'contextThreshold', env: 'LCM_CONTEXT_THRESHOLD', type: 'number', option: 'contextThreshold' },
  { key: 'freshTailCount', env: 'LCM_FRESH_TAIL_COUNT', type: 'integer', option: 'freshTailCount' },
  { key: 'freshTailMaxTokens', env: 'LCM_FRESH_TAIL_MAX_TOKENS', type: 'integer', option: 'freshTailMaxTokens' },
  { key: 'leafMinFanout', env: 'LCM_LEAF_MIN_FANOUT', type: 'integer', option: 'leafMinFanout' },
  { key: 'condensedMinFanout', env: 'LCM_CONDENSED_MIN_FANOUT', type: 'integer', option: 'condensedMinFanout' },
  { key: 'condensedMinFanoutHard', env: 'LCM_CONDENSED_MIN_FANOUT_HARD', type: 'integer', option: 'condensedMinFanoutHard' },
  { key: 'sweepMaxDepth', aliases: ['incrementalMaxDepth'], env: 'LCM_SWEEP_MAX_DEPTH', type: 'integer', option: 'incrementalMaxDepth' },
  { key: 'leafChunkTokens', env: 'LCM_LEAF_CHUNK_TOKENS', type: 'integer', option: 'leafChunkTokens' },
  { key: 'maxSweepIterations', env: 'LCM_MAX_SWEEP_ITERATIONS', type: 'integer', option: 'maxSweepIterations' },
  { key: 'sweepDeadlineMs', env: 'LCM_SWEEP_DEADLINE_MS', type: 'integer', option: 'sweepDeadlineMs' },
  { key: 'leafTargetTokens', env: 'LCM_LEAF_TARGET_TOKENS', type: 'integer', option: 'leafTargetTokens' },
  { key: 'condensedTargetTokens', env: 'LCM_CONDENSED_TARGET_TOKENS', type: 'integer', option: 'condensedTargetTokens' },
  { key: 'summaryMaxOverageFactor', env: 'LCM_SUMMARY_MAX_OVERAGE_FACTOR', type: 'number', option: 'summaryMaxOverageFactor' },
  { key: 'fallbackMaxTokens', env: 'LCM_FALLBACK_MAX_TOKENS', type: 'integer', option: 'fallbackMaxTokens' },
  { key: 'largeFileThresholdTokens', aliases: ['largeFileTokenThreshold'], env: 'LCM_LARGE_FILE_TOKEN_THRESHOLD', type: 'integer', option: 'largeFileTokenThreshold' },
  { key: 'maxAssemblyTokenBudget', env: 'LCM_MAX_ASSEMBLY_TOKEN_BUDGET', type: 'integer' },
  { key: 'maxExpandTokens', env: 'LCM_MAX_EXPAND_TOKENS', type: 'integer', option: 'maxExpandTokens' },
  { key: 'summaryModel', env: 'LCM_SUMMARY_MODEL', type: 'string' },
  { key: 'summaryProvider', env: 'LCM_SUMMARY_PROVIDER', type: 'string' },
  { key: 'expansionModel', env: 'LCM_EXPANSION_MODEL', type: 'string' },
  { key: 'delegationTimeoutMs', env: 'LCM_DELEGATION_TIMEOUT_MS', type: 'integer' },
  { key: 'summaryTimeoutMs', env: 'LCM_SUMMARY_TIMEOUT_MS', type: 'integer', option: 'summaryTimeoutMs' },
  { key: 'customInstructions', env: 'LCM_CUSTOM_INSTRUCTIONS', type: 'string', option: 'customInstructions' },
  { key: 'circuitBreakerThreshold', env: 'LCM_CIRCUIT_BREAKER_THRESHOLD', type: 'integer' },
  { key: 'circuitBreakerCooldownMs', env: 'LCM_CIRCUIT_BREAKER_COOLDOWN_MS', type: 'integer' },
  // Ours (no reference equivalent).
  { key: 'defaultTokenBudget', env: 'LCM_DEFAULT_TOKEN_BUDGET', type: 'integer' },
  { key: 'timezone', env: 'LCM_TIMEZONE', type: 'string', option: 'timezone' },
  { key: 'busyTimeoutMs', env: 'LCM_BUSY_TIMEOUT_MS', type: 'integer', option: 'busyTimeoutMs' },
]

const DEFAULTS = {
  enabled: true,
  ignoreSessionPatterns: [],
  statelessSessionPatterns: [],
  skipStatelessSessions: true,
  maxExpandTokens: 4000,
  delegationTimeoutMs: 120_000,
  circuitBreakerThreshold: 5,
  circuitBreakerCooldownMs: 1_800_000,
  defaultTokenBudget: DEFAULT_TOKEN_BUDGET,
}

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
