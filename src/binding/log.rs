//! The host's log hook: `LcmEngine.open({ onLog })` with `onLog: (record) => void`,
//! taken by the one callback extractor ([`super::hooks::callback`]) and called
//! without blocking; what it returns is ignored and a throw inside it is
//! swallowed, so logging can never fail a call.
#![cfg_attr(test, allow(dead_code))]

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;

use super::hooks::{self, JsFn};
use super::summarizer::AnyJson;
use crate::error::LcmError;
use crate::store::LogSink;

/// `options.onLog` when it is a function; `LCM_INVALID_INPUT` when present but
/// not a function.
pub fn extract(
    env: &Env,
    options: Option<&Unknown<'_>>,
) -> std::result::Result<Option<JsFn<AnyJson>>, LcmError> {
    hooks::callback::<AnyJson>(
        env,
        options,
        "onLog",
        "(record: { level, code, operation, message }) => void",
    )
}

/// The hook as the store's log sink.
pub fn sink(f: JsFn<AnyJson>) -> LogSink {
    let f = Arc::new(f);
    Arc::new(move |record| {
        let Ok(v) = serde_json::to_value(record) else {
            return;
        };
        // The hook's own exception arrives here as `Err` and is dropped.
        let _ = f.call_with_return_value(v, ThreadsafeFunctionCallMode::NonBlocking, |_, _| Ok(()));
    })
}
