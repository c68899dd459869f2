// scripts/install.js, the npm install hook, against a fake `cargo` on PATH: an
// installed copy builds outside its package directory (OpenClaw copies a plugin's
// whole package directory at every load), a git checkout builds in target/.
import { describe, it, expect } from 'vitest'
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync, readdirSync } from 'node:fs'
import { join, relative, isAbsolute } from 'node:path'
import { createRequire } from 'node:module'
import { root, tempDir } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { platformSuffix, targetTriple } = require('../scripts/platform.js')
const lib = process.platform === 'win32' ? 'lcm_native.dll' : process.platform === 'darwin' ? 'liblcm_native.dylib' : 'liblcm_native.so'

/** A package laid out as npm installs it, whose addon does not load yet. */
function installedPackage({ checkout = false } = {}) {
  const pkg = join(tempDir('lcm-inst-'), 'lcm-native')
  mkdirSync(join(pkg, 'scripts'), { recursive: true })
  for (const f of ['install.js', 'platform.js']) copyFileSync(join(root, 'scripts', f), join(pkg, 'scripts', f))
  writeFileSync(join(pkg, 'index.js'), "throw new Error('no addon yet')\n")
  if (checkout) mkdirSync(join(pkg, '.git'))
  return pkg
}

/** A `cargo` that records where it was asked to build and leaves a library there. */
function fakeCargo({ fail = false } = {}) {
  const bin = tempDir('lcm-cargo-')
  const log = join(bin, 'calls.jsonl')
  const script = `#!${process.execPath}
const fs = require('node:fs'), path = require('node:path')
const args = process.argv.slice(2)
if (args[0] === '--version') { console.log('cargo 1.0.0 (fake)'); process.exit(0) }
const dir = process.env.CARGO_TARGET_DIR
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify({ args, dir, existed: fs.existsSync(dir) }) + '\\n')
if (${fail}) process.exit(3)
const t = args.indexOf('--target')
const out = path.join(dir, ...(t >= 0 ? [args[t + 1]] : []), args.includes('--release') ? 'release' : 'debug')
fs.mkdirSync(out, { recursive: true })
fs.writeFileSync(path.join(out, ${JSON.stringify(lib)}), 'FAKE ADDON')
`
  writeFileSync(join(bin, 'cargo'), script)
  chmodSync(join(bin, 'cargo'), 0o755)
  const calls = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : [])
  return { bin, calls }
}

function runInstall(pkg, cargo, env = {}) {
  const clean = { ...process.env }
  for (const k of ['LCM_NATIVE_TARGET_DIR', 'CARGO_TARGET_DIR', 'LCM_NATIVE_SKIP_BUILD', 'LCM_NATIVE_FORCE_BUILD', 'LCM_NATIVE_BUILD_PROFILE']) delete clean[k]
  return spawnSync(process.execPath, [join(pkg, 'scripts', 'install.js')], {
    cwd: pkg,
    encoding: 'utf8',
    env: { ...clean, PATH: `${cargo.bin}:${process.env.PATH}`, ...env },
  })
}

const isInside = (dir, p) => {
  const rel = relative(dir, p)
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))
}

describe.skipIf(process.platform === 'win32' || !targetTriple())('npm install hook (scripts/install.js)', () => {
  const addonFile = `lcm-native.${platformSuffix()}.node`

  it('an installed copy builds outside its package and removes the build directory', () => {
    const pkg = installedPackage()
    const cargo = fakeCargo()
    const r = runInstall(pkg, cargo)
    expect(r.status, r.stderr + r.stdout).toBe(0)
    const [call] = cargo.calls()
    expect(call.args).toEqual(['build', '--lib', '--release', '--target', targetTriple()])
    expect(isInside(pkg, call.dir)).toBe(false)
    expect(call.existed).toBe(true)
    expect(existsSync(call.dir)).toBe(false)
    expect(readFileSync(join(pkg, addonFile), 'utf8')).toBe('FAKE ADDON')
    expect(readdirSync(pkg).sort()).toEqual([addonFile, 'index.js', 'scripts'].sort())
  })

  it('a failed build of an installed copy also removes its build directory and fails the install', () => {
    const pkg = installedPackage()
    const cargo = fakeCargo({ fail: true })
    const r = runInstall(pkg, cargo)
    expect(r.status).toBe(3)
    expect(r.stderr).toContain('the build failed')
    const [call] = cargo.calls()
    expect(call.existed).toBe(true)
    expect(isInside(pkg, call.dir)).toBe(false)
    expect(existsSync(call.dir)).toBe(false)
    expect(existsSync(join(pkg, addonFile))).toBe(false)
  })

  it('a git checkout builds in target/ and keeps it; a chosen directory is kept', () => {
    const pkg = installedPackage({ checkout: true })
    const cargo = fakeCargo()
    expect(runInstall(pkg, cargo, { LCM_NATIVE_BUILD_PROFILE: 'debug' }).status).toBe(0)
    expect(cargo.calls()[0].dir).toBe(join(pkg, 'target'))
    expect(existsSync(join(pkg, 'target', targetTriple(), 'debug', lib))).toBe(true)

    const installed = installedPackage()
    const kept = join(tempDir('lcm-keep-'), 'build')
    expect(runInstall(installed, cargo, { LCM_NATIVE_TARGET_DIR: kept }).status).toBe(0)
    expect(cargo.calls()[1].dir).toBe(kept)
    expect(existsSync(join(kept, targetTriple(), 'release', lib))).toBe(true)
  })

  it('refuses a build directory inside an installed package, naming it', () => {
    const pkg = installedPackage()
    const cargo = fakeCargo()
    const r = runInstall(pkg, cargo, { CARGO_TARGET_DIR: join(pkg, 'target') })
    expect(r.status).toBe(1)
    expect(r.stderr).toContain(`${join(pkg, 'target')}`)
    expect(r.stderr).toContain('inside the installed package')
    expect(cargo.calls()).toEqual([])
  })
})
