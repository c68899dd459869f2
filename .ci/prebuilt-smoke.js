'use strict'
// The smoke test of an installed lcm-native, run from the folder it is installed
// in: by .ci/prebuilt.sh on x86_64 and on aarch64 under qemu, and by the release
// workflow on each platform's runner. The addon comes from the platform package
// (no local build in the package), stores a message and gives it back byte-exact,
// and lcm-native/openclaw loads. Prints one JSON line; exits non-zero on failure.
const assert = require('node:assert/strict')
const { existsSync, mkdtempSync, readdirSync, readFileSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { createRequire } = require('node:module')
const { dirname, join } = require('node:path')

// Resolve packages from the folder they are installed in, not from this file's.
const need = createRequire(join(process.cwd(), 'package.json'))

// scripts/platform.js's names (the package does not export that file).
function platformSuffix() {
  const { platform, arch } = process
  if (platform === 'linux') return `linux-${arch}-${process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

;(async () => {
  const pkgDir = dirname(need.resolve('lcm-native/package.json'))
  const platformPkg = `lcm-native-${platformSuffix()}`
  const binary = join(dirname(need.resolve(`${platformPkg}/package.json`)), `lcm-native.${platformSuffix()}.node`)
  assert.ok(existsSync(binary), `${binary} missing`)
  assert.deepEqual(readdirSync(pkgDir).filter((f) => f.endsWith('.node')), [], 'a local build in the package')
  const { LcmEngine } = need('lcm-native')
  const db = join(mkdtempSync(join(tmpdir(), 'lcm-smoke-')), 'lcm.db')
  const e = await LcmEngine.open({ dbPath: db })
  const text = '한국어 \u00a0 👩‍👩‍👧 NEEDLE'
  await e.ingestBatch({ sessionId: 's', sessionKey: 'agent:main:smoke', messages: [{ role: 'user', content: text }] })
  const c = await e.getConversation({ sessionKey: 'agent:main:smoke' })
  const [m] = await e.getMessages(c.conversationId)
  await e.close()
  assert.equal(m.content, text)
  // On Linux, the binary mapped into this process is the platform package's (qemu emulates /proc/self/maps).
  if (process.platform === 'linux') assert.ok(readFileSync('/proc/self/maps', 'utf8').includes(binary), `${binary} is not loaded`)
  const entry = (await import(require('node:url').pathToFileURL(join(pkgDir, 'openclaw', 'index.mjs')).href)).default
  assert.equal(entry.id, 'lcm-native')
  console.log(JSON.stringify({ ok: true, arch: process.arch, platform: platformSuffix(), addon: binary }))
})().catch((err) => {
  console.error(err)
  process.exit(1)
})
