//! The SQLite schema, compatible with the reference plugin's `lcm.db`: the same
//! tables, columns, value formats and index names, plus nullable columns of ours
//! (`messages.lcm_envelope`, `large_files.lcm_source`) that older readers ignore.

/// Core tables, created when missing. Column lists match the reference plugin.
pub const CREATE_TABLES: &str = r#"
CREATE TABLE IF NOT EXISTS conversations (
  conversation_id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  session_key TEXT,
  active INTEGER NOT NULL DEFAULT 1,
  archived_at TEXT,
  archive_cause TEXT,
  title TEXT,
  bootstrapped_at TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  updated_at TEXT NOT NULL DEFAULT (datetime('now'))
);

CREATE TABLE IF NOT EXISTS messages (
  message_id INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
  content TEXT NOT NULL,
  token_count INTEGER NOT NULL,
  identity_hash TEXT,
  openclaw_sender_metadata TEXT,
  transcript_entry_id TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  UNIQUE (conversation_id, seq)
);

CREATE TABLE IF NOT EXISTS summaries (
  summary_id TEXT PRIMARY KEY,
  conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
  depth INTEGER NOT NULL DEFAULT 0,
  content TEXT NOT NULL,
  token_count INTEGER NOT NULL,
  earliest_at TEXT,
  latest_at TEXT,
  descendant_count INTEGER NOT NULL DEFAULT 0,
  descendant_token_count INTEGER NOT NULL DEFAULT 0,
  source_message_token_count INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  file_ids TEXT NOT NULL DEFAULT '[]'
);

CREATE TABLE IF NOT EXISTS message_parts (
  part_id TEXT PRIMARY KEY,
  message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  part_type TEXT NOT NULL CHECK (part_type IN (
    'text', 'reasoning', 'tool', 'patch', 'file',
    'subtask', 'compaction', 'step_start', 'step_finish',
    'snapshot', 'agent', 'retry'
  )),
  ordinal INTEGER NOT NULL,
  text_content TEXT,
  is_ignored INTEGER,
  is_synthetic INTEGER,
  tool_call_id TEXT,
  tool_name TEXT,
  tool_status TEXT,
  tool_input TEXT,
  tool_output TEXT,
  tool_error TEXT,
  tool_title TEXT,
  patch_hash TEXT,
  patch_files TEXT,
  file_mime TEXT,
  file_name TEXT,
  file_url TEXT,
  subtask_prompt TEXT,
  subtask_desc TEXT,
  subtask_agent TEXT,
  step_reason TEXT,
  step_cost REAL,
  step_tokens_in INTEGER,
  step_tokens_out INTEGER,
  snapshot_hash TEXT,
  compaction_auto INTEGER,
  metadata TEXT,
  UNIQUE (message_id, ordinal)
);

CREATE TABLE IF NOT EXISTS summary_messages (
  summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE CASCADE,
  message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE RESTRICT,
  ordinal INTEGER NOT NULL,
  PRIMARY KEY (summary_id, message_id)
);

CREATE TABLE IF NOT EXISTS summary_parents (
  summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE CASCADE,
  parent_summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE RESTRICT,
  ordinal INTEGER NOT NULL,
  PRIMARY KEY (summary_id, parent_summary_id)
);

CREATE TABLE IF NOT EXISTS context_items (
  conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  item_type TEXT NOT NULL CHECK (item_type IN ('message', 'summary')),
  message_id INTEGER REFERENCES messages(message_id) ON DELETE RESTRICT,
  summary_id TEXT REFERENCES summaries(summary_id) ON DELETE RESTRICT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  PRIMARY KEY (conversation_id, ordinal),
  CHECK (
    (item_type = 'message' AND message_id IS NOT NULL AND summary_id IS NULL) OR
    (item_type = 'summary' AND summary_id IS NOT NULL AND message_id IS NULL)
  )
);

CREATE TABLE IF NOT EXISTS large_files (
  file_id TEXT PRIMARY KEY,
  conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  file_name TEXT,
  mime_type TEXT,
  byte_size INTEGER,
  line_count INTEGER,
  storage_uri TEXT NOT NULL,
  exploration_summary TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now'))
);

