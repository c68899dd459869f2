'use strict'
// Loads the native addon (index.js) for the lcm-tui bin and the OpenClaw plugin.
// When it cannot load, the error says what to do instead of napi's generic
// "Cannot find native binding": OpenClaw installs plugins without running their
// install scripts, and `npm install --ignore-scripts` does the same, so without a
// prebuilt binary package for the platform the addon has to be built once.
const { join } = require('node:path')
const { platformSuffix } = require('./scripts/platform.js')

/**
 * The first addon of each version loaded in this process (a Map: version →
 * `{ addon, dir }`), for every copy of the package. A host may load the package
 * from several folders (OpenClaw's gateway builds each plugin into staging copies
 * and loads each), and every addon copy carries its own SQLite. Two SQLite
 * libraries on one file in one process corrupt it (their POSIX locks do not see
 * each other), so a copy takes the addon its version loaded first. A copy of
 * another version loads its own; the engine then refuses (`LCM_DB_OPEN`) to open a
 * file another copy has open.
 */
const SHARED = Symbol.for('lcm-native.addon')

/**
 * The addon's exports (the first copy of this version loaded in the process); an
 * error with code `LCM_NATIVE_MISSING` when it does not load, naming the install
 * script under `packageDir` (where the package is installed: OpenClaw runs a
 * plugin from a copy, so it passes the original).
 */
function loadNative(packageDir = __dirname) {
  const version = require('./package.json').version
  const loaded = (globalThis[SHARED] ??= new Map())
  const first = loaded.get(version)
  if (first) return first.addon
  try {
    const addon = require('./index.js')
    loaded.set(version, Object.freeze({ addon, dir: __dirname }))
    return addon
  } catch (cause) {
    const build = `\`node ${join(packageDir, 'scripts', 'install.js')}\` (needs a Rust toolchain, https://rustup.rs; a few minutes), then restart the gateway or rerun the command.`
    const why = loadError(cause)
    const err = new Error(
      why === null
        ? `lcm-native: no native addon is built for ${platformSuffix()}. OpenClaw installs plugins without running their install scripts, ` +
            `as does npm with --ignore-scripts, and no prebuilt binary package for this platform is installed. Build it once with ${build}`
        : `lcm-native: the native addon for ${platformSuffix()} does not load (${why}). Rebuild it with ${build}`,
    )
    err.code = 'LCM_NATIVE_MISSING'
    err.cause = cause
    throw err
  }
}

/**
 * Why a binary that exists did not load, or null when none was found. napi's
 * loader throws "Cannot find native binding" (whose advice, to reinstall, does not
 * help here) with each candidate it tried in the `cause` chain: "Cannot find
 * module …" for those absent, the loader's own error (a damaged file, another
 * platform's, a missing system library) for one that is there.
 */
function loadError(e) {
  for (let c = e, depth = 0; c && depth < 32; c = c.cause, depth++) {
    const line = String(c.message ?? c).split('\n')[0]
    if (!/^(Cannot find native binding|Cannot find module)/.test(line)) return line
  }
  return null
}

module.exports = { loadNative }
