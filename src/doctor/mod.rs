//! `doctor`: checks the invariants of the store (ARCHITECTURE.md § Invariants) and,
//! on request, repairs what can be repaired without losing anything.
//!
//! - Integrity (read-only, always): SQLite's integrity check; context ordinals
//!   0..n-1; links and context items pointing at existing rows of the same
//!   conversation; no cycle; every message covered exactly once by the context list
//!   or a summary reachable from it; every summary's derived columns equal their
//!   recomputation; full-text rows in sync with their tables.
//! - Broken summaries: text ending with the engine's (or the reference plugin's)
//!   fallback or truncation marker, listed bottom-up in repair order.
//! - Apply: one transaction repairs links, coverage, columns, ordinals and FTS rows;
//!   then each broken summary is summarized again in its own transaction.

pub mod analysis;
pub mod check;
pub mod files;
pub mod fts;
pub mod global;
pub mod markers;
pub mod meta;
pub mod relink;
pub mod repair;
pub mod resummarize;
pub mod run;
pub mod violation;

use std::sync::Arc;

use rusqlite::{Connection, Transaction};
use serde::{Deserialize, Serialize};

use crate::error::{LcmError, Result};
use crate::store::tx::write_tx;
use crate::store::{graph, inspect, Features};
use crate::summarize::Level;
pub use repair::{Repair, RepairKind};
pub use resummarize::BrokenSummary;
pub use run::{integrity_check, Doctor};
pub use violation::{Kind, Violation};

/// Progress of a long job: `(phase, done, total)`.
pub type Progress = Arc<dyn Fn(&str, u64, u64) + Send + Sync>;

/// Parameters of `doctor`: exactly one of `conversation_id` / `all`.
#[derive(Debug, Clone, Default, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct DoctorParams {
    /// The conversation to check.
    #[serde(default)]
    pub conversation_id: Option<i64>,
    /// Check every conversation.
    #[serde(default)]
    #[ts(as = "Option<bool>", optional)]
    pub all: bool,
    /// Repair what can be repaired (default: report only, write nothing).
    #[serde(default)]
    #[ts(as = "Option<bool>", optional)]
    pub apply: bool,
}

/// How one broken summary's repair went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub enum ResummaryStatus {
    /// A new text was written.
    Repaired,
    /// The summarizer's answer would itself be broken (fallback or cap); nothing written.
    StillBroken,
    /// The text changed meanwhile (or is no longer broken); nothing written.
    Unchanged,
}

/// One re-summarization.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct Resummarized {
    /// The summary.
    pub summary_id: String,
    /// Its conversation.
    pub conversation_id: i64,
    /// What happened.
    pub status: ResummaryStatus,
    /// How the new text was obtained.
    pub level: Option<Level>,
    /// The model that wrote it.
    pub model: Option<String>,
    /// Tokens before.
    pub tokens_before: i64,
    /// Tokens of the new text.
    pub tokens_after: Option<i64>,
}

/// The summarizer failure that stopped the repairs.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "DoctorStopError")]
pub struct StopError {
    /// The summary being repaired.
    pub summary_id: String,
    /// The error's `LCM_…` code.
    #[ts(as = "crate::error::ErrorCode")]
    pub code: String,
    /// The error's message.
    pub message: String,
}

/// What a check found.
#[derive(Debug, Clone, Default, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "DoctorFindings")]
pub struct Findings {
    /// Broken invariants.
    pub violations: Vec<Violation>,
    /// Summaries ending with a fallback or truncation marker, in repair order.
    pub broken_summaries: Vec<BrokenSummary>,
}

impl Findings {
    /// Nothing found.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty() && self.broken_summaries.is_empty()
    }
}

