//! `dissolve`: a summary of the context list is replaced, at its position, by what
//! it was made from — a condensed summary by its child summaries in link order, a
//! leaf by its source messages. Later items shift and ordinals stay 0..n-1. The
//! dissolved summary, its links and its FTS rows are removed, unless `keep` keeps
//! the row (unreferenced, with its links, for inspection).

use rusqlite::{Connection, Transaction};
use serde::{Deserialize, Serialize};

use super::{no_new_violations, preview, structural, summary_view, SummaryView};
use crate::doctor::{require_conversation, violation::list};
use crate::error::{LcmError, Result};
use crate::store::links::{self, ContextEntry};
use crate::store::{graph, messages, summaries, Features};

/// Parameters of `dissolve`.
#[derive(Debug, Clone, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct DissolveParams {
    /// The conversation whose context list holds the summary.
    pub conversation_id: i64,
    /// The summary to dissolve.
    pub summary_id: String,
    /// Write (default: plan only).
    #[serde(default)]
    #[ts(as = "Option<bool>", optional)]
    pub apply: bool,
    /// Keep the summary row (unreferenced) instead of deleting it.
    #[serde(default)]
    #[ts(as = "Option<bool>", optional)]
    pub keep: bool,
}

/// One item that comes back into the context list.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct RestoredItem {
    /// `summary` or `message`.
    pub item_type: crate::store::messages::ContextItemType,
    /// The summary, for summary items.
    pub summary_id: Option<String>,
    /// The message, for message items.
    pub message_id: Option<i64>,
    /// The summary's kind.
    pub kind: Option<crate::store::summaries::SummaryKind>,
    /// The summary's depth.
    pub depth: Option<i64>,
    /// The message's role.
    pub role: Option<String>,
    /// The message's seq.
    pub seq: Option<i64>,
    /// Its tokens.
    pub token_count: i64,
    /// The start of its text.
    pub preview: String,
}

/// What a dissolve does (the dry run) or did.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct DissolvePlan {
    /// The conversation.
    pub conversation_id: i64,
    /// The summary dissolved.
    pub target: SummaryView,
    /// What replaces it, in order.
    pub restored: Vec<RestoredItem>,
    /// Context items before.
    pub context_items_before: i64,
    /// Context items after.
    pub context_items_after: i64,
    /// Context tokens before.
    pub context_tokens_before: i64,
    /// Context tokens after.
    pub context_tokens_after: i64,
    /// `after - before`.
    pub token_delta: i64,
    /// Items after the target, which move.
    pub items_shifted: i64,
    /// How far they move.
    pub shift: i64,
    /// Whether the summary row is kept.
    pub keep: bool,
    /// Whether it was written.
    pub applied: bool,
}

/// Plans a dissolve (read-only); errors name what is wrong and what exists.
pub fn plan(conn: &Connection, p: &DissolveParams) -> Result<DissolvePlan> {
    let conv = p.conversation_id;
    require_conversation(conn, conv)?;
    let target = summary_view(conn, conv, &p.summary_id)?
        .ok_or_else(|| unknown_summary(conn, conv, &p.summary_id))?;
    let owner = summaries::get(conn, &p.summary_id)?
        .map(|s| s.conversation_id)
        .unwrap_or(conv);
    if owner != conv {
        return Err(LcmError::invalid(format!(
            "summary {} belongs to conversation {owner}, not {conv}",
            p.summary_id
        )));
    }
    let Some(ordinal) = target.ordinal else {
        return Err(not_in_context(conn, conv, &p.summary_id)?);
    };
    let restored = sources(conn, conv, &p.summary_id)?;
    already_in_context(conn, conv, &restored)?;
    let items_before = graph::context_len(conn, conv, None)?;
    let shifted = graph::context_len(conn, conv, Some(ordinal))?;
    let tokens_before = messages::context_token_count(conn, conv)?;
    let back: i64 = restored.iter().map(|r| r.token_count).sum();
    let tokens_after = tokens_before - target.token_count + back;
    let shift = restored.len() as i64 - 1;
    Ok(DissolvePlan {
        conversation_id: conv,
        context_items_before: items_before,
        context_items_after: items_before + shift,
        context_tokens_before: tokens_before,
        context_tokens_after: tokens_after,
        token_delta: tokens_after - tokens_before,
        items_shifted: if shift == 0 { 0 } else { shifted },
        shift,
        keep: p.keep,
        applied: false,
        target,
        restored,
    })
}

