// The interactive lcm-tui in a real terminal: tmux (120x40, NO_COLOR) runs
// `lcm-tui` on the rewrite fixture with a loopback OpenAI chat-completions server;
// keys go in with send-keys, the screen comes back with capture-pane, polled with a
// deadline (never fixed sleeps).
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { createServer } from 'node:http'
import { execFileSync, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { LcmEngine, root, tempDir } from './helpers.mjs'
import { buildDb, emptyPromptDir } from './rewrite-fixture.mjs'

const hasTmux = spawnSync('tmux', ['-V']).status === 0
if (!hasTmux) console.warn('tmux is not installed: the lcm-tui terminal tests are skipped (.ci/run installs it)')

/** OpenAI chat completions; `hold(n)` true keeps request n open until the client goes. */
function chatServer() {
  const seen = []
  let hold = () => false
  let delayMs = 0
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (d) => (body += d))
    req.on('end', () => {
      const rec = { n: seen.length + 1, body: JSON.parse(body), closed: false, answered: false }
      seen.push(rec)
      res.on('close', () => (rec.closed = true))
      if (hold(rec.n)) return
      const user = rec.body.messages.find((m) => m.role === 'user').content
      const content = `LOOPBACK summary #${rec.n} (${user.length} prompt chars).\nA second line.`
      setTimeout(() => {
        rec.answered = true
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ id: 'x', model: rec.body.model, choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] }))
      }, delayMs)
    })
  })
  return {
    seen,
    setHold: (f) => (hold = f),
    setDelay: (ms) => (delayMs = ms),
    async start() {
      await new Promise((r) => server.listen(0, '127.0.0.1', r))
      return `http://127.0.0.1:${server.address().port}/v1`
    },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r) }),
  }
}

