//! The offline extractive summarizer: deterministic, no network. It splits the source
//! into blocks (a `[…]` header plus content) and units (lines, long lines split into
//! sentences), scores each unit for what later turns need (decisions and outcomes,
//! errors, paths and URLs, identifiers, numbers, open questions), drops filler and
//! repeats, and keeps the best units that fit the budget, in their original order under
//! their original headers (so timestamps survive). It ends with an
//! `Expand for details about: …` footer naming what was dropped. The budget is the
//! target, and never more than 60 % of the input (35 % when aggressive), so the result
//! is smaller than its input and escalation does not fall back.

use std::collections::HashSet;
use std::sync::LazyLock;

use async_trait::async_trait;
use regex::Regex;

use super::{Summarizer, SummaryRequest, SummaryResponse};
use crate::error::Result;
use crate::text;
use crate::tokens::{estimate, truncate_to_tokens};

/// The model name recorded on offline summaries.
pub const MODEL: &str = "lcm-offline-extractive";

const FOOTER_PREFIX: &str = "Expand for details about: ";
/// Lines longer than this are split into sentences; shorter ones stay whole.
const SPLIT_ABOVE_TOKENS: i64 = 40;

fn re(p: &str) -> Regex {
    Regex::new(p).expect("valid regex")
}

static HEADER: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\[[^\[\]\n]{1,80}\](?: \[[^\[\]\n]{1,40}\])?$"));
static MARKER: LazyLock<Regex> = LazyLock::new(|| re(r"^\[(?:Truncated|Capped) (?:from|to) "));
static DECISION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:decid\w*|decision|agreed|chose|chosen|choose|will|won't|must|should|need(?:s|ed)? to|plan(?:ned)?|next step|todo|to-do|block(?:ed|er)|because|instead|switch(?:ed)? to|resolv\w*|fix(?:ed|es)?|done|complet\w*|finish\w*|shipped|merged|deployed|released|creat\w*|add(?:ed)?|remov\w*|delet\w*|renam\w*|mov(?:ed|e)|updat\w*|chang\w*|approv\w*|reject\w*|confirm\w*|deadline|requir\w*|constraint|priority|important|result|outcome|works?|passe[sd])\b|\b(?:I|we|We)\s+\w+ed\b",
    )
});
static ERROR: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:errors?|fail(?:ed|ure|s|ing)?|exception|panic(?:ked)?|traceback|fatal|denied|refused|time[d ]?out|not found|undefined|crash(?:ed)?|bug|broken|warning|invalid)\b|\bE\d{3,}\b|\bERR_[A-Z_]+|exit (?:code|status) [1-9]",
    )
});
static RATIONALE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\b(?:because|so that|due to|caused by|root cause|the reason|in order to)\b")
});
static ERROR_NEG: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:0|no|zero|without)\s+(?:errors?|failures?|warnings?)\b"));
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]+|\b[\w-]+\.(?:rs|ts|tsx|js|mjs|cjs|py|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|json|ya?ml|toml|ini|md|txt|sql|sh|html|css|lock|env|cfg|conf|xml|csv|pdf|docx?|xlsx?|pptx?|png|jpe?g|svg)\b",
    )
});
static URL: LazyLock<Regex> = LazyLock::new(|| re(r"https?://[^\s)>\]]+"));
static IDENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"`[^`\n]{1,80}`|\b[a-z]+[A-Z]\w*\b|\b[A-Za-z][a-z0-9]*(?:_[A-Za-z0-9]+)+\b|\b[0-9a-f]{7,40}\b|\b[A-Z]{2,}-\d+\b|#\d+\b|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z]*\d+[A-Z]+[A-Z0-9]*\b|\b[A-Z]+\d+[A-Z0-9]*\b",
    )
});
static NUMBER: LazyLock<Regex> = LazyLock::new(|| re(r"[$€£]\s?\d|\b\d+(?:[.,:]\d+)*"));
static FILLER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:(?:ok(?:ay)?|thanks?(?: you)?(?: so much)?|sure(?: thing)?|great|sounds good|got it|yes|no|yep|nope|cool|perfect|nice|hello|hi|hey|alright|will do|understood)[\s.!,:)]*)+$",
    )
});

