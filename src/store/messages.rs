//! Messages, their parts and the context list: batched lossless inserts and reads.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row};
use serde::Serialize;

use super::conversations::{self, SessionRef};
use super::derived::{file_ids_in, MsgRow};
use crate::error::Result;
use crate::message::ingest::NewMessage;
use crate::message::rebuild::{StoredMessage, StoredPart};
use crate::timestamp;

/// Outcome of one message of a batch.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestedMessage {
    /// False when the message was a replay and was not stored again.
    pub ingested: bool,
    /// The stored row's id (the existing row's id for a replay of an entry id).
    pub message_id: Option<i64>,
    /// The stored row's seq.
    pub seq: Option<i64>,
}

/// Outcome of a batch.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestOutcome {
    /// The conversation the batch went to.
    pub conversation_id: i64,
    /// One entry per input message, in input order.
    pub messages: Vec<IngestedMessage>,
}

/// Writes a batch of mapped messages in one transaction: conversation lookup or
/// creation, replay filtering, message, part and context-item rows. Full-text
/// indexing follows in batches on the writer thread (`store::fts_lag`).
pub fn insert_batch(
    conn: &mut Connection,
    session: &SessionRef,
    batch: Vec<NewMessage>,
) -> Result<IngestOutcome> {
    super::tx::write_tx(conn, |tx| {
        let conversation_id = conversations::find_or_create(tx, session)?;
        let messages = insert_batch_in(tx, conversation_id, &batch)?;
        Ok(IngestOutcome {
            conversation_id,
            messages,
        })
    })
}

/// [`insert_batch`] inside the caller's transaction, for a known conversation.
pub fn insert_batch_in(
    tx: &Connection,
    conversation_id: i64,
    batch: &[NewMessage],
) -> Result<Vec<IngestedMessage>> {
    let existing = existing_entry_ids(tx, conversation_id, batch)?;
    let mut appender = Appender::open(tx, conversation_id)?;
    // An identical replay inside one batch: same envelope, text and parts, every column
    // (a plain user string has no part: its text is in `content` only). Messages are
    // told apart by their envelope first (it carries the timestamp), so the text is
    // compared only between messages with equal envelopes.
    let mut seen_messages: HashMap<&str, Vec<&NewMessage>> = HashMap::new();
    let mut seen_entries: HashSet<String> = HashSet::new();
    let skipped = IngestedMessage {
        ingested: false,
        message_id: None,
        seq: None,
    };
    let mut out = Vec::with_capacity(batch.len());
    for m in batch {
        if let Some(id) = &m.transcript_entry_id {
            if let Some(&(mid, s)) = existing.get(id) {
                out.push(IngestedMessage {
                    ingested: false,
                    message_id: Some(mid),
                    seq: Some(s),
                });
                continue;
            }
            if !seen_entries.insert(id.clone()) {
                out.push(skipped.clone());
                continue;
            }
        } else {
            let same_envelope = seen_messages.entry(m.envelope.as_str()).or_default();
            if same_envelope
                .iter()
                .any(|s| s.content == m.content && s.parts == m.parts)
            {
                out.push(skipped.clone());
                continue;
            }
            same_envelope.push(m);
        }
        let (message_id, seq) = appender.append(tx, m)?;
        out.push(IngestedMessage {
            ingested: true,
            message_id: Some(message_id),
            seq: Some(seq),
        });
    }
    appender.finish(tx)?;
    Ok(out)
}

/// Appends messages at the end of one conversation inside the caller's transaction,
/// one at a time (a streaming import never holds the whole batch).
pub struct Appender {
    conversation_id: i64,
    seq: i64,
    ordinal: i64,
    session_id: String,
    now: String,
}

impl Appender {
    /// Reads the conversation's next seq and ordinal.
    pub fn open(tx: &Connection, conversation_id: i64) -> Result<Appender> {
        let (seq, ordinal) = next_positions(tx, conversation_id)?;
        let session_id: String = tx
            .prepare_cached("SELECT session_id FROM conversations WHERE conversation_id = ?1")?
            .query_row([conversation_id], |r| r.get(0))?;
        Ok(Appender {
            conversation_id,
            seq,
            ordinal,
            session_id,
            now: timestamp::now_sqlite(),
        })
    }

    /// Writes one message (row, parts, context item); returns its id and seq.
    pub fn append(&mut self, tx: &Connection, m: &NewMessage) -> Result<(i64, i64)> {
        let at = Position {
            conversation_id: self.conversation_id,
            seq: self.seq,
            ordinal: self.ordinal,
            session_id: &self.session_id,
            now: &self.now,
        };
        let message_id = insert_one(tx, &at, m)?;
        let seq = self.seq;
        self.seq += 1;
        self.ordinal += 1;
        Ok((message_id, seq))
    }

