#!/usr/bin/env node
'use strict'
// `npm run pack:plugin [-- <platform>...]`: one OpenClaw plugin archive with the
// prebuilt addon inside, for installing before the platform packages are on the
// npm registry (or on a machine without it).
//
// `openclaw plugins install <archive>` copies the archive's package into a staging
// directory and, because the package has optionalDependencies, runs
// `npm install --omit=dev --ignore-scripts` there: no install script, so no build,
// and the platform package comes from the registry only once it is published. This
// script packs the main package with the platform package(s) (npm/<platform>/, from
// `npm run build:platforms`; default: this machine's) bundled in its node_modules
// (`bundleDependencies`), which that npm install keeps, and native.js loads.
//
//   node scripts/pack-plugin.js [platform...] [--out <dir>] [--addon <file>]
//
// --addon packs the given .node as the (single) platform package's binary instead
// of npm/<platform>/'s (the tests use the checkout's build when no prebuilt one is
// there). Prints the archive's path.
const { execFileSync } = require('node:child_process')
const { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { join, resolve } = require('node:path')
const { platformSuffix } = require('./platform.js')

const root = join(__dirname, '..')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function option(args, name) {
  const i = args.indexOf(name)
  if (i < 0) return null
  const [, value] = args.splice(i, 2)
  if (!value) throw new Error(`${name} needs a value`)
  return value
}

/** Packs `root` with `platforms` bundled; returns the archive's path in `outDir`. */
function packPlugin({ platforms = [platformSuffix()], outDir = root, addon = null } = {}) {
  if (addon && platforms.length !== 1) throw new Error('--addon needs exactly one platform')
  const work = mkdtempSync(join(tmpdir(), 'lcm-pack-plugin-'))
  try {
    const [main] = JSON.parse(execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: root, encoding: 'utf8' }))
    execFileSync('tar', ['-xzf', join(work, main.filename), '-C', work])
    const stage = join(work, 'package')
    const manifest = JSON.parse(readFileSync(join(stage, 'package.json'), 'utf8'))
    const bundled = []
    for (const platform of platforms) {
      const src = join(root, 'npm', platform)
      const node = `lcm-native.${platform}.node`
      const binary = addon ? resolve(addon) : join(src, node)
      if (!existsSync(join(src, 'package.json'))) throw new Error(`no platform package npm/${platform}`)
      if (!existsSync(binary)) throw new Error(`${binary} is not built: run \`npm run build:platforms -- ${platform}\``)
      const platformManifest = JSON.parse(readFileSync(join(src, 'package.json'), 'utf8'))
      if (platformManifest.version !== manifest.version) throw new Error(`npm/${platform} is ${platformManifest.version}, lcm-native is ${manifest.version}`)
      const dest = join(stage, 'node_modules', platformManifest.name)
      mkdirSync(dest, { recursive: true })
      copyFileSync(join(src, 'package.json'), join(dest, 'package.json'))
      if (existsSync(join(src, 'README.md'))) copyFileSync(join(src, 'README.md'), join(dest, 'README.md'))
      copyFileSync(binary, join(dest, node))
      bundled.push(platformManifest.name)
    }
    manifest.bundleDependencies = bundled
    writeFileSync(join(stage, 'package.json'), JSON.stringify(manifest, null, 2) + '\n')
    const [packed] = JSON.parse(execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: stage, encoding: 'utf8' }))
    mkdirSync(outDir, { recursive: true })
    const out = join(outDir, `lcm-native-${manifest.version}-with-${platforms.join('+')}.tgz`)
    copyFileSync(join(work, packed.filename), out)
    return out
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

module.exports = { packPlugin }

if (require.main === module) {
  const args = process.argv.slice(2)
  const outDir = resolve(option(args, '--out') || root)
  const addon = option(args, '--addon')
  const platforms = args.length ? args : [platformSuffix()]
  console.log(packPlugin({ platforms, outDir, addon }))
}
