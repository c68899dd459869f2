//! `lcm-tui backup`, `lcm-tui vacuum` and `lcm-tui space`: copies of the database
//! and its space on disk ([`crate::store::space`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use super::error::{CliError, CliResult, EXIT_OK};
use super::output::thousands;
use super::progress::Progress;
use super::Ctx;
use crate::store::space;

/// Flags of `lcm-tui backup`.
#[derive(Debug, Args)]
#[command(after_long_help = BACKUP_HELP)]
pub struct BackupArgs {
    /// The copy: a file path, or a directory (then `lcm-<UTC time>.db` inside it)
    #[arg(long, value_name = "PATH")]
    pub to: PathBuf,
    /// With a directory: keep the N newest `lcm-*.db` copies there, remove older ones
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
}

const BACKUP_HELP: &str = "\
Takes a consistent copy while the gateway keeps writing: SQLite's online backup API,
512 KiB per step, from one read snapshot (writers never wait for it). The copy is written
as <PATH>.partial, must pass integrity_check, is fsynced, then renamed: an interrupted
backup leaves no half copy under the name. Restore by stopping the gateway and copying
the file back over lcm.db (remove lcm.db-wal and lcm.db-shm first).

Examples:
  lcm-tui backup --to /backups/lcm.db
  lcm-tui backup --to /backups/ --keep 7      # daily from cron: a week of copies";

/// Flags of `lcm-tui vacuum`.
#[derive(Debug, Args)]
#[command(after_long_help = VACUUM_HELP)]
pub struct VacuumArgs {
    /// Skip the free-space check
    #[arg(long)]
    pub force: bool,
}

const VACUUM_HELP: &str = "\
Rewrites the database with auto_vacuum = INCREMENTAL (VACUUM): the file shrinks to its
live pages, and from then on the engine gives freed pages back in small steps. Run it
with the gateway stopped: VACUUM needs the write lock for the whole rewrite. It first
checks that the file system has free space of twice the file (VACUUM writes a temporary
copy and the new pages through the WAL); --force skips that check.";

/// Runs `lcm-tui backup`.
pub fn backup(a: BackupArgs, ctx: &mut Ctx) -> CliResult {
    let path = ctx.db_path()?;
    let into_dir = a.to.is_dir() || a.to.as_os_str().to_string_lossy().ends_with('/');
    if a.keep.is_some() && !into_dir {
        return Err(CliError::usage(
            "--keep needs --to to name a directory (copies are named lcm-<UTC time>.db there)",
        ));
    }
    if a.keep == Some(0) {
        return Err(CliError::usage("--keep must be at least 1"));
    }
    let dest = if into_dir {
        a.to.join(format!(
            "lcm-{}.db",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ")
        ))
    } else {
        a.to.clone()
    };
    let conn = ctx.open_read_only(&path)?;
    let cancel = super::interrupt_token();
    let spinner = Progress::new(ctx.out, 2, "copying");
    let files = crate::config::EngineOptions {
        db_path: Some(path.display().to_string()),
        ..Default::default()
    }
    .resolved_large_files_dir();
    let report = space::backup(&conn, &dest, &|| cancel.is_cancelled(), &|copy| {
        crate::largefiles::storage::copy_for_backup(copy, &files, &dest)
    })?;
    spinner.finish();
    let removed = match a.keep {
        Some(n) => prune_copies(&a.to, n)?,
        None => Vec::new(),
    };
    if ctx.json() {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Out<'a> {
            #[serde(flatten)]
            report: &'a space::BackupReport,
            removed: &'a [String],
        }
        ctx.out.json(&Out {
            report: &report,
            removed: &removed,
        })?;
    } else {
        ctx.out.line(&format!(
            "backed up {} to {} ({} bytes, {} pages in {} steps, {:.0} ms; integrity ok)",
            path.display(),
            ctx.out.shown(&report.path),
            thousands(report.bytes),
            thousands(report.pages),
            thousands(report.steps),
            report.elapsed_ms
        ));
        for r in &removed {
            ctx.out
                .line(&format!("removed older copy {}", ctx.out.shown(r)));
        }
    }
    Ok(EXIT_OK)
}

/// Removes `lcm-*.db` copies in `dir` beyond the `keep` newest (names sort by time).
fn prune_copies(dir: &Path, keep: usize) -> Result<Vec<String>, CliError> {
    let mut copies: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| CliError::failure(format!("cannot list {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("lcm-") && n.ends_with(".db") && n.len() > "lcm-.db".len()
            })
        })
        .collect();
    copies.sort();
    let excess = copies.len().saturating_sub(keep);
    let mut removed = Vec::new();
    for p in copies.into_iter().take(excess) {
        std::fs::remove_file(&p)
            .map_err(|e| CliError::failure(format!("cannot remove {}: {e}", p.display())))?;
        removed.push(p.display().to_string());
    }
    Ok(removed)
}

