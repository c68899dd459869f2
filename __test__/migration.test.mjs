import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import { LcmEngine, tempDir } from './helpers.mjs'
import { writeDb, query } from './sqlfile.mjs'

// The reference plugin's early (0.2.0-era) layout: no session_key/active on
// conversations, no identity_hash/transcript_entry_id on messages, summaries without
// depth, time range, descendant or token-count columns, no model column.
const OLD_SCHEMA = `
CREATE TABLE conversations (conversation_id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, title TEXT,
  bootstrapped_at TEXT, created_at TEXT NOT NULL DEFAULT (datetime('now')), updated_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE messages (message_id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  seq INTEGER NOT NULL, role TEXT NOT NULL CHECK (role IN ('system','user','assistant','tool')), content TEXT NOT NULL,
  token_count INTEGER NOT NULL, created_at TEXT NOT NULL DEFAULT (datetime('now')), UNIQUE (conversation_id, seq));
CREATE TABLE summaries (summary_id TEXT PRIMARY KEY, conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('leaf','condensed')), content TEXT NOT NULL, token_count INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT (datetime('now')), file_ids TEXT NOT NULL DEFAULT '[]');
CREATE TABLE message_parts (part_id TEXT PRIMARY KEY, message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL, part_type TEXT NOT NULL, ordinal INTEGER NOT NULL, text_content TEXT, tool_call_id TEXT, tool_name TEXT,
  tool_input TEXT, tool_output TEXT, metadata TEXT, UNIQUE (message_id, ordinal));
CREATE TABLE summary_messages (summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE CASCADE,
  message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE RESTRICT, ordinal INTEGER NOT NULL, PRIMARY KEY (summary_id, message_id));
CREATE TABLE summary_parents (summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE CASCADE,
  parent_summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE RESTRICT, ordinal INTEGER NOT NULL, PRIMARY KEY (summary_id, parent_summary_id));
CREATE TABLE context_items (conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE, ordinal INTEGER NOT NULL,
  item_type TEXT NOT NULL CHECK (item_type IN ('message','summary')), message_id INTEGER REFERENCES messages(message_id) ON DELETE RESTRICT,
  summary_id TEXT REFERENCES summaries(summary_id) ON DELETE RESTRICT, created_at TEXT NOT NULL DEFAULT (datetime('now')),
  PRIMARY KEY (conversation_id, ordinal));
CREATE TABLE large_files (file_id TEXT PRIMARY KEY, conversation_id INTEGER NOT NULL, file_name TEXT, mime_type TEXT, byte_size INTEGER,
  storage_uri TEXT NOT NULL, exploration_summary TEXT, created_at TEXT NOT NULL DEFAULT (datetime('now')));
`

const OLD_DATA = `
INSERT INTO conversations (conversation_id, session_id, created_at) VALUES (1, 'legacy-session', '2026-02-17 07:00:00');
INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count, created_at) VALUES
  (1, 1, 1, 'user', 'deploy the staging config', 7, '2026-02-17 07:37:00'),
  (2, 1, 2, 'assistant', 'Deploying now.', 4, '2026-02-17 07:38:00'),
  (3, 1, 3, 'tool', 'ok: 3 pods', 3, '2026-02-17 07:39:00'),
  (4, 1, 4, 'assistant', 'Done.', 2, '2026-02-17 08:10:00'),
  (5, 1, 5, 'user', 'thanks', 2, '2026-02-17 09:00:00'),
  (6, 1, 6, 'assistant', 'You are welcome.', 4, '2026-02-17 09:01:00');
INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal, text_content, metadata) VALUES
  ('p1', 1, 'legacy-session', 'text', 0, 'deploy the staging config', '{"originalRole":"user"}'),
  ('p2', 2, 'legacy-session', 'text', 0, 'Deploying now.', '{"originalRole":"assistant","rawType":"text","raw":{"type":"text","text":"Deploying now."}}'),
  ('p4', 4, 'legacy-session', 'text', 0, 'Done.', '{"originalRole":"assistant","rawType":"text","raw":{"type":"text","text":"Done."}}'),
  ('p5', 5, 'legacy-session', 'text', 0, 'thanks', '{"originalRole":"user"}');
INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal, text_content, tool_call_id, tool_name, metadata) VALUES
  ('p3', 3, 'legacy-session', 'tool', 0, 'ok: 3 pods', 'call_abc', 'exec', '{"originalRole":"toolResult","rawType":"text"}');
INSERT INTO summaries (summary_id, conversation_id, kind, content, token_count, created_at) VALUES
  ('sum_aaaaaaaaaaaaaaaa', 1, 'leaf', 'Deployed staging.', 5, '2026-02-17 08:00:00'),
  ('sum_bbbbbbbbbbbbbbbb', 1, 'leaf', 'Confirmed done.', 4, '2026-02-17 08:20:00'),
  ('sum_cccccccccccccccc', 1, 'condensed', 'Staging deploy finished.', 6, '2026-02-17 08:30:00');
INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES
  ('sum_aaaaaaaaaaaaaaaa', 1, 0), ('sum_aaaaaaaaaaaaaaaa', 2, 1), ('sum_aaaaaaaaaaaaaaaa', 3, 2), ('sum_bbbbbbbbbbbbbbbb', 4, 0);
INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES
  ('sum_cccccccccccccccc', 'sum_aaaaaaaaaaaaaaaa', 0), ('sum_cccccccccccccccc', 'sum_bbbbbbbbbbbbbbbb', 1);
INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, summary_id) VALUES
  (1, 0, 'summary', NULL, 'sum_cccccccccccccccc'), (1, 1, 'message', 5, NULL), (1, 2, 'message', 6, NULL);
`

