//! A summary's pipeline input rebuilt from the database, as compaction builds it.
//!
//! - Leaf: its messages in link order, each `[YYYY-MM-DD HH:MM TZ] [role]` + the
//!   message text compaction uses (`compaction::source::message_text`)
//!   ([`crate::prompts::source::leaf_source_text`]); previous context = the preceding
//!   leaf in context order.
//! - Condensed: its source summaries in link order, each with its
//!   `[earliest – latest]` header ([`crate::prompts::source::condensed_source_text`]);
//!   no previous context.
//! - `timestamps: false` leaves the headers' times out (roles stay).
//!
//! Texts rewritten earlier in the same run come from the overlay, so a dry run shows
//! the same cascade an applied run writes.

use std::collections::HashMap;

use crate::compaction::source::message_text;
use rusqlite::{Connection, OptionalExtension};

use super::plan::PlannedSummary;
use crate::error::{LcmError, Result};
use crate::prompts::source::{
    condensed_source_text, leaf_source_text, messages_time_range, summaries_time_range,
    SourceMessage, SourceSummary,
};
use crate::summarize::SummarizeInput;
use crate::timefmt::Zone;

/// New texts of this run by summary id (they win over the stored ones).
pub type Overlay = HashMap<String, String>;

/// What a summary is rewritten from.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The pipeline input.
    pub input: SummarizeInput,
    /// The stored content now.
    pub old_content: String,
    /// The stored token count now.
    pub old_tokens: i64,
    /// Why the summary cannot be rewritten (no linked sources, or no source text);
    /// it is then left as it is.
    pub skip: Option<String>,
}

fn content_of(conn: &Connection, id: &str, overlay: &Overlay) -> Result<Option<String>> {
    if let Some(c) = overlay.get(id) {
        return Ok(Some(c.clone()));
    }
    Ok(conn
        .prepare_cached("SELECT content FROM summaries WHERE summary_id = ?1")?
        .query_row([id], |r| r.get::<_, Option<String>>(0))
        .optional()?
        .flatten())
}

/// The leaf input: messages with `[time] [role]` headers.
pub fn leaf_input(
    conn: &Connection,
    id: &str,
    zone: &Zone,
    timestamps: bool,
) -> Result<SummarizeInput> {
    let mut st = conn.prepare_cached(
        "SELECT m.message_id, m.role, m.created_at
         FROM summary_messages sm JOIN messages m ON m.message_id = sm.message_id
         WHERE sm.summary_id = ?1 ORDER BY sm.ordinal",
    )?;
    let rows: Vec<(i64, String, String)> = st
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
    // The same text compaction gives the summarizer (tool calls and results included).
    let stored = crate::store::messages::stored_by_ids(conn, &ids)?;
    let timed: Vec<SourceMessage> = rows
        .iter()
        .zip(&stored)
        .map(|((_, role, at), m)| SourceMessage::new(at, role, &message_text(m)))
        .collect();
    let time_range = messages_time_range(&timed, zone);
    let shown: Vec<SourceMessage> = if timestamps {
        timed.clone()
    } else {
        timed
            .iter()
            .map(|m| SourceMessage {
                created_at: None,
                ..m.clone()
            })
            .collect()
    };
    Ok(SummarizeInput {
        depth: 0,
        source_text: leaf_source_text(&shown, zone),
        previous_context: None,
        child_count: timed.len(),
        time_range,
        custom_instructions: None,
    })
}

/// The condensed input: source summaries (their texts from `overlay` when rewritten
/// in this run) with `[earliest – latest]` headers.
pub fn condensed_input(
    conn: &Connection,
    id: &str,
    depth: i64,
    zone: &Zone,
    timestamps: bool,
    overlay: &Overlay,
) -> Result<SummarizeInput> {
    let mut st = conn.prepare_cached(
        "SELECT s.summary_id, s.content, s.earliest_at, s.latest_at, s.created_at
         FROM summary_parents sp JOIN summaries s ON s.summary_id = sp.parent_summary_id
         WHERE sp.summary_id = ?1 ORDER BY sp.ordinal",
    )?;
    let children: Vec<SourceSummary> = st
        .query_map([id], |r| {
            let child: String = r.get(0)?;
            let content: String = r.get::<_, Option<String>>(1)?.unwrap_or_default();
            let created: String = r.get::<_, Option<String>>(4)?.unwrap_or_default();
            let earliest = r.get::<_, Option<String>>(2)?.unwrap_or(created.clone());
            let latest = r.get::<_, Option<String>>(3)?.unwrap_or(created);
            let text = overlay.get(&child).cloned().unwrap_or(content);
            Ok(SourceSummary::new(&earliest, &latest, &text))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let time_range = summaries_time_range(&children, zone);
    let shown: Vec<SourceSummary> = if timestamps {
        children.clone()
    } else {
        children
            .iter()
            .map(|c| SourceSummary {
                earliest_at: None,
                latest_at: None,
                ..c.clone()
            })
            .collect()
    };
    Ok(SummarizeInput {
        depth,
        source_text: condensed_source_text(&shown, zone),
        previous_context: None,
        child_count: children.len(),
        time_range,
        custom_instructions: None,
    })
}

/// Rebuilds everything a summary is rewritten from. `previous_leaf` is the leaf
/// before it in context order (leaves only).
pub fn prepare(
    conn: &Connection,
    item: &PlannedSummary,
    zone: &Zone,
    timestamps: bool,
    overlay: &Overlay,
    previous_leaf: Option<&str>,
) -> Result<Prepared> {
    let (old_content, old_tokens): (String, i64) = conn
        .prepare_cached(
            "SELECT COALESCE(content, ''), COALESCE(token_count, 0) FROM summaries WHERE summary_id = ?1",
        )?
        .query_row([&item.summary_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .ok_or_else(|| {
            LcmError::not_found(format!(
                "summary {} disappeared during the rewrite",
                item.summary_id
            ))
        })?;
    let mut input = if item.is_leaf() {
        let mut input = leaf_input(conn, &item.summary_id, zone, timestamps)?;
        if let Some(prev) = previous_leaf {
            input.previous_context = content_of(conn, prev, overlay)?
                .map(|c| c.trim().to_owned())
                .filter(|c| !c.is_empty());
        }
        input
    } else {
        condensed_input(
            conn,
            &item.summary_id,
            item.depth,
            zone,
            timestamps,
            overlay,
        )?
    };
    input.depth = item.depth.max(0);
    let what = if item.is_leaf() {
        "source messages"
    } else {
        "source summaries"
    };
    let skip = if input.child_count == 0 {
        Some(format!(
            "no {what} are linked to it, so its source text cannot be rebuilt"
        ))
    } else if input.source_text.trim().is_empty() {
        Some(format!("its {} {what} have no text", input.child_count))
    } else {
        None
    };
    Ok(Prepared {
        input,
        old_content,
        old_tokens,
        skip,
    })
}

/// Index of each leaf in context order.
pub fn positions(order: &[String]) -> HashMap<String, usize> {
    order
        .iter()
        .enumerate()
        .map(|(i, id)| (id.clone(), i))
        .collect()
}
