//! Full-text tables against their base tables (read and repaired here; the
//! doctor turns the differences into violations). `summaries_fts` (and the trigram
//! `summaries_fts_cjk`) keep their own copy of each summary's text, one row per
//! summary; `messages_fts` indexes `messages.content` in place (external content),
//! up to the deferred-indexing watermark. FTS5's own `integrity-check` command is a
//! write statement, so these checks run on the writer connection inside a savepoint
//! that is always rolled back.

use std::collections::{BTreeMap, HashMap};

use rusqlite::{Connection, OptionalExtension};

use super::inspect::has_table;
use super::Features;
use crate::error::Result;

/// The summary full-text tables present in this build.
pub fn summary_tables(f: Features) -> Vec<&'static str> {
    let mut t = Vec::new();
    if f.fts5 {
        t.push("summaries_fts");
    }
    if f.fts5 && f.trigram {
        t.push("summaries_fts_cjk");
    }
    t
}

/// Runs FTS5's `integrity-check` command: `Some(false)` when the index does not
/// match, `None` on a read-only connection (the command is a write statement).
pub fn index_ok(conn: &Connection, table: &str, with_content: bool) -> Result<Option<bool>> {
    let sql = if with_content {
        format!("INSERT INTO {table}({table}, rank) VALUES('integrity-check', 1)")
    } else {
        format!("INSERT INTO {table}({table}) VALUES('integrity-check')")
    };
    conn.execute_batch("SAVEPOINT lcm_doctor_fts")?;
    let r = conn.execute_batch(&sql);
    conn.execute_batch("ROLLBACK TO lcm_doctor_fts; RELEASE lcm_doctor_fts")?;
    use rusqlite::ffi::ErrorCode as C;
    match r {
        Ok(()) => Ok(Some(true)),
        Err(e) => match e.sqlite_error_code() {
            Some(C::DatabaseCorrupt) => Ok(Some(false)),
            Some(C::ReadOnly) => Ok(None),
            _ => Err(e.into()),
        },
    }
}

/// One row of a summary full-text table.
struct FtsRow {
    rowid: i64,
    summary_id: String,
    conversation: Option<i64>,
    same_text: bool,
}

fn fts_rows(conn: &Connection, table: &str) -> Result<Vec<FtsRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT f.rowid, f.summary_id, s.conversation_id, f.content IS s.content
         FROM {table} f LEFT JOIN summaries s ON s.summary_id = f.summary_id"
    ))?;
    let rows = stmt
        .query_map([], |r| {
            Ok(FtsRow {
                rowid: r.get(0)?,
                summary_id: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                conversation: r.get(2)?,
                same_text: r.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Row-level differences of one summary full-text table.
#[derive(Debug, Default)]
pub struct SummaryFtsDiff {
    /// Summaries without a row, by conversation.
    pub missing: BTreeMap<i64, Vec<String>>,
    /// Rows whose text differs from the summary, by conversation: (summary, rowid).
    pub outdated: BTreeMap<i64, Vec<(String, i64)>>,
    /// Extra rows of existing summaries, by conversation: (summary, rowid).
    pub duplicate: BTreeMap<i64, Vec<(String, i64)>>,
    /// Rows of summaries that do not exist: (summary id, rowid).
    pub extra: Vec<(String, i64)>,
}

/// Compares a summary full-text table with `summaries` (all conversations, or one).
pub fn diff_summaries(
    conn: &Connection,
    table: &str,
    scope: Option<i64>,
) -> Result<SummaryFtsDiff> {
    let mut d = SummaryFtsDiff::default();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in fts_rows(conn, table)? {
        let Some(conv) = r.conversation else {
            d.extra.push((r.summary_id, r.rowid));
            continue;
        };
        if scope.is_some_and(|c| c != conv) {
            continue;
        }
        let n = seen.entry(r.summary_id.clone()).or_default();
        *n += 1;
        if *n > 1 {
            d.duplicate
                .entry(conv)
                .or_default()
                .push((r.summary_id, r.rowid));
        } else if !r.same_text {
            d.outdated
                .entry(conv)
                .or_default()
                .push((r.summary_id, r.rowid));
        }
    }
    let mut stmt = conn.prepare(
        "SELECT summary_id, conversation_id FROM summaries WHERE ?1 IS NULL OR conversation_id = ?1 ORDER BY summary_id",
    )?;
    for row in stmt.query_map([scope], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })? {
        let (id, conv) = row?;
        if !seen.contains_key(&id) {
            d.missing.entry(conv).or_default().push(id);
        }
    }
    Ok(d)
}

/// Makes a summary full-text table match `summaries` for the rows in `d`.
pub fn fix_summaries(conn: &Connection, table: &str, d: &SummaryFtsDiff) -> Result<usize> {
    let mut n = 0;
    let mut delete = conn.prepare(&format!("DELETE FROM {table} WHERE rowid = ?1"))?;
    let stale = d
        .outdated
        .values()
        .chain(d.duplicate.values())
        .flatten()
        .chain(d.extra.iter());
    for (_, rowid) in stale {
        n += delete.execute([rowid])?;
    }
    let mut insert = conn.prepare(&format!(
        "INSERT INTO {table} (summary_id, content) SELECT summary_id, content FROM summaries WHERE summary_id = ?1"
    ))?;
    for id in d
        .missing
        .values()
        .flatten()
        .chain(d.outdated.values().flatten().map(|(s, _)| s))
    {
        n += insert.execute([id])?;
    }
    Ok(n)
}

/// Rebuilds an FTS5 index from its stored text (or its content table).
pub fn rebuild(conn: &Connection, table: &str) -> Result<()> {
    conn.execute_batch(&format!("INSERT INTO {table}({table}) VALUES('rebuild')"))?;
    Ok(())
}

/// The deferred-indexing watermark of `messages_fts`.
pub fn watermark(conn: &Connection) -> Result<i64> {
    Ok(conn
        .query_row(
            "SELECT indexed_upto FROM lcm_fts_state WHERE table_name = 'messages_fts'",
            [],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(0))
}

fn max_message_id(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT COALESCE(MAX(message_id), 0) FROM messages",
        [],
        |r| r.get(0),
    )?)
}

/// Messages whose index rows are missing, extra or outdated (by conversation; the
/// conversation of an extra row is unknown: key -1).
#[derive(Debug, Default)]
pub struct MessageFtsDiff {
    /// Indexed-range messages without index rows.
    pub missing: BTreeMap<i64, Vec<i64>>,
    /// Index rows of messages that do not exist.
    pub extra: Vec<i64>,
    /// Messages whose index rows do not match their text.
    pub outdated: BTreeMap<i64, Vec<i64>>,
    /// The index differs but no row could be singled out.
    pub unlocated: bool,
}

impl MessageFtsDiff {
    /// Whether anything differs.
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty()
            && self.extra.is_empty()
            && self.outdated.is_empty()
            && !self.unlocated
    }
}

/// Compares `messages_fts` with `messages` up to the watermark (call after a flush).
/// FTS5's `integrity-check` command runs on `cmd` (a connection that may run write
/// statements; it is rolled back); on a read-only one the rows are compared instead.
pub fn diff_messages(conn: &Connection, cmd: &Connection) -> Result<MessageFtsDiff> {
    let w = watermark(conn)?;
    let caught_up = max_message_id(conn)? <= w;
    let verdict = if caught_up {
        index_ok(cmd, "messages_fts", true)?
    } else {
        None
    };
    if verdict == Some(true) {
        return Ok(MessageFtsDiff::default());
    }
    let mut d = MessageFtsDiff::default();
    if !has_table(conn, "messages_fts_docsize")? {
        d.unlocated = index_ok(cmd, "messages_fts", false)? == Some(false);
        return Ok(d);
    }
    locate_missing_and_extra(conn, w, &mut d)?;
    locate_outdated(conn, w, &mut d)?;
    d.unlocated = d.is_empty() && verdict == Some(false);
    Ok(d)
}

fn locate_missing_and_extra(conn: &Connection, w: i64, d: &mut MessageFtsDiff) -> Result<()> {
    let mut stmt = conn.prepare(
        "SELECT m.message_id, m.conversation_id FROM messages m
         WHERE m.message_id <= ?1 AND NOT EXISTS (SELECT 1 FROM messages_fts_docsize x WHERE x.id = m.message_id)
         ORDER BY m.message_id",
    )?;
    for row in stmt.query_map([w], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))? {
        let (m, c) = row?;
        d.missing.entry(c).or_default().push(m);
    }
    let mut stmt = conn.prepare(
        "SELECT x.id FROM messages_fts_docsize x
         WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.message_id = x.id) ORDER BY x.id",
    )?;
    d.extra = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(())
}

