//! Lossless repairs of one conversation, inside the caller's transaction: links and
//! context items pointing at rows that do not exist are removed; rows nothing covers
//! are linked back to the summary whose stored columns prove it held them, or else
//! put back into the context list in message order; derived columns are recomputed
//! bottom-up; ordinals are renumbered. No message or summary is ever deleted.

use std::collections::HashSet;

use rusqlite::Transaction;
use serde::Serialize;

use super::check::{self, Analysis, Unit};
use super::meta;
use super::relink::{meta_of, Restore};
use super::violation::list;
use crate::error::Result;
use crate::store::dag;
use crate::store::graph::{self, CtxRow, Graph};
use crate::store::links::{self, ContextEntry};
use crate::timestamp;

/// What a repair did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "DoctorRepairKind")]
pub enum RepairKind {
    /// A link row pointing at a missing row was deleted.
    RemovedDanglingLink,
    /// A context item pointing at a missing row was deleted.
    RemovedDanglingContextItem,
    /// A lost link was restored (the holder's stored columns proved it).
    Relinked,
    /// Uncovered rows were put back into the context list.
    Reinserted,
    /// Derived columns were set to their recomputation.
    Metadata,
    /// Context ordinals were renumbered to 0..n-1.
    Resequenced,
    /// Full-text rows were added, replaced or removed.
    FtsRows,
    /// A full-text index was rebuilt from its text.
    FtsRebuilt,
    /// A broken summary was summarized again.
    Resummarized,
    /// A moved large file's row was pointed at its current path.
    RelocatedLargeFile,
}

/// One repair.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "DoctorRepair")]
pub struct Repair {
    /// What was done.
    pub kind: RepairKind,
    /// The conversation (`None`: database-wide).
    pub conversation_id: Option<i64>,
    /// Summaries involved.
    pub summary_ids: Vec<String>,
    /// Messages involved.
    pub message_ids: Vec<i64>,
    /// What was done, naming the rows.
    pub message: String,
}

impl Repair {
    /// A repair record.
    pub fn new(kind: RepairKind, conversation_id: Option<i64>, message: impl Into<String>) -> Self {
        Repair {
            kind,
            conversation_id,
            summary_ids: Vec::new(),
            message_ids: Vec::new(),
            message: message.into(),
        }
    }
}

/// Repairs one conversation's structure and derived columns.
pub fn conversation(tx: &Transaction, conversation_id: i64) -> Result<Vec<Repair>> {
    let mut done = Vec::new();
    let g = graph::load(tx, conversation_id)?;
    remove_dangling(tx, &g, &mut done)?;
    let g = graph::load(tx, conversation_id)?;
    let a = check::analyze(&g);
    restore_units(tx, &g, &a, &mut done)?;
    let g = graph::load(tx, conversation_id)?;
    let a = check::analyze(&g);
    fix_metadata(tx, &g, &a, &mut done)?;
    if g.context
        .iter()
        .enumerate()
        .any(|(i, c)| c.ordinal != i as i64)
    {
        dag::resequence(tx, conversation_id)?;
        done.push(Repair::new(
            RepairKind::Resequenced,
            Some(conversation_id),
            format!(
                "renumbered the {} context items of conversation {conversation_id} to 0..{}",
                g.context.len(),
                g.context.len() as i64 - 1
            ),
        ));
    }
    Ok(done)
}

fn remove_dangling(conn: &Transaction, g: &Graph, done: &mut Vec<Repair>) -> Result<()> {
    let c = Some(g.conversation_id);
    for l in g
        .bad_links
        .iter()
        .filter(|l| l.owner_conversation.is_none() || l.target_conversation.is_none())
    {
        let n = if l.table == "summary_parents" {
            links::unlink_source_summary(conn, &l.summary_id, &l.target)?
        } else {
            let message_id = l.target.parse::<i64>().unwrap_or_default();
            links::unlink_source_message(conn, &l.summary_id, message_id)?
        };
        if n > 0 {
            let mut r = Repair::new(
                RepairKind::RemovedDanglingLink,
                c,
                format!(
                    "deleted the {} row {} → {} (one end does not exist)",
                    l.table, l.summary_id, l.target
                ),
            );
            r.summary_ids.push(l.summary_id.clone());
            done.push(r);
        }
    }
    for item in g.context.iter().filter(|i| i.target_conversation.is_none()) {
        links::delete_context_item(conn, g.conversation_id, item.ordinal)?;
        let mut r = Repair::new(
            RepairKind::RemovedDanglingContextItem,
            c,
            format!(
                "deleted context item {} (it points at a row that does not exist)",
                item.ordinal
            ),
        );
        r.summary_ids.extend(item.summary_id.clone());
        r.message_ids.extend(item.message_id);
        done.push(r);
    }
    Ok(())
}

