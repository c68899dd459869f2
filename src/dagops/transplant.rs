//! `transplant`: copies a source conversation's context summaries — with every
//! summary beneath them, their links, and their source messages and parts — into a
//! target conversation under new ids, and puts them in front of the target's
//! context list in the source's order. Copied messages get new rows and seqs after
//! the target's last one; their full-text rows follow through the deferred index
//! (their ids lie above the watermark). Copies carry no transcript entry id or
//! stable event key: those identify the *source* session's transcript, and in the
//! target they would make a replayed entry look already stored.

use std::collections::{BTreeMap, HashSet};

use rusqlite::{Connection, Transaction};
use serde::{Deserialize, Serialize};

use super::{no_new_violations, structural, summary_view, SummaryView};
use crate::doctor::{check, repair, require_conversation, violation::list, Kind};
use crate::error::{LcmError, Result};
pub use crate::store::copy::indexed_copies;
use crate::store::{copy, graph, links, summaries, Features};

/// Parameters of `transplant`.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct TransplantParams {
    /// Where the summaries come from.
    pub source_conversation_id: i64,
    /// Where they go.
    pub target_conversation_id: i64,
    /// Write (default: plan only).
    #[serde(default)]
    #[ts(as = "Option<bool>", optional)]
    pub apply: bool,
}

/// Summaries to copy at one depth.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct DepthCount {
    /// The depth.
    pub depth: i64,
    /// How many.
    pub count: usize,
}

/// An old → new id pair.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct IdPair {
    /// The source summary.
    pub from: String,
    /// Its copy.
    pub to: String,
}

/// What a transplant does (the dry run) or did.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct TransplantPlan {
    /// Source conversation.
    pub source_conversation_id: i64,
    /// Target conversation.
    pub target_conversation_id: i64,
    /// The source's context summaries, in context order (they are prepended).
    pub context_summaries: Vec<SummaryView>,
    /// Every summary to copy, by depth.
    pub summaries_by_depth: Vec<DepthCount>,
    /// Summaries to copy (context ones and everything beneath).
    pub summary_count: usize,
    /// Messages to copy.
    pub message_count: usize,
    /// Message parts to copy.
    pub part_count: i64,
    /// Context items of the target before: summaries.
    pub target_summary_items: i64,
    /// Context items of the target before: messages.
    pub target_message_items: i64,
    /// Tokens the prepended items add to the target's context.
    pub token_overhead: i64,
    /// `file_…` ids the copies mention (their files stay registered to the source).
    pub file_ids: Vec<String>,
    /// Whether it was written.
    pub applied: bool,
    /// The copies of the context summaries, in order (after apply).
    pub mapping: Vec<IdPair>,
    /// Seq range of the copied messages in the target (after apply).
    pub seq_range: Option<(i64, i64)>,
    /// Copied messages found in `messages_fts` after the flush (after apply).
    pub messages_indexed: Option<usize>,
}

/// What to copy: summaries sources-first, and messages in seq order.
struct Selection {
    context: Vec<String>,
    summaries: Vec<String>,
    messages: Vec<i64>,
}

/// Plans a transplant (read-only).
pub fn plan(conn: &Connection, p: &TransplantParams) -> Result<TransplantPlan> {
    Ok(select_and_describe(conn, p)?.1)
}

fn select_and_describe(
    conn: &Connection,
    p: &TransplantParams,
) -> Result<(Selection, TransplantPlan)> {
    let (src, dst) = (p.source_conversation_id, p.target_conversation_id);
    if src == dst {
        return Err(LcmError::invalid(format!(
            "source and target are both conversation {src}"
        )));
    }
    require_conversation(conn, src)?;
    require_conversation(conn, dst)?;
    let sel = select(conn, src)?;
    // Context summaries first: they are what the operator sees in the plan.
    let mut order = sel.context.clone();
    order.extend(
        sel.summaries
            .iter()
            .filter(|s| !sel.context.contains(s))
            .cloned(),
    );
    refuse_duplicates(conn, dst, &order)?;
    let plan = describe(conn, p, &sel)?;
    Ok((sel, plan))
}

fn select(conn: &Connection, src: i64) -> Result<Selection> {
    let g = graph::load(conn, src)?;
    let context: Vec<String> = g
        .context
        .iter()
        .filter_map(|c| c.summary_id.clone())
        .filter(|s| g.owns_summary(s))
        .collect();
    if context.is_empty() {
        return Err(LcmError::invalid(format!(
            "conversation {src} has no summaries in its context list; there is nothing to transplant"
        )));
    }
    let mut below: HashSet<String> = HashSet::new();
    let mut stack = context.clone();
    while let Some(id) = stack.pop() {
        if below.insert(id.clone()) {
            stack.extend(g.own_sources(&id).into_iter().map(str::to_owned));
        }
    }
    refuse_damage(&g, &below)?;
    let a = check::analyze(&g);
    let summaries: Vec<String> = a
        .order
        .iter()
        .filter(|s| below.contains(*s))
        .cloned()
        .collect();
    let mut messages: Vec<i64> = summaries
        .iter()
        .flat_map(|s| g.msg_sources.get(s).into_iter().flatten().map(|(_, m)| *m))
        .collect::<HashSet<i64>>()
        .into_iter()
        .collect();
    messages.sort_by_key(|m| g.messages.get(m).map(|r| r.seq).unwrap_or(i64::MAX));
    Ok(Selection {
        context,
        summaries,
        messages,
    })
}

