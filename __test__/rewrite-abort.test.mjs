// rewrite() and planRewrite() with an AbortSignal: aborting closes the in-flight
// HTTP request (the loopback server sees the connection go) and writes nothing.
import { describe, it, expect } from 'vitest'
import { createServer } from 'node:http'
import { LcmEngine } from './helpers.mjs'
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