/// Puts every uncovered unit back as planned: linked to its proven holder, or into
/// the context list.
fn restore_units(tx: &Transaction, g: &Graph, a: &Analysis, done: &mut Vec<Repair>) -> Result<()> {
    let c = Some(g.conversation_id);
    let mut loose: Vec<(Option<i64>, ContextEntry)> = Vec::new();
    for r in &a.restores {
        match r {
            Restore::Link {
                holder,
                unit: Unit::Message(m),
            } => {
                relink_message(tx, g, holder, *m)?;
                let mut r = Repair::new(RepairKind::Relinked, c, format!("linked message {m} back to leaf {holder} (its stored counts and time range include it)"));
                r.summary_ids.push(holder.clone());
                r.message_ids.push(*m);
                done.push(r);
            }
            Restore::Link {
                holder,
                unit: Unit::Summary { id, messages },
            } => {
                relink_summary(tx, g, a, holder, id)?;
                let mut r = Repair::new(RepairKind::Relinked, c, format!("linked summary {id} back to {holder} (its stored counts and time range include it)"));
                r.summary_ids = vec![holder.clone(), id.clone()];
                r.message_ids = messages.clone();
                done.push(r);
            }
            Restore::Context(Unit::Message(m)) => {
                loose.push((g.messages.get(m).map(|r| r.seq), ContextEntry::Message(*m)));
            }
            Restore::Context(Unit::Summary { id, .. }) => {
                let first = meta_of(g, a, id).and_then(|m| m.first_seq);
                loose.push((first, ContextEntry::Summary(id.clone())));
            }
        }
    }
    if loose.is_empty() {
        return Ok(());
    }
    let (sums, msgs) = reinsert(tx, g, a, loose)?;
    let mut r = Repair::new(
        RepairKind::Reinserted,
        c,
        format!(
            "put back into the context list, in message order: {}",
            list(
                &sums
                    .iter()
                    .cloned()
                    .chain(msgs.iter().map(|m| format!("message {m}")))
                    .collect::<Vec<_>>()
            )
        ),
    );
    r.summary_ids = sums;
    r.message_ids = msgs;
    done.push(r);
    Ok(())
}

fn relink_message(tx: &Transaction, g: &Graph, holder: &str, m: i64) -> Result<()> {
    let seq = |id: &i64| g.messages.get(id).map(|r| r.seq).unwrap_or(i64::MAX);
    let mut ids: Vec<i64> = g
        .msg_sources
        .get(holder)
        .map(|v| v.iter().map(|(_, x)| *x).collect())
        .unwrap_or_default();
    let at = ids
        .iter()
        .position(|x| seq(x) > seq(&m))
        .unwrap_or(ids.len());
    ids.insert(at, m);
    links::link_source_message(tx, holder, m, &ids)
}

fn relink_summary(
    tx: &Transaction,
    g: &Graph,
    a: &Analysis,
    holder: &str,
    unit: &str,
) -> Result<()> {
    let first = |id: &str| {
        meta_of(g, a, id)
            .and_then(|m| m.first_seq)
            .unwrap_or(i64::MAX)
    };
    let mut ids: Vec<String> = g
        .sources
        .get(holder)
        .map(|v| v.iter().map(|(_, x)| x.clone()).collect())
        .unwrap_or_default();
    let at = ids
        .iter()
        .position(|x| first(x) > first(unit))
        .unwrap_or(ids.len());
    ids.insert(at, unit.to_owned());
    links::link_source_summary(tx, holder, unit, &ids)
}

/// Rewrites the context list with the loose units inserted, each before the first
/// existing item that starts later in message order (existing items keep their
/// order). Returns the summaries and messages put back.
fn reinsert(
    tx: &Transaction,
    g: &Graph,
    a: &Analysis,
    mut loose: Vec<(Option<i64>, ContextEntry)>,
) -> Result<(Vec<String>, Vec<i64>)> {
    let key = |item: &CtxRow| match (&item.message_id, &item.summary_id) {
        (Some(m), _) => g.messages.get(m).map(|r| r.seq),
        (_, Some(s)) => meta_of(g, a, s).and_then(|m| m.first_seq),
        _ => None,
    };
    loose.sort_by_key(|(k, _)| k.unwrap_or(i64::MAX));
    let (mut sums, mut msgs) = (Vec::new(), Vec::new());
    for (_, e) in &loose {
        match e {
            ContextEntry::Message(m) => msgs.push(*m),
            ContextEntry::Summary(s) => sums.push(s.clone()),
        }
    }
    let now = timestamp::now_sqlite();
    let mut rows: Vec<(ContextEntry, String)> = Vec::new();
    let mut pending = loose.into_iter().peekable();
    for item in &g.context {
        let k = key(item).unwrap_or(i64::MAX);
        while let Some((_, e)) = pending.next_if(|(lk, _)| lk.unwrap_or(i64::MAX) < k) {
            rows.push((e, now.clone()));
        }
        let e = match (&item.message_id, &item.summary_id) {
            (Some(m), _) => ContextEntry::Message(*m),
            (_, Some(s)) => ContextEntry::Summary(s.clone()),
            _ => continue,
        };
        rows.push((e, item.created_at.clone()));
    }
    rows.extend(pending.map(|(_, e)| (e, now.clone())));
    links::replace_context(tx, g.conversation_id, &rows)?;
    Ok((sums, msgs))
}

/// Writes the recomputed derived columns of every summary whose stored ones differ.
pub fn fix_metadata(
    tx: &Transaction,
    g: &Graph,
    a: &Analysis,
    done: &mut Vec<Repair>,
) -> Result<()> {
    fix_metadata_of(tx, g, a, None, done)
}

/// [`fix_metadata`] restricted to the summaries in `only` (all when `None`).
pub fn fix_metadata_of(
    tx: &Transaction,
    g: &Graph,
    a: &Analysis,
    only: Option<&HashSet<String>>,
    done: &mut Vec<Repair>,
) -> Result<()> {
    for id in a
        .order
        .iter()
        .filter(|id| only.is_none_or(|o| o.contains(*id)))
    {
        let (Some(s), Some(m)) = (g.summaries.get(id), a.expected.get(id)) else {
            continue;
        };
        let diffs = meta::diff(s, m);
        if diffs.is_empty() {
            continue;
        }
        links::write_derived(tx, id, m)?;
        let cols: Vec<&str> = diffs.iter().map(|d| d.column).collect();
        let mut r = Repair::new(
            RepairKind::Metadata,
            Some(g.conversation_id),
            format!("recomputed {} of summary {id}", cols.join(", ")),
        );
        r.summary_ids.push(id.clone());
        done.push(r);
    }
    Ok(())
}
