//! Compaction methods of `LcmEngine`: `evaluate`, `compact`, `afterTurn`, `cancel`
//! and `integrityCheck`. Functions in the params object (`onProgress`) disappear
//! in `JSON.stringify`, so they are read first: `onProgress` becomes a weak,
//! fire-and-forget threadsafe function whose throws are swallowed; an AbortSignal gets a one-shot `abort`
//! listener that trips the call's native cancel token and is removed when the call
//! settles.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;

use super::js::{parse, stringify, to_napi_error};
use super::LcmEngine;
use crate::compaction::api::AfterTurnParams;
use crate::compaction::{CancelToken, CompactParams, EvaluateParams, Hooks, PassRecord};
use crate::engine::parse_params;
use crate::error::Result as CoreResult;

/// The `onProgress` function of a params object, as a progress hook.
fn progress_hook(obj: &Object) -> Result<Option<crate::compaction::ProgressFn>> {
    let v: Unknown = obj.get_named_property("onProgress")?;
    if v.get_type()? != ValueType::Function {
        return Ok(None);
    }
    let f: Function<serde_json::Value, ()> = unsafe { v.cast()? };
    let tsfn = f
        .build_threadsafe_function::<serde_json::Value>()
        .callee_handled::<false>()
        .weak::<true>()
        .build_callback(|ctx| Ok(ctx.value))?;
    Ok(Some(Arc::new(move |rec: &PassRecord| {
        if let Ok(v) = serde_json::to_value(rec) {
            // A throwing listener must not become an uncaught exception: its error
            // (and any return value) is dropped.
            tsfn.call_with_return_value(v, ThreadsafeFunctionCallMode::NonBlocking, |_, _| Ok(()));
        }
    })))
}

/// An AbortSignal's listener, to be removed when the call settles.
struct AbortHook {
    signal: ObjectRef,
    listener: FunctionRef<(), ()>,
}

impl AbortHook {
    fn remove(self, env: &Env) {
        let _ = (|| -> Result<()> {
            let signal = self.signal.get_value(env)?;
            let remove: Function<FnArgs<(Unknown, Unknown)>, Unknown> =
                signal.get_named_property("removeEventListener")?;
            let listener = self.listener.borrow_back(env)?;
            let name = env.create_string("abort")?;
            remove.apply(
                signal,
                FnArgs::from((name.to_unknown(), listener.to_unknown())),
            )?;
            Ok(())
        })();
        let _ = self.signal.unref(env);
    }
}

/// Trips `token` now when the signal is already aborted, else when it aborts.
fn hook_signal(env: &Env, obj: &Object, token: &CancelToken) -> Result<Option<AbortHook>> {
    let mut v: Unknown = obj.get_named_property("signal")?;
    if matches!(v.get_type()?, ValueType::Undefined | ValueType::Null) {
        // OpenClaw's name for it.
        v = obj.get_named_property("abortSignal")?;
    }
    if v.get_type()? != ValueType::Object {
        return Ok(None);
    }
    let signal: Object = unsafe { v.cast()? };
    if signal.get_named_property::<Option<bool>>("aborted")? == Some(true) {
        token.cancel();
        return Ok(None);
    }
    let add: Unknown = signal.get_named_property("addEventListener")?;
    if add.get_type()? != ValueType::Function {
        return Ok(None);
    }
    let add: Function<FnArgs<(Unknown, Unknown, Unknown)>, Unknown> = unsafe { add.cast()? };
    let t = token.clone();
    let listener = env.create_function_from_closure::<(), (), _>("lcmAbort", move |_| {
        t.cancel();
        Ok(())
    })?;
    let mut once = Object::new(env)?;
    once.set_named_property("once", true)?;
    let name = env.create_string("abort")?;
    let args = (name.to_unknown(), listener.to_unknown(), once.to_unknown());
    add.apply(signal, FnArgs::from(args))?;
    Ok(Some(AbortHook {
        signal: signal.create_ref()?,
        listener: listener.create_ref()?,
    }))
}

