//! The SQLite store: one writer connection on a dedicated thread, a small pool of
//! reader connections (used in place on the runtime's workers, see
//! [`Store::read`]), and a checkpointer thread.
//!
//! Threading contract (see ARCHITECTURE.md):
//! - [`Store::write`] enqueues its job *when called*, so writes run in call order
//!   (per conversation and overall); the returned future resolves after COMMIT.
//! - [`Store::read`] runs on a pooled read connection (WAL lets readers proceed
//!   while the writer writes). In-memory databases route reads to the writer.
//! - Nothing here ever runs on the JavaScript thread.
//! - A job that panics is contained ([`guard`]): its transaction is rolled back,
//!   its caller gets `LCM_INTERNAL`, and the writer thread keeps serving.

pub mod browse;
pub mod checkpoint;
pub mod claim;
pub mod context;
pub mod conversations;
pub mod copy;
pub mod dag;
pub mod derived;
#[cfg(test)]
mod durability;
pub mod fts_check;
pub mod fts_lag;
pub mod graph;
pub mod guard;
pub mod inspect;
pub mod integrity;
pub mod largefiles;
pub mod links;
pub mod messages;
pub mod migrate;
pub mod operator;
pub mod prune;
pub mod recall;
pub mod retention;
pub mod schema;
#[cfg(test)]
mod seam;
pub mod slices;
pub mod sources;
pub mod space;
pub mod status;
pub mod summaries;
pub mod turns;
pub mod tx;

mod busy;
pub mod group;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{config::DbConfig, Connection, OpenFlags};
use tokio::sync::oneshot;

use crate::error::{ErrorCode, LcmError, Result};
pub use guard::{JobKind, LogRecord, LogSink};
pub use migrate::Features;

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// File path, or `:memory:`.
    pub path: String,
    /// SQLite busy timeout.
    pub busy_timeout: Duration,
    /// Number of read connections (file databases only).
    pub readers: usize,
    /// When the background WAL checkpointer runs.
    pub checkpoint: checkpoint::Pace,
    /// `PRAGMA mmap_size` of every connection, bytes: how much of the database
    /// file each reads through a memory map. 0 (the default) maps nothing; at most
    /// [`MMAP_MAX_BYTES`].
    pub mmap_bytes: i64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            path: ":memory:".into(),
            busy_timeout: Duration::from_secs(30),
            readers: 2,
            checkpoint: checkpoint::Pace::default(),
            mmap_bytes: 0,
        }
    }
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

enum Msg {
    Job(Job),
    Grouped(Box<dyn group::GroupJob>),
    FlushFts(oneshot::Sender<Result<usize>>),
    Close(oneshot::Sender<()>),
}

struct Inner {
    path: String,
    /// `PRAGMA mmap_size` of read connections opened later ([`StoreOptions::mmap_bytes`]).
    mmap_bytes: i64,
    in_memory: bool,
    features: Features,
    closed: AtomicBool,
    writer_tx: Mutex<Option<mpsc::Sender<Msg>>>,
    readers: Mutex<Vec<Connection>>,
    /// Held shared by every read job while it runs; `close` takes it exclusively,
    /// so no read connection outlives `close` (a lingering one would keep the file
    /// open, and a read in progress its snapshot, after the caller was told the
    /// store is closed).
    reads_in_flight: Arc<tokio::sync::RwLock<()>>,
    checkpoints: Arc<checkpoint::Checkpoints>,
    guard: Arc<guard::Guard>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// This copy of the addon's claim on the file ([`claim`]), given up at close.
    claim: Mutex<Option<claim::Claim>>,
}

/// Which read connection a read runs on.
#[derive(Clone, Copy)]
enum Reader {
    /// One from the pool (a new one when the pool is empty).
    Pooled,
    /// A new one, never taken from the pool (see [`Store::read_apart`]).
    Apart,
}

impl Inner {
    /// Runs a read job on this thread on the connection `reader` names, then
    /// returns the connection to the pool (up to 8 are kept).
    fn read_now<T>(
        &self,
        reader: Reader,
        op: guard::OpName,
        job: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T> {
        let pooled = match reader {
            Reader::Pooled => self
                .readers
                .lock()
                .map_err(|_| LcmError::internal("reader pool poisoned"))?
                .pop(),
            Reader::Apart => None,
        };
        let conn = match pooled {
            Some(c) => c,
            None => open_connection(&self.path, Duration::from_secs(30), true, self.mmap_bytes)?,
        };
        let out = self.guard.run(op, JobKind::Read, || job(&conn));
        if out.is_err() {
            guard::rollback_open_transaction(&conn);
        }
        if let Ok(mut pool) = self.readers.lock() {
            if pool.len() < 8 {
                pool.push(conn);
            }
        }
        out
    }
}

/// A handle to the store; cheap to clone, safe to share across threads.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

/// The largest `PRAGMA mmap_size` SQLite accepts (its default `SQLITE_MAX_MMAP_SIZE`
/// on Linux, macOS and Windows, just under 2 GiB); larger requests are clamped to it.
pub const MMAP_MAX_BYTES: i64 = 0x7fff_0000;

/// Page cache of a read connection, KiB.
pub const READER_CACHE_KIB: i64 = 65_536;

/// Page cache of a write connection, KiB. Kept small: every commit ends with
/// SQLite truncating the cache to the file's size, which walks the cache's whole
/// hash table when it holds pages past the end, and that table grows with the
/// cache. The writer's working set is the right-hand edges of a dozen B-trees;
/// pages it misses are read back from the OS page cache.
const WRITER_CACHE_KIB: i64 = 2_048;

/// Prepared statements kept per connection: an ingest alone uses about 40 (its
/// multi-row INSERTs have one statement per row count), compaction, assembly and
/// recall as many again.
const STATEMENT_CACHE: usize = 128;

/// Opens one connection with the engine's settings; `mmap_bytes` is its
/// `PRAGMA mmap_size` ([`StoreOptions::mmap_bytes`]).
fn open_connection(
    path: &str,
    busy: Duration,
    read_only: bool,
    mmap_bytes: i64,
) -> Result<Connection> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI
    };
    let mut conn = Connection::open_with_flags(path, flags).map_err(|e| open_error(path, e))?;
    if read_only {
        conn.busy_timeout(busy).map_err(|e| open_error(path, e))?;
    } else {
        busy::install(&mut conn, busy)?;
    }
    let cache_kib = if read_only {
        READER_CACHE_KIB
    } else {
        WRITER_CACHE_KIB
    };
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY; \
         PRAGMA cache_size = -{cache_kib}; PRAGMA mmap_size = {mmap_bytes};"
    ))
    .map_err(|e| open_error(path, e))?;
    // Plans that never depend on bound values: otherwise a `col = ?` against a table
    // with a partial index (`conversations`, `messages`) marks the statement to be
    // re-prepared on every new binding (SQLite checks whether the value implies the
    // index's WHERE), so every cached statement was parsed and planned again on
    // each execution (several per ingest).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(|e| open_error(path, e))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

