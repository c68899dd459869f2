//! Reads of the context list for assembly. The list is streamed newest first with
//! each item's message or summary (and a condensed node's sources) in the same
//! row, so the reader stops at the first item it no longer wants: the oldest items
//! of a long conversation are never touched. Message parts are then read for the
//! chosen messages in one more query ([`super::messages::parts_of`]). Every
//! statement is cached.

use std::collections::HashSet;

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::error::Result;
use crate::message::rebuild::StoredMessage;

/// The fields of a summary its presentation needs, as stored.
#[derive(Debug, Clone, Default)]
pub struct ContextSummary {
    /// `sum_…` id.
    pub summary_id: String,
    /// `leaf` or `condensed`.
    pub kind: crate::store::summaries::SummaryKind,
    /// 0 for leaves.
    pub depth: i64,
    /// Summaries transitively below this one.
    pub descendant_count: i64,
    /// Earliest source time as stored (ISO).
    pub earliest_at: Option<String>,
    /// Latest source time as stored (ISO).
    pub latest_at: Option<String>,
    /// When the summary row was written (SQLite UTC text).
    pub created_at: Option<String>,
    /// Source summaries of a condensed node, in link order.
    pub parents: Vec<String>,
    /// The summary text.
    pub content: String,
}

/// A message's stored columns as streamed, borrowed from the row (a reader that
/// already has the message rebuilt compares them without copying).
#[derive(Debug, Clone, Copy)]
pub struct MessageColumns<'r> {
    /// messages.message_id
    pub message_id: i64,
    /// DB role.
    pub role: &'r str,
    /// Plain-text content column.
    pub content: &'r str,
    /// Our envelope, when this engine wrote the row.
    pub envelope: Option<&'r str>,
}

impl MessageColumns<'_> {
    /// The columns as an owned message without parts.
    pub fn to_stored(self) -> StoredMessage {
        StoredMessage {
            message_id: self.message_id,
            role: self.role.to_owned(),
            content: self.content.to_owned(),
            envelope: self.envelope.map(str::to_owned),
            created_at: None,
            parts: Vec::new(),
        }
    }
}

/// One context item with its row, as streamed (valid while the row is).
#[derive(Debug)]
pub struct ContextRow<'r> {
    /// Position in the context list.
    pub ordinal: i64,
    /// True for `message` items (even when the message row is missing).
    pub is_message: bool,
    /// A message item with a message id: what the fresh-tail rule counts.
    pub is_raw: bool,
    /// The message's DB role.
    pub role: Option<&'r str>,
    /// Stored token count of the message or summary (0 when missing).
    pub tokens: i64,
    /// The message's columns (None for summaries and missing rows).
    pub message: Option<MessageColumns<'r>>,
    /// The summary with its sources (None for messages and missing rows).
    pub summary: Option<ContextSummary>,
    /// False for a condensed summary whose sources were not read (see
    /// [`newest_first`]); its `parents` is then empty.
    pub parents_loaded: bool,
}

/// Runs `read` on one consistent snapshot of the database (a read transaction), so
/// every read of one assembly sees the same state.
pub fn snapshot<T>(conn: &Connection, read: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    let tx = conn.unchecked_transaction()?;
    let out = read(&tx)?;
    tx.finish()?;
    Ok(out)
}

/// Streams a conversation's context list newest first into `visit` until it
/// returns false. The sources of the condensed summaries in `known` (ids whose
/// sources the caller already has) are not read: their rows say
/// `parents_loaded: false`.
pub fn newest_first(
    conn: &Connection,
    conversation_id: i64,
    known: &[String],
    mut visit: impl FnMut(ContextRow<'_>) -> Result<bool>,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT ci.ordinal, ci.item_type,
                m.message_id, m.role, m.token_count, m.content, m.lcm_envelope,
                s.summary_id, s.kind, s.depth, s.descendant_count, s.earliest_at, s.latest_at,
                s.content, s.token_count,
                CASE WHEN s.kind = 'condensed' AND s.summary_id NOT IN (SELECT value FROM json_each(?2)) THEN
                  (SELECT json_group_array(json_array(ordinal, parent_summary_id))
                   FROM summary_parents WHERE summary_id = s.summary_id)
                END,
                ci.message_id IS NOT NULL, s.created_at
         FROM context_items ci
         LEFT JOIN messages m ON m.message_id = ci.message_id AND ci.item_type = 'message'
         LEFT JOIN summaries s ON s.summary_id = ci.summary_id AND ci.item_type = 'summary'
         WHERE ci.conversation_id = ?1
         ORDER BY ci.ordinal DESC",
    )?;
    let mut rows = stmt.query(params![conversation_id, serde_json::to_string(known)?])?;
    while let Some(r) = rows.next()? {
        if !visit(read_row(r)?)? {
            break;
        }
    }
    Ok(())
}

/// A text column borrowed from the row (an error for a blob or invalid UTF-8, as
/// reading it as a `String` gives).
fn text<'r>(r: &'r Row, i: usize) -> Result<Option<&'r str>> {
    let v = r.get_ref(i)?;
    let ty = v.data_type();
    Ok(v.as_str_or_null()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, ty, Box::new(e)))?)
}

