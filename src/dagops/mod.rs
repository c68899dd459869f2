//! Operator edits of the summary DAG, each planned read-only (the dry run) and
//! applied in one transaction that re-plans, writes, keeps the FTS tables in sync
//! and checks that it introduced no invariant violation before it commits:
//!
//! - [`dissolve`]: a summary of the context list is replaced, at its place, by what
//!   it was made from (child summaries or source messages).
//! - [`transplant`]: another conversation's context summaries, with the DAG and the
//!   messages beneath them, are copied under new ids to the front of a context list.

pub mod dissolve;
pub mod run;
pub mod transplant;

use std::collections::HashSet;

use rusqlite::Connection;
use serde::Serialize;

use crate::doctor::{check, Violation};
use crate::error::{LcmError, Result};
use crate::store::{graph, summaries};

/// A one-line preview of a text, at most `n` characters.
pub fn preview(text: &str, n: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= n {
        return line;
    }
    let cut: String = line.chars().take(n.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// A summary as the dry runs show it.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct SummaryView {
    /// The summary.
    pub summary_id: String,
    /// `leaf` or `condensed`.
    pub kind: crate::store::summaries::SummaryKind,
    /// Depth.
    pub depth: i64,
    /// Token count.
    pub token_count: i64,
    /// Context ordinal, when it is a context item.
    pub ordinal: Option<i64>,
    /// The start of its text.
    pub preview: String,
}

/// Loads a summary view (ordinal from the given conversation's context list).
pub fn summary_view(
    conn: &Connection,
    conversation_id: i64,
    id: &str,
) -> Result<Option<SummaryView>> {
    let Some(s) = summaries::get(conn, id)? else {
        return Ok(None);
    };
    let ordinal = graph::context_ordinal_of(conn, conversation_id, None, Some(id))?;
    Ok(Some(SummaryView {
        preview: preview(&s.content, 80),
        summary_id: s.summary_id,
        kind: s.kind,
        depth: s.depth,
        token_count: s.token_count,
        ordinal,
    }))
}

/// The structural violations of a conversation (full-text tables left out).
pub fn structural(conn: &Connection, conversation_id: i64) -> Result<Vec<Violation>> {
    let g = graph::load(conn, conversation_id)?;
    Ok(check::analyze(&g).violations)
}

/// Fails (so the caller's transaction rolls back) when `after` holds a violation
/// `before` did not.
pub fn no_new_violations(what: &str, before: &[Violation], after: &[Violation]) -> Result<()> {
    let old: HashSet<_> = before.iter().map(Violation::key).collect();
    let new: Vec<&Violation> = after.iter().filter(|v| !old.contains(&v.key())).collect();
    if new.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = new.iter().map(|v| v.message.clone()).collect();
    Err(LcmError::internal(format!(
        "{what} would break the store's invariants, so nothing was written: {}",
        names.join("; ")
    )))
}
