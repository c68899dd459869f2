#!/usr/bin/env node
// `node bench/bootstrap.mjs [--mb 200] [--profile release|fastrelease] [--no-build]`:
// bootstraps a session JSONL of about --mb megabytes (and one of a quarter of that
// size) in a fresh child process each, and prints elapsed time, messages per second
// and the child's peak RSS. The file is streamed, never loaded whole: peak RSS must
// stay flat as the file grows (printed as the ratio big / small). The physical
// reference is raw SQLite inserting the same leaf-path messages in one transaction
// (examples/raw_sqlite), same run, printed as engine / raw.
//
// Both the addon and the reference are built with the chosen cargo profile
// (`release` by default; `fastrelease` builds much faster, for local iterations).
// `--no-build` keeps the addon as it is; the reference is still built when its
// binary for that profile is missing, so the ratio is always printed.
//
// The transcript: the shared workload generator's messages repeated until the size
// is reached, as `message` entries with ids and parents, with model changes, custom
// state entries and an abandoned branch in between.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, openSync, writeSync, closeSync, statSync, existsSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const { targetTriple } = require(join(root, 'scripts', 'platform.js'))
const argv = process.argv.slice(2)
const num = (k, d) => (argv.includes(k) ? Number(argv[argv.indexOf(k) + 1]) : d)
const MB = num('--mb', 200)
const PROFILE = argv.includes('--profile') ? argv[argv.indexOf('--profile') + 1] : 'release'
const rawBin = join(root, 'target', targetTriple(), PROFILE, 'examples', 'raw_sqlite')

/** Runs a build step in the repository with the seeded target triple; exits on failure. */
function build(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, CARGO_BUILD_TARGET: targetTriple() || '' } })
  if (r.status !== 0) {
    console.error(`failed: ${cmd} ${args.join(' ')}`)
    process.exit(1)
  }
}

if (argv[0] !== '--child') {
  if (!argv.includes('--no-build')) {
    console.log(`building the addon (profile ${PROFILE})…`)
    build(process.execPath, [join(root, 'node_modules/@napi-rs/cli/dist/cli.js'), 'build', '--platform', '--profile', PROFILE, '--target', targetTriple()])
  }
  if (!argv.includes('--no-build') || !existsSync(rawBin)) {
    console.log(`building the raw-SQLite reference (cargo build --profile ${PROFILE} --example raw_sqlite)…`)
    build('cargo', ['build', '--profile', PROFILE, '--example', 'raw_sqlite'])
  }
}

// The child: bootstraps the file and reports its own peak RSS.
if (argv[0] === '--child') {
  const { LcmEngine } = require(join(root, 'index.js'))
  const [, file, db] = argv
  const engine = await LcmEngine.open({ dbPath: db })
  const t0 = performance.now()
  const r = await engine.bootstrap({ sessionId: 'bench', sessionFile: file })
  const ms = performance.now() - t0
  await engine.close()
  console.log(JSON.stringify({ ms, imported: r.importedMessages, skipped: r.skippedEntries, maxRssKb: process.resourceUsage().maxRSS }))
  process.exit(0)
}

const work = mkdtempSync(join(tmpdir(), 'lcm-bench-bootstrap-'))
const wl = join(work, 'workload.jsonl')
spawnSync(process.execPath, [join(root, 'bench', 'gen-workload.mjs'), '--messages', '20000', '--seed', '7', '--out', wl], { stdio: 'inherit' })
const base = readFileSync(wl, 'utf8').split('\n').filter(Boolean)

/** Writes a session of about `mb` MB; also the leaf path's messages (for raw SQLite). */
function writeSession(mb, file, leafFile) {
  const fd = openSync(file, 'w')
  const leaf = openSync(leafFile, 'w')
  const target = mb * 1e6
  let bytes = 0
  let n = 0
  let parent = null
  const put = (entry) => {
    const line = JSON.stringify({ ...entry, id: `e${n++}`, parentId: parent, timestamp: '2026-02-17T07:00:00.000Z' }) + '\n'
    writeSync(fd, line)
    bytes += Buffer.byteLength(line)
    return `e${n - 1}`
  }
  writeSync(fd, JSON.stringify({ type: 'session', version: 3, id: 'bench', timestamp: '2026-02-17T07:00:00.000Z', cwd: '/w' }) + '\n')
  let i = 0
  while (bytes < target) {
    const m = base[i % base.length]
    if (i % 500 === 250) {
      // An abandoned branch: two messages off the current entry, then back.
      const fork = parent
      parent = put({ type: 'message', message: { role: 'user', content: 'abandoned' } })
      put({ type: 'message', message: { role: 'assistant', content: [{ type: 'text', text: 'abandoned' }] } })
      parent = fork
    }
    if (i % 100 === 0) parent = put({ type: 'model_change', provider: 'anthropic', modelId: 'claude' })
    if (i % 37 === 0) parent = put({ type: 'custom', customType: 'state', data: { i } })
    const line = `{"type":"message","id":"e${n}","parentId":${JSON.stringify(parent)},"timestamp":"2026-02-17T07:00:00.000Z","message":${m}}\n`
    writeSync(fd, line)
    writeSync(leaf, m + '\n')
    bytes += Buffer.byteLength(line)
    parent = `e${n++}`
    i++
  }
  closeSync(fd)
  closeSync(leaf)
  return i
}

function measure(mb) {
  const file = join(work, `session-${mb}.jsonl`)
  const leafFile = join(work, `leaf-${mb}.jsonl`)
  const messages = writeSession(mb, file, leafFile)
  const size = statSync(file).size
  const db = join(work, `lcm-${mb}.db`)
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', file, db, '--no-build'], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`bootstrap child failed: ${r.stderr}`)
  const child = JSON.parse(r.stdout.trim().split('\n').pop())
  const t0 = performance.now()
  const raw = spawnSync(rawBin, ['insert', leafFile, join(work, `raw-${mb}.db`)], { encoding: 'utf8' })
  const rawMs = performance.now() - t0
  if (raw.status !== 0) throw new Error(`raw SQLite reference failed (${rawBin}): ${raw.error ?? raw.stderr}`)
  rmSync(file)
  rmSync(leafFile)
  return { mb, size, messages, ...child, rawMs }
}

const small = measure(Math.max(1, Math.round(MB / 4)))
const big = measure(MB)
const mbs = (x) => (x.size / 1e6).toFixed(1)
console.log(`\nbootstrap of a session JSONL (streaming, one transaction; profile ${PROFILE})`)
for (const x of [small, big]) {
  const rate = Math.round(x.imported / (x.ms / 1000))
  const raw = `, raw SQLite ${Math.round(x.rawMs)} ms (engine / raw = ${(x.ms / x.rawMs).toFixed(2)}×)`
  console.log(`  ${mbs(x)} MB, ${x.imported} messages (${x.skipped} entries skipped): ${Math.round(x.ms)} ms, ${rate} msgs/s, peak RSS ${(x.maxRssKb / 1024).toFixed(0)} MB${raw}`)
}
console.log(`  peak RSS big / small: ${(big.maxRssKb / small.maxRssKb).toFixed(2)} (file size ratio ${(big.size / small.size).toFixed(2)})`)
rmSync(work, { recursive: true, force: true })
