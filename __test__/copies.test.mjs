// The package loaded from several folders into one process, as OpenClaw's gateway
// does (it builds each plugin into staging copies and loads each): every copy of the
// addon carries its own SQLite, and two SQLite libraries on one file in one process
// corrupt it. Copies of one version share the addon loaded first (native.js); a
// copy of another version gets its own, and the engine refuses to open a file the
// other copy has open. Each scenario runs in a fresh Node process, so no addon is
// loaded before it starts.
import { describe, it, expect } from 'vitest'
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import { root, tempDir } from './helpers.mjs'
import platform from '../scripts/platform.js'

const addonFile = `lcm-native.${platform.platformSuffix()}.node`

/** A copy of the package's runtime files under `dir`, at `version` (default: ours). */
function copyPackage(dir, version) {
  mkdirSync(join(dir, 'scripts'), { recursive: true })
  for (const f of ['index.js', 'native.js', addonFile, 'scripts/platform.js']) cpSync(join(root, f), join(dir, f))
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  if (version) pkg.version = version
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg))
  return dir
}

/** Runs `body` (an async function's text, given `load(dir)` and `db`) in a new Node process; its JSON result. */
function inFreshProcess(body, env) {
  const script = `
    const load = (dir) => require(require('node:path').join(dir, 'native.js')).loadNative()
    const code = async (p) => { try { await p; return 'ok' } catch (e) { return e.code + ': ' + e.message } }
    ;(async () => { ${body} })().then((r) => process.stdout.write(JSON.stringify(r)), (e) => { console.error(e); process.exit(1) })`
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { env: { ...process.env, ...env }, encoding: 'utf8' }))
}

describe('the package loaded from several folders into one process', () => {
  it('shares the first addon between copies of one version, and their engines keep one file sound', () => {
    const base = tempDir('lcm-copies-')
    const env = { A: copyPackage(join(base, 'a')), B: copyPackage(join(base, 'b')), DB: join(base, 'lcm.db') }
    const r = inFreshProcess(
      `
      const a = load(process.env.A), b = load(process.env.B)
      const opts = { dbPath: process.env.DB }
      const [ea, eb] = await Promise.all([a.LcmEngine.open(opts), b.LcmEngine.open(opts)])
      // Both ingest at once, through one SQLite.
      await Promise.all([ea, eb].map((e, k) => Promise.all(Array.from({ length: 20 }, (_, i) =>
        e.ingest({ sessionId: 's' + k, message: { role: 'user', content: 'copy ' + k + ' turn ' + i + ' 한국어 '.repeat(200) } })))))
      const check = await ea.integrityCheck()
      const counts = []
      for (const s of ['s0', 's1']) counts.push((await ea.getMessages((await eb.getConversation({ sessionId: s })).conversationId)).length)
      await Promise.all([ea.close(), eb.close()])
      return { same: a === b, check, counts }
    `,
      env,
    )
    expect(r).toEqual({ same: true, check: ['ok'], counts: [20, 20] })
  })

  it('gives copies of another version their own addon, which may not open a file the first copy has open', () => {
    const base = tempDir('lcm-copies-')
    const env = {
      A: copyPackage(join(base, 'a')),
      C: copyPackage(join(base, 'c'), '0.0.0-other'),
      D: copyPackage(join(base, 'd'), '0.0.0-other'),
      DB: join(base, 'lcm.db'),
      OTHER_DB: join(base, 'other.db'),
    }
    const r = inFreshProcess(
      `
      const a = load(process.env.A), c = load(process.env.C), d = load(process.env.D)
      const ea = await a.LcmEngine.open({ dbPath: process.env.DB })
      const sameFile = await code(c.LcmEngine.open({ dbPath: process.env.DB }).then((e) => e.close()))
      const again = await code(a.LcmEngine.open({ dbPath: process.env.DB }).then((e) => e.close()))
      const otherFile = await code(c.LcmEngine.open({ dbPath: process.env.OTHER_DB }).then((e) => e.close()))
      await ea.ingest({ sessionId: 's', message: { role: 'user', content: 'kept' } })
      await ea.close()
      const ec = await c.LcmEngine.open({ dbPath: process.env.DB })
      const conv = await ec.getConversation({ sessionId: 's' })
      const kept = (await ec.getMessages(conv.conversationId)).map((m) => m.content)
      const check = await ec.integrityCheck()
      await ec.close()
      return { distinct: a !== c, sharedOther: c === d, sameFile, again, otherFile, kept, check }
    `,
      env,
    )
    expect(r.distinct).toBe(true)
    expect(r.sharedOther, 'copies of the other version share its first addon').toBe(true)
    expect(r.sameFile).toMatch(/^LCM_DB_OPEN: cannot open database .*another copy of the lcm-native addon/)
    expect(r).toMatchObject({ again: 'ok', otherFile: 'ok', kept: ['kept'], check: ['ok'] })
  })
})
