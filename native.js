'use strict'
// Loads the native addon for the lcm-tui bin and the OpenClaw plugin: the platform
// package (`lcm-native-<platform>`, an optionalDependency holding the prebuilt
// binary) first, then a local build through napi's loader (index.js: a
// `lcm-native.<platform>.node` beside it, from `npm run build` or the install
// script). When neither loads, the error (`LCM_NATIVE_MISSING`) names the platform
// and its Rust target triple and says what to do instead of napi's generic "Cannot
// find native binding". NAPI_RS_NATIVE_LIBRARY_PATH (napi's override) skips the
// platform package.
const { join } = require('node:path')
const { platformSuffix, targetTriple } = require('./scripts/platform.js')

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
  const tried = []
  try {
    const addon = requireAddon(version, tried)
    loaded.set(version, Object.freeze({ addon, dir: __dirname }))
    return addon
  } catch (loaderError) {
    const cause = tried.length ? new Error(tried.join('; '), { cause: loaderError }) : loaderError
    const build = `\`node ${join(packageDir, 'scripts', 'install.js')}\` (needs a Rust toolchain, https://rustup.rs; a few minutes), then restart the gateway or rerun the command.`
    const why = loadError(cause)
    const platform = `${platformSuffix()} (Rust target ${targetTriple() || `none prebuilt for ${process.platform}-${process.arch}`})`
    const err = new Error(
      why === null
        ? `lcm-native: no native addon is built for ${platform}: neither the platform package lcm-native-${platformSuffix()} nor a local build is installed. ` +
            `npm installs the platform package as an optional dependency (unless optional dependencies are omitted); without it, the addon is built by the install script, ` +
            `and OpenClaw installs plugins without running their install scripts, as does npm with --ignore-scripts. Reinstall lcm-native, or build it once with ${build}`
        : `lcm-native: the native addon for ${platform} does not load (${why}). Reinstall lcm-native, or rebuild it with ${build}`,
    )
    err.code = 'LCM_NATIVE_MISSING'
    err.cause = cause
    throw err
  }
}

/**
 * The platform package when it is installed at this package's version, else the
 * local build through napi's loader (which looks for the platform package again,
 * at any version, as its last resort). Notes why the platform package was passed
 * over in `tried`.
 */
function requireAddon(version, tried) {
  if (!process.env.NAPI_RS_NATIVE_LIBRARY_PATH) {
    const name = `lcm-native-${platformSuffix()}`
    let manifest = null
    try {
      manifest = require(`${name}/package.json`)
    } catch {
      /* not installed: the local build */
    }
    if (manifest && manifest.version !== version) tried.push(`${name}@${manifest.version} is installed, lcm-native is ${version}`)
    else if (manifest) {
      try {
        return require(name)
      } catch (e) {
        tried.push(`${name}: ${String(e.message ?? e).split('\n')[0]}`)
      }
    }
  }
  return require('./index.js')
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
