//! Writing the summary DAG: one summary with its links, its FTS rows and the
//! context-list replacement, in one transaction. Metadata (depth, time range,
//! descendant and token counts, file ids) is computed here from the sources in the
//! same transaction, so the stored values always equal their recomputation.

use std::collections::{HashMap, HashSet};

use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, params_from_iter, Connection, Transaction};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::derived::{self, Meta};
use super::graph::{self, MsgRow};
use super::{summaries, Features};
use crate::error::{ErrorCode, LcmError, Result};
use crate::timestamp;

/// What a new summary is built from.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Sources {
    /// A leaf: raw messages, in order.
    Messages(Vec<i64>),
    /// A condensed node: summaries of one depth, in order.
    Summaries(Vec<String>),
}

/// A summary to write.
#[derive(Debug, Clone)]
pub struct NewSummary {
    /// Owning conversation.
    pub conversation_id: i64,
    /// Summary text.
    pub content: String,
    /// Summarizer model name.
    pub model: String,
    /// Sources; their context items must form one contiguous run.
    pub sources: Sources,
}

/// `sum_` + the first 16 hex digits of sha256(content + a random nonce).
pub fn new_summary_id(content: &str) -> String {
    let mut h = Sha256::new();
    h.update(content.as_bytes());
    h.update(uuid::Uuid::new_v4().as_bytes());
    format!("sum_{}", crate::text::head(&hex::encode(h.finalize()), 16))
}

fn marks(n: usize) -> String {
    vec!["?"; n].join(",")
}

/// A leaf's columns ([`derived::leaf`]) from its source messages, which must exist
/// and belong to the conversation.
fn leaf_meta(tx: &Transaction, conversation_id: i64, content: &str, ids: &[i64]) -> Result<Meta> {
    let sql = format!(
        "SELECT {} FROM messages WHERE message_id IN ({})",
        graph::MSG_COLUMNS,
        marks(ids.len())
    );
    let mut stmt = tx.prepare(&sql)?;
    let rows: Vec<MsgRow> = stmt
        .query_map(params_from_iter(ids.iter()), graph::message_from)?
        .collect::<rusqlite::Result<_>>()?;
    if rows.len() != ids.len() {
        return Err(LcmError::not_found(
            "a source message of the summary does not exist",
        ));
    }
    if rows.iter().any(|m| m.conversation_id != conversation_id) {
        return Err(LcmError::invalid(
            "source messages belong to another conversation",
        ));
    }
    let by_id: HashMap<i64, &MsgRow> = rows.iter().map(|m| (m.id, m)).collect();
    let ordered: Vec<&MsgRow> = ids.iter().filter_map(|id| by_id.get(id).copied()).collect();
    Ok(derived::leaf(content, &ordered))
}

/// A condensed node's columns ([`derived::condensed`]) from its source summaries'
/// stored columns; the sources must exist and belong to the conversation.
fn condensed_meta(
    tx: &Transaction,
    conversation_id: i64,
    content: &str,
    ids: &[String],
) -> Result<Meta> {
    let rows = summaries::by_ids(tx, ids)?;
    if rows.len() != ids.len() {
        return Err(LcmError::not_found(
            "a source summary of the summary does not exist",
        ));
    }
    if rows.iter().any(|s| s.conversation_id != conversation_id) {
        return Err(LcmError::invalid(
            "source summaries belong to another conversation",
        ));
    }
    let metas: Vec<Meta> = rows.iter().map(derived::stored).collect();
    Ok(derived::condensed_of(content, &metas, &rows))
}

fn source_len(sources: &Sources) -> i64 {
    let n = match sources {
        Sources::Messages(ids) => ids.len(),
        Sources::Summaries(ids) => ids.len(),
    };
    n as i64
}

/// The ordinals of the first and last source when `sources` are the context items
/// that come first from ordinal `start` on (the first one exactly at `start`), in
/// order: a range read on the key instead of a scan of the list. Ordinals need
/// not be consecutive: a sweep leaves gaps until its phase ends ([`close_gaps`]).
fn run_at(
    conn: &Connection,
    conversation_id: i64,
    start: i64,
    sources: &Sources,
) -> Result<Option<(i64, i64)>> {
    let len = usize::try_from(source_len(sources)).unwrap_or(0);
    // `+?1` and no bound LIMIT: with an ORDER BY, an equality or LIMIT on a bound
    // parameter makes SQLite re-prepare the statement on every run (≈ 0.1 ms, on
    // every pass); the rows are read lazily, so only `len` are stepped through,
    // each compared in place (no row is copied out).
    let mut stmt = conn.prepare_cached(
        "SELECT ordinal, message_id, summary_id FROM context_items WHERE conversation_id = +?1 AND ordinal >= ?2 ORDER BY ordinal",
    )?;
    let mut rows = stmt.query(params![conversation_id, start])?;
    let mut last = start;
    for i in 0..len {
        let Some(r) = rows.next()? else {
            return Ok(None);
        };
        let ordinal: i64 = r.get(0)?;
        let same = match sources {
            Sources::Messages(ids) => r.get::<_, Option<i64>>(1)? == Some(ids[i]),
            Sources::Summaries(ids) => {
                matches!(r.get_ref(2)?, ValueRef::Text(t) if t == ids[i].as_bytes())
            }
        };
        if !same || (i == 0 && ordinal != start) {
            return Ok(None);
        }
        last = ordinal;
    }
    Ok((len > 0).then_some((start, last)))
}

