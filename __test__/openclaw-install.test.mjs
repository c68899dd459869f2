// OpenClaw's own CLI installs the packed plugin (`openclaw plugins install
// <archive>`, which runs no install script) and loads it: first without the addon
// (register fails, naming the command that builds it in the installed directory),
// then with the addon this checkout built copied in (what that command builds):
// loaded, the context engine in its slot, the four recall tools registered.
import { describe, it, expect } from 'vitest'
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { root, tempDir } from './helpers.mjs'
import { findOpenclaw, openclawSkipReason } from './openclaw-installed.mjs'

const require = createRequire(import.meta.url)
const { platformSuffix } = require('../scripts/platform.js')
const skipReason = openclawSkipReason()

/** The environment of a user's shell: OpenClaw behaves differently under a test runner. */
function userEnv(state) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(VITEST|NODE_ENV$|TEST$)/.test(k)))
  return { ...env, OPENCLAW_STATE_DIR: state, NO_COLOR: '1' }
}

/** `openclaw <args>` under this Node with its own state directory. */
function openclaw(state, args) {
  const r = spawnSync(process.execPath, [findOpenclaw().cli, ...args], {
    cwd: state,
    encoding: 'utf8',
    env: userEnv(state),
    timeout: 240_000,
  })
  if (r.status !== 0) throw new Error(`openclaw ${args.join(' ')} exited ${r.status}: ${r.stderr}\n${r.stdout}`)
  return r
}

function inspect(state) {
  return JSON.parse(openclaw(state, ['plugins', 'inspect', 'lcm-native', '--runtime', '--json']).stdout)
}

describe.skipIf(skipReason !== null)(`OpenClaw installs the packed plugin${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('plugins install → a register error naming the build command → with the addon, loaded with its engine and tools', () => {
    const out = tempDir('lcm-oc-pack-')
    const [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: root, encoding: 'utf8' }))
    const state = tempDir('lcm-oc-install-')
    const install = openclaw(state, ['plugins', 'install', join(out, packed.filename), '--force', '--accept-capabilities'])
    expect(install.stdout + install.stderr).toContain('Installed plugin: lcm-native')
    const installed = join(state, 'extensions', 'lcm-native')

    const missing = inspect(state)
    expect(missing.plugin.status).toBe('error')
    expect(missing.plugin.rootDir).toBe(installed)
    const diagnostics = JSON.stringify(missing.diagnostics)
    expect(diagnostics).toContain(`lcm-native: no native addon is built for ${platformSuffix()}.`)
    expect(diagnostics).toContain(`node ${join(installed, 'scripts', 'install.js')}`)

    const addon = `lcm-native.${platformSuffix()}.node`
    copyFileSync(join(root, addon), join(installed, addon))
    const loaded = inspect(state)
    expect(loaded.plugin.status).toBe('loaded')
    expect(loaded.plugin.contextEngineIds).toEqual(['lcm-native'])
    expect(loaded.plugin.toolNames).toEqual(['lcm_grep', 'lcm_describe', 'lcm_expand', 'lcm_expand_query'])
    expect(loaded.plugin.activationReason).toBe('selected context engine slot')
    expect(loaded.plugin.description).toBe(require('../openclaw.plugin.json').description)
  }, 600_000)
})
