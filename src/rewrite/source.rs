//! A summary's pipeline input rebuilt from the database, as compaction builds it.
//!
//! The source text comes from compaction's builder
//! ([`crate::compaction::source::input_for`]), byte for byte what compaction sent:
//! - Leaf: its messages in link order, each `[YYYY-MM-DD HH:MM TZ] [role]` + the
//!   message text (tool calls and results included); previous context = the
//!   preceding leaf in context order.
//! - Condensed: its source summaries in time order, each with its
//!   `[earliest – latest]` header; no previous context.
//! - `timestamps: false` leaves the headers' times out (roles stay).
//!
//! Texts rewritten earlier in the same run come from the overlay, so a dry run shows
//! the same cascade an applied run writes.

use std::collections::HashMap;

use rusqlite::Connection;

use super::plan::PlannedSummary;
use crate::compaction::source::{input_for, Render};
use crate::error::{LcmError, Result};
use crate::store::{self, dag::Sources};
use crate::summarize::SummarizeInput;
use crate::timeformat::Zone;

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
    Ok(store::summaries::get(conn, id)?.map(|s| s.content))
}

/// The pipeline input of a summary rebuilt from its linked sources, through the
/// builder compaction uses ([`crate::compaction::source::input_for`]).
fn summary_input(
    conn: &Connection,
    item: &PlannedSummary,
    render: Render<'_>,
    overlay: &Overlay,
) -> Result<SummarizeInput> {
    let sources = if item.is_leaf() {
        Sources::Messages(store::summaries::source_message_ids(
            conn,
            &item.summary_id,
        )?)
    } else {
        Sources::Summaries(store::summaries::source_summary_ids(
            conn,
            &item.summary_id,
        )?)
    };
    input_for(conn, &sources, render, overlay)
}

/// Rebuilds everything a summary is rewritten from. `previous_leaf` is the leaf
/// before it in context order (leaves only).
pub fn rebuild(
    conn: &Connection,
    item: &PlannedSummary,
    zone: &Zone,
    timestamps: bool,
    strip_tags: &[String],
    overlay: &Overlay,
    previous_leaf: Option<&str>,
) -> Result<Prepared> {
    let stored = store::summaries::get(conn, &item.summary_id)?.ok_or_else(|| {
        LcmError::not_found(format!(
            "summary {} disappeared during the rewrite",
            item.summary_id
        ))
    })?;
    let (old_content, old_tokens) = (stored.content, stored.token_count);
    let render = Render {
        zone,
        timestamps,
        strip_tags,
    };
    let mut input = summary_input(conn, item, render, overlay)?;
    if let (true, Some(prev)) = (item.is_leaf(), previous_leaf) {
        input.previous_context = content_of(conn, prev, overlay)?
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty());
    }
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