    /// Marks the conversation updated. The row is written only when the time (whole
    /// seconds) changed: turns committed within the same second leave its page clean,
    /// one page fewer in their commit.
    pub fn finish(self, tx: &Connection) -> Result<()> {
        tx.prepare_cached(
            "UPDATE conversations SET updated_at = ?1 WHERE conversation_id = ?2 AND updated_at IS NOT ?1",
        )?
        .execute(params![self.now, self.conversation_id])?;
        Ok(())
    }
}

/// Transcript entry ids stored in a conversation.
pub fn entry_ids(conn: &Connection, conversation_id: i64) -> Result<HashSet<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT transcript_entry_id FROM messages WHERE conversation_id = ?1 AND transcript_entry_id IS NOT NULL",
    )?;
    let rows = stmt.query_map([conversation_id], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<HashSet<_>>>()?)
}

/// `(db role, plain text)` of the rows stored after the row of an entry id, in seq
/// order.
pub fn rows_after_entry(
    conn: &Connection,
    conversation_id: i64,
    entry_id: &str,
) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT role, content FROM messages WHERE conversation_id = ?1 AND seq >
           (SELECT MAX(seq) FROM messages WHERE conversation_id = ?1 AND transcript_entry_id = ?2)
         ORDER BY seq",
    )?;
    let rows = stmt.query_map(params![conversation_id, entry_id], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// `(db role, plain text)` of the newest stored message of a conversation.
pub fn newest_row(conn: &Connection, conversation_id: i64) -> Result<Option<(String, String)>> {
    Ok(conn
        .prepare_cached(
            "SELECT role, content FROM messages WHERE conversation_id = ?1 ORDER BY seq DESC LIMIT 1",
        )?
        .query_row([conversation_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

fn existing_entry_ids(
    tx: &Connection,
    conversation_id: i64,
    batch: &[NewMessage],
) -> Result<HashMap<String, (i64, i64)>> {
    let ids: Vec<&str> = batch
        .iter()
        .filter_map(|m| m.transcript_entry_id.as_deref())
        .collect();
    let mut found = HashMap::new();
    for chunk in ids.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(",");
        let sql = format!(
            "SELECT transcript_entry_id, message_id, seq FROM messages WHERE conversation_id = {conversation_id} AND transcript_entry_id IN ({marks})"
        );
        let mut stmt = tx.prepare(&sql)?;
        let rows = stmt.query_map(params_from_iter(chunk.iter()), |r| {
            Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?)))
        })?;
        for row in rows {
            let (k, v) = row?;
            found.insert(k, v);
        }
    }
    Ok(found)
}

fn next_positions(tx: &Connection, conversation_id: i64) -> Result<(i64, i64)> {
    let seq: i64 = tx
        .prepare_cached(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation_id = ?1",
        )?
        .query_row([conversation_id], |r| r.get(0))?;
    let ordinal: i64 = tx
        .prepare_cached(
            "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM context_items WHERE conversation_id = ?1",
        )?
        .query_row([conversation_id], |r| r.get(0))?;
    Ok((seq, ordinal))
}

struct Position<'a> {
    conversation_id: i64,
    seq: i64,
    ordinal: i64,
    session_id: &'a str,
    now: &'a str,
}

fn insert_one(tx: &Connection, at: &Position, m: &NewMessage) -> Result<i64> {
    let Position {
        conversation_id,
        seq,
        ordinal,
        session_id,
        now,
    } = *at;
    let created = m.created_at.as_deref().unwrap_or(now);
    tx.prepare_cached(
        "INSERT INTO messages (conversation_id, seq, role, content, token_count, transcript_entry_id, lcm_envelope, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        conversation_id,
        seq,
        m.role,
        m.content,
        m.token_count,
        m.transcript_entry_id,
        m.envelope,
        created
    ])?;
    let message_id = tx.last_insert_rowid();
    let mut part_stmt = tx.prepare_cached(
        "INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal, text_content, tool_call_id, tool_name, tool_input, tool_output, metadata)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for p in &m.parts {
        part_stmt.execute(params![
            part_id(message_id, p.ordinal),
            message_id,
            session_id,
            p.part_type,
            p.ordinal,
            p.text_content,
            p.tool_call_id,
            p.tool_name,
            p.tool_input,
            p.tool_output,
            p.metadata
        ])?;
    }
    tx.prepare_cached(
        "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, created_at) VALUES (?1, ?2, 'message', ?3, ?4)",
    )?
    .execute(params![conversation_id, ordinal, message_id, now])?;
    Ok(message_id)
}

