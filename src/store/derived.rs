//! The derived columns of a summary, computed from its sources: kind and depth,
//! time range, descendant and token counts, file ids and the content's own token
//! count. The one home of these formulas: [`super::dag`] applies them when it
//! writes a summary, the doctor when it checks and repairs one.

use chrono::{DateTime, Utc};
use regex::Regex;
use rusqlite::types::Value;

use super::summaries::SummaryRecord;
use crate::{timestamp, tokens};

/// The derived columns of a summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// `leaf` or `condensed`.
    pub kind: &'static str,
    /// 0 for leaves, 1 + the deepest source otherwise.
    pub depth: i64,
    /// Estimated tokens of the content.
    pub token_count: i64,
    /// Earliest source time.
    pub earliest: Option<DateTime<Utc>>,
    /// Latest source time.
    pub latest: Option<DateTime<Utc>>,
    /// Summaries transitively below.
    pub descendant_count: i64,
    /// Σ tokens of the summaries below.
    pub descendant_tokens: i64,
    /// Σ tokens of the source messages below.
    pub source_message_tokens: i64,
    /// `file_…` ids of the sources.
    pub file_ids: Vec<String>,
    /// Smallest message seq below (orders orphans; not stored).
    pub first_seq: Option<i64>,
}

/// What the doctor needs of a message.
#[derive(Debug, Clone)]
pub struct MsgRow {
    /// message_id
    pub id: i64,
    /// Owning conversation.
    pub conversation_id: i64,
    /// Sequence number.
    pub seq: i64,
    /// Stored token count.
    pub tokens: i64,
    /// Stored creation time.
    pub created_at: String,
    /// `file_…` ids its content mentions.
    pub file_ids: Vec<String>,
}

/// Ordered, de-duplicated `file_…` ids mentioned in a text.
pub fn file_ids_in(text: &str, out: &mut Vec<String>) {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"file_[a-f0-9]{16}").expect("valid regex"));
    for m in re.find_iter(text) {
        if !out.iter().any(|x| x == m.as_str()) {
            out.push(m.as_str().to_owned());
        }
    }
}

/// The smaller of two optional values (a missing one is ignored).
pub fn min_opt<T: Ord + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The larger of two optional values (a missing one is ignored).
pub fn max_opt<T: Ord + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn push_unique(out: &mut Vec<String>, ids: &[String]) {
    for id in ids {
        if !out.contains(id) {
            out.push(id.clone());
        }
    }
}

/// A summary's columns before its sources are folded in.
fn no_sources(kind: &'static str, content: &str) -> Meta {
    Meta {
        kind,
        depth: 0,
        token_count: tokens::estimate(content),
        earliest: None,
        latest: None,
        descendant_count: 0,
        descendant_tokens: 0,
        source_message_tokens: 0,
        file_ids: Vec::new(),
        first_seq: None,
    }
}

/// A leaf's columns from its source messages (in link order).
pub fn leaf(content: &str, messages: &[&MsgRow]) -> Meta {
    let mut m = no_sources("leaf", content);
    for msg in messages {
        let t = timestamp::parse(&msg.created_at);
        m.earliest = min_opt(m.earliest, t);
        m.latest = max_opt(m.latest, t);
        m.source_message_tokens += msg.tokens;
        push_unique(&mut m.file_ids, &msg.file_ids);
        m.first_seq = min_opt(m.first_seq, Some(msg.seq));
    }
    m
}

/// What a condensed node needs of one source: its (recomputed or stored) columns,
/// its content and its creation time.
pub struct SourceView<'a> {
    /// The source's columns.
    pub meta: &'a Meta,
    /// The source's content.
    pub content: &'a str,
    /// The source's `created_at` (time fallback).
    pub created_at: &'a str,
}

