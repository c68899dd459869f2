//! What a database file holds, read without the engine: its conversations, the
//! optional features its schema uses, and what it lacks of the current schema.

use rusqlite::{Connection, OptionalExtension};

use super::Features;
use crate::error::Result;

/// Every conversation id, ascending.
pub fn conversation_ids(conn: &Connection) -> Result<Vec<i64>> {
    let mut stmt =
        conn.prepare("SELECT conversation_id FROM conversations ORDER BY conversation_id")?;
    let ids = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(ids)
}

/// Whether the schema has a table of this name.
pub fn has_table(conn: &Connection, name: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
        .is_some())
}

/// The optional features a database file uses (from its schema).
pub fn features_of(conn: &Connection) -> Result<Features> {
    Ok(Features {
        fts5: has_table(conn, "summaries_fts")? && has_table(conn, "messages_fts")?,
        trigram: has_table(conn, "summaries_fts_cjk")?,
    })
}

/// What the file lacks of the current schema (what the engine's migration
/// produces), by name; empty when it is current.
pub fn schema_gaps(conn: &Connection) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    for (table, column) in [
        ("summaries", "model"),
        ("summaries", "file_ids"),
        ("summaries", "descendant_token_count"),
        ("messages", "lcm_envelope"),
    ] {
        let n: i64 = conn.query_row(
            &format!("SELECT COUNT(*) FROM pragma_table_info('{table}') WHERE name = ?1"),
            [column],
            |r| r.get(0),
        )?;
        if n == 0 {
            missing.push(format!("{table}.{column}"));
        }
    }
    let fts: Option<String> = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'messages_fts'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if fts.is_some_and(|s| !s.contains("content='messages'")) {
        missing.push("the external-content messages_fts".to_owned());
    }
    Ok(missing)
}
