//! Small bridges between JavaScript values and the core: JSON text both ways and
//! coded errors.

use napi::bindgen_prelude::*;
use serde::Serialize;

use crate::error::LcmError;

fn json_function<'env>(
    env: &'env Env,
    name: &str,
) -> Result<Function<'env, Unknown<'env>, Unknown<'env>>> {
    let global = env.get_global()?;
    let json: Object = global.get_named_property("JSON")?;
    json.get_named_property(name)
}

/// `JSON.stringify(value)`; functions and `undefined` members disappear exactly as
/// they do when a host persists the value as JSON.
pub fn stringify<'env>(env: &'env Env, value: Unknown<'env>) -> Result<String> {
    let f = json_function(env, "stringify")?;
    let out = f.call(value)?;
    match out.get_type()? {
        ValueType::String => unsafe { String::from_napi_value(env.raw(), out.raw()) },
        _ => Ok("null".to_owned()),
    }
}

/// `JSON.parse(text)`.
pub fn parse<'env>(env: &'env Env, text: &str) -> Result<Unknown<'env>> {
    let f = json_function(env, "parse")?;
    let s = env.create_string(text)?;
    f.call(s.to_unknown())
}

/// A JavaScript `Error` with `code` set to the stable `LCM_…` code.
pub fn to_napi_error(env: &Env, e: LcmError) -> Error {
    let built = (|| -> Result<Error> {
        let mut obj = env.create_error(Error::new(Status::GenericFailure, e.message.clone()))?;
        obj.set_named_property("code", e.code.as_str())?;
        Ok(Error::from(obj.to_unknown()))
    })();
    built.unwrap_or_else(|_| Error::new(Status::GenericFailure, e.to_string()))
}

/// Runs a core future to a Promise: the value is serialized to JSON off the JS
/// thread and parsed on resolve; a core error rejects with its code.
pub fn resolve_json<'env, T, F>(env: &'env Env, fut: F) -> Result<PromiseRaw<'env, Unknown<'env>>>
where
    T: Serialize + Send + 'static,
    F: std::future::Future<Output = crate::error::Result<T>> + Send + 'static,
{
    env.spawn_future_with_callback(
        async move {
            let r = fut.await;
            Ok(r.and_then(|v| {
                serde_json::to_string(&v)
                    .map_err(|e| LcmError::internal(format!("cannot serialize result: {e}")))
            }))
        },
        |env, r: crate::error::Result<String>| match r {
            Ok(text) => parse(env, &text),
            Err(e) => Err(to_napi_error(env, e)),
        },
    )
}

/// The shape of most engine methods: `JSON.stringify` the params on the JS thread,
/// parse them as `P` off it (errors name `what`), run `f` with the engine, and
/// resolve with its JSON-serialized result.
pub fn call_engine<'env, P, T, F, Fut>(
    env: &'env Env,
    engine: &std::sync::Arc<crate::engine::Engine>,
    what: &'static str,
    params: Unknown<'env>,
    f: F,
) -> Result<PromiseRaw<'env, Unknown<'env>>>
where
    P: serde::de::DeserializeOwned + Send + 'static,
    T: Serialize + Send + 'static,
    F: FnOnce(std::sync::Arc<crate::engine::Engine>, P) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = crate::error::Result<T>> + Send + 'static,
{
    let json = stringify(env, params)?;
    let engine = engine.clone();
    resolve_json(env, async move {
        let p: P = crate::engine::parse_params(what, &json)?;
        f(engine, p).await
    })
}