/// The result of `doctor`.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    /// True when nothing is left to repair (after `apply`, when it was asked for).
    pub ok: bool,
    /// Whether repairs were asked for.
    pub applied: bool,
    /// The conversations checked.
    pub conversation_ids: Vec<i64>,
    /// What the first check found.
    #[serde(flatten)]
    pub found: Findings,
    /// The structural repairs made (`apply`).
    pub repairs: Vec<Repair>,
    /// The re-summarizations (`apply`).
    pub resummarized: Vec<Resummarized>,
    /// The summarizer error that stopped the re-summarizations.
    pub error: Option<StopError>,
    /// What a check after the repairs found (`apply`).
    pub remaining: Option<Findings>,
}

impl DoctorReport {
    /// The report of a check without repairs: what it found, nothing applied.
    pub fn dry_run(conversation_ids: Vec<i64>, found: Findings) -> DoctorReport {
        DoctorReport {
            ok: found.is_clean(),
            applied: false,
            conversation_ids,
            found,
            repairs: Vec::new(),
            resummarized: Vec::new(),
            error: None,
            remaining: None,
        }
    }
}

/// Every conversation id, ascending.
pub fn conversation_ids(conn: &Connection) -> Result<Vec<i64>> {
    inspect::conversation_ids(conn)
}

/// `LCM_NOT_FOUND` for a conversation that does not exist, listing those that do.
pub fn require_conversation(conn: &Connection, id: i64) -> Result<()> {
    let ids = conversation_ids(conn)?;
    if ids.contains(&id) {
        return Ok(());
    }
    let known = if ids.is_empty() {
        "the database has no conversations".to_owned()
    } else {
        format!("conversations: {}", violation::list(&ids))
    };
    Err(LcmError::not_found(format!(
        "conversation {id} does not exist ({known})"
    )))
}

/// Checks one conversation (read-only): its violations and broken summaries.
pub fn check_conversation(conn: &Connection, id: i64) -> Result<Findings> {
    let g = graph::load(conn, id)?;
    let a = check::analyze(&g);
    let broken = resummarize::find(&g, &a);
    Ok(Findings {
        violations: a.violations,
        broken_summaries: broken,
    })
}

/// Database-wide read-only checks: SQLite integrity and stray link rows.
pub fn check_global(conn: &Connection) -> Result<Vec<Violation>> {
    let mut v = global::integrity(conn)?;
    v.extend(global::stray_violation(&global::stray_links(conn)?));
    Ok(v)
}

/// Full-text row checks (nothing is written; the indexes themselves are checked by
/// [`check_global`]). On a read-only connection the message index is compared row
/// by row instead of with FTS5's `integrity-check` command.
pub fn check_fts(
    conn: &Connection,
    cmd: &Connection,
    features: Features,
    scope: Option<i64>,
) -> Result<Vec<Violation>> {
    let mut v = Vec::new();
    for table in fts::summary_tables(features) {
        v.extend(fts::summary_violations(
            table,
            &fts::diff_summaries(conn, table, scope)?,
        ));
    }
    if features.fts5 {
        v.extend(fts::message_violations(
            &fts::diff_messages(conn, cmd)?,
            scope,
        ));
    }
    Ok(v)
}

/// Repairs the full-text tables (inside the caller's transaction).
pub fn repair_fts(
    conn: &Connection,
    features: Features,
    scope: Option<i64>,
) -> Result<Vec<Repair>> {
    let mut done = Vec::new();
    for table in fts::summary_tables(features) {
        if fts::index_ok(conn, table, false)? == Some(false) {
            fts::rebuild(conn, table)?;
            done.push(Repair::new(
                RepairKind::FtsRebuilt,
                None,
                format!("rebuilt the {table} index from its text"),
            ));
        }
        let d = fts::diff_summaries(conn, table, scope)?;
        let n = fts::fix_summaries(conn, table, &d)?;
        if n > 0 {
            let mut ids: Vec<String> = d.missing.values().flatten().cloned().collect();
            ids.extend(
                d.outdated
                    .values()
                    .chain(d.duplicate.values())
                    .flatten()
                    .map(|(s, _)| s.clone()),
            );
            ids.extend(d.extra.iter().map(|(s, _)| s.clone()));
            let mut r = Repair::new(
                RepairKind::FtsRows,
                scope,
                format!(
                    "{table}: wrote or removed {n} row(s) of summary {}",
                    violation::list(&ids)
                ),
            );
            r.summary_ids = ids;
            done.push(r);
        }
    }
    if features.fts5 && !fts::message_violations(&fts::diff_messages(conn, conn)?, scope).is_empty()
    {
        fts::rebuild_messages(conn)?;
        done.push(Repair::new(
            RepairKind::FtsRebuilt,
            None,
            "rebuilt the messages_fts index from messages",
        ));
    }
    Ok(done)
}

