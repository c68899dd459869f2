//! Which summaries a rewrite touches, in which order: bottom-up by depth (leaves
//! first, so rewritten children feed their parents), chronological within a depth
//! (`earliest_at`, then `created_at`, then id). Unknown conversations, summaries or
//! depths are `LCM_NOT_FOUND` errors that say what does exist.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

use crate::error::{LcmError, Result};
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

/// One summary of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedSummary {
    /// `sum_…`.
    pub summary_id: String,
    /// `leaf` or `condensed`.
    pub kind: String,
    /// 0 for leaves.
    pub depth: i64,
    /// Source messages (leaf) or source summaries (condensed).
    pub child_count: i64,
    /// Current token count.
    pub token_count: i64,
    /// Earliest source time (ISO), if recorded.
    pub earliest_at: Option<String>,
    /// Latest source time (ISO), if recorded.
    pub latest_at: Option<String>,
    /// Creation time (SQLite UTC text).
    pub created_at: String,
}

impl PlannedSummary {
    /// Whether its sources are messages (depth 0) rather than summaries.
    pub fn is_leaf(&self) -> bool {
        self.depth <= 0
    }

    fn sort_key(&self) -> (i64, Option<DateTime<Utc>>, Option<DateTime<Utc>>, String) {
        let created = timestamp::parse(&self.created_at);
        let earliest = self
            .earliest_at
            .as_deref()
            .and_then(timestamp::parse)
            .or(created);
        (self.depth, earliest, created, self.summary_id.clone())
    }
}

fn all_summaries(conn: &Connection, conversation_id: i64) -> Result<Vec<PlannedSummary>> {
    let mut st = conn.prepare(
        "SELECT s.summary_id, s.kind, COALESCE(s.depth, 0), COALESCE(s.token_count, 0), s.earliest_at, s.latest_at,
                COALESCE(s.created_at, ''),
                CASE WHEN COALESCE(s.depth, 0) = 0
                     THEN (SELECT COUNT(*) FROM summary_messages sm WHERE sm.summary_id = s.summary_id)
                     ELSE (SELECT COUNT(*) FROM summary_parents sp WHERE sp.summary_id = s.summary_id) END
         FROM summaries s WHERE s.conversation_id = ?1",
    )?;
    let rows = st
        .query_map([conversation_id], |r| {
            Ok(PlannedSummary {
                summary_id: r.get(0)?,
                kind: r.get(1)?,
                depth: r.get(2)?,
                token_count: r.get(3)?,
                earliest_at: r.get(4)?,
                latest_at: r.get(5)?,
                created_at: r.get(6)?,
                child_count: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
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
    let found: Option<i64> = conn
        .query_row(
            "SELECT conversation_id FROM conversations WHERE conversation_id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()?;
    if found.is_some() {
        return Ok(());
    }
    let mut st =
        conn.prepare("SELECT conversation_id FROM conversations ORDER BY conversation_id")?;
    let ids = st
        .query_map([], |r| r.get::<_, i64>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
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

/// The summaries beneath `root` (its sources, recursively), `root` included.
fn subtree_ids(conn: &Connection, root: &str) -> Result<HashSet<String>> {
    let mut st = conn.prepare(
        "WITH RECURSIVE sub(id) AS (
             SELECT ?1
             UNION
             SELECT sp.parent_summary_id FROM summary_parents sp JOIN sub ON sp.summary_id = sub.id
         ) SELECT id FROM sub",
    )?;
    let ids = st
        .query_map([root], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<HashSet<_>>>()?;
    Ok(ids)
}

fn unknown_summary(
    conn: &Connection,
    conversation_id: i64,
    id: &str,
    all: &[PlannedSummary],
) -> LcmError {
    let elsewhere: Option<i64> = conn
        .query_row(
            "SELECT conversation_id FROM summaries WHERE summary_id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()
        .ok()
        .flatten();
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
    top.sort_by_key(|s| std::cmp::Reverse(s.sort_key()));
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
    let all = all_summaries(conn, conversation_id)?;
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
                let ids = subtree_ids(conn, id)?;
                all.into_iter()
                    .filter(|s| ids.contains(&s.summary_id))
                    .collect()
            } else {
                all.into_iter().filter(|s| &s.summary_id == id).collect()
            }
        }
    };
    chosen.sort_by_cached_key(PlannedSummary::sort_key);
    Ok(chosen)
}

/// Every leaf of a conversation in context order (by the position of its first
/// source message), for previous-context lookups.
pub fn leaf_order(conn: &Connection, conversation_id: i64) -> Result<Vec<String>> {
    let mut st = conn.prepare(
        "SELECT s.summary_id
         FROM summaries s
         LEFT JOIN summary_messages sm ON sm.summary_id = s.summary_id
         LEFT JOIN messages m ON m.message_id = sm.message_id
         WHERE s.conversation_id = ?1 AND COALESCE(s.depth, 0) = 0
         GROUP BY s.summary_id
         ORDER BY MIN(m.seq) IS NULL, MIN(m.seq), COALESCE(s.earliest_at, s.created_at), s.summary_id",
    )?;
    let ids = st
        .query_map([conversation_id], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ids)
}
