//! Compaction methods of `LcmEngine`: `evaluate`, `compact`, `afterTurn`, `cancel`
//! and `integrityCheck`. On the JS thread, `compact` and `afterTurn` only read their
//! JavaScript-only members (`onProgress`, `signal`, and the session ids the call is
//! registered under for `cancel`) and stringify the rest; `afterTurn` slices
//! `messages` (and parallel `entryIds`) at `prePromptMessageCount` first, so only
//! the turn's new messages are serialized. Parsing runs off the JS thread.
//! `onProgress` becomes a weak, fire-and-forget threadsafe function whose throws
//! are swallowed; an AbortSignal gets a one-shot `abort` listener that trips the
//! call's native cancel token and is removed when the call settles.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;

use super::hooks::{self, AbortHook};
use super::js::{
    coded, copy_without, engine_call, promise, string_arg, stringify, Input, OnSettle, Params,
    Pending,
};
use super::summarizer::AnyJson;
use super::LcmEngine;
use crate::compaction::{AfterTurnParams, CompactParams, EvaluateParams, Hooks, PassRecord};
use crate::engine::SessionIds;
use crate::error::{LcmError, Result as CoreResult};

/// What `compact` / `afterTurn` read on the JS thread.
struct Call {
    json: String,
    hooks: Hooks,
    abort: Option<AbortHook>,
    session: SessionIds,
    /// A malformed `onProgress`, reported when the call runs.
    bad_hook: Option<LcmError>,
}

impl Call {
    fn on_settle(&mut self) -> Option<OnSettle> {
        let a = self.abort.take()?;
        Some(Box::new(move |env: &Env| a.remove(env)))
    }

    /// The parser the core runs off the JS thread: a malformed `onProgress` first,
    /// then the params.
    fn parser<P: serde::de::DeserializeOwned + 'static>(
        &mut self,
        what: &'static str,
    ) -> impl FnOnce() -> CoreResult<P> + Send + 'static {
        let bad = self.bad_hook.take().map_or(Ok(()), Err);
        let params = Params::<P>::text(std::mem::take(&mut self.json));
        let parse = (bad, params).parser(what);
        move || parse().map(|((), p)| p)
    }
}

/// The `onProgress` member as a progress hook.
fn progress_hook(
    env: &Env,
    params: &Unknown,
) -> std::result::Result<Option<crate::compaction::ProgressFn>, LcmError> {
    let f = hooks::callback::<AnyJson>(env, Some(params), "onProgress", "(pass) => void")?;
    Ok(f.map(|tsfn| -> crate::compaction::ProgressFn {
        Arc::new(move |rec: &PassRecord| {
            if let Ok(v) = serde_json::to_value(rec) {
                // A throwing listener must not become an uncaught exception: its
                // error (and any return value) is dropped.
                tsfn.call_with_return_value(v, ThreadsafeFunctionCallMode::NonBlocking, |_, _| {
                    Ok(())
                });
            }
        })
    }))
}

/// A string member, if it is one.
fn string_member(obj: &Object, name: &str) -> Result<Option<String>> {
    let v: Unknown = obj.get_named_property(name)?;
    if v.get_type()? != ValueType::String {
        return Ok(None);
    }
    // SAFETY: `v` is a value of this env, checked above to be a string.
    Ok(Some(unsafe { v.cast::<String>()? }))
}

/// `array.slice(start)`.
fn slice<'env>(array: &Object<'env>, start: f64) -> Result<Unknown<'env>> {
    let f: Function<FnArgs<(f64,)>, Unknown> = array.get_named_property("slice")?;
    f.apply(*array, FnArgs::from((start,)))
}