/// Part ids: short, unique (one per message and ordinal) and increasing, so the
/// primary-key index grows at its end instead of scattering random UUIDs.
pub fn part_id(message_id: i64, ordinal: i64) -> String {
    format!("{message_id:010}.{ordinal}")
}

/// A `messages` row without its parts.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRecord {
    /// message_id
    pub message_id: i64,
    /// conversation_id
    pub conversation_id: i64,
    /// Sequence number within the conversation.
    pub seq: i64,
    /// DB role.
    pub role: String,
    /// Plain-text content.
    pub content: String,
    /// Estimated tokens.
    pub token_count: i64,
    /// Creation time (SQLite UTC text).
    pub created_at: String,
}

fn message_from_row(r: &Row) -> rusqlite::Result<MessageRecord> {
    Ok(MessageRecord {
        message_id: r.get(0)?,
        conversation_id: r.get(1)?,
        seq: r.get(2)?,
        role: r.get(3)?,
        content: r.get(4)?,
        token_count: r.get(5)?,
        created_at: r.get(6)?,
    })
}

/// The highest message id in the database (0 when empty).
pub fn max_message_id(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT COALESCE(MAX(message_id), 0) FROM messages")?
        .query_row([], |r| r.get(0))?)
}

/// Message rows by id, in the order given (unknown ids are skipped).
pub fn records_by_ids(conn: &Connection, ids: &[i64]) -> Result<Vec<MessageRecord>> {
    let mut by_id = HashMap::new();
    for chunk in ids.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(",");
        let mut stmt = conn.prepare(&format!(
            "SELECT message_id, conversation_id, seq, role, content, token_count, created_at FROM messages WHERE message_id IN ({marks})"
        ))?;
        for row in stmt.query_map(params_from_iter(chunk.iter()), message_from_row)? {
            let r = row?;
            by_id.insert(r.message_id, r);
        }
    }
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

/// Loads messages with their parts for rebuilding, by id (one query per 500 ids,
/// one more for the parts).
pub fn stored_by_ids(conn: &Connection, ids: &[i64]) -> Result<Vec<StoredMessage>> {
    let mut by_id: HashMap<i64, StoredMessage> = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(",");
        let mut stmt = conn.prepare(&format!(
            "SELECT message_id, role, content, lcm_envelope, created_at FROM messages WHERE message_id IN ({marks})"
        ))?;
        for row in stmt.query_map(params_from_iter(chunk.iter()), |r| {
            Ok(StoredMessage {
                message_id: r.get(0)?,
                role: r.get(1)?,
                content: r.get(2)?,
                envelope: r.get(3)?,
                created_at: r.get(4)?,
                parts: Vec::new(),
            })
        })? {
            let m = row?;
            by_id.insert(m.message_id, m);
        }
    }
    for (id, parts) in parts_of(conn, ids)? {
        if let Some(m) = by_id.get_mut(&id) {
            m.parts = parts;
        }
    }
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

/// Messages with their parts, and what a leaf's derived columns need of each
/// ([`MsgRow`]), by id, in the order given (unknown ids are skipped): one query for
/// the rows, one for the parts. The sources of a leaf's summarizer input.
pub fn sources_by_ids(conn: &Connection, ids: &[i64]) -> Result<Vec<(StoredMessage, MsgRow)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT m.message_id, m.conversation_id, m.seq, m.role, m.content, m.token_count,
                m.lcm_envelope, m.created_at
         FROM json_each(?1) j JOIN messages m ON m.message_id = j.value ORDER BY j.key",
    )?;
    let rows = stmt
        .query_map([serde_json::to_string(ids)?], |r| {
            let content: String = r.get(4)?;
            let created_at: String = r.get(7)?;
            let mut file_ids = Vec::new();
            file_ids_in(&content, &mut file_ids);
            let row = MsgRow {
                id: r.get(0)?,
                conversation_id: r.get(1)?,
                seq: r.get(2)?,
                tokens: r.get(5)?,
                created_at: created_at.clone(),
                file_ids,
            };
            let message = StoredMessage {
                message_id: row.id,
                role: r.get(3)?,
                content,
                envelope: r.get(6)?,
                created_at: Some(created_at),
                parts: Vec::new(),
            };
            Ok((message, row))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut parts = parts_of(conn, ids)?;
    Ok(rows
        .into_iter()
        .map(|(mut m, row)| {
            m.parts = parts.remove(&m.message_id).unwrap_or_default();
            (m, row)
        })
        .collect())
}

/// The `message_parts` columns [`part_from_row`] decodes.
const PART_COLUMNS: &str =
    "message_id, part_type, text_content, tool_call_id, tool_name, tool_input, tool_output, metadata";

/// The one decoder of a `message_parts` row selected with [`PART_COLUMNS`]: the
/// owning message id and the part.
fn part_from_row(r: &Row) -> rusqlite::Result<(i64, StoredPart)> {
    Ok((
        r.get(0)?,
        StoredPart {
            part_type: r.get(1)?,
            text_content: r.get(2)?,
            tool_call_id: r.get(3)?,
            tool_name: r.get(4)?,
            tool_input: r.get(5)?,
            tool_output: r.get(6)?,
            metadata: r.get(7)?,
        },
    ))
}

/// The parts of the given messages, keyed by message id, in part order (one query).
pub fn parts_of(conn: &Connection, message_ids: &[i64]) -> Result<HashMap<i64, Vec<StoredPart>>> {
    let mut out: HashMap<i64, Vec<StoredPart>> = HashMap::new();
    if message_ids.is_empty() {
        return Ok(out);
    }
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {PART_COLUMNS} FROM message_parts
         WHERE message_id IN (SELECT value FROM json_each(?1))
         ORDER BY message_id, ordinal"
    ))?;
    let rows = stmt.query_map([serde_json::to_string(message_ids)?], part_from_row)?;
    for row in rows {
        let (id, part) = row?;
        out.entry(id).or_default().push(part);
    }
    Ok(out)
}

