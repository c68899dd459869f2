//! `LcmEngine.doctor`, `LcmEngine.dissolve` and `LcmEngine.transplant`: the
//! operator jobs of `lcm-tui`, callable from JavaScript. Each is a dry run unless
//! `apply: true`.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::js::{engine_call, Params, Pending};
use super::LcmEngine;

#[napi]
impl LcmEngine {
    /// Checks the store's invariants for one conversation (`conversationId`) or all
    /// (`all: true`): SQLite integrity, context ordinals, links, cycles, coverage of
    /// every message exactly once, recomputed summary columns, full-text rows; and
    /// lists broken summaries (ending with a fallback or truncation marker) in repair
    /// order. `apply: true` repairs what can be repaired without loss, then
    /// summarizes broken summaries again (each in its own transaction; a summarizer
    /// error stops and is reported in `error`). Resolves with a report whose `ok` is
    /// true when nothing is (left) to repair.
    #[napi(
        ts_args_type = "params: DoctorParams",
        ts_return_type = "Promise<DoctorReport>"
    )]
    pub fn doctor<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        engine_call!(env, self, "doctor", Params::read(env, params)? => |p| doctor(p, None))
    }

    /// Replaces a summary of the context list, at its position, by what it was made
    /// from (a condensed summary by its children, a leaf by its messages). Without
    /// `apply` it only plans; with it, one transaction also removes the summary, its
    /// links and FTS rows (`keep: true` keeps the row, unreferenced). Rejects with
    /// `LCM_NOT_FOUND` (listing what exists) or `LCM_INVALID_INPUT` (naming the
    /// summary that holds one not in the context list).
    #[napi(
        ts_args_type = "params: DissolveParams",
        ts_return_type = "Promise<DissolvePlan>"
    )]
    pub fn dissolve<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        engine_call!(env, self, "dissolve", Params::read(env, params)? => |p| dissolve(p))
    }

    /// Copies the source conversation's context summaries, every summary beneath
    /// them and their messages and parts, under new ids, to the front of the target's
    /// context list. Without `apply` it only plans. Refuses when the target already
    /// holds the text of a summary to copy.
    #[napi(
        ts_args_type = "params: TransplantParams",
        ts_return_type = "Promise<TransplantPlan>"
    )]
    pub fn transplant<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        engine_call!(env, self, "transplant", Params::read(env, params)? => |p| transplant(p))
    }
}