/// Messages tokenized at a time into the temporary index (bounds its memory).
const TOKENIZE_CHUNK: i64 = 2000;

/// Tokenizes the current text, a chunk of messages at a time, into a temporary
/// index with the same tokenizer and compares per-document token counts.
fn locate_outdated(conn: &Connection, w: i64, d: &mut MessageFtsDiff) -> Result<()> {
    let mut from = 0;
    while from < w {
        let to: i64 = conn
            .query_row(
                "SELECT message_id FROM messages WHERE message_id > ?1 AND message_id <= ?2
                 ORDER BY message_id LIMIT 1 OFFSET ?3",
                [from, w, TOKENIZE_CHUNK - 1],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(w);
        for (m, c) in outdated_between(conn, from, to)? {
            d.outdated.entry(c).or_default().push(m);
        }
        from = to;
    }
    Ok(())
}

/// Messages with ids in `(from, to]` whose index rows count other tokens than their
/// text has; the temporary index is created and dropped inside a savepoint.
fn outdated_between(conn: &Connection, from: i64, to: i64) -> Result<Vec<(i64, i64)>> {
    conn.execute_batch(
        "SAVEPOINT lcm_doctor_tok;
         CREATE VIRTUAL TABLE temp.lcm_doctor_tok USING fts5(content, tokenize='porter unicode61');",
    )?;
    let found = (|| -> Result<Vec<(i64, i64)>> {
        conn.execute(
            "INSERT INTO temp.lcm_doctor_tok(rowid, content)
             SELECT message_id, content FROM messages WHERE message_id > ?1 AND message_id <= ?2",
            [from, to],
        )?;
        let mut stmt = conn.prepare(
            "SELECT t.id, m.conversation_id FROM temp.lcm_doctor_tok_docsize t
             JOIN messages_fts_docsize x ON x.id = t.id
             JOIN messages m ON m.message_id = t.id
             WHERE x.sz IS NOT t.sz ORDER BY t.id",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    })();
    conn.execute_batch("ROLLBACK TO lcm_doctor_tok; RELEASE lcm_doctor_tok")?;
    found
}

/// Rebuilds `messages_fts` from `messages`, then takes out again what lies above the
/// watermark, so the writer's deferred indexing (which resumes at the watermark)
/// never indexes a message twice.
pub fn rebuild_messages(conn: &Connection) -> Result<()> {
    let w = watermark(conn)?;
    rebuild(conn, "messages_fts")?;
    conn.execute(
        "INSERT INTO messages_fts(messages_fts, rowid, content)
         SELECT 'delete', message_id, content FROM messages WHERE message_id > ?1",
        [w],
    )?;
    Ok(())
}
