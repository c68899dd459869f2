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
