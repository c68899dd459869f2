//! `grep` over messages from SQLite alone, for the calls that come before the
//! in-memory catalog is built (right after open, the catalog is built in the
//! background). Recency-ordered full text walks `messages_fts` newest id first
//! with an order proof ([`newest::full_text_newest`]); relevance and hybrid
//! order read every match ([`MAX_CANDIDATES`] at most). A regex goes, in this
//! order, through the whole words its literals contain when they are cheap to
//! look up (see [`word_expression`], [`words_are_cheap`]) and give few
//! candidates; newest first through the trigram slices
//! ([`newest::slices_newest`]); through the words with a two-character prefix
//! token; through the newest-first scan of messages ([`newest::scan_newest`]),
//! as CJK full text does; and when that gives up too, through the words again
//! with a one-character last word as a prefix token
//! ([`last_resort_expression`]). Every answer is exact: the hits and their order
//! are those the catalog path gives (recency ties broken by id, relevance in
//! FTS5 order). Anything else is left to the catalog (`Ok(None)`).

use std::collections::HashMap;

use rusqlite::Connection;

use super::messages::substring_match;
use super::newest::{self, MAX_CANDIDATES};
use super::{iso_ms, score, MessageHit, Mode, Query, ScopeStats, Sort, TopK, SNIPPET_CHARS};
use crate::error::Result;
use crate::recall::catalog::parse_time_ms;
use crate::recall::literals::Req;
use crate::recall::slices;
use crate::recall::text::{term_snippet, window};
use crate::store::recall::{self, MessageMeta, MessageRow};
use crate::store::Features;

/// [`MAX_CANDIDATES`] for the last resort ([`last_resort_expression`]): by the time its
/// matches are counted, FTS5 has already merged the prefix's doclists (the bulk
/// of the cost), so reading and checking a few thousand candidates is cheaper
/// than throwing that away and waiting for the catalog build.
pub const MAX_LAST_RESORT_CANDIDATES: usize = 4_000;

/// Searches messages without the catalog when that can be done exactly and
/// cheaply; `Ok(None)` when the query needs the catalog.
pub fn search_messages_cold(
    conn: &Connection,
    q: &Query,
    features: Features,
) -> Result<Option<(Vec<MessageHit>, ScopeStats)>> {
    let found = match (q.mode, &q.fts) {
        (Mode::FullText, Some(expr)) if !q.cjk && features.fts5 => full_text(conn, q, expr),
        (Mode::FullText, _) => substrings(conn, q),
        (Mode::Regex, _) => regex(conn, q, features),
    };
    // A damaged index is the catalog path's business (it falls back to substrings).
    Ok(found.ok().flatten())
}

/// Full text as case-insensitive substrings (CJK, or no FTS5): the
/// newest-first scan with the catalog path's matcher.
fn substrings(conn: &Connection, q: &Query) -> Result<Option<(Vec<MessageHit>, ScopeStats)>> {
    let needles: Vec<String> = q
        .terms
        .iter()
        .map(|t| crate::recall::text::normalize(t).into_owned())
        .collect();
    let found = newest::scan_newest(conn, q, |r| substring_match(r.content(), &needles))?;
    Ok(found.map(|(f, stats)| (newest::hits(f, |_| String::new()), stats)))
}

/// One candidate with what ordering and filtering need.
struct Candidate {
    meta: MessageMeta,
    time: i64,
    rank: Option<f64>,
}

/// Reads every match of `expr` (newest id first, or best rank first when
/// `ranked`) with its metadata, keeping those in scope; `None` when there are
/// more than `cap` matches. With `stop_at`, reading ends once that many are in
/// scope (relevance order needs no more).
fn candidates(
    conn: &Connection,
    q: &Query,
    expr: &str,
    ranked: bool,
    cap: usize,
    stop_at: Option<usize>,
) -> Result<Option<Vec<Candidate>>> {
    let mut matched: Vec<(i64, Option<f64>)> = Vec::new();
    let mut over = false;
    let mut take = |id: i64, rank: Option<f64>| {
        if matched.len() == cap {
            over = true;
            return false;
        }
        matched.push((id, rank));
        true
    };
    if ranked {
        recall::fts_message_ids_by_rank(conn, expr, |id, rank| take(id, Some(rank)))?;
    } else {
        recall::fts_message_ids_desc(conn, expr, |id| take(id, None))?;
    }
    if over && stop_at.is_none() {
        return Ok(None);
    }
    let ids: Vec<i64> = matched.iter().map(|m| m.0).collect();
    let mut meta = recall::message_meta(conn, &ids)?;
    let mut out = Vec::new();
    for (id, rank) in matched {
        let Some(m) = meta.remove(&id) else { continue };
        let time = parse_time_ms(&m.created_at);
        if !q.filter.accepts_at(m.conversation_id, time) {
            continue;
        }
        out.push(Candidate {
            meta: m,
            time,
            rank,
        });
        if stop_at.is_some_and(|n| out.len() >= n) {
            return Ok(Some(out));
        }
    }
    Ok((!over).then_some(out))
}