fn open_error(path: &str, e: rusqlite::Error) -> LcmError {
    let base = LcmError::from(e);
    let hint = match base.code {
        ErrorCode::DbBusy => "",
        _ if base.message.contains("not a database") || base.message.contains("file is not a database") => {
            " (the file exists but is not a SQLite database; point dbPath at an lcm.db or a new path)"
        }
        _ => " (check that the path is writable and its directory exists)",
    };
    LcmError::new(
        ErrorCode::DbOpen,
        format!("cannot open database {path:?}: {}{hint}", base.message),
    )
}

fn open_error_of(path: &str, e: LcmError) -> LcmError {
    LcmError::new(
        ErrorCode::DbOpen,
        format!("cannot open database {path:?}: {}", e.message),
    )
}

fn prepare_parent_dir(path: &str) -> Result<()> {
    if path == ":memory:" || path.starts_with("file:") {
        return Ok(());
    }
    if let Some(parent) = Path::new(path).parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent).map_err(|e| {
                LcmError::new(
                    ErrorCode::DbOpen,
                    format!("cannot create the directory {parent:?} for the database: {e}"),
                )
            })?;
        }
    }
    Ok(())
}

/// Whether the current task runs on a multi-thread tokio runtime, where
/// `block_in_place` may run a blocking job in place.
fn on_multi_thread_runtime() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Puts the writer's file in WAL mode with SQLite's own checkpoints off: the
/// checkpointer thread runs them, told of each commit's log length by a WAL hook.
fn enable_wal(
    writer: &mut Connection,
    path: &str,
    checkpoints: &Arc<checkpoint::Checkpoints>,
) -> Result<()> {
    let mode: String = writer
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(|e| open_error(path, e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(LcmError::new(
            ErrorCode::DbOpen,
            format!("cannot switch {path:?} to WAL mode (got {mode})"),
        ));
    }
    writer
        .execute_batch("PRAGMA wal_autocheckpoint = 0;")
        .map_err(|e| open_error(path, e))?;
    // After the pragma, which replaces any WAL hook.
    let signals = checkpoints.clone();
    writer
        .wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, frames| {
            signals.committed(i64::from(frames));
            Ok(())
        }))
        .map_err(|e| open_error(path, e))
}

/// Migrates the schema at open: a failure is `LCM_DB_OPEN` naming the file, except
/// a busy database, which stays `LCM_DB_BUSY` (another process holds the lock).
fn migrate_on_open(writer: &mut Connection, path: &str) -> Result<Features> {
    migrate::migrate(writer).map_err(|e| {
        let code = if e.code == ErrorCode::DbBusy {
            e.code
        } else {
            ErrorCode::DbOpen
        };
        LcmError::new(
            code,
            format!("cannot migrate database {path:?}: {}", e.message),
        )
    })
}

impl Store {
    /// Opens (creating when needed) and migrates the database. Blocking: call it off
    /// the JavaScript thread.
    pub fn open(opts: StoreOptions) -> Result<Store> {
        let in_memory = opts.path == ":memory:";
        prepare_parent_dir(&opts.path)?;
        let claimed = if in_memory {
            None
        } else {
            claim::acquire(&opts.path)?
        };
        let checkpoints = Arc::new(checkpoint::Checkpoints::default());
        let mut writer = open_connection(&opts.path, opts.busy_timeout, false, opts.mmap_bytes)?;
        // A file this open created is claimed now that it has an identity.
        let claim = match claimed {
            Some(c) => c,
            None if !in_memory => claim::acquire(&opts.path)?.unwrap_or_else(claim::Claim::none),
            None => claim::Claim::none(),
        };
        // Before the first page is written (WAL mode writes the header): a new
        // file gives freed pages back in steps (`space::incremental_vacuum_step`).
        space::incremental_if_new(&writer).map_err(|e| open_error_of(&opts.path, e))?;
        if !in_memory {
            enable_wal(&mut writer, &opts.path, &checkpoints)?;
        }
        let features = migrate_on_open(&mut writer, &opts.path)?;
        let mut readers = Vec::new();
        if !in_memory {
            for _ in 0..opts.readers.max(1) {
                readers.push(open_connection(
                    &opts.path,
                    opts.busy_timeout,
                    true,
                    opts.mmap_bytes,
                )?);
            }
        }
        let (tx, rx) = mpsc::channel::<Msg>();
        let lag = fts_lag::FtsLag::new(features.fts5);
        let guard = Arc::new(guard::Guard::default());
        let writer_guard = guard.clone();
        let writer_checkpoints = checkpoints.clone();
        let busy_timeout = opts.busy_timeout;
        let mut threads = vec![std::thread::Builder::new()
            .name("lcm-writer".into())
            .spawn(move || {
                busy::set_timeout(busy_timeout);
                writer_loop(writer, rx, lag, &writer_guard, &writer_checkpoints)
            })
            .map_err(LcmError::from)?];
        if !in_memory {
            let ckpt = open_connection(&opts.path, opts.busy_timeout, false, opts.mmap_bytes)?;
            threads.push(checkpoint::spawn(
                ckpt,
                opts.checkpoint,
                checkpoints.clone(),
            )?);
        }
        Ok(Store {
            inner: Arc::new(Inner {
                path: opts.path,
                mmap_bytes: opts.mmap_bytes,
                in_memory,
                features,
                closed: AtomicBool::new(false),
                writer_tx: Mutex::new(Some(tx)),
                readers: Mutex::new(readers),
                reads_in_flight: Arc::new(tokio::sync::RwLock::new(())),
                checkpoints,
                guard,
                threads: Mutex::new(threads),
                claim: Mutex::new(Some(claim)),
            }),
        })
    }

