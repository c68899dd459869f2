// A randomized end-to-end run with a fixed seed: a few thousand hostile messages
// (odd block shapes, lone surrogates, NUL, every Unicode whitespace, CJK, emoji,
// combining marks, RTL, FTS / regex / template syntax, path-like file names)
// through ingest → grep (both modes) → compaction → assembly → rewrite dry run →
// doctor. Nothing may crash; every accepted message rebuilds exactly; every
// rejection carries an `LCM_` code; the database stays intact.
import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { LcmEngine, tempDir } from './helpers.mjs'

const SEED = 0x15c0ffee
const MESSAGES = 2000
const SESSIONS = 4

function rng(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WHITESPACE = ['\u0085', '\u00a0', '\u1680', ...Array.from({ length: 11 }, (_, i) => String.fromCharCode(0x2000 + i)), '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\t', '\n', '\r\n', ' ']
const PIECES = [
  'hello', 'needle', 'Fix the build', 'ok.', 'Done!', 'why?', '\0', '\ud800', '\udfff', '\ud83d', 'e\u0301', 'a\u0308\u0308',
  '漢字', '数据库迁移', '한국어 텍스트', 'ひらがなカタカナ', '😀', '👩\u200d👩\u200d👧', '🏳️\u200d🌈', '\u202eevil\u202c', 'שלום עולם', 'مرحبا بالعالم',
  'NEAR(a b)', 'a OR b', '"quoted phrase"', 'content:*', '"', '*', '^start', 'end$', '(a|b)+', '[x-z]', '.*', '\\d+\\b', '(?i)', '{2,}',
  '{{ .SourceText }}', '{% if x %}', '{# c #}', '${HOME}', '<summary id="x">', '</summary>', '&amp;', '<file name="a">', '</file>',
  '[LCM File: file_0123456789abcdef', '[Summary:', '../../etc/passwd', 'C:\\Windows\\system32', '/tmp/x y/z.txt', '\\\\server\\share',
  'lcm_describe(id="sum_0000000000000000")', '```js\nconst x = 1\n```', '\u{10ffff}', '\ufeff', '\u200b', 'İstanbul', 'ß',
]
const FILE_NAMES = ['../../etc/passwd', 'C:\\temp\\a b.txt', 'notes.md', 'data.json', 'x'.repeat(300), '漢字.csv', 'a"b.txt', '', '.hidden', 'no_ext', 'weird.<>|', '/abs/path/file.sql']

function hostileText(r, max) {
  const n = Math.floor(r() * max)
  let s = ''
  for (let i = 0; i < n; i++) {
    const k = r()
    if (k < 0.45) s += PIECES[Math.floor(r() * PIECES.length)]
    else if (k < 0.75) s += WHITESPACE[Math.floor(r() * WHITESPACE.length)]
    else s += String.fromCodePoint(Math.floor(r() * 0x2ffff))
  }
  return s
}

/** One message; `tag` is a unique searchable token kept outside any file block. */
function hostileMessage(r, i) {
  const tag = `hx${i}q`
  const text = () => `${hostileText(r, 12)} ${tag} ${hostileText(r, 12)}`
  const k = r()
  if (k < 0.3) return { role: 'user', content: text() }
  if (k < 0.45) {
    const body = hostileText(r, 40).repeat(20) + '\n'.repeat(3) + 'row,漢字,😀\n'.repeat(80)
    const name = FILE_NAMES[Math.floor(r() * FILE_NAMES.length)]
    return { role: 'user', content: `${text()}\n<file name=${JSON.stringify(name)}>${body}</file>\n${hostileText(r, 5)}` }
  }
  if (k < 0.6) {
    return {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: hostileText(r, 10) },
        { type: 'text', text: text() },
        { type: 'toolCall', id: `call_${i}`, name: 'exec', arguments: { command: hostileText(r, 6), path: FILE_NAMES[i % FILE_NAMES.length] } },
      ],
      timestamp: 1_700_000_000_000 + i * 1000,
    }
  }
  if (k < 0.72) {
    return { role: 'toolResult', toolCallId: `call_${i - 1}`, toolName: 'exec', content: [{ type: 'text', text: text() }], isError: r() < 0.2 }
  }
  if (k < 0.8) return { role: 'user', content: [{ type: 'text', text: text() }, { type: 'image', data: 'aGk=', mimeType: 'image/png' }, { type: 'weird', nested: { deep: [hostileText(r, 3), null, 1.5] } }] }
  if (k < 0.85) return { role: 'assistant', content: [], extra: { [hostileText(r, 3)]: hostileText(r, 3) } }
  if (k < 0.9) return { role: 'user', content: text(), details: { unicode: hostileText(r, 6) }, 'odd key \u0000': true }
  // Shapes that may be rejected: an unknown role, a missing role, content of the wrong type.
  const odd = [
    { role: 'wizard', content: text() },
    { content: text() },
    { role: 'user', content: 42 },
    { role: 'user', content: [{ type: 'text' }] },
    { role: 'user', content: [null, 'x', { text: text() }] },
    { role: 'user', content: { text: text() } },
    { role: hostileText(r, 2), content: text() },
  ]
  return odd[Math.floor(r() * odd.length)]
}

