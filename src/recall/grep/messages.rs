//! `grep` over messages through the in-memory [`Catalog`] (scope, time range and
//! recency order in memory). Full text goes through FTS5 (`messages_fts`) with a
//! sanitized expression, reading ids newest first and stopping as soon as the
//! newest `limit` are known; snippets are built for those only. Regex and CJK
//! queries narrow candidates with the catalog's trigram filters, then read and
//! check only those, newest first, within a scan budget (`scanned` / `truncated`
//! report it).

use std::collections::HashMap;

use rusqlite::Connection;

use super::{
    iso_ms, score, MessageHit, Mode, Query, ScopeStats, Sort, TopK, BATCH, MAX_SCAN_ROWS,
    SNIPPET_CHARS,
};
use crate::error::{LcmError, Result};
use crate::recall::catalog::Catalog;
use crate::recall::text::{self, term_snippet, window};
use crate::store::recall;
use crate::store::Features;

/// True when nothing at catalog positions `< ord` can enter `top` any more.
fn settled(top: &TopK, cat: &Catalog, ord: usize) -> bool {
    top.settled_below((ord > 0).then(|| cat.max_time_up_to(ord - 1)))
}

fn message_hit(cat: &Catalog, ord: usize, snippet: String, rank: Option<f64>) -> MessageHit {
    MessageHit {
        message_id: cat.id(ord),
        conversation_id: cat.conversation(ord),
        role: cat.role(ord).to_owned(),
        created_at: iso_ms(cat.time(ord)),
        snippet,
        rank,
    }
}

/// Searches messages.
pub fn search_messages(
    conn: &Connection,
    cat: &Catalog,
    q: &Query,
    features: Features,
) -> Result<(Vec<MessageHit>, ScopeStats)> {
    let (hits, mut stats) = search_messages_in(conn, cat, q, features)?;
    stats.indexed_messages = Some(cat.len());
    stats.index_bytes = Some(cat.memory_bytes());
    Ok((hits, stats))
}

fn search_messages_in(
    conn: &Connection,
    cat: &Catalog,
    q: &Query,
    features: Features,
) -> Result<(Vec<MessageHit>, ScopeStats)> {
    match (q.mode, &q.fts) {
        (Mode::Regex, _) => {
            let re = q
                .regex
                .as_ref()
                .ok_or_else(|| LcmError::internal("regex missing"))?;
            scan_messages(conn, cat, q, |c| re.find(c).map(|m| (m.start(), m.end())))
        }
        (Mode::FullText, Some(expr)) if !q.cjk && features.fts5 => {
            // A damaged or missing index falls back to substring matching.
            fts_messages(conn, cat, q, expr).or_else(|_| substring_messages(conn, cat, q))
        }
        (Mode::FullText, _) => substring_messages(conn, cat, q),
    }
}

/// Full text as case-insensitive substrings (CJK queries, or no usable FTS5).
fn substring_messages(
    conn: &Connection,
    cat: &Catalog,
    q: &Query,
) -> Result<(Vec<MessageHit>, ScopeStats)> {
    let needles: Vec<String> = q
        .terms
        .iter()
        .map(|t| text::normalize(t).into_owned())
        .collect();
    scan_messages(conn, cat, q, |c| substring_match(c, &needles))
}

/// Where the first needle occurs, when every needle occurs (case-normalized).
pub(super) fn substring_match(content: &str, needles: &[String]) -> Option<(usize, usize)> {
    if needles.is_empty() {
        return None;
    }
    let hay = text::normalize(content);
    let mut first: Option<usize> = None;
    for n in needles {
        let p = memchr::memmem::find(hay.as_bytes(), n.as_bytes())?;
        first = Some(first.map_or(p, |f| f.min(p)));
    }
    // Positions in the normalized text can differ from the original for
    // non-ASCII text; map them by character count.
    let p = first?;
    if hay.len() == content.len() {
        return Some((p, p + needles[0].len().min(content.len() - p)));
    }
    let chars = crate::text::head(&hay, p).chars().count();
    let start = content
        .char_indices()
        .nth(chars)
        .map_or(content.len(), |(i, _)| i);
    Some((start, start))
}

