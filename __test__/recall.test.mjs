import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { join } from 'node:path'
import { LcmEngine, tempDir, workload, turns, rejectsWithCode } from './helpers.mjs'

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

async function ingestAll(e, sessionId, messages) {
  const ids = []
  let conversationId
  for (const t of turns(messages)) {
    const r = await e.ingestBatch({ sessionId, messages: t })
    conversationId = r.conversationId
    for (const x of r.results) ids.push(x.messageId)
  }
  return { conversationId, ids }
}

describe('grep', () => {
  let e, dir, conv, ids, needles, messages, other
  beforeAll(async () => {
    dir = tempDir()
    e = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), largeFilesDir: join(dir, 'files') })
    ;({ messages, needles } = workload(4000, 7))
    ;({ conversationId: conv, ids } = await ingestAll(e, 'grep-a', messages))
    const b = await e.ingestBatch({
      sessionId: 'grep-b',
      messages: [
        { role: 'user', content: 'the zebracorn token lives only in conversation b', timestamp: Date.UTC(2026, 0, 1) },
        { role: 'assistant', content: [{ type: 'text', text: '我们需要讨论数据库迁移的计划。明天开会。' }], timestamp: Date.UTC(2026, 0, 2) },
        { role: 'user', content: 'キャッシュの設定を確認してください', timestamp: Date.UTC(2026, 0, 3) },
      ],
    })
    other = b.conversationId
  })
  afterAll(async () => e?.close())

  it('warms the catalog on request and keeps it current', async () => {
    const w = await e.warmRecallIndex()
    expect(w.indexedMessages).toBe(messages.length + 3)
    expect(w.indexBytes).toBeGreaterThan(0)
    const r = await e.ingest({ sessionId: 'grep-a', message: { role: 'user', content: 'a freshly added zorblax line' } })
    const hit = await e.grep({ pattern: 'zorblax', conversationId: conv })
    expect(hit.messages.map((m) => m.messageId)).toEqual([r.messageId])
    expect(hit.messageStats.indexedMessages).toBe(messages.length + 4)
  })

  it('finds every planted needle in regex and full_text mode', async () => {
    expect(needles.length).toBeGreaterThan(10)
    for (const n of needles) {
      const id = n.text.match(/NEEDLE-\d+-\d+-\d+/)[0]
      for (const mode of ['regex', 'full_text']) {
        const pattern = mode === 'regex' ? escapeRe(id) : id
        const r = await e.grep({ pattern, mode, conversationId: conv })
        expect(r.messages.map((m) => m.messageId), `${mode} ${id}`).toContain(ids[n.index])
        const hit = r.messages.find((m) => m.messageId === ids[n.index])
        expect(hit.snippet).toContain(id)
        expect(hit.role).toBe('user')
        expect(r.text).toContain(`[conv=${conv} msg#${ids[n.index]}] (user, `)
      }
    }
    // One regex finds them all, newest first.
    const all = await e.grep({ pattern: 'NEEDLE-7-\\d+-\\d{4}', conversationId: conv, limit: 200, scope: 'messages' })
    expect(all.messages.length).toBe(needles.length)
    const times = all.messages.map((m) => Date.parse(m.createdAt))
    expect([...times].sort((a, b) => b - a)).toEqual(times)
    expect(all.messageStats.strategy).toBe('trigram-filter')
  })

  it('answers the same right after a restart as once warm', async () => {
    // A second engine on the same file: its first calls come before its catalog is
    // built (answered from SQLite alone); the first engine's catalog is warm.
    const queries = needles.slice(0, 6).flatMap((n) => {
      const id = n.text.match(/NEEDLE-\d+-\d+-\d+/)[0]
      return [
        { pattern: escapeRe(id), mode: 'regex' },
        { pattern: id, mode: 'full_text' },
      ]
    })
    queries.push({ pattern: 'zebracorn', mode: 'full_text' }, { pattern: 'NEEDLE-7-\\d+-1\\d{3}', mode: 'regex' })
    const fresh = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), largeFilesDir: join(dir, 'files') })
    try {
      for (const q of queries) {
        const p = { ...q, allConversations: true, scope: 'messages', limit: 20 }
        const cold = await fresh.grep(p)
        const warm = await e.grep(p)
        expect(cold.messages, `${q.mode} ${q.pattern}`).toEqual(warm.messages)
      }
    } finally {
      await fresh.close()
    }
  })

  it('stores trigram slices in the background and answers a restart\'s first regex through them', async () => {
    // The first engine's catalog stored the slices of ids 1..2048 after its build;
    // a fresh engine's first regex with a two-character last word reads them (and
    // the tail above them) instead of FTS5's prefix merge, with the same answer.
    const ids2 = needles.map((n) => n.text.match(/NEEDLE-\d+-\d+/)[0]).filter((id) => /-\d\d$/.test(id))
    expect(ids2.length).toBeGreaterThan(2)
    const p = { pattern: escapeRe(ids2[0]), mode: 'regex', allConversations: true, scope: 'messages', limit: 20 }
    const warm = await e.grep(p)
    expect(warm.messages.length).toBeGreaterThan(0)
    let cold
    for (let k = 0; k < 200; k++) {
      const fresh = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), largeFilesDir: join(dir, 'files') })
      try {
        cold = await fresh.grep(p)
      } finally {
        await fresh.close()
      }
      if (cold.messageStats.strategy === 'trigram-slices') break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(cold.messageStats.strategy).toBe('trigram-slices')
    expect(cold.messageStats.indexedMessages ?? null).toBeNull()
    expect(cold.messages).toEqual(warm.messages)
  })

  it('answers common words, regexes without whole words and CJK the same right after a restart', async () => {
    // Newest first with an order proof (or the catalog when the proof fails:
    // conversation b's history is older than a's but was ingested after it).
    const t = messages.map((m) => m.timestamp).filter(Boolean).sort((a, b) => a - b)
    const mid = new Date(t[Math.floor(t.length / 2)]).toISOString()
    const late = new Date(t[Math.floor(t.length * 0.9)]).toISOString()
    const scopes = [{ conversationId: conv }, { allConversations: true }, { conversationId: other }, { conversationId: conv, since: mid, before: late }]
    const queries = [
      { pattern: 'invoice', mode: 'full_text' },
      { pattern: 'flight hotel', mode: 'full_text' },
      { pattern: 'invoice (draft|report)', mode: 'regex' },
      { pattern: '(?i)flight', mode: 'regex' },
      { pattern: 'hotel[.!?]', mode: 'regex' },
      { pattern: '数据库', mode: 'full_text' },
    ]
    let fromSqlite = 0
    for (const where of scopes) {
      for (const q of queries) {
        const p = { ...q, ...where, scope: 'messages', limit: 20 }
        const fresh = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), largeFilesDir: join(dir, 'files') })
        try {
          const cold = await fresh.grep(p)
          const warm = await e.grep(p)
          expect(cold.messages, JSON.stringify(p)).toEqual(warm.messages)
          if (cold.messageStats.indexedMessages == null) fromSqlite++
        } finally {
          await fresh.close()
        }
      }
    }
    expect(fromSqlite).toBeGreaterThan(0)
  })

  it('renders the reference text layout', async () => {
    const r = await e.grep({ pattern: 'zebracorn', mode: 'full_text', conversationId: other })
    const lines = r.text.split('\n')
    expect(lines[0]).toBe('## LCM Grep Results')
    expect(lines[1]).toBe('**Pattern:** `zebracorn`')
    expect(lines[2]).toBe('**Mode:** full_text | **Scope:** both | **Sort:** recency')
    expect(lines[3]).toBe(`**Conversation scope:** ${other}`)
    expect(r.text).toContain('**Total matches:** 1')
    expect(r.text).toContain('### Messages')
    expect(r.text).toMatch(/- \[conv=\d+ msg#\d+\] \(user, 2026-01-01 00:00 UTC\): the zebracorn token/)
    const none = await e.grep({ pattern: 'qwertyuiopzxcv', conversationId: conv })
    expect(none.totalMatches).toBe(0)
    expect(none.text.endsWith('No matches found.')).toBe(true)
  })

  it('finds CJK text in messages and summaries', async () => {
    for (const mode of ['full_text', 'regex']) {
      const r = await e.grep({ pattern: '数据库迁移', mode, conversationId: other })
      expect(r.messages.length, mode).toBe(1)
      expect(r.messages[0].snippet).toContain('数据库迁移')
    }
    const two = await e.grep({ pattern: '設定', mode: 'full_text', conversationId: other })
    expect(two.messages.length).toBe(1)
    const sid = await e.insertSummary({ conversationId: other, content: '摘要：团队决定推迟数据库迁移到下周。', messageIds: [] .concat(await firstIds(e, other, 2)) })
    const s3 = await e.grep({ pattern: '数据库迁移', mode: 'full_text', scope: 'summaries', conversationId: other })
    expect(s3.summaries.map((s) => s.summaryId)).toEqual([sid])
    expect(s3.summaryStats.strategy).toBe('fts-trigram')
    const s2 = await e.grep({ pattern: '推迟', mode: 'full_text', scope: 'summaries', conversationId: other })
    expect(s2.summaries.map((s) => s.summaryId)).toEqual([sid])
    expect(s2.summaryStats.strategy).toBe('like')
  })

  it('applies since / before, scope, conversation scope and limit', async () => {
    const n = needles[Math.floor(needles.length / 2)]
    const id = n.text.match(/NEEDLE-\d+-\d+-\d+/)[0]
    const at = new Date(messages[n.index].timestamp)
    const since = await e.grep({ pattern: id, conversationId: conv, since: at.toISOString() })
    expect(since.messages.length).toBe(1)
    const before = await e.grep({ pattern: id, conversationId: conv, before: at.toISOString() })
    expect(before.messages.length).toBe(0)
    const window = await e.grep({ pattern: 'NEEDLE', mode: 'full_text', conversationId: conv, since: at.toISOString(), before: new Date(at.getTime() + 1000).toISOString(), limit: 200 })
    expect(window.messages.map((m) => m.messageId)).toEqual([ids[n.index]])
    expect(window.text).toContain('**Time filter:** since ')
    await rejectsWithCode(e.grep({ pattern: 'x', conversationId: conv, since: at.toISOString(), before: at.toISOString() }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(e.grep({ pattern: 'x', conversationId: conv, since: 'last tuesday' }), 'LCM_INVALID_INPUT')

    const onlySummaries = await e.grep({ pattern: id, conversationId: conv, scope: 'summaries' })
    expect(onlySummaries.messages).toEqual([])
    expect(onlySummaries.messageStats).toBe(null)

    expect((await e.grep({ pattern: 'zebracorn', conversationId: conv })).totalMatches).toBe(0)
    const everywhere = await e.grep({ pattern: 'zebracorn', allConversations: true })
    expect(everywhere.messages.map((m) => m.conversationId)).toEqual([other])
    expect(everywhere.text).toContain('**Conversation scope:** all conversations')
    await rejectsWithCode(e.grep({ pattern: 'zebracorn' }), 'LCM_INVALID_INPUT')

    const five = await e.grep({ pattern: 'deploy', mode: 'full_text', conversationId: conv, limit: 5, scope: 'messages' })
    expect(five.messages.length).toBe(5)
    const newest = await e.grep({ pattern: 'deploy', conversationId: conv, limit: 1, scope: 'messages' })
    expect(newest.messages[0].messageId).toBe(five.messages[0].messageId)
    const lastWithDeploy = [...messages.keys()].reverse().find((i) => JSON.stringify(messages[i].content).includes('deploy'))
    expect(newest.messages[0].messageId).toBe(ids[lastWithDeploy])
    await rejectsWithCode(e.grep({ pattern: 'x', conversationId: conv, limit: 0 }), 'LCM_INVALID_INPUT')
    await rejectsWithCode(e.grep({ pattern: 'x', conversationId: conv, limit: 201 }), 'LCM_INVALID_INPUT')
    for (const sort of ['relevance', 'hybrid']) {
      const r = await e.grep({ pattern: 'deploy', mode: 'full_text', sort, conversationId: conv, limit: 7, scope: 'messages' })
      expect(r.messages.length).toBe(7)
      expect(typeof r.messages[0].rank).toBe('number')
    }
  })

  it('hostile full-text input never reaches FTS5 as syntax', async () => {
    const hostile = ['"', '""""', 'NEAR(', 'NEAR(deploy config, 2)', '*', 'config*', 'content:config', 'config AND OR NOT deploy',
      '((deploy', 'deploy)', '-deploy', '+deploy', '{deploy config}', 'a:b:c', "'", '\\', 'NOT', 'deploy "unbalanced', ') OR 1=1 --', 'col:"x"']
    for (const pattern of hostile) {
      const t0 = performance.now()
      try {
        const r = await e.grep({ pattern, mode: 'full_text', conversationId: conv })
        expect(r.text.startsWith('## LCM Grep Results')).toBe(true)
      } catch (err) {
        expect(err.code, pattern).toBe('LCM_INVALID_INPUT')
      }
      expect(performance.now() - t0, pattern).toBeLessThan(2000)
    }
    // Operators and column filters are plain text: `content:config` is the phrase "content config",
    // `config*` the word config.
    const ids = async (pattern) => (await e.grep({ pattern, mode: 'full_text', conversationId: conv, scope: 'messages', limit: 20 })).messages.map((m) => m.messageId)
    expect(await ids('content:config')).toEqual(await ids('"content config"'))
    const star = await ids('config*')
    expect(star.length).toBe(20)
    expect(star).toEqual(await ids('config'))
    const ops = await e.grep({ pattern: 'NEAR(deploy', mode: 'full_text', conversationId: conv, limit: 1 })
    expect(ops.totalMatches).toBe(0)
    await rejectsWithCode(e.grep({ pattern: 'deploy|config', mode: 'full_text', conversationId: conv }), 'LCM_INVALID_INPUT')
  })

  it('regex bombs and oversized patterns return quickly or fail clearly', async () => {
    await e.ingest({ sessionId: 'grep-b', message: { role: 'user', content: 'a'.repeat(60000) + '!' } })
    const t0 = performance.now()
    const r = await e.grep({ pattern: '(a+)+$', conversationId: other, scope: 'messages' })
    const r2 = await e.grep({ pattern: '(x+x+)+y', conversationId: conv, scope: 'messages' })
    expect(performance.now() - t0).toBeLessThan(3000)
    expect(r.messages.length).toBe(0)
    expect(r2.totalMatches).toBe(0)
    const anchored = await e.grep({ pattern: '(a+)+!$', conversationId: other, scope: 'messages' })
    expect(anchored.messages.length).toBe(1)
    for (const p of ['a{1000000}', '((a{100}){100}){100}', '(unclosed', '[z-a]', 'x'.repeat(1001), '']) {
      const err = await rejectsWithCode(e.grep({ pattern: p, conversationId: conv }), 'LCM_INVALID_INPUT')
      expect(err.message.length).toBeGreaterThan(10)
    }
    const scan = await e.grep({ pattern: '\\(\\d{4}\\);', conversationId: conv, scope: 'messages', limit: 3 })
    expect(scan.messageStats.strategy).toBe('scan')
    expect(scan.messages.length).toBe(3)
  })

  it('full text sees every message the moment its ingest resolves, on a warm engine and right after a restart', async () => {
    const check = async (engine, k) => {
      const r = await engine.ingest({ sessionId: 'grep-a', message: { role: 'user', content: `a fresh quokkazap${k} entry` } })
      const hit = await engine.grep({ pattern: `quokkazap${k}`, mode: 'full_text', conversationId: conv, scope: 'messages' })
      expect(hit.messages.map((m) => m.messageId), `quokkazap${k}`).toEqual([r.messageId])
    }
    for (let k = 0; k < 3; k++) await check(e, k)
    const fresh = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), largeFilesDir: join(dir, 'files') })
    try {
      for (let k = 3; k < 6; k++) await check(fresh, k)
    } finally {
      await fresh.close()
    }
  })
})