fn unknown_summary(conn: &Connection, conv: i64, id: &str) -> LcmError {
    let listed = context_summaries(conn, conv).unwrap_or_default();
    let known = if listed.is_empty() {
        format!("conversation {conv} has no summaries in its context list")
    } else {
        format!(
            "summaries in the context list of conversation {conv}: {}",
            list(&listed)
        )
    };
    LcmError::not_found(format!("summary {id} does not exist ({known})"))
}

/// `sum_… (dN)` for each summary item of a context list.
fn context_summaries(conn: &Connection, conv: i64) -> Result<Vec<String>> {
    Ok(graph::context_summaries(conn, conv)?
        .into_iter()
        .map(|(id, depth)| format!("{id} (d{depth})"))
        .collect())
}

/// The error for a summary that is no context item: it names the summary built from
/// it, and the chain up to the context item that holds it.
fn not_in_context(conn: &Connection, conv: i64, id: &str) -> Result<LcmError> {
    let mut chain: Vec<String> = Vec::new();
    let mut cur = id.to_owned();
    let mut top_ordinal = None;
    while chain.len() < 64 {
        let holders = summaries::derived_summary_ids(conn, &cur)?;
        let Some(h) = pick_holder(conn, conv, &holders)? else {
            break;
        };
        let view = summary_view(conn, conv, &h)?;
        chain.push(format!(
            "{h} (d{})",
            view.as_ref().map(|v| v.depth).unwrap_or(0)
        ));
        top_ordinal = view.and_then(|v| v.ordinal);
        cur = h;
        if top_ordinal.is_some() {
            break;
        }
    }
    let Some(first) = chain.first() else {
        return Ok(LcmError::invalid(format!(
            "summary {id} is not in the context list of conversation {conv}, and no summary lists it as a source (run doctor on conversation {conv})"
        )));
    };
    let mut msg =
        format!("summary {id} is not in the context list of conversation {conv}: {first} holds it");
    for h in &chain[1..] {
        msg.push_str(&format!(", which {h} holds"));
    }
    match top_ordinal {
        Some(o) => msg.push_str(&format!(" (context item {o}); dissolve {cur} first")),
        None => msg.push_str(" (no context item reaches it; run doctor)"),
    }
    Ok(LcmError::invalid(msg))
}

/// Prefers a holder that is a context item of `conv`, else the first.
fn pick_holder(conn: &Connection, conv: i64, holders: &[String]) -> Result<Option<String>> {
    for h in holders {
        if summary_view(conn, conv, h)?.is_some_and(|v| v.ordinal.is_some()) {
            return Ok(Some(h.clone()));
        }
    }
    Ok(holders.first().cloned())
}

/// What a summary was made from, in link order; every row must exist in `conv`.
fn sources(conn: &Connection, conv: i64, id: &str) -> Result<Vec<RestoredItem>> {
    let mut out = message_sources(conn, conv, id)?;
    if out.is_empty() {
        out = summary_sources(conn, conv, id)?;
    }
    if out.is_empty() {
        return Err(LcmError::invalid(format!(
            "summary {id} has no linked sources, so there is nothing to dissolve it into (run doctor on conversation {conv})"
        )));
    }
    Ok(out)
}

fn message_sources(conn: &Connection, conv: i64, id: &str) -> Result<Vec<RestoredItem>> {
    let rows = graph::linked_messages(conn, id)?
        .into_iter()
        .map(|r| {
            let item = RestoredItem {
                item_type: crate::store::messages::ContextItemType::Message,
                summary_id: None,
                message_id: Some(r.message_id),
                kind: None,
                depth: None,
                role: r.role,
                seq: r.seq,
                token_count: r.token_count,
                preview: preview(&r.content, 80),
            };
            (r.conversation_id, item)
        })
        .collect();
    owned_by(rows, conv, id)
}

