// lcm-native/openclaw against the pinned OpenClaw plugin SDK: the engine satisfies
// OpenClaw's ContextEngine, `register` accepts its OpenClawPluginApi, and the
// default export is a plugin entry `definePluginEntry` would produce.
import type { HarnessContextEngine } from 'openclaw/plugin-sdk/agent-harness-runtime'
import type { OpenClawPluginApi, OpenClawPluginDefinition } from 'openclaw/plugin-sdk/core'
import entry, { createContextEngine, register, LcmContextEngine } from '../../openclaw/index.mjs'

const engine = createContextEngine({ config: { databasePath: ':memory:' } }) satisfies HarnessContextEngine
const asHost: HarnessContextEngine = engine
const klass: new () => HarnessContextEngine = LcmContextEngine

declare const api: OpenClawPluginApi
const handle: { ready: Promise<void>; shutdown: () => Promise<void> } = register(api)
const viaEntry: OpenClawPluginDefinition = entry
entry.register(api)

// The factory OpenClaw receives builds engines it accepts.
api.registerContextEngine('lcm-native', async () => {
  const e = createContextEngine()
  await e.ready
  return e
})

export { asHost, klass, handle, viaEntry }

// The config types generated from CONFIG_KEYS (openclaw/config.d.mts).
import { resolveConfig, CONFIG_KEYS } from '../../openclaw/index.mjs'
import type { LcmPluginConfig, ResolvedLcmPluginConfig, ConfigKey } from '../../openclaw/index.mjs'
const config: LcmPluginConfig = { dbPath: ':memory:', freshTailCount: 32, ignoreSessionPatterns: ['cron:*'], busyTimeoutMs: 0 }
// @ts-expect-error: a number key takes a number
const badConfig: LcmPluginConfig = { freshTailCount: '32' }
// @ts-expect-error: unknown keys are not config
const unknownKey: LcmPluginConfig = { freshTail: 32 }
const resolved: ResolvedLcmPluginConfig = resolveConfig(config)
const budget: number = resolved.defaultTokenBudget
const patterns: string[] = resolved.ignoreSessionPatterns
const row: ConfigKey | undefined = CONFIG_KEYS.find((r) => r.option === 'dbPath')
