//! Newest-first answers over summaries with many full-text matches (common
//! words; regexes whose literals are common): reading every match's summary id
//! costs a row of the full-text table's content per match (≈ 10,000 rows at a
//! million messages), while the newest `limit` are usually among the last rows
//! written. The walk reads the table's rows from the highest rowid down (every
//! row, with its summary id, and whether it matches), keeps the newest `limit`
//! matches in scope (a regex's candidates checked against the content first) and
//! stops once no summary it has not read can be newer than the oldest kept: the
//! summary catalog knows every summary's time, and a summary whose row was read
//! and did not match cannot match (each summary has one row in a full-text
//! table, as every writer keeps it). Past its budget the query goes to the path
//! that reads every match.

use rusqlite::Connection;

use super::{Query, Regex, TopK};
use crate::error::Result;
use crate::recall::summary_catalog::SummaryCatalog;
use crate::store::recall::{self, SummaryIndex, WalkStep};

/// Matches at or below which reading every match's summary id is cheaper than a
/// walk.
pub const WALK_ABOVE: usize = 128;
/// Most rows a walk reads (about what reading that many matches' ids costs; under
/// the catalog path's scan budget, [`super::MAX_SCAN_ROWS`], so that path is never
/// truncated where a walk answers).
pub const MAX_WALK_ROWS: usize = 1_024;
/// Rows read between two checks of whether the walk is done.
const PAGE: usize = 64;
/// A regex's walk stops reading the full-text matches once at least this share
/// of the rows read matched (9 in 10): every further row is then checked against
/// the content directly, which gives the same answer (the expression only narrows
/// what the regex checks) at less cost.
const UNFILTERED_NUMERATOR: usize = 9;
const UNFILTERED_DENOMINATOR: usize = 10;

/// What a walk found.
pub struct Walked {
    /// The newest matches in scope (at most `limit`), newest first, as catalog
    /// positions.
    pub ords: Vec<usize>,
    /// Full-text rows read.
    pub rows: usize,
    /// Whether the walk stopped reading the expression's matches and checked
    /// every further row's content (see [`UNFILTERED_NUMERATOR`]).
    pub unfiltered: bool,
}

/// The newest `q.limit` summaries in scope that `index` matches for `expr` (and,
/// with `regex`, whose content it matches); `None` when the matches are few (the
/// caller reads them all) or the walk runs past its budget.
pub fn newest(
    conn: &Connection,
    sc: &SummaryCatalog,
    q: &Query,
    index: SummaryIndex,
    expr: &str,
    regex: Option<&Regex>,
) -> Result<Option<Walked>> {
    let mut w = Walk {
        sc,
        q,
        top: TopK::new(q.limit),
        seen: vec![false; sc.len()],
        rows: 0,
        matched: 0,
        unfiltered: false,
        done: false,
        stopped: false,
    };
    let with_text = regex.is_some();
    let walked = recall::summary_fts_rows_desc(conn, index, expr, WALK_ABOVE, with_text, |row| {
        w.rows += 1;
        w.matched += usize::from(row.matched);
        if let Some(ord) = w.see(row.summary_id) {
            if row.matched && w.in_scope(ord) && content_matches(regex, &row) {
                w.push(ord);
            }
        }
        if !w.rows.is_multiple_of(PAGE) {
            return Ok(WalkStep::Next);
        }
        w.done = w.settled();
        w.stopped = w.done || w.rows >= MAX_WALK_ROWS;
        Ok(if w.stopped {
            WalkStep::Stop
        } else if regex.is_some() && !w.unfiltered && w.filter_useless() {
            w.unfiltered = true;
            WalkStep::NextUnfiltered
        } else {
            WalkStep::Next
        })
    })?;
    if !walked {
        return Ok(None);
    }
    if !w.stopped {
        // The rows ended: everything was read.
        w.done = true;
    }
    let (rows, unfiltered) = (w.rows, w.unfiltered);
    Ok(w.done.then(|| Walked {
        ords: w.top.into_sorted(),
        rows,
        unfiltered,
    }))
}

/// Whether a row's text matches `regex` (always, without one; the walk reads the
/// text whenever it has a regex).
fn content_matches(regex: Option<&Regex>, row: &recall::FtsRow) -> bool {
    regex.is_none_or(|re| re.is_match(row.text.unwrap_or("")))
}

/// The state of one walk.
struct Walk<'a> {
    sc: &'a SummaryCatalog,
    q: &'a Query,
    top: TopK,
    /// Catalog positions whose full-text row was read.
    seen: Vec<bool>,
    rows: usize,
    /// Rows reported as matching.
    matched: usize,
    /// The expression's matches are no longer read.
    unfiltered: bool,
    /// The newest `limit` are certain.
    done: bool,
    /// The walk stopped before the rows ended (done, or out of budget).
    stopped: bool,
}

impl Walk<'_> {
    /// Marks a summary id's row as read; its catalog position.
    fn see(&mut self, id: &str) -> Option<usize> {
        let ord = self.sc.position(id)?;
        self.seen[ord] = true;
        Some(ord)
    }

    fn in_scope(&self, ord: usize) -> bool {
        self.q
            .filter
            .accepts_at(self.sc.conversation(ord), self.sc.time(ord))
    }

    /// Whether the full-text expression lets through so many rows that reading its
    /// matches costs more than it saves (a regex's literals made of common words:
    /// on a trigram table, matching their phrases reads long position lists, and
    /// the regex checks every candidate's content anyway).
    fn filter_useless(&self) -> bool {
        self.matched * UNFILTERED_DENOMINATOR >= self.rows * UNFILTERED_NUMERATOR
    }

    fn push(&mut self, ord: usize) {
        self.top.push(self.sc.time(ord), self.sc.rowid(ord), ord);
    }

    /// Whether the newest `limit` are certain: `limit` are kept and every summary
    /// in scope newer than the oldest kept (by time, then rowid) had its row read.
    fn settled(&self) -> bool {
        let Some(oldest) = self.top.oldest_key_when_full() else {
            return false;
        };
        (0..self.sc.len()).all(|o| {
            self.seen[o] || (self.sc.time(o), self.sc.rowid(o)) <= oldest || !self.in_scope(o)
        })
    }
}