/** What a message looks like once stored: lone surrogates become U+FFFD. */
function wellFormed(v) {
  if (typeof v === 'string') return v.toWellFormed()
  if (Array.isArray(v)) return v.map(wellFormed)
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.toWellFormed(), wellFormed(x)]))
  return v
}

async function expectCoded(promise, seen) {
  try {
    return { ok: true, value: await promise }
  } catch (e) {
    expect(e.code, `${e.message}`).toMatch(/^LCM_[A-Z_]+$/)
    seen[e.code] = (seen[e.code] ?? 0) + 1
    return { ok: false, error: e }
  }
}

describe('hostile text end to end (fixed seed)', () => {
  it('ingest → grep → compaction → assembly → rewrite dry run → doctor never crash and rebuild exactly', async () => {
    const r = rng(SEED)
    const dir = tempDir()
    const e = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), largeFileTokenThreshold: 300 })
    const rejected = {}
    const accepted = new Map() // conversationId → [{ message, tag }]
    const tags = []
    for (let i = 0; i < MESSAGES; i++) {
      const message = hostileMessage(r, i)
      const sessionId = `s${i % SESSIONS}\u00a0${'漢'.repeat(i % SESSIONS)}`
      const res = await expectCoded(e.ingest({ sessionId, message }), rejected)
      if (!res.ok || !res.value.ingested) continue
      const list = accepted.get(res.value.conversationId) ?? []
      list.push(message)
      accepted.set(res.value.conversationId, list)
      const tag = `hx${i}q`
      const blocks = Array.isArray(message.content) ? message.content : [{ type: 'text', text: message.content }]
      if (blocks.some((b) => b?.type === 'text' && typeof b.text === 'string' && b.text.includes(tag))) tags.push({ tag, conv: res.value.conversationId })
    }
    expect(Object.keys(rejected).every((c) => c.startsWith('LCM_'))).toBe(true)
    const total = [...accepted.values()].reduce((n, l) => n + l.length, 0)
    expect(total).toBeGreaterThan(MESSAGES * 0.7)

    // Every accepted message rebuilds exactly, in order.
    for (const [conv, list] of accepted) {
      const back = await e.getMessages(conv)
      expect(back.length).toBe(list.length)
      for (let j = 0; j < list.length; j++) expect(JSON.stringify(back[j])).toBe(JSON.stringify(wellFormed(list[j])))
    }

    // grep: hostile patterns in both modes never crash; unique tags are found in both.
    const convs = [...accepted.keys()]
    const greps = {}
    for (const pattern of [...PIECES, ...WHITESPACE, 'needle here', '漢', '😀', '\u00a0needle', '(', 'a{99999}', '']) {
      for (const mode of ['regex', 'full_text']) {
        const res = await expectCoded(e.grep({ pattern, mode, allConversations: true, limit: 20 }), greps)
        if (res.ok) expect(typeof res.value.text).toBe('string')
      }
    }
    for (let j = 0; j < 40; j++) {
      const { tag, conv } = tags[Math.floor(r() * tags.length)]
      for (const mode of ['regex', 'full_text']) {
        const res = await e.grep({ pattern: tag, mode, conversationId: conv, limit: 5 })
        expect(res.messages.length, `${mode} ${tag}`).toBeGreaterThanOrEqual(1)
        expect(res.messages.some((h) => JSON.stringify(h).includes(tag)), `${mode} ${tag}`).toBe(true)
      }
    }

    // Compaction, assembly, rewrite dry run and doctor on every conversation.
    for (let s = 0; s < SESSIONS; s++) {
      const sessionId = `s${s}\u00a0${'漢'.repeat(s)}`
      // One incremental pass each (a full sweep of every session takes minutes on a debug build).
      const c = await e.compact({ sessionId, tokenBudget: 6000, mode: 'incremental', force: true })
      expect(c.ok, c.reason).toBe(true)
      const a = await e.assemble({ sessionId, tokenBudget: 8000 })
      expect(Array.isArray(a.messages)).toBe(true)
    }
    for (const conv of convs) {
      const sums = await e.getSummaries(conv)
      expect(sums.length).toBeGreaterThan(0)
      const dry = await e.rewrite({ conversationId: conv, summaryId: sums[0].summaryId, subtree: false })
      expect(dry.dryRun).toBe(true)
      expect(dry.entries.length).toBe(1)
      const doc = await e.doctor({ conversationId: conv })
      expect(doc.violations, JSON.stringify(doc.violations.slice(0, 3))).toEqual([])
      // Still lossless after compaction.
      const back = await e.getMessages(conv)
      expect(back.map((m) => JSON.stringify(m))).toEqual(accepted.get(conv).map((m) => JSON.stringify(wellFormed(m))))
    }
    expect(await e.integrityCheck()).toEqual(['ok'])
    await e.close()
  }, 120_000)
})
