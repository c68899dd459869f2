//! Newest-first answers from SQLite with a proof of order, for the cold path
//! ([`super::cold`]) when narrowing alone does not bound the work: recency-ordered
//! full text with many matches (common words), and regexes or CJK substrings with
//! no usable words. Messages mostly arrive in time order, so their id order is
//! almost always the catalog's recency order (time, then id). The walk reads
//! matches (FTS5 rowids, or message rows) from the highest id down, keeps the
//! newest `limit` in scope, and stops as soon as no unread message can be newer
//! than the oldest kept one: [`older_are_not_newer`] asks the `created_at` index
//! for a message below the lowest id read that is newer (parsed the catalog's way).
//! When that proof fails a few times (history ingested out of time order) or the
//! walk exceeds its budget, the query is left to the catalog (`None`), so every
//! answer given here is the catalog path's answer.

use std::collections::HashMap;

use rusqlite::Connection;

use super::{iso_ms, MessageHit, Query, ScopeStats, TopK, SNIPPET_CHARS};
use crate::error::Result;
use crate::recall::catalog::{parse_time_ms, Compiled};
use crate::recall::slices;
use crate::recall::text::{term_snippet, window};
use crate::store::recall::{self, MessageMeta, MessageRow};

/// Rows after which a newest-first scan (regex / substring walk) reads no
/// further page: enough for the newest 20 of a regex matching about one message
/// in 300, a walk that costs less than waiting for the catalog build, whatever
/// the history's length. With its last page and the catalog path's
/// last batch, a walk stays under that path's scan budget
/// ([`super::MAX_SCAN_ROWS`]; asserted below), so the catalog path is never
/// truncated where the walk answers.
pub const MAX_WALK_ROWS: usize = 8_192;
/// Content bytes after which a newest-first scan reads no further page: bounds
/// the reading and matching a walk over large tool results may do.
pub const MAX_WALK_BYTES: usize = 16 << 20;
/// The largest page a scan reads (pages double from [`PAGE`]).
const MAX_PAGE: usize = 1_024;
const _: () = assert!(MAX_WALK_ROWS + MAX_PAGE + super::BATCH < super::MAX_SCAN_ROWS);
/// Widest id span (highest message id minus the lowest id read) over which a
/// proof is tried: in time-ordered history the proof reads about that many
/// `created_at` index entries (the messages newer than the oldest kept one).
const MAX_PROOF_SPAN: i64 = 20_000;
/// Failed proofs after which the walk stops trying (the history is out of order).
const MAX_PROOFS: usize = 3;
/// Rows (or FTS5 ids) read per step of a walk.
const PAGE: usize = 64;
/// How far before its text's day a stored time can fall: a UTC offset moves it
/// by less than a day, a day past the end of a month (`02-31`, read leniently)
/// by up to three.
const MARGIN_MS: i64 = 4 * 86_400_000;

/// Whether every message with an id below `below` has a time (epoch ms, parsed as
/// the catalog parses it) at or before `t`, ignoring those at or after `before`
/// (out of scope anyway). Only texts that may mean a later time are read through
/// the `created_at` index (texts after `t`'s stored form, texts of the days
/// before that may carry an offset or an overflowing day, texts starting with a
/// sign or a space; see [`recall::message_times_maybe_after`]), and each is
/// parsed and checked.
pub fn older_are_not_newer(
    conn: &Connection,
    below: i64,
    t: i64,
    before: Option<i64>,
) -> Result<bool> {
    let text = |ms: i64| {
        crate::timestamp::from_millis(ms)
            .map(crate::timestamp::to_sqlite)
            .unwrap_or_default()
    };
    let days_before = text(t.saturating_sub(MARGIN_MS));
    let from = crate::text::head(&days_before, 10);
    let mut holds = true;
    recall::message_times_maybe_after(conn, below, &text(t), from, |created_at| {
        let time = parse_time_ms(created_at);
        if time > t && before.is_none_or(|b| time < b) {
            holds = false;
        }
        holds
    })?;
    Ok(holds)
}