function columns(path, table) {
  return query(path, `PRAGMA table_info(${table})`).map((r) => r.name)
}

describe('migrations', () => {
  it('create the full schema in an empty file, idempotently', async () => {
    const dbPath = join(tempDir(), 'lcm.db')
    for (let i = 0; i < 2; i++) {
      const e = await LcmEngine.open({ dbPath })
      await e.close()
    }
    const tables = query(dbPath, "SELECT name FROM sqlite_master WHERE type = 'table'").map((r) => r.name)
    for (const t of ['conversations', 'messages', 'message_parts', 'summaries', 'summary_messages', 'summary_parents', 'context_items', 'large_files', 'lcm_migration_state', 'messages_fts', 'summaries_fts', 'summaries_fts_cjk']) {
      expect(tables).toContain(t)
    }
    const steps = query(dbPath, 'SELECT step_name, algorithm_version FROM lcm_migration_state ORDER BY step_name')
    expect(steps).toEqual([
      { step_name: 'backfillSummaryDepths', algorithm_version: 1 },
      { step_name: 'backfillSummaryMetadata', algorithm_version: 1 },
    ])
    expect(query(dbPath, 'PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }])
  })

  it('upgrade a database with the old schema: columns added, DAG metadata backfilled, data kept', async () => {
    const dbPath = join(tempDir(), 'old.db')
    writeDb(dbPath, OLD_SCHEMA + OLD_DATA)
    const e = await LcmEngine.open({ dbPath })
    const conv = await e.getConversation({ sessionId: 'legacy-session' })
    expect(conv.conversationId).toBe(1)
    const sums = Object.fromEntries((await e.getSummaries(1)).map((s) => [s.summaryId, s]))
    expect(sums.sum_aaaaaaaaaaaaaaaa).toMatchObject({
      depth: 0, earliestAt: '2026-02-17T07:37:00.000Z', latestAt: '2026-02-17T07:39:00.000Z',
      descendantCount: 0, sourceMessageTokenCount: 14, messageIds: [1, 2, 3], model: 'unknown',
    })
    expect(sums.sum_cccccccccccccccc).toMatchObject({
      depth: 1, earliestAt: '2026-02-17T07:37:00.000Z', latestAt: '2026-02-17T08:10:00.000Z',
      descendantCount: 2, descendantTokenCount: 9, sourceMessageTokenCount: 16,
      parentIds: ['sum_aaaaaaaaaaaaaaaa', 'sum_bbbbbbbbbbbbbbbb'],
    })
    const msgs = await e.getMessages(1)
    // Rows without an envelope get their timestamp back from created_at.
    expect(msgs[0]).toEqual({ role: 'user', content: 'deploy the staging config', timestamp: Date.parse('2026-02-17T07:37:00Z') })
    expect(msgs[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'Deploying now.' }], timestamp: Date.parse('2026-02-17T07:38:00Z') })
    expect(msgs[2]).toMatchObject({ role: 'toolResult', toolCallId: 'call_abc', toolName: 'exec' })
    const r = await e.ingest({ sessionId: 'legacy-session', message: { role: 'user', content: 'next step' } })
    expect(r).toMatchObject({ ingested: true, conversationId: 1, seq: 7 })
    const items = await e.getContextItems(1)
    expect(items.map((i) => i.ordinal)).toEqual([0, 1, 2, 3])
    await e.close()
    for (const c of ['session_key', 'active', 'archived_at']) expect(columns(dbPath, 'conversations')).toContain(c)
    for (const c of ['identity_hash', 'transcript_entry_id', 'lcm_envelope']) expect(columns(dbPath, 'messages')).toContain(c)
    for (const c of ['depth', 'earliest_at', 'latest_at', 'descendant_count', 'descendant_token_count', 'source_message_token_count', 'model']) {
      expect(columns(dbPath, 'summaries')).toContain(c)
    }
    // The backfills ran once and are recorded; reopening does not redo them.
    const e2 = await LcmEngine.open({ dbPath })
    await e2.close()
    expect(query(dbPath, 'SELECT COUNT(*) AS n FROM lcm_migration_state')[0].n).toBe(2)
    expect(query(dbPath, 'PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }])
  })
})
