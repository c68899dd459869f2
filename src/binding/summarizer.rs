//! The host callback summarizer: `LcmEngine.open({ summarizer })` with
//! `summarizer: (request) => string | {content, model?} | Promise<…>`. The function is
//! taken from the options object before `JSON.stringify` (which drops functions) and
//! wrapped in a weak, non-error-first ThreadsafeFunction called with
//! `call_async_catch`, so a throw, a rejection, a wrong return type or a callback that
//! never settles (`summaryTimeoutMs`) becomes `LCM_CALLBACK`, never a crash.
#![cfg_attr(test, allow(dead_code))]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use napi::bindgen_prelude::*;
use serde_json::Value;

use crate::error::{ErrorCode, LcmError};
use crate::params::json_kind;
use crate::summarize::{Summarizer, SummaryRequest, SummaryResponse};

/// Model recorded when the callback names none.
pub const CALLBACK_MODEL: &str = "host-callback";

/// Any JavaScript value the callback returns or resolves with: its JSON form, or why
/// it has none (`undefined`, a function, a symbol, …).
pub struct AnyJson(pub std::result::Result<Value, String>);

impl TypeName for AnyJson {
    fn type_name() -> &'static str {
        "unknown"
    }

    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ValidateNapiValue for AnyJson {
    /// Accepts any value (nothing is read).
    ///
    /// # Safety
    ///
    /// The trait's contract: `env` and `value` are live, on the JS thread.
    unsafe fn validate(
        _env: napi::sys::napi_env,
        _value: napi::sys::napi_value,
    ) -> Result<napi::sys::napi_value> {
        Ok(std::ptr::null_mut())
    }
}

impl FromNapiValue for AnyJson {
    /// The value as JSON, or why it is not JSON.
    ///
    /// # Safety
    ///
    /// The trait's contract: `env` is live and `value` a live value of it, on the
    /// JS thread.
    unsafe fn from_napi_value(
        env: napi::sys::napi_env,
        value: napi::sys::napi_value,
    ) -> Result<Self> {
        // SAFETY: `env` and `value` are live, on the JS thread (this function's
        // own contract), and `serde_json::Value` converts a value of any type, so
        // no type needs checking first.
        let v = unsafe { Value::from_napi_value(env, value) };
        Ok(AnyJson(v.map_err(|e| e.reason)))
    }
}

/// What the callback returns: a Promise, or a value directly.
type CallbackReturn = Either<Promise<AnyJson>, AnyJson>;

/// The ThreadsafeFunction over the host's summarizer.
pub type CallbackFn = super::hooks::JsFn<CallbackReturn, Request>;

/// The request object the callback receives (the [`SummaryRequest`] fields, in its
/// serialized order and names). The source text crosses into JavaScript once:
/// `prompt` is the rendered text before it, `sourceText` and the text after it,
/// joined by `String.prototype.concat` (a rope, no second copy of the source).
/// Where the source sits in the prompt is found before the call, off the JS thread.
pub struct Request {
    req: SummaryRequest,
    /// Byte offset of `req.source_text` in `req.prompt` (none: no rope).
    source_at: Option<usize>,
}

impl Request {
    /// A request, with its source located in its prompt.
    fn new(req: SummaryRequest) -> Self {
        let source_at = match req.source_text.is_empty() {
            true => None,
            false => crate::text::find_long(&req.prompt, &req.source_text),
        };
        Request { req, source_at }
    }
}

impl TypeName for Request {
    fn type_name() -> &'static str {
        "SummaryRequest"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

/// A JavaScript string of `s`.
///
/// # Safety
///
/// `env` is a live env and this runs on its JS thread.
unsafe fn js_string(env: sys::napi_env, s: &str) -> Result<sys::napi_value> {
    let mut v = std::ptr::null_mut();
    // SAFETY: `env` is live, on its JS thread (this function's contract); `s` is
    // valid UTF-8 and its pointer is readable for `s.len()` bytes, which is
    // what `napi_create_string_utf8` reads; `v` is a valid out-pointer.
    check_status!(unsafe {
        sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut v)
    })?;
    Ok(v)
}

