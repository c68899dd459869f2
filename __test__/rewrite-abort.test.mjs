// rewrite() and planRewrite() with an AbortSignal: aborting closes the in-flight
// HTTP request (the loopback server sees the connection go) and writes nothing.
import { describe, it, expect } from 'vitest'
import { createServer } from 'node:http'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { LcmEngine, addon, root, tempDir } from './helpers.mjs'
import { buildDb, emptyPromptDir } from './rewrite-fixture.mjs'

/** An OpenAI chat-completions server that never answers; it records requests and their closing. */
function hangingServer() {
  const seen = []
  const server = createServer((req, res) => {
    const rec = { url: req.url, closed: false, body: '' }
    seen.push(rec)
    req.on('data', (d) => (rec.body += d))
    res.on('close', () => (rec.closed = true))
  })
  return {
    seen,
    async start() {
      await new Promise((r) => server.listen(0, '127.0.0.1', r))
      return `http://127.0.0.1:${server.address().port}/v1`
    },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r) }),
  }
}

async function until(cond, ms = 10000) {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('rewrite with an AbortSignal', () => {
  it('aborting closes the in-flight request, rejects LCM_ABORTED and writes nothing', async () => {
    const fx = await buildDb()
    const srv = hangingServer()
    const baseUrl = await srv.start()
    const engine = await LcmEngine.open({ dbPath: fx.dbPath, promptDir: emptyPromptDir() })
    try {
      const before = await engine.getSummaries(fx.conversationId)
      const ac = new AbortController()
      const progress = []
      const p = engine.rewrite({
        conversationId: fx.conversationId,
        summaryId: fx.d1[0],
        apply: true,
        provider: 'openai',
        baseUrl,
        model: 'gpt-4.1-mini',
        signal: ac.signal,
        onProgress: (ev) => progress.push(ev),
      })
      await until(() => srv.seen.length === 1)
      expect(srv.seen[0].url).toBe('/v1/chat/completions')
      expect(srv.seen[0].closed).toBe(false)
      ac.abort()
      const err = await p.then(() => null, (e) => e)
      expect(err?.code).toBe('LCM_ABORTED')
      await until(() => srv.seen[0].closed)
      expect(srv.seen.length).toBe(1)
      expect(progress).toEqual([])
      expect(await engine.getSummaries(fx.conversationId)).toEqual(before)
    } finally {
      await engine.close()
      await srv.close()
    }
  })

  it('an already aborted signal rejects before any request; planRewrite honours it too', async () => {
    const fx = await buildDb()
    const srv = hangingServer()
    const baseUrl = await srv.start()
    const engine = await LcmEngine.open({ dbPath: fx.dbPath, promptDir: emptyPromptDir() })
    try {
      const signal = AbortSignal.abort()
      const err = await engine
        .rewrite({ conversationId: fx.conversationId, all: true, apply: true, provider: 'openai', baseUrl, model: 'gpt-4.1-mini', signal })
        .then(() => null, (e) => e)
      expect(err?.code).toBe('LCM_ABORTED')
      expect(srv.seen.length).toBe(0)
      const planErr = await engine.planRewrite({ conversationId: fx.conversationId, all: true, signal }).then(() => null, (e) => e)
      expect(planErr?.code).toBe('LCM_ABORTED')
      // A live signal changes nothing.
      const plan = await engine.planRewrite({ conversationId: fx.conversationId, all: true, signal: new AbortController().signal })
      expect(plan.length).toBe(fx.all.length)
    } finally {
      await engine.close()
      await srv.close()
    }
  })
})

describe('lcm-tui rewrite and Ctrl-C', () => {
  it('SIGINT drops the in-flight request, keeps what was applied, writes nothing partial', async () => {
    const fx = await buildDb()
    const srv = hangingServer()
    const baseUrl = await srv.start()
    const env = { PATH: process.env.PATH, HOME: tempDir('lcm-home-'), NO_COLOR: '1', OPENAI_API_KEY: 'sk-test' }
    const child = spawn(process.execPath, [join(root, 'bin', 'lcm-tui.js'), 'rewrite', String(fx.conversationId), '--summary', fx.d1[0], '--apply', '--provider', 'openai', '--base-url', baseUrl, '--model', 'gpt-4.1-mini', '--db', fx.dbPath, '--prompt-dir', emptyPromptDir()], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const exited = new Promise((r) => child.on('close', (code) => r(code)))
    try {
      await until(() => srv.seen.length === 1)
      child.kill('SIGINT')
      const code = await exited
      expect(code).toBe(1)
      expect(out).toContain('LCM_ABORTED')
      expect(out).toContain('nothing was written')
      await until(() => srv.seen[0].closed)
      const e = await LcmEngine.open({ dbPath: fx.dbPath })
      const byId = Object.fromEntries((await e.getSummaries(fx.conversationId)).map((s) => [s.summaryId, s.content]))
      await e.close()
      expect(byId[fx.d1[0]]).toBe('Old d1 node 0.')
    } finally {
      child.kill('SIGKILL')
      await srv.close()
    }
  })
})

describe('interruptCli', () => {
  it('answers false with nothing running, and stops a running rewrite in this process', async () => {
    expect(addon.interruptCli()).toBe(false)
    const fx = await buildDb()
    const srv = hangingServer()
    const baseUrl = await srv.start()
    const key = process.env.OPENAI_API_KEY
    process.env.OPENAI_API_KEY = 'sk-test'
    try {
      const run = addon.runCli(['rewrite', String(fx.conversationId), '--summary', fx.d1[0], '--apply', '--provider', 'openai', '--base-url', baseUrl, '--model', 'gpt-4.1-mini', '--db', fx.dbPath, '--prompt-dir', emptyPromptDir(), '--json'])
      await until(() => srv.seen.length === 1)
      expect(addon.interruptCli()).toBe(true)
      expect(await run).toBe(1)
      await until(() => srv.seen[0].closed)
      expect(addon.interruptCli()).toBe(false)
      const e = await LcmEngine.open({ dbPath: fx.dbPath })
      const byId = Object.fromEntries((await e.getSummaries(fx.conversationId)).map((s) => [s.summaryId, s.content]))
      await e.close()
      expect(byId[fx.d1[0]]).toBe('Old d1 node 0.')
    } finally {
      if (key === undefined) delete process.env.OPENAI_API_KEY
      else process.env.OPENAI_API_KEY = key
      await srv.close()
    }
  })
})