fn full_text(
    conn: &Connection,
    q: &Query,
    expr: &str,
) -> Result<Option<(Vec<MessageHit>, ScopeStats)>> {
    if q.sort == Sort::Recency {
        let Some((found, mut stats)) = newest::full_text_newest(conn, q, expr)? else {
            return Ok(None);
        };
        let mut snippets = newest::term_snippets(conn, q, &found)?;
        stats.scanned = snippets.len();
        let hits = newest::hits(found, |f| snippets.remove(&f.meta.id).unwrap_or_default());
        return Ok(Some((hits, stats)));
    }
    let stop_at = (q.sort == Sort::Relevance).then_some(q.limit);
    let Some(found) = candidates(conn, q, expr, true, MAX_CANDIDATES, stop_at)? else {
        return Ok(None);
    };
    let mut stats = ScopeStats {
        strategy: "fts".into(),
        candidates: found.len(),
        ..ScopeStats::default()
    };
    let now = crate::recall::grants::now_ms();
    let mut scored: Vec<(f64, &Candidate)> = found
        .iter()
        .map(|c| (score(q.sort, c.rank.unwrap_or(0.0), now, c.time), c))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let chosen: Vec<&Candidate> = scored.into_iter().take(q.limit).map(|(_, c)| c).collect();
    let ids: Vec<i64> = chosen.iter().map(|c| c.meta.id).collect();
    let texts = recall::message_contents(conn, &ids)?;
    stats.scanned = texts.len();
    let hits = chosen
        .into_iter()
        .map(|c| {
            let snippet = texts
                .get(&c.meta.id)
                .map(|t| term_snippet(t, &q.terms, SNIPPET_CHARS))
                .unwrap_or_default();
            hit(c, snippet)
        })
        .collect();
    Ok(Some((hits, stats)))
}

/// A regex: through the words of its literals when they are cheap to look up
/// and narrow to few candidates, else newest first through the trigram slices,
/// else through the words, else the newest-first scan, else the last resort.
fn regex(
    conn: &Connection,
    q: &Query,
    features: Features,
) -> Result<Option<(Vec<MessageHit>, ScopeStats)>> {
    let Some(re) = q.regex.as_ref() else {
        return Ok(None);
    };
    // Words without a two-character prefix token are cheap to look up; a
    // two-character prefix merges many terms' doclists and costs more than the
    // walk through the trigram slices.
    let words = q.words.as_ref().filter(|_| features.fts5);
    if let Some(expr) = words.filter(|_| q.cheap_words) {
        if let Some(found) = regex_words(conn, q, re, expr, MAX_CANDIDATES)? {
            return Ok(Some(found));
        }
    }
    // A regex that cannot match empty text matches a row's bytes exactly where it
    // matches its text, and a row that is not UTF-8 (no text) nowhere: only the
    // rows it matches are checked for UTF-8.
    let empty = re.is_match("");
    let verify = |r: &MessageRow| {
        if empty {
            re.find(r.content()).map(|m| (m.start(), m.end()))
        } else {
            let m = re.find(r.content_bytes)?;
            r.text().map(|_| (m.start(), m.end()))
        }
    };
    let walked = match q.req.as_ref().filter(|r| slices::constrains(r)) {
        Some(req) => newest::slices_newest(conn, q, req, verify)?,
        None => None,
    };
    if let Some((f, stats)) = walked {
        return Ok(Some((newest::hits(f, |_| String::new()), stats)));
    }
    if let Some(expr) = words.filter(|_| !q.cheap_words) {
        if let Some(found) = regex_words(conn, q, re, expr, MAX_CANDIDATES)? {
            return Ok(Some(found));
        }
    }
    if let Some((f, stats)) = newest::scan_newest(conn, q, verify)? {
        return Ok(Some((newest::hits(f, |_| String::new()), stats)));
    }
    // The last resort before waiting for the catalog (whose build reads every
    // message): a one-character last word as a prefix token (`"1 4" *`), costly
    // but still cheaper than that build.
    match (&q.short_words, features.fts5) {
        (Some(expr), true) => regex_words(conn, q, re, expr, MAX_LAST_RESORT_CANDIDATES),
        _ => Ok(None),
    }
}

