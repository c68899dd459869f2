import { describe, it, expect } from 'vitest'
import { join, dirname, resolve } from 'node:path'
import { readFileSync, readdirSync, existsSync, unlinkSync, statSync } from 'node:fs'
import { LcmEngine, tempDir, workload, turns, rejectsWithCode } from './helpers.mjs'

const THRESHOLD = 2000

function bigJson(n) {
  const rows = Array.from({ length: n }, (_, i) => ({ id: i, name: `item-${i}`, tags: ['a', 'β', '漢'], ok: i % 2 === 0 }))
  return JSON.stringify({ kind: 'inventory', rows, meta: { count: n } }, null, 2)
}

async function open(extra = {}) {
  const dir = tempDir()
  const filesDir = join(dir, 'files')
  const e = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), largeFilesDir: filesDir, largeFileTokenThreshold: THRESHOLD, ...extra })
  return { e, dir, filesDir }
}

function listFiles(root) {
  if (!existsSync(root)) return []
  const out = []
  for (const d of readdirSync(root, { withFileTypes: true })) {
    const p = join(root, d.name)
    if (d.isDirectory()) out.push(...listFiles(p))
    else out.push(p)
  }
  return out
}

describe('large files', () => {
  it('externalizes a large <file> block, describes it, and round-trips byte-exact', async () => {
    const { e, filesDir } = await open()
    const content = bigJson(400)
    const text = `Here is the export:\n<file name="exports/inventory.json" mime="application/json">${content}</file>\nPlease check it.`
    const original = { role: 'user', content: text, timestamp: Date.UTC(2026, 2, 1) }
    const r = await e.ingest({ sessionId: 'lf', message: original })
    const conv = r.conversationId

    const [stored] = await e.getMessages(conv, { expandFiles: false })
    const m = stored.content.match(/^Here is the export:\n\[LCM File: (file_[0-9a-f]{16}) \| exports\/inventory\.json \| application\/json \| ([\d,]+) bytes\]\n\nExploration Summary:\n/)
    expect(m, stored.content.slice(0, 200)).not.toBe(null)
    const fileId = m[1]
    const bytes = Buffer.byteLength(content, 'utf8')
    expect(m[2]).toBe(bytes.toLocaleString('en-US'))
    expect(stored.content).toContain('Top-level type: object.')
    expect(stored.content.endsWith('\nPlease check it.')).toBe(true)
    expect(stored.content.length).toBeLessThan(2000)

    const [back] = await e.getMessages(conv)
    expect(JSON.stringify(back)).toBe(JSON.stringify(original))

    const onDisk = join(filesDir, String(conv), `${fileId}.json`)
    expect(readFileSync(onDisk, 'utf8')).toBe(content)
    expect(listFiles(filesDir)).toEqual([onDisk])

    const d = await e.describe(fileId, { conversationId: conv })
    expect(d.type).toBe('file')
    expect(d.file).toMatchObject({ fileId, conversationId: conv, fileName: 'exports/inventory.json', mimeType: 'application/json', byteSize: bytes })
    expect(d.file.lineCount).toBe(content.split('\n').length)
    expect(d.file.explorationSummary).toContain('object(keys=3: kind, rows, meta)')
    expect(d.file.content).toBeUndefined()
    expect(d.text.split('\n')[0]).toBe(`## LCM File: ${fileId}`)
    expect(d.text).toContain(`**Size:** ${bytes.toLocaleString('en-US')} bytes`)
    expect(d.text).toContain('## Exploration Summary')

    const whole = await e.describe(fileId, { includeContent: true })
    expect(whole.file.content).toBe(content)
    expect(whole.file.contentTruncated).toBe(false)
    const head = await e.describe(fileId, { expandFile: true, expandFileMaxBytes: 1024 })
    expect(head.file.contentTruncated).toBe(true)
    expect(content.startsWith(head.file.content)).toBe(true)
    expect(head.text).toContain('## Content')
    const lines = content.split('\n')
    const range = await e.describe(fileId, { expandFile: true, startLine: 5, endLine: 9 })
    expect(range.file.content).toBe(lines.slice(4, 9).join('\n'))
    expect([range.file.startLine, range.file.endLine, range.file.contentTruncated]).toEqual([5, 9, false])
    // A pasted reference works as an id.
    expect((await e.describe(`[LCM File: ${fileId} | exports/inventory.json | …]`)).id).toBe(fileId)
    await rejectsWithCode(e.describe(fileId, { expandFile: true, startLine: 9, endLine: 5 }), 'LCM_INVALID_INPUT')

    // The reference (not the payload) is what grep sees.
    const g = await e.grep({ pattern: fileId, conversationId: conv })
    expect(g.messages.length).toBe(1)
    expect((await e.grep({ pattern: 'item-399', conversationId: conv })).totalMatches).toBe(0)
    await e.close()
  })

  it('never lets a file name choose the path', async () => {
    const { e, dir, filesDir } = await open()
    const body = 'echo pwned\n'.repeat(1000)
    const names = ['../../../../evil.sh', '..\\..\\..\\evil.bat', '/etc/passwd', 'x/../../y.tar/../../../z', '../../.ssh/authorized_keys']
    const text = names.map((n) => `<file name="${n}">${body}${n}</file>`).join('\n')
    const r = await e.ingest({ sessionId: 'trav', message: { role: 'user', content: text } })
    const files = listFiles(filesDir)
    expect(files.length).toBe(names.length)
    const convDir = resolve(filesDir, String(r.conversationId))
    for (const f of files) {
      expect(dirname(resolve(f))).toBe(convDir)
      expect(f).toMatch(/\/file_[0-9a-f]{16}\.[a-z0-9]{1,10}$/)
    }
    expect(files.map((f) => f.split('.').pop()).sort()).toEqual(['bat', 'sh', 'txt', 'txt', 'txt'])
    expect(readdirSync(dir).sort()).toEqual(['files', 'lcm.db', 'lcm.db-shm', 'lcm.db-wal'].filter((n) => existsSync(join(dir, n))))
    expect(existsSync(join(dir, '..', 'evil.sh'))).toBe(false)
    const [back] = await e.getMessages(r.conversationId)
    expect(back.content).toBe(text)
    await e.close()
  })

  it('a batch rejected for a bad message writes no file', async () => {
    const { e, filesDir } = await open()
    const big = `<file name="a.txt">${'x'.repeat(THRESHOLD * 5)}</file>`
    const err = await rejectsWithCode(e.ingestBatch({ sessionId: 'bad', messages: [{ role: 'user', content: big }, { content: 'no role' }] }), 'LCM_INVALID_INPUT')
    expect(err.message).toContain('messages[1]')
    expect(listFiles(filesDir)).toEqual([])
    expect(await e.listConversations()).toEqual([])
    await e.close()
  })

  it('externalizes oversized tool results and keeps small payloads inline', async () => {
    const { e, filesDir } = await open()
    const output = Array.from({ length: 900 }, (_, i) => `line ${i}: status ok`).join('\n')
    const msgs = [
      { role: 'assistant', content: [{ type: 'toolCall', id: 'c1', name: 'exec', arguments: { command: 'ls' } }] },
      { role: 'toolResult', toolCallId: 'c1', toolName: 'exec', content: [{ type: 'text', text: output }], isError: false },
      { role: 'user', content: '<file name="small.txt">tiny</file>' },
    ]
    const r = await e.ingestBatch({ sessionId: 'tool', messages: msgs })
    const stored = await e.getMessages(r.conversationId, { expandFiles: false })
    const ref = stored[1].content[0].text
    expect(ref).toMatch(/^\[LCM Tool Output: file_[0-9a-f]{16} \| tool=exec \| [\d,]+ bytes\]\n\nExploration Summary:\n/)
    expect(ref).toContain('lcm_describe(id="file_')
    expect(stored[2]).toEqual(msgs[2])
    expect(listFiles(filesDir).length).toBe(1)
    const back = await e.getMessages(r.conversationId)
    expect(back.map((m) => JSON.stringify(m))).toEqual(msgs.map((m) => JSON.stringify(m)))
    const fileId = ref.match(/file_[0-9a-f]{16}/)[0]
    expect((await e.describe(fileId, { includeContent: true })).file.content).toBe(output)
    await e.close()
  })

  it('replays reuse the stored file; a missing file is reported, not papered over', async () => {
    const { e, filesDir } = await open()
    const text = `<file name="notes.md"># Notes\n${'A long line of notes about the plan.\n'.repeat(400)}</file>`
    const first = await e.ingest({ sessionId: 'rp', entryId: 'e1', message: { role: 'user', content: text } })
    const again = await e.ingest({ sessionId: 'rp', entryId: 'e1', message: { role: 'user', content: text } })
    expect(again.ingested).toBe(false)
    const twin = await e.ingest({ sessionId: 'rp', message: { role: 'user', content: text, timestamp: 5 } })
    expect(twin.ingested).toBe(true)
    const files = listFiles(filesDir)
    expect(files.length).toBe(1)
    const all = await e.getMessages(first.conversationId)
    expect(all.map((m) => m.content)).toEqual([text, text])

    unlinkSync(files[0])
    await rejectsWithCode(e.getMessages(first.conversationId), 'LCM_IO')
    const stored = await e.getMessages(first.conversationId, { expandFiles: false })
    expect(stored[0].content).toMatch(/^\[LCM File: file_/)
    const fileId = stored[0].content.match(/file_[0-9a-f]{16}/)[0]
    const d = await e.describe(fileId, { expandFile: true })
    expect(d.file.content).toBeUndefined()
    expect(d.file.contentError).toMatch(/cannot open large file/)
    expect(d.text).toContain('*Content unavailable:')
    // Ingesting the same payload again rewrites the missing file.
    await e.ingest({ sessionId: 'rp', message: { role: 'user', content: text, timestamp: 6 } })
    expect(statSync(files[0]).size).toBeGreaterThan(0)
    expect((await e.getMessages(first.conversationId)).length).toBe(3)
    await e.close()
  })

  it('a workload with big tool dumps round-trips exactly at the default threshold', async () => {
    const { messages } = workload(1200, 11, ['--big-every', '60'])
    const dir = tempDir()
    const filesDir = join(dir, 'files')
    const e = await LcmEngine.open({ dbPath: join(dir, 'lcm.db'), largeFilesDir: filesDir })
    let conv
    for (const t of turns(messages)) conv = (await e.ingestBatch({ sessionId: 'wl', messages: t })).conversationId
    const files = listFiles(filesDir)
    expect(files.length).toBeGreaterThan(0)
    const stored = await e.getMessages(conv, { expandFiles: false })
    expect(stored.filter((m) => JSON.stringify(m).includes('[LCM ')).length).toBe(files.length)
    const back = await e.getMessages(conv)
    expect(back.length).toBe(messages.length)
    for (let i = 0; i < messages.length; i++) expect(JSON.stringify(back[i])).toBe(JSON.stringify(messages[i]))
    await e.close()
  })
})