/// Whether `sources` are the context items that come first from ordinal `start`
/// on, in order (see [`run_at`]).
pub fn sources_in_place(
    conn: &Connection,
    conversation_id: i64,
    start: i64,
    sources: &Sources,
) -> Result<bool> {
    Ok(run_at(conn, conversation_id, start, sources)?.is_some())
}

/// [`source_range`], checking first whether the sources start at `hint`
/// ([`run_at`]).
fn source_range_at(
    tx: &Transaction,
    conversation_id: i64,
    sources: &Sources,
    hint: Option<i64>,
) -> Result<(i64, i64)> {
    if let Some(start) = hint.filter(|h| *h >= 0) {
        if let Some(range) = run_at(tx, conversation_id, start, sources)? {
            return Ok(range);
        }
    }
    source_range(tx, conversation_id, sources)
}

/// The ordinals of the first and last context item holding the sources; they must
/// be one run of the list holding exactly the sources, in order (no other item
/// between them; the ordinals themselves may have gaps).
fn source_range(tx: &Transaction, conversation_id: i64, sources: &Sources) -> Result<(i64, i64)> {
    let (column, keys): (&str, Vec<String>) = match sources {
        Sources::Messages(ids) => ("message_id", ids.iter().map(|i| i.to_string()).collect()),
        Sources::Summaries(ids) => ("summary_id", ids.clone()),
    };
    let sql = format!(
        "SELECT ordinal, CAST({column} AS TEXT) FROM context_items WHERE conversation_id = ?1 AND {column} IN ({}) ORDER BY ordinal",
        (0..keys.len()).map(|i| format!("?{}", i + 2)).collect::<Vec<_>>().join(",")
    );
    let mut stmt = tx.prepare(&sql)?;
    let mut args: Vec<Box<dyn rusqlite::ToSql>> = vec![Box::new(conversation_id)];
    for k in &keys {
        match sources {
            Sources::Messages(_) => args.push(Box::new(k.parse::<i64>().unwrap_or_default())),
            Sources::Summaries(_) => args.push(Box::new(k.clone())),
        }
    }
    let found: Vec<(i64, String)> = stmt
        .query_map(params_from_iter(args.iter()), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let in_order = found.len() == keys.len() && found.iter().zip(&keys).all(|(a, b)| a.1 == *b);
    let run = match (found.first(), found.last()) {
        (Some(first), Some(last)) if in_order => {
            let between: i64 = tx
                .prepare_cached(
                    "SELECT COUNT(*) FROM context_items WHERE conversation_id = ?1 AND ordinal BETWEEN ?2 AND ?3",
                )?
                .query_row(params![conversation_id, first.0, last.0], |r| r.get(0))?;
            (between == keys.len() as i64).then_some((first.0, last.0))
        }
        _ => None,
    };
    run.ok_or_else(|| {
        LcmError::new(
            ErrorCode::InvalidInput,
            "the sources are not one contiguous run of the context list, in order (they may have been compacted already)",
        )
    })
}

/// Replaces context items `[start, end]` by one summary item. Only the items after
/// `end` move, all by the same constant (`end - start`: a list that was 0..n-1
/// stays so): two range UPDATEs on the primary key (via negative temporary
/// ordinals, so the key never collides) instead of renumbering the whole list.
pub fn replace_context_range(
    tx: &Transaction,
    conversation_id: i64,
    start: i64,
    end: i64,
    summary_id: &str,
) -> Result<()> {
    place(tx, conversation_id, start, end, summary_id)?;
    shift_after(tx, conversation_id, end, end - start)
}

/// Moves every context item with an ordinal above `after` down by `by` (≥ 0), in
/// two UPDATEs over the key range: first to distinct negative ordinals, then back.
pub fn shift_after(tx: &Transaction, conversation_id: i64, after: i64, by: i64) -> Result<()> {
    if by == 0 {
        return Ok(());
    }
    tx.prepare_cached(
        "UPDATE context_items SET ordinal = -1 - (ordinal - ?3) WHERE conversation_id = ?1 AND ordinal > ?2",
    )?
    .execute(params![conversation_id, after, by])?;
    tx.prepare_cached(
        "UPDATE context_items SET ordinal = -1 - ordinal WHERE conversation_id = ?1 AND ordinal < 0",
    )?
    .execute([conversation_id])?;
    Ok(())
}

/// Renumbers a conversation's context items to 0..n-1 keeping their order; a no-op
/// when they already are (see [`close_gaps`]).
pub fn resequence(tx: &Transaction, conversation_id: i64) -> Result<()> {
    close_gaps(tx, conversation_id).map(|_| ())
}

/// Renumbers a conversation's context items to 0..n-1 keeping their order (what a
/// sweep's phase leaves are gaps: the ordinals of replaced runs) and returns n.
/// Reads the ordinals (the key only) and skips the prefix already in place; when
/// the rest are all ≥ 0, each run of consecutive ordinals moves down in one range
/// UPDATE (to distinct negative ordinals, then one flip), so every item moves at
/// most once and nothing before the first gap is touched. Negative ordinals (a
/// damaged list) are renumbered through a temporary table instead.
pub fn close_gaps(tx: &Transaction, conversation_id: i64) -> Result<i64> {
    let ordinals: Vec<i64> = tx
        .prepare_cached(
            "SELECT ordinal FROM context_items WHERE conversation_id = ?1 ORDER BY ordinal",
        )?
        .query_map([conversation_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let n = ordinals.len();
    let Some(mut i) = ordinals
        .iter()
        .enumerate()
        .position(|(k, o)| *o != k as i64)
    else {
        unmark_gaps(tx, conversation_id)?;
        return Ok(n as i64);
    };
    if ordinals[0] < 0 {
        renumber_through_table(tx, conversation_id)?;
        unmark_gaps(tx, conversation_id)?;
        return Ok(n as i64);
    }
    let mut down = tx.prepare_cached(
        "UPDATE context_items SET ordinal = -1 - (ordinal - ?4) WHERE conversation_id = ?1 AND ordinal BETWEEN ?2 AND ?3",
    )?;
    while i < n {
        let mut j = i;
        while j + 1 < n && ordinals[j + 1] == ordinals[j] + 1 {
            j += 1;
        }
        down.execute(params![
            conversation_id,
            ordinals[i],
            ordinals[j],
            ordinals[i] - i as i64
        ])?;
        i = j + 1;
    }
    tx.prepare_cached(
        "UPDATE context_items SET ordinal = -1 - ordinal WHERE conversation_id = ?1 AND ordinal < 0",
    )?
    .execute([conversation_id])?;
    unmark_gaps(tx, conversation_id)?;
    Ok(n as i64)
}

/// Records that a conversation's ordinals have gaps (in the transaction that makes
/// them): `lcm_context_gaps` names the conversations to close at the next open
/// when the run that made them never ended.
fn mark_gaps(tx: &Transaction, conversation_id: i64) -> Result<()> {
    tx.prepare_cached("INSERT OR IGNORE INTO lcm_context_gaps (conversation_id) VALUES (?1)")?
        .execute([conversation_id])?;
    Ok(())
}

fn unmark_gaps(tx: &Transaction, conversation_id: i64) -> Result<()> {
    tx.prepare_cached("DELETE FROM lcm_context_gaps WHERE conversation_id = ?1")?
        .execute([conversation_id])?;
    Ok(())
}

/// Closes the gaps of every conversation [`mark_gaps`] named (a compaction run
/// that did not end); returns how many there were.
pub fn close_marked_gaps(tx: &Transaction) -> Result<usize> {
    let marked: Vec<i64> = tx
        .prepare("SELECT conversation_id FROM lcm_context_gaps")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for c in &marked {
        close_gaps(tx, *c)?;
    }
    Ok(marked.len())
}

/// Renumbers any list (negative ordinals included) through a temporary table.
fn renumber_through_table(tx: &Transaction, conversation_id: i64) -> Result<()> {
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS lcm_reseq (old INTEGER PRIMARY KEY, new INTEGER NOT NULL); DELETE FROM lcm_reseq;",
    )?;
    tx.execute(
        "INSERT INTO lcm_reseq (old, new) SELECT ordinal, ROW_NUMBER() OVER (ORDER BY ordinal) - 1 FROM context_items WHERE conversation_id = ?1",
        [conversation_id],
    )?;
    tx.execute(
        "UPDATE context_items SET ordinal = -1 - (SELECT new FROM lcm_reseq WHERE old = context_items.ordinal) WHERE conversation_id = ?1",
        [conversation_id],
    )?;
    tx.execute(
        "UPDATE context_items SET ordinal = -1 - ordinal WHERE conversation_id = ?1",
        [conversation_id],
    )?;
    Ok(())
}

/// Writes the summary row, its FTS rows and its links, and replaces its sources in
/// the context list — all in one transaction. Returns the new summary id.
pub fn persist_summary(
    conn: &mut Connection,
    s: &NewSummary,
    features: Features,
) -> Result<String> {
    super::tx::write_tx(conn, |tx| persist_in(tx, s, features))
}

/// [`persist_summary`] inside a caller's transaction.
pub fn persist_in(tx: &Transaction, s: &NewSummary, features: Features) -> Result<String> {
    Ok(persist_detailed(tx, s, features, None)?.summary_id)
}

/// What [`persist_detailed`] wrote: enough for a caller holding the context list in
/// memory to apply the same replacement and token delta without re-reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Persisted {
    /// The new summary.
    pub summary_id: String,
    /// Its depth.
    pub depth: i64,
    /// Its token count (as stored).
    pub token_count: i64,
    /// First replaced ordinal (the summary's ordinal now).
    pub start: i64,
    /// Last replaced ordinal (before the replacement).
    pub end: i64,
    /// The largest ordinal after the write, plus one (the list's length when its
    /// ordinals have no gaps).
    pub next_ordinal: i64,
}

/// [`persist_in`], reporting where the replacement happened. `start_hint` is where
/// the caller expects the sources to start (checked, never trusted).
pub fn persist_detailed(
    tx: &Transaction,
    s: &NewSummary,
    features: Features,
    start_hint: Option<i64>,
) -> Result<Persisted> {
    let id = new_summary_id(&s.content);
    let (start, end, meta) = write_rows(tx, s, &id, start_hint, &[])?;
    summaries::index_new_summaries(tx, &[(id.as_str(), s.content.as_str())], features)?;
    replace_context_range(tx, s.conversation_id, start, end, &id)?;
    let max: Option<i64> = tx
        .prepare_cached("SELECT MAX(ordinal) FROM context_items WHERE conversation_id = ?1")?
        .query_row([s.conversation_id], |r| r.get(0))?;
    Ok(Persisted {
        summary_id: id,
        depth: meta.depth,
        token_count: meta.token_count,
        start,
        end,
        next_ordinal: max.map_or(0, |m| m + 1),
    })
}

/// Validates a summary's sources (metadata computed from them, their context run
/// located) and writes its row and links under `id`; the context list and the
/// full-text rows are left to the caller. `rows` are a leaf's source messages when the caller has them (see
/// [`Queued::rows`]). Returns the run's ordinals and the metadata.
fn write_rows(
    tx: &Transaction,
    s: &NewSummary,
    id: &str,
    start_hint: Option<i64>,
    rows: &[MsgRow],
) -> Result<(i64, i64, Meta)> {
    let meta = match &s.sources {
        Sources::Messages(ids) if !ids.is_empty() => {
            let given = rows.len() == ids.len()
                && rows.iter().zip(ids).all(|(r, id)| r.id == *id)
                && rows.iter().all(|r| r.conversation_id == s.conversation_id);
            if given {
                derived::leaf(&s.content, &rows.iter().collect::<Vec<_>>())
            } else {
                leaf_meta(tx, s.conversation_id, &s.content, ids)?
            }
        }
        Sources::Summaries(ids) if !ids.is_empty() => {
            let unique: HashSet<&String> = ids.iter().collect();
            if unique.len() != ids.len() {
                return Err(LcmError::invalid(
                    "a summary cannot list the same source twice",
                ));
            }
            condensed_meta(tx, s.conversation_id, &s.content, ids)?
        }
        _ => return Err(LcmError::invalid("a summary needs at least one source")),
    };
    let (start, end) = source_range_at(tx, s.conversation_id, &s.sources, start_hint)?;
    insert_row(tx, id, s, &meta)?;
    // One statement per summary: its sources in order, ordinal = position.
    match &s.sources {
        Sources::Messages(ids) => tx
            .prepare_cached(
                "INSERT INTO summary_messages (summary_id, message_id, ordinal)
                 SELECT ?1, value, key FROM json_each(?2)",
            )?
            .execute(params![id, serde_json::to_string(ids)?])?,
        Sources::Summaries(ids) => tx
            .prepare_cached(
                "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal)
                 SELECT ?1, value, key FROM json_each(?2)",
            )?
            .execute(params![id, serde_json::to_string(ids)?])?,
    };
    Ok((start, end, meta))
}

/// One summary of a batch: its id (chosen by the caller, so later work can refer
/// to it before the batch is written) and where its sources are expected.
#[derive(Debug, Clone)]
pub struct Queued {
    /// The summary.
    pub summary: NewSummary,
    /// Its id (see [`new_summary_id`]).
    pub id: String,
    /// Where the caller expects its sources to start *in the stored list*, with the
    /// earlier summaries of the batch already placed (checked, never trusted).
    pub start_hint: Option<i64>,
    /// A leaf's source messages as the caller read them (messages never change
    /// once stored), in source order: its derived columns are computed from them
    /// instead of reading the messages again. Empty: read them.
    pub rows: Vec<MsgRow>,
}

/// Writes several summaries of one conversation in the caller's transaction, in
/// order, each validated against the list as the earlier ones left it. Each
/// summary's item takes the ordinal of its first source; the other ordinals of its
/// run are left as gaps and nothing after it moves (a sweep closes the gaps once,
/// with [`close_gaps`], when its phase ends, instead of shifting every later item
/// per write). Any invalid summary fails the whole batch (the caller rolls back).
pub fn persist_batch(
    tx: &Transaction,
    batch: &[Queued],
    features: Features,
) -> Result<Vec<Persisted>> {
    let Some(conversation_id) = batch.first().map(|q| q.summary.conversation_id) else {
        return Ok(Vec::new());
    };
    mark_gaps(tx, conversation_id)?;
    let mut out = Vec::with_capacity(batch.len());
    for q in batch {
        if q.summary.conversation_id != conversation_id {
            return Err(LcmError::invalid("a batch writes one conversation"));
        }
        let (start, end, meta) = write_rows(tx, &q.summary, &q.id, q.start_hint, &q.rows)?;
        place(tx, conversation_id, start, end, &q.id)?;
        out.push(Persisted {
            summary_id: q.id.clone(),
            depth: meta.depth,
            token_count: meta.token_count,
            start,
            end,
            next_ordinal: 0,
        });
    }
    let texts: Vec<(&str, &str)> = batch
        .iter()
        .map(|q| (q.id.as_str(), q.summary.content.as_str()))
        .collect();
    summaries::index_new_summaries(tx, &texts, features)?;
    let max: Option<i64> = tx
        .prepare_cached("SELECT MAX(ordinal) FROM context_items WHERE conversation_id = ?1")?
        .query_row([conversation_id], |r| r.get(0))?;
    for p in &mut out {
        p.next_ordinal = max.map_or(0, |m| m + 1);
    }
    Ok(out)
}

/// Deletes context items `[start, end]` and puts the summary item at `start` (the
/// ordinals after it are left as they are).
fn place(
    tx: &Transaction,
    conversation_id: i64,
    start: i64,
    end: i64,
    summary_id: &str,
) -> Result<()> {
    tx.prepare_cached(
        "DELETE FROM context_items WHERE conversation_id = ?1 AND ordinal BETWEEN ?2 AND ?3",
    )?
    .execute(params![conversation_id, start, end])?;
    tx.prepare_cached(
        "INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id, created_at) VALUES (?1, ?2, 'summary', ?3, ?4)",
    )?
    .execute(params![conversation_id, start, summary_id, timestamp::now_sqlite()])?;
    Ok(())
}

/// The summary row (its full-text rows are written by the caller, see
/// [`summaries::index_new_summaries`]).
fn insert_row(tx: &Transaction, id: &str, s: &NewSummary, m: &Meta) -> Result<()> {
    let head = [
        Value::from(id.to_owned()),
        Value::from(s.conversation_id),
        Value::from(s.content.clone()),
        Value::from(timestamp::now_sqlite()),
        Value::from(s.model.clone()),
    ];
    tx.prepare_cached(&format!(
        "INSERT INTO summaries (summary_id, conversation_id, content, created_at, model, {})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        derived::STORED_COLUMNS
    ))?
    .execute(params_from_iter(
        head.into_iter().chain(derived::stored_values(m)),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ingest::map_message;
    use crate::store::conversations::SessionRef;
    use crate::store::messages::{context_items, insert_batch};
    use crate::tokens;
    use serde_json::json;

    /// Both full-text features, as the bundled SQLite has them.
    const BOTH: Features = Features {
        fts5: true,
        trigram: true,
    };

    fn setup(n: usize) -> (Connection, i64, Vec<i64>) {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        let batch = (0..n)
            .map(|i| map_message(&json!({"role":"user","content":format!("m{i} file_0123456789abcdef"),"timestamp": 1771313820000i64 + i as i64 * 60000}), None).unwrap())
            .collect();
        let out = insert_batch(
            &mut conn,
            &SessionRef {
                session_id: "s".into(),
                session_key: None,
            },
            batch,
        )
        .unwrap();
        let ids = out.messages.iter().map(|m| m.message_id.unwrap()).collect();
        (conn, out.conversation_id, ids)
    }

    #[test]
    fn leaf_then_condensed_keep_ordinals_and_metadata() {
        let (mut conn, conv, ids) = setup(6);
        let f = BOTH;
        let leaf = |ids: &[i64]| NewSummary {
            conversation_id: conv,
            content: "leaf".into(),
            model: "m".into(),
            sources: Sources::Messages(ids.to_vec()),
        };
        let a = persist_summary(&mut conn, &leaf(&ids[0..2]), f).unwrap();
        let b = persist_summary(&mut conn, &leaf(&ids[2..4]), f).unwrap();
        let items = context_items(&conn, conv).unwrap();
        assert_eq!(
            items.iter().map(|i| i.ordinal).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(items[0].summary_id.as_deref(), Some(a.as_str()));
        let c = persist_summary(
            &mut conn,
            &NewSummary {
                conversation_id: conv,
                content: "up".into(),
                model: "m".into(),
                sources: Sources::Summaries(vec![a.clone(), b.clone()]),
            },
            f,
        )
        .unwrap();
        let s = crate::store::summaries::get(&conn, &c).unwrap().unwrap();
        assert_eq!(
            (s.depth, s.descendant_count, s.kind.as_str()),
            (1, 2, "condensed")
        );
        assert_eq!(s.earliest_at.as_deref(), Some("2026-02-17T07:37:00.000Z"));
        assert_eq!(s.latest_at.as_deref(), Some("2026-02-17T07:40:00.000Z"));
        assert_eq!(s.file_ids, ["file_0123456789abcdef"]);
        let items = context_items(&conn, conv).unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(
            items.iter().map(|i| i.ordinal).collect::<Vec<_>>(),
            [0, 1, 2]
        );
    }

    /// One summary per transaction (compaction after each turn) leaves few
    /// full-text segments: each write ends with a bounded merge
    /// (`summaries::MERGE_PAGES_PER_WRITE`), and the indexes stay whole.
    #[test]
    fn summary_indexes_keep_few_segments_when_written_one_at_a_time() {
        let (mut conn, conv, ids) = setup(600);
        let f = BOTH;
        let words = ["rollback", "deploy", "hotel", "invoice", "flight", "budget"];
        for (k, pair) in ids.chunks(2).enumerate() {
            let content: String = (0..60)
                .map(|j| format!("{} {k}-{j} ", words[(k + j) % words.len()]))
                .collect();
            let s = NewSummary {
                conversation_id: conv,
                content,
                model: "m".into(),
                sources: Sources::Messages(pair.to_vec()),
            };
            persist_summary(&mut conn, &s, f).unwrap();
        }
        for table in ["summaries_fts", "summaries_fts_cjk"] {
            let segments: i64 = conn
                .query_row(
                    &format!("SELECT COUNT(DISTINCT segid) FROM {table}_idx"),
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert!(segments <= 8, "{table}: {segments} segments");
            conn.execute_batch(&format!(
                "INSERT INTO {table} ({table}) VALUES ('integrity-check')"
            ))
            .unwrap();
        }
        let hits: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM summaries_fts_cjk WHERE summaries_fts_cjk MATCH '\"hotel 29-\"'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(hits, 1);
    }

    #[test]
    fn non_contiguous_or_repeated_sources_are_rejected_without_writing() {
        let (mut conn, conv, ids) = setup(4);
        let f = BOTH;
        let bad = NewSummary {
            conversation_id: conv,
            content: "x".into(),
            model: "m".into(),
            sources: Sources::Messages(vec![ids[0], ids[2]]),
        };
        assert!(persist_summary(&mut conn, &bad, f).is_err());
        let n: i64 = conn
            .query_row("SELECT COUNT(*) FROM summaries", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
        assert_eq!(context_items(&conn, conv).unwrap().len(), 4);
    }

    fn keys(conn: &Connection, conv: i64) -> Vec<(i64, Option<i64>, Option<String>)> {
        context_items(conn, conv)
            .unwrap()
            .into_iter()
            .map(|i| (i.ordinal, i.message_id, i.summary_id))
            .collect()
    }

    #[test]
    fn replacement_shifts_only_later_items_and_checks_the_start_hint() {
        let (mut conn, conv, ids) = setup(12);
        let f = Features {
            fts5: true,
            trigram: false,
        };
        let leaf = |ids: &[i64]| NewSummary {
            conversation_id: conv,
            content: "leaf text".into(),
            model: "m".into(),
            sources: Sources::Messages(ids.to_vec()),
        };
        let write = |conn: &mut Connection, s: &NewSummary, hint: Option<i64>| {
            let tx = conn.transaction().unwrap();
            let p = persist_detailed(&tx, s, f, hint).unwrap();
            tx.commit().unwrap();
            p
        };
        // Middle run, right hint.
        let a = write(&mut conn, &leaf(&ids[3..7]), Some(3));
        assert_eq!((a.start, a.end, a.next_ordinal, a.depth), (3, 6, 9, 0));
        assert_eq!(a.token_count, tokens::estimate("leaf text"));
        // Wrong hint: found by the scan anyway.
        let b = write(&mut conn, &leaf(&ids[0..2]), Some(5));
        assert_eq!((b.start, b.end, b.next_ordinal), (0, 1, 8));
        // The last item alone: nothing after it moves.
        let c = write(&mut conn, &leaf(&ids[11..12]), Some(7));
        assert_eq!((c.start, c.end, c.next_ordinal), (7, 7, 8));
        let got = keys(&conn, conv);
        let expect: Vec<(i64, Option<i64>, Option<String>)> = vec![
            (0, None, Some(b.summary_id.clone())),
            (1, Some(ids[2]), None),
            (2, None, Some(a.summary_id.clone())),
            (3, Some(ids[7]), None),
            (4, Some(ids[8]), None),
            (5, Some(ids[9]), None),
            (6, Some(ids[10]), None),
            (7, None, Some(c.summary_id.clone())),
        ];
        assert_eq!(got, expect);
        // A stale plan (sources already replaced) is rejected, hint or not.
        let tx = conn.transaction().unwrap();
        assert!(persist_detailed(&tx, &leaf(&ids[3..7]), f, Some(2)).is_err());
        drop(tx);
        // Condensed over two summaries that are not adjacent is rejected; adjacent works.
        let tx = conn.transaction().unwrap();
        let bad = NewSummary {
            conversation_id: conv,
            content: "up".into(),
            model: "m".into(),
            sources: Sources::Summaries(vec![b.summary_id.clone(), a.summary_id.clone()]),
        };
        assert!(persist_detailed(&tx, &bad, f, Some(0)).is_err());
        drop(tx);
        let d = write(&mut conn, &leaf(&ids[2..3]), Some(1));
        assert_eq!((d.start, d.end, d.next_ordinal), (1, 1, 8));
        let up = NewSummary {
            conversation_id: conv,
            content: "up".into(),
            model: "m".into(),
            sources: Sources::Summaries(vec![
                b.summary_id.clone(),
                d.summary_id.clone(),
                a.summary_id.clone(),
            ]),
        };
        let e = write(&mut conn, &up, Some(0));
        assert_eq!((e.start, e.end, e.next_ordinal, e.depth), (0, 2, 6, 1));
        let got = keys(&conn, conv);
        assert_eq!(
            got.iter().map(|k| k.0).collect::<Vec<_>>(),
            (0..6).collect::<Vec<_>>()
        );
        assert_eq!(got[0].2.as_deref(), Some(e.summary_id.as_str()));
        assert_eq!(got[1].1, Some(ids[7]));
    }

    #[test]
    fn a_batch_leaves_gaps_until_they_are_closed_and_is_all_or_nothing() {
        let (mut conn, conv, ids) = setup(12);
        let f = BOTH;
        let q = |ids: &[i64], hint: i64, text: &str| Queued {
            summary: NewSummary {
                conversation_id: conv,
                content: text.into(),
                model: "m".into(),
                sources: Sources::Messages(ids.to_vec()),
            },
            id: new_summary_id(text),
            start_hint: Some(hint),
            rows: Vec::new(),
        };
        // Adjacent runs, a wrong hint (found by the scan) and a later run.
        let batch = vec![
            q(&ids[0..3], 0, "a"),
            q(&ids[3..5], 7, "b"),
            q(&ids[8..11], 8, "c"),
        ];
        let tx = conn.transaction().unwrap();
        let out = persist_batch(&tx, &batch, f).unwrap();
        tx.commit().unwrap();
        // Each summary sits at its first source's ordinal; nothing else moved.
        assert_eq!(
            out.iter()
                .map(|p| (p.start, p.end, p.next_ordinal))
                .collect::<Vec<_>>(),
            [(0, 2, 12), (3, 4, 12), (8, 10, 12)]
        );
        let gapped = vec![
            (0, None, Some(batch[0].id.clone())),
            (3, None, Some(batch[1].id.clone())),
            (5, Some(ids[5]), None),
            (6, Some(ids[6]), None),
            (7, Some(ids[7]), None),
            (8, None, Some(batch[2].id.clone())),
            (11, Some(ids[11]), None),
        ];
        assert_eq!(keys(&conn, conv), gapped);
        let s = crate::store::summaries::get(&conn, &batch[2].id)
            .unwrap()
            .unwrap();
        assert_eq!(s.earliest_at.as_deref(), Some("2026-02-17T07:45:00.000Z"));
        assert_eq!(s.latest_at.as_deref(), Some("2026-02-17T07:47:00.000Z"));
        let links: i64 = conn
            .query_row("SELECT COUNT(*) FROM summary_messages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(links, 8);
        // A batch whose second summary is stale writes nothing (the caller rolls back).
        let bad = vec![q(&ids[5..7], 5, "d"), q(&ids[0..1], 0, "e")];
        let tx = conn.transaction().unwrap();
        assert!(persist_batch(&tx, &bad, f).is_err());
        drop(tx);
        assert_eq!(keys(&conn, conv), gapped);
        // Runs across gaps: a condensed node over two summaries with a gap between
        // them, in the same batch as a leaf written before it.
        let cond = Queued {
            summary: NewSummary {
                conversation_id: conv,
                content: "up".into(),
                model: "m".into(),
                sources: Sources::Summaries(vec![batch[0].id.clone(), batch[1].id.clone()]),
            },
            id: new_summary_id("up"),
            start_hint: Some(0),
            rows: Vec::new(),
        };
        let leaf = q(&ids[5..7], 5, "f");
        let tx = conn.transaction().unwrap();
        let out = persist_batch(&tx, &[leaf.clone(), cond.clone()], f).unwrap();
        tx.commit().unwrap();
        assert_eq!((out[1].start, out[1].end), (0, 3));
        // Sources with another item between them are refused, gaps or not.
        let split = Queued {
            summary: NewSummary {
                conversation_id: conv,
                content: "split".into(),
                model: "m".into(),
                sources: Sources::Summaries(vec![cond.id.clone(), batch[2].id.clone()]),
            },
            id: new_summary_id("split"),
            start_hint: Some(0),
            rows: Vec::new(),
        };
        let tx = conn.transaction().unwrap();
        assert!(persist_batch(&tx, &[split], f).is_err());
        drop(tx);
        // Closing the gaps renumbers 0..n-1 keeping the order.
        let tx = conn.transaction().unwrap();
        assert_eq!(close_gaps(&tx, conv).unwrap(), 5);
        tx.commit().unwrap();
        assert_eq!(
            keys(&conn, conv),
            vec![
                (0, None, Some(cond.id.clone())),
                (1, None, Some(leaf.id.clone())),
                (2, Some(ids[7]), None),
                (3, None, Some(batch[2].id.clone())),
                (4, Some(ids[11]), None),
            ]
        );
        // A list without gaps is left alone; resequence is a no-op on it.
        let tx = conn.transaction().unwrap();
        assert_eq!(close_gaps(&tx, conv).unwrap(), 5);
        resequence(&tx, conv).unwrap();
        tx.commit().unwrap();
        assert_eq!(keys(&conn, conv)[4].0, 4);
    }

    #[test]
    fn gaps_left_by_a_batch_are_marked_and_closed_at_the_next_open() {
        let (mut conn, conv, ids) = setup(6);
        let f = Features {
            fts5: true,
            trigram: false,
        };
        let marks = |c: &Connection| -> i64 {
            c.query_row("SELECT COUNT(*) FROM lcm_context_gaps", [], |r| r.get(0))
                .unwrap()
        };
        let batch = vec![Queued {
            summary: NewSummary {
                conversation_id: conv,
                content: "a".into(),
                model: "m".into(),
                sources: Sources::Messages(ids[0..3].to_vec()),
            },
            id: new_summary_id("a"),
            start_hint: Some(0),
            rows: Vec::new(),
        }];
        let tx = conn.transaction().unwrap();
        persist_batch(&tx, &batch, f).unwrap();
        tx.commit().unwrap();
        assert_eq!(marks(&conn), 1);
        assert_eq!(keys(&conn, conv)[1].0, 3);
        // What an open does (migrate): the marked conversation is renumbered.
        crate::store::migrate::migrate(&mut conn).unwrap();
        assert_eq!(marks(&conn), 0);
        assert_eq!(
            keys(&conn, conv).iter().map(|k| k.0).collect::<Vec<_>>(),
            (0..4).collect::<Vec<_>>()
        );
    }

    #[test]
    fn resequence_handles_gaps_and_negative_ordinals() {
        let (mut conn, conv, ids) = setup(5);
        conn.execute_batch(
            "UPDATE context_items SET ordinal = -100 - ordinal;
             UPDATE context_items SET ordinal = (-100 - ordinal) * 3 + 2;
             UPDATE context_items SET ordinal = -7 WHERE ordinal = 2;",
        )
        .unwrap();
        let tx = conn.transaction().unwrap();
        resequence(&tx, conv).unwrap();
        tx.commit().unwrap();
        let got: Vec<(i64, Option<i64>)> =
            keys(&conn, conv).into_iter().map(|k| (k.0, k.1)).collect();
        assert_eq!(
            got,
            (0..5)
                .map(|i| (i, Some(ids[i as usize])))
                .collect::<Vec<_>>()
        );
    }
}