/// Candidates whose texts a regex over words reads at a time: a search for the
/// newest 20 with a match in most candidates stops after the first chunk.
const READ_CHUNK: usize = 32;

fn regex_words(
    conn: &Connection,
    q: &Query,
    re: &super::Regex,
    expr: &str,
    cap: usize,
) -> Result<Option<(Vec<MessageHit>, ScopeStats)>> {
    let Some(found) = candidates(conn, q, expr, false, cap, None)? else {
        return Ok(None);
    };
    Ok(Some(newest_matches(conn, q, re, found, "fts-words")?))
}

/// The newest `limit` of `found` that `re` matches. The texts are read in the
/// answer's order (newest by time, then id), a chunk at a time, until `limit`
/// match: every candidate newer than the last one read has been checked, so the
/// newest `limit` matches are among those found.
fn newest_matches(
    conn: &Connection,
    q: &Query,
    re: &super::Regex,
    found: Vec<Candidate>,
    strategy: &str,
) -> Result<(Vec<MessageHit>, ScopeStats)> {
    let mut order: Vec<&Candidate> = found.iter().collect();
    order.sort_unstable_by_key(|c| std::cmp::Reverse((c.time, c.meta.id)));
    let mut snippets: HashMap<i64, String> = HashMap::new();
    let mut scanned = 0;
    for chunk in order.chunks(READ_CHUNK) {
        let ids: Vec<i64> = chunk.iter().map(|c| c.meta.id).collect();
        let texts = recall::message_contents(conn, &ids)?;
        scanned += texts.len();
        for (id, t) in &texts {
            if let Some(m) = re.find(t) {
                snippets.insert(*id, window(t, m.start(), m.end(), 50, SNIPPET_CHARS));
            }
        }
        if snippets.len() >= q.limit {
            break;
        }
    }
    let stats = ScopeStats {
        strategy: strategy.into(),
        candidates: found.len(),
        scanned,
        ..ScopeStats::default()
    };
    let hits = newest(&found, q.limit, |c| snippets.contains_key(&c.meta.id))
        .into_iter()
        .map(|c| {
            let s = snippets.remove(&c.meta.id).unwrap_or_default();
            hit(c, s)
        })
        .collect();
    Ok((hits, stats))
}

/// The newest `limit` candidates that `keep` accepts, by time then id.
fn newest(found: &[Candidate], limit: usize, keep: impl Fn(&Candidate) -> bool) -> Vec<&Candidate> {
    let mut top = TopK::new(limit);
    for (i, c) in found.iter().enumerate() {
        if keep(c) {
            top.push(c.time, c.meta.id, i);
        }
    }
    top.into_sorted().into_iter().map(|i| &found[i]).collect()
}

fn hit(c: &Candidate, snippet: String) -> MessageHit {
    MessageHit {
        message_id: c.meta.id,
        conversation_id: c.meta.conversation_id,
        role: c.meta.role.clone(),
        created_at: iso_ms(c.time),
        snippet,
        rank: c.rank,
    }
}

/// An FTS5 expression over `messages_fts` (unicode61 words, porter stems) that
/// every text satisfying the requirement matches: for each literal, the words it
/// contains whole (a separator on both sides inside the literal) as one phrase,
/// ended by the word touching the literal's end as a prefix token when that word
/// has two characters or more and ends in a digit (the text's token starts with
/// it; the stemmer only rewrites
/// letter suffixes, so such a prefix survives stemming on both sides). A word
/// touching the literal's start may be the tail of a longer word in the text, so
/// it is left out; non-ASCII literals are not used (the tokenizer's idea of a word
/// is then not ours). `None` when the requirement gives no such words.
pub fn word_expression(r: &Req) -> Option<String> {
    expression(r, MIN_PREFIX)
}