fn summary_sources(conn: &Connection, conv: i64, id: &str) -> Result<Vec<RestoredItem>> {
    let rows = graph::linked_summaries(conn, id)?
        .into_iter()
        .map(|r| {
            let item = RestoredItem {
                item_type: crate::store::messages::ContextItemType::Summary,
                summary_id: Some(r.summary_id),
                message_id: None,
                kind: r.kind,
                depth: r.depth,
                role: None,
                seq: None,
                token_count: r.token_count,
                preview: preview(&r.content, 80),
            };
            (r.conversation_id, item)
        })
        .collect();
    owned_by(rows, conv, id)
}

/// The items, when every one exists in `conv` (the conversation is `None` when the
/// row is missing).
fn owned_by(
    rows: Vec<(Option<i64>, RestoredItem)>,
    conv: i64,
    id: &str,
) -> Result<Vec<RestoredItem>> {
    rows.into_iter()
        .map(|(c, item)| {
            if c == Some(conv) {
                return Ok(item);
            }
            let what = match (&item.summary_id, item.message_id) {
                (Some(s), _) => format!("summary {s}"),
                (_, m) => format!("message {}", m.unwrap_or(0)),
            };
            Err(broken_source(id, &what, conv))
        })
        .collect()
}

fn broken_source(id: &str, what: &str, conv: i64) -> LcmError {
    LcmError::invalid(format!(
        "summary {id} lists {what} as a source, which does not exist in conversation {conv} (run doctor on conversation {conv})"
    ))
}

fn already_in_context(conn: &Connection, conv: i64, items: &[RestoredItem]) -> Result<()> {
    for it in items {
        let hit = graph::context_ordinal_of(conn, conv, it.message_id, it.summary_id.as_deref())?;
        if let Some(o) = hit {
            let what = it
                .summary_id
                .clone()
                .unwrap_or_else(|| format!("message {}", it.message_id.unwrap_or(0)));
            return Err(LcmError::invalid(format!(
                "{what} is already context item {o}; dissolving would list it twice (run doctor on conversation {conv})"
            )));
        }
    }
    Ok(())
}

/// Plans again inside the transaction and writes the dissolve.
pub fn apply(tx: &Transaction, p: &DissolveParams, features: Features) -> Result<DissolvePlan> {
    let mut plan = plan(tx, p)?;
    let conv = p.conversation_id;
    let before = structural(tx, conv)?;
    if !p.keep {
        let holders = summaries::derived_summary_ids(tx, &p.summary_id)?;
        if !holders.is_empty() {
            return Err(LcmError::invalid(format!(
                "summary {} is still listed as a source by {} (kept after an earlier dissolve); pass keep to leave the row",
                p.summary_id,
                list(&holders)
            )));
        }
    }
    splice(tx, conv, plan.target.ordinal.unwrap_or(0), &plan.restored)?;
    if !p.keep {
        remove_summary(tx, &p.summary_id, features)?;
    }
    no_new_violations("this dissolve", &before, &structural(tx, conv)?)?;
    links::touch_conversation(tx, conv)?;
    plan.applied = true;
    Ok(plan)
}

/// Replaces the item at `ordinal` by `items` ([`links::splice_context`]).
fn splice(tx: &Transaction, conv: i64, ordinal: i64, items: &[RestoredItem]) -> Result<()> {
    let entries: Vec<ContextEntry> = items
        .iter()
        .map(|it| match (&it.summary_id, it.message_id) {
            (Some(s), _) => ContextEntry::Summary(s.clone()),
            (None, m) => ContextEntry::Message(m.unwrap_or_default()),
        })
        .collect();
    links::splice_context(tx, conv, ordinal, &entries)
}

/// Deletes a summary with its links and FTS rows.
pub fn remove_summary(tx: &Transaction, id: &str, features: Features) -> Result<()> {
    links::delete_summary(tx, id, features)
}
