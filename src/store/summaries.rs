//! Summary rows and their DAG links (read side; compaction writes them).

use std::collections::{HashMap, HashSet};

use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row, Transaction};
use serde::Serialize;

use super::fts_check::summary_tables;
use super::Features;
use crate::error::{LcmError, Result};
use crate::tokens;

/// The kind of a summary: a leaf summarizes messages, a condensed summary
/// summarizes summaries. Stored and serialized as `leaf` / `condensed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum SummaryKind {
    /// Summarizes messages (depth 0).
    #[default]
    Leaf,
    /// Summarizes summaries (depth 1 and up).
    Condensed,
}

impl SummaryKind {
    /// The text stored in `summaries.kind` and sent to JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryKind::Leaf => "leaf",
            SummaryKind::Condensed => "condensed",
        }
    }

    /// Reads a stored `summaries.kind`; anything else is a corrupt row.
    pub fn from_stored(text: &str) -> Result<SummaryKind> {
        match text {
            "leaf" => Ok(SummaryKind::Leaf),
            "condensed" => Ok(SummaryKind::Condensed),
            other => Err(LcmError::internal(format!(
                "summaries.kind holds {other:?}, expected 'leaf' or 'condensed'"
            ))),
        }
    }
}

impl std::fmt::Display for SummaryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

// The store boundary: stored as text, read back with an error naming the value.
impl rusqlite::types::FromSql for SummaryKind {
    fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let text = v.as_str()?;
        SummaryKind::from_stored(text)
            .map_err(|e| rusqlite::types::FromSqlError::Other(e.message.into()))
    }
}

impl rusqlite::ToSql for SummaryKind {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

/// A `summaries` row.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRecord {
    /// `sum_` + 16 hex.
    pub summary_id: String,
    /// Owning conversation.
    pub conversation_id: i64,
    /// `leaf` or `condensed`.
    pub kind: SummaryKind,
    /// 0 for leaves, 1 + source depth for condensed nodes.
    pub depth: i64,
    /// Summary text.
    pub content: String,
    /// Estimated tokens of the content.
    pub token_count: i64,
    /// Earliest source time (ISO).
    pub earliest_at: Option<String>,
    /// Latest source time (ISO).
    pub latest_at: Option<String>,
    /// Number of summaries transitively below this one.
    pub descendant_count: i64,
    /// Σ tokens of the summaries below.
    pub descendant_token_count: i64,
    /// Σ tokens of the source messages below.
    pub source_message_token_count: i64,
    /// Creation time (SQLite UTC text).
    pub created_at: String,
    /// Large-file ids referenced by the sources.
    pub file_ids: Vec<String>,
    /// The summarizer model.
    pub model: String,
}

/// A summary without its text: what choosing and ordering summaries needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "PlannedRewrite")]
pub struct SummaryOutline {
    /// `sum_…`.
    pub summary_id: String,
    /// `leaf` or `condensed`.
    pub kind: SummaryKind,
    /// 0 for leaves.
    pub depth: i64,
    /// Source messages (leaf) or source summaries (condensed).
    pub child_count: i64,
    /// Current token count.
    pub token_count: i64,
    /// Earliest source time (ISO), if recorded.
    pub earliest_at: Option<String>,
    /// Latest source time (ISO), if recorded.
    pub latest_at: Option<String>,
    /// Creation time (SQLite UTC text).
    pub created_at: String,
}

impl SummaryOutline {
    /// Whether its sources are messages (depth 0) rather than summaries.
    pub fn is_leaf(&self) -> bool {
        self.depth <= 0
    }
}

/// Column list matching [`from_row`].
pub const COLUMNS: &str = "summary_id, conversation_id, kind, depth, content, token_count, earliest_at, latest_at, \
     descendant_count, descendant_token_count, source_message_token_count, created_at, file_ids, model";

/// Reads a row selected with [`COLUMNS`].
pub fn from_row(r: &Row) -> rusqlite::Result<SummaryRecord> {
    let file_ids: Option<String> = r.get(12)?;
    Ok(SummaryRecord {
        summary_id: r.get(0)?,
        conversation_id: r.get(1)?,
        kind: r.get(2)?,
        depth: r.get(3)?,
        content: r.get(4)?,
        token_count: r.get(5)?,
        earliest_at: r.get(6)?,
        latest_at: r.get(7)?,
        descendant_count: r.get(8)?,
        descendant_token_count: r.get(9)?,
        source_message_token_count: r.get(10)?,
        created_at: r.get(11)?,
        file_ids: file_ids
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
        model: r
            .get::<_, Option<String>>(13)?
            .unwrap_or_else(|| "unknown".into()),
    })
}

