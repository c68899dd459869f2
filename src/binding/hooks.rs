//! JavaScript functions and signals read from a params object before
//! `JSON.stringify` (which drops functions): one extractor for every callback
//! (`summarizer`, `onProgress`) with one rule — absent, `undefined` or `null` is
//! none, a function is used, anything else is `LCM_INVALID_INPUT` — and the
//! AbortSignal hook of `compact` / `afterTurn`.

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunction;
use serde_json::Value;

use crate::compaction::CancelToken;
use crate::error::LcmError;

/// A host function called from any thread with one argument (JSON unless said
/// otherwise); weak (it does not keep the process alive), not error-first.
pub type JsFn<Ret, Arg = Value> = ThreadsafeFunction<Arg, Ret, Arg, Status, false, true>;

/// `params[name]` as a [`JsFn`]: `Ok(None)` when `params` is not an object or the
/// member is absent, `undefined` or `null`; `LCM_INVALID_INPUT` naming `shape` when
/// it is anything but a function.
pub fn callback<Ret>(
    env: &Env,
    params: Option<&Unknown<'_>>,
    name: &str,
    shape: &str,
) -> std::result::Result<Option<JsFn<Ret>>, LcmError>
where
    Ret: 'static + FromNapiValue + ValidateNapiValue,
{
    callback_with::<Ret, Value>(env, params, name, shape)
}

/// [`callback`] for a function called with an `Arg` converted by its own
/// [`ToNapiValue`].
pub fn callback_with<Ret, Arg>(
    env: &Env,
    params: Option<&Unknown<'_>>,
    name: &str,
    shape: &str,
) -> std::result::Result<Option<JsFn<Ret, Arg>>, LcmError>
where
    Ret: 'static + FromNapiValue + ValidateNapiValue,
    Arg: 'static + ToNapiValue + JsValuesTupleIntoVec,
{
    let napi_err = |e: Error| LcmError::invalid(format!("{name}: {e}"));
    let Some(p) = params else { return Ok(None) };
    if p.get_type().map_err(napi_err)? != ValueType::Object {
        return Ok(None);
    }
    // SAFETY: `p` is a live value of this env (the call's argument), checked
    // above to be an object, which is what `Object` wraps.
    let obj = unsafe { Object::from_napi_value(env.raw(), p.raw()) }.map_err(napi_err)?;
    let prop: Unknown = obj.get_named_property(name).map_err(napi_err)?;
    match prop.get_type().map_err(napi_err)? {
        ValueType::Undefined | ValueType::Null => Ok(None),
        ValueType::Function => {
            // SAFETY: `prop` is a live value of this env, checked by the match to be
            // a function, which is what `Function` wraps.
            let f: Function<Arg, Ret> =
                unsafe { Function::from_napi_value(env.raw(), prop.raw()) }.map_err(napi_err)?;
            let tsfn = f
                .build_threadsafe_function::<Arg>()
                .callee_handled::<false>()
                .weak::<true>()
                .build()
                .map_err(napi_err)?;
            Ok(Some(tsfn))
        }
        other => Err(LcmError::invalid(format!(
            "{name} must be a function {shape}, got {other}"
        ))),
    }
}

/// An AbortSignal's listener, to be removed when the call settles.
pub struct AbortHook {
    signal: ObjectRef,
    listener: FunctionRef<(), ()>,
}

impl AbortHook {
    /// Removes the listener (the call settled).
    pub fn remove(self, env: &Env) {
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

/// Trips `token` now when `obj.signal` (or OpenClaw's `obj.abortSignal`) is already
/// aborted, else when it aborts.
pub fn hook_signal(env: &Env, obj: &Object, token: &CancelToken) -> Result<Option<AbortHook>> {
    let mut v: Unknown = obj.get_named_property("signal")?;
    if matches!(v.get_type()?, ValueType::Undefined | ValueType::Null) {
        v = obj.get_named_property("abortSignal")?;
    }
    if v.get_type()? != ValueType::Object {
        return Ok(None);
    }
    // SAFETY: `v` is a value of this env, checked above to be an object.
    let signal: Object = unsafe { v.cast()? };
    if signal.get_named_property::<Option<bool>>("aborted")? == Some(true) {
        token.cancel();
        return Ok(None);
    }
    let add: Unknown = signal.get_named_property("addEventListener")?;
    if add.get_type()? != ValueType::Function {
        return Ok(None);
    }
    // SAFETY: `add` is a value of this env, checked above to be a function; the
    // argument and return types only shape how it is called.
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