async function firstIds(e, conversationId, n) {
  const items = await e.getContextItems(conversationId)
  return items.filter((i) => i.itemType === 'message').slice(0, n).map((i) => i.messageId)
}

describe('describe / expand / grants', () => {
  let e, conv, otherConv, msgIds, L, C, R, otherSummary
  beforeAll(async () => {
    e = await LcmEngine.open({ dbPath: ':memory:', maxExpandTokens: 5000 })
    const msgs = Array.from({ length: 20 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message number ${i} about topic-${i} ${'word '.repeat(20)}`, timestamp: Date.UTC(2026, 1, 1, 0, i) }))
    const r = await e.ingestBatch({ sessionId: 'dag', messages: msgs })
    conv = r.conversationId
    msgIds = r.results.map((x) => x.messageId)
    L = []
    for (let k = 0; k < 4; k++) L.push(await e.insertSummary({ conversationId: conv, content: `leaf ${k} covers topic-${k * 4}..${k * 4 + 3} ${'detail '.repeat(10)}`, messageIds: msgIds.slice(k * 4, k * 4 + 4) }))
    C = [await e.insertSummary({ conversationId: conv, content: 'condensed zero about the first half', summaryIds: [L[0], L[1]] }),
      await e.insertSummary({ conversationId: conv, content: 'condensed one about the second half', summaryIds: [L[2], L[3]] })]
    R = await e.insertSummary({ conversationId: conv, content: 'root summary of everything', summaryIds: C })
    const o = await e.ingestBatch({ sessionId: 'dag-other', messages: [{ role: 'user', content: 'other conversation text' }] })
    otherConv = o.conversationId
    otherSummary = await e.insertSummary({ conversationId: otherConv, content: 'other leaf', messageIds: [o.results[0].messageId] })
  })
  afterAll(async () => e?.close())

  it('describe reports sources as parents, derived summaries as children, and a source manifest', async () => {
    const d = await e.describe(R)
    expect(d.type).toBe('summary')
    expect(d.summary.parentIds).toEqual(C)
    expect(d.summary.childIds).toEqual([])
    expect(d.summary.depth).toBe(2)
    expect(d.summary.sourceMessageCount).toBe(16)
    expect(d.summary.manifest.map((n) => [n.depthFromRoot, n.summaryId])).toEqual([[0, R], [1, C[0]], [1, C[1]], [2, L[0]], [2, L[1]], [2, L[2]], [2, L[3]]])
    expect(d.summary.budgetCap).toBe(5000)
    expect(d.summary.budgetSource).toBe('config_default')
    const lines = d.text.split('\n')
    expect(lines[0]).toBe(`LCM_SUMMARY ${R}`)
    expect(lines[1]).toMatch(new RegExp(`^meta conv=${conv} kind=condensed depth=2 tok=\\d+ descTok=\\d+ srcTok=\\d+ desc=6 range=2026-02-01 00:00 UTC\\.\\.2026-02-01 00:15 UTC budgetCap=5000$`))
    expect(lines[2]).toBe(`parents ${C[0]} ${C[1]}`)
    expect(lines[3]).toBe('manifest')
    expect(lines[4]).toMatch(new RegExp(`^d0 ${R} k=condensed tok=\\d+ descTok=\\d+ srcTok=\\d+ desc=6 child=2 range=.* cost\\[s=\\d+,m=\\d+\\] budget\\[s=in,m=in\\]$`))
    expect(lines.at(-2)).toBe('content')
    expect(lines.at(-1)).toBe('root summary of everything')

    const c0 = await e.describe(C[0], { tokenCap: 10 })
    expect(c0.summary.parentIds).toEqual([L[0], L[1]])
    expect(c0.summary.childIds).toEqual([R])
    expect(c0.text).toContain(`children ${R}`)
    expect(c0.text).toContain('budget[s=over,m=over]')
    const leaf = await e.describe(L[0])
    expect(leaf.summary.messageIds).toEqual(msgIds.slice(0, 4))
    expect(leaf.summary.sourceMessageCount).toBe(4)

    expect(await e.describe('sum_0000000000000000')).toBe(null)
    expect(await e.describe('file_0000000000000000')).toBe(null)
    expect(await e.describe('not an id')).toBe(null)
    expect(await e.describe(R, { conversationId: otherConv })).toBe(null)
    expect((await e.describe(`see ${R} for details`, { conversationId: conv })).id).toBe(R)
  })

  it('expand walks sources (not derived nodes) in time order and honours the token cap', async () => {
    const one = await e.expand({ summaryId: R, depth: 1 })
    expect(one.children.map((c) => c.summaryId)).toEqual(C)
    expect(one.messages).toEqual([])
    const deep = await e.expand({ summaryId: R, depth: 3, includeMessages: true, tokenCap: 100000 })
    expect(deep.children.map((c) => c.summaryId)).toEqual([C[0], L[0], L[1], C[1], L[2], L[3]])
    expect(deep.messages.map((m) => m.messageId)).toEqual(msgIds.slice(0, 16))
    expect(deep.truncated).toBe(false)
    const sum = deep.children.reduce((a, c) => a + c.tokenCount, 0) + deep.messages.reduce((a, m) => a + m.tokenCount, 0)
    expect(deep.totalTokens).toBe(sum)
    expect(deep.text).toContain(`## Expansion Results (1 summaries, ${sum} total tokens)`)
    expect(deep.text).toContain('[Truncated: no]')
    expect(deep.citedIds[0]).toBe(R)

    const fromC = await e.expand({ summaryId: C[0], depth: 3 })
    expect(fromC.children.map((c) => c.summaryId)).toEqual([L[0], L[1]])
    expect(fromC.children.map((c) => c.summaryId)).not.toContain(R)
    const leafNoMsgs = await e.expand({ summaryId: L[0] })
    expect(leafNoMsgs.children).toEqual([])
    expect(leafNoMsgs.messages).toEqual([])

    const cap = Math.floor(sum / 3)
    const capped = await e.expand({ summaryId: R, depth: 3, includeMessages: true, tokenCap: cap })
    expect(capped.truncated).toBe(true)
    expect(capped.totalTokens).toBeLessThanOrEqual(cap)
    expect(capped.text).toContain('[Truncated: yes]')
    const multi = await e.expand({ summaryIds: [C[1], C[0]], depth: 1 })
    expect(multi.roots.map((r) => r.summaryId)).toEqual([C[1], C[0]])
    expect(multi.children.map((c) => c.summaryId)).toEqual([L[2], L[3], L[0], L[1]])
    const byQuery = await e.expand({ query: 'condensed', conversationId: conv, depth: 1 })
    expect(byQuery.roots.map((r) => r.summaryId).sort()).toEqual([...C].sort())

    await rejectsWithCode(e.expand({ summaryId: 'sum_0000000000000000' }), 'LCM_NOT_FOUND')
    await rejectsWithCode(e.expand({ summaryId: R, conversationId: otherConv }), 'LCM_NOT_FOUND')
    await rejectsWithCode(e.expand({}), 'LCM_INVALID_INPUT')
  })

  it('grants scope calls to their conversations and consume their budget', async () => {
    const g = await e.createGrant({ conversationIds: [conv], tokenCap: 120 })
    expect(g.grantId).toMatch(/^grant_.{12}$/)
    expect(Date.parse(g.expiresAt) - Date.now()).toBeGreaterThan(4 * 60 * 1000)
    expect(g.remainingTokens).toBe(120)

    const x = await e.expand({ summaryId: R, depth: 3, includeMessages: true, grantId: g.grantId, tokenCap: 100000 })
    expect(x.tokenCap).toBe(120)
    expect(x.truncated).toBe(true)
    expect(x.grant.consumedTokens).toBe(x.totalTokens)
    const grepped = await e.grep({ pattern: 'topic-3\\b', grantId: g.grantId })
    expect(grepped.conversationIds).toEqual([conv])
    expect(grepped.messages.length).toBe(1)
    expect(grepped.grant.remainingTokens).toBeLessThan(x.grant.remainingTokens)
    let last
    for (let i = 0; i < 20; i++) {
      try {
        last = await e.describe(R, { grantId: g.grantId })
      } catch (err) {
        expect(err.code).toBe('LCM_GRANT_EXHAUSTED')
        last = 'exhausted'
        break
      }
    }
    expect(last).toBe('exhausted')
    await rejectsWithCode(e.expand({ summaryId: L[0], grantId: g.grantId }), 'LCM_GRANT_EXHAUSTED')
    expect((await e.getGrant(g.grantId)).remainingTokens).toBe(0)
  })

  it('grant scope, expiry and revocation are typed errors checked in order', async () => {
    const g = await e.createGrant({ conversationIds: [conv], tokenCap: 100000 })
    await rejectsWithCode(e.grep({ pattern: 'x', conversationId: otherConv, grantId: g.grantId }), 'LCM_GRANT_SCOPE')
    await rejectsWithCode(e.grep({ pattern: 'x', allConversations: true, grantId: g.grantId }), 'LCM_GRANT_SCOPE')
    await rejectsWithCode(e.describe(otherSummary, { grantId: g.grantId }), 'LCM_GRANT_SCOPE')
    await rejectsWithCode(e.expand({ summaryId: otherSummary, grantId: g.grantId }), 'LCM_GRANT_SCOPE')
    const described = await e.describe(R, { grantId: g.grantId })
    expect(described.summary.budgetSource).toBe('delegated_grant_remaining')

    const limited = await e.createGrant({ conversationIds: [conv], summaryIds: [C[0]], tokenCap: 100000, maxDepth: 1 })
    const ok = await e.expand({ summaryId: C[0], depth: 5, grantId: limited.grantId })
    expect(ok.depth).toBe(1)
    expect((await e.describe(L[1], { grantId: limited.grantId })).id).toBe(L[1])
    await rejectsWithCode(e.expand({ summaryId: C[1], grantId: limited.grantId }), 'LCM_GRANT_SCOPE')
    await rejectsWithCode(e.describe(R, { grantId: limited.grantId }), 'LCM_GRANT_SCOPE')

    const short = await e.createGrant({ conversationIds: [conv], ttlMs: 40 })
    await e.expand({ summaryId: C[0], depth: 1, grantId: short.grantId })
    await new Promise((r) => setTimeout(r, 80))
    await rejectsWithCode(e.expand({ summaryId: C[0], grantId: short.grantId }), 'LCM_GRANT_EXPIRED')
    await rejectsWithCode(e.grep({ pattern: 'x', conversationId: otherConv, grantId: short.grantId }), 'LCM_GRANT_EXPIRED')
    const dead = await e.createGrant({ conversationIds: [conv], ttlMs: -1 })
    await rejectsWithCode(e.describe(R, { grantId: dead.grantId }), 'LCM_GRANT_EXPIRED')

    expect(await e.revokeGrant(g.grantId)).toBe(true)
    await rejectsWithCode(e.expand({ summaryId: C[0], grantId: g.grantId }), 'LCM_GRANT_REVOKED')
    expect(await e.revokeGrant(short.grantId)).toBe(true)
    await rejectsWithCode(e.grep({ pattern: 'x', conversationId: otherConv, grantId: short.grantId }), 'LCM_GRANT_REVOKED')
    expect(await e.revokeGrant('grant_doesnotexist')).toBe(false)
    await rejectsWithCode(e.describe(R, { grantId: 'grant_doesnotexist' }), 'LCM_NOT_FOUND')
    await rejectsWithCode(e.createGrant({ conversationIds: [999999] }), 'LCM_NOT_FOUND')
    await rejectsWithCode(e.createGrant({ conversationIds: [] }), 'LCM_INVALID_INPUT')
  })

  it('regex over summaries is narrowed by the trigram index and stays exact', async () => {
    const r = await e.grep({ pattern: 'condensed (zero|one) about', conversationId: conv, scope: 'summaries' })
    expect(r.summaries.map((s) => s.summaryId).sort()).toEqual([...C].sort())
    expect(r.summaryStats.strategy).toBe('trigram-index')
    const noLit = await e.grep({ pattern: '\\d\\.\\.\\d', conversationId: conv, scope: 'summaries', limit: 2 })
    expect(noLit.summaryStats.strategy).toBe('scan')
    expect(noLit.summaries.length).toBe(2)
    const ci = await e.grep({ pattern: '(?i)ROOT SUMMARY', conversationId: conv, scope: 'summaries' })
    expect(ci.summaries.map((s) => s.summaryId)).toEqual([R])
    expect(ci.text).toContain(`- [conv=${conv} ${R}] (condensed, `)
  })

  it('publishes the four recall tool definitions', () => {
    const defs = e.getRecallToolDefinitions()
    expect(defs.map((d) => d.name)).toEqual(['lcm_grep', 'lcm_describe', 'lcm_expand', 'lcm_expand_query'])
    const grep = defs[0].parameters
    expect(grep.required).toEqual(['pattern'])
    expect(grep.properties.mode.enum).toEqual(['regex', 'full_text'])
    expect(grep.properties.scope.enum).toEqual(['messages', 'summaries', 'both'])
    expect(grep.properties.limit).toMatchObject({ minimum: 1, maximum: 200 })
    expect(Object.keys(grep.properties)).toEqual(expect.arrayContaining(['conversationId', 'allConversations', 'since', 'before', 'sort']))
    expect(defs[1].parameters.required).toEqual(['id'])
    expect(Object.keys(defs[1].parameters.properties)).toEqual(expect.arrayContaining(['tokenCap', 'expandFile', 'startLine', 'endLine']))
    expect(Object.keys(defs[2].parameters.properties)).toEqual(expect.arrayContaining(['summaryIds', 'query', 'maxDepth', 'tokenCap', 'includeMessages']))
    expect(defs[3].parameters.required).toEqual(['prompt'])
    for (const d of defs) expect(d.description.length).toBeGreaterThan(80)
  })
})
