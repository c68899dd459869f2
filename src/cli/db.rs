//! Which database a command works on, and opening it.
//!
//! `--db <path>`, else `$OPENCLAW_STATE_DIR/lcm.db`, else `~/.openclaw/lcm.db`. The
//! file must exist: the command line never creates an empty database. Commands that
//! only read open it read-only ([`open_read_only`]), so the file's bytes cannot
//! change; commands that write open the engine ([`open_engine`]), which migrates an
//! older schema first.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::error::CliError;
use crate::config::{expand_home, EngineOptions};
use crate::engine::Engine;
use crate::store::operator;

/// Where the database path came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbSource {
    /// `--db`.
    Flag,
    /// `$OPENCLAW_STATE_DIR/lcm.db`.
    StateDir,
    /// `~/.openclaw/lcm.db`.
    Home,
}

impl DbSource {
    fn describe(self) -> &'static str {
        match self {
            DbSource::Flag => "from --db",
            DbSource::StateDir => "from $OPENCLAW_STATE_DIR",
            DbSource::Home => "the default, ~/.openclaw/lcm.db",
        }
    }
}

/// The database path for a `--db` value, without checking it.
pub fn db_path(flag: Option<&Path>) -> (PathBuf, DbSource) {
    if let Some(p) = flag {
        return (expand_home(&p.to_string_lossy()), DbSource::Flag);
    }
    match std::env::var_os("OPENCLAW_STATE_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => (PathBuf::from(dir).join("lcm.db"), DbSource::StateDir),
        None => (
            crate::config::home_dir().join(".openclaw").join("lcm.db"),
            DbSource::Home,
        ),
    }
}

/// The database path for a `--db` value; an error when the file does not exist.
pub fn resolve(flag: Option<&Path>) -> Result<PathBuf, CliError> {
    if flag.is_some_and(|p| p.as_os_str() == ":memory:") {
        return Err(CliError::usage(
            "--db :memory: would be an empty database; pass the path of an lcm.db file",
        ));
    }
    let (path, source) = db_path(flag);
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(path),
        Ok(_) => Err(CliError::failure(format!(
            "{} ({}) is not a file; pass --db <path> to an lcm.db",
            path.display(),
            source.describe()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(CliError::failure(format!(
            "database not found: {} ({}); pass --db <path> to an existing lcm.db (lcm-tui never creates one)",
            path.display(),
            source.describe()
        ))),
        Err(e) => Err(CliError::failure(format!(
            "cannot access the database {}: {e}",
            path.display()
        ))),
    }
}

/// Tables every lcm database has.
const REQUIRED_TABLES: [&str; 6] = [
    "conversations",
    "messages",
    "summaries",
    "summary_messages",
    "summary_parents",
    "context_items",
];

fn sqlite_err(path: &Path, e: rusqlite::Error) -> CliError {
    let msg = e.to_string();
    if msg.contains("not a database") {
        return CliError::failure(format!(
            "{} is not a SQLite database; pass --db <path> to an lcm.db",
            path.display()
        ));
    }
    CliError::from(crate::error::LcmError::from(e))
        .with_context(&format!("cannot read the database {}", path.display()))
}

impl CliError {
    fn with_context(mut self, what: &str) -> CliError {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

/// Opens an existing database read-only (`SQLITE_OPEN_READ_ONLY` and
/// `query_only`), checking that it has the lcm tables.
pub fn open_read_only(path: &Path) -> Result<Connection, CliError> {
    let conn = operator::open_read_only(path).map_err(|e| sqlite_err(path, e))?;
    let present = operator::table_names(&conn).map_err(|e| sqlite_err(path, e))?;
    let missing: Vec<&str> = REQUIRED_TABLES
        .iter()
        .copied()
        .filter(|t| !present.iter().any(|p| p == t))
        .collect();
    if !missing.is_empty() {
        return Err(CliError::failure(format!(
            "{} is not an lcm database (no {} table); pass --db <path> to an lcm.db",
            path.display(),
            missing.join(", ")
        )));
    }
    Ok(conn)
}

/// Engine options for a database file (everything else default).
pub fn engine_options(path: &Path) -> EngineOptions {
    EngineOptions {
        db_path: Some(path.to_string_lossy().into_owned()),
        ..EngineOptions::default()
    }
}

/// Opens the engine on an existing database for writing (`opts.db_path` must be a
/// path [`resolve`] accepted). Must run inside the command's runtime.
pub async fn open_engine(opts: EngineOptions) -> Result<Engine, CliError> {
    Engine::open(opts).await.map_err(CliError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_and_non_databases_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nope.db");
        let e = resolve(Some(&p)).unwrap_err();
        assert_eq!(e.exit, 1);
        assert!(e.message.contains("database not found"));
        assert!(e.message.contains("from --db"));
        assert!(!p.exists());
        let e = resolve(Some(dir.path())).unwrap_err();
        assert!(e.message.contains("is not a file"));
        assert_eq!(resolve(Some(Path::new(":memory:"))).unwrap_err().exit, 2);
        let junk = dir.path().join("junk.db");
        std::fs::write(&junk, b"this is not sqlite at all, not even close......").unwrap();
        let e = open_read_only(&junk).unwrap_err();
        assert!(e.message.contains("not a SQLite database"), "{e}");
        let empty = dir.path().join("empty.db");
        Connection::open(&empty)
            .unwrap()
            .execute_batch("CREATE TABLE t(x)")
            .unwrap();
        let e = open_read_only(&empty).unwrap_err();
        assert!(e.message.contains("not an lcm database"), "{e}");
    }
}
