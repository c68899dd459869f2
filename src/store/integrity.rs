//! Database-wide reads for the doctor: SQLite's own integrity check (with the
//! full-text indexes reloaded first) and link rows both of whose ends are missing.

use rusqlite::Connection;

use crate::error::Result;

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

/// Deletes link rows whose two ends are both missing.
pub fn delete_stray_links(conn: &Connection) -> Result<()> {
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
    Ok(())
}
