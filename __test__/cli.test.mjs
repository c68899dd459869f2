import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { spawn, spawnSync } from 'node:child_process'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { existsSync, mkdirSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs'
import { LcmEngine, root, tempDir } from './helpers.mjs'
import { buildDb, checksum } from './rewrite-fixture.mjs'

const BIN = join(root, 'bin', 'lcm-tui.js')

/** A clean environment: a temp HOME, no provider keys or LCM_* settings, no colour hints. */
function cleanEnv(extra = {}) {
  const env = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(LCM_|ANTHROPIC_|OPENAI_|NO_COLOR$|FORCE_COLOR$|OPENCLAW_STATE_DIR$|TZ$)/.test(k)) continue
    env[k] = v
  }
  return { ...env, HOME: tempDir('lcm-home-'), ...extra }
}

/** Runs `lcm-tui` asynchronously (a loopback server in this process must keep answering). */
function lcm(args, { env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: env ?? cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

const HEADER = /^━━━ (sum_[0-9a-f]{16}) \(d(\d+), (\d+) (messages|children), (\d{4}-\d\d-\d\d [^)]+)\) ━━━$/

/** Splits dry-run text output into summary blocks. */
function blocks(stdout) {
  const lines = stdout.split('\n')
  const out = []
  for (let i = 0; i < lines.length; i++) {
    const m = HEADER.exec(lines[i])
    if (!m) continue
    const body = []
    for (let j = i + 1; j < lines.length && !HEADER.test(lines[j]) && !/^(Would rewrite|Rewrote) /.test(lines[j]); j++) body.push(lines[j])
    out.push({ id: m[1], depth: Number(m[2]), children: Number(m[3]), unit: m[4], range: m[5], body: body.join('\n') })
  }
  return out
}

let fx
let prompts
beforeAll(async () => {
  fx = await buildDb()
  prompts = tempDir('lcm-cli-prompts-')
})

describe('lcm-tui rewrite (dry run)', () => {
  it('prints the seed format per summary and a total, and leaves the file byte-identical', async () => {
    const before = checksum(fx.dbPath)
    const r = await lcm(['rewrite', String(fx.conversationId), '--all', '--provider', 'offline', '--db', fx.dbPath, '--prompt-dir', prompts])
    expect(r.code, r.stderr).toBe(0)
    expect(checksum(fx.dbPath)).toBe(before)
    const lines = r.stdout.split('\n')
    expect(lines[0]).toBe(`Rewriting 10 summaries of conversation ${fx.conversationId} (6 leaves, 3 d1, 1 d2) with offline — dry run: nothing is written (--apply writes).`)
    const bs = blocks(r.stdout)
    expect(bs.map((b) => b.id)).toEqual(fx.all)
    expect(bs.map((b) => b.depth)).toEqual([0, 0, 0, 0, 0, 0, 1, 1, 1, 2])
    expect(bs[0]).toMatchObject({ children: 6, unit: 'messages' })
    expect(bs[6]).toMatchObject({ children: 2, unit: 'children' })
    expect(bs[0].range).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d(–\d\d:\d\d)? UTC$|^\d{4}-\d\d-\d\d – \d{4}-\d\d-\d\d$/)
    let oldTotal = 0
    let newTotal = 0
    for (const b of bs) {
      const m = /^\nOLD \((\d+) tokens\):\n([\s\S]*?)\n\nNEW \((\d+) tokens\):\n([\s\S]*?)\n\n {2}Δ tokens: ([+-]?[\d,]+) \((\d+) → (\d+)\)/.exec(b.body)
      expect(m, b.body).not.toBeNull()
      const [, o, oldText, n, newText, delta, o2, n2] = m
      expect(Number(o2)).toBe(Number(o))
      expect(Number(n2)).toBe(Number(n))
      expect(Number(delta.replace(/,/g, ''))).toBe(Number(n) - Number(o))
      expect(oldText.split('\n').every((l) => l.startsWith('  '))).toBe(true)
      expect(newText.split('\n').every((l) => l.startsWith('  '))).toBe(true)
      oldTotal += Number(o)
      newTotal += Number(n)
    }
    expect(bs[0].body).toContain('  Old leaf 0: first line.\n  Second line of leaf 0.')
    const fmt = (n) => n.toLocaleString('en-US')
    const d = newTotal - oldTotal
    expect(lines.filter(Boolean).at(-1)).toBe(`Would rewrite 10 summaries. Total: ${fmt(oldTotal)}t → ${fmt(newTotal)}t (${d > 0 ? '+' : ''}${fmt(d)})`)
    expect(r.stdout).not.toContain('\x1b[')
    expect(r.stderr).toBe('')
  })

  it('--diff prints a unified diff, coloured only when asked or on a terminal without NO_COLOR', async () => {
    const args = ['rewrite', String(fx.conversationId), '--summary', fx.d2, '--provider', 'offline', '--db', fx.dbPath, '--prompt-dir', prompts, '--diff']
    const plain = await lcm(args)
    expect(plain.code).toBe(0)
    expect(plain.stdout).toContain(`--- old/${fx.d2}\n+++ new/${fx.d2}\n@@ `)
    expect(plain.stdout).toContain('\n-Old d2 node.\n')
    expect(plain.stdout).not.toContain('\x1b[')
    const forced = await lcm([...args, '--color', 'always'])
    expect(forced.stdout).toContain(`\x1b[1m--- old/${fx.d2}\x1b[0m`)
    expect(forced.stdout).toContain('\x1b[31m-Old d2 node.\x1b[0m')
    expect(forced.stdout).toMatch(/\x1b\[32m\+/)
    const never = await lcm([...args, '--color', 'never'])
    expect(never.stdout).toBe(plain.stdout)
    if (existsSync('/usr/bin/script')) {
      const cmd = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ')
      const tty = spawnSync('script', ['-qec', cmd, '/dev/null'], { env: cleanEnv(), encoding: 'utf8' })
      expect(tty.stdout).toContain('\x1b[31m-Old d2 node.\x1b[0m')
      const noColor = spawnSync('script', ['-qec', cmd, '/dev/null'], { env: cleanEnv({ NO_COLOR: '1' }), encoding: 'utf8' })
      expect(noColor.stdout).toContain('-Old d2 node.')
      expect(noColor.stdout).not.toContain('\x1b[31m')
    }
  })

  it('--json prints one document with the same entries and totals', async () => {
    const text = await lcm(['rewrite', String(fx.conversationId), '--depth', '0', '--provider', 'offline', '--db', fx.dbPath, '--prompt-dir', prompts])
    const r = await lcm(['rewrite', String(fx.conversationId), '--depth', '0', '--provider', 'offline', '--db', fx.dbPath, '--prompt-dir', prompts, '--json'])
    expect(r.code).toBe(0)
    const doc = JSON.parse(r.stdout)
    expect(doc).toMatchObject({ conversationId: fx.conversationId, dryRun: true, planned: 6, error: null })
    expect(doc.entries.map((e) => e.summaryId)).toEqual(fx.leaves)
    expect(doc.entries.every((e) => e.applied === false && e.diff.startsWith(`--- old/${e.summaryId}`))).toBe(true)
    expect(doc.oldTokens).toBe(doc.entries.reduce((a, e) => a + e.oldTokens, 0))
    const fmt = (n) => n.toLocaleString('en-US')
    expect(text.stdout).toContain(`Would rewrite 6 summaries. Total: ${fmt(doc.oldTokens)}t → ${fmt(doc.newTokens)}t`)
    for (const e of doc.entries) expect(text.stdout).toContain(`  Δ tokens: ${e.delta > 0 ? '+' : ''}${fmt(e.delta)} (${e.oldTokens} → ${e.newTokens})`)
  })
})

/** A loopback server speaking OpenAI chat completions; `fail(n)` returns an HTTP status to fail request n with. */
function chatServer(fail = () => 0) {
  const requests = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (d) => (body += d))
    req.on('end', () => {
      const json = JSON.parse(body)
      requests.push({ url: req.url, auth: req.headers.authorization, body: json })
      const status = fail(requests.length)
      if (status) {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { message: 'invalid api key', type: 'invalid_request_error' } }))
        return
      }
      const user = json.messages.find((m) => m.role === 'user').content
      const depth = user.includes('<conversation_segment>') ? 'leaf' : 'condensed'
      const content = `LOOPBACK ${depth} summary #${requests.length}: ${user.length} prompt chars.`
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ id: 'x', model: json.model, choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] }))
    })
  })
  return {
    requests,
    async start() {
      await new Promise((r) => server.listen(0, '127.0.0.1', r))
      return `http://127.0.0.1:${server.address().port}/v1`
    },
    close: () => new Promise((r) => server.close(r)),
  }
}

