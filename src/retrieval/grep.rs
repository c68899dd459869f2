//! `grep` over messages and summaries.
//!
//! Messages: the candidates come from the in-memory [`Catalog`] (scope, time range
//! and recency order in memory). Full text goes through FTS5 (`messages_fts`) with
//! a sanitized expression, reading rowids newest first and stopping as soon as the
//! newest `limit` are known; snippets are built for those only. Regex and CJK
//! queries narrow candidates with the catalog's trigram filters, then read and
//! check only those, newest first, within a scan budget (`scanned` / `truncated`
//! report it). Summaries (far fewer) are searched in SQL: `summaries_fts`, the
//! trigram table `summaries_fts_cjk` (or LIKE) for CJK, and for regex the same
//! trigram table narrowed by the pattern's literals, else a bounded scan.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use regex::Regex;
use rusqlite::types::Value as SqlValue;
use rusqlite::{params_from_iter, Connection};
use serde::{Deserialize, Serialize};

use super::catalog::{parse_time_ms, Catalog, Compiled};
use super::literals;
use super::sumcat::SummaryCatalog;
use super::text::{self, fts_match_expression, has_cjk, query_terms, term_snippet, window};
use crate::error::{LcmError, Result};
use crate::store::Features;

/// Longest accepted pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1000;
/// Most rows a regex or substring search reads before it stops (per scope).
pub const MAX_SCAN_ROWS: usize = 10_000;
/// Characters of a snippet.
pub const SNIPPET_CHARS: usize = 200;
const BATCH: usize = 32;

/// How the pattern is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
pub enum Mode {
    /// A regular expression (Rust `regex` syntax, linear time).
    #[serde(rename = "regex")]
    #[default]
    Regex,
    /// Full-text terms (FTS5; quoted phrases kept).
    #[serde(rename = "full_text")]
    FullText,
}

/// What is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Raw messages.
    Messages,
    /// Summaries.
    Summaries,
    /// Both.
    #[default]
    Both,
}

/// Result order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    /// Newest first.
    #[default]
    Recency,
    /// Best FTS5 rank first (full_text only).
    Relevance,
    /// Rank discounted by age (full_text only).
    Hybrid,
}

impl Mode {
    /// The name used in parameters and text.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Regex => "regex",
            Mode::FullText => "full_text",
        }
    }
}

impl Scope {
    /// The name used in parameters and text.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Messages => "messages",
            Scope::Summaries => "summaries",
            Scope::Both => "both",
        }
    }
}

impl Sort {
    /// The name used in parameters and text.
    pub fn as_str(self) -> &'static str {
        match self {
            Sort::Recency => "recency",
            Sort::Relevance => "relevance",
            Sort::Hybrid => "hybrid",
        }
    }
}

/// A message that matched.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageHit {
    /// message_id
    pub message_id: i64,
    /// conversation_id
    pub conversation_id: i64,
    /// DB role.
    pub role: String,
    /// Message time (ISO).
    pub created_at: String,
    /// One-line context around the match.
    pub snippet: String,
    /// FTS5 rank (lower is better), for full_text.
    pub rank: Option<f64>,
}

/// A summary that matched.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryHit {
    /// sum_…
    pub summary_id: String,
    /// conversation_id
    pub conversation_id: i64,
    /// `leaf` or `condensed`.
    pub kind: String,
    /// Depth in the DAG.
    pub depth: i64,
    /// The time used for filters and order: latest source time, else creation (ISO).
    pub created_at: String,
    /// Earliest source time (ISO).
    pub earliest_at: Option<String>,
    /// Latest source time (ISO).
    pub latest_at: Option<String>,
    /// One-line context around the match.
    pub snippet: String,
    /// FTS5 rank (lower is better), for full_text.
    pub rank: Option<f64>,
}

