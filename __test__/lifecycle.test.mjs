// Session lifecycle through the addon, without OpenClaw: `endSession` (`/new`
// pruning by retain depth, `/reset` and the host's rotations archiving with a
// successor, `deleted`, restart / shutdown), operator archive / unarchive,
// session families, recall across a family, and a SIGKILL in the middle of
// archiving leaving the old state or the new one.
import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { LcmEngine, root, tempDir, rejectsWithCode } from './helpers.mjs'
import { captureBaseline, checkInvariants } from './invariants.mjs'

const KEY = 'agent:main:main'

async function open() {
  return LcmEngine.open({ dbPath: join(tempDir(), 'lcm.db') })
}

function turn(tag, n) {
  const out = []
  for (let i = 0; i < n; i++) {
    out.push({ role: 'user', content: `${tag} question ${i}` })
    out.push({ role: 'assistant', content: [{ type: 'text', text: `${tag} answer ${i}` }] })
  }
  return out
}

const texts = (messages) => messages.map((m) => (typeof m.content === 'string' ? m.content : m.content.map((b) => b.text ?? '').join(''))).join('\n')

/** A conversation whose context is [depth 2, depth 1, leaf, message, message]. */
async function layered(e, sessionId = 's1') {
  const r = await e.ingestBatch({ sessionId, sessionKey: KEY, messages: turn('old', 6) })
  const c = r.conversationId
  const ids = r.results.map((m) => m.messageId)
  const leaf = (from) => e.insertSummary({ conversationId: c, content: `leaf ${from}: old facts ${from}`, messageIds: ids.slice(from, from + 2) })
  const l = []
  for (const from of [0, 2, 4, 6, 8]) l.push(await leaf(from))
  const c1 = await e.insertSummary({ conversationId: c, content: 'condensed one: deep memory', summaryIds: [l[0], l[1]] })
  await e.insertSummary({ conversationId: c, content: 'condensed two', summaryIds: [l[2], l[3]] })
  await e.insertSummary({ conversationId: c, content: 'depth two: the oldest memory', summaryIds: [c1] })
  return c
}

async function depths(e, c) {
  return (await e.getContextItems(c)).map((i) => (i.itemType === 'summary' ? i.depth : 'm'))
}

