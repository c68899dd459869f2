// A conversation with a three-level summary DAG, for the rewrite and CLI suites:
// 48 workload messages; 6 leaves over the first 36 (6 each), 3 d1 nodes over leaf
// pairs, one d2 over the d1 nodes. Summaries are written with insertSummary.
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import { readFileSync, existsSync } from 'node:fs'
import { LcmEngine, tempDir, workload } from './helpers.mjs'

/** An empty prompt override directory (a developer's ~/.config/lcm-tui/prompts never leaks in). */
export const emptyPromptDir = () => tempDir('lcm-prompts-')

/** sha256 of a file's bytes (and of its -wal when present). */
export function checksum(path) {
  const h = createHash('sha256').update(readFileSync(path))
  if (existsSync(`${path}-wal`)) h.update(readFileSync(`${path}-wal`))
  return h.digest('hex')
}

/** Builds the DAG in a new database file; the engine is closed. */
export async function buildDb(dir = tempDir('lcm-rw-')) {
  const dbPath = join(dir, 'lcm.db')
  const e = await LcmEngine.open({ dbPath, promptDir: emptyPromptDir() })
  const { messages } = workload(48, 11)
  const r = await e.ingestBatch({ sessionId: 'rewrite-fixture', messages })
  const conversationId = r.conversationId
  const ids = r.results.map((m) => m.messageId)
  const leaves = []
  for (let k = 0; k < 6; k++) {
    leaves.push(await e.insertSummary({ conversationId, content: `Old leaf ${k}: first line.\nSecond line of leaf ${k}.`, messageIds: ids.slice(k * 6, k * 6 + 6), model: 'old-model' }))
  }
  const d1 = []
  for (let k = 0; k < 3; k++) {
    d1.push(await e.insertSummary({ conversationId, content: `Old d1 node ${k}.`, summaryIds: leaves.slice(k * 2, k * 2 + 2), model: 'old-model' }))
  }
  const d2 = await e.insertSummary({ conversationId, content: 'Old d2 node.', summaryIds: d1, model: 'old-model' })
  await e.close()
  return { dir, dbPath, conversationId, leaves, d1, d2, all: [...leaves, ...d1, d2] }
}

/** A short deterministic answer that names the depth and the source it was given. */
export function marker(req) {
  const h = createHash('sha256').update(req.sourceText).digest('hex').slice(0, 12)
  return `MARK-d${req.depth}-${h}`
}