/// Refuses a source whose DAG beneath the copied summaries is damaged: a violation
/// (other than FTS rows and ordinal gaps) names one of them, or would restore a lost
/// row into one of them.
fn refuse_damage(g: &graph::Graph, below: &HashSet<String>) -> Result<()> {
    let a = check::analyze(g);
    let touches = |v: &crate::doctor::Violation| {
        v.summary_ids.iter().any(|s| below.contains(s))
            || v.details["restoreTo"]
                .as_str()
                .is_some_and(|s| below.contains(s))
    };
    let bad: Vec<String> = a
        .violations
        .iter()
        .filter(|v| {
            !matches!(
                v.kind,
                Kind::OrdinalGap
                    | Kind::FtsMissing
                    | Kind::FtsExtra
                    | Kind::FtsOutdated
                    | Kind::FtsDuplicate
                    | Kind::FtsIndex
            )
        })
        .filter(|v| touches(v))
        .map(|v| v.message.clone())
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    Err(LcmError::invalid(format!(
        "the summaries of conversation {} to copy are damaged ({}); run doctor --apply on it first",
        g.conversation_id,
        bad.join("; ")
    )))
}

fn refuse_duplicates(conn: &Connection, dst: i64, ids: &[String]) -> Result<()> {
    let mut dupes = Vec::new();
    for id in ids {
        for twin in graph::same_text_in(conn, dst, id)? {
            dupes.push(format!("{id} = {twin}"));
        }
    }
    if dupes.is_empty() {
        return Ok(());
    }
    Err(LcmError::invalid(format!(
        "conversation {dst} already holds the text of {} summary(ies) to copy (transplanted before?): {}",
        dupes.len(),
        list(&dupes)
    )))
}

fn describe(conn: &Connection, p: &TransplantParams, sel: &Selection) -> Result<TransplantPlan> {
    let (src, dst) = (p.source_conversation_id, p.target_conversation_id);
    let mut views = Vec::new();
    for id in &sel.context {
        views.extend(summary_view(conn, src, id)?);
    }
    let mut depths: BTreeMap<i64, usize> = BTreeMap::new();
    let mut file_ids: Vec<String> = Vec::new();
    for s in summaries::by_ids(conn, &sel.summaries)? {
        *depths.entry(s.depth).or_default() += 1;
        for x in s.file_ids {
            if !file_ids.contains(&x) {
                file_ids.push(x);
            }
        }
    }
    let part_count = graph::part_count(conn, &sel.messages)?;
    let (ts, tm) = graph::context_item_counts(conn, dst)?;
    Ok(TransplantPlan {
        source_conversation_id: src,
        target_conversation_id: dst,
        token_overhead: views.iter().map(|v| v.token_count).sum(),
        context_summaries: views,
        summaries_by_depth: depths
            .into_iter()
            .map(|(depth, count)| DepthCount { depth, count })
            .collect(),
        summary_count: sel.summaries.len(),
        message_count: sel.messages.len(),
        part_count,
        target_summary_items: ts,
        target_message_items: tm,
        file_ids,
        applied: false,
        mapping: Vec::new(),
        seq_range: None,
        messages_indexed: None,
    })
}

/// Plans again inside the transaction and writes the copy.
pub fn apply(tx: &Transaction, p: &TransplantParams, features: Features) -> Result<TransplantPlan> {
    let (sel, mut out) = select_and_describe(tx, p)?;
    let dst = p.target_conversation_id;
    let before = structural(tx, dst)?;
    let (msg_map, range) = copy::messages(tx, dst, &sel.messages)?;
    let sum_map = copy::summaries(tx, dst, &sel.summaries, &msg_map, features)?;
    let copies: HashSet<String> = sum_map.values().cloned().collect();
    let g = graph::load(tx, dst)?;
    let a = check::analyze(&g);
    repair::fix_metadata_of(tx, &g, &a, Some(&copies), &mut Vec::new())?;
    let copy_of = |s: &String| {
        sum_map
            .get(s)
            .cloned()
            .ok_or_else(|| LcmError::internal(format!("context summary {s} was not copied")))
    };
    let front: Vec<String> = sel.context.iter().map(copy_of).collect::<Result<_>>()?;
    copy::prepend_context(tx, dst, &front)?;
    no_new_violations("this transplant", &before, &structural(tx, dst)?)?;
    links::touch_conversation(tx, dst)?;
    out.applied = true;
    out.mapping = sel
        .context
        .iter()
        .zip(front)
        .map(|(s, to)| IdPair {
            from: s.clone(),
            to,
        })
        .collect();
    out.seq_range = range;
    Ok(out)
}
