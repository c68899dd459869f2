//! `grep` over summaries. Scope, time and order come from the in-memory
//! [`SummaryCatalog`]; the matches come from `summaries_fts`, the trigram table
//! `summaries_fts_cjk` (or LIKE) for CJK, and for regex from the trigram table
//! narrowed by the pattern's literals, else every summary in scope (bounded).
//! Content is read only for the rows returned or checked. Before the catalog is
//! loaded (it is built in the background at open), [`search_summaries_cold`]
//! runs the same code over a catalog of only the matched summaries.

use std::cmp::Reverse;
use std::collections::HashMap;

use super::summaries_newest::{self, WALK_ABOVE};
use super::{
    iso_ms, Mode, Query, ScopeStats, Sort, SummaryHit, BATCH, MAX_SCAN_ROWS, SNIPPET_CHARS,
};
use crate::error::{LcmError, Result};
use crate::recall::catalog::parse_time_ms;
use crate::recall::summary_catalog::SummaryCatalog;
use crate::recall::text::{term_snippet, window};
use crate::store::recall::{self, SummaryIndex, SummaryLike, SummaryMatch};
use crate::store::Features;
use rusqlite::Connection;

/// Where a summary search's candidates come from: a full-text table and the
/// expression to match there.
struct Plan<'q> {
    index: SummaryIndex,
    expr: &'q str,
    ranked: bool,
    strategy: &'static str,
    /// The strategy's name when a newest-first walk answers ([`summaries_newest`]).
    walked: &'static str,
}

/// The full-text table a query narrows summaries with: for a regex, the trigram
/// table with the pattern's literals; for full text, the word table, or the
/// trigram table for CJK terms of three characters or more. `None` when no table
/// applies (a regex then checks every summary in scope, full text uses LIKE).
fn plan(q: &Query, features: Features) -> Option<Plan<'_>> {
    match q.mode {
        Mode::Regex => q
            .trigram
            .as_deref()
            .filter(|_| features.trigram)
            .map(|expr| Plan {
                index: SummaryIndex::Trigram,
                expr,
                ranked: false,
                strategy: "trigram-index",
                walked: "trigram-newest",
            }),
        Mode::FullText => {
            let terms_ok = q.terms.iter().all(|t| t.chars().count() >= 3);
            let ranked = q.sort != Sort::Recency;
            match &q.fts {
                Some(expr) if !q.cjk && features.fts5 => Some(Plan {
                    index: SummaryIndex::Words,
                    expr,
                    ranked,
                    strategy: "fts",
                    walked: "fts-newest",
                }),
                Some(expr) if q.cjk && features.trigram && terms_ok => Some(Plan {
                    index: SummaryIndex::Trigram,
                    expr,
                    ranked,
                    strategy: "fts-trigram",
                    walked: "fts-trigram-newest",
                }),
                _ => None,
            }
        }
    }
}

/// Searches summaries (scope and order from the in-memory summary catalog).
pub fn search_summaries(
    conn: &Connection,
    sc: &SummaryCatalog,
    q: &Query,
    features: Features,
) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    let plan = plan(q, features);
    if let Some(p) = plan.as_ref().filter(|p| !p.ranked) {
        // A damaged index is left to the path below.
        if let Ok(Some(w)) =
            summaries_newest::newest(conn, sc, q, p.index, p.expr, q.regex.as_ref())
        {
            return walked(conn, sc, q, p, w);
        }
    }
    read_every_match(conn, sc, q, plan.as_ref())
}

/// Every match of the plan's index read, then filtered, ordered and cut; a damaged
/// index (or no plan) falls back to checking every summary in scope (regex) or LIKE.
fn read_every_match(
    conn: &Connection,
    sc: &SummaryCatalog,
    q: &Query,
    plan: Option<&Plan>,
) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    let found = plan.and_then(|p| fts_positions(conn, sc, p.index, p.expr, p.ranked).ok());
    finish(conn, sc, q, plan, found)
}

/// [`search_summaries`] without the newest-first walk: every match is read (the
/// answer a walk must give).
#[cfg(test)]
pub(super) fn search_summaries_reading_all(
    conn: &Connection,
    sc: &SummaryCatalog,
    q: &Query,
    features: Features,
) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    read_every_match(conn, sc, q, plan(q, features).as_ref())
}

/// The hits of a newest-first walk, built as the path that reads every match
/// builds them (`scanned`: the full-text rows the walk read).
fn walked(
    conn: &Connection,
    sc: &SummaryCatalog,
    q: &Query,
    p: &Plan,
    w: summaries_newest::Walked,
) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    let (hits, mut stats) = match &q.regex {
        Some(re) => check_summaries(conn, sc, q, w.ords, p.walked, |c: &str| {
            re.find(c).map(|m| (m.start(), m.end()))
        })?,
        None => {
            let found = w.ords.into_iter().map(|o| (o, None)).collect();
            ranked_summary_hits(conn, sc, q, found, p.walked)?
        }
    };
    stats.scanned = w.rows;
    Ok((hits, stats))
}

