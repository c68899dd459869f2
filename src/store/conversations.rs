//! Conversations: one row per OpenClaw session, found by stable session key first,
//! runtime session id second, and created on first use.

use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// A `conversations` row.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "Conversation")]
pub struct ConversationRecord {
    /// conversation_id
    pub conversation_id: i64,
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key, when known.
    pub session_key: Option<String>,
    /// Whether this is the active row for its key.
    pub active: bool,
    /// When it was archived.
    pub archived_at: Option<String>,
    /// Why it was archived (an [`ArchiveCause`] string; rows written by other
    /// tools may hold other text).
    pub archive_cause: Option<String>,
    /// The session that last wrote it and was then ended by a lifecycle event
    /// (`/new`, `/reset`, …): the next session id under its key continues it.
    pub ended_session_id: Option<String>,
    /// Optional title.
    pub title: Option<String>,
    /// Creation time (SQLite UTC text).
    pub created_at: String,
    /// Last update time (SQLite UTC text).
    pub updated_at: String,
}

/// Why a conversation left the active state. Serialized as the strings stored in
/// `conversations.archive_cause` (the reference's `manual-reset` and
/// `session-deleted`, and ours for the other causes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub enum ArchiveCause {
    /// `/reset` (or `session_end` with reason `reset`).
    #[serde(rename = "manual-reset")]
    Reset,
    /// `session_end` with reason `new` when the host rotates without `before_reset`.
    #[serde(rename = "new-session")]
    New,
    /// The host's idle reset (`session_end` reason `idle`).
    #[serde(rename = "idle-reset")]
    Idle,
    /// The host's daily reset (`session_end` reason `daily`).
    #[serde(rename = "daily-reset")]
    Daily,
    /// The host rotated the session after its own compaction.
    #[serde(rename = "compaction-rollover")]
    Compaction,
    /// The host deleted the session (no replacement is created).
    #[serde(rename = "session-deleted")]
    Deleted,
    /// An operator (`lcm-tui archive`, `archiveConversation`).
    #[serde(rename = "operator")]
    Operator,
    /// A new session id under the key with no lifecycle event, whose transcript
    /// does not continue the stored conversation (see `bootstrap`).
    #[serde(rename = "session-rollover")]
    Rollover,
}

impl ArchiveCause {
    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reset => "manual-reset",
            Self::New => "new-session",
            Self::Idle => "idle-reset",
            Self::Daily => "daily-reset",
            Self::Compaction => "compaction-rollover",
            Self::Deleted => "session-deleted",
            Self::Operator => "operator",
            Self::Rollover => "session-rollover",
        }
    }
}

/// How a caller names a conversation.
#[derive(Debug, Clone, Default)]
pub struct SessionRef {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    pub session_key: Option<String>,
}

const COLUMNS: &str = "conversation_id, session_id, session_key, active, archived_at, title, created_at, updated_at, archive_cause, ended_session_id";

fn from_row(r: &Row) -> rusqlite::Result<ConversationRecord> {
    Ok(ConversationRecord {
        conversation_id: r.get(0)?,
        session_id: r.get(1)?,
        session_key: r.get(2)?,
        active: r.get::<_, Option<i64>>(3)?.unwrap_or(1) != 0,
        archived_at: r.get(4)?,
        title: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
        archive_cause: r.get(8)?,
        ended_session_id: r.get(9)?,
    })
}

/// Finds the conversation for a session: the active row with the session key, else
/// the newest active row with the session id.
pub fn find(conn: &Connection, s: &SessionRef) -> Result<Option<ConversationRecord>> {
    if let Some(key) = &s.session_key {
        let by_key = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM conversations WHERE session_key = ?1 AND active = 1 ORDER BY created_at DESC, conversation_id DESC LIMIT 1"
            ))?
            .query_row([key], from_row)
            .optional()?;
        if by_key.is_some() {
            return Ok(by_key);
        }
    }
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM conversations WHERE session_id = ?1 AND active = 1 ORDER BY created_at DESC, conversation_id DESC LIMIT 1"
        ))?
        .query_row([&s.session_id], from_row)
        .optional()?)
}