describe('endSession', () => {
  it('/reset archives the conversation and the next assemble shows nothing of it', async () => {
    const e = await open()
    await e.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: turn('before reset', 3) })
    const r = await e.endSession({ sessionId: 's1', sessionKey: KEY, reason: 'reset' })
    expect(r).toMatchObject({ action: 'archived', cause: 'manual-reset' })
    const next = await e.assemble({ sessionId: 's2', sessionKey: KEY, tokenBudget: 100_000, messages: [] })
    expect(texts(next.messages)).not.toMatch(/before reset/)
    const family = await e.sessionFamily(KEY)
    expect(family.map((c) => [c.active, c.archiveCause])).toEqual([
      [true, null],
      [false, 'manual-reset'],
    ])
    expect(family[1].archivedAt).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    // The other hook of the same reset (session_end after before_reset) does nothing more.
    expect((await e.endSession({ sessionId: 's1', sessionKey: KEY, reason: 'reset', nextSessionId: 's2' })).action).toBe('alreadyHandled')
    expect((await e.sessionFamily(KEY)).length).toBe(2)
    await e.close()
  })

  it('idle, daily and compaction archive with a successor; deleted without; restart and shutdown keep', async () => {
    for (const [reason, cause, successor] of [
      ['idle', 'idle-reset', true],
      ['daily', 'daily-reset', true],
      ['compaction', 'compaction-rollover', true],
      ['deleted', 'session-deleted', false],
    ]) {
      const e = await open()
      await e.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: turn(reason, 1) })
      const r = await e.endSession({ sessionId: 's1', sessionKey: KEY, reason, nextSessionId: 's2' })
      expect(r).toMatchObject({ action: 'archived', cause })
      expect(r.successorId !== null).toBe(successor)
      const active = await e.getConversation({ sessionId: 's2', sessionKey: KEY })
      expect(active === null).toBe(!successor)
      if (active) expect(await e.getContextItems(active.conversationId)).toEqual([])
      await e.close()
    }
    const e = await open()
    const { conversationId } = await e.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: turn('kept', 2) })
    for (const reason of ['restart', 'shutdown', 'unknown']) {
      expect((await e.endSession({ sessionId: 's1', sessionKey: KEY, reason })).action).toBe('kept')
    }
    expect((await e.getContextItems(conversationId)).length).toBe(4)
    await rejectsWithCode(e.endSession({ sessionId: 's1', sessionKey: KEY, reason: 'bogus' }), 'LCM_INVALID_INPUT')
    await e.close()
  })

  it('/new keeps only summaries of depth ≥ retainDepth in the context and deletes nothing', async () => {
    for (const [retainDepth, expected] of [
      [-1, [2, 1, 0, 'm', 'm']],
      [0, [2, 1, 0]],
      [2, [2]],
      [1000, []],
    ]) {
      const e = await open()
      const c = await layered(e)
      expect(await depths(e, c)).toEqual([2, 1, 0, 'm', 'm'])
      const r = await e.endSession({ sessionId: 's1', sessionKey: KEY, reason: 'new', retainDepth })
      expect(r.action).toBe('pruned')
      expect(await depths(e, c)).toEqual(expected)
      expect((await e.getMessages(c)).length).toBe(12)
      expect((await e.getSummaries(c)).length).toBe(8)
      const doctor = await e.doctor({ conversationId: c })
      expect(doctor.violations).toEqual([])
      expect(doctor.ok).toBe(true)
      // Pruned items stay reachable by recall.
      const hit = await e.grep({ pattern: 'old question 1', conversationId: c, mode: 'full_text' })
      expect(hit.messages.length).toBeGreaterThan(0)
      // The next session continues the conversation; what it sees is what was kept.
      const next = await e.assemble({ sessionId: 's2', sessionKey: KEY, tokenBudget: 100_000, messages: [] })
      const seen = texts(next.messages)
      expect(seen.includes('the oldest memory')).toBe(retainDepth <= 2)
      expect(seen.includes('old question 11') || seen.includes('old answer 5')).toBe(retainDepth < 0)
      await e.close()
    }
  })

  it('is one step per ending session, and a session id the host keeps can end again after new turns', async () => {
    const e = await open()
    const c = await layered(e)
    await e.endSession({ sessionId: 's1', sessionKey: KEY, reason: 'new' })
    expect((await e.endSession({ sessionId: 's1', sessionKey: KEY, reason: 'new' })).action).toBe('alreadyHandled')
    await e.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: turn('fresh', 1) })
    expect(await depths(e, c)).toEqual([2, 'm', 'm'])
    // The host kept the session id: a later /reset of it archives.
    const r = await e.endSession({ sessionId: 's1', sessionKey: KEY, reason: 'reset' })
    expect(r.action).toBe('archived')
    expect((await e.endSession({ sessionId: 's1', sessionKey: KEY, reason: 'reset' })).action).toBe('alreadyHandled')
    await e.close()
  })

  it('bootstrap after a reset that kept the session id imports nothing of the earlier transcript', async () => {
    const e = await open()
    const rows = turn('before', 3).map((message, i) => ({ type: 'message', id: `e${i}`, message }))
    await e.bootstrap({ sessionId: 's1', sessionKey: KEY, transcriptEntries: rows })
    await e.endSession({ sessionId: 's1', sessionKey: KEY, reason: 'reset' })
    const after = await e.bootstrap({ sessionId: 's1', sessionKey: KEY, transcriptEntries: rows })
    expect(after.importedMessages).toBe(0)
    expect(after.reason).toMatch(/reset/)
    const next = [...rows, ...turn('after', 1).map((message, i) => ({ type: 'message', id: `n${i}`, message }))]
    await e.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: turn('after', 1), entryIds: ['n0', 'n1'] })
    expect((await e.bootstrap({ sessionId: 's1', sessionKey: KEY, transcriptEntries: next })).importedMessages).toBe(0)
    const seen = await e.assemble({ sessionId: 's1', sessionKey: KEY, tokenBudget: 100_000, messages: [] })
    expect(texts(seen.messages)).not.toMatch(/before/)
    expect(texts(seen.messages)).toMatch(/after question 0/)
    await e.close()
  })
})

