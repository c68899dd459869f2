// `lcm-native/openclaw`: the OpenClaw plugin entry. `register(api)` registers the
// context engine and the recall tools; `createContextEngine(options)` builds the
// engine alone. The default export is the plugin entry object OpenClaw loads.

import { resolveConfig } from './config.mjs'
import { acquire, largeFileModelRef } from './shared.mjs'
import { createContextEngine, ENGINE_DESCRIPTION, ENGINE_ID, ENGINE_NAME } from './engine.mjs'
import { createRecallTool, TOOL_NAMES } from './tools.mjs'
import { lcmCommands } from './commands.mjs'
import { subscribeLifecycle } from './lifecycle.mjs'
import { SessionPolicy } from './sessions.mjs'

export { createContextEngine, LcmContextEngine, ENGINE_ID, ENGINE_NAME, ACCEPTED_HOST_PARAMS, resolveTokenBudget } from './engine.mjs'
export { resolveConfig, CONFIG_KEYS, DEFAULT_TOKEN_BUDGET } from './config.mjs'
export { checkTurnAnchors } from './turn.mjs'
export { TOOL_NAMES } from './tools.mjs'
export { COMMAND_NAMES, runLcmCommand } from './commands.mjs'

/** Registration modes in which the plugin only describes itself (no database). */
const METADATA_ONLY_MODES = new Set(['cli-metadata', 'setup-only'])

function hostLlm(api) {
  const llm = api?.runtime?.llm
  return llm && typeof llm.complete === 'function' ? llm : undefined
}

/**
 * Registers lcm-native with OpenClaw: the context engine `lcm-native`, the
 * recall tools (bound to the calling session), the `/lcm` command (alias
 * `/lossless`), the session lifecycle hooks (`before_reset`, `session_end`,
 * `session_start`), and the database shutdown on
 * `gateway_stop`. Summaries go through `api.runtime.llm.complete` when the host
 * offers it, else through the configured provider, else the offline summarizer.
 * Returns `{ ready, shutdown }` (hosts ignore it; tests await `ready`).
 * @param {object} api the host's `OpenClawPluginApi`
 * @param {{ config?: Record<string, unknown>, env?: Record<string, string|undefined>, llm?: { complete: Function } }} [options]
 */
export function register(api, options = {}) {
  const logger = api.logger ?? console
  const config = resolveConfig(options.config ?? api.pluginConfig, options.env ?? process.env)
  for (const w of config.warnings) logger.warn?.(`[lcm-native] ${w}`)
  if (METADATA_ONLY_MODES.has(api.registrationMode) || !config.enabled) {
    if (!config.enabled) logger.info?.('[lcm-native] disabled by configuration (enabled: false / LCM_ENABLED)')
    return { ready: Promise.resolve(), shutdown: async () => {} }
  }
  const llm = options.llm ?? hostLlm(api)
  const breaker = { threshold: config.circuitBreakerThreshold, cooldownMs: config.circuitBreakerCooldownMs }
  // The plugin holds one reference for the gateway's lifetime, so the database
  // stays open between the per-turn engine instances.
  // OpenClaw runs the plugin from a copy: errors name the installed directory.
  const shared = {
    llm,
    summaryModel: config.summaryModel,
    summaryThinking: config.enableSummaryThinking,
    largeFileModel: largeFileModelRef(config),
    fallbackModels: (config.fallbackProviders ?? []).map((p) => `${p.provider}/${p.model}`),
    spend: { windowMs: config.summaryCallWindowMs, maxCalls: config.summaryMaxCallsPerWindow, backoffMs: config.summarySpendBackoffMs },
    breaker,
    packageDir: api.rootDir,
  }
  let lease = acquire(config.engineOptions, shared)
  // After `gateway_stop` the tools are withdrawn; the next engine the host asks
  // for (a restarted gateway) opens the database again, as it does after a failed open.
  const reopen = () => {
    if (lease?.handle.error) {
      lease.release()
      lease = null
    }
    if (!lease) lease = acquire(config.engineOptions, shared)
    return lease.handle
  }
  const ready = lease.handle.ready.then((engine) => {
    if (!engine) logger.error?.(`[lcm-native] unavailable, falling back to live context (the host keeps compacting): ${lease?.handle.error?.message}`)
  })

  api.registerContextEngine(ENGINE_ID, async () => {
    reopen()
    const engine = createContextEngine({ resolvedConfig: config, llm, logger, packageDir: api.rootDir })
    await engine.ready
    return engine
  })

  for (const name of TOOL_NAMES) {
    api.registerTool(
      (ctx) => (lease ? createRecallTool(name, { handle: lease.handle, config, llm, session: { sessionKey: ctx?.sessionKey, sessionId: ctx?.sessionId } }) : null),
      { name },
    )
  }

  // `/lcm` and `/lossless`, answered with the calling session's scope.
  if (typeof api.registerCommand === 'function') for (const command of lcmCommands(() => lease?.handle ?? null, config)) api.registerCommand(command)

  const shutdown = async () => {
    const held = lease
    lease = null
    if (held) await held.handle.close()
  }
  // `/new`, `/reset`, the host's rotations and deletions (docs/openclaw.md,
  // "Session lifecycle"): queued per session key before that key's next calls.
  subscribeLifecycle(api, { handleOf: () => lease?.handle ?? null, policy: new SessionPolicy(config), config, logger })
  api.on?.('gateway_stop', shutdown)
  api.on?.('gateway_start', async () => {
    reopen()
  })
  return { ready, shutdown }
}

/** The plugin entry object OpenClaw loads (`package.json` `openclaw.extensions`). */
const entry = {
  id: ENGINE_ID,
  name: ENGINE_NAME,
  description: ENGINE_DESCRIPTION,
  register,
}
export default entry
