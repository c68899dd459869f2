//! Space on disk: what each table and index holds (SQLite's `dbstat`), the page
//! counts, incremental vacuum, the auto-vacuum mode of new and converted files, and
//! consistent copies through SQLite's online backup API.
//!
//! Every statement here is a documented pragma, virtual table or C API
//! (`sqlite3_backup_*`); nothing reads or writes the file behind SQLite's back.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::Connection;
use serde::Serialize;

use crate::error::{ErrorCode, LcmError, Result};

/// Pages one backup step copies (128 × 4 KiB pages = 512 KiB): a step holds the
/// destination's lock and reads the source's snapshot, never the source's write
/// lock, so it bounds the CPU and I/O slice a step takes from the writer.
pub const BACKUP_STEP_PAGES: i32 = 128;

/// Least pause between two backup steps. The pause is the longer of this and the
/// step's own time, so the copy takes at most about half of one core and of the
/// disk's time: the writer's commits run between steps.
pub const BACKUP_STEP_PAUSE: Duration = Duration::from_millis(1);

/// Pages one incremental-vacuum step gives back (64 × 4 KiB = 256 KiB): one short
/// write transaction on the writer, between other jobs.
pub const VACUUM_STEP_PAGES: i64 = 64;

/// What one table or index holds (from `dbstat`).
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct TableSpace {
    /// Table or index name (`sqlite_schema` for the schema itself).
    pub name: String,
    /// Bytes of its pages (`SUM(pgsize)`).
    pub bytes: i64,
    /// Pages it uses.
    pub pages: i64,
}

/// The database file's space: pages, free pages, auto-vacuum mode and, when SQLite
/// was built with `dbstat` (the addon's bundled SQLite is), bytes per table.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct SpaceReport {
    /// Page size, bytes.
    pub page_size: i64,
    /// Pages in the file (main database, not the WAL).
    pub page_count: i64,
    /// Pages on the freelist (space a vacuum would give back).
    pub freelist_count: i64,
    /// `pageSize × pageCount`.
    pub database_bytes: i64,
    /// `none`, `full` or `incremental`.
    pub auto_vacuum: String,
    /// Every table and index by size, largest first (empty without `dbstat`).
    pub tables: Vec<TableSpace>,
    /// The engine's `maxDatabaseBytes`, when set.
    pub max_database_bytes: Option<i64>,
    /// Live pages (`pageCount − freelistCount`) over `maxDatabaseBytes`.
    pub over_cap: bool,
}

fn pragma_i64(conn: &Connection, name: &str) -> Result<i64> {
    Ok(conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))?)
}

/// The auto-vacuum mode's name.
pub fn auto_vacuum_mode(conn: &Connection) -> Result<String> {
    Ok(match pragma_i64(conn, "auto_vacuum")? {
        1 => "full",
        2 => "incremental",
        _ => "none",
    }
    .to_owned())
}

/// Page size, page count and free pages (no table walk).
pub fn pages(conn: &Connection) -> Result<(i64, i64, i64)> {
    Ok((
        pragma_i64(conn, "page_size")?,
        pragma_i64(conn, "page_count")?,
        pragma_i64(conn, "freelist_count")?,
    ))
}

/// The whole report; `with_tables` walks every page through `dbstat` (seconds on
/// a gigabyte file).
pub fn report(conn: &Connection, with_tables: bool) -> Result<SpaceReport> {
    let (page_size, page_count, freelist_count) = pages(conn)?;
    let tables = if with_tables {
        table_space(conn)?
    } else {
        Vec::new()
    };
    Ok(SpaceReport {
        page_size,
        page_count,
        freelist_count,
        database_bytes: page_size * page_count,
        auto_vacuum: auto_vacuum_mode(conn)?,
        tables,
        max_database_bytes: None,
        over_cap: false,
    })
}

