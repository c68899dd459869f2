//! `LcmEngine.planRewrite` and `LcmEngine.rewrite`. `onProgress` is taken from the
//! parameters before `JSON.stringify` and called once per finished summary, in
//! order, on the JavaScript thread; a throw in it is ignored (it cannot stop or
//! corrupt the run). The promise resolves after the last progress call.
#![cfg_attr(test, allow(dead_code))]

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunction;
use napi_derive::napi;
use serde_json::Value;

use super::compaction::{hook_signal, settle, AbortHook};
use super::js::stringify;
use super::summarizer::AnyJson;
use super::LcmEngine;
use crate::compaction::CancelToken;
use crate::error::LcmError;
use crate::rewrite::run::{report_error, ProgressFn};
use crate::rewrite::{PlanParams, RewriteParams, RewriteProgress};

type ProgressTsfn = ThreadsafeFunction<Value, AnyJson, Value, Status, false, true>;

/// `params.onProgress` when it is a function; `null`/absent is none; anything else
/// is `LCM_INVALID_INPUT`.
fn extract_progress(
    env: &Env,
    params: &Unknown<'_>,
) -> std::result::Result<Option<ProgressTsfn>, LcmError> {
    let napi_err = |e: Error| LcmError::invalid(format!("onProgress: {e}"));
    if params.get_type().map_err(napi_err)? != ValueType::Object {
        return Ok(None);
    }
    // SAFETY: `params` is a live object value of this env.
    let obj = unsafe { Object::from_napi_value(env.raw(), params.raw()) }.map_err(napi_err)?;
    let prop: Unknown = obj.get_named_property("onProgress").map_err(napi_err)?;
    match prop.get_type().map_err(napi_err)? {
        ValueType::Undefined | ValueType::Null => Ok(None),
        ValueType::Function => {
            // SAFETY: checked to be a function of this env.
            let f: Function<Value, AnyJson> =
                unsafe { Function::from_napi_value(env.raw(), prop.raw()) }.map_err(napi_err)?;
            let tsfn = f
                .build_threadsafe_function::<Value>()
                .callee_handled::<false>()
                .weak::<true>()
                .build()
                .map_err(napi_err)?;
            Ok(Some(tsfn))
        }
        other => Err(LcmError::invalid(format!(
            "onProgress must be a function ({{ completed, total, entry }}) => void, got {other}"
        ))),
    }
}

/// Hooks `params.signal` (an AbortSignal) to a fresh cancel token.
fn abort_token(env: &Env, params: &Unknown<'_>) -> Result<(CancelToken, Option<AbortHook>)> {
    let token = CancelToken::new();
    if params.get_type()? != ValueType::Object {
        return Ok((token, None));
    }
    // SAFETY: `params` is a live object value of this env.
    let obj = unsafe { Object::from_napi_value(env.raw(), params.raw()) }?;
    let hook = hook_signal(env, &obj, &token)?;
    Ok((token, hook))
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
        let (cancel, hook) = abort_token(env, &params)?;
        let json = stringify(env, params)?;
        let engine = self.engine.clone();
        let fut = async move {
            let p: PlanParams = crate::engine::parse_params("planRewrite", &json)?;
            engine.plan_rewrite_with(p, cancel).await
        };
        settle(env, fut, hook)
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
        let progress = extract_progress(env, &params);
        let (cancel, hook) = abort_token(env, &params)?;
        let json = stringify(env, params)?;
        let engine = self.engine.clone();
        let fut = async move {
            let tsfn = progress?;
            let p: RewriteParams = crate::engine::parse_params("rewrite", &json)?;
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
        settle(env, fut, hook)
    }
}