/// One summary by id.
pub fn get(conn: &Connection, id: &str) -> Result<Option<SummaryRecord>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM summaries WHERE summary_id = ?1"
        ))?
        .query_row([id], from_row)
        .optional()?)
}

/// Summaries by id, in the order given (unknown ids skipped); one query per 500.
pub fn by_ids(conn: &Connection, ids: &[String]) -> Result<Vec<SummaryRecord>> {
    let mut found: HashMap<String, SummaryRecord> = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(",");
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM summaries WHERE summary_id IN ({marks})"
        ))?;
        for row in stmt.query_map(params_from_iter(chunk.iter()), from_row)? {
            let s = row?;
            found.insert(s.summary_id.clone(), s);
        }
    }
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}

/// Every summary of a conversation, by depth then time.
pub fn list(conn: &Connection, conversation_id: i64) -> Result<Vec<SummaryRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM summaries WHERE conversation_id = ?1 ORDER BY depth, earliest_at, created_at, summary_id"
    ))?;
    let rows = stmt
        .query_map([conversation_id], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The source summaries of a condensed node, in link order.
pub fn source_summary_ids(conn: &Connection, id: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ?1 ORDER BY ordinal",
    )?;
    let rows = stmt
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(rows)
}

/// The summaries built from this one (the reverse edge).
pub fn derived_summary_ids(conn: &Connection, id: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT summary_id FROM summary_parents WHERE parent_summary_id = ?1 ORDER BY summary_id",
    )?;
    let rows = stmt
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(rows)
}

/// The source messages of a leaf, in link order.
pub fn source_message_ids(conn: &Connection, id: &str) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT message_id FROM summary_messages WHERE summary_id = ?1 ORDER BY ordinal",
    )?;
    let rows = stmt
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(rows)
}

/// Source-summary links of many summaries at once: id → sources in link order.
pub fn sources_of_many(conn: &Connection, ids: &[String]) -> Result<HashMap<String, Vec<String>>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for chunk in ids.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(",");
        let mut stmt = conn.prepare(&format!(
            "SELECT summary_id, parent_summary_id FROM summary_parents WHERE summary_id IN ({marks}) ORDER BY summary_id, ordinal"
        ))?;
        for row in stmt.query_map(params_from_iter(chunk.iter()), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })? {
            let (id, src) = row?;
            out.entry(id).or_default().push(src);
        }
    }
    Ok(out)
}