/// `head.concat(middle, tail)`.
///
/// # Safety
///
/// `env` is a live env, this runs on its JS thread, and `parts` are live string
/// values of it.
unsafe fn concat(env: sys::napi_env, parts: [sys::napi_value; 3]) -> Result<sys::napi_value> {
    let (mut f, mut out) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: `env` and `parts` are live, on the JS thread (this function's
    // contract); a string primitive's named properties are its prototype's, so
    // `f` is `String.prototype.concat`; `parts[1..]` points to the 2 arguments
    // passed; `f` and `out` are valid out-pointers.
    unsafe {
        check_status!(sys::napi_get_named_property(
            env,
            parts[0],
            c"concat".as_ptr(),
            &mut f
        ))?;
        check_status!(sys::napi_call_function(
            env,
            parts[0],
            f,
            2,
            parts[1..].as_ptr(),
            &mut out
        ))?;
    }
    Ok(out)
}

impl ToNapiValue for Request {
    /// The request as an object whose `prompt` is a rope over `sourceText`.
    ///
    /// # Safety
    ///
    /// The trait's contract: `env` is live, on the JS thread.
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let (r, source_at) = (val.req, val.source_at);
        // SAFETY: `env` is live, on the JS thread (this function's contract), which
        // is what `js_string` and `concat` require; `source`, `head` and `tail`
        // are live strings made here in `env`, so `concat` gets live strings and
        // `Unknown::from_raw_unchecked` wraps live values of `env`.
        unsafe {
            let source = js_string(env, &r.source_text)?;
            let prompt = match source_at {
                Some(at) => {
                    let head = crate::text::head(&r.prompt, at);
                    let tail = crate::text::tail(&r.prompt, at + r.source_text.len());
                    concat(env, [js_string(env, head)?, source, js_string(env, tail)?])?
                }
                None => js_string(env, &r.prompt)?,
            };
            let env_ = Env::from_raw(env);
            let mut obj = Object::new(&env_)?;
            obj.set_named_property("prompt", Unknown::from_raw_unchecked(env, prompt))?;
            obj.set_named_property("systemPrompt", r.system_prompt)?;
            obj.set_named_property("targetTokens", r.target_tokens)?;
            obj.set_named_property("depth", r.depth)?;
            obj.set_named_property("aggressive", r.aggressive)?;
            obj.set_named_property("model", r.model)?;
            obj.set_named_property("sourceText", Unknown::from_raw_unchecked(env, source))?;
            Object::to_napi_value(env, obj)
        }
    }
}

/// Takes `options.summarizer` when it is a function (the rule of
/// [`super::hooks::callback`]).
pub fn extract(
    env: &Env,
    options: Option<&Unknown<'_>>,
) -> std::result::Result<Option<CallbackFn>, LcmError> {
    extract_named(env, options, "summarizer")
}

/// Takes `options[name]` when it is a summarizer function (`largeFileSummarizer`
/// has the same shape as `summarizer`).
pub fn extract_named(
    env: &Env,
    options: Option<&Unknown<'_>>,
    name: &'static str,
) -> std::result::Result<Option<CallbackFn>, LcmError> {
    super::hooks::callback_with::<CallbackReturn, Request>(
        env,
        options,
        name,
        "(request) => string | { content, model? } | Promise of one",
    )
}

/// The callback as a core [`Summarizer`].
pub struct CallbackSummarizer {
    tsfn: Arc<CallbackFn>,
    timeout: Duration,
}

impl CallbackSummarizer {
    /// Wraps the function; a call that has not settled after `timeout` fails.
    pub fn shared(tsfn: CallbackFn, timeout: Duration) -> Arc<dyn Summarizer> {
        Arc::new(CallbackSummarizer {
            tsfn: Arc::new(tsfn),
            timeout,
        })
    }
}

fn callback_err(msg: impl std::fmt::Display) -> LcmError {
    LcmError::new(ErrorCode::Callback, format!("summarizer callback {msg}"))
}

/// `string` or `{ content: string, model?: string }`.
fn response_from(v: Value, fallback_model: Option<&str>) -> crate::error::Result<SummaryResponse> {
    let model = fallback_model.unwrap_or(CALLBACK_MODEL).to_owned();
    match v {
        Value::String(content) => Ok(SummaryResponse { content, model }),
        Value::Object(o) => match (o.get("content"), o.get("model")) {
            (Some(Value::String(c)), None | Some(Value::Null)) => Ok(SummaryResponse {
                content: c.clone(),
                model,
            }),
            (Some(Value::String(c)), Some(Value::String(m))) => Ok(SummaryResponse {
                content: c.clone(),
                model: m.clone(),
            }),
            _ => Err(callback_err(
                "returned an object without a string `content` (and optional string `model`)",
            )),
        },
        other => Err(callback_err(format!(
            "must return a string or {{ content, model? }}, got {}",
            json_kind(&other)
        ))),
    }
}

/// A rejection, or a Promise collected without ever settling (its resolvers were
/// dropped: napi reports the channel as canceled).
fn rejection(reason: &str) -> LcmError {
    if reason.contains("canceled") {
        return callback_err("returned a Promise that never settled (it was garbage-collected)");
    }
    callback_err(format!("rejected: {reason}"))
}

impl CallbackSummarizer {
    async fn call(&self, arg: Request) -> crate::error::Result<Value> {
        let returned = self
            .tsfn
            .call_async_catch(arg)
            .await
            .map_err(|e| callback_err(format!("threw: {}", e.reason)))?;
        let AnyJson(value) = match returned {
            Either::A(promise) => promise.await.map_err(|e| rejection(&e.reason))?,
            Either::B(v) => v,
        };
        value.map_err(|why| {
            callback_err(format!(
                "must return a string or {{ content, model? }}, got a value without a JSON form ({why})"
            ))
        })
    }
}

#[async_trait]
impl Summarizer for CallbackSummarizer {
    async fn summarize(&self, req: SummaryRequest) -> crate::error::Result<SummaryResponse> {
        let model = req.model.clone();
        let ms = self.timeout.as_millis();
        let v = tokio::time::timeout(self.timeout, self.call(Request::new(req)))
            .await
            .map_err(|_| {
                callback_err(format!("did not settle within {ms} ms (summaryTimeoutMs)"))
            })??;
        response_from(v, model.as_deref())
    }

    fn name(&self) -> &str {
        "callback"
    }
}
