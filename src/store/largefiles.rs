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
        "INSERT OR IGNORE INTO large_files (file_id, conversation_id, file_name, mime_type, byte_size, line_count, storage_uri, exploration_summary, created_at, lcm_source, lcm_summary_kind)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, CASE WHEN ?10 IS NULL THEN NULL ELSE 'deterministic' END)",
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

/// `large_files.lcm_summary_kind` of a summary written at ingest (rows written
/// before the column existed, with restoration data, count as this kind too).
pub const SUMMARY_DETERMINISTIC: &str = "deterministic";
/// `large_files.lcm_summary_kind` of a summary the large-file model wrote.
pub const SUMMARY_MODEL: &str = "model";

/// Which kind wrote a row's exploration summary (`deterministic`, `model`, or
/// `None` for a row without restoration data, e.g. the reference plugin's).
pub fn summary_kind(conn: &Connection, file_id: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT CASE WHEN lcm_source IS NULL THEN lcm_summary_kind
                         ELSE COALESCE(lcm_summary_kind, 'deterministic') END
             FROM large_files WHERE file_id = ?1",
        )?
        .query_row([file_id], |r| r.get(0))
        .optional()?
        .flatten())
}

/// Rows whose exploration summary is still the deterministic one and that are due
/// for a model-written one: restorable, fewer than `max_attempts` failed attempts,
/// retry time reached (`now_ms`, Unix ms); of one conversation when given; oldest
/// first, at most `limit`.
pub fn due_for_model_summary(
    conn: &Connection,
    conversation_id: Option<i64>,
    now_ms: i64,
    max_attempts: i64,
    limit: usize,
) -> Result<Vec<LargeFileRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM large_files
         WHERE lcm_source IS NOT NULL
           AND COALESCE(lcm_summary_kind, 'deterministic') = 'deterministic'
           AND lcm_summary_attempts < ?2
           AND COALESCE(lcm_summary_retry_at, 0) <= ?3
           AND (?1 IS NULL OR conversation_id = ?1)
         ORDER BY created_at, file_id LIMIT ?4"
    ))?;
    let rows = stmt
        .query_map(
            params![conversation_id, max_attempts, now_ms, limit as i64],
            from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Rows still waiting for a model-written summary (any retry time), of one
/// conversation when given.
pub fn count_awaiting_model_summary(
    conn: &Connection,
    conversation_id: Option<i64>,
    max_attempts: i64,
) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT COUNT(*) FROM large_files
             WHERE lcm_source IS NOT NULL
               AND COALESCE(lcm_summary_kind, 'deterministic') = 'deterministic'
               AND lcm_summary_attempts < ?2
               AND (?1 IS NULL OR conversation_id = ?1)",
        )?
        .query_row(params![conversation_id, max_attempts], |r| r.get(0))?)
}

/// Records a failed model attempt: one more attempt, the next one not before
/// `retry_at(attempts)` (Unix ms). Returns the attempts made so far (0 when the
/// row is gone).
pub fn record_model_summary_failure(
    conn: &Connection,
    file_id: &str,
    retry_at: impl Fn(i64) -> i64,
) -> Result<i64> {
    let attempts: Option<i64> = conn
        .prepare_cached(
            "UPDATE large_files SET lcm_summary_attempts = lcm_summary_attempts + 1
             WHERE file_id = ?1 RETURNING lcm_summary_attempts",
        )?
        .query_row([file_id], |r| r.get(0))
        .optional()?;
    let Some(attempts) = attempts else {
        return Ok(0);
    };
    conn.prepare_cached("UPDATE large_files SET lcm_summary_retry_at = ?2 WHERE file_id = ?1")?
        .execute(params![file_id, retry_at(attempts)])?;
    Ok(attempts)
}

/// What [`apply_model_summary`] changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SummaryUpgrade {
    /// Whether the row took the new summary (false: it changed meanwhile).
    pub applied: bool,
    /// Messages whose stored text now carries the new reference: id and new
    /// `messages.content`.
    pub messages: Vec<(i64, String)>,
}