/// How a search ran.
#[derive(Debug, Clone, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ScopeStats {
    /// `fts`, `fts-trigram`, `like`, `trigram-filter`, `scan`.
    pub strategy: String,
    /// Rows that passed scope, time and literal filters.
    pub candidates: usize,
    /// Rows read and checked against the pattern.
    pub scanned: usize,
    /// True when the scan budget stopped the search before the scope was covered.
    pub truncated: bool,
    /// Messages in the in-memory catalog (message scope only).
    pub indexed_messages: Option<usize>,
    /// Approximate bytes of memory the catalog holds (message scope only).
    pub index_bytes: Option<usize>,
}

/// The resolved query.
pub struct Query {
    /// Mode.
    pub mode: Mode,
    /// Order (recency for regex).
    pub sort: Sort,
    /// Per-scope result limit.
    pub limit: usize,
    /// Scope and time filter.
    pub filter: Filter,
    /// Compiled regex (regex mode).
    pub regex: Option<Regex>,
    /// Full-text terms (full_text mode).
    pub terms: Vec<String>,
    /// Literal requirement of the regex or of CJK terms.
    pub req: Option<Compiled>,
    /// FTS5 expression (full_text, non-CJK).
    pub fts: Option<String>,
    /// Full-text query contains CJK text.
    pub cjk: bool,
    /// Trigram-table expression narrowing summaries for a regex (its literals).
    pub trigram: Option<String>,
}

/// Conversation scope and time range.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Allowed conversations (`None` = all).
    pub conversations: Option<Vec<i64>>,
    /// Inclusive lower bound, epoch ms.
    pub since_ms: Option<i64>,
    /// Exclusive upper bound, epoch ms.
    pub before_ms: Option<i64>,
}

impl Filter {
    fn accepts(&self, cat: &Catalog, ord: usize) -> bool {
        if let Some(c) = &self.conversations {
            if !c.contains(&cat.conversation(ord)) {
                return false;
            }
        }
        let t = cat.time(ord);
        self.since_ms.is_none_or(|s| t >= s) && self.before_ms.is_none_or(|b| t < b)
    }

    fn accepts_summary(&self, sc: &SummaryCatalog, ord: usize) -> bool {
        if let Some(c) = &self.conversations {
            if !c.contains(&sc.conversation(ord)) {
                return false;
            }
        }
        let t = sc.time(ord);
        self.since_ms.is_none_or(|s| t >= s) && self.before_ms.is_none_or(|b| t < b)
    }

    fn sql(&self, time_expr: &str, args: &mut Vec<SqlValue>) -> String {
        let mut w = Vec::new();
        if let Some(c) = &self.conversations {
            let list: Vec<String> = c.iter().map(i64::to_string).collect();
            w.push(format!("s.conversation_id IN ({})", list.join(",")));
        }
        for (bound, op) in [(self.since_ms, ">="), (self.before_ms, "<")] {
            if let Some(ms) = bound {
                args.push(SqlValue::Text(iso_ms(ms)));
                w.push(format!(
                    "julianday({time_expr}) {op} julianday(?{})",
                    args.len()
                ));
            }
        }
        if w.is_empty() {
            "1".into()
        } else {
            w.join(" AND ")
        }
    }
}

/// ISO text of epoch milliseconds.
pub fn iso_ms(ms: i64) -> String {
    crate::timestamp::from_millis(ms)
        .map(crate::timestamp::to_iso)
        .unwrap_or_default()
}

/// Compiles a user regex with size limits; a bad or oversized pattern is
/// `LCM_INVALID_INPUT` naming the problem.
pub fn compile_regex(pattern: &str) -> Result<Regex> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(LcmError::invalid(format!(
            "pattern is {} bytes; the limit is {MAX_PATTERN_BYTES}",
            pattern.len()
        )));
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(2 << 20)
        .dfa_size_limit(4 << 20)
        .nest_limit(100)
        .build()
        .map_err(|e| {
            let msg = match e {
                regex::Error::CompiledTooBig(n) => format!(
                    "regex is too large once compiled (over {n} bytes); use smaller repetition counts"
                ),
                other => other.to_string(),
            };
            LcmError::invalid(format!("invalid regex pattern: {msg}"))
        })
}