    /// The database path this store was opened with.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Optional SQLite features detected at open.
    pub fn features(&self) -> Features {
        self.inner.features
    }

    /// Whether [`Store::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Reports a record to the log sink (the host's `onLog`), if one is set.
    pub fn log(&self, record: &LogRecord) {
        self.inner.guard.report(record);
    }

    /// Sends log records (a contained panic) to `sink` from now on.
    pub fn set_log_sink(&self, sink: Option<LogSink>) {
        self.inner.guard.set_sink(sink);
    }

    /// Wraps an async operation so that a panic while it runs resolves it with
    /// `LCM_INTERNAL` naming `operation`, reported to this store's log sink.
    pub fn contain<T, F>(&self, operation: &'static str, fut: F) -> guard::Contained<F>
    where
        F: std::future::Future<Output = Result<T>>,
    {
        guard::contain(self.inner.guard.clone(), operation, fut)
    }

    /// Test hook: the next job of `kind` panics inside its guard as a bug would
    /// (exposed to JavaScript only as the clearly named `_debugPanicNextJob`).
    pub fn debug_panic_next_job(&self, kind: JobKind) {
        self.inner.guard.inject_panic(kind);
    }

    /// Enqueues a write job now; the future yields its result once it has run
    /// (and, for jobs that commit, after COMMIT). A panic inside the job is
    /// contained: `LCM_INTERNAL` naming the operation, transaction rolled back.
    pub fn write<T, F>(
        &self,
        job: F,
    ) -> impl std::future::Future<Output = Result<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        self.queue(guard::operation_name::<F>, JobKind::Write, job)
    }

