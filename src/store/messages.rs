//! Messages, their parts and the context list: batched lossless inserts and reads.

use std::collections::{HashMap, HashSet};

use rusqlite::fallible_streaming_iterator::FallibleStreamingIterator;
use rusqlite::types::Type;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row, Rows, ToSql};
use serde::Serialize;

use super::conversations::{self, SessionRef};
use super::derived::{file_ids_in, MsgRow};
use crate::error::{LcmError, Result};
use crate::message::ingest::{NewMessage, NewPart};
use crate::message::rebuild::{PartText, StoredMessage, StoredPart};
use crate::timestamp;

/// Outcome of one message of a batch.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
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
    insert_batch_with(tx, Appender::open(tx, conversation_id)?, batch)
}

/// [`insert_batch_in`] through an appender already open on the conversation.
pub fn insert_batch_with(
    tx: &Connection,
    mut appender: Appender,
    batch: &[NewMessage],
) -> Result<Vec<IngestedMessage>> {
    let existing = existing_entry_ids(tx, appender.conversation_id, batch)?;
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
    // Each input's slot: its outcome, or the index of its row among `fresh`.
    let mut slots: Vec<std::result::Result<IngestedMessage, usize>> =
        Vec::with_capacity(batch.len());
    let mut fresh: Vec<&NewMessage> = Vec::with_capacity(batch.len());
    for m in batch {
        if let Some(id) = &m.transcript_entry_id {
            if let Some(&(mid, s)) = existing.get(id) {
                slots.push(Ok(IngestedMessage {
                    ingested: false,
                    message_id: Some(mid),
                    seq: Some(s),
                }));
                continue;
            }
            if !seen_entries.insert(id.clone()) {
                slots.push(Ok(skipped.clone()));
                continue;
            }
        } else {
            let same_envelope = seen_messages.entry(m.envelope.as_str()).or_default();
            if same_envelope
                .iter()
                .any(|s| s.content == m.content && s.parts == m.parts)
            {
                slots.push(Ok(skipped.clone()));
                continue;
            }
            same_envelope.push(m);
        }
        slots.push(Err(fresh.len()));
        fresh.push(m);
    }
    let stored = appender.append_all(tx, &fresh)?;
    appender.finish(tx)?;
    Ok(slots
        .into_iter()
        .map(|slot| {
            slot.unwrap_or_else(|i| IngestedMessage {
                ingested: true,
                message_id: Some(stored[i].0),
                seq: Some(stored[i].1),
            })
        })
        .collect())
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
    /// Reads the conversation's session id, next seq and next ordinal.
    pub fn open(tx: &Connection, conversation_id: i64) -> Result<Appender> {
        let session_id: String = tx
            .prepare_cached("SELECT session_id FROM conversations WHERE conversation_id = ?1")?
            .query_row([conversation_id], |r| r.get(0))?;
        Self::open_known(tx, conversation_id, session_id)
    }

    /// [`Appender::open`] for a conversation whose stored session id the caller has
    /// already read (`conversations::find_or_create_session`).
    pub fn open_known(
        tx: &Connection,
        conversation_id: i64,
        session_id: String,
    ) -> Result<Appender> {
        let (seq, ordinal) = next_positions(tx, conversation_id)?;
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
        Ok(self.append_all(tx, &[m])?[0])
    }

    /// Writes messages in order (rows, parts, context items); returns each one's id
    /// and seq. Rows go in multi-row INSERTs ([`insert_rows`]); ids are assigned
    /// here, as AUTOINCREMENT would ([`next_message_id`]).
    pub fn append_all(
        &mut self,
        tx: &Connection,
        batch: &[&NewMessage],
    ) -> Result<Vec<(i64, i64)>> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let first_id = next_message_id(tx)?;
        let placed: Vec<(i64, i64, i64)> = (0..batch.len() as i64)
            .map(|i| (first_id + i, self.seq + i, self.ordinal + i))
            .collect();
        insert_message_rows(tx, self, batch, &placed)?;
        insert_part_rows(tx, &self.session_id, batch, &placed)?;
        insert_context_rows(tx, self, &placed)?;
        self.seq += batch.len() as i64;
        self.ordinal += batch.len() as i64;
        Ok(placed.iter().map(|&(id, seq, _)| (id, seq)).collect())
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

/// Whether the conversation stores the message of a transcript entry id.
pub fn stores_entry(conn: &Connection, conversation_id: i64, entry_id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM messages WHERE conversation_id = ?1 AND transcript_entry_id = ?2",
        )?
        .exists(rusqlite::params![conversation_id, entry_id])?)
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