/// A trigram-tokenizer MATCH expression implied by a literal requirement: ASCII
/// fragments as quoted substrings, AND / OR as in the requirement (fragments it
/// cannot express are dropped from an AND, and make an OR unusable).
pub fn trigram_expression(r: &literals::Req) -> Option<String> {
    match r {
        literals::Req::Lit(s) if s.is_ascii() && s.len() >= 3 => {
            Some(format!("\"{}\"", s.replace('"', "\"\"")))
        }
        literals::Req::Lit(_) => None,
        literals::Req::All(v) => {
            let parts: Vec<String> = v.iter().filter_map(trigram_expression).collect();
            (!parts.is_empty()).then(|| format!("({})", parts.join(" AND ")))
        }
        literals::Req::Any(v) => {
            let parts: Option<Vec<String>> = v.iter().map(trigram_expression).collect();
            parts.map(|p| format!("({})", p.join(" OR ")))
        }
    }
}

/// Builds the query: compiles the regex or the FTS expression and the literal
/// requirement.
pub fn build_query(
    pattern: &str,
    mode: Mode,
    sort: Sort,
    limit: usize,
    filter: Filter,
) -> Result<Query> {
    if pattern.trim().is_empty() {
        return Err(LcmError::invalid("pattern must not be empty"));
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(LcmError::invalid(format!(
            "pattern is {} bytes; the limit is {MAX_PATTERN_BYTES}",
            pattern.len()
        )));
    }
    let mut q = Query {
        mode,
        sort: if mode == Mode::Regex {
            Sort::Recency
        } else {
            sort
        },
        limit,
        filter,
        regex: None,
        terms: Vec::new(),
        req: None,
        fts: None,
        cjk: false,
        trigram: None,
    };
    match mode {
        Mode::Regex => {
            q.regex = Some(compile_regex(pattern)?);
            let req = literals::of_pattern(pattern);
            q.trigram = req.as_ref().and_then(trigram_expression);
            q.req = req.map(|r| Compiled::new(&r));
        }
        Mode::FullText => {
            if let Some(what) = text::regex_syntax_in_full_text(pattern) {
                return Err(LcmError::invalid(format!(
                    "full_text mode does not interpret regex syntax ({what}); use mode \"regex\" for `{pattern}`, or give 1-3 literal terms or one quoted phrase"
                )));
            }
            q.terms = query_terms(pattern);
            q.cjk = has_cjk(pattern);
            q.fts = fts_match_expression(pattern);
            q.req = literals::of_terms(&q.terms).map(|r| Compiled::new(&r));
        }
    }
    Ok(q)
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key(i64, i64, usize);

/// The newest `k` (by time, then id) of what is pushed.
struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Key>>,
}

