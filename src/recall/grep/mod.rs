//! `grep` over messages and summaries: the query (modes, scope, order, the
//! compiled regex or FTS expression and the literal requirement) and the hit
//! types. The two searches are [`messages`] (through the in-memory catalog, or
//! [`cold`] from SQLite alone while the catalog is being built) and
//! [`summaries`] (with [`summaries_newest`]: newest-first walks over a summary
//! full-text table when it has many matches).

pub mod cold;
pub mod messages;
pub mod newest;
pub mod summaries;
pub mod summaries_newest;

#[cfg(test)]
mod cold_vs_warm;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use regex_automata::{meta, util::syntax};
use serde::{Deserialize, Serialize};

use super::catalog::{Catalog, Compiled};
use super::literals;
use super::text::{self, fts_match_expression, has_cjk, query_terms};
use crate::error::{LcmError, Result};

/// A compiled user regex (see [`compile_regex`]): the engine `regex::Regex`
/// wraps, with the same `is_match` and `find`.
pub use regex_automata::meta::Regex;

pub use messages::search_messages;
pub use summaries::search_summaries;

/// Longest accepted pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1000;
/// Most rows a regex or substring search reads before it stops (per scope).
pub const MAX_SCAN_ROWS: usize = 10_000;
/// Characters of a snippet.
pub const SNIPPET_CHARS: usize = 200;
const BATCH: usize = 32;

/// How the pattern is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default, ts_rs::TS)]
#[ts(rename = "GrepMode")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
#[ts(rename = "GrepScope")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
#[ts(rename = "GrepSort")]
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
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
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
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct SummaryHit {
    /// sum_…
    pub summary_id: String,
    /// conversation_id
    pub conversation_id: i64,
    /// `leaf` or `condensed`.
    pub kind: crate::store::summaries::SummaryKind,
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
#[derive(Debug, Clone, Serialize, Default, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "GrepScopeStats")]
pub struct ScopeStats {
    /// `fts`, `fts-trigram`, `like`, `trigram-filter`, `scan`; before the catalog
    /// is built also `fts-words`, `trigram-slices` and `scan-newest` (see [`cold`]).
    pub strategy: String,
    /// Rows that passed scope, time and literal filters.
    pub candidates: usize,
    /// Rows read and checked against the pattern.
    pub scanned: usize,
    /// True when the scan budget (10,000 rows) stopped the search before the scope
    /// was covered.
    pub truncated: bool,
    /// Messages in the engine's in-memory catalog (message scope only; null when
    /// the search was answered from SQLite before the catalog was built).
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
    /// `messages_fts` expression of the whole words a regex's literals contain
    /// (the cold path's narrowing; see [`cold::word_expression`]).
    pub words: Option<String>,
    /// The same with a one-character word ending a literal as a prefix token, when
    /// that differs from `words`: slower to evaluate, the cold path's last resort
    /// before waiting for the catalog (see [`cold::last_resort_expression`]).
    pub short_words: Option<String>,
    /// `words` has no prefix token shorter than three characters (see
    /// [`cold::words_are_cheap`]): the cold path tries it before the trigram
    /// slices, else after them.
    pub cheap_words: bool,
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
        self.accepts_at(cat.conversation(ord), cat.time(ord))
    }

    /// Whether an item of this conversation and time (epoch ms) is in scope.
    pub fn accepts_at(&self, conversation: i64, time_ms: i64) -> bool {
        self.accepts_lazily(conversation, || time_ms)
    }

    /// [`Filter::accepts_at`] with the time computed only when a time bound
    /// needs it (parsing a stored time for every row a scan reads is wasted
    /// when no bound is set).
    pub fn accepts_lazily(&self, conversation: i64, time_ms: impl FnOnce() -> i64) -> bool {
        if self
            .conversations
            .as_ref()
            .is_some_and(|c| !c.contains(&conversation))
        {
            return false;
        }
        if self.since_ms.is_none() && self.before_ms.is_none() {
            return true;
        }
        let t = time_ms();
        self.since_ms.is_none_or(|s| t >= s) && self.before_ms.is_none_or(|b| t < b)
    }
}

/// The order key of `relevance` / `hybrid`: the FTS5 rank (lower is better),
/// discounted by age for `hybrid`.
pub fn score(sort: Sort, rank: f64, now_ms: i64, time_ms: i64) -> f64 {
    match sort {
        Sort::Hybrid => rank / (1.0 + ((now_ms - time_ms).max(0) as f64 / 3.6e6) * 0.001),
        _ => rank,
    }
}

/// ISO text of epoch milliseconds.
pub fn iso_ms(ms: i64) -> String {
    crate::timestamp::from_millis(ms)
        .map(crate::timestamp::to_iso)
        .unwrap_or_default()
}

/// Largest compiled NFA of a user regex, in bytes.
const REGEX_NFA_BYTES: usize = 2 << 20;
/// Largest lazy DFA cache of a user regex, in bytes.
const REGEX_LAZY_DFA_BYTES: usize = 4 << 20;