/// Bytes and pages per table and index through the `dbstat` virtual table; empty
/// when this SQLite has no `dbstat`.
pub fn table_space(conn: &Connection) -> Result<Vec<TableSpace>> {
    let mut stmt = match conn
        .prepare("SELECT name, SUM(pgsize), COUNT(*) FROM dbstat GROUP BY name ORDER BY 2 DESC, 1")
    {
        Ok(s) => s,
        Err(e) if e.to_string().contains("no such table") => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let rows = stmt.query_map([], |r| {
        Ok(TableSpace {
            name: r.get(0)?,
            bytes: r.get(1)?,
            pages: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Sets `auto_vacuum = INCREMENTAL` on a database that has no page yet (a new
/// file, before its first table): SQLite fixes the mode when the first table is
/// created. Returns whether it was set. An existing file is left as it is
/// (`lcm-tui vacuum` converts it).
pub fn incremental_if_new(conn: &Connection) -> Result<bool> {
    if pragma_i64(conn, "page_count")? != 0 {
        return Ok(false);
    }
    conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL")?;
    Ok(true)
}

/// Gives back up to `max_pages` free pages to the file system (`PRAGMA
/// incremental_vacuum(N)`, its own short write). A no-op unless the file is in
/// incremental mode. Returns the pages given back.
pub fn incremental_vacuum_step(conn: &Connection, max_pages: i64) -> Result<i64> {
    if pragma_i64(conn, "auto_vacuum")? != 2 {
        return Ok(0);
    }
    let before = pragma_i64(conn, "freelist_count")?;
    if before == 0 {
        return Ok(0);
    }
    // The pragma returns one (empty) row per step: run it to the end.
    let mut stmt = conn.prepare(&format!("PRAGMA incremental_vacuum({})", max_pages.max(1)))?;
    let mut rows = stmt.query([])?;
    while rows.next()?.is_some() {}
    drop(rows);
    let after = pragma_i64(conn, "freelist_count")?;
    Ok((before - after).max(0))
}

/// Rewrites the whole file (`VACUUM`) with `auto_vacuum = INCREMENTAL`: the one way
/// to change the mode of a file that has tables. Needs the file to itself (run
/// offline) and free space of about twice its size. `progress` is called now and
/// then with the number of SQLite VM steps so far (a rough measure of work).
pub fn convert_to_incremental(
    conn: &mut Connection,
    mut progress: impl FnMut(u64) + Send + 'static,
) -> Result<()> {
    conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL")?;
    let mut steps: u64 = 0;
    conn.progress_handler(
        10_000,
        Some(move || {
            steps += 10_000;
            progress(steps);
            false
        }),
    )?;
    let out = conn.execute_batch("VACUUM");
    conn.progress_handler(0, None::<fn() -> bool>)?;
    out?;
    Ok(())
}

/// Copies the whole WAL into the file and empties it (best effort: a reader
/// still in the log leaves it as it is).
pub fn checkpoint_truncate(conn: &Connection) {
    let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
}

/// What a backup runs on its copy before checking it (see [`backup`]).
pub type Finish = dyn Fn(&Connection) -> Result<()> + Send + Sync;

/// What a backup did.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct BackupReport {
    /// The copy's path.
    pub path: String,
    /// Bytes of the copy.
    pub bytes: i64,
    /// Pages copied.
    pub pages: i64,
    /// Backup steps (each at most [`BACKUP_STEP_PAGES`] pages).
    pub steps: i64,
    /// Wall time, ms.
    pub elapsed_ms: f64,
    /// The longest step, ms.
    pub longest_step_ms: f64,
    /// `PRAGMA integrity_check` of the copy: `["ok"]` when sound.
    pub integrity: Vec<String>,
}

/// The temporary name a copy is written under before its rename.
pub fn partial_path(dest: &Path) -> PathBuf {
    let mut name = dest
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".partial");
    dest.with_file_name(name)
}

fn io(what: &str, path: &Path, e: std::io::Error) -> LcmError {
    LcmError::new(
        ErrorCode::Io,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

/// Fsyncs a file and the directory that names it (so a rename is durable).
pub fn sync_file_and_dir(path: &Path) -> Result<()> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| io("sync", path, e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Directories cannot be opened for fsync on Windows; the rename is durable there.
        #[cfg(unix)]
        std::fs::File::open(dir)
            .and_then(|f| f.sync_all())
            .map_err(|e| io("sync", dir, e))?;
        #[cfg(not(unix))]
        let _ = dir;
    }
    Ok(())
}

/// Copies the database `src` reads into a new file at `dest` with SQLite's online
/// backup API, [`BACKUP_STEP_PAGES`] pages per step: `src` holds one read
/// transaction for the whole copy, so the copy is one consistent snapshot and the
/// writer (WAL) never waits for it. The copy is written to `<dest>.partial`,
/// checked with `integrity_check`, fsynced, then renamed over `dest`: a crash
/// leaves either the old `dest` or the new one, never half a copy under its name.
/// `cancelled` is polled between steps. `finish` runs on the copy before its check
/// (the engine copies the large files beside it and points the copy's rows at them).
pub fn backup(
    src: &Connection,
    dest: &Path,
    cancelled: &dyn Fn() -> bool,
    finish: &dyn Fn(&Connection) -> Result<()>,
) -> Result<BackupReport> {
    let t0 = Instant::now();
    if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io("create the directory", dir, e))?;
    }
    let partial = partial_path(dest);
    match std::fs::remove_file(&partial) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("remove", &partial, e)),
    }
    // One snapshot for the whole copy: the steps read from this read transaction.
    src.execute_batch("BEGIN")?;
    let out = copy_steps(src, &partial, cancelled);
    let _ = src.execute_batch("COMMIT");
    let (pages, steps, longest) = match out {
        Ok(v) => v,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    let integrity = {
        let c = Connection::open(&partial)
            .map_err(|e| LcmError::new(ErrorCode::Io, format!("cannot open the copy: {e}")))?;
        // The copy keeps the source's WAL flag; back in rollback mode it is one file.
        c.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))?;
        if let Err(e) = finish(&c) {
            drop(c);
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
        super::integrity::integrity_lines(&c)?
    };
    if integrity != ["ok"] {
        let _ = std::fs::remove_file(&partial);
        return Err(LcmError::new(
            ErrorCode::Io,
            format!(
                "the copy failed integrity_check ({}); nothing was written to {}",
                integrity.join("; "),
                dest.display()
            ),
        ));
    }
    sync_file_and_dir(&partial)?;
    std::fs::rename(&partial, dest).map_err(|e| io("rename the copy to", dest, e))?;
    sync_file_and_dir(dest)?;
    let bytes = std::fs::metadata(dest)
        .map(|m| m.len() as i64)
        .map_err(|e| io("read", dest, e))?;
    Ok(BackupReport {
        path: dest.display().to_string(),
        bytes,
        pages,
        steps,
        elapsed_ms: t0.elapsed().as_secs_f64() * 1000.0,
        longest_step_ms: longest,
        integrity,
    })
}

fn copy_steps(
    src: &Connection,
    partial: &Path,
    cancelled: &dyn Fn() -> bool,
) -> Result<(i64, i64, f64)> {
    // Starts the read transaction (BEGIN alone is deferred).
    src.query_row("SELECT COUNT(*) FROM sqlite_master", [], |_| Ok(()))?;
    let mut dst = Connection::open(partial)
        .map_err(|e| LcmError::new(ErrorCode::Io, format!("cannot create the copy: {e}")))?;
    let backup = Backup::new(src, &mut dst)?;
    let mut steps = 0i64;
    let mut longest = 0f64;
    loop {
        if cancelled() {
            return Err(LcmError::new(
                ErrorCode::Aborted,
                "the backup was cancelled; nothing was written",
            ));
        }
        let t = Instant::now();
        let r = backup.step(BACKUP_STEP_PAGES)?;
        let took = t.elapsed();
        longest = longest.max(took.as_secs_f64() * 1000.0);
        steps += 1;
        match r {
            StepResult::Done => break,
            StepResult::More => std::thread::sleep(took.max(BACKUP_STEP_PAUSE)),
            // The destination is ours alone; a busy or locked source is a snapshot
            // we hold, so these only mean "try again".
            StepResult::Busy | StepResult::Locked => std::thread::sleep(Duration::from_millis(5)),
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    let pages = i64::from(backup.progress().pagecount);
    drop(backup);
    drop(dst);
    Ok((pages, steps, longest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_is_incremental_and_gives_pages_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let c = Connection::open(&path).unwrap();
        assert!(incremental_if_new(&c).unwrap());
        c.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .unwrap();
        c.execute_batch(
            "CREATE TABLE t(x); WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 2000) INSERT INTO t SELECT randomblob(1000) FROM s;",
        )
        .unwrap();
        assert_eq!(auto_vacuum_mode(&c).unwrap(), "incremental");
        c.execute_batch("DELETE FROM t").unwrap();
        let free = pages(&c).unwrap().2;
        assert!(free > 400, "{free}");
        let given = incremental_vacuum_step(&c, VACUUM_STEP_PAGES).unwrap();
        assert_eq!(given, VACUUM_STEP_PAGES);
        assert_eq!(pages(&c).unwrap().2, free - VACUUM_STEP_PAGES);
        // A second open of an existing file leaves its mode alone.
        drop(c);
        let c = Connection::open(&path).unwrap();
        assert!(!incremental_if_new(&c).unwrap());
    }

    #[test]
    fn backup_copies_a_consistent_snapshot_and_convert_changes_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let mut c = Connection::open(&path).unwrap();
        c.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .unwrap();
        c.execute_batch(
            "CREATE TABLE t(x); WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 3000) INSERT INTO t SELECT randomblob(900) FROM s;",
        )
        .unwrap();
        assert_eq!(auto_vacuum_mode(&c).unwrap(), "none");
        let dest = dir.path().join("copy.db");
        let r = backup(&c, &dest, &|| false, &|_| Ok(())).unwrap();
        assert_eq!(r.integrity, vec!["ok".to_owned()]);
        assert!(r.steps > 1, "{r:?}");
        assert!(!partial_path(&dest).exists());
        let copy = Connection::open(&dest).unwrap();
        let n: i64 = copy
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3000);
        // Cancelled: nothing under the name, no partial file left.
        let dest2 = dir.path().join("copy2.db");
        assert!(backup(&c, &dest2, &|| true, &|_| Ok(())).is_err());
        assert!(!dest2.exists() && !partial_path(&dest2).exists());
        // Conversion.
        let before = table_space(&c).unwrap();
        assert!(
            before.iter().any(|t| t.name == "t" && t.bytes > 2_000_000),
            "{before:?}"
        );
        convert_to_incremental(&mut c, |_| {}).unwrap();
        assert_eq!(auto_vacuum_mode(&c).unwrap(), "incremental");
    }
}
