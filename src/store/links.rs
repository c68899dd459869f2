//! Writes to the summary graph outside compaction: link rows (removing, adding
//! and renumbering a summary's sources), the context list (one item, or the whole
//! list rewritten), and a summary's derived columns. The doctor's repairs and the
//! DAG operations (dissolve, transplant) are made of these.

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Transaction};

use super::dag;
use super::derived::{self, Meta};
use super::Features;
use crate::error::Result;
use crate::tokens;

/// An entry of a rewritten context list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextEntry {
    /// A raw message.
    Message(i64),
    /// A summary.
    Summary(String),
}

/// Deletes the link from `summary_id` to its source summary `parent`; returns the
/// number of rows deleted.
pub fn unlink_source_summary(tx: &Transaction, summary_id: &str, parent: &str) -> Result<usize> {
    Ok(tx.execute(
        "DELETE FROM summary_parents WHERE summary_id = ?1 AND parent_summary_id = ?2",
        params![summary_id, parent],
    )?)
}

/// Deletes the link from leaf `summary_id` to its source message; returns the
/// number of rows deleted.
pub fn unlink_source_message(tx: &Transaction, summary_id: &str, message_id: i64) -> Result<usize> {
    Ok(tx.execute(
        "DELETE FROM summary_messages WHERE summary_id = ?1 AND message_id = ?2",
        params![summary_id, message_id],
    )?)
}

/// Deletes the context item at `ordinal` (the list is left with a gap).
pub fn delete_context_item(tx: &Transaction, conversation_id: i64, ordinal: i64) -> Result<()> {
    tx.execute(
        "DELETE FROM context_items WHERE conversation_id = ?1 AND ordinal = ?2",
        params![conversation_id, ordinal],
    )?;
    Ok(())
}

/// Links message `m` to leaf `holder` and numbers the leaf's sources as `order`
/// (which includes `m`).
pub fn link_source_message(tx: &Transaction, holder: &str, m: i64, order: &[i64]) -> Result<()> {
    tx.execute(
        "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?1, ?2, -1)",
        params![holder, m],
    )?;
    let mut st = tx.prepare_cached(
        "UPDATE summary_messages SET ordinal = ?3 WHERE summary_id = ?1 AND message_id = ?2",
    )?;
    for (i, id) in order.iter().enumerate() {
        st.execute(params![holder, id, i as i64])?;
    }
    Ok(())
}

/// Links summary `unit` to `holder` as a source and numbers the holder's sources as
/// `order` (which includes `unit`).
pub fn link_source_summary(
    tx: &Transaction,
    holder: &str,
    unit: &str,
    order: &[String],
) -> Result<()> {
    tx.execute(
        "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?1, ?2, -1)",
        params![holder, unit],
    )?;
    let mut st = tx.prepare_cached(
        "UPDATE summary_parents SET ordinal = ?3 WHERE summary_id = ?1 AND parent_summary_id = ?2",
    )?;
    for (i, id) in order.iter().enumerate() {
        st.execute(params![holder, id, i as i64])?;
    }
    Ok(())
}

/// Replaces a conversation's context list with `rows` (entry, created_at), at
/// ordinals 0..n-1.
pub fn replace_context(
    tx: &Transaction,
    conversation_id: i64,
    rows: &[(ContextEntry, String)],
) -> Result<()> {
    tx.execute(
        "DELETE FROM context_items WHERE conversation_id = ?1",
        [conversation_id],
    )?;
    let mut st = tx.prepare_cached(
        "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, summary_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (i, (e, at)) in rows.iter().enumerate() {
        let (t, m, s) = match e {
            ContextEntry::Message(m) => ("message", Some(*m), None),
            ContextEntry::Summary(s) => ("summary", None, Some(s.as_str())),
        };
        st.execute(params![conversation_id, i as i64, t, m, s, at])?;
    }
    Ok(())
}

/// Writes a summary's derived columns (kind, depth, token count, time range,
/// descendant and token counts, file ids).
pub fn write_derived(tx: &Transaction, summary_id: &str, m: &Meta) -> Result<()> {
    let id = Value::from(summary_id.to_owned());
    tx.prepare_cached(&format!(
        "UPDATE summaries SET ({}) = (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) WHERE summary_id = ?1",
        derived::STORED_COLUMNS
    ))?
    .execute(params_from_iter(
        std::iter::once(id).chain(derived::stored_values(m)),
    ))?;
    Ok(())
}

/// Replaces a summary's text, its token count and its model (its full-text rows
/// and the columns derived from it are the caller's to update).
pub fn write_text(tx: &Transaction, summary_id: &str, content: &str, model: &str) -> Result<()> {
    tx.execute(
        "UPDATE summaries SET content = ?2, token_count = ?3, model = ?4 WHERE summary_id = ?1",
        params![summary_id, content, tokens::estimate(content), model],
    )?;
    Ok(())
}

/// Marks a conversation as changed now (`updated_at`).
pub fn touch_conversation(tx: &Transaction, conversation_id: i64) -> Result<()> {
    tx.execute(
        "UPDATE conversations SET updated_at = datetime('now') WHERE conversation_id = ?1",
        [conversation_id],
    )?;
    Ok(())
}

/// Replaces the context item at `ordinal` by `entries`, moving later items through
/// negative ordinals so the primary key never collides; ordinals end 0..n-1.
pub fn splice_context(
    tx: &Transaction,
    conversation_id: i64,
    ordinal: i64,
    entries: &[ContextEntry],
) -> Result<()> {
    tx.execute(
        "UPDATE context_items SET ordinal = -1 - ordinal WHERE conversation_id = ?1 AND ordinal > ?2",
        params![conversation_id, ordinal],
    )?;
    tx.execute(
        "DELETE FROM context_items WHERE conversation_id = ?1 AND ordinal = ?2",
        params![conversation_id, ordinal],
    )?;
    let mut st = tx.prepare_cached(
        "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, summary_id, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, datetime('now'))",
    )?;
    for (i, e) in entries.iter().enumerate() {
        let (t, m, s) = match e {
            ContextEntry::Message(m) => ("message", Some(*m), None),
            ContextEntry::Summary(s) => ("summary", None, Some(s.as_str())),
        };
        st.execute(params![conversation_id, ordinal + i as i64, t, m, s])?;
    }
    tx.execute(
        "UPDATE context_items SET ordinal = -1 - ordinal + ?2 WHERE conversation_id = ?1 AND ordinal < 0",
        params![conversation_id, entries.len() as i64 - 1],
    )?;
    dag::resequence(tx, conversation_id)
}

/// Deletes a summary with its links (as the derived node) and its FTS rows.
pub fn delete_summary(tx: &Transaction, id: &str, features: Features) -> Result<()> {
    tx.execute("DELETE FROM summary_parents WHERE summary_id = ?1", [id])?;
    tx.execute("DELETE FROM summary_messages WHERE summary_id = ?1", [id])?;
    super::summaries::delete_fts_rows(tx, id, features)?;
    tx.execute("DELETE FROM summaries WHERE summary_id = ?1", [id])?;
    Ok(())
}
