//! Connections for operator commands (`lcm-tui`) that work on a database file
//! without the engine: a read-only connection for commands that only read (the
//! file's bytes cannot change and an older schema is never migrated), and the
//! read-write connection FTS5's `integrity-check` needs. Neither creates the file.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// How long an operator connection waits for the engine's writer.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens an existing file read-only (`SQLITE_OPEN_READ_ONLY` and `query_only`).
/// Errors are SQLite's own, so a caller can tell a file that is not a database.
pub fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.execute_batch("PRAGMA query_only = 1;")?;
    Ok(conn)
}

/// Lets a connection from [`open_read_only`] create temporary tables (the doctor
/// tokenizes message text into one); the file itself stays read-only.
pub fn allow_temp_tables(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("PRAGMA query_only = 0;")
}

/// Opens an existing file read-write for FTS5's `integrity-check` command, which
/// SQLite treats as a write statement although it writes nothing. Never creates
/// the file.
pub fn open_fts_probe(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// Opens an existing file read-write for an offline maintenance job (`lcm-tui
/// vacuum`); waits at most 5 s for another writer. Never creates the file.
pub fn open_read_write(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// The names of the file's tables.
pub fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = stmt.query_map([], |r| r.get(0))?.collect();
    names
}