/// Footer items that count lines of a child; not carried up a level.
static COUNT_ITEM: LazyLock<Regex> = LazyLock::new(|| re(r"^\d+ (?:omitted|repeated) lines?\b"));

/// What a unit carries.
#[derive(Debug, Clone, Copy, Default)]
struct Signals {
    decision: bool,
    rationale: bool,
    error: bool,
    path: bool,
    ident: bool,
    number: bool,
    question: bool,
}

impl Signals {
    fn of(text: &str) -> Signals {
        Signals {
            decision: DECISION.is_match(text),
            rationale: RATIONALE.is_match(text),
            error: ERROR.is_match(&ERROR_NEG.replace_all(text, "")),
            path: PATH.is_match(text) || URL.is_match(text),
            ident: IDENT.is_match(text),
            number: NUMBER.is_match(text),
            question: text.trim_end().ends_with('?'),
        }
    }

    fn score(&self) -> i32 {
        3 * i32::from(self.decision)
            + 2 * i32::from(self.rationale)
            + 4 * i32::from(self.error)
            + 3 * i32::from(self.path)
            + 3 * i32::from(self.ident)
            + 2 * i32::from(self.number)
            + i32::from(self.question)
    }
}

#[derive(Debug, Clone)]
struct Unit {
    text: String,
    block: usize,
    score: i32,
    signals: Signals,
    code: bool,
}

#[derive(Debug, Default)]
struct Block {
    header: Option<String>,
    /// `[09:05] [assistant]` for a `[2026-02-17 09:05 UTC] [assistant]` header, used
    /// after a header of the same date.
    short: Option<(String, String)>,
    role: String,
}

static DATED_HEADER: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\[(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})(?: [^\]]+)?\](.*)$"));

/// The date and the short form of a leaf header.
fn short_header(header: &str) -> Option<(String, String)> {
    let c = DATED_HEADER.captures(header)?;
    Some((c[1].to_owned(), format!("[{}]{}", &c[2], &c[3])))
}

impl Block {
    /// Tokens of the header as printed after one of the same date.
    fn header_cost(&self) -> i64 {
        match (&self.short, &self.header) {
            (Some((_, s)), _) => estimate(s) + 1,
            (None, Some(h)) => estimate(h) + 1,
            _ => 0,
        }
    }

    /// Extra tokens when the full header must be printed.
    fn full_extra(&self) -> i64 {
        let full = self.header.as_deref().map_or(0, |h| estimate(h) + 1);
        full - self.header_cost()
    }
}

/// The parsed source.
#[derive(Debug, Default)]
struct Parsed {
    blocks: Vec<Block>,
    units: Vec<Unit>,
    /// Items of `Expand for details about:` footers found in the source.
    inherited: Vec<String>,
    repeats: usize,
    /// Depth of the summary being built (0: blocks are messages, else summaries).
    depth: i64,
}

/// Splits a line into sentences at `.`, `!`, `?` followed by a space and a capital,
/// digit, quote or bracket.
fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    for w in chars.windows(3) {
        let [(_, a), (_, b), (k, c)] = [w[0], w[1], w[2]];
        let boundary = matches!(a, '.' | '!' | '?')
            && b == ' '
            && (c.is_uppercase() || c.is_ascii_digit() || matches!(c, '"' | '\'' | '(' | '['));
        if boundary {
            out.push(text::slice(line, start, k).trim());
            start = k;
        }
    }
    out.push(text::tail(line, start).trim());
    out.retain(|s| !s.is_empty());
    out
}

fn role_of(header: &str) -> String {
    header
        .rsplit_once("] [")
        .map(|(_, r)| r.trim_end_matches(']').to_ascii_lowercase())
        .unwrap_or_default()
}