/// Every summary of a conversation as an outline, with its number of sources
/// (messages for leaves, summaries for condensed nodes), in no particular order.
pub fn outlines(conn: &Connection, conversation_id: i64) -> Result<Vec<SummaryOutline>> {
    let mut st = conn.prepare(
        "SELECT s.summary_id, s.kind, COALESCE(s.depth, 0), COALESCE(s.token_count, 0), s.earliest_at, s.latest_at,
                COALESCE(s.created_at, ''),
                CASE WHEN COALESCE(s.depth, 0) = 0
                     THEN (SELECT COUNT(*) FROM summary_messages sm WHERE sm.summary_id = s.summary_id)
                     ELSE (SELECT COUNT(*) FROM summary_parents sp WHERE sp.summary_id = s.summary_id) END
         FROM summaries s WHERE s.conversation_id = ?1",
    )?;
    let rows = st
        .query_map([conversation_id], |r| {
            Ok(SummaryOutline {
                summary_id: r.get(0)?,
                kind: r.get(1)?,
                depth: r.get(2)?,
                token_count: r.get(3)?,
                earliest_at: r.get(4)?,
                latest_at: r.get(5)?,
                created_at: r.get(6)?,
                child_count: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The summaries beneath `root` (its sources, recursively), `root` included.
pub fn subtree_ids(conn: &Connection, root: &str) -> Result<HashSet<String>> {
    let mut st = conn.prepare_cached(
        "WITH RECURSIVE sub(id) AS (
             SELECT ?1
             UNION
             SELECT sp.parent_summary_id FROM summary_parents sp JOIN sub ON sp.summary_id = sub.id
         ) SELECT id FROM sub",
    )?;
    let ids = st
        .query_map([root], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<HashSet<_>>>()?;
    Ok(ids)
}

/// Every leaf of a conversation ordered by the position of its first source
/// message (leaves without sources last, by time, then id).
pub fn leaves_in_source_order(conn: &Connection, conversation_id: i64) -> Result<Vec<String>> {
    let mut st = conn.prepare_cached(
        "SELECT s.summary_id
         FROM summaries s
         LEFT JOIN summary_messages sm ON sm.summary_id = s.summary_id
         LEFT JOIN messages m ON m.message_id = sm.message_id
         WHERE s.conversation_id = ?1 AND COALESCE(s.depth, 0) = 0
         GROUP BY s.summary_id
         ORDER BY MIN(m.seq) IS NULL, MIN(m.seq), COALESCE(s.earliest_at, s.created_at), s.summary_id",
    )?;
    let ids = st
        .query_map([conversation_id], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ids)
}

/// Replaces a summary's text: `content`, `token_count` (and the token sums of the
/// summaries above it) and its full-text rows, in one IMMEDIATE transaction. A
/// summary no longer in the conversation is `LCM_NOT_FOUND`.
pub fn replace_content(
    conn: &mut Connection,
    conversation_id: i64,
    id: &str,
    content: &str,
    features: Features,
) -> Result<()> {
    super::tx::write_tx(conn, |tx| {
        update_content(tx, conversation_id, id, content, features)
    })
}

/// [`replace_content`] only while the stored text is still `expected` (the text an
/// operator reviewed the new one against); otherwise `LCM_INVALID_INPUT` and
/// nothing is written. A summary no longer in the conversation is `LCM_NOT_FOUND`.
pub fn replace_reviewed_content(
    conn: &mut Connection,
    conversation_id: i64,
    id: &str,
    expected: &str,
    content: &str,
    features: Features,
) -> Result<()> {
    super::tx::write_tx(conn, |tx| {
        let now: Option<String> = tx
            .query_row(
                "SELECT content FROM summaries WHERE summary_id = ?1 AND conversation_id = ?2",
                rusqlite::params![id, conversation_id],
                |r| r.get(0),
            )
            .optional()?;
        match now {
            None => Err(LcmError::not_found(format!(
                "summary {id} is no longer in conversation {conversation_id}"
            ))),
            Some(c) if c != expected => Err(LcmError::invalid(format!(
                "{id} changed since it was rewritten; nothing was written (rewrite it again)"
            ))),
            Some(_) => update_content(tx, conversation_id, id, content, features),
        }
    })
}

/// Replaces a summary's text in place (its id, links and context items stay): the
/// content, its token count, its full-text rows, and the `descendant_token_count`
/// of every summary built on it, which changes by the same delta — so invariant 3
/// (stored metadata equals its recomputation) holds after the rewrite.
pub fn update_content(
    tx: &Transaction,
    conversation_id: i64,
    id: &str,
    content: &str,
    features: Features,
) -> Result<()> {
    let old: Option<i64> = tx
        .query_row(
            "SELECT token_count FROM summaries WHERE summary_id = ?1 AND conversation_id = ?2",
            params![id, conversation_id],
            |r| r.get(0),
        )
        .optional()?;
    let Some(old) = old else {
        return Err(LcmError::not_found(format!(
            "summary {id} is no longer in conversation {conversation_id}"
        )));
    };
    let new = tokens::estimate(content);
    tx.execute(
        "UPDATE summaries SET content = ?1, token_count = ?2 WHERE summary_id = ?3",
        params![content, new, id],
    )?;
    if new != old {
        tx.execute(
            "WITH RECURSIVE up(id) AS (
               SELECT summary_id FROM summary_parents WHERE parent_summary_id = ?1
               UNION SELECT sp.summary_id FROM summary_parents sp JOIN up ON sp.parent_summary_id = up.id)
             UPDATE summaries SET descendant_token_count = descendant_token_count + ?2
             WHERE summary_id IN (SELECT id FROM up)",
            params![id, new - old],
        )?;
    }
    index_summary(tx, id, content, features)
}

/// The full-text rows of new summaries, `(id, content)`: one INSERT per table for
/// all of them (the index takes them as one segment). A new summary's id is fresh,
/// so there is nothing to replace; [`index_summary`] rewrites an existing one.
pub fn index_new_summaries(
    tx: &Transaction,
    rows: &[(&str, &str)],
    features: Features,
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let json = serde_json::to_string(rows)?;
    if features.fts5 {
        tx.prepare_cached(
            "INSERT INTO summaries_fts (summary_id, content)
             SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1)",
        )?
        .execute([&json])?;
    }
    if features.trigram {
        tx.prepare_cached(
            "INSERT INTO summaries_fts_cjk (summary_id, content)
             SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1)",
        )?
        .execute([&json])?;
    }
    merge_after_write(tx, features)
}

/// Writes (or rewrites) a summary's rows in the full-text tables.
pub fn index_summary(tx: &Transaction, id: &str, content: &str, features: Features) -> Result<()> {
    delete_fts_rows(tx, id, features)?;
    if features.fts5 {
        tx.prepare_cached("INSERT INTO summaries_fts (summary_id, content) VALUES (?1, ?2)")?
            .execute(params![id, content])?;
    }
    if features.trigram {
        tx.prepare_cached("INSERT INTO summaries_fts_cjk (summary_id, content) VALUES (?1, ?2)")?
            .execute(params![id, content])?;
    }
    merge_after_write(tx, features)
}

/// Pages of index merging (FTS5's `merge` command) each write of summaries'
/// full-text rows ends with, in each summary table. Every write adds a segment
/// to each table, and every search opens each of its terms in every segment.
/// FTS5's own merging works in proportion to what a write adds, so with one
/// summary per transaction (compaction after each turn) segments pile up, and a
/// regex walk over summaries spent much of its time opening them. This bounds
/// the extra merging a write does: never more than 64 pages (256 KiB) per table
/// whatever its size, enough to keep the segment count low
/// (docs/decisions/summary-search.md).
pub const MERGE_PAGES_PER_WRITE: i64 = 64;

/// Ends a write of summaries' full-text rows (see [`MERGE_PAGES_PER_WRITE`]).
fn merge_after_write(tx: &Transaction, features: Features) -> Result<()> {
    for table in summary_tables(features) {
        tx.prepare_cached(&format!(
            "INSERT INTO {table} ({table}, rank) VALUES ('merge', ?1)"
        ))?
        .execute([MERGE_PAGES_PER_WRITE])?;
    }
    Ok(())
}

/// Deletes a summary's rows from the full-text tables. Its rows are found in each
/// table's stored rows ([`super::schema::stored_rows`], the id in `c0`): a delete
/// by the unindexed `summary_id` column would read every row's text.
pub fn delete_fts_rows(tx: &Transaction, id: &str, features: Features) -> Result<()> {
    for table in summary_tables(features) {
        let stored = super::schema::stored_rows(table);
        tx.prepare_cached(&format!(
            "DELETE FROM {table} WHERE rowid IN (SELECT id FROM {stored} WHERE c0 = ?1)"
        ))?
        .execute([id])?;
    }
    Ok(())
}

#[cfg(test)]
mod kind_tests {
    use super::SummaryKind;
    use crate::store::messages::ContextItemType;

    #[test]
    fn kinds_serialize_and_store_as_before() {
        for (k, text) in [
            (SummaryKind::Leaf, "leaf"),
            (SummaryKind::Condensed, "condensed"),
        ] {
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{text}\""));
            assert_eq!(SummaryKind::from_stored(text).unwrap(), k);
        }
        for (t, text) in [
            (ContextItemType::Message, "message"),
            (ContextItemType::Summary, "summary"),
        ] {
            assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{text}\""));
            assert_eq!(ContextItemType::from_stored(text).unwrap(), t);
        }
    }

    #[test]
    fn an_unknown_stored_kind_is_an_error_naming_it() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let err = conn
            .query_row("SELECT 'branch'", [], |r| r.get::<_, SummaryKind>(0))
            .unwrap_err();
        assert!(
            err.to_string().contains("summaries.kind holds \"branch\""),
            "{err}"
        );
        let err = conn
            .query_row("SELECT 'file'", [], |r| r.get::<_, ContextItemType>(0))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("context_items.item_type holds \"file\""),
            "{err}"
        );
    }
}
