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
use super::js::{copy_without, promise, stringify, OnSettle};
use super::summarizer::AnyJson;
use super::LcmEngine;
use crate::compaction::CancelToken;
use crate::params::parse_params;
use crate::rewrite::run::{report_error, ProgressFn};
use crate::rewrite::{PlanParams, RewriteParams, RewriteProgress};

/// Reads a params object on the JS thread: its AbortSignal hooked to a fresh cancel
/// token, and the JSON text without the JavaScript-only members.
fn read_params(env: &Env, params: Unknown<'_>) -> Result<(String, CancelToken, Option<AbortHook>)> {
    let token = CancelToken::new();
    if params.get_type()? != ValueType::Object {
        return Ok((stringify(env, params)?, token, None));
    }
    // SAFETY: `params` is a value of this env, checked above to be an object.
    let obj: Object = unsafe { params.cast()? };
    let hook = hooks::hook_signal(env, &obj, &token)?;
    let copy = copy_without(env, &obj, &["onProgress", "signal"])?;
    Ok((stringify(env, copy.to_unknown())?, token, hook))
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
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let (json, cancel, hook) = read_params(env, params)?;
        let engine = self.engine.clone();
        let fut = async move {
            let p: PlanParams = parse_params("planRewrite", &json)?;
            engine.plan_rewrite_with(p, cancel).await
        };
        promise(env, fut, on_settle(hook))
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
    pub fn rewrite<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let progress = hooks::callback::<AnyJson>(
            env,
            Some(&params),
            "onProgress",
            "({ completed, total, entry }) => void",
        );
        let (json, cancel, hook) = read_params(env, params)?;
        let engine = self.engine.clone();
        let fut = async move {
            let tsfn = progress?;
            let p: RewriteParams = parse_params("rewrite", &json)?;
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
        };
        promise(env, fut, on_settle(hook))
    }
}