fn scan_messages<F>(
    conn: &Connection,
    cat: &Catalog,
    q: &Query,
    verify: F,
) -> Result<(Vec<MessageHit>, ScopeStats)>
where
    F: Fn(&str) -> Option<(usize, usize)>,
{
    let mut stats = ScopeStats {
        strategy: if q.req.is_some() {
            "trigram-filter"
        } else {
            "scan"
        }
        .into(),
        ..ScopeStats::default()
    };
    let mut top = TopK::new(q.limit);
    let mut snippets: HashMap<usize, String> = HashMap::new();
    let mut batch: Vec<usize> = Vec::with_capacity(BATCH);
    let mut check =
        |batch: &mut Vec<usize>, top: &mut TopK, stats: &mut ScopeStats| -> Result<()> {
            let ids: Vec<i64> = batch.iter().map(|&o| cat.id(o)).collect();
            let texts = recall::message_contents(conn, &ids)?;
            for &o in batch.iter() {
                stats.scanned += 1;
                let Some(c) = texts.get(&cat.id(o)) else {
                    continue;
                };
                if let Some((s, e)) = verify(c) {
                    snippets.insert(o, window(c, s, e, 50, SNIPPET_CHARS));
                    top.push(cat.time(o), cat.id(o), o);
                }
            }
            batch.clear();
            Ok(())
        };
    let mut failed: Option<LcmError> = None;
    cat.for_each_candidate_desc(q.req.as_ref(), |ord| {
        if !q.filter.accepts(cat, ord) {
            return true;
        }
        if stats.scanned + batch.len() >= MAX_SCAN_ROWS {
            stats.truncated = !settled(&top, cat, ord + 1);
            return false;
        }
        stats.candidates += 1;
        batch.push(ord);
        if batch.len() < BATCH {
            return true;
        }
        if let Err(e) = check(&mut batch, &mut top, &mut stats) {
            failed = Some(e);
            return false;
        }
        !settled(&top, cat, ord)
    });
    if let Some(e) = failed {
        return Err(e);
    }
    if !batch.is_empty() {
        check(&mut batch, &mut top, &mut stats)?;
    }
    let hits = top
        .into_sorted()
        .into_iter()
        .map(|o| message_hit(cat, o, snippets.remove(&o).unwrap_or_default(), None))
        .collect();
    Ok((hits, stats))
}

fn fts_messages(
    conn: &Connection,
    cat: &Catalog,
    q: &Query,
    expr: &str,
) -> Result<(Vec<MessageHit>, ScopeStats)> {
    let mut stats = ScopeStats {
        strategy: "fts".into(),
        ..ScopeStats::default()
    };
    let mut ranks: HashMap<usize, f64> = HashMap::new();
    let ords: Vec<usize> = match q.sort {
        Sort::Recency => {
            let mut top = TopK::new(q.limit);
            let mut hi = cat.len();
            recall::fts_message_ids_desc(conn, expr, |id| {
                let Some(ord) = position_below(cat, id, hi) else {
                    return true;
                };
                hi = ord;
                if !q.filter.accepts(cat, ord) {
                    return true;
                }
                stats.candidates += 1;
                top.push(cat.time(ord), id, ord);
                !settled(&top, cat, ord)
            })?;
            top.into_sorted()
        }
        Sort::Relevance | Sort::Hybrid => {
            let now = crate::recall::grants::now_ms();
            let mut scored: Vec<(f64, usize)> = Vec::new();
            recall::fts_message_ids_by_rank(conn, expr, |id, rank| {
                let Some(ord) = cat.position(id) else {
                    return true;
                };
                if !q.filter.accepts(cat, ord) {
                    return true;
                }
                stats.candidates += 1;
                ranks.insert(ord, rank);
                scored.push((score(q.sort, rank, now, cat.time(ord)), ord));
                !(q.sort == Sort::Relevance && scored.len() >= q.limit)
            })?;
            scored.sort_by(|a, b| a.0.total_cmp(&b.0));
            scored.into_iter().take(q.limit).map(|(_, o)| o).collect()
        }
    };
    let ids: Vec<i64> = ords.iter().map(|&o| cat.id(o)).collect();
    let texts = recall::message_contents(conn, &ids)?;
    stats.scanned = texts.len();
    let hits = ords
        .into_iter()
        .map(|o| {
            let snippet = texts
                .get(&cat.id(o))
                .map(|c| term_snippet(c, &q.terms, SNIPPET_CHARS))
                .unwrap_or_default();
            message_hit(cat, o, snippet, ranks.get(&o).copied())
        })
        .collect();
    Ok((hits, stats))
}

fn position_below(cat: &Catalog, id: i64, hi: usize) -> Option<usize> {
    let mut lo = 0;
    let mut hi = hi;
    while lo < hi {
        let mid = (lo + hi) / 2;
        match cat.id(mid).cmp(&id) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substring_positions_map_back_to_the_original() {
        assert_eq!(
            substring_match("Hello World", &["world".into()]),
            Some((6, 11))
        );
        let (s, _) = substring_match("ÄÄ 数据库 x", &["数据库".into()]).unwrap();
        assert_eq!(&"ÄÄ 数据库 x"[s..s + 9], "数据库");
        assert_eq!(substring_match("abc", &["abc".into(), "zzz".into()]), None);
    }
}