/// Whether `index` has more than [`WALK_ABOVE`] matches for `expr`.
fn many_matches(conn: &Connection, index: SummaryIndex, expr: &str) -> Result<bool> {
    recall::summary_fts_rows_desc(conn, index, expr, WALK_ABOVE, false, |_| {
        Ok(recall::WalkStep::Stop)
    })
}

/// Most full-text matches the cold summary search reads before it leaves a query
/// to the catalog.
pub const MAX_COLD_MATCHES: usize = 1_000;

/// Searches summaries before the summary catalog is loaded, when that can be done
/// exactly and cheaply: the full-text matches (at most [`MAX_COLD_MATCHES`]) are
/// read first, then a catalog of only those summaries
/// ([`SummaryCatalog::of_ids`]), and the rest is the catalog path's own code, so
/// the answer is the same. Full text without a usable table needs no catalog
/// (LIKE). `Ok(None)` when the query needs the full catalog: a regex without
/// literals the trigram table can use, more matches (in recency order, more than
/// [`WALK_ABOVE`]: the catalog, loaded in the background at open, then lets a
/// newest-first walk read only the newest of them; any recency-ordered search of
/// the trigram table, whose matches cost more to count than the catalog's path
/// costs), or a damaged index.
pub fn search_summaries_cold(
    conn: &Connection,
    q: &Query,
    features: Features,
) -> Result<Option<(Vec<SummaryHit>, ScopeStats)>> {
    let Some(plan) = plan(q, features) else {
        return match q.mode {
            Mode::FullText => like_summaries(conn, q).map(Some),
            Mode::Regex => Ok(None),
        };
    };
    // In recency order the catalog's path walks when the matches are many; on the
    // trigram table even counting them reads long doclists, so that path decides.
    if !plan.ranked
        && (plan.index == SummaryIndex::Trigram
            || many_matches(conn, plan.index, plan.expr).unwrap_or(true))
    {
        return Ok(None);
    }
    let mut matched: Vec<(String, Option<f64>)> = Vec::new();
    let mut over = false;
    let read = recall::summary_fts_matches(conn, plan.index, plan.expr, plan.ranked, |id, r| {
        over = matched.len() == MAX_COLD_MATCHES;
        if !over {
            matched.push((id.to_owned(), r));
        }
        !over
    });
    if read.is_err() || over {
        return Ok(None);
    }
    let ids: Vec<&str> = matched.iter().map(|m| m.0.as_str()).collect();
    let sc = SummaryCatalog::of_ids(conn, &ids)?;
    let found = matched
        .iter()
        .filter_map(|(id, r)| sc.position(id).map(|o| (o, *r)))
        .collect();
    finish(conn, &sc, q, Some(&plan), Some(found)).map(Some)
}

/// Orders, filters and checks the candidates (`found`: catalog positions of the
/// table's matches, in its order; `None` when no table was usable).
fn finish(
    conn: &Connection,
    sc: &SummaryCatalog,
    q: &Query,
    plan: Option<&Plan>,
    found: Option<Vec<(usize, Option<f64>)>>,
) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    match q.mode {
        Mode::Regex => {
            let re = q
                .regex
                .as_ref()
                .ok_or_else(|| LcmError::internal("regex missing"))?;
            let verify = |c: &str| re.find(c).map(|m| (m.start(), m.end()));
            let (ords, strategy) = match found {
                Some(found) => (found.into_iter().map(|(o, _)| o).collect(), "trigram-index"),
                None => ((0..sc.len()).collect(), "scan"),
            };
            check_summaries(conn, sc, q, ords, strategy, verify)
        }
        Mode::FullText => match (plan, found) {
            (Some(p), Some(found)) => ranked_summary_hits(conn, sc, q, found, p.strategy),
            _ => like_summaries(conn, q),
        },
    }
}

/// Catalog positions (and ranks) of the summaries an FTS table matches.
fn fts_positions(
    conn: &Connection,
    sc: &SummaryCatalog,
    index: SummaryIndex,
    expr: &str,
    ranked: bool,
) -> Result<Vec<(usize, Option<f64>)>> {
    let mut out = Vec::new();
    recall::summary_fts_matches(conn, index, expr, ranked, |id, rank| {
        if let Some(ord) = sc.position(id) {
            out.push((ord, rank));
        }
        true
    })?;
    Ok(out)
}