const sh = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`

class Tmux {
  constructor(name) {
    this.socket = `lcm-tui-test-${process.pid}-${name}`
    this.target = 'lcm'
  }
  tmux(...args) {
    return execFileSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8' })
  }
  start(env, args) {
    const envs = Object.entries(env).map(([k, v]) => `${k}=${sh(v)}`).join(' ')
    const cmd = `env -i PATH=${sh(process.env.PATH)} ${envs} ${sh(process.execPath)} ${sh(join(root, 'bin', 'lcm-tui.js'))} ${args.map(sh).join(' ')}; echo EXITED-$?; sleep 30`
    this.tmux('-f', '/dev/null', 'new-session', '-d', '-s', this.target, '-x', '120', '-y', '40', cmd)
  }
  screen() {
    return this.tmux('capture-pane', '-p', '-t', this.target)
  }
  keys(...keys) {
    this.tmux('send-keys', '-t', this.target, ...keys)
  }
  text(s) {
    this.tmux('send-keys', '-t', this.target, '-l', s)
  }
  /** The first screen showing `pattern` (a string, a RegExp, or an array: all of them at once). */
  async waitFor(pattern, ms = 30000) {
    const all = Array.isArray(pattern) ? pattern : [pattern]
    const shows = (screen, p) => (typeof p === 'string' ? screen.includes(p) : p.test(screen))
    const end = Date.now() + ms
    let last = ''
    while (Date.now() < end) {
      last = this.screen()
      if (all.every((p) => shows(last, p))) return last
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error(`screen never showed ${all.filter((p) => !shows(last, p)).join(' and ')}:\n${last}`)
  }
  kill() {
    spawnSync('tmux', ['-L', this.socket, 'kill-server'])
  }
}

async function until(cond, ms = 15000) {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function summaries(dbPath, conversationId) {
  const e = await LcmEngine.open({ dbPath })
  try {
    const list = await e.getSummaries(conversationId)
    const context = await e.getContextItems(conversationId)
    return { byId: Object.fromEntries(list.map((s) => [s.summaryId, s])), context }
  } finally {
    await e.close()
  }
}

describe.skipIf(!hasTmux)('lcm-tui in tmux', () => {
  let fx, srv, baseUrl, tm
  beforeAll(async () => {
    fx = await buildDb()
    srv = chatServer()
    baseUrl = await srv.start()
    tm = new Tmux('main')
    tm.start(
      { NO_COLOR: '1', HOME: tempDir('lcm-home-'), OPENAI_API_KEY: 'sk-test', TERM: 'xterm-256color', TZ: 'UTC' },
      ['--db', fx.dbPath, '--provider', 'openai', '--base-url', baseUrl, '--model', 'gpt-4.1-mini', '--prompt-dir', emptyPromptDir()],
    )
  })
  afterAll(async () => {
    tm?.kill()
    await srv?.close()
  })

  it('opens a conversation and its DAG', async () => {
    await tm.waitFor('Conversations (1)')
    await tm.waitFor('rewrite-fixture')
    tm.keys('Enter')
    // One screen (a capture can land mid-redraw): wait for everything it must show.
    await tm.waitFor([new RegExp(`▸ ${fx.d2} cond d2 +\\d+t +9↓`), `Summary DAG · conversation ${fx.conversationId}`, 'Old d2 node.'])
    tm.keys('Right')
    await tm.waitFor(new RegExp(`▾ ${fx.d2}`))
    await tm.waitFor(new RegExp(`  ▸ ${fx.d1[2]} cond d1`))
  })

  it('w on a d1 summary: preview, spinner, review, diff, apply', async () => {
    srv.setDelay(1500)
    tm.keys('Down')
    await tm.waitFor(`Old d1 node 0.`)
    tm.text('w')
    await tm.waitFor([
      `Rewrite ${fx.d1[0]} — preview`,
      'Prompt variant: d1 (template condensed-d1, embedded)',
      'Summarizer: openai (gpt-4.1-mini)',
      /Estimated tokens sent: ~\d+/,
    ])
    expect(srv.seen.length).toBe(0)
    tm.keys('Enter')
    await tm.waitFor(`Rewriting ${fx.d1[0]} with d1 prompt…`)
    await tm.waitFor([/NEW \(\d+ tokens\)/, /OLD \(\d+ tokens\)/, 'LOOPBACK summary #1', /Δ tokens: [+−]?[\d,]+ \(\d+ → \d+\)/])
    srv.setDelay(0)
    tm.text('d')
    await tm.waitFor(['Unified diff', /-Old d1 node 0\./, /\+LOOPBACK summary #1/])
    tm.text('y')
    await tm.waitFor(new RegExp(`Rewrote ${fx.d1[0]}: \\d+t → \\d+t \\(`))
    const { byId } = await summaries(fx.dbPath, fx.conversationId)
    expect(byId[fx.d1[0]].content).toMatch(/^LOOPBACK summary #1 \(\d+ prompt chars\)\.\nA second line\.$/)
    expect(byId[fx.d1[1]].content).toBe('Old d1 node 1.')
  })

  it('Esc during a slow call aborts the request and writes nothing', async () => {
    const n = srv.seen.length
    srv.setHold((k) => k === n + 1)
    tm.keys('Down')
    await tm.waitFor('Old d1 node 1.')
    tm.text('w')
    await tm.waitFor(`Rewrite ${fx.d1[1]} — preview`)
    tm.keys('Enter')
    await tm.waitFor(`Rewriting ${fx.d1[1]} with d1 prompt…`)
    await until(() => srv.seen.length === n + 1)
    // The UI stays responsive while the call hangs: the spinner and the clock move on.
    await tm.waitFor(new RegExp(`[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Rewriting ${fx.d1[1]} with d1 prompt… [1-9]s`))
    tm.keys('Escape')
    await tm.waitFor(`Rewrite of ${fx.d1[1]} cancelled: request aborted, nothing written.`)
    await until(() => srv.seen[n].closed)
    expect(srv.seen[n].answered).toBe(false)
    const { byId } = await summaries(fx.dbPath, fx.conversationId)
    expect(byId[fx.d1[1]].content).toBe('Old d1 node 1.')
    srv.setHold(() => false)
  })

  it('W with A rewrites the whole subtree bottom-up', async () => {
    const n = srv.seen.length
    tm.text('g')
    await tm.waitFor('Old d2 node.')
    tm.text('W')
    await tm.waitFor(['— plan', 'Rewrite 10 summaries (6 leaves, 3 d1, 1 d2), bottom-up'])
    tm.keys('Enter')
    await tm.waitFor(/Rewrite: sum_[0-9a-f]{16} \(d0, 6 messages\) — 1 of 10/)
    tm.text('A')
    await tm.waitFor(/Rewrote 10 of 10 summaries, 0 discarded\. Total: [\d,]+t → [\d,]+t/)
    expect(srv.seen.length).toBe(n + 10)
    // Leaves first, then the d1 nodes, then the d2 (prompt variants in request order).
    const kinds = srv.seen.slice(n).map((r) => (r.body.messages.find((m) => m.role === 'user').content.includes('<conversation_segment>') ? 'leaf' : 'condensed'))
    expect(kinds).toEqual([...Array(6).fill('leaf'), ...Array(4).fill('condensed')])
    const { byId } = await summaries(fx.dbPath, fx.conversationId)
    for (const id of fx.all) expect(byId[id].content).toMatch(/^LOOPBACK summary #\d+/)
    // The d2 was written from its rewritten children: its request carried their new texts.
    const d2req = srv.seen[srv.seen.length - 1].body.messages.find((m) => m.role === 'user').content
    for (const id of fx.d1) expect(d2req).toContain(byId[id].content.split('\n')[0])
  })

  it('d dissolves the context summary after a preview', async () => {
    tm.text('g')
    tm.keys('Left')
    tm.text('d')
    await tm.waitFor([`Dissolve ${fx.d2}`, 'is replaced by 3 items', /Ordinals 1…12 \(12 later items\) shift by \+2 to 3…14/, fx.d1[0]])
    tm.text('y')
    await tm.waitFor(new RegExp(`Dissolved ${fx.d2}: 3 items back in its place, 12 later items shifted by \\+2`))
    const { context } = await summaries(fx.dbPath, fx.conversationId)
    expect(context.slice(0, 3).map((c) => c.summaryId)).toEqual(fx.d1)
    await tm.waitFor(new RegExp(`▸ ${fx.d1[0]} cond d1`))
  })

  it('source messages on demand, the context at a budget, large files, help, quit', async () => {
    // The first d1 is now on the context list: open it, select its first leaf, m.
    tm.text('g')
    tm.keys('Right')
    tm.keys('Down')
    await tm.waitFor(new RegExp(`▸ ${fx.leaves[0]} leaf d0`))
    tm.text('m')
    await tm.waitFor(['Source messages (6)', /\[msg 1\] user: /])
    tm.text('c')
    await tm.waitFor([/budget 32,000t · assembled \d+ messages, ~[\d,]+t \(3 summaries, \d+ messages/, `Context · conversation ${fx.conversationId}`])
    tm.text('-')
    await tm.waitFor('Context at 16,000t')
    tm.keys('Escape')
    await tm.waitFor('Summary DAG')
    tm.text('f')
    await tm.waitFor('no large files in this conversation')
    tm.keys('Escape')
    await tm.waitFor('Summary DAG')
    tm.text('?')
    await tm.waitFor(' Keys ')
    tm.text('?')
    await until(() => !tm.screen().includes(' Keys '))
    tm.keys('Escape')
    await tm.waitFor('Conversations (1)')
    tm.keys('Escape')
    await tm.waitFor('EXITED-0')
  })
})

describe.skipIf(!hasTmux)('lcm-tui in tmux: stored text with control characters', () => {
  it('shows escape codes, carriage returns and tabs instead of sending them to the terminal', async () => {
    const dir = tempDir('lcm-tui-ctl-')
    const dbPath = join(dir, 'lcm.db')
    const e = await LcmEngine.open({ dbPath })
    const r = await e.ingestBatch({
      sessionId: 'ctl',
      sessionKey: '세션:한국어',
      messages: [
        { role: 'user', content: 'run the tests' },
        { role: 'assistant', content: 'running' },
      ],
    })
    const ids = r.results.map((m) => m.messageId)
    const leaf = await e.insertSummary({
      conversationId: r.conversationId,
      content: '\x1b[31mFAIL\x1b[0m src/a.rs\r\n\tcol\x07umn 10%\r20%\x1b[2J\x1b[HTAIL',
      messageIds: ids,
      model: 'm',
    })
    await e.close()
    const tm = new Tmux('ctl')
    try {
      tm.start({ NO_COLOR: '1', HOME: tempDir('lcm-home-'), TERM: 'xterm-256color', TZ: 'UTC' }, ['--db', dbPath, '--provider', 'offline', '--prompt-dir', emptyPromptDir()])
      await tm.waitFor(['Conversations (1)', '세션:한국어'])
      tm.keys('Enter')
      const screen = await tm.waitFor([leaf, '␛[31mFAIL␛[0m src/a.rs', '        col␇umn 10%␍20%␛[2J␛[HTAIL'])
      // Nothing was cleared or overwritten: the title bar and the key bar are still there.
      expect(screen).toContain(`Summary DAG · conversation ${r.conversationId}`)
      expect(screen).toMatch(/enter: |q: quit|esc: /)
      tm.keys('Escape')
      await tm.waitFor('Conversations (1)')
      tm.keys('Escape')
      await tm.waitFor('EXITED-0')
    } finally {
      tm.kill()
    }
  })
})
