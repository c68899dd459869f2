//! The reads recall is made of, as named operations: the message stream that
//! builds the in-memory catalogs, full-text matches (`messages_fts`,
//! `summaries_fts`, `summaries_fts_cjk`), content by id, LIKE over summaries, and
//! the summary-graph reads of `describe`. `crate::recall` decides what to ask and in
//! which order; only this module knows the SQL.

use std::collections::HashMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::{params_from_iter, Connection, OptionalExtension};

use crate::error::Result;

/// Ids looked up per statement by the batched reads.
const BATCH: usize = 32;

/// The one batched lookup by id: runs `select` (a statement ending in `IN`, with
/// the placeholder list appended here) over `ids` in chunks of [`BATCH`], a short
/// chunk padded with `pad` (an id no row has), and calls `row` for every row. The
/// statement text is the same for every chunk, so it is prepared once.
fn for_each_by_id<T: rusqlite::ToSql + Copy>(
    conn: &Connection,
    select: &str,
    ids: &[T],
    pad: T,
    mut row: impl FnMut(&rusqlite::Row) -> Result<()>,
) -> Result<()> {
    let sql = format!("{select} ({})", vec!["?"; BATCH].join(","));
    let mut stmt = conn.prepare_cached(&sql)?;
    for chunk in ids.chunks(BATCH) {
        let padded = chunk
            .iter()
            .copied()
            .chain(std::iter::repeat(pad))
            .take(BATCH);
        let mut rows = stmt.query(params_from_iter(padded))?;
        while let Some(r) = rows.next()? {
            row(r)?;
        }
    }
    Ok(())
}

/// Runs `f` inside one read transaction, so every read it makes sees the same
/// snapshot (the transaction is ended whatever `f` returns).
pub fn snapshot<T>(conn: &Connection, f: impl FnOnce() -> Result<T>) -> Result<T> {
    conn.execute_batch("BEGIN")?;
    let out = f();
    let _ = conn.execute_batch("COMMIT");
    out
}

/// A message as the catalog reads it (borrowed from the statement's row).
pub struct MessageRow<'a> {
    /// message_id
    pub id: i64,
    /// conversation_id
    pub conversation_id: i64,
    /// DB role.
    pub role: &'a str,
    /// created_at as stored.
    pub created_at: &'a str,
    /// Plain-text content as stored: UTF-8, unless another writer stored
    /// otherwise (see [`MessageRow::content`]). A search that can match bytes
    /// (a regex) reads these, and checks only its matches' text.
    pub content_bytes: &'a [u8],
}

impl<'a> MessageRow<'a> {
    /// The content as text; `None` when it is not UTF-8.
    pub fn text(&self) -> Option<&'a str> {
        std::str::from_utf8(self.content_bytes).ok()
    }

    /// The content as text; empty when it is not UTF-8 (another writer's bytes
    /// search as no text instead of failing the search).
    pub fn content(&self) -> &'a str {
        text_or_none(self.content_bytes)
    }
}

/// A stored content as text: empty when it is not UTF-8, so another writer's
/// bytes search as no text instead of failing the search.
fn text_or_none(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or("")
}

/// The columns a [`MessageRow`] is read from.
const MESSAGE_ROW: &str =
    "SELECT message_id, conversation_id, role, created_at, content FROM messages";

/// A stored message content's bytes: those of a text value, none for any other
/// value (another writer's NULL or blob is no text, as before).
fn stored_bytes(v: rusqlite::types::ValueRef<'_>) -> &[u8] {
    match v {
        rusqlite::types::ValueRef::Text(t) => t,
        _ => b"",
    }
}

/// Columns of [`MESSAGE_ROW`] as a [`MessageRow`] borrowing from the row.
fn message_row<'r>(r: &'r rusqlite::Row) -> Result<MessageRow<'r>> {
    Ok(MessageRow {
        id: r.get(0)?,
        conversation_id: r.get(1)?,
        role: r.get_ref(2)?.as_str().unwrap_or("user"),
        created_at: r.get_ref(3)?.as_str().unwrap_or(""),
        content_bytes: stored_bytes(r.get_ref(4)?),
    })
}

