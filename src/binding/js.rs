//! Small bridges between JavaScript values and the core: JSON text both ways and
//! coded errors.

use napi::bindgen_prelude::*;
use serde::Serialize;

use crate::error::LcmError;

/// `JSON.parse` and `JSON.stringify` as found when the environment first used
/// them, held by references (per environment, as instance data): looking them up
/// on every call cost two property reads with fresh key strings on the JS thread.
/// The references are never deleted; Node frees them with the environment.
/// Node-API gives an addon one instance-data slot per environment and this struct
/// holds it: anything else kept per environment belongs here too (a second
/// `set_instance_data` would replace it, and every lookup here would then fail).
struct JsonFunctions {
    parse: napi::sys::napi_ref,
    stringify: napi::sys::napi_ref,
}

/// Which of [`JsonFunctions`].
#[derive(Clone, Copy)]
enum Json {
    Parse,
    Stringify,
}

fn json_function<'env>(
    env: &'env Env,
    which: Json,
) -> Result<Function<'env, Unknown<'env>, Unknown<'env>>> {
    let fns = match env.get_instance_data::<JsonFunctions>()? {
        Some(fns) => fns,
        None => {
            env.set_instance_data(json_functions(env)?, (), |_| {})?;
            env.get_instance_data::<JsonFunctions>()?
                .ok_or_else(|| Error::from_reason("JSON functions not kept"))?
        }
    };
    let r = match which {
        Json::Parse => fns.parse,
        Json::Stringify => fns.stringify,
    };
    let mut value = std::ptr::null_mut();
    // SAFETY: `r` is a live reference created in this environment (instance data
    // is per environment and lives as long as it does).
    check_status!(unsafe { napi::sys::napi_get_reference_value(env.raw(), r, &mut value) })?;
    // SAFETY: `value` is what the reference holds, `JSON.parse` or `JSON.stringify`
    // of this env (a strong reference: never collected), so a live function.
    unsafe { Function::from_napi_value(env.raw(), value) }
}

/// Looks the two functions up and references them.
fn json_functions(env: &Env) -> Result<JsonFunctions> {
    let global = env.get_global()?;
    let json: Object = global.get_named_property("JSON")?;
    let reference = |name: &str| -> Result<napi::sys::napi_ref> {
        let f: Function<Unknown, Unknown> = json.get_named_property(name)?;
        let mut r = std::ptr::null_mut();
        // SAFETY: `f` is a live function value of this environment.
        check_status!(unsafe { napi::sys::napi_create_reference(env.raw(), f.raw(), 1, &mut r) })?;
        Ok(r)
    };
    Ok(JsonFunctions {
        parse: reference("parse")?,
        stringify: reference("stringify")?,
    })
}

/// `JSON.stringify(value)`; functions and `undefined` members disappear exactly as
/// they do when a host persists the value as JSON.
pub fn stringify<'env>(env: &'env Env, value: Unknown<'env>) -> Result<String> {
    let f = json_function(env, Json::Stringify)?;
    let out = f.call(value)?;
    match out.get_type()? {
        // SAFETY: `out` is a live value of this env, matched to be a string.
        ValueType::String => unsafe { String::from_napi_value(env.raw(), out.raw()) },
        _ => Ok("null".to_owned()),
    }
}

/// `JSON.parse(text)`.
pub fn parse<'env>(env: &'env Env, text: &str) -> Result<Unknown<'env>> {
    let f = json_function(env, Json::Parse)?;
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

/// A core result as a napi result: the error becomes a coded JavaScript `Error`
/// ([`to_napi_error`]), for functions that throw synchronously.
pub fn coded<T>(env: &Env, r: crate::error::Result<T>) -> Result<T> {
    r.map_err(|e| to_napi_error(env, e))
}

/// What a JavaScript value is, for an error message.
fn type_name(v: &Unknown) -> &'static str {
    match v.get_type() {
        Ok(ValueType::Number) => "a number",
        Ok(ValueType::String) => "a string",
        Ok(ValueType::Boolean) => "a boolean",
        Ok(ValueType::Undefined) => "undefined",
        Ok(ValueType::Null) => "null",
        Ok(ValueType::Function) => "a function",
        Ok(ValueType::BigInt) => "a bigint",
        Ok(ValueType::Symbol) => "a symbol",
        Ok(ValueType::Object) if v.is_array().unwrap_or(false) => "an array",
        Ok(ValueType::Object) => "an object",
        _ => "a value of unknown type",
    }
}