/// A condensed node's columns from its source summaries (in link order).
pub fn condensed(content: &str, sources: &[SourceView]) -> Meta {
    let mut m = no_sources("condensed", content);
    for s in sources {
        let created = timestamp::parse(s.created_at);
        m.depth = m.depth.max(s.meta.depth + 1);
        push_unique(&mut m.file_ids, &s.meta.file_ids);
        file_ids_in(s.content, &mut m.file_ids);
        m.descendant_count += s.meta.descendant_count + 1;
        m.descendant_tokens += s.meta.token_count + s.meta.descendant_tokens;
        m.source_message_tokens += s.meta.source_message_tokens;
        m.earliest = min_opt(m.earliest, s.meta.earliest.or(created));
        m.latest = max_opt(m.latest, s.meta.latest.or(created));
        m.first_seq = min_opt(m.first_seq, s.meta.first_seq);
    }
    m
}

/// A condensed node's columns from its source summaries (in link order) and
/// their columns (`metas[i]` belongs to the `i`-th source).
pub fn condensed_of<'a>(
    content: &str,
    metas: &[Meta],
    sources: impl IntoIterator<Item = &'a SummaryRecord>,
) -> Meta {
    let views: Vec<SourceView> = metas
        .iter()
        .zip(sources)
        .map(|(meta, r)| SourceView {
            meta,
            content: &r.content,
            created_at: &r.created_at,
        })
        .collect();
    condensed(content, &views)
}

/// The `summaries` columns [`stored_values`] fills, in its order.
pub const STORED_COLUMNS: &str = "kind, depth, token_count, earliest_at, latest_at, \
    descendant_count, descendant_token_count, source_message_token_count, file_ids";

/// The columns as they are stored (the inverse of [`stored`]), in the order of
/// [`STORED_COLUMNS`]: times as ISO-8601 text, file ids as a JSON array.
pub fn stored_values(m: &Meta) -> [Value; 9] {
    [
        Value::from(m.kind.to_owned()),
        Value::from(m.depth),
        Value::from(m.token_count),
        Value::from(m.earliest.map(timestamp::to_iso)),
        Value::from(m.latest.map(timestamp::to_iso)),
        Value::from(m.descendant_count),
        Value::from(m.descendant_tokens),
        Value::from(m.source_message_tokens),
        Value::from(serde_json::to_string(&m.file_ids).unwrap_or_else(|_| "[]".into())),
    ]
}

/// The columns as stored.
pub fn stored(s: &SummaryRecord) -> Meta {
    Meta {
        kind: s.kind.as_str(),
        depth: s.depth,
        token_count: s.token_count,
        earliest: s.earliest_at.as_deref().and_then(timestamp::parse),
        latest: s.latest_at.as_deref().and_then(timestamp::parse),
        descendant_count: s.descendant_count,
        descendant_tokens: s.descendant_token_count,
        source_message_tokens: s.source_message_token_count,
        file_ids: s.file_ids.clone(),
        first_seq: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: i64, seq: i64, tokens: i64, at: &str) -> MsgRow {
        MsgRow {
            id,
            conversation_id: 1,
            seq,
            tokens,
            created_at: at.into(),
            file_ids: vec![],
        }
    }

    #[test]
    fn leaf_and_condensed_formulas() {
        let a = msg(1, 1, 10, "2026-02-17 07:37:00");
        let b = msg(2, 2, 5, "2026-02-17 07:39:00");
        let l = leaf("abcdefgh", &[&a, &b]);
        assert_eq!(
            (l.depth, l.token_count, l.source_message_tokens),
            (0, 2, 15)
        );
        assert_eq!(
            timestamp::to_iso(l.latest.unwrap()),
            "2026-02-17T07:39:00.000Z"
        );
        let c = condensed(
            "x",
            &[
                SourceView {
                    meta: &l,
                    content: "see file_0123456789abcdef",
                    created_at: "",
                },
                SourceView {
                    meta: &l,
                    content: "y",
                    created_at: "",
                },
            ],
        );
        assert_eq!(c.depth, 1);
        assert_eq!(c.descendant_count, 2);
        assert_eq!(c.descendant_tokens, 4);
        assert_eq!(c.source_message_tokens, 30);
        assert_eq!(c.file_ids, ["file_0123456789abcdef"]);
        assert_eq!(c.first_seq, Some(1));
    }
}