/// Compiles a user regex with size limits; a bad or oversized pattern is
/// `LCM_INVALID_INPUT` naming the problem. It is built as `regex::Regex` builds
/// one (same syntax, Unicode and UTF-8 rules, leftmost-first matches) but
/// without the automata it would build ahead of the search, since every grep
/// compiles its pattern before reading a row:
/// - the one-pass DFA, which serves only capture-group searches (grep asks
///   whether a text matches and where, never for groups); for a pattern with a
///   group and a Unicode class it was most of the compile;
/// - the full DFAs (forward and reverse) of a small pattern: the lazy DFA
///   builds the same states as the search visits them and scans as fast,
///   while determinizing up front cost more than the rest of the compile
///   (docs/decisions/cold-grep.md).
pub fn compile_regex(pattern: &str) -> Result<Regex> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(LcmError::invalid(format!(
            "pattern is {} bytes; the limit is {MAX_PATTERN_BYTES}",
            pattern.len()
        )));
    }
    let config = meta::Config::new()
        .onepass(false)
        .dfa(false)
        .nfa_size_limit(Some(REGEX_NFA_BYTES))
        .hybrid_cache_capacity(REGEX_LAZY_DFA_BYTES);
    meta::Builder::new()
        .configure(config)
        .syntax(syntax::Config::new().nest_limit(100))
        .build(pattern)
        .map_err(|e| {
            let msg = match (e.size_limit(), e.syntax_error()) {
                (Some(n), _) => format!(
                    "regex is too large once compiled (over {n} bytes); use smaller repetition counts"
                ),
                (None, Some(syntax)) => syntax.to_string(),
                (None, None) => e.to_string(),
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
        words: None,
        short_words: None,
        cheap_words: false,
    };
    match mode {
        Mode::Regex => {
            q.regex = Some(compile_regex(pattern)?);
            let req = literals::of_pattern(pattern);
            q.trigram = req.as_ref().and_then(trigram_expression);
            q.words = req.as_ref().and_then(cold::word_expression);
            q.short_words = req
                .as_ref()
                .and_then(cold::last_resort_expression)
                .filter(|e| q.words.as_ref() != Some(e));
            q.cheap_words = req.as_ref().is_some_and(cold::words_are_cheap);
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

    /// The time of the oldest item kept, once `k` are kept.
    fn oldest_when_full(&self) -> Option<i64> {
        if self.heap.len() < self.k {
            return None;
        }
        self.heap.peek().map(|Reverse(Key(t, _, _))| *t)
    }

    /// The (time, id) of the oldest item kept, once `k` are kept.
    fn oldest_key_when_full(&self) -> Option<(i64, i64)> {
        if self.heap.len() < self.k {
            return None;
        }
        self.heap.peek().map(|Reverse(Key(t, id, _))| (*t, *id))
    }

    /// True when nothing older than what is kept can enter any more: the heap is
    /// full and no remaining item is newer than its oldest (`max_time_rest` is the
    /// latest time among the items not yet pushed; `None` when there is none).
    fn settled_below(&self, max_time_rest: Option<i64>) -> bool {
        if self.heap.len() < self.k {
            return max_time_rest.is_none();
        }
        match (max_time_rest, self.heap.peek()) {
            (None, _) => true,
            (Some(m), Some(Reverse(Key(t, _, _)))) => *t >= m,
            (Some(_), None) => false,
        }
    }

    fn into_sorted(self) -> Vec<usize> {
        let mut v: Vec<Key> = self.heap.into_iter().map(|Reverse(k)| k).collect();
        v.sort_by(|a, b| b.cmp(a));
        v.into_iter().map(|Key(_, _, ord)| ord).collect()
    }
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
    fn a_filter_reads_the_time_only_for_a_time_bound() {
        let f = Filter {
            conversations: Some(vec![1]),
            ..Filter::default()
        };
        assert!(f.accepts_lazily(1, || unreachable!("no bound: no time needed")));
        assert!(!f.accepts_lazily(2, || unreachable!("out of scope first")));
        let f = Filter {
            since_ms: Some(10),
            before_ms: Some(20),
            ..Filter::default()
        };
        assert!(f.accepts_lazily(5, || 10) && !f.accepts_lazily(5, || 20));
        assert!(!f.accepts_lazily(5, || 9) && f.accepts_at(5, 19));
    }

    #[test]
    fn an_oversized_regex_names_the_limit() {
        let e = compile_regex(r"\w{500}\w{500}\w{500}").unwrap_err();
        assert!(
            e.message.contains("too large once compiled"),
            "{}",
            e.message
        );
    }

    /// Patterns whose matches the grep engine must find exactly where
    /// `regex::Regex` finds them: groups, Unicode classes, case folding,
    /// alternation, anchors, empty matches, non-ASCII literals.
    const SAME_AS_REGEX: &[&str] = &[
        r"deploy(ed)? \w+ build",
        r"(?i)straße|ǅ",
        r"\b\w+\b",
        r"[\p{Han}\p{Hangul}]+\d?",
        r"^\s*(a|b)*$",
        r"x*",
        r"(?m)^데이터.{0,3}$",
        r"\u{3000}|\u{a0}[^\s]",
        r"(\d+)-(\d+)",
    ];

    /// Each of [`SAME_AS_REGEX`] compiled both ways, once.
    static PAIRS: std::sync::LazyLock<Vec<(&str, Regex, regex::Regex)>> =
        std::sync::LazyLock::new(|| {
            SAME_AS_REGEX
                .iter()
                .map(|p| (*p, compile_regex(p).unwrap(), regex::Regex::new(p).unwrap()))
                .collect()
        });

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// The first match (and whether there is one) is `regex::Regex`'s, on any text.
        #[test]
        fn matches_are_regex_crate_matches(
            text in proptest::string::string_regex(r"(?s)[a-z0-9 \t\n\-_.ßǅ데이터数据库\u{a0}\u{3000}\u{202e}😀]{0,60}|.{0,40}").unwrap(),
        ) {
            for (p, ours, theirs) in PAIRS.iter() {
                proptest::prop_assert_eq!(ours.is_match(&text), theirs.is_match(&text), "{}", p);
                proptest::prop_assert_eq!(
                    ours.find(&text).map(|m| m.range()),
                    theirs.find(&text).map(|m| m.range()),
                    "{}", p
                );
            }
        }
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
