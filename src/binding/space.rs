//! `LcmEngine.backup`, `LcmEngine.storageStats` and `LcmEngine.reclaimSpace`: the
//! database file's copies and space.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::js::{engine_call, string_arg, Params, Pending};
use super::LcmEngine;
use crate::engine::{ReclaimSpaceParams, StorageStatsParams};
use crate::retention::PruneParams;

#[napi]
impl LcmEngine {
    /// Takes a consistent copy of the database at `to` while writers keep writing
    /// (SQLite's online backup API, 512 KiB per step, one read snapshot). The copy is
    /// written as `<to>.partial`, must pass `integrity_check`, is fsynced, then
    /// renamed to `to`; the large files go to `lcm-files` beside it. Rejects with
    /// `LCM_IO` (nothing left under `to`'s name) or `LCM_INVALID_INPUT` (`to`
    /// missing, relative, or the database itself).
    #[napi(
        ts_args_type = "params: BackupParams",
        ts_return_type = "Promise<BackupReport>"
    )]
    pub fn backup<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        engine_call!(env, self, "backup", Params::read(env, params)? => |p| backup(p))
    }

    /// The file's pages, free pages and auto-vacuum mode; with `tables: true` also
    /// the bytes of every table and index (SQLite's `dbstat`, reads every page).
    #[napi(
        ts_args_type = "params?: StorageStatsParams",
        ts_return_type = "Promise<SpaceReport>"
    )]
    pub fn storage_stats<'env>(
        &self,
        env: &'env Env,
        params: Option<Unknown<'env>>,
    ) -> Result<Pending<'env>> {
        let p = Params::<Option<StorageStatsParams>>::optional(env, params)?;
        engine_call!(env, self, "storageStats", p => |p| storage_stats(p.unwrap_or_default()))
    }

    /// Gives free pages back to the file system in short steps (64 pages per write
    /// job): after pruning, on a file in `auto_vacuum = INCREMENTAL` (every new
    /// file; `lcm-tui vacuum` converts an older one).
    #[napi(
        ts_args_type = "params?: ReclaimSpaceParams",
        ts_return_type = "Promise<ReclaimSpaceResult>"
    )]
    pub fn reclaim_space<'env>(
        &self,
        env: &'env Env,
        params: Option<Unknown<'env>>,
    ) -> Result<Pending<'env>> {
        let p = Params::<Option<ReclaimSpaceParams>>::optional(env, params)?;
        engine_call!(env, self, "reclaimSpace", p => |p| reclaim_space(p.unwrap_or_default()))
    }

    /// Applies the retention policies (`retention`, `maxDatabaseBytes`): archives
    /// conversations idle past `archiveAfterDays`; archives, then removes, those
    /// past `pruneAfterDays` (over the cap, oldest first ahead of their days). An
    /// archive (zstd JSONL per month, manifest with sha256) is fsynced before the
    /// removal commits. At most `limit` (16) conversations per call; `dryRun`
    /// changes nothing. Then gives the freed pages back in small steps.
    #[napi(
        ts_args_type = "params?: PruneParams",
        ts_return_type = "Promise<PruneReport>"
    )]
    pub fn prune<'env>(
        &self,
        env: &'env Env,
        params: Option<Unknown<'env>>,
    ) -> Result<Pending<'env>> {
        let p = Params::<Option<PruneParams>>::optional(env, params)?;
        engine_call!(env, self, "prune", p => |p| prune(p.unwrap_or_default()))
    }

    /// Puts a pruned conversation back from its archive (`path`: the archive's
    /// directory or manifest), byte for byte under its original ids, in one
    /// transaction. Rejects with `LCM_IO` when a file does not match the manifest
    /// and `LCM_INVALID_INPUT` when the conversation is in the database.
    #[napi(
        ts_args_type = "params: RestoreArchiveParams",
        ts_return_type = "Promise<RestoreReport>"
    )]
    pub fn restore_archive<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        engine_call!(env, self, "restoreArchive", Params::read(env, params)? => |p| restore_archive(p))
    }

    /// Where a summary that retention removed went: `{ summaryId, conversationId,
    /// archive }`, or null when it was never pruned (recall tools name the archive
    /// instead of answering "not found").
    #[napi(
        ts_args_type = "summaryId: string",
        ts_return_type = "Promise<PrunedSummary | null>"
    )]
    pub fn pruned_summary<'env>(
        &self,
        env: &'env Env,
        summary_id: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let id = string_arg(summary_id, "prunedSummary", "summaryId");
        engine_call!(env, self, "prunedSummary", id => |id| pruned_summary(id))
    }
}