/// The next seq and the next context ordinal of a conversation, in one statement.
fn next_positions(tx: &Connection, conversation_id: i64) -> Result<(i64, i64)> {
    Ok(tx
        .prepare_cached(
            "SELECT (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation_id = ?1),
                    (SELECT COALESCE(MAX(ordinal), -1) + 1 FROM context_items WHERE conversation_id = ?1)",
        )?
        .query_row([conversation_id], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// The id AUTOINCREMENT would give the next `messages` row: above every id the
/// table holds and every id it ever held (`sqlite_sequence`), so ids never repeat
/// (the deferred full-text indexing relies on it).
fn next_message_id(tx: &Connection) -> Result<i64> {
    Ok(tx
        .prepare_cached(
            "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0),
                        COALESCE((SELECT MAX(message_id) FROM messages), 0)) + 1",
        )?
        .query_row([], |r| r.get(0))?)
}

/// Rows per INSERT statement. One execution of a statement evaluates the CHECK
/// `IN` lists of `messages.role` and `message_parts.part_type` through an ephemeral
/// table SQLite builds once per execution (a constant list of more than two values),
/// and opens every index cursor once: a turn's rows in one execution pay that once
/// instead of once per row (about a fifth of the writer's instructions).
const ROWS_PER_INSERT: usize = 8;

/// `head` followed by `rows` copies of the row template `row` (`VALUES` list).
fn values_sql(head: &str, row: &str, rows: usize) -> String {
    let mut sql = String::with_capacity(head.len() + rows * (row.len() + 1));
    sql.push_str(head);
    for i in 0..rows {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str(row);
    }
    sql
}

/// Inserts rows of `cols` values each, `ROWS_PER_INSERT` per statement execution
/// (one cached statement per row count).
fn insert_rows(
    tx: &Connection,
    head: &str,
    row: &str,
    cols: usize,
    values: &[&dyn ToSql],
) -> Result<()> {
    for chunk in values.chunks(cols * ROWS_PER_INSERT) {
        let sql = values_sql(head, row, chunk.len() / cols);
        tx.prepare_cached(&sql)?.execute(params_from_iter(chunk))?;
    }
    Ok(())
}

fn insert_message_rows(
    tx: &Connection,
    at: &Appender,
    batch: &[&NewMessage],
    placed: &[(i64, i64, i64)],
) -> Result<()> {
    let mut values: Vec<&dyn ToSql> = Vec::with_capacity(batch.len() * 9);
    for (m, (id, seq, _)) in batch.iter().zip(placed) {
        let created: &String = m.created_at.as_ref().unwrap_or(&at.now);
        values.extend_from_slice(&[
            id as &dyn ToSql,
            &at.conversation_id,
            seq,
            &m.role,
            &m.content,
            &m.token_count,
            &m.transcript_entry_id,
            &m.envelope,
            created,
        ]);
    }
    insert_rows(
        tx,
        "INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count, transcript_entry_id, lcm_envelope, created_at) VALUES ",
        "(?,?,?,?,?,?,?,?,?)",
        9,
        &values,
    )
}

fn insert_part_rows(
    tx: &Connection,
    session_id: &str,
    batch: &[&NewMessage],
    placed: &[(i64, i64, i64)],
) -> Result<()> {
    let count: usize = batch.iter().map(|m| m.parts.len()).sum();
    if count == 0 {
        return Ok(());
    }
    let parts: Vec<(&i64, String, &NewPart)> = batch
        .iter()
        .zip(placed)
        .flat_map(|(m, (id, _, _))| {
            m.parts
                .iter()
                .map(move |p| (id, part_id(*id, p.ordinal), p))
        })
        .collect();
    let mut values: Vec<&dyn ToSql> = Vec::with_capacity(count * 11);
    for (message_id, part_id, p) in &parts {
        values.extend_from_slice(&[
            part_id as &dyn ToSql,
            message_id,
            &session_id,
            &p.part_type,
            &p.ordinal,
            &p.text_content,
            &p.tool_call_id,
            &p.tool_name,
            &p.tool_input,
            &p.tool_output,
            &p.metadata,
        ]);
    }
    insert_rows(
        tx,
        "INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal, text_content, tool_call_id, tool_name, tool_input, tool_output, metadata) VALUES ",
        "(?,?,?,?,?,?,?,?,?,?,?)",
        11,
        &values,
    )
}

fn insert_context_rows(tx: &Connection, at: &Appender, placed: &[(i64, i64, i64)]) -> Result<()> {
    let mut values: Vec<&dyn ToSql> = Vec::with_capacity(placed.len() * 4);
    for (id, _, ordinal) in placed {
        values.extend_from_slice(&[&at.conversation_id as &dyn ToSql, ordinal, id, &at.now]);
    }
    insert_rows(
        tx,
        "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, created_at) VALUES ",
        "(?,?,'message',?,?)",
        4,
        &values,
    )
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

/// The smallest message id at or above `id`, if any.
pub fn next_message_id_from(conn: &Connection, id: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT MIN(message_id) FROM messages WHERE message_id >= ?1")?
        .query_row([id], |r| r.get(0))?)
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

/// A source message's columns, borrowed from its row while the visitor of
/// [`for_each_source`] runs.
#[derive(Debug)]
pub struct SourceRow<'a> {
    /// What a leaf's derived columns need of it (its stored time is
    /// `row.created_at`, SQLite UTC text).
    pub row: MsgRow,
    /// `user`, `assistant`, `tool`, `system`.
    pub role: &'a str,
    /// The content column.
    pub content: &'a str,
    /// Its envelope, when this engine wrote it.
    pub envelope: Option<&'a str>,
}

/// The parts of the message being visited, in part order, each borrowed from its
/// row until the next is asked for.
pub struct SourceParts<'c, 's> {
    cursor: &'c mut PartCursor<'s>,
    message_id: i64,
}

impl SourceParts<'_, '_> {
    /// The visited message's next part, if any.
    pub fn next_part(&mut self) -> Result<Option<PartText<'_>>> {
        loop {
            match self.cursor.head()? {
                // A part of a message not asked for (a dense range's gap).
                Some(id) if id < self.message_id => self.cursor.consumed = true,
                Some(id) if id == self.message_id => {
                    self.cursor.consumed = true;
                    return match self.cursor.rows.get() {
                        Some(r) => Ok(Some(part_text(r)?)),
                        None => Ok(None),
                    };
                }
                _ => return Ok(None),
            }
        }
    }
}

/// The parts query's rows, read alongside the messages' (both in message id order).
struct PartCursor<'s> {
    rows: Rows<'s>,
    /// Whether the current row was handed out (the cursor moves on before the next).
    consumed: bool,
}

