//! The reads of `status`: the database's size by table, conversation counts, one
//! conversation's summaries by depth and its newest summary.

use rusqlite::{Connection, OptionalExtension};

use crate::error::Result;

/// Bytes used by one table, its indexes included.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct TableSize {
    /// The table (an index counts toward its table).
    pub name: String,
    /// Bytes of its pages.
    pub bytes: i64,
}

/// Page counts of the main database file.
#[derive(Debug, Clone, Default)]
pub struct Pages {
    /// Bytes per page.
    pub page_size: i64,
    /// Pages in the file.
    pub page_count: i64,
    /// Unused pages (reclaimed by VACUUM).
    pub freelist_count: i64,
}

/// `page_size`, `page_count` and `freelist_count` of the main database.
pub fn pages(conn: &Connection) -> Result<Pages> {
    let get =
        |p: &str| -> Result<i64> { Ok(conn.query_row(&format!("PRAGMA {p}"), [], |r| r.get(0))?) };
    Ok(Pages {
        page_size: get("page_size")?,
        page_count: get("page_count")?,
        freelist_count: get("freelist_count")?,
    })
}

/// The `most` largest tables by bytes (indexes counted toward their table), from
/// the `dbstat` virtual table; `None` when this SQLite lacks it. Reads every page
/// of the file: proportional to its size.
pub fn largest_tables(conn: &Connection, most: usize) -> Result<Option<Vec<TableSize>>> {
    let sql = "SELECT COALESCE(m.tbl_name, d.name) AS t, SUM(d.pgsize) AS bytes \
               FROM dbstat AS d LEFT JOIN sqlite_schema AS m ON m.name = d.name \
               GROUP BY t ORDER BY bytes DESC, t LIMIT ?1";
    let mut stmt = match conn.prepare(sql) {
        Ok(s) => s,
        Err(e) if e.to_string().contains("no such table") => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let rows = stmt
        .query_map([most as i64], |r| {
            Ok(TableSize {
                name: r.get(0)?,
                bytes: r.get(1)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Some(rows))
}

/// Conversations by state: `(active, archived)`.
pub fn conversation_counts(conn: &Connection) -> Result<(i64, i64)> {
    Ok(conn
        .prepare_cached(
            "SELECT COALESCE(SUM(active = 1), 0), COALESCE(SUM(active <> 1), 0) FROM conversations",
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// Summaries of one depth in a conversation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct DepthCount {
    /// Depth (0: leaves).
    pub depth: i64,
    /// Summaries of that depth.
    pub count: i64,
    /// How many of them are in the context list.
    pub in_context: i64,
}

/// A conversation's summaries per depth, shallowest first.
pub fn summaries_by_depth(conn: &Connection, conversation_id: i64) -> Result<Vec<DepthCount>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.depth, COUNT(*), COUNT(c.summary_id) FROM summaries AS s \
         LEFT JOIN context_items AS c ON c.conversation_id = s.conversation_id AND c.summary_id = s.summary_id \
         WHERE s.conversation_id = ?1 GROUP BY s.depth ORDER BY s.depth",
    )?;
    let rows = stmt
        .query_map([conversation_id], |r| {
            Ok(DepthCount {
                depth: r.get(0)?,
                count: r.get(1)?,
                in_context: r.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// When the conversation's newest summary was written (SQLite UTC text).
pub fn newest_summary_at(conn: &Connection, conversation_id: i64) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT MAX(created_at) FROM summaries WHERE conversation_id = ?1")?
        .query_row([conversation_id], |r| r.get::<_, Option<String>>(0))
        .optional()?
        .flatten())
}

/// Whether the conversation has a context gap left by a compaction that did not end.
pub fn has_gap(conn: &Connection, conversation_id: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM lcm_context_gaps WHERE conversation_id = ?1")?
        .query_row([conversation_id], |r| r.get::<_, i64>(0))
        .optional()?
        .is_some())
}
