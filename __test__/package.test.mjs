// The npm package as a user gets it: `npm pack`, unpacked into the node_modules of
// a fresh project, with the addon this checkout built linked in (what the install
// hook builds from source). From there the install hook runs, `require('lcm-native')`
// stores and returns a message, `lcm-native/openclaw` loads, and the `lcm-tui` bin
// answers; the tarball ships every file a build from source needs and nothing of a
// build.
import { describe, it, expect, beforeAll } from 'vitest'
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { root, tempDir } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { platformSuffix, targetTriple } = require('../scripts/platform.js')
const addonFile = `lcm-native.${platformSuffix()}.node`

let packed
let project
let pkg
let bare

function npm(args, cwd) {
  return execFileSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

function run(args, env = {}) {
  const r = spawnSync(process.execPath, args, { cwd: project, encoding: 'utf8', env: { ...process.env, ...env } })
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr}`)
  return r.stdout
}

beforeAll(() => {
  const out = tempDir('lcm-pack-')
  ;[packed] = JSON.parse(npm(['pack', '--json', '--pack-destination', out], root))
  project = tempDir('lcm-consumer-')
  writeFileSync(join(project, 'package.json'), '{"name":"consumer","private":true}\n')
  mkdirSync(join(project, 'node_modules'))
  execFileSync('tar', ['-xzf', join(out, packed.filename), '-C', join(project, 'node_modules')])
  pkg = join(project, 'node_modules', 'lcm-native')
  renameSync(join(project, 'node_modules', 'package'), pkg)
  symlinkSync(join(root, addonFile), join(pkg, addonFile))
  // The same package as `openclaw plugins install` leaves it: no install script ran.
  bare = join(tempDir('lcm-bare-'), 'node_modules')
  mkdirSync(bare)
  execFileSync('tar', ['-xzf', join(out, packed.filename), '-C', bare])
  bare = join(bare, 'package')
}, 120_000)

describe('the npm package', () => {
  it('ships every tracked source file a build needs, and nothing of a build or of the tests', () => {
    const files = new Set(packed.files.map((f) => f.path))
    for (const f of ['index.js', 'index.d.ts', 'native.js', 'package.json', 'openclaw.plugin.json', 'bin/lcm-tui.js', 'scripts/install.js', 'scripts/platform.js', 'openclaw/index.mjs', 'openclaw/index.d.mts', 'build.rs', 'Cargo.toml', 'Cargo.lock']) {
      expect(files.has(f), f).toBe(true)
    }
    if (existsSync(join(root, '.git'))) {
      const tracked = execFileSync('git', ['ls-files', 'src', 'prompts', 'openclaw', 'bin'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean)
      expect(tracked.length).toBeGreaterThan(100)
      expect(tracked.filter((f) => !files.has(f))).toEqual([])
    }
    const unwanted = [...files].filter((f) => /^(target|\.tmp|node_modules|__test__|bench|examples|npm)\/|\.node$/.test(f))
    expect(unwanted).toEqual([])
  })

  it('its install hook finds the addon and builds nothing', () => {
    const out = run([join(pkg, 'scripts', 'install.js')])
    expect(out).toContain('native addon found, no build needed')
  })

  it('require("lcm-native") stores a message and gives it back byte-exact', () => {
    const db = join(tempDir('lcm-pkgdb-'), 'lcm.db')
    const script = `
      const { LcmEngine } = require('lcm-native')
      ;(async () => {
        const e = await LcmEngine.open({ dbPath: ${JSON.stringify(db)} })
        const text = '한국어 \\u00a0 👩‍👩‍👧 NEEDLE'
        await e.ingestBatch({ sessionId: 's', sessionKey: 'agent:main:pkg', messages: [{ role: 'user', content: text }] })
        const c = await e.getConversation({ sessionKey: 'agent:main:pkg' })
        const [m] = await e.getMessages(c.conversationId)
        await e.close()
        console.log(JSON.stringify({ same: m.content === text, role: m.role }))
      })().catch((err) => { console.error(err); process.exit(1) })`
    expect(JSON.parse(run(['-e', script]))).toEqual({ same: true, role: 'user' })
  })

  it('lcm-native/openclaw loads its plugin entry and reads its manifest', () => {
    const script = `
      const entry = (await import('lcm-native/openclaw')).default
      const { createRequire } = await import('node:module')
      const manifest = createRequire(process.cwd() + '/')('lcm-native/openclaw.plugin.json')
      console.log(JSON.stringify({ id: entry.id, register: typeof entry.register, manifest: manifest.id, kind: manifest.kind }))`
    const out = JSON.parse(run(['--input-type=module', '-e', script]))
    expect(out).toEqual({ id: 'lcm-native', register: 'function', manifest: 'lcm-native', kind: 'context-engine' })
  })

  it('the lcm-tui bin answers --version', () => {
    expect(run([join(pkg, 'bin', 'lcm-tui.js'), '--version'])).toMatch(/^lcm-tui \d+\.\d+\.\d+/)
  })

  it('without its addon (no install script ran), the bin and the plugin say how to build it', () => {
    const how = `node ${join(bare, 'scripts', 'install.js')}`
    const cli = spawnSync(process.execPath, [join(bare, 'bin', 'lcm-tui.js'), '--version'], { encoding: 'utf8' })
    expect(cli.status).toBe(1)
    expect(cli.stderr).toContain(`lcm-native: no native addon is built for ${platformSuffix()} (Rust target ${targetTriple()}): neither the platform package lcm-native-${platformSuffix()} nor a local build`)
    expect(cli.stderr).toContain(how)
    // Without the addon the plugin still registers (OpenClaw refuses every agent run
    // when a selected plugin fails to), logs how to build it, naming the installed
    // directory OpenClaw passes as api.rootDir (it runs the plugin from a copy), and
    // its engine falls back to the live context while the host keeps compacting.
    const installed = '/srv/openclaw/extensions/lcm-native'
    const script = `
      const entry = (await import(${JSON.stringify(join(bare, 'openclaw', 'index.mjs'))})).default
      const errors = []
      let factory
      const api = { rootDir: ${JSON.stringify(installed)}, registrationMode: 'full', pluginConfig: { databasePath: ${JSON.stringify(join(tempDir('lcm-bare-db-'), 'lcm.db'))} },
        logger: { warn() {}, info() {}, error: (m) => errors.push(m) }, registerContextEngine: (id, f) => { factory = f }, registerTool() {}, on() {} }
      const { ready, shutdown } = entry.register(api)
      await ready
      const engine = await factory()
      const live = [{ role: 'user', content: 'hello' }]
      const assembled = await engine.assemble({ sessionId: 's', messages: live, tokenBudget: 1000 })
      console.log(JSON.stringify({ errors, owns: engine.info.ownsCompaction, messages: assembled.messages, code: engine.handle.error?.code }))
      await engine.dispose(); await shutdown()`
    const out = JSON.parse(run(['--input-type=module', '-e', script]))
    expect(out.code).toBe('LCM_NATIVE_MISSING')
    expect(out.owns).toBe(false)
    expect(out.messages).toEqual([{ role: 'user', content: 'hello' }])
    expect(out.errors.join('\n')).toContain(`node ${join(installed, 'scripts', 'install.js')}`)
    expect(out.errors.join('\n')).toContain('OpenClaw installs plugins without running their install scripts')

    // An addon that is there but does not load (another platform's, a damaged file).
    writeFileSync(join(bare, addonFile), 'not a shared library')
    const broken = spawnSync(process.execPath, [join(bare, 'bin', 'lcm-tui.js'), '--version'], { encoding: 'utf8' })
    expect(broken.status).toBe(1)
    expect(broken.stderr).toContain(`lcm-native: the native addon for ${platformSuffix()} (Rust target ${targetTriple()}) does not load (`)
    expect(broken.stderr).toContain(`rebuild it with \`${how}\``)
  })
})
