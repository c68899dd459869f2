//! `large_files` rows: what was externalized, where its content lives and how to
//! put it back inline. The files themselves are `largefiles::storage`'s.

use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// How an externalized payload is put back inline: the exact opening and closing
/// tags around the file content, and the exact reference text that replaced them.
/// Stored as JSON in `large_files.lcm_source`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// Text before the file content (the `<file …>` tag; empty for tool output).
    pub open: String,
    /// Text after the file content (`</file>`; empty for tool output).
    pub close: String,
    /// The reference text stored in the message instead.
    pub reference: String,
}

/// A `large_files` row.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct LargeFileRecord {
    /// `file_` + 16 hex.
    pub file_id: String,
    /// Owning conversation.
    pub conversation_id: i64,
    /// Name from the `<file name=…>` attribute.
    pub file_name: Option<String>,
    /// MIME type from the `mime` attribute.
    pub mime_type: Option<String>,
    /// UTF-8 byte size of the content.
    pub byte_size: Option<i64>,
    /// Number of lines.
    pub line_count: Option<i64>,
    /// Absolute path of the stored content.
    pub storage_uri: String,
    /// Deterministic exploration summary.
    pub exploration_summary: Option<String>,
    /// Creation time (SQLite UTC text).
    pub created_at: String,
    /// Inline restoration data (absent for rows written by the reference plugin).
    #[serde(skip)]
    pub source: Option<Source>,
}

const COLUMNS: &str = "file_id, conversation_id, file_name, mime_type, byte_size, line_count, storage_uri, exploration_summary, created_at, lcm_source";

fn from_row(r: &Row) -> rusqlite::Result<LargeFileRecord> {
    let source: Option<String> = r.get(9)?;
    Ok(LargeFileRecord {
        file_id: r.get(0)?,
        conversation_id: r.get(1)?,
        file_name: r.get(2)?,
        mime_type: r.get(3)?,
        byte_size: r.get(4)?,
        line_count: r.get(5)?,
        storage_uri: r.get(6)?,
        exploration_summary: r.get(7)?,
        created_at: r.get(8)?,
        source: source.and_then(|s| serde_json::from_str(&s).ok()),
    })
}

/// One row by id.
pub fn get(conn: &Connection, file_id: &str) -> Result<Option<LargeFileRecord>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM large_files WHERE file_id = ?1"
        ))?
        .query_row([file_id], from_row)
        .optional()?)
}

/// Every row of a conversation, oldest first (the browser's Large files screen).
pub fn list_in(conn: &Connection, conversation_id: i64) -> Result<Vec<LargeFileRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM large_files WHERE conversation_id = ?1 ORDER BY created_at, file_id"
    ))?;
    let rows = stmt
        .query_map([conversation_id], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Every row of a conversation that carries restoration data.
pub fn restorable_in(conn: &Connection, conversation_id: i64) -> Result<Vec<LargeFileRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM large_files WHERE conversation_id = ?1 AND lcm_source IS NOT NULL"
    ))?;
    let rows = stmt
        .query_map([conversation_id], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Records a freshly written file: replaces a stale row of the same id (its file
/// gone from disk), so the row points at the new file.
pub fn replace(conn: &Connection, rec: &LargeFileRecord) -> Result<()> {
    conn.prepare_cached("DELETE FROM large_files WHERE file_id = ?1")?
        .execute([&rec.file_id])?;
    insert(conn, rec)
}

/// Every row of a conversation.
pub fn all_in(conn: &Connection, conversation_id: i64) -> Result<Vec<LargeFileRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM large_files WHERE conversation_id = ?1 ORDER BY file_id"
    ))?;
    let rows = stmt
        .query_map([conversation_id], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Every row of the database, by conversation and id.
pub fn all(conn: &Connection) -> Result<Vec<LargeFileRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM large_files ORDER BY conversation_id, file_id"
    ))?;
    let rows = stmt
        .query_map([], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Points a row at its file's current path (doctor's relocation repair).
pub fn set_storage_uri(conn: &Connection, file_id: &str, storage_uri: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("UPDATE large_files SET storage_uri = ?2 WHERE file_id = ?1")?
        .execute(params![file_id, storage_uri])?
        > 0)
}

/// Inserts a row unless one with the same id exists (replays reuse their file).
pub fn insert(conn: &Connection, rec: &LargeFileRecord) -> Result<()> {
    let source = rec.source.as_ref().map(serde_json::to_string).transpose()?;
    conn.prepare_cached(
        "INSERT OR IGNORE INTO large_files (file_id, conversation_id, file_name, mime_type, byte_size, line_count, storage_uri, exploration_summary, created_at, lcm_source)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        rec.file_id,
        rec.conversation_id,
        rec.file_name,
        rec.mime_type,
        rec.byte_size,
        rec.line_count,
        rec.storage_uri,
        rec.exploration_summary,
        rec.created_at,
        source
    ])?;
    Ok(())
}

/// The number of `large_files` rows of a conversation.
pub fn count_in(conn: &Connection, conversation_id: i64) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT COUNT(*) FROM large_files WHERE conversation_id = ?1")?
        .query_row([conversation_id], |r| r.get(0))?)
}
