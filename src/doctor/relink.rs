//! Restoring rows nothing covers. A lost link is restored only when exactly one
//! reachable summary *proves* it held the row: its stored counts and time range equal
//! its recomputation with the row added (and, for a message, the leaf's messages stay
//! one run of the conversation). Everything else goes back into the context list.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

pub use super::analysis::Restore;
use super::analysis::{Analysis, Unit};
use crate::store::derived::{self, max_opt, min_opt, Meta};
use crate::store::graph::Graph;
use crate::timestamp;

/// The restoration of every unit of `a` (uses `a.expected` without the restores).
pub fn plan(g: &Graph, a: &Analysis) -> Vec<Restore> {
    let mut used: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for u in &a.units {
        let cands = match u {
            Unit::Message(m) => leaf_candidates(g, a, *m),
            Unit::Summary { id, .. } => condensed_candidates(g, a, id),
        };
        match cands.as_slice() {
            [one] if !used.contains(one) => {
                used.push(one.clone());
                out.push(Restore::Link {
                    holder: one.clone(),
                    unit: u.clone(),
                });
            }
            _ => out.push(Restore::Context(u.clone())),
        }
    }
    out
}

/// `g` with the planned links added (at the end of each holder's links).
pub fn with_links(g: &Graph, restores: &[Restore]) -> Option<Graph> {
    let mut out: Option<Graph> = None;
    for r in restores {
        let Restore::Link { holder, unit } = r else {
            continue;
        };
        let g2 = out.get_or_insert_with(|| g.clone());
        match unit {
            Unit::Message(m) => g2
                .msg_sources
                .entry(holder.clone())
                .or_default()
                .push((i64::MAX, *m)),
            Unit::Summary { id, .. } => g2
                .sources
                .entry(holder.clone())
                .or_default()
                .push((i64::MAX, id.clone())),
        }
    }
    out
}

/// The recomputed columns of `id`, else its stored ones.
pub fn meta_of(g: &Graph, a: &Analysis, id: &str) -> Option<Meta> {
    a.expected
        .get(id)
        .cloned()
        .or_else(|| g.summaries.get(id).map(derived::stored))
}

/// Whether the stored columns equal a recomputation.
fn proves(stored: &Meta, with: &Meta) -> bool {
    stored.descendant_count == with.descendant_count
        && stored.descendant_tokens == with.descendant_tokens
        && stored.source_message_tokens == with.source_message_tokens
        && stored.earliest == with.earliest
        && stored.latest == with.latest
}

/// A leaf's recomputation with one more message.
fn add_message(exp: &Meta, tokens: i64, at: Option<DateTime<Utc>>) -> Meta {
    let mut w = exp.clone();
    w.source_message_tokens += tokens;
    w.earliest = min_opt(exp.earliest, at);
    w.latest = max_opt(exp.latest, at);
    w
}

/// A condensed node's recomputation with one more source.
fn add_source(exp: &Meta, src: &Meta, created: Option<DateTime<Utc>>) -> Meta {
    let mut w = exp.clone();
    w.descendant_count += src.descendant_count + 1;
    w.descendant_tokens += src.token_count + src.descendant_tokens;
    w.source_message_tokens += src.source_message_tokens;
    w.earliest = min_opt(exp.earliest, src.earliest.or(created));
    w.latest = max_opt(exp.latest, src.latest.or(created));
    w
}

/// Reachable leaves whose stored columns equal their recomputation with message
/// `m` added, and whose messages stay one run of the conversation with it.
pub fn leaf_candidates(g: &Graph, a: &Analysis, m: i64) -> Vec<String> {
    let Some(msg) = g.messages.get(&m) else {
        return Vec::new();
    };
    let pos: HashMap<i64, usize> = g
        .own_messages
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, i))
        .collect();
    let at = timestamp::parse(&msg.created_at);
    let mut out = Vec::new();
    for id in a.reached.keys() {
        let (Some(links), Some(exp), Some(s)) = (
            g.msg_sources.get(id),
            a.expected.get(id),
            g.summaries.get(id),
        ) else {
            continue;
        };
        let mut run: Vec<usize> = links
            .iter()
            .filter_map(|(_, x)| pos.get(x).copied())
            .collect();
        run.extend(pos.get(&m));
        run.sort_unstable();
        let contiguous = run.windows(2).all(|w| w[1] == w[0] + 1);
        if exp.kind == "leaf"
            && contiguous
            && proves(&derived::stored(s), &add_message(exp, msg.tokens, at))
        {
            out.push(id.clone());
        }
    }
    out
}

/// Reachable condensed nodes deeper than `unit` whose stored columns equal their
/// recomputation with `unit` added as a source.
pub fn condensed_candidates(g: &Graph, a: &Analysis, unit: &str) -> Vec<String> {
    let (Some(u), Some(row)) = (meta_of(g, a, unit), g.summaries.get(unit)) else {
        return Vec::new();
    };
    let created = timestamp::parse(&row.created_at);
    let mut out = Vec::new();
    for id in a.reached.keys() {
        let (Some(exp), Some(s)) = (a.expected.get(id), g.summaries.get(id)) else {
            continue;
        };
        if exp.kind == "condensed"
            && s.depth > u.depth
            && proves(&derived::stored(s), &add_source(exp, &u, created))
        {
            out.push(id.clone());
        }
    }
    out
}