fn footer_items(line: &str) -> Option<Vec<String>> {
    let rest = line.trim().strip_prefix("Expand for details about:")?;
    Some(
        rest.split(',')
            .map(|s| s.trim().trim_end_matches('.').trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
    )
}

fn base_score(text: &str, role: &str, code: bool, depth: i64) -> (Signals, i32) {
    let s = Signals::of(text);
    if FILLER.is_match(text) {
        return (s, -5);
    }
    let mut score = s.score();
    if role == "user" {
        score += 2;
    }
    if code && !s.error {
        score -= 3;
    } else if matches!(role, "tool" | "toolresult") && !s.error {
        score -= 2;
    }
    if depth >= 2 && !s.decision && !s.error {
        score -= 1;
    }
    (s, score)
}

/// Builds [`Parsed`] line by line.
struct Parser {
    p: Parsed,
    seen: HashSet<String>,
    in_code: bool,
    /// Whether the current block already has a unit with a positive score.
    block_has_signal: bool,
}

impl Parser {
    /// Starts a block when the chunk opens with a header (or nothing exists yet);
    /// returns the chunk's lines after the header.
    fn start_chunk<'a>(&mut self, chunk: &'a str) -> std::iter::Peekable<std::str::Lines<'a>> {
        let mut lines = chunk.lines().peekable();
        let first = lines.peek().map(|l| l.trim()).unwrap_or("");
        let header = HEADER.is_match(first).then(|| first.to_owned());
        if header.is_some() || self.p.blocks.is_empty() {
            if header.is_some() {
                lines.next();
            }
            self.p.blocks.push(Block {
                role: header.as_deref().map(role_of).unwrap_or_default(),
                short: header.as_deref().and_then(short_header),
                header,
            });
            self.block_has_signal = false;
        }
        lines
    }

    fn line(&mut self, line: &str) {
        let t = line.trim();
        if t.starts_with("```") {
            self.in_code = !self.in_code;
            return;
        }
        if t.is_empty() || MARKER.is_match(t) || (self.p.depth >= 1 && HEADER.is_match(t)) {
            return;
        }
        if let Some(items) = footer_items(t) {
            self.p.inherited.extend(items);
            return;
        }
        if self.in_code || estimate(t) <= SPLIT_ABOVE_TOKENS {
            self.unit(t);
        } else {
            sentences(t).into_iter().for_each(|s| self.unit(s));
        }
    }

    fn unit(&mut self, s: &str) {
        let key = s
            .to_lowercase()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if !self.seen.insert(key) {
            self.p.repeats += 1;
            return;
        }
        let block = self.p.blocks.len() - 1;
        let role = self.p.blocks[block].role.as_str();
        let (signals, mut score) = base_score(s, role, self.in_code, self.p.depth);
        // The first meaningful line a user writes in a message usually states the goal.
        if !self.block_has_signal && role == "user" && score > 0 {
            score += 1;
        }
        self.block_has_signal |= score > 0;
        self.p.units.push(Unit {
            text: s.to_owned(),
            block,
            score,
            signals,
            code: self.in_code,
        });
    }
}

fn parse(source: &str, depth: i64) -> Parsed {
    let mut parser = Parser {
        p: Parsed {
            depth,
            ..Parsed::default()
        },
        seen: HashSet::new(),
        in_code: false,
        block_has_signal: false,
    };
    for chunk in source.split("\n\n") {
        for line in parser.start_chunk(chunk) {
            parser.line(line);
        }
    }
    parser.p
}

/// The token budget of the body: the target, at most 60 % (35 % aggressive) of the input.
fn budget(input_tokens: i64, target: i64, aggressive: bool) -> i64 {
    let share = if aggressive { 35 } else { 60 };
    target.min(input_tokens * share / 100).max(16)
}