CREATE TABLE IF NOT EXISTS lcm_fts_state (
  table_name TEXT PRIMARY KEY,
  indexed_upto INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS lcm_context_gaps (
  conversation_id INTEGER PRIMARY KEY
);

CREATE TABLE IF NOT EXISTS lcm_migration_state (
  step_name TEXT NOT NULL,
  algorithm_version INTEGER NOT NULL,
  completed_at TEXT NOT NULL DEFAULT (datetime('now')),
  PRIMARY KEY (step_name, algorithm_version)
);

CREATE TABLE IF NOT EXISTS lcm_trigram_slices (
  slice INTEGER PRIMARY KEY,
  layout INTEGER NOT NULL,
  bits BLOB NOT NULL
);

CREATE TABLE IF NOT EXISTS lcm_trigram_groups (
  slice INTEGER PRIMARY KEY,
  layout INTEGER NOT NULL,
  bits BLOB NOT NULL
);

-- Context items a `/new` took out of the context list (issue 58): still stored,
-- still reachable by recall, and still covering their messages for the doctor.
CREATE TABLE IF NOT EXISTS lcm_pruned_context (
  conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  item_type TEXT NOT NULL CHECK (item_type IN ('message', 'summary')),
  message_id INTEGER REFERENCES messages(message_id) ON DELETE CASCADE,
  summary_id TEXT REFERENCES summaries(summary_id) ON DELETE CASCADE,
  retain_depth INTEGER NOT NULL,
  pruned_at TEXT NOT NULL DEFAULT (datetime('now')),
  PRIMARY KEY (conversation_id, position)
);

-- Conversations retention removed (after archiving them), and their summaries'
-- ids, so a lookup of a removed summary can name the archive.
CREATE TABLE IF NOT EXISTS lcm_pruned (
  conversation_id INTEGER PRIMARY KEY,
  session TEXT NOT NULL,
  archive TEXT NOT NULL,
  messages INTEGER NOT NULL,
  pruned_at TEXT NOT NULL DEFAULT (datetime('now'))
);

CREATE TABLE IF NOT EXISTS lcm_pruned_summaries (
  summary_id TEXT PRIMARY KEY,
  conversation_id INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS lcm_turn_receipts (
  advancement_key TEXT PRIMARY KEY,
  conversation_id INTEGER REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  payload_hash TEXT NOT NULL,
  message_count INTEGER NOT NULL,
  ingested_count INTEGER NOT NULL,
  committed_at TEXT NOT NULL DEFAULT (datetime('now'))
);
"#;

/// Columns added after the first releases: `(table, column, declaration)`. Each is
/// added with `ALTER TABLE … ADD COLUMN` when an older database lacks it.
pub const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("conversations", "session_key", "TEXT"),
    ("conversations", "active", "INTEGER NOT NULL DEFAULT 1"),
    ("conversations", "archived_at", "TEXT"),
    ("conversations", "archive_cause", "TEXT"),
    ("conversations", "title", "TEXT"),
    ("conversations", "bootstrapped_at", "TEXT"),
    ("conversations", "ended_session_id", "TEXT"),
    ("messages", "identity_hash", "TEXT"),
    ("messages", "openclaw_sender_metadata", "TEXT"),
    ("messages", "transcript_entry_id", "TEXT"),
    ("messages", "large_content", "TEXT"),
    ("messages", "stable_event_key", "TEXT"),
    ("messages", "lcm_envelope", "TEXT"),
    ("summaries", "depth", "INTEGER NOT NULL DEFAULT 0"),
    ("summaries", "earliest_at", "TEXT"),
    ("summaries", "latest_at", "TEXT"),
    (
        "summaries",
        "descendant_count",
        "INTEGER NOT NULL DEFAULT 0",
    ),
    (
        "summaries",
        "descendant_token_count",
        "INTEGER NOT NULL DEFAULT 0",
    ),
    (
        "summaries",
        "source_message_token_count",
        "INTEGER NOT NULL DEFAULT 0",
    ),
    ("summaries", "model", "TEXT NOT NULL DEFAULT 'unknown'"),
    ("summaries", "file_ids", "TEXT NOT NULL DEFAULT '[]'"),
    ("large_files", "line_count", "INTEGER"),
    ("large_files", "lcm_source", "TEXT"),
    ("large_files", "lcm_summary_kind", "TEXT"),
    (
        "large_files",
        "lcm_summary_attempts",
        "INTEGER NOT NULL DEFAULT 0",
    ),
    ("large_files", "lcm_summary_retry_at", "INTEGER"),
];

/// Indexes, created after the columns they use exist. Names match the reference.
/// Three reference indexes are not created because they repeat a UNIQUE or PRIMARY
/// KEY index exactly (`messages_conv_seq_idx`, `message_parts_message_idx`,
/// `context_items_conv_idx`): they cost a page write per insert and answer no query
/// the constraint's own index does not. The reference recreates them if it opens
/// the file; existing ones are left alone. Two more are not created because nothing
/// here queries them and each costs index pages on every ingest commit (the
/// reference creates them at its startup, `IF NOT EXISTS`, when it opens the file):
/// `messages_conv_identity_hash_idx` (identity hashes stay NULL here) and
/// `message_parts_type_idx` (a five-value column: every turn dirtied several of
/// its leaf pages). Two indexes are ours:
/// `lcm_summary_parents_ordinal_idx` covers reading a node's sources in link order
/// (assembly renders them on every turn); `lcm_messages_created_idx` lets recall
/// prove, before its catalog is built, that no older message id has a newer time
/// (times mostly grow with ids, so inserts append at its right edge);
/// `lcm_summaries_keys_idx` covers what the summary catalog reads of every
/// summary (id, conversation, times), so loading it skips the summaries' content.
pub const CREATE_INDEXES: &str = r#"
CREATE INDEX IF NOT EXISTS summaries_conv_created_idx ON summaries (conversation_id, created_at);
CREATE INDEX IF NOT EXISTS summary_messages_message_idx ON summary_messages (message_id);
CREATE INDEX IF NOT EXISTS summary_parents_parent_summary_idx ON summary_parents (parent_summary_id);
CREATE INDEX IF NOT EXISTS large_files_conv_idx ON large_files (conversation_id, created_at);
CREATE UNIQUE INDEX IF NOT EXISTS conversations_active_session_key_idx
  ON conversations (session_key) WHERE session_key IS NOT NULL AND active = 1;
CREATE INDEX IF NOT EXISTS conversations_session_key_active_created_idx
  ON conversations (session_key, active, created_at);
CREATE INDEX IF NOT EXISTS conversations_session_id_active_created_idx
  ON conversations (session_id, active, created_at);
CREATE UNIQUE INDEX IF NOT EXISTS messages_conv_entry_unique_idx
  ON messages (conversation_id, transcript_entry_id) WHERE transcript_entry_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS messages_stable_event_key_unique
  ON messages (conversation_id, stable_event_key) WHERE stable_event_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS summaries_conv_depth_kind_idx ON summaries (conversation_id, depth, kind);
CREATE INDEX IF NOT EXISTS lcm_summary_parents_ordinal_idx ON summary_parents (summary_id, ordinal, parent_summary_id);
CREATE INDEX IF NOT EXISTS lcm_messages_created_idx ON messages (created_at);
CREATE INDEX IF NOT EXISTS lcm_summaries_keys_idx ON summaries (summary_id, conversation_id, latest_at, created_at);
"#;

/// The table where an FTS5 table that keeps its own text stores its rows
/// (`id` = rowid, then one `c<i>` column per declared column, in order): summary
/// ids are read, and rows to delete found, there rather than through the full-text
/// table, which reads a whole row (the text's overflow pages included) to hand out
/// one column.
pub fn stored_rows(fts_table: &str) -> String {
    format!("{fts_table}_content")
}

/// One full-text table: its name, the SQL that creates it, the SQL that fills it
/// from its source table, and a fragment whose absence in `sqlite_master` marks an
/// incompatible older layout that must be rebuilt.
pub struct FtsTable {
    /// Table name.
    pub name: &'static str,
    /// CREATE VIRTUAL TABLE statement.
    pub create: &'static str,
    /// Statement that (re)fills the index from the base table.
    pub seed: &'static str,
    /// A fragment the stored CREATE statement must contain to be current.
    pub expect: &'static str,
}

/// `messages_fts` indexes `messages.content` without keeping a second copy of the
/// text (external content, rowid = message_id); `summaries_fts` keeps the reference
/// layout (`summary_id UNINDEXED, content`).
pub const MESSAGES_FTS: FtsTable = FtsTable {
    name: "messages_fts",
    create: "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='message_id', tokenize='porter unicode61')",
    seed: "INSERT INTO messages_fts(messages_fts) VALUES('rebuild')",
    expect: "content='messages'",
};

/// See [`MESSAGES_FTS`].
pub const SUMMARIES_FTS: FtsTable = FtsTable {
    name: "summaries_fts",
    create: "CREATE VIRTUAL TABLE summaries_fts USING fts5(summary_id UNINDEXED, content, tokenize='porter unicode61')",
    seed: "INSERT INTO summaries_fts(summary_id, content) SELECT summary_id, content FROM summaries",
    expect: "summary_id UNINDEXED",
};

/// Trigram index of summaries, for CJK text the word tokenizer cannot split.
pub const SUMMARIES_FTS_CJK: FtsTable = FtsTable {
    name: "summaries_fts_cjk",
    create: "CREATE VIRTUAL TABLE summaries_fts_cjk USING fts5(summary_id UNINDEXED, content, tokenize='trigram')",
    seed: "INSERT INTO summaries_fts_cjk(summary_id, content) SELECT summary_id, content FROM summaries",
    expect: "trigram",
};
