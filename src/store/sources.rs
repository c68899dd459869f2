//! The rows a summarizer input is built from, read in one place: a chunk's
//! messages (row + parts), a chunk's child summaries, and the sources a stored
//! summary is linked to. Compaction, rewrite and doctor all read through here.

use rusqlite::Connection;

use super::dag::Sources;
use super::{messages, summaries};
use crate::error::Result;

pub use super::messages::{SourceParts, SourceRow};

/// Visits source messages by id, once each in id order, with their parts
/// (unknown ids are skipped; see [`messages::for_each_source`]).
pub fn messages(
    conn: &Connection,
    ids: &[i64],
    visit: impl FnMut(SourceRow<'_>, &mut SourceParts<'_, '_>) -> Result<()>,
) -> Result<()> {
    messages::for_each_source(conn, ids, visit)
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