/// Ids of a conversation's messages in seq order.
pub fn ids_in_order(conn: &Connection, conversation_id: i64) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT message_id FROM messages WHERE conversation_id = ?1 ORDER BY seq",
    )?;
    let ids = stmt
        .query_map([conversation_id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ids)
}

/// One entry of the context list.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextItem {
    /// Position, 0..n-1.
    pub ordinal: i64,
    /// `message` or `summary`.
    pub item_type: String,
    /// The message, for message items.
    pub message_id: Option<i64>,
    /// The summary, for summary items.
    pub summary_id: Option<String>,
    /// Token count of the item (message or summary token_count).
    pub token_count: i64,
    /// The summary's depth, for summary items.
    pub depth: Option<i64>,
    /// The message's DB role, for message items.
    pub role: Option<String>,
}

/// The context list of a conversation with each item's tokens, in one query.
pub fn context_items(conn: &Connection, conversation_id: i64) -> Result<Vec<ContextItem>> {
    let mut stmt = conn.prepare_cached(
        "SELECT ci.ordinal, ci.item_type, ci.message_id, ci.summary_id,
                COALESCE(m.token_count, s.token_count, 0), s.depth, m.role
         FROM context_items ci
         LEFT JOIN messages m ON m.message_id = ci.message_id
         LEFT JOIN summaries s ON s.summary_id = ci.summary_id
         WHERE ci.conversation_id = ?1 ORDER BY ci.ordinal",
    )?;
    let rows = stmt
        .query_map([conversation_id], |r| {
            Ok(ContextItem {
                ordinal: r.get(0)?,
                item_type: r.get(1)?,
                message_id: r.get(2)?,
                summary_id: r.get(3)?,
                token_count: r.get(4)?,
                depth: r.get(5)?,
                role: r.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Σ tokens of the context list (messages + summaries, without XML wrappers).
pub fn context_token_count(conn: &Connection, conversation_id: i64) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT COALESCE(SUM(COALESCE(m.token_count, s.token_count, 0)), 0)
             FROM context_items ci
             LEFT JOIN messages m ON m.message_id = ci.message_id
             LEFT JOIN summaries s ON s.summary_id = ci.summary_id
             WHERE ci.conversation_id = ?1",
        )?
        .query_row([conversation_id], |r| r.get(0))?)
}

/// Counts of a conversation's rows.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationStats {
    /// Stored messages.
    pub message_count: i64,
    /// Σ tokens of stored messages.
    pub message_tokens: i64,
    /// Stored summaries.
    pub summary_count: i64,
    /// Context-list entries.
    pub context_items: i64,
    /// Σ tokens of the context list.
    pub context_tokens: i64,
}

/// Totals for a conversation.
pub fn stats(conn: &Connection, conversation_id: i64) -> Result<ConversationStats> {
    let (message_count, message_tokens): (i64, i64) = conn
        .prepare_cached("SELECT COUNT(*), COALESCE(SUM(token_count), 0) FROM messages WHERE conversation_id = ?1")?
        .query_row([conversation_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let summary_count: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM summaries WHERE conversation_id = ?1")?
        .query_row([conversation_id], |r| r.get(0))?;
    let context_items: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM context_items WHERE conversation_id = ?1")?
        .query_row([conversation_id], |r| r.get(0))?;
    Ok(ConversationStats {
        message_count,
        message_tokens,
        summary_count,
        context_items,
        context_tokens: context_token_count(conn, conversation_id)?,
    })
}