/// Whether [`word_expression`] needs no prefix token shorter than three
/// characters: FTS5 merges the doclists of every term a prefix covers, and a
/// two-character one covers a hundredth of all numbers (`"1 32" *` costs about
/// ten times `"1 325" *`; docs/decisions/cold-grep.md).
pub fn words_are_cheap(r: &Req) -> bool {
    expression(r, CHEAP_PREFIX) == expression(r, MIN_PREFIX)
}

/// Shortest prefix token [`words_are_cheap`] allows.
const CHEAP_PREFIX: usize = 3;

/// [`word_expression`] with one-character prefix tokens allowed: FTS5 then reads
/// the doclist of every term starting with that character (a tenth of all
/// numbers for a digit); worth it only where the alternative is waiting for the
/// catalog.
pub fn last_resort_expression(r: &Req) -> Option<String> {
    expression(r, 1)
}

fn expression(r: &Req, min_prefix: usize) -> Option<String> {
    match r {
        Req::Lit(s) => literal_phrase(s, min_prefix),
        Req::All(v) => {
            let parts: Vec<String> = v.iter().filter_map(|x| expression(x, min_prefix)).collect();
            (!parts.is_empty()).then(|| format!("({})", parts.join(" AND ")))
        }
        Req::Any(v) => {
            let parts: Option<Vec<String>> = v.iter().map(|x| expression(x, min_prefix)).collect();
            parts.map(|p| format!("({})", p.join(" OR ")))
        }
    }
}

/// Shortest word used as a prefix token: FTS5 reads the whole doclist of every
/// term a prefix covers, and a one-character prefix covers a tenth of all numbers.
const MIN_PREFIX: usize = 2;

/// The phrase of one literal (see [`word_expression`]).
fn literal_phrase(s: &str, min_prefix: usize) -> Option<String> {
    let (mut words, last) = words_of(s);
    let prefix =
        last.filter(|w| w.len() >= min_prefix && w.ends_with(|c: char| c.is_ascii_digit()));
    words.extend(prefix);
    if words.is_empty() {
        return None;
    }
    let star = if prefix.is_some() { " *" } else { "" };
    Some(format!("\"{}\"{star}", words.join(" ")))
}

/// The ASCII alphanumeric runs of `s` with a separator on both sides within `s`,
/// and the run ending `s` when a separator precedes it within `s`.
fn words_of(s: &str) -> (Vec<&str>, Option<&str>) {
    if !s.is_ascii() {
        return (Vec::new(), None);
    }
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut last = None;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if start == 0 {
            continue;
        }
        let word = crate::text::slice(s, start, i);
        if i < b.len() {
            out.push(word);
        } else {
            last = Some(word);
        }
    }
    (out, last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::literals;

    #[test]
    fn words_are_taken_only_when_whole() {
        let e = |p: &str| literals::of_pattern(p).as_ref().and_then(word_expression);
        assert_eq!(e("NEEDLE-12-345-x"), Some("\"12 345\"".into()));
        assert_eq!(e("ECONNRESET"), None);
        assert_eq!(
            e("SQLITE_BUSY: database is locked"),
            Some("\"busy database is\"".into())
        );
        assert_eq!(e("foo bar baz|x-y-z"), Some("(\"bar\" OR \"y\")".into()));
        assert_eq!(e("foo bar baz|xyz"), None);
        assert_eq!(e("a b c.*d e f"), Some("(\"b\" AND \"e\")".into()));
        assert_eq!(e("é café é"), None);
        // A word ending the literal is a prefix when it ends in a digit.
        assert_eq!(e("NEEDLE-1-123"), Some("\"1 123\" *".into()));
        assert_eq!(e("x-123"), Some("\"123\" *".into()));
        assert_eq!(e("call id-7a1"), Some("\"id 7a1\" *".into()));
        assert_eq!(e("123"), None);
        assert_eq!(e("flight_12"), Some("\"12\" *".into()));
        // One-character prefixes are not used (too many terms behind them).
        assert_eq!(e("NEEDLE-1-2"), Some("\"1\"".into()));
        assert_eq!(e("x-1"), None);
        // ... except as the last resort.
        let last = |p: &str| {
            literals::of_pattern(p)
                .as_ref()
                .and_then(last_resort_expression)
        };
        assert_eq!(last("NEEDLE-1-2"), Some("\"1 2\" *".into()));
        assert_eq!(last("x-1"), Some("\"1\" *".into()));
        assert_eq!(last("NEEDLE-1-123"), e("NEEDLE-1-123"));
    }
}