/// A positional string argument (`what` is the function, `name` the argument).
/// Anything but a string is `LCM_INVALID_INPUT`, never converted.
pub fn string_arg(v: Unknown, what: &str, name: &str) -> crate::error::Result<String> {
    if v.get_type().ok() == Some(ValueType::String) {
        // SAFETY: `v` is a value of this env, checked just above to be a string.
        if let Ok(s) = unsafe { v.cast::<String>() } {
            return Ok(s);
        }
    }
    Err(LcmError::invalid(format!(
        "{what}: {name} must be a string, got {}",
        type_name(&v)
    )))
}

/// An optional positional string argument: absent, `undefined` or `null` is `None`.
pub fn opt_string_arg(
    v: Option<Unknown>,
    what: &str,
    name: &str,
) -> crate::error::Result<Option<String>> {
    match v {
        Some(v) if !matches!(v.get_type(), Ok(ValueType::Undefined | ValueType::Null)) => {
            string_arg(v, what, name).map(Some)
        }
        _ => Ok(None),
    }
}

/// A positional id argument: a number that is a safe integer. `NaN`, `1.5` or a
/// numeric string are `LCM_INVALID_INPUT` (Node-API would turn them into another
/// row's id: `NaN` into 0, `1.5` into 1).
pub fn id_arg(v: Unknown, what: &str, name: &str) -> crate::error::Result<i64> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if v.get_type().ok() == Some(ValueType::Number) {
        // SAFETY: `v` is a value of this env, checked just above to be a number.
        if let Ok(n) = unsafe { v.cast::<f64>() } {
            if n.fract() == 0.0 && n.abs() <= MAX_SAFE {
                return Ok(n as i64);
            }
            return Err(LcmError::invalid(format!(
                "{what}: {name} must be an integer id, got {n}"
            )));
        }
    }
    Err(LcmError::invalid(format!(
        "{what}: {name} must be an integer id, got {}",
        type_name(&v)
    )))
}

/// A shallow copy of `obj` (`Object.assign({}, obj)`) without the `drop` keys.
pub fn copy_without<'env>(
    env: &'env Env,
    obj: &Object<'env>,
    drop: &[&str],
) -> Result<Object<'env>> {
    // `Object` is a function; read it untyped to reach `Object.assign`.
    let object_ctor: Unknown = env.get_global()?.get_named_property("Object")?;
    // SAFETY: the global `Object` is a function, and a function is an object:
    // the property reads `Object` makes through Node-API accept it.
    let object_ctor: Object = unsafe { object_ctor.cast()? };
    let assign: Function<FnArgs<(Object, Object)>, Object> =
        object_ctor.get_named_property("assign")?;
    let mut copy = assign.call((Object::new(env)?, *obj).into())?;
    for key in drop {
        copy.delete_named_property(key)?;
    }
    Ok(copy)
}

/// A core future a promise awaits off the JS thread.
pub trait Work<T>: std::future::Future<Output = crate::error::Result<T>> + Send + 'static {}

impl<T, F> Work<T> for F where
    F: std::future::Future<Output = crate::error::Result<T>> + Send + 'static
{
}

/// A core value a promise resolves with (as JSON text, parsed on the JS thread).
pub trait Resolvable: Serialize + Send + 'static {}

impl<T: Serialize + Send + 'static> Resolvable for T {}

/// What runs on the JS thread when a call settles, before its result is parsed
/// (e.g. removing an abort listener).
pub type OnSettle = Box<dyn FnOnce(&Env)>;

