//! Panic containment for store jobs. A panic is a bug, and it must never take the
//! engine down: every job the writer thread or a read connection runs goes through
//! [`Guard::run`], which catches an unwinding panic, rolls back the transaction the
//! job left open, and turns it into `LCM_INTERNAL` naming the operation. The writer
//! thread keeps serving (which matters most for `:memory:` engines: their reads run
//! on it too).
//!
//! Nothing is printed on the host's stderr for a contained panic unless
//! `RUST_BACKTRACE` asks for it (then Rust's usual report, backtrace included, is
//! printed too): the panic is reported as a [`LogRecord`] to the host's log sink
//! (`onLog` in the binding) and in the error's message.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe, PanicHookInfo};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Once, RwLock};

use rusqlite::Connection;
use serde::Serialize;

use crate::error::{LcmError, Result};

/// One event the engine reports to the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogRecord {
    /// `"error"` for a contained panic, `"warn"` for a warning (the database over
    /// `maxDatabaseBytes` with no policy that prunes).
    pub level: &'static str,
    /// The stable code of the error the caller received (`LCM_INTERNAL`).
    pub code: &'static str,
    /// The operation that failed (the Rust function that queued the job).
    pub operation: String,
    /// What happened: the panic message and where it was raised.
    pub message: String,
}

/// Where log records go (the binding forwards them to the host's `onLog`).
pub type LogSink = Arc<dyn Fn(&LogRecord) + Send + Sync>;

/// The kind of job, for the debug panic injection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// A job on the writer connection ([`super::Store::write`]).
    Write = 1,
    /// A read job ([`super::Store::read`]), wherever it runs.
    Read = 2,
}

/// Shared by the store's jobs: the log sink and the debug injection flags.
#[derive(Default)]
pub struct Guard {
    sink: RwLock<Option<LogSink>>,
    inject: AtomicU8,
}

thread_local! {
    /// Set while a guarded job runs on this thread: the hook then records the panic
    /// instead of printing it.
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    /// The last contained panic's message and location on this thread.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once per process) the panic hook that keeps contained panics off
/// stderr; panics outside guarded jobs keep Rust's default report.
pub fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            if !GUARDED.get() {
                return previous(info);
            }
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let what = payload_text(info.payload());
            LAST_PANIC.set(Some(format!("{what}{at}")));
            if backtrace_requested() {
                previous(info);
            }
        }));
    });
}

fn backtrace_requested() -> bool {
    std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0")
}

fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// How a job's operation is named when it panics: computed only then (a type
/// name, cleaned), so queuing a job costs nothing for it.
pub type OpName = fn() -> String;

/// A readable operation name from a job's closure type: crate prefix, generic
/// arguments and `{{closure}}` segments removed (`engine::Engine::grep_json`).
pub fn operation_name<F>() -> String {
    let full = std::any::type_name::<F>();
    let mut plain = String::with_capacity(full.len());
    let mut depth = 0usize;
    for c in full.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    plain
        .split("::")
        .filter(|s| !s.is_empty() && *s != "{{closure}}" && *s != "lcm_native")
        .collect::<Vec<_>>()
        .join("::")
}

/// Rolls back a transaction a panicking job left open on its connection.
pub fn rollback_open_transaction(conn: &Connection) {
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
}

impl Guard {
    /// Sets (or clears) where log records go.
    pub fn set_sink(&self, sink: Option<LogSink>) {
        if let Ok(mut s) = self.sink.write() {
            *s = sink;
        }
    }

    /// Sends a record to the sink, if one is set (a warning of the engine's own).
    pub fn report(&self, record: &LogRecord) {
        let sink = self.sink.read().ok().and_then(|s| s.clone());
        if let Some(sink) = sink {
            sink(record);
        }
    }

    /// Makes the next job of `kind` panic inside its guard, exactly as a bug
    /// would. A test hook: reachable only through `Store::debug_panic_next_job`
    /// (the binding's `_debugPanicNextJob`).
    pub fn inject_panic(&self, kind: JobKind) {
        self.inject.fetch_or(kind as u8, Ordering::AcqRel);
    }

    fn take_injected(&self, kind: JobKind) -> bool {
        self.inject.fetch_and(!(kind as u8), Ordering::AcqRel) & kind as u8 != 0
    }

    /// Runs a job, containing a panic: the result, or `LCM_INTERNAL` naming
    /// `operation` (reported to the log sink too). The caller rolls back the
    /// job's connection when this returns an error from a panic.
    pub fn run<T>(
        &self,
        operation: OpName,
        kind: JobKind,
        job: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        install_hook();
        let was = GUARDED.replace(true);
        let out = catch_unwind(AssertUnwindSafe(|| {
            if self.take_injected(kind) {
                panic!("debug: panic injected into the next {kind:?} job");
            }
            job()
        }));
        GUARDED.set(was);
        out.unwrap_or_else(|payload| Err(self.contained(&operation(), payload.as_ref())))
    }