impl<'s> PartCursor<'s> {
    fn new(mut rows: Rows<'s>) -> Result<Self> {
        rows.advance()?;
        Ok(PartCursor {
            rows,
            consumed: false,
        })
    }

    /// The message id of the current part row (`None` past the last).
    fn head(&mut self) -> Result<Option<i64>> {
        if std::mem::take(&mut self.consumed) {
            self.rows.advance()?;
        }
        Ok(match self.rows.get() {
            Some(r) => Some(r.get(0)?),
            None => None,
        })
    }
}

/// Visits the given messages (unknown ids skipped) once each, in ascending id
/// order, with their parts: the sources of a leaf's summarizer input. One query
/// for the rows and one for the parts, stepped side by side; texts are borrowed
/// from the rows, not copied. A dense run of ids (a leaf chunk of a conversation
/// ingested turn by turn) is read as one range, skipping the rows of other
/// conversations in it ([`dense_range`]).
pub fn for_each_source(
    conn: &Connection,
    ids: &[i64],
    mut visit: impl FnMut(SourceRow<'_>, &mut SourceParts<'_, '_>) -> Result<()>,
) -> Result<()> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let range = dense_range(&ids);
    let filter = match range {
        Some(_) => "message_id BETWEEN ?1 AND ?2",
        None => "message_id IN (SELECT value FROM json_each(?1))",
    };
    let mut rows_stmt = conn.prepare_cached(&format!(
        "SELECT message_id, conversation_id, seq, role, content, token_count, lcm_envelope,
                created_at
         FROM messages WHERE {filter} ORDER BY message_id"
    ))?;
    let mut parts_stmt = conn.prepare_cached(&format!(
        "SELECT message_id, part_type, text_content, tool_name, tool_input, tool_output
         FROM message_parts WHERE {filter} ORDER BY message_id, ordinal"
    ))?;
    let json = serde_json::to_string(&ids)?;
    let (mut rows, parts) = match range {
        Some((lo, hi)) => (
            rows_stmt.query(params![lo, hi])?,
            parts_stmt.query(params![lo, hi])?,
        ),
        None => (rows_stmt.query([&json])?, parts_stmt.query([&json])?),
    };
    let mut parts = PartCursor::new(parts)?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        if ids.binary_search(&id).is_err() {
            continue;
        }
        let content = text_at(r, 4)?;
        let mut file_ids = Vec::new();
        file_ids_in(content, &mut file_ids);
        let source = SourceRow {
            row: MsgRow {
                id,
                conversation_id: r.get(1)?,
                seq: r.get(2)?,
                tokens: r.get(5)?,
                created_at: text_at(r, 7)?.to_owned(),
                file_ids,
            },
            role: text_at(r, 3)?,
            content,
            envelope: opt_text_at(r, 6)?,
        };
        visit(
            source,
            &mut SourceParts {
                cursor: &mut parts,
                message_id: id,
            },
        )?;
    }
    Ok(())
}