/// Free bytes for an unprivileged user on the file system holding `path`.
#[cfg(unix)]
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path that outlives the call and `st` points to
    // writable memory of the struct's size; statvfs fills it when it returns 0.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it initialized the struct.
    let st = unsafe { st.assume_init() };
    #[allow(clippy::unnecessary_cast)]
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

#[cfg(not(unix))]
fn free_bytes(_path: &Path) -> Option<u64> {
    None
}

/// What `lcm-tui vacuum` did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct VacuumReport {
    path: String,
    bytes_before: i64,
    bytes_after: i64,
    auto_vacuum_before: String,
    auto_vacuum: String,
    elapsed_ms: f64,
}

/// Runs `lcm-tui vacuum`.
pub fn vacuum(a: VacuumArgs, ctx: &mut Ctx) -> CliResult {
    let path = ctx.db_path()?;
    // Checks it is an lcm database first.
    drop(ctx.open_read_only(&path)?);
    let mut conn = crate::store::operator::open_read_write(&path)
        .map_err(|e| CliError::failure(format!("cannot open {}: {e}", path.display())))?;
    let before = space::report(&conn, false)?;
    let wal = wal_path(&path);
    let wal_bytes = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    let need = (before.database_bytes.max(0) as u64)
        .saturating_mul(2)
        .saturating_add(wal_bytes);
    if !a.force {
        match free_bytes(&path) {
            Some(free) if free < need => {
                return Err(CliError::failure(format!(
                    "not enough free space to vacuum {}: {} bytes free, about {} needed (twice the file); free some space or pass --force",
                    path.display(),
                    thousands(free as i64),
                    thousands(need as i64)
                )))
            }
            _ => {}
        }
    }
    let t0 = std::time::Instant::now();
    let bar = Progress::new(ctx.out, before.page_count.max(2) as u64, "vacuum");
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    let page_size = before.page_size.max(1) as u64;
    let wal_for_progress = wal.clone();
    let out = std::thread::scope(|s| {
        let job = s.spawn(move || {
            space::convert_to_incremental(&mut conn, move |_| {
                let written = std::fs::metadata(&wal_for_progress)
                    .map(|m| m.len())
                    .unwrap_or(0);
                let _ = tx.send(written / page_size);
            })
            .map(|()| conn)
        });
        let mut last = 0;
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(pages) if pages > last => {
                    bar.set_position(pages);
                    last = pages;
                }
                Ok(_) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        job.join()
    });
    bar.finish();
    let conn = out
        .map_err(|_| CliError::failure("the vacuum thread stopped"))?
        .map_err(|e| CliError::failure(format!("vacuum failed (the file is unchanged): {e}")))?;
    space::checkpoint_truncate(&conn);
    let after = space::report(&conn, false)?;
    let report = VacuumReport {
        path: path.display().to_string(),
        bytes_before: before.database_bytes,
        bytes_after: after.database_bytes,
        auto_vacuum_before: before.auto_vacuum,
        auto_vacuum: after.auto_vacuum,
        elapsed_ms: t0.elapsed().as_secs_f64() * 1000.0,
    };
    if ctx.json() {
        ctx.out.json(&report)?;
    } else {
        ctx.out.line(&format!(
            "vacuumed {}: {} → {} bytes, auto_vacuum {} → {} ({:.0} ms)",
            path.display(),
            thousands(report.bytes_before),
            thousands(report.bytes_after),
            report.auto_vacuum_before,
            report.auto_vacuum,
            report.elapsed_ms
        ));
    }
    Ok(EXIT_OK)
}

fn wal_path(db: &Path) -> PathBuf {
    let mut s = db.as_os_str().to_os_string();
    s.push("-wal");
    PathBuf::from(s)
}

/// Flags of `lcm-tui space`.
#[derive(Debug, Args)]
pub struct SpaceArgs {}

/// Runs `lcm-tui space`: pages, free pages, auto-vacuum mode and bytes per table.
pub fn report(_a: SpaceArgs, ctx: &mut Ctx) -> CliResult {
    let path = ctx.db_path()?;
    let conn = ctx.open_read_only(&path)?;
    let r = space::report(&conn, true)?;
    if ctx.json() {
        ctx.out.json(&r)?;
        return Ok(EXIT_OK);
    }
    ctx.out.line(&format!(
        "{}: {} bytes ({} pages of {}), {} free pages, auto_vacuum {}",
        path.display(),
        thousands(r.database_bytes),
        thousands(r.page_count),
        r.page_size,
        thousands(r.freelist_count),
        r.auto_vacuum
    ));
    for t in &r.tables {
        ctx.out.line(&format!(
            "  {:>14}  {}",
            thousands(t.bytes),
            ctx.out.shown(&t.name)
        ));
    }
    Ok(EXIT_OK)
}