/// Calls `f` with every message whose id is above `after`, in id order, until it
/// fails (its error is returned). Returns how many were read.
pub fn for_each_message_after(
    conn: &Connection,
    after: i64,
    mut f: impl FnMut(&MessageRow) -> Result<()>,
) -> Result<usize> {
    let mut stmt = conn.prepare_cached(&format!(
        "{MESSAGE_ROW} WHERE message_id > ?1 ORDER BY message_id"
    ))?;
    let mut rows = stmt.query([after])?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        f(&message_row(r)?)?;
        n += 1;
    }
    Ok(n)
}

/// Runs `MESSAGE_ROW` followed by `tail` (its WHERE, ORDER BY and LIMIT) with
/// `params`, and calls `f` with every row.
fn each_message_row(
    conn: &Connection,
    tail: &str,
    params: impl rusqlite::Params,
    mut f: impl FnMut(&MessageRow),
) -> Result<()> {
    let mut stmt = conn.prepare_cached(&format!("{MESSAGE_ROW} {tail}"))?;
    let mut rows = stmt.query(params)?;
    while let Some(r) = rows.next()? {
        f(&message_row(r)?);
    }
    Ok(())
}

/// Calls `f` with every message whose id is above `after` and at most `upto`,
/// in id order.
pub fn for_each_message_between(
    conn: &Connection,
    after: i64,
    upto: i64,
    f: impl FnMut(&MessageRow),
) -> Result<()> {
    let tail = "WHERE message_id > ?1 AND message_id <= ?2 ORDER BY message_id";
    each_message_row(conn, tail, [after, upto], f)
}

/// Calls `f` with every message whose id is at least `from` and below `below`,
/// highest id first, at most `n` of them.
pub fn messages_desc_between(
    conn: &Connection,
    from: i64,
    below: i64,
    n: usize,
    f: impl FnMut(&MessageRow),
) -> Result<()> {
    let tail = "WHERE message_id >= ?1 AND message_id < ?2 ORDER BY message_id DESC LIMIT ?3";
    each_message_row(conn, tail, rusqlite::params![from, below, n as i64], f)
}

/// Calls `f` with the messages of `ids` that exist, in no particular order.
pub fn messages_by_id(
    conn: &Connection,
    ids: &[i64],
    mut f: impl FnMut(&MessageRow),
) -> Result<()> {
    let select = format!("{MESSAGE_ROW} WHERE message_id IN");
    for_each_by_id(conn, &select, ids, 0, |r| {
        f(&message_row(r)?);
        Ok(())
    })
}

