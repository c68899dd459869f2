// Where the published `openclaw` package is installed for the tests that drive
// OpenClaw itself (CI installs it outside the checkout for the type fixture;
// LCM_OPENCLAW_DIR points elsewhere), and whether this Node can run it.
import { createRequire } from 'node:module'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { root, tempDir } from './helpers.mjs'
import { loopProvider } from './openclaw-model.mjs'

const require = createRequire(import.meta.url)
const { platformSuffix } = require('../scripts/platform.js')
const { packPlugin } = require('../scripts/pack-plugin.js')

/** Directories whose node_modules may hold `openclaw`. */
export function candidateDirs() {
  return [process.env.LCM_OPENCLAW_DIR, join(root, '__test__', 'types'), join(homedir(), '.cache', 'lcm-native-ci', 'types')].filter(Boolean)
}

/** `{ dir, harness, cli }` of the first installed `openclaw`, else null. */
export function findOpenclaw() {
  for (const dir of candidateDirs()) {
    if (!existsSync(join(dir, 'node_modules', 'openclaw', 'package.json'))) continue
    try {
      const req = createRequire(join(dir, 'package.json'))
      return { dir, harness: req.resolve('openclaw/plugin-sdk/agent-harness-runtime'), cli: join(dir, 'node_modules', 'openclaw', 'openclaw.mjs') }
    } catch {
      /* not resolvable from there */
    }
  }
  return null
}

function nodeAtLeast(major, minor) {
  const [a, b] = process.versions.node.split('.').map(Number)
  return a > major || (a === major && b >= minor)
}

/** Why the OpenClaw tests cannot run here, or null when they can. */
export function openclawSkipReason() {
  if (!nodeAtLeast(24, 16)) return `Node ${process.versions.node} < 24.16: OpenClaw does not load here (CI runs it on its Node 24 leg)`
  if (!findOpenclaw()) return `the openclaw package is not installed (looked in ${candidateDirs().join(', ')})`
  return null
}

/** The environment of a user's shell: OpenClaw behaves differently under a test runner. */
function userEnv(state) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(VITEST|NODE_ENV$|TEST$)/.test(k)))
  return { ...env, OPENCLAW_STATE_DIR: state, NO_COLOR: '1' }
}

/** `openclaw <args>` under this Node with its own state directory; throws on a non-zero exit. */
export function openclawCli(state, args) {
  const r = spawnSync(process.execPath, [findOpenclaw().cli, ...args], { cwd: state, encoding: 'utf8', env: userEnv(state), timeout: 240_000 })
  if (r.status !== 0) throw new Error(`openclaw ${args.join(' ')} exited ${r.status}: ${r.stderr}\n${r.stdout}`)
  return r
}

/**
 * `openclaw <args>` without blocking this process (a server in it can answer
 * OpenClaw); resolves `{ stdout, stderr }`, rejects on a non-zero exit.
 */
export function openclawCliAsync(state, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [findOpenclaw().cli, ...args], { cwd: state, env: userEnv(state) })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve({ stdout, stderr }) : reject(new Error(`openclaw ${args.join(' ')} exited ${code}: ${stderr}\n${stdout}`))))
  })
}

/**
 * Packs this checkout and has OpenClaw install the archive into `state` (its
 * extensions directory; no install script runs). Returns `{ installed, output }`.
 * With `prebuilt`, the archive bundles this machine's platform package
 * (`npm run pack:plugin`): the install needs no build. Its binary is the one
 * `npm run build:platforms` left in npm/<platform>/ (CI builds it, and sets
 * LCM_NATIVE_TEST_PREBUILT=1 to require it), else the addon this checkout built.
 */
export function installPackedPlugin(state, { prebuilt = false } = {}) {
  const out = tempDir('lcm-oc-pack-')
  let archive
  if (prebuilt) {
    const built = join(root, 'npm', platformSuffix(), `lcm-native.${platformSuffix()}.node`)
    if (!existsSync(built) && process.env.LCM_NATIVE_TEST_PREBUILT === '1') throw new Error(`${built} is not built (npm run build:platforms -- ${platformSuffix()})`)
    archive = packPlugin({ outDir: out, addon: existsSync(built) ? built : join(root, `lcm-native.${platformSuffix()}.node`) })
  } else {
    const [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: root, encoding: 'utf8' }))
    archive = join(out, packed.filename)
  }
  const r = openclawCli(state, ['plugins', 'install', archive, '--force', '--accept-capabilities'])
  return { installed: join(state, 'extensions', 'lcm-native'), output: r.stdout + r.stderr }
}

/** Copies the addon this checkout built into an installed copy (what its install script builds). */
export function addAddon(installed) {
  const addon = `lcm-native.${platformSuffix()}.node`
  copyFileSync(join(root, addon), join(installed, addon))
}

/** A free loopback TCP port (bound and released: a port for a child to listen on). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

/**
 * `openclaw gateway run` on `port` with `state`'s config, resolved once it logs
 * that it is ready. Returns `{ pid, log, stop }`: `log()` is its output so far; `stop()`
 * sends SIGTERM and resolves `{ code, signal, forced }`, killing it after
 * `graceMs` (then `forced` is true).
 */
export async function startGateway(state, port, { readyMs = 120_000 } = {}) {
  const child = spawn(process.execPath, [findOpenclaw().cli, 'gateway', 'run', '--port', String(port)], { cwd: state, env: userEnv(state) })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (out += d))
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the gateway was not ready within ${readyMs} ms:\n${out}`)), readyMs)
    const check = () => {
      if (!/\[gateway\] ready/.test(out)) return
      clearTimeout(timer)
      resolve()
    }
    child.stdout.on('data', check)
    child.stderr.on('data', check)
    exited.then(({ code, signal }) => {
      clearTimeout(timer)
      reject(new Error(`the gateway exited (${code ?? signal}) before it was ready:\n${out}`))
    })
  })
  try {
    await ready
  } catch (err) {
    child.kill('SIGKILL')
    throw err
  }
  const stop = async (graceMs = 60_000) => {
    child.kill('SIGTERM')
    let forced = false
    const timer = setTimeout(() => {
      forced = true
      child.kill('SIGKILL')
    }, graceMs)
    const r = await exited
    clearTimeout(timer)
    return { ...r, forced }
  }
  return { pid: child.pid, log: () => out, stop }
}

/**
 * A state directory with the plugin installed as users do before the registry
 * has it (the archive with the platform package bundled, no build) and a
 * config for a gateway on a free loopback port with token auth: the loopback model
 * server on `modelPort` as the default model, the `exec` tool without approval,
 * lcm-native's config `pluginConfig`, and the recurring heartbeat off (OpenClaw's
 * heartbeat automation can wait out a busy agent past a SIGTERM and hold the
 * shutdown for minutes, with or without lcm-native). Resolves `{ state, port }`.
 */
export async function gatewayState(prefix, { modelPort, token, pluginConfig }) {
  const state = tempDir(prefix)
  installPackedPlugin(state, { prebuilt: true })
  const port = await freePort()
  const configFile = join(state, 'openclaw.json')
  const config = JSON.parse(readFileSync(configFile, 'utf8'))
  config.gateway = { mode: 'local', port, bind: 'loopback', auth: { mode: 'token', token } }
  config.agents = { defaults: { model: { primary: 'loop/loop-model' }, heartbeat: { every: '0m' } } }
  config.tools = { exec: { security: 'full', ask: 'off' } }
  config.models = loopProvider(modelPort, 32_000)
  config.plugins.entries['lcm-native'].config = pluginConfig
  writeFileSync(configFile, JSON.stringify(config, null, 2))
  return { state, port }
}