/// The promise of every async method ([`call`] builds it for most): `fut` runs off
/// the JS thread and its value is serialized to JSON text there; on settle,
/// `on_settle` runs, then the text is `JSON.parse`d into the resolved value. A
/// core error rejects with an `Error` carrying its `LCM_…` code.
pub fn promise<'env, T, F>(
    env: &'env Env,
    fut: F,
    on_settle: Option<OnSettle>,
) -> Result<Pending<'env>>
where
    T: Resolvable,
    F: Work<T>,
{
    // A panic anywhere in the call resolves it with `LCM_INTERNAL` (never an
    // unwinding tokio task, never a report on stderr).
    let fut = crate::store::guard::contain_detached("an engine call", fut);
    env.spawn_future_with_callback(
        async move {
            let r = fut.await;
            Ok(r.and_then(|v| {
                serde_json::to_string(&v)
                    .map_err(|e| LcmError::internal(format!("cannot serialize result: {e}")))
            }))
        },
        move |env, r: crate::error::Result<String>| {
            if let Some(f) = on_settle {
                f(env);
            }
            match r {
                Ok(text) => parse(env, &text),
                Err(e) => Err(to_napi_error(env, e)),
            }
        },
    )
}

/// JSON text that becomes a JavaScript value (`JSON.parse`) when a deferred settles.
pub struct JsonText(String);

impl ToNapiValue for JsonText {
    /// `JSON.parse` of the text.
    ///
    /// # Safety
    ///
    /// The trait's contract: `env` is live, on the JS thread.
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        let env = Env::from_raw(env);
        Ok(parse(&env, &val.0)?.raw())
    }
}

/// A promise settled by the returned reply, from whichever thread produces the core
/// result: the result is serialized to JSON text there, and `JSON.parse`d on the JS
/// thread when the promise settles (a core error rejects with its `LCM_…` code). Made
/// for [`crate::store::Store::write_grouped_prepared_then`], whose writer thread settles the
/// promise right after COMMIT, without a hop through the async runtime.
pub fn settled_by_reply<'env, T>(
    env: &'env Env,
) -> Result<(crate::store::group::Reply<T>, Object<'env>)>
where
    T: Resolvable,
{
    let (deferred, promise) = env.create_deferred()?;
    let reply: crate::store::group::Reply<T> = Box::new(move |r: crate::error::Result<T>| {
        let text = r.and_then(|v| {
            serde_json::to_string(&v)
                .map_err(|e| LcmError::internal(format!("cannot serialize result: {e}")))
        });
        deferred.resolve(move |env: Env| match text {
            Ok(t) => Ok(JsonText(t)),
            Err(e) => Err(to_napi_error(&env, e)),
        });
    });
    Ok((reply, promise))
}

/// [`promise`] for a core future with nothing to do on settle.
pub fn resolve_json<'env, T, F>(env: &'env Env, fut: F) -> Result<Pending<'env>>
where
    T: Resolvable,
    F: Work<T>,
{
    promise(env, fut, None)
}

/// The promise every async method returns: it resolves with the `JSON.parse`d
/// result, or rejects with a coded `Error`.
pub type Pending<'env> = PromiseRaw<'env, Unknown<'env>>;

/// What a method reads from its arguments on the JavaScript thread, decoded into
/// the core's input off it (by [`call`], or by the writer thread through
/// [`Input::parser`]): a params object's JSON text ([`Params`]), a positional
/// argument already checked (`crate::error::Result<V>`, from [`string_arg`] or
/// [`id_arg`]), `()` for none, or a pair of those, decoded first to second (the
/// first error wins).
pub trait Input: Send + 'static {
    /// What the core gets.
    type Value;

    /// The core's input; errors name `what` (the JavaScript method).
    fn decode(self, what: &'static str) -> crate::error::Result<Self::Value>;

    /// [`Input::decode`] as a closure, for a core method that parses where it runs
    /// (the writer thread).
    fn parser(
        self,
        what: &'static str,
    ) -> impl FnOnce() -> crate::error::Result<Self::Value> + Send + 'static
    where
        Self: Sized,
    {
        move || self.decode(what)
    }
}

/// A params argument as `JSON.stringify` text, parsed as `P` off the JS thread
/// (`LCM_INVALID_INPUT` naming the method when it does not fit).
pub struct Params<P> {
    json: String,
    shape: std::marker::PhantomData<fn() -> P>,
}

