// OpenClaw's own CLI installs the packed plugin (`openclaw plugins install
// <archive>`, which runs no install script) and loads it, without the addon (the
// plugin still registers: a selected plugin that fails to would stop every agent
// run; openclaw-agent.test.mjs runs a turn that way) and with the addon this
// checkout built copied in (what its install script builds): loaded, the context
// engine in its slot, the four recall tools registered. Then the archive with the
// platform package bundled (`npm run pack:plugin`): loaded without any build.
import { describe, it, expect } from 'vitest'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { tempDir } from './helpers.mjs'
import { addAddon, installPackedPlugin, openclawCli, openclawSkipReason } from './openclaw-installed.mjs'

const require = createRequire(import.meta.url)
const { platformSuffix } = require('../scripts/platform.js')
const skipReason = openclawSkipReason()

function inspect(state) {
  return JSON.parse(openclawCli(state, ['plugins', 'inspect', 'lcm-native', '--runtime', '--json']).stdout)
}

describe.skipIf(skipReason !== null)(`OpenClaw installs the packed plugin${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('plugins install → loaded with its engine and tools, without the addon and with it', () => {
    const state = tempDir('lcm-oc-install-')
    const { installed, output } = installPackedPlugin(state)
    expect(output).toContain('Installed plugin: lcm-native')

    const missing = inspect(state)
    expect(missing.plugin.status).toBe('loaded')
    expect(missing.plugin.rootDir).toBe(installed)
    expect(missing.plugin.contextEngineIds).toEqual(['lcm-native'])
    expect(existsSync(join(installed, `lcm-native.${platformSuffix()}.node`))).toBe(false)

    addAddon(installed)
    const loaded = inspect(state)
    expect(loaded.plugin.status).toBe('loaded')
    expect(loaded.plugin.contextEngineIds).toEqual(['lcm-native'])
    expect(loaded.plugin.toolNames).toEqual(['lcm_grep', 'lcm_describe', 'lcm_expand', 'lcm_expand_query'])
    expect(loaded.plugin.activationReason).toBe('selected context engine slot')
    expect(loaded.plugin.description).toBe(require('../openclaw.plugin.json').description)
  }, 600_000)

  it('plugins install of the archive with the platform package bundled → loaded, no build', () => {
    const state = tempDir('lcm-oc-prebuilt-')
    const { installed, output } = installPackedPlugin(state, { prebuilt: true })
    expect(output).toContain('Installed plugin: lcm-native')
    // OpenClaw's own npm install (--ignore-scripts) kept the bundled package; no addon was built or copied in.
    expect(existsSync(join(installed, 'node_modules', `lcm-native-${platformSuffix()}`, `lcm-native.${platformSuffix()}.node`))).toBe(true)
    expect(existsSync(join(installed, `lcm-native.${platformSuffix()}.node`))).toBe(false)
    const loaded = inspect(state)
    expect(loaded.plugin.status).toBe('loaded')
    expect(loaded.plugin.contextEngineIds).toEqual(['lcm-native'])
    expect(loaded.plugin.toolNames).toEqual(['lcm_grep', 'lcm_describe', 'lcm_expand', 'lcm_expand_query'])
  }, 600_000)
})
