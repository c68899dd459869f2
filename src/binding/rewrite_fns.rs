//! `LcmEngine.planRewrite` and `LcmEngine.rewrite`. `onProgress` is taken from the
//! parameters before `JSON.stringify` and called once per finished summary, in
//! order, on the JavaScript thread; a throw in it is ignored (it cannot stop or
//! corrupt the run). The promise resolves after the last progress call.
#![cfg_attr(test, allow(dead_code))]

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;

use super::hooks;
use super::js::{call_engine, copy_without, resolve_json, stringify};
use super::summarizer::AnyJson;
use super::LcmEngine;
use crate::params::parse_params;
use crate::rewrite::run::{report_error, ProgressFn};
use crate::rewrite::{PlanParams, RewriteParams, RewriteProgress};

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
        call_engine(
            env,
            &self.engine,
            "planRewrite",
            params,
            |engine, p: PlanParams| async move { engine.plan_rewrite(p).await },
        )
    }

    /// Rewrites summaries in place with the current prompts. A dry run (the default)
    /// writes nothing; `apply: true` updates each summary's content and token count
    /// (and its full-text rows) in its own transaction. Resolves with the report; a
    /// summarizer error rejects with its code (`LCM_LLM_AUTH`, `LCM_CALLBACK`, …) after
    /// stopping the run — rewrites applied before it stay, and were reported through
    /// `onProgress`.
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
        let json = if params.get_type()? == ValueType::Object {
            let obj: Object = unsafe { params.cast()? };
            stringify(env, copy_without(env, &obj, &["onProgress"])?.to_unknown())?
        } else {
            stringify(env, params)?
        };
        let engine = self.engine.clone();
        resolve_json(env, async move {
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
            let report = engine.rewrite(p, cb).await;
            if let Some(d) = delivery {
                let _ = d.await;
            }
            let report = report?;
            match report_error(&report) {
                Some(e) => Err(e),
                None => Ok(report),
            }
        })
    }
}
