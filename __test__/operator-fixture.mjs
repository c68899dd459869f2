// Shared by the doctor, dagops and operator CLI suites: a database built through the
// addon from a seeded workload, damage applied with sql.js to the closed file, and
// file checksums.
import { join } from 'node:path'
import { readFileSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import initSqlJs from 'sql.js'
import { LcmEngine, tempDir, workload } from './helpers.mjs'

const SQL = await initSqlJs()

/** Runs `sql` on a closed database file (sql.js: no FTS5, foreign keys off). */
export function damage(path, sql) {
  const db = new SQL.Database(readFileSync(path))
  try {
    db.exec(sql)
    writeFileSync(path, Buffer.from(db.export()))
  } finally {
    db.close()
  }
}

/**
 * `damage`, then one engine open/close: sql.js writes rollback-journal files and the
 * engine switches a file to WAL when it opens it, which would otherwise show up as
 * a change made by whatever opens the file next.
 */
export async function damaged(path, sql) {
  damage(path, sql)
  const e = await LcmEngine.open({ dbPath: path })
  await e.close()
}

/** sha256 of a file. */
export const sha = (path) => createHash('sha256').update(readFileSync(path)).digest('hex')

/**
 * A database with one conversation of 60 workload messages: 8 leaves over the first 48
 * (6 messages each), 4 d1 nodes over leaf pairs, one d2 over the first two d1 nodes.
 * Context: top, d1[2], d1[3], then messages 48..59. Leaf 5 quotes a fallback marker
 * mid-text (healthy). Returns ids and the file path; the engine is closed.
 */
export async function build({ session = 'doctor', seed = 7, dir = tempDir() } = {}) {
  const path = join(dir, 'lcm.db')
  const e = await LcmEngine.open({ dbPath: path })
  const { messages } = workload(60, seed)
  const r = await e.ingestBatch({ sessionId: session, messages })
  const conv = r.conversationId
  const ids = r.results.map((x) => x.messageId).filter((x) => x != null)
  const leaves = []
  for (let i = 0; i < 48; i += 6) {
    const k = i / 6
    const content =
      k === 5
        ? `Leaf ${k} (${session}): the engine writes [Truncated from 12 tokens] when it gives up; this leaf only quotes it.`
        : `Leaf ${k} (${session}): budget review, deploy plan and the schema migration were discussed.`
    leaves.push(await e.insertSummary({ conversationId: conv, content, messageIds: ids.slice(i, i + 6) }))
  }
  const d1 = []
  for (let i = 0; i < 8; i += 2) {
    d1.push(await e.insertSummary({ conversationId: conv, content: `D1 ${i / 2} (${session}): two leaves condensed.`, summaryIds: leaves.slice(i, i + 2) }))
  }
  const top = await e.insertSummary({ conversationId: conv, content: `D2 (${session}): the first half of the conversation.`, summaryIds: d1.slice(0, 2) })
  await e.close()
  return { path, dir, conv, ids, leaves, d1, top }
}