/// Calls `f` with the `created_at` text of messages with an id below `below`
/// whose text may stand for a time after `after` (a stored `YYYY-MM-DD HH:MM:SS`
/// text), until `f` returns false: texts sorting after it; texts from `from` (a
/// few days earlier) up to it that are not 19 characters long (they may carry a
/// UTC offset) or name a day past the end of a short month (which lenient
/// parsing carries into the next month); texts sorting before `"0"` (a sign or
/// whitespace first). All three go through the `created_at` index
/// (`lcm_messages_created_idx`), checking the id in the index entry.
pub fn message_times_maybe_after(
    conn: &Connection,
    below: i64,
    after: &str,
    from: &str,
    mut f: impl FnMut(&str) -> bool,
) -> Result<()> {
    const Q: [&str; 3] = [
        "SELECT created_at FROM messages INDEXED BY lcm_messages_created_idx WHERE created_at > ?2 AND message_id < ?1",
        "SELECT created_at FROM messages INDEXED BY lcm_messages_created_idx WHERE created_at >= ?3 AND created_at <= ?2 AND message_id < ?1 \
         AND (length(created_at) <> 19 OR (substr(created_at, 6, 2) = '02' AND substr(created_at, 9, 2) > '28') \
              OR (substr(created_at, 6, 2) IN ('04', '06', '09', '11') AND substr(created_at, 9, 2) > '30'))",
        "SELECT created_at FROM messages INDEXED BY lcm_messages_created_idx WHERE created_at < '0' AND message_id < ?1",
    ];
    for sql in Q {
        let mut stmt = conn.prepare_cached(sql)?;
        let n = stmt.parameter_count();
        let all: [&dyn rusqlite::ToSql; 3] = [&below, &after, &from];
        let mut rows = stmt.query(&all[..n])?;
        while let Some(r) = rows.next()? {
            if !f(r.get_ref(0)?.as_str().unwrap_or("")) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The content of messages by id (unknown ids are absent from the map).
pub fn message_contents(conn: &Connection, ids: &[i64]) -> Result<HashMap<i64, String>> {
    let mut out = HashMap::with_capacity(ids.len());
    let select = "SELECT message_id, content FROM messages WHERE message_id IN";
    for_each_by_id(conn, select, ids, 0, |r| {
        let text = text_or_none(stored_bytes(r.get_ref(1)?));
        out.insert(r.get(0)?, text.to_owned());
        Ok(())
    })?;
    Ok(out)
}

/// Calls `f` with the id of every message `messages_fts` matches for `expr`,
/// highest id first, until `f` returns false.
pub fn fts_message_ids_desc(
    conn: &Connection,
    expr: &str,
    mut f: impl FnMut(i64) -> bool,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rowid DESC",
    )?;
    let mut rows = stmt.query([expr])?;
    while let Some(r) = rows.next()? {
        if !f(r.get(0)?) {
            break;
        }
    }
    Ok(())
}

/// Calls `f` with the id and FTS5 rank of every message `messages_fts` matches
/// for `expr`, best rank first, until `f` returns false.
pub fn fts_message_ids_by_rank(
    conn: &Connection,
    expr: &str,
    mut f: impl FnMut(i64, f64) -> bool,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rank",
    )?;
    let mut rows = stmt.query([expr])?;
    while let Some(r) = rows.next()? {
        if !f(r.get(0)?, r.get(1)?) {
            break;
        }
    }
    Ok(())
}

/// What a search needs of a message besides its text.
#[derive(Debug, Clone)]
pub struct MessageMeta {
    /// message_id
    pub id: i64,
    /// conversation_id
    pub conversation_id: i64,
    /// DB role.
    pub role: String,
    /// created_at as stored.
    pub created_at: String,
}

/// Id, conversation, role and time of messages by id (unknown ids are absent).
pub fn message_meta(conn: &Connection, ids: &[i64]) -> Result<HashMap<i64, MessageMeta>> {
    let mut out = HashMap::with_capacity(ids.len());
    let select =
        "SELECT message_id, conversation_id, role, created_at FROM messages WHERE message_id IN";
    for_each_by_id(conn, select, ids, 0, |r| {
        let m = MessageMeta {
            id: r.get(0)?,
            conversation_id: r.get(1)?,
            role: r.get(2)?,
            created_at: r.get(3)?,
        };
        out.insert(m.id, m);
        Ok(())
    })?;
    Ok(out)
}

/// How many summaries exist and their highest rowid (0 when none).
pub fn summary_count_and_max_rowid(conn: &Connection) -> Result<(i64, i64)> {
    Ok(conn
        .prepare_cached("SELECT COUNT(*), COALESCE(MAX(rowid), 0) FROM summaries")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// A summary as the summary catalog reads it.
pub struct SummaryKey<'a> {
    /// rowid
    pub rowid: i64,
    /// sum_…
    pub summary_id: &'a str,
    /// conversation_id
    pub conversation_id: i64,
    /// Latest source time, else creation time, as stored.
    pub time: &'a str,
}

/// Calls `f` with every summary whose rowid is above `after`: in rowid order,
/// except on the first load (`after == 0`), which reads the covering index
/// `lcm_summaries_keys_idx` in its own order (by summary id), so no summary
/// content is touched (the table's rows carry it before their times); later
/// catch-ups read the few new rows of the table.
pub fn for_each_summary_after(
    conn: &Connection,
    after: i64,
    mut f: impl FnMut(&SummaryKey),
) -> Result<()> {
    let keys = if after == 0 {
        conn.prepare_cached(&format!("{KEYS} INDEXED BY lcm_summaries_keys_idx"))
            .ok()
    } else {
        None
    };
    let mut stmt = match keys {
        Some(stmt) => stmt,
        None => conn.prepare_cached(&format!("{KEYS} WHERE rowid > ?1 ORDER BY rowid"))?,
    };
    let n = stmt.parameter_count();
    let mut rows = stmt.query(&[&after as &dyn rusqlite::ToSql][..n])?;
    while let Some(r) = rows.next()? {
        f(&key_of(r)?);
    }
    Ok(())
}

/// The columns the summary catalog reads.
const KEYS: &str =
    "SELECT rowid, summary_id, conversation_id, COALESCE(latest_at, created_at) FROM summaries";

fn key_of<'r>(r: &'r rusqlite::Row) -> Result<SummaryKey<'r>> {
    Ok(SummaryKey {
        rowid: r.get(0)?,
        summary_id: r.get_ref(1)?.as_str().unwrap_or(""),
        conversation_id: r.get(2)?,
        time: r.get_ref(3)?.as_str().unwrap_or(""),
    })
}