    /// Sends a job to the writer thread, guarded (see [`guard`]).
    fn queue<T, F>(
        &self,
        op: guard::OpName,
        kind: JobKind,
        job: F,
    ) -> impl std::future::Future<Output = Result<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let guard = self.inner.guard.clone();
        let sent = self.send(Box::new(move |conn: &mut Connection| {
            let out = guard.run(op, kind, || job(conn));
            if out.is_err() {
                guard::rollback_open_transaction(conn);
            }
            let _ = tx.send(out);
        }));
        async move {
            sent?;
            rx.await.unwrap_or_else(|_| Err(LcmError::closed()))
        }
    }

    /// Enqueues a job that runs inside the writer's *group transaction*: queued
    /// grouped jobs (several sessions, unawaited calls) commit together in one
    /// transaction, each under its own savepoint, so a failing (or panicking) job
    /// rolls back alone while the others commit. The job must not begin or end a
    /// transaction itself. The future resolves only after the group's COMMIT; if
    /// that COMMIT fails, every job of the group fails with its error.
    ///
    /// A job comes in two steps: `prepare` (what needs no connection: parsing,
    /// validating, mapping) and `job`, which writes its output. When the job opens
    /// a group, the writer prepares it before it takes the write lock (see
    /// [`group::GroupJob::prepare`]).
    pub fn write_grouped_prepared<X, T, P, F>(
        &self,
        prepare: P,
        job: F,
    ) -> impl std::future::Future<Output = Result<T>> + Send + 'static
    where
        T: Send + 'static,
        X: Send + 'static,
        P: FnOnce() -> Result<X> + Send + 'static,
        F: FnOnce(&Connection, X) -> Result<T> + Send + 'static,
    {
        let guard = self.inner.guard.clone();
        let op = guard::operation_name::<F>;
        let (job, rx) = group::grouped_prepared(guard, op, prepare, job);
        let sent = self.send_msg(Msg::Grouped(job));
        async move {
            sent?;
            rx.await.unwrap_or_else(|_| Err(LcmError::closed()))
        }
    }

    /// Like [`Store::write_grouped_prepared`], with the result handed to `reply`
    /// on the writer thread as soon as the group's transaction has ended (after
    /// COMMIT), instead of waking a task that waits for it: a caller that settles
    /// a JavaScript promise from `reply` saves a thread hop per call. If the job
    /// cannot be queued (the store is closed), `reply` gets the error at once, on
    /// the calling thread.
    pub fn write_grouped_prepared_then<X, T, P, F>(
        &self,
        prepare: P,
        job: F,
        reply: group::Reply<T>,
    ) where
        T: Send + 'static,
        X: Send + 'static,
        P: FnOnce() -> Result<X> + Send + 'static,
        F: FnOnce(&Connection, X) -> Result<T> + Send + 'static,
    {
        if self.is_closed() {
            return reply(Err(LcmError::closed()));
        }
        let guard = self.inner.guard.clone();
        let op = guard::operation_name::<F>;
        let job = group::grouped_prepared_then(guard, op, prepare, job, reply);
        if let Err((e, Msg::Grouped(job))) = self.try_send(Msg::Grouped(job)) {
            job.settle(Err(&e));
        }
    }

    fn send(&self, job: Job) -> Result<()> {
        self.send_msg(Msg::Job(job))
    }

    fn send_msg(&self, msg: Msg) -> Result<()> {
        self.try_send(msg).map_err(|(e, _)| e)
    }

    /// Queues `msg` for the writer; gives it back with the error when it cannot.
    fn try_send(&self, msg: Msg) -> std::result::Result<(), (LcmError, Msg)> {
        if self.is_closed() {
            return Err((LcmError::closed(), msg));
        }
        let guard = match self.inner.writer_tx.lock() {
            Ok(g) => g,
            Err(_) => return Err((LcmError::internal("writer lock poisoned"), msg)),
        };
        match guard.as_ref() {
            Some(tx) => tx.send(msg).map_err(|e| (LcmError::closed(), e.0)),
            None => Err((LcmError::closed(), msg)),
        }
    }

    /// Makes every message acknowledged so far searchable through `messages_fts`
    /// (indexing is batched off the ingest path; see [`fts_lag`]). Searches call
    /// this first. A read answers whether anything is unindexed (any process's
    /// messages: the watermark is the file's), so the writer is asked only then:
    /// a read costs a fraction of the round trip through the writer thread, which
    /// may be busy with other jobs. Resolves with the number of
    /// messages indexed now.
    pub fn flush_fts(&self) -> impl std::future::Future<Output = Result<usize>> + Send + 'static {
        let store = self.clone();
        async move {
            if !store.inner.features.fts5 {
                return Ok(0);
            }
            if !store.inner.in_memory {
                // Unsure (an unreadable watermark) counts as behind: the writer decides.
                if store.read(fts_lag::caught_up).await.unwrap_or(false) {
                    return Ok(0);
                }
            }
            let (tx, rx) = oneshot::channel();
            store.send_msg(Msg::FlushFts(tx))?;
            rx.await.unwrap_or_else(|_| Err(LcmError::closed()))
        }
    }

    /// Runs a read-only job on a pooled read connection. On a multi-thread
    /// runtime (the addon's) it runs in place (`block_in_place`: the worker hands
    /// its other tasks to another thread first), which spares the two thread
    /// hand-offs of a blocking task — half of a small read's round trip from
    /// JavaScript.
    /// Elsewhere it runs as a blocking task. Either way the caller's task waits:
    /// reads meant to run side by side are spawned as tasks of their own.
    pub async fn read<T, F>(&self, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.read_on(Reader::Pooled, job).await
    }

    /// [`Store::read`] on a read connection of its own, opened for the job, which
    /// then joins the pool: for a long read in the background (the recall
    /// catalogs' build right after open) that must not hold a pooled connection
    /// the calls made meanwhile need. A `grep` of both scopes runs its halves side
    /// by side on two pooled connections; with one held by the build, the first
    /// `grep` after open opened a third on its own path.
    pub async fn read_apart<T, F>(&self, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.read_on(Reader::Apart, job).await
    }

    async fn read_on<T, F>(&self, reader: Reader, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        if self.is_closed() {
            return Err(LcmError::closed());
        }
        let op: guard::OpName = guard::operation_name::<F>;
        if self.inner.in_memory {
            return self.queue(op, JobKind::Read, move |c| job(c)).await;
        }
        let in_flight = self.inner.reads_in_flight.clone().read_owned().await;
        if self.is_closed() {
            return Err(LcmError::closed());
        }
        let inner = self.inner.clone();
        let run = move || {
            let _in_flight = in_flight;
            inner.read_now(reader, op, job)
        };
        if on_multi_thread_runtime() {
            return tokio::task::block_in_place(run);
        }
        tokio::task::spawn_blocking(run)
            .await
            .map_err(|e| LcmError::internal(format!("read task failed: {e}")))?
    }

    /// Copies the database to `dest` with SQLite's online backup API, in steps, on
    /// a read connection of its own and a thread of its own (see
    /// [`space::backup`]); writers keep writing. `close` waits for it.
    pub async fn backup_to(
        &self,
        dest: PathBuf,
        cancelled: Arc<dyn Fn() -> bool + Send + Sync>,
        finish: Arc<space::Finish>,
    ) -> Result<space::BackupReport> {
        if self.is_closed() {
            return Err(LcmError::closed());
        }
        if self.inner.in_memory {
            return Err(LcmError::invalid(
                "backup needs a database file (this engine is in memory)",
            ));
        }
        let in_flight = self.inner.reads_in_flight.clone().read_owned().await;
        if self.is_closed() {
            return Err(LcmError::closed());
        }
        let path = self.inner.path.clone();
        let guard = self.inner.guard.clone();
        tokio::task::spawn_blocking(move || {
            let _in_flight = in_flight;
            guard.run(
                || "store::Store::backup_to".to_owned(),
                JobKind::Read,
                || {
                    let src = open_connection(&path, Duration::from_secs(30), true, 0)?;
                    space::backup(&src, &dest, &*cancelled, &*finish)
                },
            )
        })
        .await
        .map_err(|e| LcmError::internal(format!("backup task failed: {e}")))?
    }

    /// Finishes queued writes, checkpoints the WAL and closes every connection.
    /// Later calls fail with `LCM_CLOSED`. Blocking-free: awaits the writer thread.
    pub async fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner.checkpoints.stop();
        // Reads in progress finish and return their connections (reads that start
        // later see the store closed); the read-only pool closes before the writer,
        // so the last connection to close can checkpoint and remove the WAL.
        let _no_reads = self.inner.reads_in_flight.write().await;
        if let Ok(mut r) = self.inner.readers.lock() {
            r.clear();
        }
        let tx = self.inner.writer_tx.lock().ok().and_then(|mut g| g.take());
        if let Some(tx) = tx {
            let (done_tx, done_rx) = oneshot::channel();
            if tx.send(Msg::Close(done_tx)).is_ok() {
                let _ = done_rx.await;
            }
        }
        let threads: Vec<JoinHandle<()>> = self
            .inner
            .threads
            .lock()
            .map(|mut t| t.drain(..).collect())
            .unwrap_or_default();
        tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await
        .map_err(|e| LcmError::internal(format!("close failed: {e}")))?;
        // Every connection is closed: another copy of the addon may open the file.
        drop(self.inner.claim.lock().ok().and_then(|mut c| c.take()));
        Ok(())
    }

    /// The path of the database file, for file databases.
    pub fn file_path(&self) -> Option<PathBuf> {
        (!self.inner.in_memory).then(|| PathBuf::from(&self.inner.path))
    }
}