/// A message the walk keeps: its metadata, time and (regex) snippet.
pub struct Found {
    /// Metadata.
    pub meta: MessageMeta,
    /// Parsed time, epoch ms.
    pub time: i64,
    /// Snippet, when built during the walk.
    pub snippet: Option<String>,
}

/// The state of one newest-first walk.
struct Walk<'q> {
    q: &'q Query,
    top: TopK,
    found: Vec<Found>,
    /// The lowest id read so far (every id above it, up to the start, was read).
    lowest: i64,
    /// The highest message id (the proof's cost grows with `max_id - lowest`).
    max_id: i64,
    proofs: usize,
    stats: ScopeStats,
}

/// Where a walk stands after a step.
#[derive(PartialEq, Eq)]
enum Step {
    Go,
    Done,
    GiveUp,
}

impl<'q> Walk<'q> {
    fn new(conn: &Connection, q: &'q Query, strategy: &str) -> Result<Walk<'q>> {
        Ok(Walk {
            q,
            top: TopK::new(q.limit),
            found: Vec::new(),
            lowest: i64::MAX,
            max_id: crate::store::messages::max_message_id(conn)?,
            proofs: 0,
            stats: ScopeStats {
                strategy: strategy.into(),
                ..ScopeStats::default()
            },
        })
    }

    /// Keeps a match when it is in scope.
    fn offer(&mut self, meta: MessageMeta, snippet: Option<String>) {
        let time = parse_time_ms(&meta.created_at);
        if !self.q.filter.accepts_at(meta.conversation_id, time) {
            return;
        }
        self.stats.candidates += 1;
        self.top.push(time, meta.id, self.found.len());
        self.found.push(Found {
            meta,
            time,
            snippet,
        });
    }

    /// After a page: done when nothing unread can enter the newest `limit`.
    fn settle(&mut self, conn: &Connection) -> Result<Step> {
        if self.lowest <= 1 {
            return Ok(Step::Done);
        }
        let Some(t) = self.top.oldest_when_full() else {
            return Ok(Step::Go);
        };
        if self.proofs >= MAX_PROOFS || self.max_id.saturating_sub(self.lowest) > MAX_PROOF_SPAN {
            return Ok(Step::Go);
        }
        self.proofs += 1;
        Ok(
            if older_are_not_newer(conn, self.lowest, t, self.q.filter.before_ms)? {
                Step::Done
            } else {
                Step::Go
            },
        )
    }

    /// The kept matches, newest first, and the stats.
    fn finish(self) -> (Vec<Found>, ScopeStats) {
        let mut found: Vec<Option<Found>> = self.found.into_iter().map(Some).collect();
        let chosen = self
            .top
            .into_sorted()
            .into_iter()
            .filter_map(|i| found[i].take())
            .collect();
        (chosen, self.stats)
    }
}

/// Most full-text matches the cold path reads before it leaves a query to the
/// catalog.
pub const MAX_CANDIDATES: usize = 1_000;

/// Recency-ordered full text: `messages_fts` ids highest first, their metadata a
/// page at a time, until the order proof holds or the matches end; `None` after
/// [`MAX_CANDIDATES`] ids without either.
pub fn full_text_newest(
    conn: &Connection,
    q: &Query,
    expr: &str,
) -> Result<Option<(Vec<Found>, ScopeStats)>> {
    let mut w = Walk::new(conn, q, "fts")?;
    let mut page: Vec<i64> = Vec::with_capacity(PAGE);
    let mut read = 0usize;
    let mut step = Step::Go;
    let mut failed = None;
    let run = |w: &mut Walk, page: &mut Vec<i64>| -> Result<Step> {
        let mut meta = recall::message_meta(conn, page)?;
        for id in page.drain(..) {
            if let Some(m) = meta.remove(&id) {
                w.offer(m, None);
            }
        }
        w.settle(conn)
    };
    recall::fts_message_ids_desc(conn, expr, |id| {
        if read == MAX_CANDIDATES {
            step = Step::GiveUp;
            return false;
        }
        read += 1;
        w.lowest = id;
        page.push(id);
        if page.len() < PAGE {
            return true;
        }
        match run(&mut w, &mut page) {
            Ok(s) => step = s,
            Err(e) => {
                failed = Some(e);
                return false;
            }
        }
        step == Step::Go
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    match step {
        Step::GiveUp => return Ok(None),
        Step::Go if !page.is_empty() => {
            // The matches ended: everything was read.
            run(&mut w, &mut page)?;
        }
        _ => {}
    }
    Ok(Some(w.finish()))
}

/// What a walk has read, against its bounds.
#[derive(Default)]
struct Spent {
    /// Rows read in id order (a page, a range).
    rows: usize,
    /// Rows read by id (a b-tree descent each: ≈ 4 rows' worth).
    by_id: usize,
    /// Content bytes read.
    bytes: usize,
}

impl Spent {
    /// Counts a row read, in id order or by id.
    fn row(&mut self, r: &MessageRow, by_id: bool) {
        if by_id {
            self.by_id += 1;
        } else {
            self.rows += 1;
        }
        self.bytes += r.content_bytes.len();
    }
}

impl Walk<'_> {
    /// Checks a row the walk read: in scope, then `verify`; a match is kept.
    fn check<F>(&mut self, r: &MessageRow, verify: &F)
    where
        F: Fn(&MessageRow) -> Option<(usize, usize)>,
    {
        if !self
            .q
            .filter
            .accepts_lazily(r.conversation_id, || parse_time_ms(r.created_at))
        {
            return;
        }
        self.stats.scanned += 1;
        if let Some((s, e)) = verify(r) {
            let snippet = window(r.content(), s, e, 50, SNIPPET_CHARS);
            self.offer(
                MessageMeta {
                    id: r.id,
                    conversation_id: r.conversation_id,
                    role: r.role.to_owned(),
                    created_at: r.created_at.to_owned(),
                },
                Some(snippet),
            );
        }
    }

    /// Reads the rows with ids from `from` up to the lowest read so far, highest
    /// first, a page at a time (pages doubling), checking each, and settles after
    /// every page: [`Step::Go`] once they are all read (`lowest` is then `from`),
    /// [`Step::GiveUp`] once `over` says the walk has read too much.
    fn rows_down_to<F>(
        &mut self,
        conn: &Connection,
        from: i64,
        verify: &F,
        spent: &mut Spent,
        over: impl Fn(&Spent) -> bool,
    ) -> Result<Step>
    where
        F: Fn(&MessageRow) -> Option<(usize, usize)>,
    {
        let mut page_rows = PAGE;
        loop {
            let mut read = 0usize;
            recall::messages_desc_between(conn, from, self.lowest, page_rows, |r| {
                read += 1;
                spent.row(r, false);
                self.lowest = r.id;
                self.check(r, verify);
            })?;
            if read < page_rows {
                self.lowest = from;
                return Ok(Step::Go);
            }
            match self.settle(conn)? {
                Step::Go => {}
                step => return Ok(step),
            }
            if over(spent) {
                return Ok(Step::GiveUp);
            }
            page_rows = (page_rows * 2).min(MAX_PAGE);
        }
    }
}

/// Messages newest id first, a page at a time, each in scope checked with
/// `verify` (a match's byte range in the row's text, [`MessageRow::content`]),
/// until the order proof holds or the table ends; `None` past [`MAX_WALK_ROWS`]
/// rows or [`MAX_WALK_BYTES`] of content.
pub fn scan_newest<F>(
    conn: &Connection,
    q: &Query,
    verify: F,
) -> Result<Option<(Vec<Found>, ScopeStats)>>
where
    F: Fn(&MessageRow) -> Option<(usize, usize)>,
{
    let mut w = Walk::new(conn, q, "scan-newest")?;
    let over = |s: &Spent| s.rows >= MAX_WALK_ROWS || s.bytes >= MAX_WALK_BYTES;
    match w.rows_down_to(conn, i64::MIN, &verify, &mut Spent::default(), over)? {
        Step::GiveUp => Ok(None),
        // Done, or the table ended: everything was read.
        _ => Ok(Some(w.finish())),
    }
}

/// Ids above the stored trigram slices (the tail, read whole, newest first) at
/// most, for a walk through them: the slices of a block are stored once it is
/// complete, in the background, so at least the last incomplete block is always
/// read.
pub const MAX_SLICE_TAIL: usize = 4 * slices::BLOCK_IDS as usize;
/// What a walk through the trigram slices reads at most, in rows (a row read by
/// id counts 4): the tail, and ≈ 4,000 candidates read by id, enough for a
/// needle id at a million messages, whose few hundred candidates (the ids of
/// other needles holding the same trigrams) are spread over every block; past
/// it the next step of the ladder (a two-character prefix token, the last
/// resort, the catalog's build) costs less.
pub const MAX_SLICE_WALK_COST: usize = MAX_SLICE_TAIL + 4 * 4_000;
/// Candidates a walk through the slices reads at a time.
const CHUNK: usize = 32;
/// A chunk of candidates whose ids span at most this many times their number is
/// read as one range of rows (dense candidates: a common word) rather than by id.
const DENSE: i64 = 4;

/// Newest first through the persisted trigram slices ([`slices`]): the rows
/// above the stored blocks a page at a time, as [`scan_newest`] reads, then the
/// stored spans (blocks, groups of blocks) from the newest down, each giving the ids whose slices hold
/// every trigram `req` needs (no message outside them can match), read
/// [`CHUNK`] at a time (across blocks when they are few), highest first, and
/// checked with `verify`; after every page and chunk the walk settles (the order
/// proof, as the scan's). `None` when no block is stored (or one is of another
/// layout), the tail is longer than
/// [`MAX_SLICE_TAIL`], or the walk passes [`MAX_SLICE_WALK_COST`] or twice
/// [`MAX_WALK_BYTES`]. Call it only when `req` [`slices::constrains`] the search.
pub fn slices_newest<F>(
    conn: &Connection,
    q: &Query,
    req: &Compiled,
    verify: F,
) -> Result<Option<(Vec<Found>, ScopeStats)>>
where
    F: Fn(&MessageRow) -> Option<(usize, usize)>,
{
    let spans = slices::spans_newest_first(conn)?;
    let covered = spans.first().map_or(0, slices::Span::end);
    let mut w = Walk::new(conn, q, "trigram-slices")?;
    if covered == 0 || w.max_id - covered > MAX_SLICE_TAIL as i64 {
        return Ok(None);
    }
    let over =
        |s: &Spent| s.rows + 4 * s.by_id > MAX_SLICE_WALK_COST || s.bytes >= 2 * MAX_WALK_BYTES;
    let mut spent = Spent::default();
    match w.rows_down_to(conn, covered + 1, &verify, &mut spent, over)? {
        Step::Go if w.settle(conn)? != Step::Done => {}
        Step::GiveUp => return Ok(None),
        _ => return Ok(Some(w.finish())),
    }
    let mut matcher = slices::Matcher::new(conn, req);
    // Candidates of the blocks passed, not read yet (increasing): read a chunk
    // at a time, so that a rare pattern's few candidates per block are read
    // together.
    let mut pending: Vec<i64> = Vec::new();
    let mut ids = Vec::new();
    for (k, &span) in spans.iter().enumerate() {
        let last = k + 1 == spans.len();
        if !matcher.span(span, &mut ids)? {
            return Ok(None);
        }
        ids.extend_from_slice(&pending);
        std::mem::swap(&mut pending, &mut ids);
        while pending.len() >= CHUNK || (last && !pending.is_empty()) {
            let chunk = pending.split_off(pending.len().saturating_sub(CHUNK));
            read_chunk(conn, &chunk, &mut spent, |r| w.check(r, &verify))?;
            w.lowest = chunk[0];
            match w.settle(conn)? {
                Step::Go => {}
                Step::Done => return Ok(Some(w.finish())),
                Step::GiveUp => return Ok(None),
            }
            if over(&spent) {
                return Ok(None);
            }
        }
        if pending.is_empty() {
            w.lowest = span.start();
            if w.settle(conn)? == Step::Done {
                return Ok(Some(w.finish()));
            }
        }
    }
    Ok(Some(w.finish()))
}

/// Reads the messages of `chunk` (ids in increasing order) and calls `f` with
/// each: as one range of rows when the ids are dense (rows between them that are
/// not in `chunk` are skipped), else by id.
fn read_chunk(
    conn: &Connection,
    chunk: &[i64],
    spent: &mut Spent,
    mut f: impl FnMut(&MessageRow),
) -> Result<()> {
    let (Some(&first), Some(&last)) = (chunk.first(), chunk.last()) else {
        return Ok(());
    };
    if last - first < DENSE * chunk.len() as i64 {
        return recall::for_each_message_between(conn, first - 1, last, |r| {
            spent.row(r, false);
            if chunk.binary_search(&r.id).is_ok() {
                f(r);
            }
        });
    }
    recall::messages_by_id(conn, chunk, |r| {
        spent.row(r, true);
        f(r);
    })
}

/// The hits of a walk, snippets built by `snippet` where the walk has none.
pub fn hits(found: Vec<Found>, mut snippet: impl FnMut(&Found) -> String) -> Vec<MessageHit> {
    found
        .into_iter()
        .map(|f| {
            let s = f.snippet.clone().unwrap_or_else(|| snippet(&f));
            MessageHit {
                message_id: f.meta.id,
                conversation_id: f.meta.conversation_id,
                role: f.meta.role,
                created_at: iso_ms(f.time),
                snippet: s,
                rank: None,
            }
        })
        .collect()
}

/// Snippets of full-text hits, read by id.
pub fn term_snippets(
    conn: &Connection,
    q: &Query,
    found: &[Found],
) -> Result<HashMap<i64, String>> {
    let ids: Vec<i64> = found.iter().map(|f| f.meta.id).collect();
    let texts = recall::message_contents(conn, &ids)?;
    Ok(texts
        .into_iter()
        .map(|(id, t)| (id, term_snippet(&t, &q.terms, SNIPPET_CHARS)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages with ids 1.. and the given stored times (raw rows, any text).
    fn db(times: &[&str]) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::migrate::migrate(&mut conn).unwrap();
        conn.execute_batch("INSERT INTO conversations (session_id) VALUES ('s')")
            .unwrap();
        for (i, t) in times.iter().enumerate() {
            conn.execute(
                "INSERT INTO messages (conversation_id, seq, role, content, token_count, created_at) VALUES (1, ?1, 'user', 'x', 1, ?2)",
                rusqlite::params![i as i64, t],
            )
            .unwrap();
        }
        conn
    }

    #[test]
    fn the_proof_sees_every_text_that_parses_later() {
        let t = parse_time_ms("2026-03-02 10:00:00");
        let newer = [
            "2026-03-02 10:00:01",
            "2026-03-02T10:00:00.500Z",
            "2026-03-01T23:00:00-12:00",
            "2026-02-31 12:00:00",
            " 2026-03-05 00:00:00",
            "2026-03-02 10:00:00.1",
            "2027-01-01",
        ];
        for n in newer {
            assert!(parse_time_ms(n) > t, "{n}");
            // An older id with the newer time, then messages in order.
            let conn = db(&[
                "2026-03-01 00:00:00",
                n,
                "2026-03-02 09:00:00",
                "2026-03-02 10:00:00",
            ]);
            assert!(!older_are_not_newer(&conn, 4, t, None).unwrap(), "{n}");
            // Not when it is out of scope, or above the id bound.
            assert!(older_are_not_newer(&conn, 2, t, None).unwrap(), "{n}");
            let before = Some(parse_time_ms(n));
            assert!(older_are_not_newer(&conn, 4, t, before).unwrap(), "{n}");
        }
        let not_newer = [
            "2026-03-02 10:00:00",
            "2026-03-02T09:59:59Z",
            "2026-03-02T12:00:00+05:00",
            "2026-02-28 23:00:00",
            "garbage",
            "",
        ];
        for n in not_newer {
            assert!(parse_time_ms(n) <= t, "{n}");
            let conn = db(&["2026-03-01 00:00:00", n, "2026-03-02 10:00:00"]);
            assert!(older_are_not_newer(&conn, 3, t, None).unwrap(), "{n}");
        }
    }
}