/// Picks units by score (ties: shorter, then earlier) until the budget is used; a
/// block's header is paid for with its first unit. Returns the kept flags.
fn select(p: &Parsed, budget: i64, min_score: i32, unit_cap: i64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..p.units.len())
        .filter(|i| p.units[*i].score >= min_score)
        .collect();
    order.sort_by_key(|i| (-p.units[*i].score, estimate(&p.units[*i].text), *i));
    let mut kept = vec![false; p.units.len()];
    let mut paid = vec![false; p.blocks.len()];
    let mut used = 0;
    for i in order {
        let u = &p.units[i];
        let header_cost = if paid[u.block] {
            0
        } else {
            p.blocks[u.block].header_cost()
        };
        let cost = estimate(&u.text).min(unit_cap) + 1 + header_cost;
        if used + cost > budget {
            continue;
        }
        used += cost;
        kept[i] = true;
        paid[u.block] = true;
    }
    kept
}

fn clip(text: &str, cap: i64) -> String {
    if estimate(text) <= cap {
        return text.to_owned();
    }
    format!("{}…", truncate_to_tokens(text, cap - 1).trim_end())
}

fn body(p: &Parsed, kept: &[bool], unit_cap: i64) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut last_block = usize::MAX;
    let mut last_header: Option<&str> = None;
    let mut last_date: Option<&str> = None;
    for (u, _) in p.units.iter().zip(kept).filter(|(_, k)| **k) {
        let b = &p.blocks[u.block];
        if u.block != last_block && b.header.is_some() && b.header.as_deref() != last_header {
            last_header = b.header.as_deref();
            match &b.short {
                Some((date, short)) if last_date == Some(date.as_str()) => out.push(short.clone()),
                _ => out.push(b.header.clone().unwrap_or_default()),
            }
            last_date = b.short.as_ref().map(|(d, _)| d.as_str());
        }
        last_block = u.block;
        out.push(clip(&u.text, unit_cap));
    }
    out.join("\n")
}

/// URLs, paths and identifiers mentioned in `text`, in that order.
fn terms(text: &str) -> Vec<String> {
    let without_urls = URL.replace_all(text, " ");
    let urls = URL.find_iter(text).map(|m| m.as_str());
    let paths = PATH.find_iter(&without_urls).map(|m| m.as_str());
    let idents = IDENT.find_iter(&without_urls).map(|m| m.as_str());
    urls.chain(paths)
        .chain(idents)
        .map(|t| {
            t.trim_matches('`')
                .trim_end_matches(['.', ',', ';', ':'])
                .to_owned()
        })
        .filter(|t| t.chars().count() >= 3)
        .collect()
}

/// Terms of dropped units that the kept text does not mention.
fn dropped_terms(dropped: &[&Unit], kept_text: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for term in dropped.iter().flat_map(|u| terms(&u.text)) {
        if !kept_text.contains(&term) && !out.contains(&term) {
            out.push(term);
            if out.len() >= max {
                break;
            }
        }
    }
    out
}

fn footer(p: &Parsed, kept: &[bool], kept_text: &str) -> String {
    let dropped: Vec<&Unit> = p
        .units
        .iter()
        .zip(kept)
        .filter(|(_, k)| !**k)
        .map(|(u, _)| u)
        .collect();
    let mut items: Vec<String> = Vec::new();
    if dropped.iter().any(|u| u.signals.error) {
        items.push("full error output".into());
    }
    if dropped.iter().any(|u| u.code) {
        items.push("code blocks".into());
    }
    let tool = |u: &&Unit| matches!(p.blocks[u.block].role.as_str(), "tool" | "toolresult");
    if dropped.iter().any(tool) {
        items.push("tool output".into());
    }
    items.extend(dropped_terms(&dropped, kept_text, 5));
    let blocks: HashSet<usize> = dropped.iter().map(|u| u.block).collect();
    if !dropped.is_empty() {
        let s = if dropped.len() == 1 { "" } else { "s" };
        let noun = match (p.depth, blocks.len()) {
            (0, 1) => "message",
            (0, _) => "messages",
            (_, 1) => "summary",
            _ => "summaries",
        };
        items.push(format!(
            "{} omitted line{s} from {} {noun}",
            dropped.len(),
            blocks.len()
        ));
    }
    if p.repeats > 0 {
        items.push(format!(
            "{} repeated line{}",
            p.repeats,
            if p.repeats == 1 { "" } else { "s" }
        ));
    }
    for i in p.inherited.iter().filter(|i| !COUNT_ITEM.is_match(i)) {
        if !items.contains(i) && items.len() < 12 {
            items.push(i.clone());
        }
    }
    if items.is_empty() {
        items.push("the exact wording of the original messages".into());
    }
    let mut line = format!("{FOOTER_PREFIX}{}", items.join(", "));
    while estimate(&line) > 80 && items.len() > 1 {
        items.pop();
        line = format!("{FOOTER_PREFIX}{}", items.join(", "));
    }
    line
}

