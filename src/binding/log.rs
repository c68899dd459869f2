//! The host's log hook: `LcmEngine.open({ onLog })` with `onLog: (record) => void`.
//! Taken from the options before `JSON.stringify` (like the summarizer callback) and
//! wrapped in a weak ThreadsafeFunction called without blocking; what it returns is
//! ignored and a throw inside it is swallowed, so logging can never fail a call.
#![cfg_attr(test, allow(dead_code))]

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use serde_json::Value;

use super::summarizer::AnyJson;
use crate::error::LcmError;
use crate::store::LogSink;

/// The ThreadsafeFunction over `onLog`.
pub type LogFn = ThreadsafeFunction<Value, AnyJson, Value, Status, false, true>;

/// Takes `options.onLog` when it is a function; `LCM_INVALID_INPUT` when present
/// but not a function.
pub fn extract(
    env: &Env,
    options: Option<&Unknown<'_>>,
) -> std::result::Result<Option<LogFn>, LcmError> {
    let napi_err = |e: Error| LcmError::invalid(format!("onLog: {e}"));
    let Some(o) = options else { return Ok(None) };
    if o.get_type().map_err(napi_err)? != ValueType::Object {
        return Ok(None);
    }
    // SAFETY: `o` is a live object value of this env.
    let obj = unsafe { Object::from_napi_value(env.raw(), o.raw()) }.map_err(napi_err)?;
    let prop: Unknown = obj.get_named_property("onLog").map_err(napi_err)?;
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
            "onLog must be a function (record: {{ level, code, operation, message }}) => void, got {other}"
        ))),
    }
}

/// The hook as the store's log sink.
pub fn sink(f: LogFn) -> LogSink {
    let f = Arc::new(f);
    Arc::new(move |record| {
        let Ok(v) = serde_json::to_value(record) else {
            return;
        };
        // The hook's own exception arrives here as `Err` and is dropped.
        let _ = f.call_with_return_value(v, ThreadsafeFunctionCallMode::NonBlocking, |_, _| Ok(()));
    })
}