describe('operator archive / unarchive and recall across a family', () => {
  it('archives with a cause, unarchives by displacing the active one, and reports unknown ids', async () => {
    const e = await open()
    const { conversationId: c } = await e.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: turn('first', 1) })
    const a = await e.archiveConversation({ conversationId: c, successor: true })
    expect(a).toMatchObject({ conversationId: c, changed: true })
    expect((await e.listConversations()).find((x) => x.conversationId === c).archiveCause).toBe('operator')
    const u = await e.unarchiveConversation(c)
    expect(u).toMatchObject({ changed: true, displacedId: a.successorId })
    const family = await e.sessionFamily(KEY)
    expect(family.filter((x) => x.active).map((x) => x.conversationId)).toEqual([c])
    await rejectsWithCode(e.unarchiveConversation(4242), 'LCM_NOT_FOUND')
    await rejectsWithCode(e.archiveConversation({ conversationId: c, cause: 'nonsense' }), 'LCM_INVALID_INPUT')
    await e.close()
  })

  it('grep over conversationIds searches the family, never another key', async () => {
    const e = await open()
    await e.ingestBatch({ sessionId: 's1', sessionKey: KEY, messages: [{ role: 'user', content: 'the vault code is 4417' }] })
    await e.endSession({ sessionId: 's1', sessionKey: KEY, reason: 'reset', nextSessionId: 's2' })
    await e.ingestBatch({ sessionId: 's2', sessionKey: KEY, messages: [{ role: 'user', content: 'later turn' }] })
    await e.ingestBatch({ sessionId: 'o1', sessionKey: 'agent:other:main', messages: [{ role: 'user', content: 'other vault code 9999' }] })
    const family = await e.sessionFamily(KEY)
    const r = await e.grep({ pattern: 'vault code', conversationIds: family.map((c) => c.conversationId), mode: 'full_text' })
    expect(r.messages.map((m) => m.snippet).join(' ')).toMatch(/4417/)
    expect(r.messages.map((m) => m.snippet).join(' ')).not.toMatch(/9999/)
    await e.close()
  })
})

describe('a SIGKILL while archiving', () => {
  it('leaves the old state or the new one: one active conversation per key, every archive whole', async () => {
    const dbPath = join(tempDir(), 'lcm.db')
    const child = spawn(process.execPath, [join(root, '__test__', 'fixtures', 'lifecycle-child.mjs'), dbPath], { stdio: ['ignore', 'pipe', 'inherit'] })
    const acked = []
    await new Promise((resolve) => {
      child.stdout.on('data', (d) => {
        for (const line of String(d).split('\n')) {
          if (line.startsWith('reset ')) acked.push(Number(line.slice(6)))
          if (acked.length >= 15 && !child.killed) child.kill('SIGKILL')
        }
      })
      child.on('exit', resolve)
    })
    const e = await LcmEngine.open({ dbPath })
    expect(await e.integrityCheck()).toEqual(['ok'])
    const family = await e.sessionFamily(KEY)
    expect(family.filter((c) => c.active).length).toBe(1)
    const archived = family.filter((c) => !c.active)
    expect(archived.length).toBeGreaterThanOrEqual(acked.length)
    expect(archived.length).toBeLessThanOrEqual(acked.length + 1)
    for (const c of archived) {
      expect(['manual-reset', 'idle-reset']).toContain(c.archiveCause)
      expect(c.archivedAt).toBeTruthy()
    }
    for (const c of family) {
      const base = await captureBaseline(e, c.conversationId)
      await checkInvariants(e, c.conversationId, base)
    }
    await e.close()
  }, 60000)
})

describe('stripInjectedContextTags', () => {
  it('leaves memory-plugin blocks out of the summarizer input; the stored message stays exact', async () => {
    for (const [tags, leaked] of [
      [undefined, false],
      [[], true],
    ]) {
      const requests = []
      const summarizer = async (req) => {
        requests.push(req.sourceText)
        return `summary ${requests.length}`
      }
      const e = await LcmEngine.open({ dbPath: join(tempDir(), 'lcm.db'), summarizer, freshTailCount: 2, leafChunkTokens: 400, ...(tags ? { stripInjectedContextTags: tags } : {}) })
      const injected = '<relevant-memories>\nSECRET-MEMORY the user likes tea\n</relevant-memories>\n'
      const messages = []
      for (let i = 0; i < 8; i++) {
        messages.push({ role: 'user', content: `${injected}question ${i} ${'word '.repeat(60)}` })
        messages.push({ role: 'assistant', content: [{ type: 'text', text: `answer ${i} ${'word '.repeat(60)}` }] })
      }
      const { conversationId } = await e.ingestBatch({ sessionId: 's', messages })
      const r = await e.compact({ sessionId: 's', tokenBudget: 600, force: true })
      expect(r.compacted).toBe(true)
      const sent = requests.join('\n')
      expect(sent).toMatch(/question 0/)
      expect(sent.includes('SECRET-MEMORY')).toBe(leaked)
      const stored = await e.getMessages(conversationId)
      expect(stored[0].content).toBe(messages[0].content)
      await e.close()
    }
  })
})