impl TopK {
    fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    fn push(&mut self, time: i64, id: i64, ord: usize) {
        self.heap.push(Reverse(Key(time, id, ord)));
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    /// True when nothing at positions `< ord` can enter any more.
    fn settled(&self, cat: &Catalog, ord: usize) -> bool {
        if self.heap.len() < self.k {
            return false;
        }
        ord == 0
            || self
                .heap
                .peek()
                .is_some_and(|Reverse(Key(t, _, _))| *t >= cat.max_time_up_to(ord - 1))
    }

    fn into_sorted(self) -> Vec<usize> {
        let mut v: Vec<Key> = self.heap.into_iter().map(|Reverse(k)| k).collect();
        v.sort_by(|a, b| b.cmp(a));
        v.into_iter().map(|Key(_, _, ord)| ord).collect()
    }
}

fn contents(conn: &Connection, ids: &[i64]) -> Result<HashMap<i64, String>> {
    let mut out = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(BATCH) {
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT message_id, content FROM messages WHERE message_id IN ({})",
            vec!["?"; BATCH].join(",")
        ))?;
        let padded = chunk
            .iter()
            .copied()
            .chain(std::iter::repeat(0))
            .take(BATCH);
        let mut rows = stmt.query(params_from_iter(padded))?;
        while let Some(r) = rows.next()? {
            out.insert(r.get(0)?, r.get(1)?);
        }
    }
    Ok(out)
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
fn substring_match(content: &str, needles: &[String]) -> Option<(usize, usize)> {
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
            let texts = contents(conn, &ids)?;
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
            stats.truncated = !top.settled(cat, ord + 1);
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
        !top.settled(cat, ord)
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
            let mut stmt = conn.prepare_cached(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rowid DESC",
            )?;
            let mut rows = stmt.query([expr])?;
            let mut top = TopK::new(q.limit);
            let mut hi = cat.len();
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                let Some(ord) = position_below(cat, id, hi) else {
                    continue;
                };
                hi = ord;
                if !q.filter.accepts(cat, ord) {
                    continue;
                }
                stats.candidates += 1;
                top.push(cat.time(ord), id, ord);
                if top.settled(cat, ord) {
                    break;
                }
            }
            top.into_sorted()
        }
        Sort::Relevance | Sort::Hybrid => {
            let mut stmt = conn.prepare_cached(
                "SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rank",
            )?;
            let mut rows = stmt.query([expr])?;
            let now = super::grants::now_ms();
            let mut scored: Vec<(f64, usize)> = Vec::new();
            while let Some(r) = rows.next()? {
                let Some(ord) = cat.position(r.get(0)?) else {
                    continue;
                };
                if !q.filter.accepts(cat, ord) {
                    continue;
                }
                stats.candidates += 1;
                let rank: f64 = r.get(1)?;
                ranks.insert(ord, rank);
                let score = match q.sort {
                    Sort::Hybrid => {
                        rank / (1.0 + ((now - cat.time(ord)).max(0) as f64 / 3.6e6) * 0.001)
                    }
                    _ => rank,
                };
                scored.push((score, ord));
                if q.sort == Sort::Relevance && scored.len() >= q.limit {
                    break;
                }
            }
            scored.sort_by(|a, b| a.0.total_cmp(&b.0));
            scored.into_iter().take(q.limit).map(|(_, o)| o).collect()
        }
    };
    let ids: Vec<i64> = ords.iter().map(|&o| cat.id(o)).collect();
    let texts = contents(conn, &ids)?;
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

const SUMMARY_TIME: &str = "COALESCE(s.latest_at, s.created_at)";
const SUMMARY_COLS: &str = "s.summary_id, s.conversation_id, s.kind, s.depth, COALESCE(s.latest_at, s.created_at), s.earliest_at, s.latest_at, s.content";

struct SummaryRow {
    hit: SummaryHit,
    content: String,
}

fn summary_row(r: &rusqlite::Row, rank: Option<f64>) -> rusqlite::Result<SummaryRow> {
    let t: String = r.get(4)?;
    Ok(SummaryRow {
        hit: SummaryHit {
            summary_id: r.get(0)?,
            conversation_id: r.get(1)?,
            kind: r.get(2)?,
            depth: r.get(3)?,
            created_at: iso_ms(parse_time_ms(&t)),
            earliest_at: r.get(5)?,
            latest_at: r.get(6)?,
            snippet: String::new(),
            rank,
        },
        content: r.get(7)?,
    })
}

