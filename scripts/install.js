#!/usr/bin/env node
'use strict'
// npm install hook: use a prebuilt binary when one loads, otherwise build the addon
// from source with cargo (Rust toolchain required). Set LCM_NATIVE_SKIP_BUILD=1 to
// skip, LCM_NATIVE_BUILD_PROFILE=debug for a faster, slower-running build.
//
// Where cargo builds: in a git checkout, `target/` (incremental rebuilds). Installed
// as a dependency, a temporary directory outside the package, removed once the addon
// is copied in: OpenClaw copies a plugin's whole package directory (node_modules
// aside) each time it loads it, and a release `target/` is hundreds of megabytes.
// LCM_NATIVE_TARGET_DIR (else CARGO_TARGET_DIR) names a directory to build in instead
// (kept, so a reinstall rebuilds incrementally); for an installed copy it must lie
// outside the package, for the same reason.
const { spawnSync } = require('node:child_process')
const { existsSync, copyFileSync, mkdtempSync, rmSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { join, resolve, relative, isAbsolute } = require('node:path')
const { platformSuffix, targetTriple } = require('./platform.js')

const root = join(__dirname, '..')
if (process.env.LCM_NATIVE_SKIP_BUILD) process.exit(0)

function loads() {
  const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(join(root, 'index.js'))})`], { stdio: 'ignore' })
  return r.status === 0
}

function inside(dir, path) {
  const rel = relative(dir, path)
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))
}

/** `{ dir, temporary }`: the cargo target directory for this build. */
function targetDir() {
  const checkout = existsSync(join(root, '.git'))
  const chosen = process.env.LCM_NATIVE_TARGET_DIR || process.env.CARGO_TARGET_DIR
  if (chosen) {
    const dir = resolve(root, chosen)
    if (!checkout && inside(resolve(root), dir)) {
      console.error(`lcm-native: the build directory ${dir} (LCM_NATIVE_TARGET_DIR or CARGO_TARGET_DIR) is inside the installed package; choose one outside ${resolve(root)}`)
      process.exit(1)
    }
    return { dir, temporary: false }
  }
  if (checkout) return { dir: join(root, 'target'), temporary: false }
  return { dir: mkdtempSync(join(tmpdir(), 'lcm-native-build-')), temporary: true }
}

if (loads() && !process.env.LCM_NATIVE_FORCE_BUILD) {
  console.log('lcm-native: native addon found, no build needed')
  process.exit(0)
}

const cargo = spawnSync('cargo', ['--version'], { stdio: 'ignore' })
if (cargo.status !== 0) {
  console.error(`lcm-native: no prebuilt binary for ${platformSuffix()} and no Rust toolchain to build one.
Install Rust (https://rustup.rs) and run npm install again.`)
  process.exit(1)
}

const profile = process.env.LCM_NATIVE_BUILD_PROFILE === 'debug' ? 'debug' : 'release'
const triple = targetTriple()
const target = targetDir()
const env = { ...process.env, CARGO_TARGET_DIR: target.dir }
const napiCli = join(root, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js')
console.log(`lcm-native: building the native addon from source (${profile}) in ${target.dir}; this takes a few minutes the first time`)
let r
try {
  if (existsSync(napiCli) && triple) {
    const args = [napiCli, 'build', '--platform', '--target', triple]
    if (profile === 'release') args.push('--release')
    r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env })
  } else {
    const args = ['build', '--lib']
    if (profile === 'release') args.push('--release')
    if (triple) args.push('--target', triple)
    r = spawnSync('cargo', args, { cwd: root, stdio: 'inherit', env })
    if (r.status === 0) {
      const dir = join(target.dir, ...(triple ? [triple] : []), profile)
      const lib = process.platform === 'win32' ? 'lcm_native.dll' : process.platform === 'darwin' ? 'liblcm_native.dylib' : 'liblcm_native.so'
      copyFileSync(join(dir, lib), join(root, `lcm-native.${platformSuffix()}.node`))
    }
  }
} finally {
  if (target.temporary) rmSync(target.dir, { recursive: true, force: true })
}
if (r.status !== 0) {
  console.error('lcm-native: the build failed; see the cargo output above')
  process.exit(r.status || 1)
}
