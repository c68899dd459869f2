//! Which summaries a rewrite touches, in which order: bottom-up by depth (leaves
//! first, so rewritten children feed their parents), chronological within a depth
//! (`earliest_at`, then `created_at`, then id). Unknown conversations, summaries or
//! depths are `LCM_NOT_FOUND` errors that say what does exist.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rusqlite::Connection;

use crate::error::{LcmError, Result};
use crate::store::{conversations, summaries};
use crate::timestamp;

/// What to rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// One summary; with `subtree`, also every summary beneath it (its sources,
    /// recursively).
    Summary {
        /// The summary id.
        id: String,
        /// Include its sources, recursively.
        subtree: bool,
    },
    /// Every summary of one depth.
    Depth(i64),
    /// Every summary of the conversation.
    All,
}

/// One summary of a plan: its stored outline.
pub use crate::store::summaries::SummaryOutline as PlannedSummary;

/// Plan order: depth, then earliest source time (creation time when unknown),
/// creation time, id.
fn sort_key(s: &PlannedSummary) -> (i64, Option<DateTime<Utc>>, Option<DateTime<Utc>>, String) {
    let created = timestamp::parse(&s.created_at);
    let earliest = s
        .earliest_at
        .as_deref()
        .and_then(timestamp::parse)
        .or(created);
    (s.depth, earliest, created, s.summary_id.clone())
}

/// Counts by depth: `d0 ×8, d1 ×3, d2 ×1`.
fn depth_counts(all: &[PlannedSummary]) -> String {
    let mut by: BTreeMap<i64, usize> = BTreeMap::new();
    for s in all {
        *by.entry(s.depth).or_default() += 1;
    }
    by.iter()
        .map(|(d, n)| format!("d{d} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn some_ids(ids: impl Iterator<Item = String>, limit: usize) -> String {
    let ids: Vec<String> = ids.collect();
    let shown = ids
        .iter()
        .take(limit)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > limit {
        format!("{shown}, … ({} more)", ids.len() - limit)
    } else {
        shown
    }
}

fn conversation_exists(conn: &Connection, id: i64) -> Result<()> {
    if conversations::get(conn, id)?.is_some() {
        return Ok(());
    }
    let mut ids: Vec<i64> = conversations::list(conn)?
        .iter()
        .map(|c| c.conversation_id)
        .collect();
    ids.sort_unstable();
    let what = if ids.is_empty() {
        "the database has no conversations".to_owned()
    } else {
        format!(
            "the database has {} conversation{}: {}",
            ids.len(),
            if ids.len() == 1 { "" } else { "s" },
            some_ids(ids.iter().map(|i| i.to_string()), 20)
        )
    };
    Err(LcmError::not_found(format!(
        "conversation {id} does not exist; {what}"
    )))
}

fn unknown_summary(
    conn: &Connection,
    conversation_id: i64,
    id: &str,
    all: &[PlannedSummary],
) -> LcmError {
    let elsewhere = summaries::get(conn, id)
        .ok()
        .flatten()
        .map(|s| s.conversation_id);
    if let Some(other) = elsewhere {
        return LcmError::not_found(format!(
            "summary {id} belongs to conversation {other}, not {conversation_id}"
        ));
    }
    if all.is_empty() {
        return LcmError::not_found(format!(
            "summary {id} does not exist; conversation {conversation_id} has no summaries"
        ));
    }
    let mut top: Vec<&PlannedSummary> = all.iter().collect();
    top.sort_by_key(|s| std::cmp::Reverse(sort_key(s)));
    LcmError::not_found(format!(
        "summary {id} does not exist in conversation {conversation_id}; it has {} summaries ({}), the deepest: {}",
        all.len(),
        depth_counts(all),
        some_ids(top.iter().map(|s| format!("{} (d{})", s.summary_id, s.depth)), 8)
    ))
}

/// The ordered plan for `selector` in a conversation.
pub fn plan(
    conn: &Connection,
    conversation_id: i64,
    selector: &Selector,
) -> Result<Vec<PlannedSummary>> {
    conversation_exists(conn, conversation_id)?;
    let all = summaries::outlines(conn, conversation_id)?;
    let mut chosen: Vec<PlannedSummary> = match selector {
        Selector::All => all,
        Selector::Depth(d) => {
            let at: Vec<PlannedSummary> = all.iter().filter(|s| s.depth == *d).cloned().collect();
            if at.is_empty() {
                let has = if all.is_empty() {
                    "it has no summaries".to_owned()
                } else {
                    format!("it has {} ({})", all.len(), depth_counts(&all))
                };
                return Err(LcmError::not_found(format!(
                    "conversation {conversation_id} has no summaries at depth {d}; {has}"
                )));
            }
            at
        }
        Selector::Summary { id, subtree } => {
            if !all.iter().any(|s| &s.summary_id == id) {
                return Err(unknown_summary(conn, conversation_id, id, &all));
            }
            if *subtree {
                let ids = summaries::subtree_ids(conn, id)?;
                all.into_iter()
                    .filter(|s| ids.contains(&s.summary_id))
                    .collect()
            } else {
                all.into_iter().filter(|s| &s.summary_id == id).collect()
            }
        }
    };
    chosen.sort_by_cached_key(sort_key);
    Ok(chosen)
}

/// Every leaf of a conversation in context order (by the position of its first
/// source message), for previous-context lookups.
pub fn leaf_order(conn: &Connection, conversation_id: i64) -> Result<Vec<String>> {
    summaries::leaves_in_source_order(conn, conversation_id)
}
