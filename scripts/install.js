#!/usr/bin/env node
'use strict'
// npm install hook: use a prebuilt binary when one loads, otherwise build the addon
// from source with cargo (Rust toolchain required). Set LCM_NATIVE_SKIP_BUILD=1 to
// skip, LCM_NATIVE_BUILD_PROFILE=debug for a faster, slower-running build.
const { spawnSync } = require('node:child_process')
const { existsSync, copyFileSync } = require('node:fs')
const { join } = require('node:path')
const { platformSuffix, targetTriple } = require('./platform.js')

const root = join(__dirname, '..')
if (process.env.LCM_NATIVE_SKIP_BUILD) process.exit(0)

function loads() {
  const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(join(root, 'index.js'))})`], { stdio: 'ignore' })
  return r.status === 0
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
const napiCli = join(root, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js')
console.log(`lcm-native: building the native addon from source (${profile}); this takes a few minutes the first time`)
let r
if (existsSync(napiCli) && triple) {
  const args = [napiCli, 'build', '--platform', '--target', triple]
  if (profile === 'release') args.push('--release')
  r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' })
} else {
  const args = ['build', '--lib']
  if (profile === 'release') args.push('--release')
  if (triple) args.push('--target', triple)
  r = spawnSync('cargo', args, { cwd: root, stdio: 'inherit' })
  if (r.status === 0) {
    const dir = join(root, 'target', ...(triple ? [triple] : []), profile)
    const lib = process.platform === 'win32' ? 'lcm_native.dll' : process.platform === 'darwin' ? 'liblcm_native.dylib' : 'liblcm_native.so'
    copyFileSync(join(dir, lib), join(root, `lcm-native.${platformSuffix()}.node`))
  }
}
if (r.status !== 0) {
  console.error('lcm-native: the build failed; see the cargo output above')
  process.exit(r.status || 1)
}