/// Repairs every conversation of `ids`, the stray links and the full-text tables,
/// in one transaction.
pub fn repair_all(
    conn: &mut Connection,
    features: Features,
    ids: &[i64],
    scope: Option<i64>,
    progress: Option<&Progress>,
) -> Result<Vec<Repair>> {
    write_tx(conn, |tx| repair_all_in(tx, features, ids, scope, progress))
}

fn repair_all_in(
    tx: &Transaction,
    features: Features,
    ids: &[i64],
    scope: Option<i64>,
    progress: Option<&Progress>,
) -> Result<Vec<Repair>> {
    let mut done = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        if let Some(p) = progress {
            p("repair", i as u64, ids.len() as u64);
        }
        done.extend(
            repair::conversation(tx, *id)
                .map_err(|e| e.context(format!("repairing conversation {id}")))?,
        );
    }
    done.extend(global::remove_stray_links(tx)?);
    done.extend(
        repair_fts(tx, features, scope).map_err(|e| e.context("repairing the full-text tables"))?,
    );
    Ok(done)
}

/// The optional features a database file uses (from its schema; for connections
/// opened without the engine).
pub fn features_of(conn: &Connection) -> Result<Features> {
    inspect::features_of(conn)
}

/// `Ok` when the file has the current schema (what the engine's migration
/// produces); otherwise an `LCM_INVALID_INPUT` naming what is missing, since a
/// read-only check cannot migrate it.
pub fn require_current_schema(conn: &Connection) -> Result<()> {
    let missing = inspect::schema_gaps(conn)?;
    if missing.is_empty() {
        return Ok(());
    }
    Err(LcmError::invalid(format!(
        "the database has not been migrated to this version (no {}); a dry run opens it read-only and cannot migrate it — run with --apply, which migrates it first",
        missing.join(", ")
    )))
}

/// The whole check on one connection (read-only is enough): database-wide, full-text
/// rows, then each conversation of `ids`. `cmd`, when given, is a connection allowed
/// to run FTS5's `integrity-check` command (a write statement that writes nothing;
/// it is rolled back), which detects index rows the row comparison cannot single out.
pub fn check_with(
    conn: &Connection,
    cmd: Option<&Connection>,
    features: Features,
    ids: &[i64],
    scope: Option<i64>,
    progress: Option<&Progress>,
) -> Result<Findings> {
    let mut violations = check_global(conn)?;
    violations.extend(check_fts(conn, cmd.unwrap_or(conn), features, scope)?);
    let mut broken = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        if let Some(p) = progress {
            p("check", i as u64, ids.len() as u64);
        }
        let f = check_conversation(conn, *id)?;
        violations.extend(f.violations);
        broken.extend(f.broken_summaries);
    }
    sort(&mut violations);
    Ok(Findings {
        violations,
        broken_summaries: broken,
    })
}

/// Sorts violations: database-wide first, then by conversation, kind and rows.
pub fn sort(v: &mut [Violation]) {
    v.sort_by(|a, b| {
        (a.conversation_id, a.kind, &a.summary_ids, &a.message_ids).cmp(&(
            b.conversation_id,
            b.kind,
            &b.summary_ids,
            &b.message_ids,
        ))
    });
}