fn ranked_summary_hits(
    conn: &Connection,
    sc: &SummaryCatalog,
    q: &Query,
    found: Vec<(usize, Option<f64>)>,
    strategy: &str,
) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    let mut c: Vec<(usize, Option<f64>)> = found
        .into_iter()
        .filter(|(o, _)| q.filter.accepts_at(sc.conversation(*o), sc.time(*o)))
        .collect();
    let candidates = c.len();
    let now = crate::recall::grants::now_ms();
    let score = |(o, r): &(usize, Option<f64>)| {
        let rank = r.unwrap_or(0.0);
        match q.sort {
            Sort::Hybrid => rank / (1.0 + ((now - sc.time(*o)).max(0) as f64 / 3.6e6) * 0.001),
            _ => rank,
        }
    };
    match q.sort {
        Sort::Recency => c.sort_by_key(|(o, _)| Reverse((sc.time(*o), sc.rowid(*o)))),
        _ => c.sort_by(|a, b| score(a).total_cmp(&score(b))),
    }
    c.truncate(q.limit);
    let chosen = c.iter().map(|(o, r)| (sc.rowid(*o), *r)).collect();
    let (hits, mut stats) = term_hits(conn, q, chosen, strategy)?;
    stats.candidates = candidates;
    Ok((hits, stats))
}

/// A hit (without snippet) from a stored summary.
fn hit_of(m: &SummaryMatch, rank: Option<f64>) -> SummaryHit {
    SummaryHit {
        summary_id: m.summary_id.clone(),
        conversation_id: m.conversation_id,
        kind: m.kind,
        depth: m.depth,
        created_at: iso_ms(parse_time_ms(&m.time)),
        earliest_at: m.earliest_at.clone(),
        latest_at: m.latest_at.clone(),
        snippet: String::new(),
        rank,
    }
}

/// Checks summaries newest first against the pattern, reading content in batches,
/// until `limit` match or the scan budget is spent.
fn check_summaries<F>(
    conn: &Connection,
    sc: &SummaryCatalog,
    q: &Query,
    mut ords: Vec<usize>,
    strategy: &str,
    verify: F,
) -> Result<(Vec<SummaryHit>, ScopeStats)>
where
    F: Fn(&str) -> Option<(usize, usize)>,
{
    ords.retain(|&o| q.filter.accepts_at(sc.conversation(o), sc.time(o)));
    ords.sort_by_key(|&o| Reverse((sc.time(o), sc.rowid(o))));
    let mut stats = ScopeStats {
        strategy: strategy.into(),
        candidates: ords.len(),
        truncated: ords.len() > MAX_SCAN_ROWS,
        ..ScopeStats::default()
    };
    ords.truncate(MAX_SCAN_ROWS);
    let mut hits = Vec::new();
    'batches: for chunk in ords.chunks(BATCH) {
        let ids: Vec<i64> = chunk.iter().map(|&o| sc.rowid(o)).collect();
        let rows = recall::summaries_by_rowid(conn, &ids)?;
        for id in ids {
            stats.scanned += 1;
            let Some(row) = rows.get(&id) else {
                continue;
            };
            if let Some((s, e)) = verify(&row.content) {
                let mut hit = hit_of(row, None);
                hit.snippet = window(&row.content, s, e, 50, SNIPPET_CHARS);
                hits.push(hit);
                if hits.len() == q.limit {
                    stats.truncated = false;
                    break 'batches;
                }
            }
        }
    }
    Ok((hits, stats))
}

/// Builds hits for rowids chosen in order, with term snippets.
fn term_hits(
    conn: &Connection,
    q: &Query,
    chosen: Vec<(i64, Option<f64>)>,
    strategy: &str,
) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    let ids: Vec<i64> = chosen.iter().map(|c| c.0).collect();
    let rows: HashMap<i64, SummaryMatch> = recall::summaries_by_rowid(conn, &ids)?;
    let stats = ScopeStats {
        strategy: strategy.into(),
        candidates: chosen.len(),
        scanned: chosen.len(),
        ..ScopeStats::default()
    };
    let hits = chosen
        .into_iter()
        .filter_map(|(id, rank)| {
            let r = rows.get(&id)?;
            let mut hit = hit_of(r, rank);
            hit.snippet = term_snippet(&r.content, &q.terms, SNIPPET_CHARS);
            Some(hit)
        })
        .collect();
    Ok((hits, stats))
}

/// Full text without a usable index: every term as a LIKE substring.
fn like_summaries(conn: &Connection, q: &Query) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    if q.terms.is_empty() {
        return term_hits(conn, q, Vec::new(), "like");
    }
    let like = SummaryLike {
        conversations: q.filter.conversations.as_deref(),
        since: q.filter.since_ms.map(iso_ms),
        before: q.filter.before_ms.map(iso_ms),
        terms: &q.terms,
        limit: q.limit,
    };
    let chosen = recall::summaries_like(conn, &like)?
        .into_iter()
        .map(|id| (id, None))
        .collect();
    term_hits(conn, q, chosen, "like")
}
