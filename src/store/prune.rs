//! `/new`'s context pruning: context items taken out of the context list are moved
//! to `lcm_pruned_context` (nothing else changes: messages, summaries and links
//! stay, so recall still finds them and the doctor still counts them as covered).

use rusqlite::{params, Connection, Transaction};

use super::dag;
use crate::error::Result;

/// A context item as the prune reads it: ordinal, type, message id, summary id,
/// summary depth.
type Item = (i64, String, Option<i64>, Option<String>, Option<i64>);

/// What a prune took out of the context list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Message items removed.
    pub messages: usize,
    /// Summary items removed.
    pub summaries: usize,
    /// Items left in the context list.
    pub kept: usize,
}

/// Removes every message item and every summary item of depth < `retain_depth`
/// from the conversation's context list (`retain_depth < 0` removes nothing,
/// `0` only the messages); call inside a write transaction. The removed items are
/// recorded in order after the conversation's earlier prunes; the remaining items
/// are renumbered 0..n-1.
pub fn prune_context(
    conn: &Transaction,
    conversation_id: i64,
    retain_depth: i64,
) -> Result<Pruned> {
    let items: Vec<Item> = conn
        .prepare_cached(
            "SELECT ci.ordinal, ci.item_type, ci.message_id, ci.summary_id, s.depth
             FROM context_items ci LEFT JOIN summaries s ON s.summary_id = ci.summary_id
             WHERE ci.conversation_id = ?1 ORDER BY ci.ordinal",
        )?
        .query_map([conversation_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Pruned::default();
    if retain_depth < 0 {
        out.kept = items.len();
        return Ok(out);
    }
    let mut position: i64 = conn
        .prepare_cached(
            "SELECT COALESCE(MAX(position) + 1, 0) FROM lcm_pruned_context WHERE conversation_id = ?1",
        )?
        .query_row([conversation_id], |r| r.get(0))?;
    let mut record = conn.prepare_cached(
        "INSERT INTO lcm_pruned_context (conversation_id, position, item_type, message_id, summary_id, retain_depth)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut remove = conn
        .prepare_cached("DELETE FROM context_items WHERE conversation_id = ?1 AND ordinal = ?2")?;
    for (ordinal, kind, message_id, summary_id, depth) in items {
        let goes = match kind.as_str() {
            "message" => true,
            // A summary item whose row is missing has no depth: it stays for the doctor.
            _ => depth.is_some_and(|d| d < retain_depth),
        };
        if !goes {
            out.kept += 1;
            continue;
        }
        record.execute(params![
            conversation_id,
            position,
            kind,
            message_id,
            summary_id,
            retain_depth
        ])?;
        remove.execute(params![conversation_id, ordinal])?;
        position += 1;
        if kind == "message" {
            out.messages += 1;
        } else {
            out.summaries += 1;
        }
    }
    if out.messages + out.summaries > 0 {
        dag::resequence(conn, conversation_id)?;
    }
    Ok(out)
}

/// Pruned items of a conversation in prune order: `(message id, summary id)`.
pub fn pruned_items(
    conn: &Connection,
    conversation_id: i64,
) -> Result<Vec<(Option<i64>, Option<String>)>> {
    let rows = conn
        .prepare_cached(
            "SELECT message_id, summary_id FROM lcm_pruned_context WHERE conversation_id = ?1 ORDER BY position",
        )?
        .query_map([conversation_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}