impl<P> Params<P> {
    /// `JSON.stringify(value)`.
    pub fn read<'env>(env: &'env Env, value: Unknown<'env>) -> Result<Self> {
        stringify(env, value).map(Self::text)
    }

    /// An optional argument: `JSON.stringify(value)`, `null` when absent.
    pub fn optional<'env>(env: &'env Env, value: Option<Unknown<'env>>) -> Result<Self> {
        match value {
            Some(v) => Self::read(env, v),
            None => Ok(Self::text("null".to_owned())),
        }
    }

    /// JSON text made otherwise (a params object without its JavaScript-only
    /// members).
    pub fn text(json: String) -> Self {
        Params {
            json,
            shape: std::marker::PhantomData,
        }
    }
}

impl<P: serde::de::DeserializeOwned + 'static> Input for Params<P> {
    type Value = P;

    fn decode(self, what: &'static str) -> crate::error::Result<P> {
        crate::params::parse_params(what, &self.json)
    }
}

impl<V: Send + 'static> Input for crate::error::Result<V> {
    type Value = V;

    fn decode(self, _: &'static str) -> crate::error::Result<V> {
        self
    }
}

impl Input for () {
    type Value = ();

    fn decode(self, _: &'static str) -> crate::error::Result<()> {
        Ok(())
    }
}

impl<A: Input, B: Input> Input for (A, B) {
    type Value = (A::Value, B::Value);

    fn decode(self, what: &'static str) -> crate::error::Result<Self::Value> {
        let a = self.0.decode(what)?;
        Ok((a, self.1.decode(what)?))
    }
}

/// The one call path of the engine's async methods: `input` (read on the JS
/// thread) is decoded off it, `f` runs with the engine, and the promise resolves
/// with the result's JSON (see [`promise`]). The work runs contained under the
/// store's guard: a panic rejects with `LCM_INTERNAL` naming `what`, reported to
/// `onLog`.
pub fn call<'env, I, T, F, Fut>(
    env: &'env Env,
    engine: &std::sync::Arc<crate::engine::Engine>,
    what: &'static str,
    input: I,
    f: F,
) -> Result<Pending<'env>>
where
    I: Input,
    T: Resolvable,
    F: FnOnce(std::sync::Arc<crate::engine::Engine>, I::Value) -> Fut + Send + 'static,
    Fut: Work<T>,
{
    call_settling(env, engine, what, input, None, f)
}

/// [`call`] for the usual body, awaiting one engine method:
/// `engine_call!(env, self, "getStats", id => |id| get_stats(id))` decodes `id` off
/// the JS thread and resolves with `engine.get_stats(id).await`.
macro_rules! engine_call {
    ($env:expr, $self:expr, $what:literal, $input:expr =>
     |$p:pat_param| $method:ident($($arg:expr),* $(,)?)) => {
        $crate::binding::js::call($env, &$self.engine, $what, $input, |engine, $p| async move {
            engine.$method($($arg),*).await
        })
    };
}
pub(super) use engine_call;

/// [`call`] with something to run on the JS thread when the call settles (removing
/// an abort listener).
pub fn call_settling<'env, I, T, F, Fut>(
    env: &'env Env,
    engine: &std::sync::Arc<crate::engine::Engine>,
    what: &'static str,
    input: I,
    on_settle: Option<OnSettle>,
    f: F,
) -> Result<Pending<'env>>
where
    I: Input,
    T: Resolvable,
    F: FnOnce(std::sync::Arc<crate::engine::Engine>, I::Value) -> Fut + Send + 'static,
    Fut: Work<T>,
{
    let engine = engine.clone();
    let store = engine.store().clone();
    let work = store.contain(what, async move {
        let value = input.decode(what)?;
        f(engine, value).await
    });
    promise(env, work, on_settle)
}

/// A synchronous function's result as a JavaScript value (JSON text through
/// `JSON.parse`), or a thrown coded error.
pub fn to_js<'env, T: Serialize>(
    env: &'env Env,
    r: crate::error::Result<T>,
) -> Result<Unknown<'env>> {
    let text = r.and_then(|v| {
        serde_json::to_string(&v)
            .map_err(|e| LcmError::internal(format!("cannot serialize result: {e}")))
    });
    parse(env, &coded(env, text)?)
}