/// Searches summaries (scope and order from the in-memory summary catalog).
pub fn search_summaries(
    conn: &Connection,
    sc: &SummaryCatalog,
    q: &Query,
    features: Features,
) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    match q.mode {
        Mode::Regex => {
            let re = q
                .regex
                .as_ref()
                .ok_or_else(|| LcmError::internal("regex missing"))?;
            let verify = |c: &str| re.find(c).map(|m| (m.start(), m.end()));
            let narrowed = q
                .trigram
                .as_deref()
                .filter(|_| features.trigram)
                .and_then(|e| fts_positions(conn, sc, "summaries_fts_cjk", e, false).ok());
            let strategy = if narrowed.is_some() {
                "trigram-index"
            } else {
                "scan"
            };
            let ords = match narrowed {
                Some(found) => found.into_iter().map(|(o, _)| o).collect(),
                None => (0..sc.len()).collect(),
            };
            check_summaries(conn, sc, q, ords, strategy, verify)
        }
        Mode::FullText => {
            let terms_ok = q.terms.iter().all(|t| t.chars().count() >= 3);
            let table = match &q.fts {
                Some(e) if !q.cjk && features.fts5 => Some((e, "summaries_fts", "fts")),
                Some(e) if q.cjk && features.trigram && terms_ok => {
                    Some((e, "summaries_fts_cjk", "fts-trigram"))
                }
                _ => None,
            };
            if let Some((expr, t, strategy)) = table {
                let ranked = q.sort != Sort::Recency;
                if let Ok(found) = fts_positions(conn, sc, t, expr, ranked) {
                    return ranked_summary_hits(conn, sc, q, found, strategy);
                }
            }
            let mut args: Vec<SqlValue> = Vec::new();
            let filter = q.filter.sql(SUMMARY_TIME, &mut args);
            let recency = format!("julianday({SUMMARY_TIME}) DESC, s.rowid DESC");
            like_summaries(conn, q, &filter, &recency, args)
        }
    }
}

/// Catalog positions (and ranks) of the summaries an FTS table matches.
fn fts_positions(
    conn: &Connection,
    sc: &SummaryCatalog,
    table: &str,
    expr: &str,
    ranked: bool,
) -> Result<Vec<(usize, Option<f64>)>> {
    let cols = if ranked {
        "summary_id, rank"
    } else {
        "summary_id"
    };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {cols} FROM {table} WHERE {table} MATCH ?1"
    ))?;
    let mut rows = stmt.query([expr])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let Some(ord) = sc.position(r.get_ref(0)?.as_str().unwrap_or("")) else {
            continue;
        };
        out.push((ord, if ranked { r.get(1)? } else { None }));
    }
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
        .filter(|(o, _)| q.filter.accepts_summary(sc, *o))
        .collect();
    let candidates = c.len();
    let now = super::grants::now_ms();
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
    ords.retain(|&o| q.filter.accepts_summary(sc, o));
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
        let mut rows = summaries_by_rowid(conn, &ids)?;
        for id in ids {
            stats.scanned += 1;
            let Some(mut row) = rows.remove(&id) else {
                continue;
            };
            if let Some((s, e)) = verify(&row.content) {
                row.hit.snippet = window(&row.content, s, e, 50, SNIPPET_CHARS);
                hits.push(row.hit);
                if hits.len() == q.limit {
                    stats.truncated = false;
                    break 'batches;
                }
            }
        }
    }
    Ok((hits, stats))
}

/// Summary rows (with content) by rowid.
fn summaries_by_rowid(conn: &Connection, rowids: &[i64]) -> Result<HashMap<i64, SummaryRow>> {
    let mut out = HashMap::with_capacity(rowids.len());
    for chunk in rowids.chunks(BATCH) {
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {SUMMARY_COLS}, s.rowid FROM summaries s WHERE s.rowid IN ({})",
            vec!["?"; BATCH].join(",")
        ))?;
        let padded = chunk
            .iter()
            .copied()
            .chain(std::iter::repeat(-1))
            .take(BATCH);
        let mut rows = stmt.query(params_from_iter(padded))?;
        while let Some(r) = rows.next()? {
            out.insert(r.get(8)?, summary_row(r, None)?);
        }
    }
    Ok(out)
}