/// How many leftover candidates the fill step tries after the first selection.
const FILL_TRIES: usize = 40;

fn render(p: &Parsed, kept: &[bool], unit_cap: i64) -> String {
    let text = body(p, kept, unit_cap);
    format!("{text}\n{}", footer(p, kept, &text))
        .trim()
        .to_owned()
}

/// Adds the best remaining units while the whole text, footer included, stays
/// within `limit` (the first selection reserved room for a footer it had not seen).
fn fill(p: &Parsed, kept: &mut [bool], unit_cap: i64, limit: i64, min_score: i32) {
    let mut candidates: Vec<usize> = (0..kept.len())
        .filter(|i| !kept[*i] && p.units[*i].score >= min_score)
        .collect();
    candidates.sort_by_key(|i| (-p.units[*i].score, estimate(&p.units[*i].text), *i));
    for i in candidates.into_iter().take(FILL_TRIES) {
        kept[i] = true;
        if estimate(&render(p, kept, unit_cap)) > limit {
            kept[i] = false;
        }
    }
}

/// Summarizes `source` within `target_tokens` (see the module docs).
pub fn summarize_text(source: &str, target_tokens: i64, depth: i64, aggressive: bool) -> String {
    let input = estimate(source).max(1);
    let p = parse(source, depth);
    let min_score = match (aggressive, depth) {
        (true, _) => 3,
        (false, 0) => 0,
        (false, _) => 1,
    };
    let total = budget(input, target_tokens, aggressive);
    let footer_reserve = (total / 5).clamp(12, 80);
    let full_header_extra = p.blocks.iter().map(Block::full_extra).max().unwrap_or(0);
    let body_budget = (total - footer_reserve - full_header_extra).max(8);
    let unit_cap = (body_budget / 3).max(40);
    let mut kept = select(&p, body_budget, min_score, unit_cap);
    if !kept.iter().any(|k| *k) && min_score > 0 {
        kept = select(&p, body_budget, 0, unit_cap);
    }
    fill(&p, &mut kept, unit_cap, total.min(input - 1), min_score);
    loop {
        let out = render(&p, &kept, unit_cap);
        if estimate(&out) < input || !drop_weakest(&p, &mut kept) {
            return out;
        }
    }
}

/// Unkeeps the lowest-scoring kept unit (latest on ties); false when none is left.
fn drop_weakest(p: &Parsed, kept: &mut [bool]) -> bool {
    let weakest = (0..kept.len())
        .filter(|i| kept[*i])
        .min_by_key(|i| (p.units[*i].score, std::cmp::Reverse(*i)));
    match weakest {
        Some(i) => {
            kept[i] = false;
            true
        }
        None => false,
    }
}

/// The offline summarizer (works on `SummaryRequest::source_text`, not the prompt).
#[derive(Debug, Default, Clone, Copy)]
pub struct OfflineSummarizer;

#[async_trait]
impl Summarizer for OfflineSummarizer {
    async fn summarize(&self, req: SummaryRequest) -> Result<SummaryResponse> {
        Ok(SummaryResponse {
            content: summarize_text(
                &req.source_text,
                req.target_tokens,
                req.depth,
                req.aggressive,
            ),
            model: MODEL.to_owned(),
        })
    }

    fn name(&self) -> &str {
        "offline"
    }
}

#[cfg(test)]
pub(crate) mod tests;
