//! The rows a summarizer input is built from, read in one place: a chunk's
//! messages (row + parts), a chunk's child summaries, and the sources a stored
//! summary is linked to. Compaction, rewrite and doctor all read through here.

use rusqlite::Connection;

use super::dag::Sources;
use super::{messages, summaries};
use crate::error::Result;
use crate::message::rebuild::StoredMessage;

/// One source message: its stored time and role, and the message with its parts.
#[derive(Debug, Clone)]
pub struct SourceMessageRow {
    /// `messages.created_at` (SQLite UTC text).
    pub created_at: String,
    /// DB role.
    pub role: String,
    /// The message with its parts.
    pub message: StoredMessage,
}

/// Source messages by id, in the order given (unknown ids are skipped).
pub fn messages(conn: &Connection, ids: &[i64]) -> Result<Vec<SourceMessageRow>> {
    let records = messages::records_by_ids(conn, ids)?;
    let stored = messages::stored_by_ids(conn, ids)?;
    Ok(records
        .into_iter()
        .zip(stored)
        .map(|(r, message)| SourceMessageRow {
            created_at: r.created_at,
            role: r.role,
            message,
        })
        .collect())
}

/// Child summaries by id, in the order given (unknown ids are skipped).
pub fn summaries(conn: &Connection, ids: &[String]) -> Result<Vec<summaries::SummaryRecord>> {
    summaries::by_ids(conn, ids)
}

/// What a stored summary was built from, in link order: its messages when it has
/// any, its source summaries otherwise.
pub fn of_summary(conn: &Connection, summary_id: &str) -> Result<Sources> {
    let msgs = summaries::source_message_ids(conn, summary_id)?;
    if !msgs.is_empty() {
        return Ok(Sources::Messages(msgs));
    }
    Ok(Sources::Summaries(summaries::source_summary_ids(
        conn, summary_id,
    )?))
}