/// Runs a query selecting `rowid[, rank]` in result order.
fn ranked_rowids(
    conn: &Connection,
    sql: &str,
    args: &[SqlValue],
    ranked: bool,
) -> Result<Vec<(i64, Option<f64>)>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt
        .query_map(params_from_iter(args.iter()), |r| {
            Ok((r.get(0)?, if ranked { r.get(1)? } else { None }))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Builds hits for rowids chosen in order, with term snippets.
fn term_hits(
    conn: &Connection,
    q: &Query,
    chosen: Vec<(i64, Option<f64>)>,
    strategy: &str,
) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    let ids: Vec<i64> = chosen.iter().map(|c| c.0).collect();
    let mut rows = summaries_by_rowid(conn, &ids)?;
    let stats = ScopeStats {
        strategy: strategy.into(),
        candidates: chosen.len(),
        scanned: chosen.len(),
        ..ScopeStats::default()
    };
    let hits = chosen
        .into_iter()
        .filter_map(|(id, rank)| {
            let mut r = rows.remove(&id)?;
            r.hit.snippet = term_snippet(&r.content, &q.terms, SNIPPET_CHARS);
            r.hit.rank = rank;
            Some(r.hit)
        })
        .collect();
    Ok((hits, stats))
}

fn like_summaries(
    conn: &Connection,
    q: &Query,
    filter: &str,
    recency: &str,
    mut args: Vec<SqlValue>,
) -> Result<(Vec<SummaryHit>, ScopeStats)> {
    if q.terms.is_empty() {
        return term_hits(conn, q, Vec::new(), "like");
    }
    let mut conds = Vec::new();
    for t in &q.terms {
        let escaped = t
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        args.push(SqlValue::Text(format!("%{escaped}%")));
        conds.push(format!("s.content LIKE ?{} ESCAPE '\\'", args.len()));
    }
    args.push(SqlValue::Integer(q.limit as i64));
    let sql = format!(
        "SELECT s.rowid FROM summaries s WHERE {filter} AND {} ORDER BY {recency} LIMIT ?{}",
        conds.join(" AND "),
        args.len()
    );
    let chosen = ranked_rowids(conn, &sql, &args, false)?;
    term_hits(conn, q, chosen, "like")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_limits_give_clear_errors() {
        assert!(compile_regex("(a+)+$").is_ok());
        let e = compile_regex("a{100000}{100000}").unwrap_err();
        assert!(e.message.contains("invalid regex"), "{}", e.message);
        let e = compile_regex("(unclosed").unwrap_err();
        assert!(e.message.contains("unclosed"), "{}", e.message);
        assert!(compile_regex(&"a".repeat(2000)).is_err());
    }

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

    #[test]
    fn trigram_expressions_follow_the_requirement() {
        let e = |p: &str| {
            literals::of_pattern(p)
                .as_ref()
                .and_then(trigram_expression)
        };
        assert_eq!(e("NEEDLE-1"), Some("\"needle-1\"".into()));
        assert_eq!(e("foo.*bar"), Some("(\"foo\" AND \"bar\")".into()));
        assert_eq!(e("(foo|barbaz)x"), Some("(\"foo\" OR \"barbaz\")".into()));
        assert_eq!(e("(foo|数据库)"), None);
        assert_eq!(e("数据库.*abc"), Some("(\"abc\")".into()));
        assert_eq!(e("say \"hi\" now"), Some("\"say \"\"hi\"\" now\"".into()));
        assert_eq!(e("\\d+"), None);
    }

    #[test]
    fn topk_keeps_newest() {
        let mut t = TopK::new(2);
        for (time, ord) in [(5, 0), (9, 1), (1, 2), (7, 3)] {
            t.push(time, ord as i64, ord);
        }
        assert_eq!(t.into_sorted(), vec![1, 3]);
    }
}
