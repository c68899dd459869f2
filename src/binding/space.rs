//! `LcmEngine.backup`, `LcmEngine.storageStats` and `LcmEngine.reclaimSpace`: the
//! database file's copies and space.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::js::{engine_call, Params, Pending};
use super::LcmEngine;
use crate::engine::{ReclaimSpaceParams, StorageStatsParams};

#[napi]
impl LcmEngine {
    /// Takes a consistent copy of the database at `to` while writers keep writing
    /// (SQLite's online backup API, 512 KiB per step, one read snapshot). The copy is
    /// written as `<to>.partial`, must pass `integrity_check`, is fsynced, then
    /// renamed to `to`. Rejects with `LCM_IO` (nothing left under `to`'s name) or
    /// `LCM_INVALID_INPUT` (`to` missing, or the database itself).
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
}