/// A text column of a row, borrowed.
fn text_at<'r>(r: &'r Row, i: usize) -> rusqlite::Result<&'r str> {
    r.get_ref(i)?
        .as_str()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, Box::new(e)))
}

/// A nullable text column of a row, borrowed.
fn opt_text_at<'r>(r: &'r Row, i: usize) -> rusqlite::Result<Option<&'r str>> {
    r.get_ref(i)?
        .as_str_or_null()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, Box::new(e)))
}

/// A part row of [`for_each_source`]'s query, borrowed.
fn part_text<'r>(r: &'r Row) -> rusqlite::Result<PartText<'r>> {
    Ok(PartText {
        part_type: text_at(r, 1)?,
        text_content: opt_text_at(r, 2)?,
        tool_name: opt_text_at(r, 3)?,
        tool_input: opt_text_at(r, 4)?,
        tool_output: opt_text_at(r, 5)?,
    })
}

/// How many ids a dense range may span per id asked for: beyond that, the rows
/// skipped would cost more than the `json_each` lookups saved.
const DENSE_SPAN: i64 = 2;

/// The range `lo..=hi` of ids that strictly ascend and span at most
/// [`DENSE_SPAN`] times their number: read as one range scan that skips the ids
/// not asked for, instead of one lookup per id through `json_each`.
fn dense_range(ids: &[i64]) -> Option<(i64, i64)> {
    let (&lo, &hi) = (ids.first()?, ids.last()?);
    let span = hi.checked_sub(lo)?.checked_add(1)?;
    let dense =
        span <= DENSE_SPAN.saturating_mul(ids.len() as i64) && ids.windows(2).all(|w| w[0] < w[1]);
    dense.then_some((lo, hi))
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

/// The parts of the given messages, keyed by message id, in part order (one query;
/// a dense ascending run of ids as one range, see [`dense_range`]).
pub fn parts_of(conn: &Connection, message_ids: &[i64]) -> Result<HashMap<i64, Vec<StoredPart>>> {
    let mut out: HashMap<i64, Vec<StoredPart>> = HashMap::new();
    if message_ids.is_empty() {
        return Ok(out);
    }
    if let Some((lo, hi)) = dense_range(message_ids) {
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {PART_COLUMNS} FROM message_parts
             WHERE message_id BETWEEN ?1 AND ?2 ORDER BY message_id, ordinal"
        ))?;
        let mut rows = stmt.query(params![lo, hi])?;
        while let Some(r) = rows.next()? {
            if message_ids.binary_search(&r.get(0)?).is_ok() {
                let (id, part) = part_from_row(r)?;
                out.entry(id).or_default().push(part);
            }
        }
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

/// What a context item points at. Stored and serialized as `message` / `summary`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum ContextItemType {
    /// A raw message (`message_id` set).
    Message,
    /// A summary (`summary_id` set).
    Summary,
}