/// Replaces a row's deterministic exploration summary by a model-written one, in
/// the caller's transaction: the row's `exploration_summary`, its restoration
/// data's reference text (`lcm_source.reference`), and every stored message of its
/// conversation that embeds the old reference (`messages.content` and its token
/// count, the text columns of its parts, the raw blocks kept in part metadata), with
/// the message's full-text row when it is already indexed. Messages already
/// summarized into the DAG are updated too: `getMessages` restores a reference only
/// when it is the row's current one. Nothing changes (`applied: false`) when the
/// row no longer holds `old_reference` or is no longer deterministic.
pub fn apply_model_summary(
    conn: &Connection,
    file_id: &str,
    old_reference: &str,
    summary: &str,
    new_reference: &str,
) -> Result<SummaryUpgrade> {
    let Some(rec) = get(conn, file_id)? else {
        return Ok(SummaryUpgrade::default());
    };
    let Some(mut source) = rec.source.clone() else {
        return Ok(SummaryUpgrade::default());
    };
    let kind = summary_kind(conn, file_id)?;
    if source.reference != old_reference || kind.as_deref() != Some(SUMMARY_DETERMINISTIC) {
        return Ok(SummaryUpgrade::default());
    }
    source.reference = new_reference.to_owned();
    conn.prepare_cached(
        "UPDATE large_files SET exploration_summary = ?2, lcm_source = ?3,
                lcm_summary_kind = 'model', lcm_summary_retry_at = NULL
         WHERE file_id = ?1",
    )?
    .execute(params![file_id, summary, serde_json::to_string(&source)?])?;
    let messages = replace_in_messages(conn, rec.conversation_id, old_reference, new_reference)?;
    Ok(SummaryUpgrade {
        applied: true,
        messages,
    })
}

/// JSON string escaping of `s` without the quotes (how it appears inside a
/// compact JSON document written by serde_json).
fn json_escaped(s: &str) -> Result<String> {
    let quoted = serde_json::to_string(s)?;
    Ok(crate::text::slice(&quoted, 1, quoted.len().saturating_sub(1)).to_owned())
}

/// Replaces `old` by `new` in the text of every message of a conversation that
/// contains it, keeping `messages_fts` consistent. Returns the messages changed
/// with their new content.
fn replace_in_messages(
    conn: &Connection,
    conversation_id: i64,
    old: &str,
    new: &str,
) -> Result<Vec<(i64, String)>> {
    let ids: Vec<(i64, String)> = conn
        .prepare_cached(
            "SELECT message_id, content FROM messages
             WHERE conversation_id = ?1 AND instr(content, ?2) > 0 ORDER BY message_id",
        )?
        .query_map(params![conversation_id, old], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let fts = super::inspect::has_table(conn, "messages_fts")?;
    let indexed_upto: i64 = if fts {
        conn.prepare_cached(
            "SELECT COALESCE((SELECT indexed_upto FROM lcm_fts_state WHERE table_name = 'messages_fts'), 0)",
        )?
        .query_row([], |r| r.get(0))?
    } else {
        0
    };
    let (old_json, new_json) = (json_escaped(old)?, json_escaped(new)?);
    // Token counts move by the difference of the two texts (a message's count may
    // include more than its text: images, tool calls).
    let delta = crate::tokens::estimate(new) - crate::tokens::estimate(old);
    let mut changed = Vec::with_capacity(ids.len());
    for (id, content) in &ids {
        let times = content.matches(old).count() as i64;
        let text = content.replace(old, new);
        if fts && *id <= indexed_upto {
            conn.prepare_cached(
                "INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', ?1, ?2)",
            )?
            .execute(params![id, content])?;
        }
        conn.prepare_cached(
            "UPDATE messages SET content = ?2, token_count = MAX(0, token_count + ?3) WHERE message_id = ?1",
        )?
        .execute(params![id, text, delta * times])?;
        if fts && *id <= indexed_upto {
            conn.prepare_cached("INSERT INTO messages_fts(rowid, content) VALUES(?1, ?2)")?
                .execute(params![id, text])?;
        }
        conn.prepare_cached(
            "UPDATE message_parts SET
                text_content = replace(text_content, ?2, ?3),
                tool_output = replace(tool_output, ?2, ?3),
                metadata = replace(metadata, ?4, ?5)
             WHERE message_id = ?1",
        )?
        .execute(params![id, old, new, old_json, new_json])?;
        changed.push((*id, text));
    }
    Ok(changed)
}
