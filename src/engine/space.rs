//! `backup`, `storageStats` and `reclaimSpace`: thin methods over [`crate::store::space`].

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use super::Engine;
use crate::error::{LcmError, Result};
use crate::store::space::{self, BackupReport, SpaceReport};

/// Parameters of `backup`.
#[derive(Debug, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackupParams {
    /// Absolute path of the copy (written as `<to>.partial`, checked, fsynced, then renamed).
    pub to: String,
}

/// Parameters of `storageStats`.
#[derive(Debug, Default, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct StorageStatsParams {
    /// Also measure every table and index (`dbstat`: reads every page).
    #[serde(default)]
    pub tables: Option<bool>,
}

/// Parameters of `reclaimSpace`.
#[derive(Debug, Default, Deserialize, ts_rs::TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[ts(optional_fields)]
pub struct ReclaimSpaceParams {
    /// Free pages to give back at most (default: all, in steps of 64 pages).
    #[serde(default)]
    pub max_pages: Option<i64>,
}

/// What `reclaimSpace` gave back.
#[derive(Debug, Clone, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct ReclaimSpaceResult {
    /// Pages given back to the file system.
    pub pages: i64,
    /// Bytes given back (`pages × pageSize`).
    pub bytes: i64,
    /// Free pages left in the file.
    pub freelist_count: i64,
    /// The file's auto-vacuum mode (`none` gives nothing back: `lcm-tui vacuum` converts it).
    pub auto_vacuum: String,
}

impl Engine {
    /// A consistent copy of the database at `to`, taken while writers keep writing
    /// (SQLite's online backup API in steps of [`space::BACKUP_STEP_PAGES`] pages).
    /// The large files go to `lcm-files` beside the copy (each once: files never
    /// change), and the copy's rows point at them. The copy passes
    /// `integrity_check` before it gets its name.
    pub async fn backup(&self, p: BackupParams) -> Result<BackupReport> {
        if p.to.trim().is_empty() {
            return Err(LcmError::invalid("backup needs `to`, the path of the copy"));
        }
        let dest = PathBuf::from(&p.to);
        if !dest.is_absolute() {
            // Never a file relative to the host process's working directory.
            return Err(LcmError::invalid(format!(
                "backup `to` must be an absolute path, got {:?}",
                p.to
            )));
        }
        if self
            .store
            .file_path()
            .is_some_and(|own| same_file(&own, &dest))
        {
            return Err(LcmError::invalid(format!(
                "backup `to` ({}) is the database itself; name another file",
                p.to
            )));
        }
        let closed = self.store.clone();
        let files = self.opts.resolved_large_files_dir();
        let to = dest.clone();
        self.store
            .backup_to(
                dest,
                Arc::new(move || closed.is_closed()),
                Arc::new(move |copy| {
                    crate::largefiles::storage::copy_for_backup(copy, &files, &to)
                }),
            )
            .await
    }

    /// The file's pages, free pages, auto-vacuum mode, whether it is over
    /// `maxDatabaseBytes` and, with `tables: true`, bytes per table and index.
    pub async fn storage_stats(&self, p: StorageStatsParams) -> Result<SpaceReport> {
        let tables = p.tables.unwrap_or(false);
        let mut r = self
            .store
            .read_apart(move |c| space::report(c, tables))
            .await?;
        r.max_database_bytes = self.opts.max_database_bytes;
        r.over_cap = r
            .max_database_bytes
            .is_some_and(|cap| (r.page_count - r.freelist_count) * r.page_size > cap);
        Ok(r)
    }

    /// Gives free pages back to the file system in short steps on the writer (one
    /// step of [`space::VACUUM_STEP_PAGES`] pages per job, so ingest waits at most
    /// one step). A file in `auto_vacuum = NONE` gives nothing back.
    pub async fn reclaim_space(&self, p: ReclaimSpaceParams) -> Result<ReclaimSpaceResult> {
        let mut left = p.max_pages.unwrap_or(i64::MAX).max(0);
        let mut pages = 0i64;
        while left > 0 {
            let step = left.min(space::VACUUM_STEP_PAGES);
            let given = self
                .store
                .write(move |c| space::incremental_vacuum_step(c, step))
                .await?;
            pages += given;
            left -= step;
            if given < step {
                break;
            }
        }
        let (page_size, freelist_count, auto_vacuum) = self
            .store
            .read(|c| {
                let (size, _, free) = space::pages(c)?;
                Ok((size, free, space::auto_vacuum_mode(c)?))
            })
            .await?;
        Ok(ReclaimSpaceResult {
            pages,
            bytes: pages * page_size,
            freelist_count,
            auto_vacuum,
        })
    }
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}