/// Keeps only `messages[prePromptMessageCount..]` (and `entryIds` when parallel to
/// `messages`), with the count set to 0. Leaves malformed members as they are for
/// the core to report.
fn slice_turn(copy: &mut Object) -> Result<()> {
    let messages: Unknown = copy.get_named_property("messages")?;
    let pre: Unknown = copy.get_named_property("prePromptMessageCount")?;
    if !messages.is_array()? || pre.get_type()? != ValueType::Number {
        return Ok(());
    }
    // SAFETY: `pre` is a value of this env, checked above to be a number.
    let pre: f64 = unsafe { pre.cast::<f64>()? };
    if !(pre >= 0.0 && pre.fract() == 0.0 && pre <= 9_007_199_254_740_991.0) {
        return Ok(());
    }
    // SAFETY: `messages` is a value of this env, checked above to be an array (an
    // object).
    let array: Object = unsafe { messages.cast()? };
    let len = array.get_array_length()?;
    copy.set_named_property("messages", slice(&array, pre)?)?;
    copy.set_named_property("prePromptMessageCount", 0)?;
    let ids: Unknown = copy.get_named_property("entryIds")?;
    if ids.is_array()? {
        // SAFETY: `ids` is a value of this env, checked just above to be an array.
        let ids: Object = unsafe { ids.cast()? };
        if ids.get_array_length()? == len {
            copy.set_named_property("entryIds", slice(&ids, pre)?)?;
        }
    }
    Ok(())
}

/// Reads a `compact` / `afterTurn` params object on the JS thread.
fn read_call(env: &Env, params: Unknown, turn: bool) -> Result<Call> {
    let mut hooks = Hooks::default();
    let (mut abort, mut session, mut bad_hook) = (None, SessionIds::default(), None);
    if params.get_type()? != ValueType::Object {
        let json = stringify(env, params)?;
        return Ok(Call {
            json,
            hooks,
            abort,
            session,
            bad_hook,
        });
    }
    match progress_hook(env, &params) {
        Ok(f) => hooks.on_progress = f,
        Err(e) => bad_hook = Some(e),
    }
    // SAFETY: `params` is a value of this env, checked above to be an object.
    let obj: Object = unsafe { params.cast()? };
    abort = hooks::hook_signal(env, &obj, &hooks.cancel)?;
    session.session_id = string_member(&obj, "sessionId")?.unwrap_or_default();
    session.session_key = string_member(&obj, "sessionKey")?;
    let mut copy = copy_without(env, &obj, &["signal", "abortSignal", "onProgress"])?;
    if turn {
        slice_turn(&mut copy)?;
    }
    let json = stringify(env, copy.to_unknown())?;
    Ok(Call {
        json,
        hooks,
        abort,
        session,
        bad_hook,
    })
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
    pub fn evaluate<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        let p = Params::<EvaluateParams>::read(env, params)?;
        engine_call!(env, self, "evaluate", p => |p| evaluate(p))
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
    pub fn compact<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        let mut call = read_call(env, params, false)?;
        let parse = call.parser::<CompactParams>("compact");
        let hooks = std::mem::take(&mut call.hooks);
        let fut = self.engine.compact_deferred(&call.session, hooks, parse);
        promise(env, fut, call.on_settle())
    }

    /// The plugin's lifecycle hook: ingests `messages.slice(prePromptMessageCount)`
    /// in one batch, then runs a threshold sweep when the context is over the
    /// threshold. Resolves with `{ ingest, compaction }`.
    #[napi(
        ts_generic_types = "M extends AgentMessage = StoredAgentMessage",
        ts_args_type = "params: AfterTurnParams<M>",
        ts_return_type = "Promise<AfterTurnResult>"
    )]
    pub fn after_turn<'env>(&self, env: &'env Env, params: Unknown<'env>) -> Result<Pending<'env>> {
        let mut call = read_call(env, params, true)?;
        let parse = call.parser::<AfterTurnParams>("afterTurn");
        let hooks = std::mem::take(&mut call.hooks);
        let fut = self.engine.after_turn_deferred(&call.session, hooks, parse);
        promise(env, fut, call.on_settle())
    }

    /// Stops every running compaction of the session (matched by session id or
    /// key) between passes; an in-flight summarizer call is abandoned and nothing
    /// of it is written. Returns how many calls were running.
    #[napi(ts_args_type = "session: string")]
    pub fn cancel(&self, env: &Env, session: Unknown) -> Result<u32> {
        let session = coded(env, string_arg(session, "cancel", "session"))?;
        Ok(self.engine.cancel_compaction(&session) as u32)
    }

    /// `PRAGMA integrity_check` rows: `['ok']` for a sound database.
    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn integrity_check<'env>(&self, env: &'env Env) -> Result<Pending<'env>> {
        engine_call!(env, self, "integrityCheck", () => |()| integrity_check())
    }
}
