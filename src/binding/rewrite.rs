//! `LcmEngine.planRewrite` and `LcmEngine.rewrite`. `onProgress` is taken from the
//! parameters before `JSON.stringify` and called once per finished summary, in
//! order, on the JavaScript thread; a throw in it is ignored (it cannot stop or
//! corrupt the run). The promise resolves after the last progress call. `signal` (an
//! AbortSignal) trips the call's cancel token: the in-flight summarizer request is
//! dropped and the call rejects with `LCM_ABORTED`.
#![cfg_attr(test, allow(dead_code))]

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use super::hooks::{self, AbortHook};
use super::js::{call_settling, copy_without, OnSettle, Params, Pending};
use super::summarizer::AnyJson;
use super::LcmEngine;
use crate::compaction::CancelToken;
use crate::rewrite::run::{report_error, ProgressFn};
use crate::rewrite::{PlanParams, RewriteParams, RewriteProgress};

/// Reads a params object on the JS thread: its AbortSignal hooked to a fresh cancel
/// token, and the JSON text without the JavaScript-only members.
fn read_params<P>(
    env: &Env,
    params: Unknown<'_>,
) -> Result<(Params<P>, CancelToken, Option<AbortHook>)> {
    let token = CancelToken::new();
    if params.get_type()? != ValueType::Object {
        return Ok((Params::read(env, params)?, token, None));
    }
    // SAFETY: `params` is a value of this env, checked above to be an object.
    let obj: Object = unsafe { params.cast()? };
    let hook = hooks::hook_signal(env, &obj, &token)?;
    let copy = copy_without(env, &obj, &["onProgress", "signal"])?;
    Ok((Params::read(env, copy.to_unknown())?, token, hook))
}

/// Removes the abort listener when the call settles.
fn on_settle(hook: Option<AbortHook>) -> Option<OnSettle> {
    hook.map(|a| -> OnSettle { Box::new(move |env: &Env| a.remove(env)) })
}

#[napi]
impl LcmEngine {
    /// The summaries a rewrite would touch, in order: bottom-up by depth, chronological
    /// within a depth; `summaryId` means that summary and everything beneath it
    /// (`subtree: false` for the summary alone). Rejects `LCM_NOT_FOUND` naming what
    /// exists for unknown conversations, summaries or depths.
    #[napi(
        ts_args_type = "params: PlanRewriteParams",
        ts_return_type = "Promise<Array<PlannedRewrite>>"
    )]
    pub fn plan_rewrite<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<Pending<'env>> {
        let (p, cancel, hook) = read_params::<PlanParams>(env, params)?;
        call_settling(
            env,
            &self.engine,
            "planRewrite",
            p,
            on_settle(hook),
            |engine, p| async move { engine.plan_rewrite_with(p, cancel).await },
        )
    }

    /// Rewrites summaries in place with the current prompts. A dry run (the default)
    /// writes nothing; `apply: true` updates each summary's content and token count
    /// (and its full-text rows) in its own transaction. Resolves with the report; a
    /// summarizer error rejects with its code (`LCM_LLM_AUTH`, `LCM_CALLBACK`, …) after
    /// stopping the run — rewrites applied before it stay, and were reported through
    /// `onProgress`. `signal` (an AbortSignal) cancels the in-flight summarizer call
    /// (its HTTP request is closed) and rejects with `LCM_ABORTED`; nothing partial is
    /// written.
    #[napi(
        ts_args_type = "params: RewriteParams",
        ts_return_type = "Promise<RewriteReport>"
    )]
    pub fn rewrite<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        let progress = hooks::callback::<AnyJson>(
            env,
            Some(&params),
            "onProgress",
            "({ completed, total, entry }) => void",
        );
        let (p, cancel, hook) = read_params::<RewriteParams>(env, params)?;
        let input = (progress, p);
        call_settling(
            env,
            &self.engine,
            "rewrite",
            input,
            on_settle(hook),
            |engine, (tsfn, p)| rewrite_reporting(engine, p, tsfn, cancel),
        )
    }
}

/// Runs a rewrite, delivering each progress event to `tsfn` in order on the
/// JavaScript thread; settles after the last delivery.
async fn rewrite_reporting(
    engine: Arc<crate::engine::Engine>,
    p: RewriteParams,
    tsfn: Option<hooks::JsFn<AnyJson>>,
    cancel: CancelToken,
) -> crate::error::Result<crate::rewrite::RewriteReport> {
    let (cb, delivery) = match tsfn {
        None => (None, None),
        Some(f) => {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
            let delivery = tokio::spawn(async move {
                while let Some(v) = rx.recv().await {
                    let _ = f.call_async_catch(v).await;
                }
            });
            let cb: ProgressFn = Arc::new(move |ev: &RewriteProgress| {
                if let Ok(v) = serde_json::to_value(ev) {
                    let _ = tx.send(v);
                }
            });
            (Some(cb), Some(delivery))
        }
    };
    let report = engine.rewrite_with(p, cb, cancel).await;
    if let Some(d) = delivery {
        let _ = d.await;
    }
    let report = report?;
    match report_error(&report) {
        Some(e) => Err(e),
        None => Ok(report),
    }
}
