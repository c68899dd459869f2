// OpenClaw's gateway with lcm-native while another process holds lcm.db's write
// lock past the plugin's `busyTimeoutMs` (an operator's tool, a second gateway on
// the same file): the turn, a tool call included, still answers; its durable
// commit fails with LCM_DB_BUSY and stays in OpenClaw's outbox, through a restart
// of the gateway; once the lock is let go, the session's next turn commits it
// first. Every message ends up stored once, in order, and nothing is quarantined.
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { LcmEngine } from './helpers.mjs'
import { gatewayState, openclawCliAsync, openclawSkipReason, startGateway } from './openclaw-installed.mjs'
import { chatCompletionsServer, textOf } from './openclaw-model.mjs'

const skipReason = openclawSkipReason()
const TOKEN = 'contention-test-token'
const SESSION = 'agent:main:contended'

/**
 * A process holding `db`'s write lock (`BEGIN IMMEDIATE`) until `release()`;
 * resolves once it holds it.
 */
function holdWriteLock(db) {
  const script = `
    const { DatabaseSync } = require('node:sqlite')
    const db = new DatabaseSync(process.argv[1])
    db.exec('BEGIN IMMEDIATE')
    process.stdout.write('locked\\n')
    process.stdin.on('data', () => { db.exec('COMMIT'); db.close(); process.exit(0) })
    setTimeout(() => process.exit(3), 300000)`
  const child = spawn(process.execPath, ['-e', script, db], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    exited.then((code) => reject(new Error(`the lock holder exited (${code}) before it held the lock`)))
    child.stdout.on('data', (d) => {
      if (!String(d).includes('locked')) return
      resolve({
        release: () => {
          child.stdin.write('go\n')
          return exited
        },
      })
    })
  })
}

/** A turn saying RUN runs one `exec` call first (four messages: its middle two carry no anchor id). */
function respond(body, n) {
  const msgs = body.messages ?? []
  const ask = msgs.findLastIndex((m) => m.role === 'user' && /RUN/.test(textOf(m)))
  if (body.tools && ask >= 0 && !msgs.slice(ask).some((m) => m.role === 'tool')) {
    return { toolCall: { id: `call_${n}`, name: 'exec', arguments: { command: 'echo "ran while locked: 한국어\u00a0🎉"' } } }
  }
  return { text: `Reply ${n}: noted.` }
}

let model
beforeAll(async () => {
  if (skipReason === null) model = await chatCompletionsServer(respond)
})
afterAll(() => model?.server.close())

describe.skipIf(skipReason !== null)(`OpenClaw's gateway with lcm.db locked by another process${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  it('answers the turn, keeps its commit in the outbox through a restart and commits it before the next turn', async () => {
    const { state, port } = await gatewayState('lcm-oc-contention-', { modelPort: model.port, token: TOKEN, pluginConfig: { busyTimeoutMs: 1500 } })
    const db = join(state, 'lcm.db')
    const texts = ['first turn: 한국어 テスト\u00a0🎉', 'second turn, while the file is locked: RUN it', 'third turn, after a restart with the lock let go']
    const turn = async (text) => {
      const r = await openclawCliAsync(state, ['agent', '--session-key', SESSION, '--message', text, '--json'])
      expect(JSON.parse(r.stdout).status, `${text}: ${r.stderr}`).toBe('ok')
    }

    const stop = async (gateway) => {
      const stopped = await gateway.stop()
      expect(stopped, gateway.log()).toEqual({ code: 0, signal: null, forced: false })
      expect(gateway.log()).not.toMatch(/quarantin/i)
    }
    let gateway = await startGateway(state, port)
    let lock
    try {
      await turn(texts[0])
      lock = await holdWriteLock(db)
      await turn(texts[1])
      // The turn answered, but its commit is still waiting in OpenClaw's outbox; the
      // bootstrap before it needed no write and did not wait for the lock.
      expect(gateway.log()).toMatch(/durable turn advancement remains queued: .*lcm-native: LCM_DB_BUSY/)
      expect(gateway.log()).not.toMatch(/bootstrap failed/)
      // The gateway restarts with the commit still queued (the lock is still held
      // while it stops); the lock is let go; the next turn commits it first.
      await stop(gateway)
      gateway = null
      await lock.release()
      lock = null
      gateway = await startGateway(state, port)
      await turn(texts[2])
    } finally {
      await lock?.release()
      if (gateway) await stop(gateway)
    }

    const e = await LcmEngine.open({ dbPath: db })
    try {
      const conv = await e.getConversation({ sessionKey: SESSION })
      const messages = await e.getMessages(conv.conversationId)
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'toolResult', 'assistant', 'user', 'assistant'])
      expect(textOf(messages[4])).toContain('ran while locked: 한국어\u00a0🎉')
      expect(messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(texts)
      expect(await e.integrityCheck()).toEqual(['ok'])
    } finally {
      await e.close()
    }
  }, 600_000)
})
