//! The rows a summarizer input is built from, read in one place: a chunk's
//! messages (row + parts), a chunk's child summaries, and the sources a stored
//! summary is linked to. Compaction, rewrite and doctor all read through here.

use rusqlite::Connection;

use super::dag::Sources;
use super::derived::MsgRow;
use super::{messages, summaries};
use crate::error::Result;
use crate::message::rebuild::StoredMessage;

/// One source message: the message with its parts (its role is
/// `message.role`), and what a leaf's derived columns need of it (its stored time
/// is `row.created_at`, SQLite UTC text).
#[derive(Debug, Clone)]
pub struct SourceMessageRow {
    /// The message with its parts.
    pub message: StoredMessage,
    /// Its columns for [`super::derived::leaf`].
    pub row: MsgRow,
}

/// Source messages by id, in the order given (unknown ids are skipped).
pub fn messages(conn: &Connection, ids: &[i64]) -> Result<Vec<SourceMessageRow>> {
    Ok(messages::sources_by_ids(conn, ids)?
        .into_iter()
        .map(|(message, row)| SourceMessageRow { message, row })
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