    fn contained(&self, operation: &str, payload: &(dyn Any + Send)) -> LcmError {
        let what = LAST_PANIC.take().unwrap_or_else(|| payload_text(payload));
        let record = LogRecord {
            level: "error",
            code: crate::error::ErrorCode::Internal.as_str(),
            operation: operation.to_owned(),
            message: format!("panic in {operation}: {what}"),
        };
        let sink = self.sink.read().ok().and_then(|s| s.clone());
        if let Some(sink) = sink {
            // A sink that panics must not escape either.
            let _ = catch_unwind(AssertUnwindSafe(|| sink(&record)));
        }
        LcmError::internal(format!(
            "internal error in {operation} (a bug; its transaction was rolled back and the engine keeps serving): {what}"
        ))
    }
}

/// A future whose panics are contained like a job's: a panic while it is polled
/// resolves it with `LCM_INTERNAL` naming `operation` (reported to the log sink)
/// instead of unwinding into the runtime. For the engine's own async work between
/// store jobs (summarizer pipelines, planning).
pub struct Contained<F> {
    inner: std::pin::Pin<Box<F>>,
    operation: &'static str,
    guard: Arc<Guard>,
}

impl<T, F: std::future::Future<Output = Result<T>>> std::future::Future for Contained<F> {
    type Output = Result<T>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<T>> {
        install_hook();
        let was = GUARDED.replace(true);
        let polled = catch_unwind(AssertUnwindSafe(|| self.inner.as_mut().poll(cx)));
        GUARDED.set(was);
        polled.unwrap_or_else(|payload| {
            std::task::Poll::Ready(Err(self.guard.contained(self.operation, payload.as_ref())))
        })
    }
}

/// [`contain`] with a process-wide guard that has no log sink, for async work
/// that belongs to no store (opening an engine, CLI-style functions).
pub fn contain_detached<T, F>(operation: &'static str, fut: F) -> Contained<F>
where
    F: std::future::Future<Output = Result<T>>,
{
    static DETACHED: std::sync::OnceLock<Arc<Guard>> = std::sync::OnceLock::new();
    contain(DETACHED.get_or_init(Arc::default).clone(), operation, fut)
}

/// Wraps `fut` so that a panic while polling it becomes `LCM_INTERNAL`.
pub fn contain<T, F>(guard: Arc<Guard>, operation: &'static str, fut: F) -> Contained<F>
where
    F: std::future::Future<Output = Result<T>>,
{
    Contained {
        inner: Box::pin(fut),
        operation,
        guard,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_names_drop_closures_and_generics() {
        let f = || 1u8;
        let name = operation_name_of(&f);
        assert!(
            name.ends_with("operation_names_drop_closures_and_generics"),
            "{name}"
        );
        assert!(
            !name.contains("{{") && !name.starts_with("lcm_native"),
            "{name}"
        );
    }

    fn operation_name_of<F>(_: &F) -> String {
        operation_name::<F>()
    }

    #[tokio::test]
    async fn a_panicking_future_resolves_with_an_internal_error() {
        let guard = Arc::new(Guard::default());
        let boom = async {
            tokio::task::yield_now().await;
            if guard.inject.load(Ordering::Acquire) == 0 {
                panic!("async bug");
            }
            Ok(1)
        };
        let e = contain(guard.clone(), "engine::compact", boom)
            .await
            .unwrap_err();
        assert!(e.message.contains("engine::compact") && e.message.contains("async bug"));
        let ok = contain(guard, "engine::compact", async { Ok(2) }).await;
        assert_eq!(ok.unwrap(), 2);
    }

    #[test]
    fn a_panic_becomes_an_internal_error_and_a_log_record() {
        let guard = Guard::default();
        let seen = Arc::new(RwLock::new(Vec::<LogRecord>::new()));
        let s2 = seen.clone();
        guard.set_sink(Some(Arc::new(move |r| s2.write().unwrap().push(r.clone()))));
        let e = guard
            .run::<()>(
                || "test::op".into(),
                JobKind::Write,
                || panic!("boom {}", 42),
            )
            .unwrap_err();
        assert_eq!(e.code, crate::error::ErrorCode::Internal);
        assert!(
            e.message.contains("test::op") && e.message.contains("boom 42"),
            "{}",
            e.message
        );
        let rec = seen.read().unwrap()[0].clone();
        assert_eq!(
            (rec.operation.as_str(), rec.code),
            ("test::op", "LCM_INTERNAL")
        );
        assert!(rec.message.contains("guard.rs"), "{}", rec.message);
        assert_eq!(
            guard
                .run(|| "test::op".into(), JobKind::Write, || Ok(7))
                .unwrap(),
            7
        );
        guard.inject_panic(JobKind::Read);
        assert_eq!(
            guard.run(|| "w".into(), JobKind::Write, || Ok(1)).unwrap(),
            1
        );
        assert!(guard.run(|| "r".into(), JobKind::Read, || Ok(1)).is_err());
        assert_eq!(
            guard.run(|| "r".into(), JobKind::Read, || Ok(2)).unwrap(),
            2
        );
    }
}