impl ContextItemType {
    /// The text stored in `context_items.item_type` and sent to JavaScript.
    pub fn as_str(self) -> &'static str {
        match self {
            ContextItemType::Message => "message",
            ContextItemType::Summary => "summary",
        }
    }

    /// Reads a stored `context_items.item_type`; anything else is a corrupt row.
    pub fn from_stored(text: &str) -> Result<ContextItemType> {
        match text {
            "message" => Ok(ContextItemType::Message),
            "summary" => Ok(ContextItemType::Summary),
            other => Err(LcmError::internal(format!(
                "context_items.item_type holds {other:?}, expected 'message' or 'summary'"
            ))),
        }
    }
}

// The store boundary: stored as text, read back with an error naming the value.
impl rusqlite::types::FromSql for ContextItemType {
    fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let text = v.as_str()?;
        ContextItemType::from_stored(text)
            .map_err(|e| rusqlite::types::FromSqlError::Other(e.message.into()))
    }
}

impl rusqlite::ToSql for ContextItemType {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

/// One entry of the context list.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ContextItem {
    /// Position, 0..n-1.
    pub ordinal: i64,
    /// `message` or `summary`.
    pub item_type: ContextItemType,
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
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
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
    /// Summarizer requests made for this conversation since the engine opened
    /// (answered or failed; filled by the engine, not stored).
    pub summarizer_calls: i64,
    /// Of those, the failed ones.
    pub summarizer_failures: i64,
    /// Estimated input tokens of the answered requests.
    pub summarizer_input_tokens: i64,
    /// Estimated tokens of their answers.
    pub summarizer_output_tokens: i64,
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
        summarizer_calls: 0,
        summarizer_failures: 0,
        summarizer_input_tokens: 0,
        summarizer_output_tokens: 0,
    })
}

/// Test support: stores `bytes` as the text of message `id`'s content, as another
/// writer might (not necessarily UTF-8). Returns the rows changed.
#[cfg(test)]
pub fn set_raw_content(conn: &Connection, id: i64, bytes: &[u8]) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE messages SET content = CAST(?2 AS TEXT) WHERE message_id = ?1",
        params![id, bytes],
    )?)
}

/// Test support: stores `texts` as user messages of session `s` (one batch): how
/// many.
#[cfg(test)]
pub fn insert_user_texts<S: AsRef<str>>(
    conn: &mut Connection,
    texts: impl IntoIterator<Item = S>,
) -> Result<usize> {
    let batch: Vec<NewMessage> = texts
        .into_iter()
        .map(|t| {
            let m = serde_json::json!({"role": "user", "content": t.as_ref()});
            crate::message::ingest::map_message(&m, None)
        })
        .collect::<Result<_>>()?;
    let session = SessionRef {
        session_id: "s".into(),
        session_key: None,
    };
    Ok(insert_batch(conn, &session, batch)?.messages.len())
}