async function contents(dbPath, conversationId) {
  const e = await LcmEngine.open({ dbPath })
  const rows = await e.getSummaries(conversationId)
  await e.close()
  return Object.fromEntries(rows.map((s) => [s.summaryId, s]))
}

describe('lcm-tui rewrite --apply against an OpenAI-compatible loopback server', () => {
  it('writes every new text and reports the totals', async () => {
    const db = await buildDb()
    const srv = chatServer()
    const url = await srv.start()
    try {
      const r = await lcm(['rewrite', String(db.conversationId), '--all', '--apply', '--provider', 'openai', '--base-url', url, '--model', 'loop-1', '--db', db.dbPath, '--prompt-dir', prompts, '--concurrency', '3'])
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout.split('\n')[0]).toContain('with openai (loop-1) — writing each new text as it is ready.')
      expect(r.stdout).toMatch(/\nRewrote 10 summaries\. Total: [\d,]+t → [\d,]+t \([+-]?[\d,]+\)\n$/)
      expect(srv.requests).toHaveLength(10)
      expect(srv.requests.every((q) => q.url === '/v1/chat/completions' && q.body.model === 'loop-1')).toBe(true)
      const rows = await contents(db.dbPath, db.conversationId)
      for (const id of db.leaves) expect(rows[id].content).toMatch(/^LOOPBACK leaf summary #\d+/)
      for (const id of [...db.d1, db.d2]) expect(rows[id].content).toMatch(/^LOOPBACK condensed summary #\d+/)
      // The d1 requests carried the rewritten leaves.
      const d1Prompts = srv.requests.filter((q) => q.body.messages[1].content.includes('<conversation_to_condense>'))
      expect(d1Prompts.some((q) => q.body.messages[1].content.includes('LOOPBACK leaf summary'))).toBe(true)
      expect(rows[db.d2].model).toBe('old-model')
    } finally {
      await srv.close()
    }
  })

  it('an auth error stops the run with exit 1; rewrites applied before it stay', async () => {
    const db = await buildDb()
    const srv = chatServer((n) => (n === 3 ? 401 : 0))
    const url = await srv.start()
    try {
      const r = await lcm(['rewrite', String(db.conversationId), '--all', '--apply', '--provider', 'openai', '--base-url', url, '--model', 'loop-1', '--db', db.dbPath, '--prompt-dir', prompts])
      expect(r.code).toBe(1)
      expect(r.stderr).toContain('LCM_LLM_AUTH')
      expect(r.stderr).toContain(`rewrite stopped at ${db.leaves[2]} (d0, 3 of 10)`)
      expect(r.stderr).toContain('the 2 rewrites applied before it stay')
      expect(r.stdout).toContain('Rewrote 2 summaries.')
      const rows = await contents(db.dbPath, db.conversationId)
      expect(rows[db.leaves[0]].content).toMatch(/^LOOPBACK/)
      expect(rows[db.leaves[1]].content).toMatch(/^LOOPBACK/)
      for (const id of [...db.leaves.slice(2), ...db.d1, db.d2]) expect(rows[id].content).toMatch(/^Old /)
      const j = await lcm(['rewrite', String(db.conversationId), '--depth', '1', '--provider', 'openai', '--base-url', url, '--model', 'loop-1', '--db', db.dbPath, '--prompt-dir', prompts, '--json'])
      // Request 4 onwards succeed: this dry run completes.
      expect(j.code).toBe(0)
      expect(JSON.parse(j.stdout).entries).toHaveLength(3)
    } finally {
      await srv.close()
    }
  })
})

describe('lcm-tui errors and exit codes', () => {
  it('exits 2 on bad usage', async () => {
    const conv = String(fx.conversationId)
    const db = ['--db', fx.dbPath, '--provider', 'offline']
    for (const args of [
      [],
      ['rewrite'],
      ['rewrite', conv, ...db],
      ['rewrite', conv, '--all', '--depth', '1', ...db],
      ['rewrite', conv, '--all', '--apply', '--dry-run', ...db],
      ['rewrite', conv, '--all', '--concurrency', '0', ...db],
      ['rewrite', conv, '--depth', '-1', ...db],
      ['rewrite', 'twelve', '--all', ...db],
      ['rewrite', conv, '--all', '--provider', 'gemini', '--db', fx.dbPath],
      ['rewrite', conv, '--all', '--frobnicate', ...db],
      ['prompts', '--show', 'nope'],
      ['prompts', '--list', '--show', 'leaf'],
      ['nonsense'],
    ]) {
      const r = await lcm(args)
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2)
      expect(r.stderr.length).toBeGreaterThan(0)
    }
    const noProvider = await lcm(['rewrite', conv, '--all', '--db', fx.dbPath])
    expect(noProvider.code).toBe(2)
    expect(noProvider.stderr).toContain('no summarizer configured: pass --provider')
    const help = await lcm(['rewrite', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('--no-timestamps')
    expect(help.stdout).toContain('Examples:')
  })

  it('exits 1 for a missing database (never creating one) and for unknown ids, saying what exists', async () => {
    const dir = tempDir('lcm-cli-missing-')
    const missing = join(dir, 'nope.db')
    const r = await lcm(['rewrite', '1', '--all', '--provider', 'offline', '--db', missing])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain(`database not found: ${missing} (from --db)`)
    expect(existsSync(missing)).toBe(false)
    const state = tempDir('lcm-cli-state-')
    const viaState = await lcm(['rewrite', '1', '--all', '--provider', 'offline'], { env: cleanEnv({ OPENCLAW_STATE_DIR: state }) })
    expect(viaState.code).toBe(1)
    expect(viaState.stderr).toContain(`${join(state, 'lcm.db')} (from $OPENCLAW_STATE_DIR)`)
    expect(existsSync(join(state, 'lcm.db'))).toBe(false)
    const home = tempDir('lcm-cli-home-')
    const viaHome = await lcm(['rewrite', '1', '--all', '--provider', 'offline'], { env: cleanEnv({ HOME: home }) })
    expect(viaHome.stderr).toContain(`${join(home, '.openclaw', 'lcm.db')} (the default, ~/.openclaw/lcm.db)`)
    // The state directory's database is found without --db.
    copyFileSync(fx.dbPath, join(state, 'lcm.db'))
    const found = await lcm(['rewrite', String(fx.conversationId), '--depth', '2', '--provider', 'offline', '--json'], { env: cleanEnv({ OPENCLAW_STATE_DIR: state }) })
    expect(found.code, found.stderr).toBe(0)
    expect(JSON.parse(found.stdout).entries[0].summaryId).toBe(fx.d2)

    const conv = String(fx.conversationId)
    const unknownSum = await lcm(['rewrite', conv, '--summary', 'sum_0123456789abcdef', '--provider', 'offline', '--db', fx.dbPath])
    expect(unknownSum.code).toBe(1)
    expect(unknownSum.stderr).toContain('summary sum_0123456789abcdef does not exist in conversation')
    expect(unknownSum.stderr).toContain('10 summaries (d0 ×6, d1 ×3, d2 ×1)')
    const unknownConv = await lcm(['rewrite', '999', '--all', '--provider', 'offline', '--db', fx.dbPath, '--json'])
    expect(unknownConv.code).toBe(1)
    const err = JSON.parse(unknownConv.stdout).error
    expect(err).toMatchObject({ code: 'LCM_NOT_FOUND', exit: 1 })
    expect(err.message).toContain(`conversation 999 does not exist; the database has 1 conversation: ${conv}`)
    const noDepth = await lcm(['rewrite', conv, '--depth', '3', '--provider', 'offline', '--db', fx.dbPath])
    expect(noDepth.code).toBe(1)
    expect(noDepth.stderr).toContain(`conversation ${conv} has no summaries at depth 3; it has 10 (d0 ×6, d1 ×3, d2 ×1)`)
    const notDb = join(dir, 'text.db')
    writeFileSync(notDb, 'plain text, definitely not a SQLite header at all'.repeat(4))
    const bad = await lcm(['rewrite', '1', '--all', '--provider', 'offline', '--db', notDb])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('is not a SQLite database')
  })
})

describe('lcm-tui prompts', () => {
  it('--list shows embedded templates and the override that wins, failing on a broken one', async () => {
    const dir = tempDir('lcm-cli-list-')
    let r = await lcm(['prompts', '--list', '--prompt-dir', dir])
    expect(r.code).toBe(0)
    expect(r.stdout.split('\n')).toEqual([
      `Override directory: ${dir}`,
      'leaf.jinja           embedded (no override)',
      'condensed-d1.jinja   embedded (no override)',
      'condensed-d2.jinja   embedded (no override)',
      'condensed-d3.jinja   embedded (no override)',
      '',
    ])
    writeFileSync(join(dir, 'condensed-d1.tmpl'), 'Summarize {{.ChildCount}} items:\n{{.SourceText}}\n')
    writeFileSync(join(dir, 'condensed-d2.jinja'), '{% if %}broken')
    r = await lcm(['prompts', '--list', '--prompt-dir', dir])
    expect(r.code).toBe(1)
    expect(r.stdout).toContain(`condensed-d1.tmpl    ${join(dir, 'condensed-d1.tmpl')} (override)\n`)
    expect(r.stdout).toMatch(/condensed-d2\.jinja +.*condensed-d2\.jinja \(override, INVALID: prompt template .*condensed-d2\.jinja line 1/)
    expect(r.stderr).toContain('1 override cannot be used')
    const j = JSON.parse((await lcm(['prompts', '--list', '--prompt-dir', dir, '--json'])).stdout)
    expect(j.templates.map((t) => t.source)).toEqual(['embedded', 'override', 'override', 'embedded'])
    // The default directory is ~/.config/lcm-tui/prompts.
    const env = cleanEnv()
    const home = await lcm(['prompts', '--list'], { env })
    expect(home.stdout.split('\n')[0]).toBe(`Override directory: ${join(env.HOME, '.config', 'lcm-tui', 'prompts')} (does not exist: every template is embedded)`)
  })

  it('--export / --dump write the defaults, skip existing files unless --force', async () => {
    const env = cleanEnv()
    const defaultDir = join(env.HOME, '.config', 'lcm-tui', 'prompts')
    let r = await lcm(['prompts', '--export'], { env })
    expect(r.code).toBe(0)
    for (const n of ['leaf', 'condensed-d1', 'condensed-d2', 'condensed-d3']) {
      expect(r.stdout).toContain(`wrote    ${join(defaultDir, `${n}.jinja`)}\n`)
      expect(readFileSync(join(defaultDir, `${n}.jinja`), 'utf8')).toBe(readFileSync(join(root, 'prompts', `${n}.jinja`), 'utf8'))
    }
    writeFileSync(join(defaultDir, 'leaf.jinja'), 'MY EDIT {{ source_text }}')
    r = await lcm(['prompts', '--export'], { env })
    expect(r.code).toBe(0)
    expect(r.stdout).toContain(`skipped  ${join(defaultDir, 'leaf.jinja')} (already exists; --force overwrites)`)
    expect(r.stdout).toContain('Exported 0 of 4 templates')
    expect(readFileSync(join(defaultDir, 'leaf.jinja'), 'utf8')).toBe('MY EDIT {{ source_text }}')
    const other = tempDir('lcm-cli-dump-')
    writeFileSync(join(other, 'condensed-d3.tmpl'), '{{.SourceText}}')
    r = await lcm(['prompts', '--dump', other])
    expect(r.stdout).toContain(`skipped  ${join(other, 'condensed-d3.jinja')} (${join(other, 'condensed-d3.tmpl')} is an override; a .jinja file beside it would take its place; --force overwrites)`)
    expect(r.stdout).toContain(`Exported 3 of 4 templates to ${other}; skipped 1`)
    r = await lcm(['prompts', '--export', '--force'], { env })
    expect(r.stdout).toContain('Exported 4 of 4 templates')
    expect(readFileSync(join(defaultDir, 'leaf.jinja'), 'utf8')).toBe(readFileSync(join(root, 'prompts', 'leaf.jinja'), 'utf8'))
    const asFile = join(other, 'leaf.jinja')
    r = await lcm(['prompts', '--export', asFile])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('LCM_IO')
  })

  it('--show and --diff name their source; --diff explains a missing override', async () => {
    const dir = tempDir('lcm-cli-show-')
    let r = await lcm(['prompts', '--show', 'LEAF.TMPL', '--prompt-dir', dir])
    expect(r.code).toBe(0)
    expect(r.stdout).toBe(`# Source: embedded (leaf.jinja)\n${readFileSync(join(root, 'prompts', 'leaf.jinja'), 'utf8')}`)
    r = await lcm(['prompts', '--diff', 'condensed-d1', '--prompt-dir', dir])
    expect(r.code).toBe(0)
    expect(r.stdout).toBe(`No override for condensed-d1 in ${dir}: the embedded template is in use (lcm-tui prompts --export writes editable copies).\n`)
    const original = readFileSync(join(root, 'prompts', 'condensed-d1.jinja'), 'utf8')
    writeFileSync(join(dir, 'condensed-d1.jinja'), original.replace(/\n/, '\nAN OPERATOR LINE\n'))
    r = await lcm(['prompts', '--show', 'condensed-d1', '--prompt-dir', dir])
    expect(r.stdout.split('\n')[0]).toBe(`# Source: ${join(dir, 'condensed-d1.jinja')} (override)`)
    expect(r.stdout).toContain('AN OPERATOR LINE')
    r = await lcm(['prompts', '--diff', 'Condensed-D1.jinja', '--prompt-dir', dir])
    expect(r.stdout).toContain(`--- embedded/condensed-d1.jinja\n+++ ${join(dir, 'condensed-d1.jinja')}\n@@ `)
    expect(r.stdout).toContain('\n+AN OPERATOR LINE\n')
    const colored = await lcm(['prompts', '--diff', 'd1', '--prompt-dir', dir, '--color', 'always'])
    expect(colored.stdout).toContain('\x1b[32m+AN OPERATOR LINE\x1b[0m')
    writeFileSync(join(dir, 'condensed-d2.jinja'), readFileSync(join(root, 'prompts', 'condensed-d2.jinja'), 'utf8'))
    r = await lcm(['prompts', '--diff', 'condensed-d2', '--prompt-dir', dir])
    expect(r.stdout).toBe(`${join(dir, 'condensed-d2.jinja')} is identical to the embedded condensed-d2 template.\n`)
  })

  it('--render uses sample values by default and the given ones otherwise', async () => {
    const dir = tempDir('lcm-cli-render-')
    let r = await lcm(['prompts', '--render', 'condensed-d1', '--prompt-dir', dir])
    expect(r.code).toBe(0)
    expect(r.stdout.split('\n').slice(0, 2)).toEqual(['# Template: condensed-d1 (depth 1) — Source: embedded', '# Target: 2000 tokens — sample source text'])
    expect(r.stdout).toContain('<conversation_to_condense>\n[2026-02-17 15:37–15:52 UTC]')
    expect(r.stdout).toContain('2026-02-17 15:37–21:14 UTC')
    r = await lcm(['prompts', '--render', 'condensed-d1', '--prompt-dir', dir, '--target-tokens', '1234', '--previous-context', 'Some prior summary...', '--child-count', '9', '--time-range', '2026-03-01 08:00–09:00 UTC', '--source-text', 'SRC TEXT BODY'])
    expect(r.stdout).toContain('# Target: 1234 tokens\n')
    expect(r.stdout).toContain('Target length: about 1234 tokens')
    expect(r.stdout).toContain('<previous_context>\nSome prior summary...\n</previous_context>')
    expect(r.stdout).toContain('2026-03-01 08:00–09:00 UTC')
    expect(r.stdout).toContain('SRC TEXT BODY')
    expect(r.stdout).not.toContain('Harper')
    r = await lcm(['prompts', '--render', 'd3', '--depth', '5', '--prompt-dir', dir, '--system', '--json'])
    const doc = JSON.parse(r.stdout)
    expect(doc).toMatchObject({ template: 'condensed-d3', depth: 5, source: 'embedded', sampleSource: true })
    expect(doc.systemPrompt).toMatch(/summar/i)
    writeFileSync(join(dir, 'leaf.jinja'), 'LEAF OVERRIDE {{ target_tokens }}: {{ source_text }}')
    r = await lcm(['prompts', '--render', 'leaf', '--prompt-dir', dir, '--source-text', 'hello there'])
    expect(r.stdout).toContain(`Source: ${join(dir, 'leaf.jinja')}`)
    expect(r.stdout).toContain('LEAF OVERRIDE 192: hello there')
    r = await lcm(['prompts', '--render', 'leaf', '--depth', '1'])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('--depth 1 uses the condensed-d1 template, not leaf')
    r = await lcm(['prompts', '--target-tokens', '5', '--list'])
    expect(r.code).toBe(2)
  })
})

describe('prompt catalog and runCli on the addon', () => {
  it('listPrompts / exportPrompts / showPrompt / diffPrompt', async () => {
    const { addon } = await import('./helpers.mjs')
    const dir = tempDir('lcm-addon-prompts-')
    const l = addon.listPrompts(dir)
    expect(l).toMatchObject({ dir, dirExists: true })
    expect(l.templates.map((t) => [t.name, t.source, t.file])).toEqual([
      ['leaf', 'embedded', 'leaf.jinja'],
      ['condensed-d1', 'embedded', 'condensed-d1.jinja'],
      ['condensed-d2', 'embedded', 'condensed-d2.jinja'],
      ['condensed-d3', 'embedded', 'condensed-d3.jinja'],
    ])
    const sub = join(dir, 'nested', 'prompts')
    const ex = addon.exportPrompts({ dir: sub })
    expect(ex.written).toHaveLength(4)
    expect(ex.skipped).toEqual([])
    expect(addon.exportPrompts({ dir: sub }).skipped.map((s) => s.reason)).toEqual(['already exists', 'already exists', 'already exists', 'already exists'])
    expect(addon.exportPrompts({ dir: sub, force: true }).written).toHaveLength(4)
    expect(addon.listPrompts(sub).templates.every((t) => t.source === 'override' && t.error === null)).toBe(true)
    writeFileSync(join(sub, 'leaf.jinja'), 'changed {{ source_text }}\n')
    expect(addon.showPrompt('Leaf', sub)).toEqual({ name: 'leaf', source: 'override', path: join(sub, 'leaf.jinja'), text: 'changed {{ source_text }}\n' })
    expect(addon.showPrompt('condensed-d2.tmpl', dir)).toMatchObject({ source: 'embedded', path: null })
    const d = addon.diffPrompt('leaf', sub)
    expect(d).toMatchObject({ name: 'leaf', identical: false, path: join(sub, 'leaf.jinja') })
    expect(d.diff).toContain('+changed {{ source_text }}')
    expect(addon.diffPrompt('condensed-d3', sub)).toMatchObject({ identical: true, diff: '' })
    expect(addon.diffPrompt('condensed-d3', dir)).toMatchObject({ path: null, diff: null, identical: false })
    let err
    try {
      addon.showPrompt('bogus', dir)
    } catch (e) {
      err = e
    }
    expect(err.code).toBe('LCM_INVALID_INPUT')
    expect(err.message).toContain('leaf, condensed-d1, condensed-d2, condensed-d3')
    expect(() => addon.exportPrompts({ folder: dir })).toThrow(/unknown field `folder`/)
  })

  it('runCli resolves with the exit code without blocking the event loop', async () => {
    const { addon } = await import('./helpers.mjs')
    let ticks = 0
    const timer = setInterval(() => ticks++, 1)
    const code = await addon.runCli(['rewrite', String(fx.conversationId), '--depth', '2', '--provider', 'offline', '--db', fx.dbPath, '--prompt-dir', prompts, '--json', '--concurrency', '1'])
    clearInterval(timer)
    expect(code).toBe(0)
    expect(ticks).toBeGreaterThan(0)
    expect(await addon.runCli(['rewrite', '--bogus'])).toBe(2)
  })
})
