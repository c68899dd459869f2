//! Broken summaries: finding them in repair order (bottom-up: depth first, then
//! their place in the context), building what the summarizer needs from their
//! sources with compaction's builder (the same text compaction sent), and writing a new text with its
//! FTS rows and the recomputed columns of every summary above it.

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, Transaction};
use serde::Serialize;

use super::check::{self, Analysis};
use super::markers::{self, MarkerKind};
use super::repair;
use crate::compaction::source;
use crate::error::{LcmError, Result};
use crate::store::graph::{self, Graph};
use crate::store::{self, dag::Sources, links, summaries, Features};
use crate::summarize::SummarizeInput;
use crate::timeformat::Zone;

/// A summary whose text ends with a fallback or truncation marker.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct BrokenSummary {
    /// The summary.
    pub summary_id: String,
    /// Its conversation.
    pub conversation_id: i64,
    /// `leaf` or `condensed`.
    pub kind: crate::store::summaries::SummaryKind,
    /// Its depth.
    pub depth: i64,
    /// Stored token count.
    pub token_count: i64,
    /// Length of the text in characters.
    pub chars: usize,
    /// The marker it ends with.
    pub marker: MarkerKind,
    /// The marker's text.
    pub marker_text: String,
    /// Its context ordinal, when it is a context item.
    pub context_ordinal: Option<i64>,
    /// Whether a context item reaches it.
    pub reachable: bool,
    /// Position in the repair order of its conversation (1-based).
    pub order: usize,
}

/// Pre-order position of every reachable summary: context items in order, each
/// followed by its sources in link order.
fn positions(g: &Graph) -> HashMap<String, usize> {
    let mut pos = HashMap::new();
    for item in &g.context {
        let Some(root) = item.summary_id.clone() else {
            continue;
        };
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            if pos.contains_key(&id) || !g.owns_summary(&id) {
                continue;
            }
            pos.insert(id.clone(), pos.len());
            for s in g.own_sources(&id).into_iter().rev() {
                stack.push(s.to_owned());
            }
        }
    }
    pos
}

/// The conversation's broken summaries in repair order.
pub fn find(g: &Graph, a: &Analysis) -> Vec<BrokenSummary> {
    let pos = positions(g);
    let ordinals: HashMap<&str, i64> = g
        .context
        .iter()
        .filter_map(|c| c.summary_id.as_deref().map(|s| (s, c.ordinal)))
        .collect();
    let mut out: Vec<(usize, &str, BrokenSummary)> = Vec::new();
    for id in &g.own_summaries {
        let Some(s) = g.summaries.get(id) else {
            continue;
        };
        let Some((marker, text)) = markers::detect(&s.content) else {
            continue;
        };
        let b = BrokenSummary {
            summary_id: id.clone(),
            conversation_id: g.conversation_id,
            kind: s.kind,
            depth: s.depth,
            token_count: s.token_count,
            chars: s.content.chars().count(),
            marker,
            marker_text: text.to_owned(),
            context_ordinal: ordinals.get(id.as_str()).copied(),
            reachable: a.reached.contains_key(id),
            order: 0,
        };
        out.push((pos.get(id).copied().unwrap_or(usize::MAX), &s.created_at, b));
    }
    out.sort_by(|x, y| {
        (x.2.depth, x.0, x.1, &x.2.summary_id).cmp(&(y.2.depth, y.0, y.1, &y.2.summary_id))
    });
    out.into_iter()
        .enumerate()
        .map(|(i, (_, _, mut b))| {
            b.order = i + 1;
            b
        })
        .collect()
}

/// What one re-summarization sends and what it replaces.
#[derive(Debug, Clone)]
pub struct Job {
    /// The pipeline input.
    pub input: SummarizeInput,
    /// The text being replaced (checked again before writing).
    pub old_content: String,
}

/// The pipeline input of a stored summary, rebuilt from its linked sources by the
/// builder compaction uses ([`source::input_for`]): a leaf gets the leaves before it
/// as previous context, a condensed node its depth (at least 1).
pub fn input(
    conn: &Connection,
    id: &str,
    conversation_id: i64,
    depth: i64,
    zone: &Zone,
    strip_tags: &[String],
) -> Result<SummarizeInput> {
    let sources = store::sources::of_summary(conn, id)?;
    let render = source::Render {
        zone,
        timestamps: true,
        strip_tags,
    };
    let mut input = source::input_for(conn, &sources, render, &HashMap::new())?;
    if input.child_count == 0 {
        return Err(LcmError::invalid(format!(
            "summary {id} has no linked sources to summarize again"
        )));
    }
    match sources {
        Sources::Messages(_) => {
            input.previous_context = previous_context(conn, conversation_id, id)?;
        }
        Sources::Summaries(_) => input.depth = depth.max(1),
    }
    Ok(input)
}

/// Builds the job for one broken summary; `None` when its text is no longer broken.
pub fn job(conn: &Connection, id: &str, zone: &Zone, strip_tags: &[String]) -> Result<Option<Job>> {
    let s = crate::store::summaries::get(conn, id)?
        .ok_or_else(|| LcmError::not_found(format!("summary {id} no longer exists")))?;
    if markers::detect(&s.content).is_none() {
        return Ok(None);
    }
    let input = input(conn, id, s.conversation_id, s.depth, zone, strip_tags)?;
    Ok(Some(Job {
        input,
        old_content: s.content,
    }))
}

/// The leaves in context order: each context item's subtree, sources in link order.
fn leaf_sequence(g: &Graph) -> Vec<&str> {
    let mut out = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for item in &g.context {
        let Some(root) = item.summary_id.as_deref() else {
            continue;
        };
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            if !g.owns_summary(id) || !seen.insert(id) {
                continue;
            }
            if g.msg_sources.get(id).is_some_and(|m| !m.is_empty()) {
                out.push(id);
            }
            stack.extend(g.own_sources(id).into_iter().rev());
        }
    }
    out
}

/// Up to two leaves before leaf `id` in context order (each context item's subtree,
/// sources in link order), oldest first, blank-line separated: the summaries that
/// came before it where it sits, whether it is a context item or under one.
pub fn previous_context(
    conn: &Connection,
    conversation_id: i64,
    id: &str,
) -> Result<Option<String>> {
    let g = graph::load(conn, conversation_id)?;
    let seq = leaf_sequence(&g);
    let Some(at) = seq.iter().position(|s| *s == id) else {
        return Ok(None);
    };
    let mut found: Vec<&str> = seq[..at]
        .iter()
        .rev()
        .filter_map(|s| g.summaries.get(*s).map(|r| r.content.trim()))
        .filter(|c| !c.is_empty())
        .take(2)
        .collect();
    found.reverse();
    Ok((!found.is_empty()).then(|| found.join("\n\n")))
}

/// Writes a new text for a summary (when its text is still `old`), its FTS rows,
/// and the recomputed columns of the conversation's summaries. Returns whether it
/// wrote.
pub fn write(
    tx: &Transaction,
    id: &str,
    old: &str,
    content: &str,
    model: &str,
    features: Features,
) -> Result<bool> {
    let Some(current) = store::summaries::get(tx, id)?.filter(|s| s.content == old) else {
        return Ok(false);
    };
    links::write_text(tx, id, content, model)?;
    summaries::index_summary(tx, id, content, features)?;
    let g = graph::load(tx, current.conversation_id)?;
    let a = check::analyze(&g);
    repair::fix_metadata(tx, &g, &a, &mut Vec::new())?;
    Ok(true)
}