/// Calls `f` with the summaries among `ids` (unknown ids are skipped), in no
/// particular order: the keys a search needs of its matches before the summary
/// catalog is loaded.
pub fn summary_keys_by_id(
    conn: &Connection,
    ids: &[&str],
    mut f: impl FnMut(&SummaryKey),
) -> Result<()> {
    let select = format!("{KEYS} INDEXED BY lcm_summaries_keys_idx WHERE summary_id IN");
    for_each_by_id(conn, &select, ids, "", |r| {
        f(&key_of(r)?);
        Ok(())
    })
}

/// The full-text tables over summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryIndex {
    /// `summaries_fts` (porter, unicode61 words).
    Words,
    /// `summaries_fts_cjk` (trigram tokenizer: substrings of 3+ characters).
    Trigram,
}

impl SummaryIndex {
    fn table(self) -> &'static str {
        match self {
            SummaryIndex::Words => "summaries_fts",
            SummaryIndex::Trigram => "summaries_fts_cjk",
        }
    }

    /// The table's stored rows ([`super::schema::stored_rows`]: `c0` = summary
    /// id, `c1` = text; kept present by the migration).
    fn stored_rows(self) -> String {
        super::schema::stored_rows(self.table())
    }
}

/// Calls `f` with the summary id (and the FTS5 rank when `ranked`) of every
/// summary `index` matches for `expr`, in rowid order, until `f` returns false.
pub fn summary_fts_matches(
    conn: &Connection,
    index: SummaryIndex,
    expr: &str,
    ranked: bool,
    mut f: impl FnMut(&str, Option<f64>) -> bool,
) -> Result<()> {
    let (table, stored) = (index.table(), index.stored_rows());
    let cols = if ranked { "c.c0, f.rank" } else { "c.c0" };
    // The full-text table first (CROSS JOIN keeps that order): it gives rowids in
    // its own order, and each id is read by rowid from the stored rows.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {cols} FROM {table} f CROSS JOIN {stored} c ON c.id = f.rowid \
         WHERE {table} MATCH ?1 ORDER BY f.rowid"
    ))?;
    let mut rows = stmt.query([expr])?;
    while let Some(r) = rows.next()? {
        let rank = if ranked { r.get(1)? } else { None };
        if !f(r.get_ref(0)?.as_str().unwrap_or(""), rank) {
            break;
        }
    }
    Ok(())
}

/// What [`summary_fts_rows_desc`] does after a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkStep {
    /// Read the next row.
    Next,
    /// Read the next row, and report every further row as matching without
    /// reading the matches (for a caller that checks each row itself, once the
    /// expression has been seen to let nearly every row through).
    NextUnfiltered,
    /// Stop reading.
    Stop,
}

