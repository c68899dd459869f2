//! Database-wide checks: SQLite's own integrity check and link rows both of whose
//! ends are missing (no conversation owns them).

use rusqlite::Connection;
use serde_json::json;

use super::repair::{Repair, RepairKind};
use super::violation::{list, Kind, Violation};
use crate::error::Result;

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

/// The lines of `PRAGMA integrity_check` (`["ok"]` for a sound file). FTS5 caches an
/// index's structure per connection and its integrity check does not reload it, so
/// a long-lived connection would compare a stale structure with the current text
/// after another connection wrote; a full-text query first, in the same read
/// transaction (a savepoint here), reloads it.
pub fn integrity_lines(conn: &Connection) -> Result<Vec<String>> {
    conn.execute_batch("SAVEPOINT lcm_doctor_integrity")?;
    let lines = integrity_lines_in(conn);
    conn.execute_batch("RELEASE lcm_doctor_integrity")?;
    lines
}

fn integrity_lines_in(conn: &Connection) -> Result<Vec<String>> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for t in tables {
        // A table whose module is missing cannot be queried; the integrity check
        // below names it, so the error is not reported twice.
        let _ = conn
            .prepare(&format!(
                "SELECT 1 FROM \"{t}\" WHERE \"{t}\" MATCH 'lcmdoctorrefresh' LIMIT 1"
            ))
            .and_then(|mut s| s.exists([]));
    }
    let mut stmt = conn.prepare("PRAGMA integrity_check")?;
    let lines = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(lines)
}

const STRAY: &str = "
SELECT 'summary_parents', sp.summary_id, sp.parent_summary_id FROM summary_parents sp
 WHERE NOT EXISTS (SELECT 1 FROM summaries s WHERE s.summary_id = sp.summary_id)
   AND NOT EXISTS (SELECT 1 FROM summaries p WHERE p.summary_id = sp.parent_summary_id)
UNION ALL
SELECT 'summary_messages', sm.summary_id, CAST(sm.message_id AS TEXT) FROM summary_messages sm
 WHERE NOT EXISTS (SELECT 1 FROM summaries s WHERE s.summary_id = sm.summary_id)
   AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.message_id = sm.message_id)";

/// Link rows whose two ends are both missing: (table, summary_id, target).
pub fn stray_links(conn: &Connection) -> Result<Vec<(String, String, String)>> {
    let mut stmt = conn.prepare(STRAY)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
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
    conn.execute(
        "DELETE FROM summary_parents WHERE NOT EXISTS (SELECT 1 FROM summaries s WHERE s.summary_id = summary_parents.summary_id)
           AND NOT EXISTS (SELECT 1 FROM summaries p WHERE p.summary_id = summary_parents.parent_summary_id)",
        [],
    )?;
    conn.execute(
        "DELETE FROM summary_messages WHERE NOT EXISTS (SELECT 1 FROM summaries s WHERE s.summary_id = summary_messages.summary_id)
           AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.message_id = summary_messages.message_id)",
        [],
    )?;
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
