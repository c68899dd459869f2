//! `status`: what an operator asks first — how big the database is and where the
//! space goes, how many conversations it holds, and for one session: its context
//! against the budget, its summaries per depth, its last compaction and the work
//! still pending. Reads only.

use serde::{Deserialize, Serialize};

use crate::compaction::control::CompactionRecord;
use crate::store::status::{DepthCount, TableSize};

/// Tables `status` lists by size.
pub const LARGEST_TABLES: usize = 3;

/// Parameters of `status`.
#[derive(Debug, Clone, Default, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct StatusParams {
    /// The session to report on (runtime id); without it and `sessionKey`, only the
    /// database is reported.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The session's stable key (found first, as everywhere).
    #[serde(default)]
    pub session_key: Option<String>,
    /// The model's context budget, in tokens: gives the threshold and whether
    /// compaction is due.
    #[serde(default)]
    pub token_budget: Option<i64>,
    /// The threshold ratio in force for this session (default: the engine's
    /// `contextThreshold`).
    #[serde(default)]
    pub context_threshold: Option<f64>,
    /// List the largest tables (default true). Reads every page of the file, so it
    /// takes time in proportion to its size.
    #[serde(default)]
    pub tables: Option<bool>,
}

/// The answer of `status`.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct EngineStatus {
    /// The database file.
    pub database: DatabaseStatus,
    /// Conversations by state.
    pub conversations: ConversationCounts,
    /// The session asked about (null when none was named).
    pub session: Option<SessionStatus>,
}

/// The database file.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseStatus {
    /// Its path.
    pub path: String,
    /// Bytes of the main file.
    pub file_bytes: i64,
    /// Bytes of its write-ahead log (`-wal`), 0 when there is none.
    pub wal_bytes: i64,
    /// Bytes per page.
    pub page_size: i64,
    /// Pages in the main file.
    pub page_count: i64,
    /// Unused pages (VACUUM returns them to the file system).
    pub freelist_pages: i64,
    /// The largest tables, indexes counted toward their table, largest first (null
    /// when not asked, or when SQLite lacks the `dbstat` table).
    pub largest_tables: Option<Vec<TableSize>>,
    /// Stored messages not yet in the full-text index (indexed in batches; a search
    /// indexes them first).
    pub unindexed_messages: i64,
}

/// Conversations by state.
#[derive(Debug, Clone, Copy, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ConversationCounts {
    /// The active row of each session.
    pub active: i64,
    /// Archived rows (a reset or a new session keeps the old one).
    pub archived: i64,
}

/// One session's context.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    /// Its active conversation (null when nothing was stored for it yet).
    pub conversation_id: Option<i64>,
    /// Stored messages.
    pub messages: i64,
    /// Σ tokens of the stored messages.
    pub message_tokens: i64,
    /// Context-list entries (messages and summaries).
    pub context_items: i64,
    /// Σ tokens of the context list.
    pub context_tokens: i64,
    /// The budget asked about (null when none was given).
    pub token_budget: Option<i64>,
    /// The threshold ratio in force.
    pub context_threshold: f64,
    /// ⌊contextThreshold × tokenBudget⌋ (null without a budget).
    pub threshold: Option<i64>,
    /// Summaries per depth, shallowest first.
    pub summaries_by_depth: Vec<DepthCount>,
    /// When the newest summary was written (SQLite UTC text; survives restarts).
    pub newest_summary_at: Option<String>,
    /// The last compaction of this process that wrote summaries.
    pub last_compaction: Option<CompactionRecord>,
    /// What is still to do.
    pub pending: PendingWork,
}

/// Work still to do for a session.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct PendingWork {
    /// Compaction calls of this session running now.
    pub compactions_running: i64,
    /// The context is over the threshold (false without a budget).
    pub compaction_due: bool,
    /// A compaction that did not end left a gap in the context list (the next one
    /// closes it first).
    pub context_gap: bool,
}
