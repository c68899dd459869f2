//! Conversations: one row per OpenClaw session, found by stable session key first,
//! runtime session id second, and created on first use.

use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;

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
    /// Optional title.
    pub title: Option<String>,
    /// Creation time (SQLite UTC text).
    pub created_at: String,
    /// Last update time (SQLite UTC text).
    pub updated_at: String,
}

/// How a caller names a conversation.
#[derive(Debug, Clone, Default)]
pub struct SessionRef {
    /// Runtime session id.
    pub session_id: String,
    /// Stable session key.
    pub session_key: Option<String>,
}

const COLUMNS: &str =
    "conversation_id, session_id, session_key, active, archived_at, title, created_at, updated_at";

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
