#!/usr/bin/env node
'use strict'
// `npm test`: the Rust unit tests, a fresh debug build of the addon, then the vitest
// suite against it. Ends with one plain line "N passed, N failed" over both.
const { spawnSync } = require('node:child_process')
const { readFileSync, mkdirSync } = require('node:fs')
const { join } = require('node:path')
const { targetTriple } = require('./platform.js')

const root = join(__dirname, '..')
const env = { ...process.env }
const triple = targetTriple()
if (triple) env.CARGO_BUILD_TARGET = triple
const skipBuild = process.argv.includes('--no-build')
const vitestOnly = process.argv.includes('--vitest-only')

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, env, encoding: 'utf8', stdio: opts.capture ? ['ignore', 'pipe', 'inherit'] : 'inherit' })
  if (opts.capture) process.stdout.write(r.stdout || '')
  return r
}

let passed = 0
let failed = 0
let broken = false

if (!vitestOnly) {
  const cargo = run('cargo', ['test', '--lib', '--bins', '--tests'], { capture: true })
  for (const m of (cargo.stdout || '').matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) {
    passed += Number(m[1])
    failed += Number(m[2])
  }
  if (cargo.status !== 0 && failed === 0) broken = true
}

if (!skipBuild && !vitestOnly) {
  const build = run(process.execPath, [join(root, 'node_modules/@napi-rs/cli/dist/cli.js'), 'build', '--platform', ...(triple ? ['--target', triple] : [])])
  if (build.status !== 0) {
    console.error('addon build failed')
    process.exit(1)
  }
}

mkdirSync(join(root, '.tmp'), { recursive: true })
const report = join(root, '.tmp', 'vitest-report.json')
const vitest = run(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`])
try {
  const j = JSON.parse(readFileSync(report, 'utf8'))
  passed += j.numPassedTests
  failed += j.numFailedTests
  if (j.numFailedTestSuites > 0 && j.numFailedTests === 0) failed += j.numFailedTestSuites
} catch {
  broken = true
}
if (vitest.status !== 0 && failed === 0) broken = true
if (broken) failed = Math.max(failed, 1)
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed > 0 ? 1 : 0)