/// How long the writer waits for work before catching up on deferred indexing.
const IDLE: Duration = Duration::from_millis(100);

/// How long the writer keeps polling for the next job before it parks.
///
/// An agent's turn loop sends the next job a few tens of microseconds after the
/// last one resolved (the JS side parses the answer and stringifies the next
/// batch). Parked, the writer needs a futex wake from the JS thread and a
/// scheduler wake-up of its own core, which can cost more than the wait itself;
/// polling that briefly (yielding the core to anything else runnable on every
/// round) covers that turnaround, and bounds the CPU a job costs otherwise
/// (docs/decisions/writer-and-group-commit.md).
const POLL_BEFORE_PARK: Duration = Duration::from_micros(100);

/// The next message for the writer: polled for [`POLL_BEFORE_PARK`], then waited
/// for up to [`IDLE`].
fn next_msg(rx: &mpsc::Receiver<Msg>) -> std::result::Result<Msg, mpsc::RecvTimeoutError> {
    let until = Instant::now() + POLL_BEFORE_PARK;
    loop {
        match rx.try_recv() {
            Ok(m) => return Ok(m),
            Err(mpsc::TryRecvError::Disconnected) => {
                return Err(mpsc::RecvTimeoutError::Disconnected)
            }
            Err(mpsc::TryRecvError::Empty) if Instant::now() >= until => {
                return rx.recv_timeout(IDLE)
            }
            Err(mpsc::TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
}

/// The writer thread. Jobs contain their own panics (see [`Store::write`] and
/// [`group`]); the deferred indexing it runs itself is guarded the same way, so
/// nothing a job or a message's text does can end this loop before `close`.
fn writer_loop(
    mut conn: Connection,
    rx: mpsc::Receiver<Msg>,
    mut lag: fts_lag::FtsLag,
    guard: &guard::Guard,
    checkpoints: &checkpoint::Checkpoints,
) {
    let catch_up = |conn: &mut Connection, lag: &mut fts_lag::FtsLag| {
        let r = guard.run(
            || "store::fts_lag::catch_up".into(),
            JobKind::Write,
            || lag.catch_up(conn),
        );
        if r.is_err() {
            guard::rollback_open_transaction(conn);
            lag.reset();
        }
        r
    };
    // Between two jobs: index if enough is pending, start the WAL over if asked.
    let after_write = |conn: &mut Connection, lag: &mut fts_lag::FtsLag| {
        if lag.pending(conn).unwrap_or(0) >= fts_lag::BATCH {
            let _ = catch_up(conn, lag);
        }
        checkpoint::top_up(conn, checkpoints);
    };
    let mut next: Option<Msg> = None;
    loop {
        let msg = match next.take() {
            Some(m) => m,
            None => match next_msg(&rx) {
                Ok(m) => m,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = catch_up(&mut conn, &mut lag);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            },
        };
        match msg {
            Msg::Job(job) => {
                job(&mut conn);
                after_write(&mut conn, &mut lag);
            }
            Msg::Grouped(first) => {
                next = group::run_arriving(&mut conn, first, &rx);
                after_write(&mut conn, &mut lag);
            }
            Msg::FlushFts(reply) => {
                let _ = reply.send(catch_up(&mut conn, &mut lag));
            }
            Msg::Close(done) => {
                while let Ok(m) = rx.try_recv() {
                    match m {
                        Msg::Job(job) => job(&mut conn),
                        Msg::Grouped(job) => group::run(&mut conn, vec![job]),
                        Msg::FlushFts(reply) => {
                            let _ = reply.send(catch_up(&mut conn, &mut lag));
                        }
                        Msg::Close(other) => {
                            let _ = other.send(());
                        }
                    }
                }
                let _ = catch_up(&mut conn, &mut lag);
                // No `PRAGMA optimize`: the engine plans without statistics
                // (`migrate::clear_planner_statistics`).
                let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
                drop(conn);
                let _ = done.send(());
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ingest::map_message;
    use crate::store::conversations::SessionRef;
    use serde_json::json;

    #[test]
    fn cached_statements_are_not_prepared_again_for_each_binding() {
        use rusqlite::{OptionalExtension, StatementStatus};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.db").to_string_lossy().into_owned();
        let mut conn = open_connection(&path, Duration::from_secs(1), false, 0).unwrap();
        migrate::migrate(&mut conn).unwrap();
        // `messages` and `conversations` have partial indexes: without the planner's
        // stability guarantee, SQLite re-prepares these on every new binding.
        let reprepares = |conn: &Connection| {
            [
                "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id = ?1",
                "SELECT session_id FROM conversations WHERE conversation_id = ?1",
            ]
            .iter()
            .map(|sql| {
                let mut stmt = conn.prepare(sql).unwrap();
                for id in 1..=3i64 {
                    let _ = stmt.query_row([id], |_| Ok(())).optional().unwrap();
                }
                stmt.get_status(StatementStatus::RePrepare)
            })
            .sum::<i32>()
        };
        assert_eq!(reprepares(&conn), 0);
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, false)
            .unwrap();
        assert!(reprepares(&conn) > 0, "the reason for the setting is gone");
    }

    #[test]
    fn mmap_max_bytes_is_sqlites_own_ceiling() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db").to_string_lossy().into_owned();
        let conn =
            open_connection(&path, Duration::from_secs(1), false, MMAP_MAX_BYTES + 1).unwrap();
        let bytes: i64 = conn
            .query_row("PRAGMA mmap_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(bytes, MMAP_MAX_BYTES);
    }

    #[test]
    fn writers_keep_a_small_page_cache_and_readers_a_large_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db").to_string_lossy().into_owned();
        for (read_only, kib) in [(false, WRITER_CACHE_KIB), (true, READER_CACHE_KIB)] {
            let conn = open_connection(&path, Duration::from_secs(1), read_only, 0).unwrap();
            let size: i64 = conn
                .query_row("PRAGMA cache_size", [], |r| r.get(0))
                .unwrap();
            assert_eq!(size, -kib, "read_only = {read_only}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_apart_leaves_the_pool_to_other_reads_and_then_joins_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("apart.db").to_string_lossy().into_owned();
        let store = Store::open(StoreOptions {
            path,
            ..StoreOptions::default()
        })
        .unwrap();
        let pooled = |s: &Store| s.inner.readers.lock().unwrap().len();
        assert_eq!(pooled(&store), 2);
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let apart = tokio::spawn({
            let store = store.clone();
            async move {
                store
                    .read_apart(move |c| {
                        started_tx.send(()).unwrap();
                        release_rx.recv().unwrap();
                        Ok(c.query_row("SELECT 7", [], |r| r.get::<_, i64>(0))?)
                    })
                    .await
            }
        });
        tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
            .await
            .unwrap();
        // While it runs, it holds no pooled connection, and reads take theirs.
        assert_eq!(pooled(&store), 2);
        let read = store.read(|c| Ok(c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?));
        assert_eq!(read.await.unwrap(), 1);
        assert_eq!(pooled(&store), 2);
        release_tx.send(()).unwrap();
        assert_eq!(apart.await.unwrap().unwrap(), 7);
        // Its connection then joins the pool.
        assert_eq!(pooled(&store), 3);
        store.close().await.unwrap();
    }

    /// `PRAGMA mmap_size` of the writer, of three read connections opened after
    /// the store (`read_apart`) and of a pooled one.
    async fn mmap_sizes(store: &Store) -> Vec<i64> {
        fn q(c: &Connection) -> Result<i64> {
            Ok(c.query_row("PRAGMA mmap_size", [], |r| r.get(0))?)
        }
        let mut sizes = vec![store.write(|c| q(c)).await.unwrap()];
        for _ in 0..3 {
            sizes.push(store.read_apart(q).await.unwrap());
        }
        sizes.push(store.read(q).await.unwrap());
        sizes
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_map_nothing_unless_asked_and_then_what_was_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db").to_string_lossy().into_owned();
        for (mmap_bytes, expected) in [
            (None, 0),
            (Some(64 << 20), 64 << 20),
            (Some(MMAP_MAX_BYTES), MMAP_MAX_BYTES),
        ] {
            let store = Store::open(StoreOptions {
                path: path.clone(),
                mmap_bytes: mmap_bytes.unwrap_or(StoreOptions::default().mmap_bytes),
                ..StoreOptions::default()
            })
            .unwrap();
            let sizes = mmap_sizes(&store).await;
            assert!(
                sizes.iter().all(|&b| b == expected),
                "mmap_bytes {mmap_bytes:?}: {sizes:?}"
            );
            store.close().await.unwrap();
        }
    }

    /// Writes ≈ 200 MB back to back (commits of ≈ 5 pages, far more than the
    /// restart thresholds) with the checkpointer paced by `checkpoint`, and checks
    /// the WAL's size against `bound` after each tenth of it.
    async fn wal_stays_under(bound: u64, checkpoint: checkpoint::Pace) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db").to_string_lossy().into_owned();
        let store = Store::open(StoreOptions {
            path: path.clone(),
            checkpoint,
            ..StoreOptions::default()
        })
        .unwrap();
        store
            .write(|c| Ok(c.execute_batch("CREATE TABLE scratch (b BLOB)")?))
            .await
            .unwrap();
        let total = 12 * checkpoint::WAL_RESTART_FRAMES as u64 * 4096;
        let (mut written, mut sizes) = (0u64, Vec::new());
        while written < total {
            store
                .write(|c| Ok(c.execute("INSERT INTO scratch (b) VALUES (randomblob(16000))", [])?))
                .await
                .unwrap();
            written += 5 * 4096;
            if written % (total / 10) < 5 * 4096 {
                sizes.push(std::fs::metadata(format!("{path}-wal")).unwrap().len());
            }
        }
        store.close().await.unwrap();
        assert!(
            sizes.iter().all(|&w| w <= bound),
            "WAL sizes {sizes:?} after {written} written"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_starts_over_under_steady_writes() {
        // Without the writer's top-up checkpoint the log never starts over and the
        // file grows to about what was written.
        wal_stays_under(
            3 * checkpoint::WAL_RESTART_FRAMES as u64 * 4096,
            checkpoint::Pace::default(),
        )
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_writer_bounds_the_wal_when_the_checkpointer_gets_no_cpu() {
        // A checkpointer that never runs (as one starved of CPU would): the
        // writer's own restart past WAL_OVERDUE_FRAMES still bounds the log.
        let bound = (checkpoint::WAL_OVERDUE_FRAMES as u64 + 64) * 4120;
        wal_stays_under(bound, checkpoint::Pace::never()).await;
    }

    /// The database file's size once a 1 MB row is committed, after waiting
    /// `wait` with the checkpointer paced by `pace`; and how long `close` took.
    async fn main_file_after_commit(pace: checkpoint::Pace, wait: Duration) -> (u64, Duration) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db").to_string_lossy().into_owned();
        let store = Store::open(StoreOptions {
            path: path.clone(),
            checkpoint: pace,
            ..StoreOptions::default()
        })
        .unwrap();
        store
            .write(|c| {
                c.execute_batch("CREATE TABLE t (b BLOB)")?;
                Ok(c.execute("INSERT INTO t VALUES (randomblob(1000000))", [])?)
            })
            .await
            .unwrap();
        let until = Instant::now() + wait;
        let size = || std::fs::metadata(&path).unwrap().len();
        while size() < 1_000_000 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let grown = size();
        let start = Instant::now();
        store.close().await.unwrap();
        (grown, start.elapsed())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_commit_wakes_the_checkpointer_and_close_wakes_it_to_stop() {
        // No periodic pass: the commit's bell alone has the frames copied into
        // the database file, and close does not wait for the idle pass.
        let pace = checkpoint::Pace {
            idle: checkpoint::Pace::never().idle,
            ..checkpoint::Pace::default()
        };
        let (grown, closing) = main_file_after_commit(pace, Duration::from_secs(10)).await;
        assert!(grown >= 1_000_000, "database file {grown} bytes");
        assert!(closing < Duration::from_secs(5), "close took {closing:?}");
        // Without the bell's pass the frames stay in the log (the test can fail).
        let (kept, closing) =
            main_file_after_commit(checkpoint::Pace::never(), Duration::from_millis(300)).await;
        assert!(kept < 1_000_000, "database file {kept} bytes");
        assert!(closing < Duration::from_secs(5), "close took {closing:?}");
    }

    /// The session the store tests write to.
    fn session() -> SessionRef {
        SessionRef {
            session_id: "s".into(),
            session_key: None,
        }
    }

    /// A store with default options on `lcm.db` in a new temporary directory
    /// (kept alive by the returned guard), and the file's path.
    fn store_on_a_file() -> (tempfile::TempDir, String, Store) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lcm.db").to_string_lossy().into_owned();
        let store = Store::open(StoreOptions {
            path: path.clone(),
            ..StoreOptions::default()
        })
        .unwrap();
        (dir, path, store)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn close_waits_for_reads_in_progress_and_leaves_no_connection() {
        let (_dir, path, store) = store_on_a_file();
        let (started_tx, started_rx) = oneshot::channel();
        let finished = Arc::new(AtomicBool::new(false));
        let done = finished.clone();
        let reader = store.clone();
        let read = tokio::spawn(async move {
            reader
                .read(move |c| {
                    let _ = started_tx.send(());
                    std::thread::sleep(Duration::from_millis(300));
                    done.store(true, Ordering::Release);
                    Ok(c.query_row("SELECT COUNT(*) FROM messages", [], |r| r.get::<_, i64>(0))?)
                })
                .await
        });
        started_rx.await.unwrap();
        store.close().await.unwrap();
        assert!(
            finished.load(Ordering::Acquire),
            "close returned before the read ended"
        );
        assert_eq!(read.await.unwrap().unwrap(), 0);
        // Every connection is closed: the last one removed the WAL.
        assert!(!std::path::Path::new(&format!("{path}-wal")).exists());
        let late = store.read(|c| Ok(c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?));
        assert_eq!(late.await.unwrap_err().code, ErrorCode::Closed);
    }

    /// Statistics taken on a small file (the reference's `PRAGMA optimize` at
    /// close) made the full-text catch-up read all of `messages` at every batch;
    /// open empties them for every connection, and close writes none.
    #[tokio::test]
    async fn open_plans_without_statistics_and_close_takes_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.db").to_string_lossy().into_owned();
        let opts = StoreOptions {
            path: path.clone(),
            ..StoreOptions::default()
        };
        let catch_up_plan = |c: &Connection| -> Result<String> {
            let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {}", fts_lag::CATCH_UP))?;
            let rows = stmt.query_map([0], |r| r.get::<_, String>(3))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?.join("; "))
        };
        let stat_rows = |c: &Connection| -> i64 {
            let tables: Vec<String> = c
                .prepare("SELECT name FROM sqlite_schema WHERE name LIKE 'sqlite_stat%'")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(|t| t.unwrap())
                .collect();
            tables
                .iter()
                .map(|t| {
                    c.query_row(&format!("SELECT COUNT(*) FROM \"{t}\""), [], |r| {
                        r.get::<_, i64>(0)
                    })
                    .unwrap()
                })
                .sum()
        };
        let store = Store::open(opts.clone()).unwrap();
        let batch = vec![map_message(&json!({"role":"user","content":"one"}), None).unwrap()];
        let session = session();
        store
            .write(move |c| messages::insert_batch(c, &session, batch))
            .await
            .unwrap();
        store.close().await.unwrap();
        let plain = Connection::open(&path).unwrap();
        assert_eq!(stat_rows(&plain), 0, "close took statistics");
        // What the reference's close leaves on a one-message file.
        plain.execute_batch("ANALYZE").unwrap();
        assert!(stat_rows(&plain) > 0);
        let stale = catch_up_plan(&plain).unwrap();
        assert!(stale.contains("SCAN messages"), "{stale}");
        drop(plain);

        let store = Store::open(opts).unwrap();
        let seek = "SEARCH messages USING INTEGER PRIMARY KEY (rowid>?)";
        let on_writer = store.write(move |c| catch_up_plan(c)).await.unwrap();
        assert_eq!(on_writer, seek);
        let on_reader = store.read(move |c| catch_up_plan(c)).await.unwrap();
        assert_eq!(on_reader, seek);
        assert_eq!(store.read(move |c| Ok(stat_rows(c))).await.unwrap(), 0);
        store.close().await.unwrap();
    }

    #[tokio::test]
    async fn deferred_fts_is_flushed_before_search_and_caught_up_at_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lcm.db").to_string_lossy().into_owned();
        let opts = StoreOptions {
            path: path.clone(),
            ..StoreOptions::default()
        };
        let store = Store::open(opts.clone()).unwrap();
        let batch = vec![map_message(
            &json!({"role":"user","content":"the zebra code is 42"}),
            None,
        )
        .unwrap()];
        store
            .write(move |c| messages::insert_batch(c, &session(), batch))
            .await
            .unwrap();
        let count = |s: Store| async move {
            s.read(|c| {
                Ok(c.query_row(
                    "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'zebra'",
                    [],
                    |r| r.get::<_, i64>(0),
                )?)
            })
            .await
            .unwrap()
        };
        store.flush_fts().await.unwrap();
        assert_eq!(count(store.clone()).await, 1);
        // Simulate a crash between commit and indexing: rewind the watermark.
        store
            .write(|c| {
                c.execute_batch(
                    "DELETE FROM messages_fts; UPDATE lcm_fts_state SET indexed_upto = 0;",
                )?;
                Ok(())
            })
            .await
            .unwrap();
        store.close().await.unwrap();
        let reopened = Store::open(opts).unwrap();
        reopened.flush_fts().await.unwrap();
        assert_eq!(count(reopened.clone()).await, 1);
        reopened.close().await.unwrap();
    }

    /// With nothing unindexed, a flush is a read and does not queue behind the
    /// writer's jobs; a message another process stored (not indexed there) is
    /// still behind the file's watermark, so the writer indexes it. The writer
    /// is kept busy throughout, so its own idle indexing cannot stand in.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flush_asks_the_writer_only_when_something_is_unindexed() {
        let (_dir, path, store) = store_on_a_file();
        let session = session();
        let message =
            |text: &str| vec![map_message(&json!({"role":"user","content":text}), None).unwrap()];
        let (s, m) = (session.clone(), message("the zebra code is 42"));
        store
            .write(move |c| messages::insert_batch(c, &s, m))
            .await
            .unwrap();
        store.flush_fts().await.unwrap();
        // The writer busy for 600 ms: a flush with nothing to index does not wait.
        let busy = tokio::spawn(store.write(|_| {
            std::thread::sleep(Duration::from_millis(600));
            Ok(())
        }));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let t = std::time::Instant::now();
        assert_eq!(store.flush_fts().await.unwrap(), 0);
        let waited = t.elapsed();
        assert!(waited < Duration::from_millis(300), "{waited:?}");
        // Meanwhile another process stores a message without indexing it: the
        // next flush waits for the writer and indexes exactly that one.
        let mut other = open_connection(&path, Duration::from_secs(5), false, 0).unwrap();
        messages::insert_batch(&mut other, &session, message("the okapi code is 7")).unwrap();
        drop(other);
        assert_eq!(store.flush_fts().await.unwrap(), 1);
        busy.await.unwrap().unwrap();
        let found = store
            .read(|c| {
                Ok(c.query_row(
                    "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'okapi'",
                    [],
                    |r| r.get::<_, i64>(0),
                )?)
            })
            .await
            .unwrap();
        assert_eq!(found, 1);
        store.close().await.unwrap();
    }

    /// Once [`fts_lag::BATCH`] messages are pending, the writer indexes them
    /// after the job that stored them, with no search asking; fewer wait.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_writer_indexes_once_a_batch_is_pending() {
        let (_dir, _path, store) = store_on_a_file();
        let session = session();
        let store_rows = |n: i64| {
            let (store, session) = (store.clone(), session.clone());
            let batch: Vec<_> = (0..n)
                .map(|i| {
                    let m = json!({"role": "user", "content": format!("m{i}")});
                    map_message(&m, None).unwrap()
                })
                .collect();
            store.write(move |c| messages::insert_batch(c, &session, batch))
        };
        let look = || {
            store.write(|c| {
                Ok(c.query_row(
                    "SELECT indexed_upto FROM lcm_fts_state WHERE table_name = 'messages_fts'",
                    [],
                    |r| r.get::<_, i64>(0),
                )?)
            })
        };
        // Every job queued at once behind one that keeps the writer busy, so they
        // run back to back: the writer's idle indexing cannot stand in for the
        // one after a batch's job.
        let busy = store.write(|_| {
            std::thread::sleep(Duration::from_millis(20));
            Ok(())
        });
        let (almost, before, last, after) = (
            store_rows(fts_lag::BATCH - 1),
            look(),
            store_rows(1),
            look(),
        );
        let (b, almost, before, last, after) = tokio::join!(busy, almost, before, last, after);
        b.unwrap();
        almost.unwrap();
        last.unwrap();
        assert_eq!(before.unwrap(), 0);
        assert_eq!(after.unwrap(), fts_lag::BATCH);
        store.close().await.unwrap();
    }

    async fn panics_are_contained_on(path: String) {
        let store = Store::open(StoreOptions {
            path,
            ..StoreOptions::default()
        })
        .unwrap();
        let logged = Arc::new(Mutex::new(Vec::<LogRecord>::new()));
        let sink = logged.clone();
        store.set_log_sink(Some(Arc::new(move |r| {
            sink.lock().unwrap().push(r.clone())
        })));
        let count = || {
            store.read(|c| {
                Ok(c.query_row("SELECT COUNT(*) FROM conversations", [], |r| {
                    r.get::<_, i64>(0)
                })?)
            })
        };
        // A write job that panics halfway through its own transaction.
        let e = store
            .write(|c| -> Result<()> {
                c.execute_batch(
                    "BEGIN; INSERT INTO conversations (session_id) VALUES ('doomed');",
                )?;
                panic!("write job bug");
            })
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Internal);
        assert!(
            e.message.contains("panics_are_contained_on"),
            "{}",
            e.message
        );
        assert_eq!(
            count().await.unwrap(),
            0,
            "the panicking job's insert was rolled back"
        );
        // A read job that panics (on ':memory:' it runs on the writer thread).
        let e = store
            .read(|_| -> Result<()> { panic!("read job bug") })
            .await
            .unwrap_err();
        assert!(e.message.contains("read job bug"), "{}", e.message);
        // The same through the injection hook, for both kinds.
        store.debug_panic_next_job(JobKind::Write);
        assert!(store.write(|_| Ok(())).await.is_err());
        store.debug_panic_next_job(JobKind::Read);
        assert!(count().await.is_err());
        // The engine keeps serving: writes, reads and searches.
        store
            .write(|c| Ok(c.execute("INSERT INTO conversations (session_id) VALUES ('ok')", [])?))
            .await
            .unwrap();
        store.flush_fts().await.unwrap();
        assert_eq!(count().await.unwrap(), 1);
        let records = logged.lock().unwrap().clone();
        assert_eq!(records.len(), 4);
        assert!(records
            .iter()
            .all(|r| r.code == "LCM_INTERNAL" && r.message.contains("panic")));
        store.close().await.unwrap();
    }

    #[tokio::test]
    async fn a_panicking_job_never_takes_a_memory_store_down() {
        panics_are_contained_on(":memory:".into()).await;
    }

    #[tokio::test]
    async fn a_panicking_job_never_takes_a_file_store_down() {
        let dir = tempfile::tempdir().unwrap();
        panics_are_contained_on(dir.path().join("lcm.db").to_string_lossy().into_owned()).await;
    }
}