/// One row of a full-text table as [`summary_fts_rows_desc`] streams it.
pub struct FtsRow<'r> {
    /// The summary id it indexes.
    pub summary_id: &'r str,
    /// Whether the expression matches it.
    pub matched: bool,
    /// With `with_text`, the indexed text: the table's own stored copy of the
    /// summary's content (every writer stores it there byte for byte), so a walk
    /// that checks content reads no second copy by rowid. Empty when not UTF-8.
    pub text: Option<&'r str>,
}

/// Streams the rows of `index` from the highest rowid down to `f`, each with its
/// summary id and whether it matches `expr`, until `f` says stop (every row,
/// matching or not: a walk needs to know which summaries it has read). Returns
/// false without calling `f` when no more than `more_than` rows match (the
/// matches are read lazily, newest first, alongside the rows). Each row's text
/// is read only `with_text` (SQLite reads every selected column of every row).
pub fn summary_fts_rows_desc(
    conn: &Connection,
    index: SummaryIndex,
    expr: &str,
    more_than: usize,
    with_text: bool,
    mut f: impl FnMut(FtsRow) -> Result<WalkStep>,
) -> Result<bool> {
    let table = index.table();
    let mut m = conn.prepare_cached(&format!(
        "SELECT rowid FROM {table} WHERE {table} MATCH ?1 ORDER BY rowid DESC"
    ))?;
    let mut matches = m.query([expr])?;
    let mut ahead: std::collections::VecDeque<i64> = std::collections::VecDeque::new();
    while ahead.len() <= more_than {
        match matches.next()? {
            Some(r) => ahead.push_back(r.get(0)?),
            None => return Ok(false),
        }
    }
    // A text on its page comes in place, without a copy; one spilling onto
    // overflow pages is assembled.
    let text_col = if with_text { ", c1" } else { "" };
    let mut all = conn.prepare_cached(&format!(
        "SELECT id, c0{text_col} FROM {} ORDER BY id DESC",
        index.stored_rows()
    ))?;
    let mut rows = all.query([])?;
    let mut ended = false;
    let mut unfiltered = false;
    while let Some(r) = rows.next()? {
        let rowid: i64 = r.get(0)?;
        let matched = unfiltered || {
            drop_matches_above(&mut matches, &mut ahead, &mut ended, rowid)?;
            ahead.front() == Some(&rowid)
        };
        let text = if with_text {
            Some(r.get_ref(2)?.as_str().unwrap_or(""))
        } else {
            None
        };
        let row = FtsRow {
            summary_id: r.get_ref(1)?.as_str().unwrap_or(""),
            matched,
            text,
        };
        match f(row)? {
            WalkStep::Next => {}
            WalkStep::NextUnfiltered => unfiltered = true,
            WalkStep::Stop => break,
        }
    }
    Ok(true)
}

/// A summary as a search returns it.
#[derive(Debug, Clone)]
pub struct SummaryMatch {
    /// sum_…
    pub summary_id: String,
    /// conversation_id
    pub conversation_id: i64,
    /// `leaf` or `condensed`.
    pub kind: crate::store::summaries::SummaryKind,
    /// Depth in the DAG.
    pub depth: i64,
    /// Latest source time, else creation time, as stored.
    pub time: String,
    /// Earliest source time.
    pub earliest_at: Option<String>,
    /// Latest source time.
    pub latest_at: Option<String>,
    /// The text.
    pub content: String,
}

/// Summaries by rowid (unknown rowids are absent from the map).
pub fn summaries_by_rowid(conn: &Connection, rowids: &[i64]) -> Result<HashMap<i64, SummaryMatch>> {
    let mut out = HashMap::with_capacity(rowids.len());
    let select = "SELECT summary_id, conversation_id, kind, depth, COALESCE(latest_at, created_at), earliest_at, latest_at, content, rowid FROM summaries WHERE rowid IN";
    for_each_by_id(conn, select, rowids, -1, |r| {
        let m = SummaryMatch {
            summary_id: r.get(0)?,
            conversation_id: r.get(1)?,
            kind: r.get(2)?,
            depth: r.get(3)?,
            time: r.get(4)?,
            earliest_at: r.get(5)?,
            latest_at: r.get(6)?,
            content: r.get(7)?,
        };
        out.insert(r.get(8)?, m);
        Ok(())
    })?;
    Ok(out)
}

