//! Database-wide checks: SQLite's own integrity check and link rows both of whose
//! ends are missing (no conversation owns them).

use rusqlite::Connection;
use serde_json::json;

use super::repair::{Repair, RepairKind};
use super::violation::{list, Kind, Violation};
use crate::error::Result;
use crate::store::integrity;
pub use crate::store::integrity::{integrity_lines, stray_links};

/// The full-text table a line of `PRAGMA integrity_check` blames, if any (SQLite
/// checks each FTS5 index against its stored text: "malformed inverted index for
/// FTS5 table main.summaries_fts").
fn fts_table_of(line: &str) -> Option<&str> {
    let rest = line.split("FTS5 table ").nth(1)?;
    let name = rest.split_whitespace().next()?;
    Some(name.rsplit('.').next().unwrap_or(name))
}

/// `PRAGMA integrity_check`: an [`Kind::FtsIndex`] violation per full-text index
/// that does not match its text (repairable by a rebuild), and one
/// [`Kind::SqliteIntegrity`] violation listing anything else SQLite reported.
pub fn integrity(conn: &Connection) -> Result<Vec<Violation>> {
    let all = integrity_lines(conn)?;
    let mut out = Vec::new();
    let mut lines = Vec::new();
    for line in all.into_iter().filter(|l| l != "ok") {
        match fts_table_of(&line) {
            Some(t) => out.push(
                Violation::new(
                    Kind::FtsIndex,
                    None,
                    format!("the {t} index does not match its stored text ({line})"),
                )
                .repairable()
                .details(json!({ "table": t })),
            ),
            None => lines.push(line),
        }
    }
    if lines.is_empty() {
        return Ok(out);
    }
    out.push(
        Violation::new(
            Kind::SqliteIntegrity,
            None,
            format!(
                "PRAGMA integrity_check reported {} problem(s): {}",
                lines.len(),
                lines.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
            ),
        )
        .details(json!({ "lines": lines })),
    );
    Ok(out)
}

/// The violation for stray link rows, if any.
pub fn stray_violation(rows: &[(String, String, String)]) -> Option<Violation> {
    if rows.is_empty() {
        return None;
    }
    let names: Vec<String> = rows
        .iter()
        .map(|(t, s, x)| format!("{t} {s} → {x}"))
        .collect();
    let ids: Vec<String> = rows.iter().map(|(_, s, _)| s.clone()).collect();
    Some(
        Violation::new(
            Kind::LinkDangling,
            None,
            format!("link rows between rows that do not exist: {}", list(&names)),
        )
        .summaries(ids)
        .repairable(),
    )
}

/// Deletes link rows whose two ends are both missing.
pub fn remove_stray_links(conn: &Connection) -> Result<Option<Repair>> {
    let rows = stray_links(conn)?;
    if rows.is_empty() {
        return Ok(None);
    }
    integrity::delete_stray_links(conn)?;
    let mut r = Repair::new(
        RepairKind::RemovedDanglingLink,
        None,
        format!(
            "deleted {} link row(s) whose two ends do not exist",
            rows.len()
        ),
    );
    r.summary_ids = rows.into_iter().map(|(_, s, _)| s).collect();
    Ok(Some(r))
}
