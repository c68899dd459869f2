'use strict'
// Loads the native addon (index.js) for the lcm-tui bin and the OpenClaw plugin.
// When it cannot load, the error says what to do instead of napi's generic
// "Cannot find native binding": OpenClaw installs plugins without running their
// install scripts, and `npm install --ignore-scripts` does the same, so without a
// prebuilt binary package for the platform the addon has to be built once.
const { join } = require('node:path')
const { platformSuffix } = require('./scripts/platform.js')

/**
 * The addon's exports; an error with code `LCM_NATIVE_MISSING` when it does not
 * load, naming the install script under `packageDir` (where the package is
 * installed: OpenClaw runs a plugin from a copy, so it passes the original).
 */
function loadNative(packageDir = __dirname) {
  try {
    return require('./index.js')
  } catch (cause) {
    const install = join(packageDir, 'scripts', 'install.js')
    const err = new Error(
      `lcm-native: the native addon for ${platformSuffix()} does not load (${firstLine(cause)}). ` +
        'Its install script did not build it: OpenClaw installs plugins without running install scripts, as does npm with --ignore-scripts, ' +
        `and no prebuilt binary package for this platform is installed. Build it once with \`node ${install}\` ` +
        '(needs a Rust toolchain, https://rustup.rs; a few minutes), then restart the gateway or rerun the command.',
    )
    err.code = 'LCM_NATIVE_MISSING'
    err.cause = cause
    throw err
  }
}

/** Why it did not load: napi's "Cannot find native binding" (whose advice, to
 * reinstall, does not help here) as "not found", any other error's first line. */
function firstLine(e) {
  const m = e && typeof e.message === 'string' ? e.message : String(e)
  return /^Cannot find native binding/.test(m) ? 'not found' : m.split('\n')[0]
}

module.exports = { loadNative }
