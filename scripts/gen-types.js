#!/usr/bin/env node
'use strict'
// `npm run gen:types`: writes src/binding/header.d.ts from the Rust types
// (src/typegen.rs, through a `cargo test` that writes $LCM_GEN_TYPES) and then
// index.d.ts (napi build prepends that header to the #[napi] items' declarations).
//
// `--check`: generates both into a temporary directory and compares them with the
// committed files (or those in `--committed DIR`); prints a unified diff and exits 1
// on a difference. `--header-only` leaves index.d.ts out (no addon build).
const { spawnSync } = require('node:child_process')
const { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { join, relative, resolve } = require('node:path')
const { targetTriple } = require('./platform.js')

const root = join(__dirname, '..')
const args = process.argv.slice(2)
const check = args.includes('--check')
const headerOnly = args.includes('--header-only')
const committedAt = args.includes('--committed') ? resolve(args[args.indexOf('--committed') + 1]) : root
const HEADER = 'src/binding/header.d.ts'
const INDEX = 'index.d.ts'

const env = { ...process.env }
const triple = targetTriple()
if (triple) env.CARGO_BUILD_TARGET = triple

function run(cmd, argv, extraEnv = {}) {
  const r = spawnSync(cmd, argv, { cwd: root, env: { ...env, ...extraEnv }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  if (r.status !== 0) {
    process.stderr.write(r.stdout || '')
    process.stderr.write(r.stderr || '')
    console.error(`gen-types: ${cmd} ${argv.join(' ')} failed`)
    process.exit(2)
  }
}

/** Writes the header to `headerPath` and, unless header-only, index.d.ts into `outDir`. */
function generate(headerPath, outDir) {
  run('cargo', ['test', '--lib', '--quiet', 'typegen::tests::write_header', '--', '--exact'], { LCM_GEN_TYPES: headerPath })
  if (headerOnly) return
  const napi = join(root, 'node_modules/@napi-rs/cli/dist/cli.js')
  let out = []
  if (outDir) {
    // The package's napi config with the fresh header (napi joins the path to the cwd).
    const config = join(outDir, 'napi.json')
    const napiConfig = { ...JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).napi, dtsHeaderFile: relative(root, headerPath) }
    writeFileSync(config, JSON.stringify(napiConfig))
    out = ['--config-path', config, '--output-dir', outDir]
  }
  run(process.execPath, [napi, 'build', '--platform', ...(triple ? ['--target', triple] : []), ...out])
}

if (!check) {
  generate(join(root, HEADER), null)
  console.log(`wrote ${HEADER}${headerOnly ? '' : ` and ${INDEX}`}`)
  process.exit(0)
}

const fresh = mkdtempSync(join(tmpdir(), 'lcm-types-'))
try {
  generate(join(fresh, 'header.d.ts'), fresh)
  const pairs = [[HEADER, join(fresh, 'header.d.ts')]]
  if (!headerOnly) pairs.push([INDEX, join(fresh, INDEX)])
  let differ = 0
  for (const [name, freshPath] of pairs) {
    const committed = join(committedAt, name)
    if (!existsSync(committed) || !existsSync(freshPath)) {
      console.error(`${name}: ${existsSync(committed) ? 'not generated' : 'not committed'}`)
      differ++
      continue
    }
    if (readFileSync(committed, 'utf8') === readFileSync(freshPath, 'utf8')) continue
    differ++
    const d = spawnSync('diff', ['-u', '--label', `committed/${name}`, '--label', `generated/${name}`, committed, freshPath], { encoding: 'utf8' })
    process.stdout.write(d.stdout || `${name} differs\n`)
  }
  if (differ) {
    console.error(`gen-types --check: ${differ} file(s) differ from a fresh generation; run \`npm run gen:types\` and commit the result`)
    process.exit(1)
  }
  console.log(`gen-types --check: ${pairs.map((p) => p[0]).join(' and ')} match a fresh generation`)
} finally {
  rmSync(fresh, { recursive: true, force: true })
}