/// Reads one row of [`newest_first`].
fn read_row<'r>(r: &'r Row) -> Result<ContextRow<'r>> {
    let ordinal: i64 = r.get(0)?;
    let is_message = r.get_ref(1)?.as_str().ok() == Some("message");
    let message_id: Option<i64> = r.get(2)?;
    let role = text(r, 3)?;
    let message = match (message_id, role) {
        (Some(message_id), Some(role)) => Some(MessageColumns {
            message_id,
            role,
            content: text(r, 5)?.unwrap_or_default(),
            envelope: text(r, 6)?,
        }),
        _ => None,
    };
    let links: Option<String> = r.get(15)?;
    let condensed = r.get_ref(8)?.as_str_or_null().ok().flatten() == Some("condensed");
    let parents_loaded = !condensed || links.is_some();
    let summary = match r.get::<_, Option<String>>(7)? {
        Some(summary_id) => Some(ContextSummary {
            summary_id,
            kind: r.get(8)?,
            depth: r.get(9)?,
            descendant_count: r.get(10)?,
            earliest_at: r.get(11)?,
            latest_at: r.get(12)?,
            created_at: r.get(17)?,
            content: r.get(13)?,
            parents: parents_in_link_order(links.as_deref()),
        }),
        None => None,
    };
    let tokens = if is_message {
        r.get::<_, Option<i64>>(4)?
    } else {
        r.get::<_, Option<i64>>(14)?
    };
    Ok(ContextRow {
        ordinal,
        is_message,
        is_raw: is_message && r.get::<_, bool>(16)?,
        role,
        tokens: tokens.unwrap_or(0),
        message,
        summary,
        parents_loaded,
    })
}

/// Source ids from `[[ordinal, id], …]` (aggregated without a sort, which would
/// cost a sorter per row), in link order.
fn parents_in_link_order(json: Option<&str>) -> Vec<String> {
    let mut links: Vec<(i64, String)> = json
        .and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default();
    links.sort_unstable_by_key(|(ordinal, _)| *ordinal);
    links.into_iter().map(|(_, id)| id).collect()
}

/// Whether a user message sits among the context items before ordinal `before`.
pub fn user_before(conn: &Connection, conversation_id: i64, before: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM context_items ci JOIN messages m ON m.message_id = ci.message_id
             WHERE ci.conversation_id = ?1 AND ci.ordinal < ?2 AND ci.item_type = 'message' AND m.role = 'user')",
        )?
        .query_row(params![conversation_id, before], |r| r.get(0))?)
}

/// The length of a conversation's context list: its last ordinal + 1 (0 when
/// empty), one seek into the `(conversation_id, ordinal)` key. Ordinals are
/// `0..n` outside a running compaction phase (which closes the gaps it opens
/// before it ends), so this is the number of items; a `COUNT(*)` walked every
/// item instead (two per `assemble`: 64 % of an assembly over 612k items).
pub fn list_length(conn: &Connection, conversation_id: i64) -> Result<i64> {
    let last: Option<i64> = conn
        .prepare_cached(LAST_ORDINAL)?
        .query_row([conversation_id], |r| r.get(0))
        .optional()?;
    Ok(last.map_or(0, |o| o + 1))
}

const LAST_ORDINAL: &str =
    "SELECT ordinal FROM context_items WHERE conversation_id = ?1 ORDER BY ordinal DESC LIMIT 1";

/// Whether the context list holds any summary item.
pub fn has_summary_item(conn: &Connection, conversation_id: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM context_items WHERE conversation_id = ?1 AND item_type = 'summary')",
        )?
        .query_row([conversation_id], |r| r.get(0))?)
}

/// Whether the context list holds any message item.
pub fn has_message_item(conn: &Connection, conversation_id: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM context_items WHERE conversation_id = ?1 AND item_type = 'message')",
        )?
        .query_row([conversation_id], |r| r.get(0))?)
}

/// Which of `ids` are carried by a tool-result message among the context items
/// before ordinal `before` (the part of the list assembly did not load).
pub fn tool_results_before(
    conn: &Connection,
    conversation_id: i64,
    before: i64,
    ids: &[String],
) -> Result<HashSet<String>> {
    if ids.is_empty() || before <= 0 {
        return Ok(HashSet::new());
    }
    let list = serde_json::to_string(ids)?;
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT p.tool_call_id
         FROM context_items ci
         JOIN messages m ON m.message_id = ci.message_id
         JOIN message_parts p ON p.message_id = ci.message_id
         WHERE ci.conversation_id = ?1 AND ci.ordinal < ?2 AND ci.item_type = 'message'
           AND m.role = 'tool' AND p.tool_call_id IN (SELECT value FROM json_each(?3))",
    )?;
    let found = stmt
        .query_map(params![conversation_id, before, list], |r| {
            r.get::<_, String>(0)
        })?
        .collect::<rusqlite::Result<HashSet<String>>>()?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// The length comes from one seek, not a walk over the items.
    #[test]
    fn list_length_reads_one_row_whatever_the_length() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        let add = |conv: i64, n: i64| {
            for o in 0..n {
                conn.execute(
                    "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id) VALUES (?1, ?2, 'message', ?2 + 1)",
                    params![conv, o],
                )
                .unwrap();
            }
        };
        add(1, 5_000);
        add(2, 3);
        assert_eq!(list_length(&conn, 1).unwrap(), 5_000);
        assert_eq!(list_length(&conn, 2).unwrap(), 3);
        assert_eq!(list_length(&conn, 3).unwrap(), 0);
        let mut stmt = conn.prepare(LAST_ORDINAL).unwrap();
        let _: i64 = stmt.query_row([1], |r| r.get(0)).unwrap();
        let steps = stmt.get_status(StatementStatus::VmStep);
        assert!(steps < 50, "{steps} steps for 5,000 items");
    }
}