/// Reads the hooks and the JSON text of a params object.
fn read_params<'env>(
    env: &'env Env,
    params: Unknown<'env>,
) -> Result<(String, Hooks, Option<AbortHook>)> {
    let mut hooks = Hooks::default();
    let mut abort = None;
    if params.get_type()? == ValueType::Object {
        let obj: Object = unsafe { params.cast()? };
        hooks.on_progress = progress_hook(&obj)?;
        abort = hook_signal(env, &obj, &hooks.cancel)?;
    }
    Ok((stringify(env, params)?, hooks, abort))
}

/// Resolves a core future as parsed JSON, removing the abort listener on settle.
fn settle<'env, T, F>(
    env: &'env Env,
    fut: F,
    abort: Option<AbortHook>,
) -> Result<PromiseRaw<'env, Unknown<'env>>>
where
    T: serde::Serialize + Send + 'static,
    F: std::future::Future<Output = CoreResult<T>> + Send + 'static,
{
    env.spawn_future_with_callback(
        async move {
            let r = fut.await.and_then(|v| {
                serde_json::to_string(&v).map_err(|e| {
                    crate::error::LcmError::internal(format!("cannot serialize result: {e}"))
                })
            });
            Ok(r)
        },
        move |env, r: CoreResult<String>| {
            if let Some(a) = abort {
                a.remove(env);
            }
            match r {
                Ok(text) => parse(env, &text),
                Err(e) => Err(to_napi_error(env, e)),
            }
        },
    )
}

#[napi]
impl LcmEngine {
    /// Whether the session's context is over the threshold:
    /// `currentTokens = max(stored, currentTokenCount)`, `threshold =
    /// floor(contextThreshold × tokenBudget)`, due when strictly greater. Reads only.
    #[napi(
        ts_args_type = "params: EvaluateParams",
        ts_return_type = "Promise<Evaluation>"
    )]
    pub fn evaluate<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let json = stringify(env, params)?;
        let engine = self.engine.clone();
        settle(
            env,
            async move {
                let p: EvaluateParams = parse_params("evaluate", &json)?;
                engine.evaluate(p).await
            },
            None,
        )
    }

    /// Compacts the session's conversation (`mode`: incremental, sweep, untilUnder).
    /// Summarizer calls run with no database connection held; each pass is written
    /// in one transaction. Resolves with a result even when there is nothing to do,
    /// the summarizer fails (`ok: false`, `errorCode`) or the call is aborted.
    /// Rejects only for bad parameters and database failures.
    #[napi(
        ts_args_type = "params: CompactParams",
        ts_return_type = "Promise<CompactResult>"
    )]
    pub fn compact<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let (json, hooks, abort) = read_params(env, params)?;
        let started =
            parse_params::<CompactParams>("compact", &json).map(|p| self.engine.compact(p, hooks));
        settle(env, async move { started?.await }, abort)
    }

    /// The plugin's lifecycle hook: ingests `messages.slice(prePromptMessageCount)`
    /// in one batch, then runs a threshold sweep when the context is over the
    /// threshold. Resolves with `{ ingest, compaction }`.
    #[napi(
        ts_generic_types = "M extends AgentMessage = StoredAgentMessage",
        ts_args_type = "params: AfterTurnParams<M>",
        ts_return_type = "Promise<AfterTurnResult>"
    )]
    pub fn after_turn<'env>(
        &self,
        env: &'env Env,
        params: Unknown<'env>,
    ) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let (json, hooks, abort) = read_params(env, params)?;
        let started = parse_params::<AfterTurnParams>("afterTurn", &json)
            .map(|p| self.engine.after_turn(p, hooks));
        settle(env, async move { started?.await }, abort)
    }

    /// Stops every running compaction of the session (matched by session id or
    /// key) between passes; an in-flight summarizer call is abandoned and nothing
    /// of it is written. Returns how many calls were running.
    #[napi]
    pub fn cancel(&self, session: String) -> u32 {
        self.engine.cancel_compaction(&session) as u32
    }

    /// `PRAGMA integrity_check` rows: `['ok']` for a sound database.
    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn integrity_check<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Unknown<'env>>> {
        let engine = self.engine.clone();
        settle(env, async move { engine.integrity_check().await }, None)
    }
}
