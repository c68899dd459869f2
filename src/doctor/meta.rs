//! Checking a summary's derived columns: their stored values, the difference from
//! a recomputation, and the bottom-up recomputation of a whole graph. The formulas
//! are [`crate::store::derived`]'s, the ones `store::dag` applies when it writes.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::store::derived::{condensed_of, leaf, stored, Meta};
use crate::store::graph::{Graph, MsgRow};
use crate::store::summaries::SummaryRecord;
use crate::timestamp;

/// One column whose stored value differs from its recomputation.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDiff {
    /// Column name.
    pub column: &'static str,
    /// Stored value.
    pub stored: Value,
    /// Recomputed value.
    pub expected: Value,
}

fn iso(t: Option<DateTime<Utc>>) -> Value {
    t.map(|t| Value::String(timestamp::to_iso(t)))
        .unwrap_or(Value::Null)
}

fn same_time(stored: &Option<String>, expected: Option<DateTime<Utc>>) -> bool {
    match (stored.as_deref().map(timestamp::parse), expected) {
        (None, None) => true,
        (Some(Some(a)), Some(b)) => a == b,
        _ => false,
    }
}

fn same_set(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && a.iter().all(|x| b.contains(x))
}

/// The columns of `s` that differ from `m`.
pub fn diff(s: &SummaryRecord, m: &Meta) -> Vec<FieldDiff> {
    let mut out = Vec::new();
    let mut push = |column, stored: Value, expected: Value| {
        out.push(FieldDiff {
            column,
            stored,
            expected,
        })
    };
    if s.kind.as_str() != m.kind {
        push("kind", json!(s.kind), json!(m.kind));
    }
    let ints = [
        ("depth", s.depth, m.depth),
        ("token_count", s.token_count, m.token_count),
        ("descendant_count", s.descendant_count, m.descendant_count),
        (
            "descendant_token_count",
            s.descendant_token_count,
            m.descendant_tokens,
        ),
        (
            "source_message_token_count",
            s.source_message_token_count,
            m.source_message_tokens,
        ),
    ];
    for (column, a, b) in ints {
        if a != b {
            push(column, json!(a), json!(b));
        }
    }
    if !same_time(&s.earliest_at, m.earliest) {
        push("earliest_at", json!(s.earliest_at), iso(m.earliest));
    }
    if !same_time(&s.latest_at, m.latest) {
        push("latest_at", json!(s.latest_at), iso(m.latest));
    }
    if !same_set(&s.file_ids, &m.file_ids) {
        push("file_ids", json!(s.file_ids), json!(m.file_ids));
    }
    out
}

/// Recomputation of every own summary of a graph, bottom-up, each from the
/// *recomputed* columns of its own sources (so one wrong row is named once, not
/// again in every summary above it). Summaries on or above a cycle, and summaries
/// without usable sources, are left out.
pub fn cascade(g: &Graph, order: &[String]) -> HashMap<String, Meta> {
    let mut out: HashMap<String, Meta> = HashMap::new();
    for id in order {
        let Some(s) = g.summaries.get(id) else {
            continue;
        };
        if let Some(m) = recompute_in(g, s, &out) {
            out.insert(id.clone(), m);
        }
    }
    out
}

/// One summary's columns from its sources in `g`: recomputed values from `done`
/// where present, stored values otherwise. `None` without usable sources (none, or
/// both messages and summaries).
pub fn recompute_in(g: &Graph, s: &SummaryRecord, done: &HashMap<String, Meta>) -> Option<Meta> {
    let msgs = g.msg_sources.get(&s.summary_id).filter(|v| !v.is_empty());
    let srcs = g.sources.get(&s.summary_id).filter(|v| !v.is_empty());
    match (msgs, srcs) {
        (Some(msgs), None) => {
            let rows: Vec<&MsgRow> = msgs.iter().filter_map(|(_, m)| g.messages.get(m)).collect();
            Some(leaf(&s.content, &rows))
        }
        (None, Some(srcs)) => {
            let mut rows = Vec::with_capacity(srcs.len());
            for (_, src) in srcs {
                rows.push(g.summaries.get(src)?);
            }
            let metas: Vec<Meta> = rows
                .iter()
                .map(|r| {
                    done.get(&r.summary_id)
                        .cloned()
                        .unwrap_or_else(|| stored(r))
                })
                .collect();
            Some(condensed_of(&s.content, &metas, rows.iter().copied()))
        }
        _ => None,
    }
}