/// Test support: the next message id will be above `id` (as after messages up
/// to `id` were stored and deleted: ids are never reused).
#[cfg(test)]
pub fn skip_message_ids_to(conn: &Connection, id: i64) -> Result<()> {
    conn.execute(
        "UPDATE sqlite_sequence SET seq = MAX(seq, ?1) WHERE name = 'messages'",
        [id],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ingest::map_message;
    use serde_json::json;

    fn session(id: &str) -> SessionRef {
        SessionRef {
            session_id: id.into(),
            session_key: None,
        }
    }

    /// `n` messages alternating a plain user string (no part) and an assistant
    /// turn of two blocks (two parts), with distinct timestamps.
    fn batch(n: usize, tag: &str) -> Vec<NewMessage> {
        (0..n)
            .map(|i| {
                let t = 1771313820000i64 + i as i64 * 1000;
                let m = if i % 2 == 0 {
                    json!({"role":"user","content":format!("{tag} question {i}"),"timestamp":t})
                } else {
                    json!({"role":"assistant","content":[
                        {"type":"thinking","thinking":format!("{tag} thought {i}")},
                        {"type":"text","text":format!("{tag} answer {i}")}],"timestamp":t})
                };
                map_message(&m, None).unwrap()
            })
            .collect()
    }

    fn db() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::migrate::migrate(&mut conn).unwrap();
        conn
    }

    #[test]
    fn multi_row_inserts_place_every_row_of_a_batch_longer_than_one_statement() {
        let mut conn = db();
        let n = ROWS_PER_INSERT * 2 + 3;
        let out = insert_batch(&mut conn, &session("s"), batch(n, "a")).unwrap();
        let ids: Vec<i64> = out.messages.iter().map(|m| m.message_id.unwrap()).collect();
        assert_eq!(ids, (1..=n as i64).collect::<Vec<_>>());
        let seqs: Vec<i64> = out.messages.iter().map(|m| m.seq.unwrap()).collect();
        assert_eq!(seqs, (1..=n as i64).collect::<Vec<_>>());
        // Each message's rows: its content, its parts under its id, its context item.
        let items = context_items(&conn, out.conversation_id).unwrap();
        let item_ids: Vec<i64> = items.iter().map(|c| c.message_id.unwrap()).collect();
        assert_eq!(item_ids, ids);
        assert!(items.iter().enumerate().all(|(i, c)| c.ordinal == i as i64));
        let stored = stored_by_ids(&conn, &ids).unwrap();
        for (i, (m, s)) in batch(n, "a").iter().zip(&stored).enumerate() {
            assert_eq!(s.content, m.content, "message {i}");
            assert_eq!(s.parts.len(), m.parts.len(), "message {i}");
            for (p, q) in m.parts.iter().zip(&s.parts) {
                assert_eq!(q.text_content, p.text_content, "message {i}");
                assert_eq!(q.metadata.as_deref(), Some(p.metadata.as_str()));
            }
        }
        let part_ids: Vec<String> = conn
            .prepare("SELECT part_id FROM message_parts ORDER BY message_id, ordinal")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let expected: Vec<String> = ids
            .iter()
            .filter(|id| *id % 2 == 0)
            .flat_map(|id| [part_id(*id, 0), part_id(*id, 1)])
            .collect();
        assert_eq!(part_ids, expected);
    }

    #[test]
    fn message_ids_never_repeat_the_ids_of_deleted_messages() {
        let mut conn = db();
        let first = insert_batch(&mut conn, &session("gone"), batch(5, "a")).unwrap();
        conn.execute(
            "DELETE FROM conversations WHERE conversation_id = ?1",
            [first.conversation_id],
        )
        .unwrap();
        let n: i64 = conn
            .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0, "the cascade removed the messages");
        let next = insert_batch(&mut conn, &session("new"), batch(3, "b")).unwrap();
        let ids: Vec<i64> = next
            .messages
            .iter()
            .map(|m| m.message_id.unwrap())
            .collect();
        assert_eq!(
            ids,
            vec![6, 7, 8],
            "as AUTOINCREMENT: above every id ever used"
        );
        let seq: i64 = conn
            .query_row(
                "SELECT seq FROM sqlite_sequence WHERE name = 'messages'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(seq, 8);
    }

    #[test]
    fn a_row_that_breaks_a_constraint_fails_the_batch_and_writes_nothing() {
        let mut conn = db();
        let mut bad = batch(ROWS_PER_INSERT + 2, "a");
        // A role outside the schema's CHECK list (never produced by the mapping).
        bad[ROWS_PER_INSERT].role = "robot";
        assert!(insert_batch(&mut conn, &session("s"), bad).is_err());
        let n: i64 = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM messages) + (SELECT COUNT(*) FROM message_parts) + (SELECT COUNT(*) FROM context_items)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 0);
    }

    /// Two conversations ingested in alternating batches of three, so a run of one
    /// conversation's ids has the other's rows in its gaps; returns (a's ids, b's ids).
    fn interleaved(conn: &mut Connection) -> (Vec<i64>, Vec<i64>) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for round in 0..4 {
            for (name, ids) in [("a", &mut a), ("b", &mut b)] {
                let tag = format!("{name}{round}");
                let out = insert_batch(conn, &session(name), batch(3, &tag)).unwrap();
                ids.extend(out.messages.iter().map(|m| m.message_id.unwrap()));
            }
        }
        (a, b)
    }

    /// What [`for_each_source`] hands out, owned: (id, role, content, parts' texts).
    fn visit(conn: &Connection, ids: &[i64]) -> Vec<(i64, String, String, Vec<String>)> {
        let mut out = Vec::new();
        for_each_source(conn, ids, |s, parts| {
            let mut texts = Vec::new();
            while let Some(p) = parts.next_part()? {
                texts.push(format!("{}:{}", p.part_type, p.text_content.unwrap_or("")));
            }
            out.push((s.row.id, s.role.to_owned(), s.content.to_owned(), texts));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn sources_are_visited_once_each_in_id_order_with_their_own_parts() {
        let mut conn = db();
        let (a, b) = interleaved(&mut conn);
        let stored = |ids: &[i64]| {
            let mut ids = ids.to_vec();
            ids.sort_unstable();
            ids.dedup();
            stored_by_ids(&conn, &ids)
                .unwrap()
                .into_iter()
                .map(|m| {
                    let texts = m
                        .parts
                        .iter()
                        .map(|p| {
                            format!(
                                "{}:{}",
                                p.part_type,
                                p.text_content.as_deref().unwrap_or("")
                            )
                        })
                        .collect();
                    (m.message_id, m.role, m.content, texts)
                })
                .collect::<Vec<_>>()
        };
        let cases: Vec<Vec<i64>> = vec![
            // One conversation's run with the other's rows in its gaps (a range).
            a[..6].to_vec(),
            // Every other message of a run (still a range, half of it skipped).
            a.iter().step_by(2).copied().collect(),
            // Sparse ids (one lookup each), shuffled, repeated, unknown.
            vec![a[0], a[11]],
            vec![b[5], a[2], b[0], a[7]],
            vec![a[4], a[4], 999, a[1]],
            vec![],
        ];
        for ids in cases {
            let got = visit(&conn, &ids);
            assert_eq!(got, stored(&ids), "{ids:?}");
        }
        // A message whose parts the visitor leaves unread does not lend them to the next.
        let mut seen = Vec::new();
        for_each_source(&conn, &a[..4], |s, parts| {
            if s.row.id != a[1] {
                seen.push((
                    s.row.id,
                    parts
                        .next_part()?
                        .map(|p| p.text_content.map(str::to_owned)),
                ));
            }
            Ok(())
        })
        .unwrap();
        let first_part = |id: i64| {
            stored(&[id])[0]
                .3
                .first()
                .map(|t| Some(t.split_once(':').unwrap().1.to_owned()))
        };
        for (id, part) in seen {
            assert_eq!(part, first_part(id), "message {id}");
        }
    }

    #[test]
    fn parts_of_a_range_with_gaps_are_only_the_ones_asked_for() {
        let mut conn = db();
        let (a, _) = interleaved(&mut conn);
        for ids in [a[..6].to_vec(), vec![a[3], a[1]], vec![a[2], a[9]]] {
            let got = parts_of(&conn, &ids).unwrap();
            let mut keys: Vec<i64> = got.keys().copied().collect();
            keys.sort_unstable();
            let mut want: Vec<i64> = ids
                .iter()
                .copied()
                .filter(|id| !stored_by_ids(&conn, &[*id]).unwrap()[0].parts.is_empty())
                .collect();
            want.sort_unstable();
            assert_eq!(keys, want, "{ids:?}");
        }
    }

    #[test]
    fn dense_ranges_are_ascending_runs_at_most_twice_their_length() {
        assert_eq!(dense_range(&[3, 4, 5]), Some((3, 5)));
        assert_eq!(dense_range(&[3, 5, 7]), Some((3, 7)));
        assert_eq!(dense_range(&[3, 9]), None);
        assert_eq!(dense_range(&[5, 4, 6]), None);
        assert_eq!(dense_range(&[4, 4, 5]), None);
        assert_eq!(dense_range(&[i64::MIN, i64::MAX]), None);
        assert_eq!(dense_range(&[]), None);
        assert_eq!(dense_range(&[7]), Some((7, 7)));
    }
}