/// Finds or creates the conversation (call inside a write transaction). A row found
/// by session id that has no key yet adopts the given key.
pub fn find_or_create(conn: &Connection, s: &SessionRef) -> Result<i64> {
    Ok(find_or_create_session(conn, s)?.0)
}

/// [`find_or_create`], with the conversation's stored session id (what its part rows
/// carry), read by the same query.
pub fn find_or_create_session(conn: &Connection, s: &SessionRef) -> Result<(i64, String)> {
    if let Some(found) = find(conn, s)? {
        if found.session_key.is_none() && s.session_key.is_some() {
            conn.prepare_cached(
                "UPDATE conversations SET session_key = ?1 WHERE conversation_id = ?2",
            )?
            .execute(params![s.session_key, found.conversation_id])?;
        }
        return Ok((found.conversation_id, found.session_id));
    }
    conn.prepare_cached("INSERT INTO conversations (session_id, session_key) VALUES (?1, ?2)")?
        .execute(params![s.session_id, s.session_key])?;
    Ok((conn.last_insert_rowid(), s.session_id.clone()))
}

/// One conversation by id.
pub fn get(conn: &Connection, id: i64) -> Result<Option<ConversationRecord>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM conversations WHERE conversation_id = ?1"
        ))?
        .query_row([id], from_row)
        .optional()?)
}

/// Every conversation, newest first.
pub fn list(conn: &Connection) -> Result<Vec<ConversationRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM conversations ORDER BY conversation_id DESC"
    ))?;
    let rows = stmt
        .query_map([], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Archives an active conversation (`active = 0`, `archived_at`, `archive_cause`);
/// false when it was not active. Call inside a write transaction.
pub fn archive(conn: &Connection, id: i64, cause: ArchiveCause) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE conversations SET active = 0, archived_at = datetime('now'), archive_cause = ?2,
             updated_at = datetime('now') WHERE conversation_id = ?1 AND active = 1",
        )?
        .execute(params![id, cause.as_str()])?;
    Ok(n > 0)
}

/// Creates the fresh active conversation of a key after its predecessor was
/// archived (call in the same transaction); `ended` records the session that
/// ended, so its late events change nothing.
pub fn create_successor(
    conn: &Connection,
    session_id: &str,
    session_key: Option<&str>,
    ended: Option<&str>,
) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO conversations (session_id, session_key, ended_session_id) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![session_id, session_key, ended])?;
    Ok(conn.last_insert_rowid())
}

/// Makes an archived conversation active again (clears `archived_at` and the
/// cause); false when it was already active.
pub fn unarchive(conn: &Connection, id: i64) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE conversations SET active = 1, archived_at = NULL, archive_cause = NULL,
             updated_at = datetime('now') WHERE conversation_id = ?1 AND active = 0",
        )?
        .execute([id])?;
    Ok(n > 0)
}

/// Records that `ended` (the session that wrote the conversation) ended, and the
/// session that continues it when known.
pub fn mark_ended(conn: &Connection, id: i64, ended: &str, next: Option<&str>) -> Result<()> {
    conn.prepare_cached(
        "UPDATE conversations SET ended_session_id = ?2, session_id = COALESCE(?3, session_id),
         updated_at = datetime('now') WHERE conversation_id = ?1",
    )?
    .execute(params![id, ended, next])?;
    Ok(())
}

/// The conversation is now written by `session_id` (a continuing session).
pub fn adopt_session(conn: &Connection, id: i64, session_id: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE conversations SET session_id = ?2, updated_at = datetime('now') WHERE conversation_id = ?1",
    )?
    .execute(params![id, session_id])?;
    Ok(())
}

/// Every conversation of a session key (its family: the active one and the
/// archived ones), newest first.
pub fn family(conn: &Connection, session_key: &str) -> Result<Vec<ConversationRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM conversations WHERE session_key = ?1 ORDER BY conversation_id DESC"
    ))?;
    let rows = stmt
        .query_map([session_key], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The active conversation of a key, if any.
pub fn active_for_key(conn: &Connection, session_key: &str) -> Result<Option<ConversationRecord>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM conversations WHERE session_key = ?1 AND active = 1 LIMIT 1"
        ))?
        .query_row([session_key], from_row)
        .optional()?)
}