/// Drops the matches above `rowid` from `ahead`, reading more from `matches`
/// (newest first) until one at or below it comes or they end.
fn drop_matches_above(
    matches: &mut rusqlite::Rows,
    ahead: &mut std::collections::VecDeque<i64>,
    ended: &mut bool,
    rowid: i64,
) -> Result<()> {
    loop {
        if ahead.is_empty() && !*ended {
            match matches.next()? {
                Some(m) => ahead.push_back(m.get(0)?),
                None => *ended = true,
            }
        }
        match ahead.front() {
            Some(&m) if m > rowid => drop(ahead.pop_front()),
            _ => return Ok(()),
        }
    }
}

/// A substring search over summaries without a usable full-text index.
pub struct SummaryLike<'a> {
    /// Allowed conversations (`None` = all).
    pub conversations: Option<&'a [i64]>,
    /// Inclusive lower time bound (ISO).
    pub since: Option<String>,
    /// Exclusive upper time bound (ISO).
    pub before: Option<String>,
    /// Every one must occur (case-insensitively for ASCII, as LIKE does).
    pub terms: &'a [String],
    /// Most rowids returned.
    pub limit: usize,
}

/// Rowids of the summaries containing every term, newest (latest source time,
/// else creation time) first.
pub fn summaries_like(conn: &Connection, q: &SummaryLike) -> Result<Vec<i64>> {
    const TIME: &str = "julianday(COALESCE(latest_at, created_at))";
    let mut args: Vec<SqlValue> = Vec::new();
    let mut conds = Vec::new();
    if let Some(c) = q.conversations {
        let list: Vec<String> = c.iter().map(i64::to_string).collect();
        conds.push(format!("conversation_id IN ({})", list.join(",")));
    }
    for (bound, op) in [(&q.since, ">="), (&q.before, "<")] {
        if let Some(iso) = bound {
            args.push(SqlValue::Text(iso.clone()));
            conds.push(format!("{TIME} {op} julianday(?{})", args.len()));
        }
    }
    for t in q.terms {
        let escaped = t
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        args.push(SqlValue::Text(format!("%{escaped}%")));
        conds.push(format!("content LIKE ?{} ESCAPE '\\'", args.len()));
    }
    args.push(SqlValue::Integer(q.limit as i64));
    let filter = if conds.is_empty() {
        "1".to_owned()
    } else {
        conds.join(" AND ")
    };
    let sql = format!(
        "SELECT rowid FROM summaries WHERE {filter} ORDER BY {TIME} DESC, rowid DESC LIMIT ?{}",
        args.len()
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map(params_from_iter(args.iter()), |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(rows)
}

/// The conversation of a summary (`sum_…`) or large file (`file_…`) id.
pub fn conversation_of(conn: &Connection, id: &str) -> Result<Option<i64>> {
    let sql = if id.starts_with("file_") {
        "SELECT conversation_id FROM large_files WHERE file_id = ?1"
    } else {
        "SELECT conversation_id FROM summaries WHERE summary_id = ?1"
    };
    Ok(conn
        .prepare_cached(sql)?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// Distinct messages under a summary's whole source subtree.
pub fn source_message_count(conn: &Connection, id: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "WITH RECURSIVE sub(id) AS (SELECT ?1 UNION SELECT sp.parent_summary_id FROM summary_parents sp JOIN sub ON sp.summary_id = sub.id)
             SELECT COUNT(DISTINCT sm.message_id) FROM summary_messages sm WHERE sm.summary_id IN (SELECT id FROM sub)",
        )?
        .query_row([id], |r| r.get(0))?)
}

/// The summary itself and every summary reached through its sources (each path
/// once, 64 levels at most), shallowest first then by source path.
pub fn subtree_nodes(conn: &Connection, id: &str) -> Result<Vec<SubtreeNode>> {
    let mut stmt = conn.prepare_cached(
        "WITH RECURSIVE sub(summary_id, parent, d, path) AS (
           SELECT ?1, NULL, 0, ''
           UNION ALL
           SELECT sp.parent_summary_id, sub.summary_id, sub.d + 1,
                  CASE WHEN sub.path = '' THEN printf('%04d', sp.ordinal) ELSE sub.path || '.' || printf('%04d', sp.ordinal) END
           FROM summary_parents sp JOIN sub ON sp.summary_id = sub.summary_id WHERE sub.d < 64)
         SELECT s.summary_id, sub.parent, sub.d, s.kind, s.depth, s.token_count, s.descendant_count,
                s.descendant_token_count, s.source_message_token_count, s.earliest_at, s.latest_at, sub.path,
                (SELECT COUNT(*) FROM summary_parents p WHERE p.summary_id = s.summary_id)
                  + (SELECT COUNT(*) FROM summary_messages m WHERE m.summary_id = s.summary_id)
         FROM sub JOIN summaries s ON s.summary_id = sub.summary_id
         ORDER BY sub.d, sub.path",
    )?;
    let rows = stmt
        .query_map([id], |r| {
            Ok(SubtreeNode {
                summary_id: r.get(0)?,
                parent_summary_id: r.get(1)?,
                depth_from_root: r.get(2)?,
                kind: r.get(3)?,
                depth: r.get(4)?,
                token_count: r.get(5)?,
                descendant_count: r.get(6)?,
                descendant_token_count: r.get(7)?,
                source_message_token_count: r.get(8)?,
                earliest_at: r.get(9)?,
                latest_at: r.get(10)?,
                path: r.get(11)?,
                child_count: r.get(12)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// One summary of a source subtree, as [`subtree_nodes`] reads it.
#[derive(Debug, Clone)]
pub struct SubtreeNode {
    /// sum_…
    pub summary_id: String,
    /// The summary it was reached from (`None` for the root).
    pub parent_summary_id: Option<String>,
    /// Levels below the root.
    pub depth_from_root: i64,
    /// `leaf` or `condensed`.
    pub kind: crate::store::summaries::SummaryKind,
    /// Depth in the DAG.
    pub depth: i64,
    /// Tokens of the summary.
    pub token_count: i64,
    /// Stored descendant count.
    pub descendant_count: i64,
    /// Stored descendant token sum.
    pub descendant_token_count: i64,
    /// Stored source message tokens.
    pub source_message_token_count: i64,
    /// Earliest source time.
    pub earliest_at: Option<String>,
    /// Latest source time.
    pub latest_at: Option<String>,
    /// Source-ordinal path from the root (`0001.0003`).
    pub path: String,
    /// Sources (summaries + messages) linked to it.
    pub child_count: i64,
}

/// `id` and every summary that has it in its source subtree (64 levels at most).
pub fn ancestor_ids(conn: &Connection, id: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "WITH RECURSIVE up(id, d) AS (SELECT ?1, 0 UNION SELECT sp.summary_id, up.d + 1 FROM summary_parents sp JOIN up ON sp.parent_summary_id = up.id WHERE up.d < 64)
         SELECT id FROM up",
    )?;
    let ids = stmt
        .query_map([id], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ids)
}

/// Damage recall's tests inflict on a database, to check what searches do then
/// (test builds only).
#[cfg(test)]
pub mod damage {
    use rusqlite::Connection;

    use crate::error::Result;

    /// Deletes a summary row (foreign keys off: its links are left dangling).
    pub fn delete_summary(conn: &Connection, id: &str) -> Result<()> {
        conn.execute_batch("PRAGMA foreign_keys = OFF")?;
        conn.execute("DELETE FROM summaries WHERE summary_id = ?1", [id])?;
        Ok(())
    }

    /// Drops the word full-text tables of messages and summaries.
    pub fn drop_fts_tables(conn: &Connection) -> Result<()> {
        conn.execute_batch("DROP TABLE messages_fts; DROP TABLE summaries_fts;")?;
        Ok(())
    }
}
