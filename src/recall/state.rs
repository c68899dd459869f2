//! Per-engine recall state: the delegation grants (in memory only), the message
//! catalog and the summary catalog, each behind its own lock.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use super::catalog::Catalog;
use super::grants::Registry;
use super::grep::{self, MessageHit, ScopeStats, SummaryHit};
use super::summary_catalog::SummaryCatalog;
use crate::error::{LcmError, Result};
use crate::store::{messages, Store};

/// Per-engine recall state: the grants (in memory only) and the message catalog.
#[derive(Debug, Default)]
pub struct RecallState {
    grants: Mutex<Registry>,
    /// The in-memory message catalog (see [`Catalog`]).
    pub(crate) catalog: RwLock<Catalog>,
    catalog_sync: Mutex<()>,
    /// The catalog holds every message up to some snapshot (after the first build).
    ready: AtomicBool,
    summaries: Mutex<SummaryCatalog>,
    /// The summary catalog holds every summary up to some snapshot.
    summaries_ready: AtomicBool,
    /// Greps in flight while the catalog is not built ([`RecallState::cold_search`]).
    cold: ColdSearches,
    /// Where the trigram slices of completed blocks are stored (see
    /// [`super::slices`]); none for an engine that keeps none.
    slices_to: SliceStore,
    /// Whether a background pass storing slices runs or is wanted.
    slice_passes: Arc<PassFlags>,
}

/// One background pass storing slices at a time, and none missed: a pass wanted
/// while another runs is run by that one before it stops.
#[derive(Debug, Default)]
struct PassFlags {
    /// A pass is running.
    running: AtomicBool,
    /// A block has completed since the running pass last looked.
    wanted: AtomicBool,
}

/// The store trigram slices are kept in, once set ([`RecallState::store_slices_in`]).
#[derive(Default)]
struct SliceStore(std::sync::OnceLock<Store>);

impl std::fmt::Debug for SliceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "SliceStore(set)"
        } else {
            "SliceStore(unset)"
        })
    }
}

/// The memory a closed engine's recall state held (its catalogs: ≈ 100 MiB per
/// million messages), taken out by [`RecallState::release`] to be dropped where
/// freeing it blocks nobody.
#[derive(Debug, Default)]
pub struct Released {
    _catalog: Catalog,
    _summaries: SummaryCatalog,
}

/// Longest a first catalog build pauses, in all, for searches that answer from
/// SQLite alone: a build competing for the cores with such a search slows it,
/// and the first `grep` after a restart is the one that matters; the budget
/// bounds how much later the catalog is ready for the searches that wait for
/// it (docs/decisions/recall-catalog.md).
pub const MAX_GIVE_WAY: Duration = Duration::from_millis(50);
/// How long a build keeps pausing after a search's answer: the reply still has
/// to be written and cross to the JS thread, which a build running then can
/// delay, and an agent's next call usually follows within a few milliseconds.
pub const GIVE_WAY_AFTER: Duration = Duration::from_millis(10);

/// The count of searches answering from SQLite alone, which a background build
/// gives way to, and when the last one ended.
#[derive(Debug, Default)]
pub struct ColdSearches(Arc<InFlight>);

#[derive(Debug)]
struct InFlight {
    count: AtomicUsize,
    /// When the last counted search ended (µs since `epoch`; `u64::MAX`: none).
    ended_us: AtomicU64,
    epoch: Instant,
    /// A paused build sleeps on `ended` (under `lock`) until a search ends, its
    /// grace period runs out or its budget does: no polling beside the search.
    lock: Mutex<()>,
    ended: Condvar,
    /// Set by [`RecallState::close`]: a build stops giving way, stops at its next
    /// check, and no catalog is built or brought up to date any more.
    closing: AtomicBool,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            count: AtomicUsize::new(0),
            ended_us: AtomicU64::new(u64::MAX),
            epoch: Instant::now(),
            lock: Mutex::new(()),
            ended: Condvar::new(),
            closing: AtomicBool::new(false),
        }
    }
}

impl InFlight {
    fn now_us(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX - 1)
    }

    /// A search is in flight, or one ended less than [`GIVE_WAY_AFTER`] ago.
    fn busy(&self) -> bool {
        self.busy_for().is_some()
    }

    /// How long the build should still pause: `Duration::MAX` while a search is
    /// in flight (until it ends), the rest of the grace period after one ended,
    /// `None` when nothing is to be given way to (or the engine is closing).
    fn busy_for(&self) -> Option<Duration> {
        if self.is_closing() {
            return None;
        }
        if self.count.load(Ordering::Acquire) > 0 {
            return Some(Duration::MAX);
        }
        let ended = self.ended_us.load(Ordering::Acquire);
        let since = Duration::from_micros(self.now_us().saturating_sub(ended));
        (ended != u64::MAX && since < GIVE_WAY_AFTER).then(|| GIVE_WAY_AFTER - since)
    }

    /// Whether [`RecallState::close`] was called.
    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Wakes a paused build to look again (a search ended or stopped counting).
    fn notify(&self) {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.ended.notify_all();
    }
}

/// A search in flight, counted until it drops (its end then starts the
/// [`GIVE_WAY_AFTER`] period) or until it waits for the build
/// ([`ColdSearch::wait_for_build`]).
#[derive(Debug)]
pub struct ColdSearch {
    in_flight: Arc<InFlight>,
    /// Whether its end lets the build pause a little longer.
    answered: bool,
}

impl ColdSearch {
    /// Stops counting a search that is about to wait for the build: the build
    /// goes on at once.
    pub fn wait_for_build(mut self) {
        self.answered = false;
    }
}

impl Drop for ColdSearch {
    fn drop(&mut self) {
        if self.answered {
            let now = self.in_flight.now_us();
            self.in_flight.ended_us.store(now, Ordering::Release);
        }
        self.in_flight.count.fetch_sub(1, Ordering::AcqRel);
        self.in_flight.notify();
    }
}

impl ColdSearches {
    /// Counts a search until the returned guard drops.
    pub fn enter(&self) -> ColdSearch {
        self.0.count.fetch_add(1, Ordering::AcqRel);
        ColdSearch {
            in_flight: self.0.clone(),
            answered: true,
        }
    }

    /// Waits while a search is in flight or has just ended (see
    /// [`GIVE_WAY_AFTER`]), for at most `budget`, and takes the wait off `budget`.
    pub fn give_way(&self, budget: &mut Duration) {
        if budget.is_zero() || !self.0.busy() {
            return;
        }
        let start = Instant::now();
        let mut held = self.0.lock.lock().unwrap_or_else(|e| e.into_inner());
        // Checked under the lock a search's end notifies under: no lost wakeup.
        while let Some(pause) = self.0.busy_for() {
            let Some(left) = budget.checked_sub(start.elapsed()).filter(|l| !l.is_zero()) else {
                break;
            };
            held = match self.0.ended.wait_timeout(held, pause.min(left)) {
                Ok((h, _)) => h,
                Err(e) => e.into_inner().0,
            };
        }
        drop(held);
        *budget = budget.saturating_sub(start.elapsed());
    }
}

/// A background pass storing trigram slices: the store, the flags that let one
/// pass run at a time, and the engine's closing flag.
struct SlicePass {
    store: Store,
    flags: Arc<PassFlags>,
    in_flight: Arc<InFlight>,
}

/// Stores the slices of every completed block not stored yet (see
/// [`super::slices`]), a few blocks per read and per write, on the calling
/// (blocking) thread; stops when the engine closes. While another pass runs, it
/// leaves the work to that one, which looks again before it stops. A failure is
/// left to the next pass: until then the first searches after an open read more
/// of the tail, or answer another way.
fn run_slice_pass(pass: SlicePass, runtime: &tokio::runtime::Handle) {
    pass.flags.run(|| store_missing_slices(&pass, runtime));
}

impl PassFlags {
    /// Runs `work` (false: it failed, stop) unless a run is in progress, and
    /// again for every call made while it runs, until none is left; a call made
    /// during a run returns at once, leaving its work to that run.
    fn run(&self, mut work: impl FnMut() -> bool) {
        self.wanted.store(true, Ordering::Release);
        while !self.running.swap(true, Ordering::AcqRel) {
            let mut ok = true;
            while ok && self.wanted.swap(false, Ordering::AcqRel) {
                ok = work();
            }
            self.running.store(false, Ordering::Release);
            // A call made after the last look, while this run still held the
            // flag, is served now (unless another run took the flag since).
            if !ok || !self.wanted.load(Ordering::Acquire) {
                return;
            }
        }
    }
}

/// Stores the missing complete blocks, a few at a time, until none is missing:
/// false when a read or a write failed, or the engine closes.
fn store_missing_slices(pass: &SlicePass, runtime: &tokio::runtime::Handle) -> bool {
    loop {
        if pass.in_flight.is_closing() {
            return false;
        }
        let in_flight = pass.in_flight.clone();
        let read = runtime.block_on(pass.store.read_apart(move |conn| {
            super::slices::missing_blocks(conn, SLICE_BLOCKS_PER_PASS, || {
                std::thread::yield_now();
                if in_flight.is_closing() {
                    return Err(LcmError::closed());
                }
                Ok(())
            })
        }));
        let blocks = match read {
            Ok(b) if b.is_empty() => return compact_slices(pass, runtime),
            Ok(b) => b,
            Err(_) => return false,
        };
        let write = pass
            .store
            .write_tx(move |tx| super::slices::store(tx, &blocks));
        if runtime.block_on(write).is_err() {
            return false;
        }
    }
}

/// Replaces complete groups of stored blocks with their groups' rows, one group
/// per write (a file whose blocks were stored before groups existed; a write of
/// new blocks does it itself): false when a write failed or the engine closes.
fn compact_slices(pass: &SlicePass, runtime: &tokio::runtime::Handle) -> bool {
    loop {
        if pass.in_flight.is_closing() {
            return false;
        }
        match runtime.block_on(pass.store.write_tx(|tx| super::slices::compact(tx))) {
            Ok(true) => {}
            Ok(false) => return true,
            Err(_) => return false,
        }
    }
}

/// Blocks a background pass computes per read job: bounds how long one job
/// holds a read connection hashing, and the rows one write carries (1,024 rows
/// of 256 bytes per block).
const SLICE_BLOCKS_PER_PASS: usize = 4;

/// The error for a poisoned recall lock.
pub(crate) fn poisoned() -> LcmError {
    LcmError::internal("recall state lock poisoned")
}

impl RecallState {
    /// The grant registry.
    pub(crate) fn grants(&self) -> Result<std::sync::MutexGuard<'_, Registry>> {
        self.grants.lock().map_err(|_| poisoned())
    }

    /// Builds the summary and message catalogs on a read connection in the
    /// background (called right after open, so the first `grep` rarely waits for
    /// them; until they are ready, searches that SQLite answers exactly and
    /// cheaply do not wait at all).
    ///
    /// The build reads on a connection of its own ([`Store::read_apart`]), so
    /// both pooled read connections are free for the first `grep`'s two halves.
    /// It runs on a thread of the runtime's blocking pool, not on one of
    /// its workers: a worker busy building is one the kernel may queue the
    /// workers it wakes behind, and a call made meanwhile would wait for its
    /// first poll.
    pub fn build_in_background(self: &Arc<Self>, store: &Store) {
        let state = self.clone();
        let store = store.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let built = runtime.block_on(store.read_apart(move |conn| {
                drop(state.sync_summaries(conn)?);
                state.sync_catalog(conn)
            }));
            // A failure is not fatal: the first search builds the catalog again.
            drop(built);
        });
    }

    /// Keeps the trigram slices of completed blocks in `store` from now on (see
    /// [`super::slices`]); the engine calls it once, at open.
    pub fn store_slices_in(&self, store: &Store) {
        let _ = self.slices_to.0.set(store.clone());
    }

    /// Starts [`run_slice_pass`] on a blocking-pool thread when a block has
    /// completed between two catalog catch-ups (`before` and `after`: the largest
    /// message id the catalog held then and holds now; the first build stores
    /// what it finds complete itself, see [`RecallState::slice_builder`]).
    fn store_new_slices(&self, before: i64, after: i64) {
        let b = super::slices::BLOCK_IDS;
        if after / b != before / b {
            self.start_slice_pass();
        }
    }

    /// Starts [`run_slice_pass`] on a blocking-pool thread, unless this state
    /// stores no slices.
    fn start_slice_pass(&self) {
        let (Ok(runtime), Some(pass)) = (tokio::runtime::Handle::try_current(), self.slice_pass())
        else {
            return;
        };
        let handle = runtime.clone();
        runtime.spawn_blocking(move || run_slice_pass(pass, &handle));
    }

    /// A builder of the slices `conn`'s file lacks, handing each few blocks to
    /// the writer as they are complete (not waited for), unless this state stores
    /// none.
    fn slice_builder(
        &self,
        conn: &rusqlite::Connection,
    ) -> Option<super::slices::BlockBuilder<impl FnMut(super::slices::SliceRows)>> {
        let store = self.slices_to.0.get()?.clone();
        let write = move |rows: super::slices::SliceRows| {
            drop(store.write_tx(move |tx| super::slices::store(tx, &rows)));
        };
        super::slices::BlockBuilder::new(conn, write).ok()
    }

    /// What a pass storing slices needs, unless this state stores none.
    fn slice_pass(&self) -> Option<SlicePass> {
        Some(SlicePass {
            store: self.slices_to.0.get()?.clone(),
            flags: self.slice_passes.clone(),
            in_flight: self.cold.0.clone(),
        })
    }

    /// While the message catalog is not built yet: a search in flight, which the
    /// build gives way to until the guard drops and for [`GIVE_WAY_AFTER`] after
    /// (see [`MAX_GIVE_WAY`]; on two
    /// cores a running build delays each of the search's thread hops, not only
    /// its SQLite work). Pass it to [`RecallState::search_messages`], which
    /// drops it before waiting for the build.
    pub(crate) fn cold_search(&self) -> Option<ColdSearch> {
        (!self.catalog_ready()).then(|| self.cold.enter())
    }

    /// Whether the message catalog has been built.
    pub(crate) fn catalog_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// The engine is closing: a catalog build in progress stops at its next check
    /// (every [`YIELD_EVERY`](super::catalog::YIELD_EVERY) messages, or at once
    /// when it is paused for a search) instead of running to its end, which
    /// `close` would wait for (≈ 1.5 s at a million messages right after open),
    /// and nothing is built again.
    pub fn close(&self) {
        self.cold.0.closing.store(true, Ordering::Release);
        self.cold.0.notify();
    }

    /// Takes the catalogs out, leaving them empty (call it after
    /// [`RecallState::close`] and once no read runs, so no build refills it), for
    /// the caller to drop off any thread a host waits on.
    pub fn release(&self) -> Released {
        self.ready.store(false, Ordering::Release);
        self.summaries_ready.store(false, Ordering::Release);
        // A poisoned lock still holds its value: take it all the same.
        let mut catalog = self.catalog.write().unwrap_or_else(|e| e.into_inner());
        let mut summaries = self.summaries.lock().unwrap_or_else(|e| e.into_inner());
        Released {
            _catalog: std::mem::take(&mut *catalog),
            _summaries: std::mem::take(&mut *summaries),
        }
    }

    /// `LCM_CLOSED` once [`RecallState::close`] was called.
    fn check_open(&self) -> Result<()> {
        if self.cold.0.is_closing() {
            return Err(LcmError::closed());
        }
        Ok(())
    }

    /// Brings the summary catalog up to date with `conn`'s snapshot and keeps it
    /// locked for the caller.
    fn sync_summaries(
        &self,
        conn: &rusqlite::Connection,
    ) -> Result<std::sync::MutexGuard<'_, SummaryCatalog>> {
        let mut sc = self.summaries.lock().map_err(|_| poisoned())?;
        sc.sync(conn)?;
        self.summaries_ready.store(true, Ordering::Release);
        Ok(sc)
    }

    /// Searches summaries: from their matches alone while the summary catalog is
    /// not loaded yet and the query allows it ([`grep::summaries::search_summaries_cold`]),
    /// else with the catalog brought up to date first (waiting for a load in
    /// progress).
    pub(crate) fn search_summaries(
        &self,
        conn: &rusqlite::Connection,
        q: &grep::Query,
        features: crate::store::Features,
    ) -> Result<(Vec<SummaryHit>, ScopeStats)> {
        if !self.summaries_ready.load(Ordering::Acquire) {
            if let Some(found) = grep::summaries::search_summaries_cold(conn, q, features)? {
                return Ok(found);
            }
        }
        let sc = self.sync_summaries(conn)?;
        grep::search_summaries(conn, &sc, q, features)
    }

    /// Searches messages: from SQLite alone while the catalog is not built yet and
    /// the query allows it ([`grep::cold`]; a build in progress pauses meanwhile
    /// for the caller's `in_flight`, see [`RecallState::cold_search`]), else
    /// through the catalog brought up to date first (waiting for a build in
    /// progress, after dropping `in_flight`).
    pub(crate) fn search_messages(
        &self,
        conn: &rusqlite::Connection,
        q: &grep::Query,
        features: crate::store::Features,
        in_flight: &mut Option<ColdSearch>,
    ) -> Result<(Vec<MessageHit>, ScopeStats)> {
        if !self.catalog_ready() {
            if let Some(found) = grep::cold::search_messages_cold(conn, q, features)? {
                return Ok(found);
            }
        }
        // About to wait for the build, which must not wait for this search.
        if let Some(search) = in_flight.take() {
            search.wait_for_build();
        }
        self.sync_catalog(conn)?;
        let cat = self.catalog.read().map_err(|_| poisoned())?;
        grep::search_messages(conn, &cat, q, features)
    }

    /// Messages whose text was rewritten (committed): their new text's trigrams
    /// join their catalog filters. Waits for a catalog build or catch-up in
    /// progress (it may have read the old text), so call it off the async threads.
    pub fn note_rewritten(&self, rewritten: &[(i64, String)]) -> Result<()> {
        let _one = self.catalog_sync.lock().map_err(|_| poisoned())?;
        let mut cat = self.catalog.write().map_err(|_| poisoned())?;
        for (id, text) in rewritten {
            cat.add_text(*id, text);
        }
        Ok(())
    }

    /// Brings the catalog up to date with `conn`'s snapshot. The first build
    /// fills a new catalog without holding the catalog's lock.
    pub(crate) fn sync_catalog(&self, conn: &rusqlite::Connection) -> Result<()> {
        let _one = self.catalog_sync.lock().map_err(|_| poisoned())?;
        self.check_open()?;
        let (loaded, last) = {
            let c = self.catalog.read().map_err(|_| poisoned())?;
            (c.is_loaded(), c.last_id())
        };
        let max = messages::max_message_id(conn)?;
        if loaded && max <= last {
            return Ok(());
        }
        if loaded {
            self.catalog
                .write()
                .map_err(|_| poisoned())?
                .catch_up(conn)?;
        } else {
            // The first build gives way to searches answering without it, and
            // yields its core every few hundred rows: a thread the kernel queued
            // behind it (a runtime worker woken for a new call) runs then, not at
            // the scheduler's next rebalancing.
            let mut fresh = Catalog::default();
            let mut budget = MAX_GIVE_WAY;
            let between = || {
                self.cold.give_way(&mut budget);
                std::thread::yield_now();
                self.check_open()
            };
            // The build also stores the trigram slices of the complete blocks the
            // file lacks, from the hashes it computes anyway (a slice that cannot
            // be stored is left to a later pass; it never fails the build).
            match self.slice_builder(conn) {
                Some(mut slices) => {
                    // Groups due in a file whose blocks were all stored before
                    // groups existed (a build storing blocks forms them itself).
                    let due = super::slices::compaction_due(conn).unwrap_or(false);
                    fresh.catch_up_into(conn, between, &mut slices)?;
                    slices.finish(fresh.last_id());
                    if due {
                        self.start_slice_pass();
                    }
                }
                None => drop(fresh.catch_up_with(conn, between)?),
            }
            let mut installed = self.catalog.write().map_err(|_| poisoned())?;
            // Checked under the lock `release` takes the catalog under: a build
            // that ends as the engine closes drops its catalog here.
            self.check_open()?;
            *installed = fresh;
        }
        self.ready.store(true, Ordering::Release);
        if loaded {
            self.store_new_slices(last, max);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass wanted while another runs is not lost: the running one does the
    /// work again before it stops, and a pass that failed stops.
    #[test]
    fn a_slice_pass_wanted_while_one_runs_is_run_by_it() {
        let flags = PassFlags::default();
        let mut runs = 0;
        flags.run(|| {
            runs += 1;
            if runs < 3 {
                // A block completes meanwhile: that call returns at once.
                let mut inner = 0;
                flags.run(|| {
                    inner += 1;
                    true
                });
                assert_eq!(inner, 0, "one pass at a time");
            }
            true
        });
        assert_eq!(runs, 3, "once, then once per call made during a run");
        assert!(!flags.running.load(Ordering::Acquire));
        // Another thread's call leaves only its flag (its run finds this one running).
        let late = PassFlags::default();
        let mut runs = 0;
        late.run(|| {
            runs += 1;
            if runs == 1 {
                late.wanted.store(true, Ordering::Release);
            }
            true
        });
        assert_eq!(runs, 2);
        // A failed pass stops, leaving later calls to start again.
        let failing = PassFlags::default();
        let mut runs = 0;
        failing.run(|| {
            runs += 1;
            failing.wanted.store(true, Ordering::Release);
            false
        });
        assert_eq!(runs, 1);
        assert!(!failing.running.load(Ordering::Acquire));
    }

    #[test]
    fn a_build_gives_way_while_a_search_is_in_flight() {
        let cold = ColdSearches::default();
        // Nothing in flight: no wait, nothing spent.
        let mut budget = Duration::from_secs(1);
        cold.give_way(&mut budget);
        assert_eq!(budget, Duration::from_secs(1));
        // A search ends after 30 ms: the build waits for it, and no longer.
        let done = Arc::new(AtomicBool::new(false));
        let search = {
            let (in_flight, done) = (cold.enter(), done.clone());
            std::thread::spawn(move || {
                let _in_flight = in_flight;
                std::thread::sleep(Duration::from_millis(30));
                done.store(true, Ordering::Release);
            })
        };
        cold.give_way(&mut budget);
        assert!(
            done.load(Ordering::Acquire),
            "gave way until the search ended"
        );
        assert!(budget < Duration::from_secs(1), "the wait was spent");
        search.join().unwrap();
        assert_eq!(cold.0.count.load(Ordering::Acquire), 0);
    }

    /// An in-memory database of `n` indexed user messages (`alpha <i>`).
    fn database_of(n: usize) -> (rusqlite::Connection, crate::store::Features) {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        let features = crate::store::migrate::migrate(&mut conn).unwrap();
        crate::store::messages::insert_user_texts(&mut conn, (0..n).map(|i| format!("alpha {i}")))
            .unwrap();
        crate::store::fts_lag::FtsLag::new(true)
            .catch_up(&mut conn)
            .unwrap();
        (conn, features)
    }

    /// A search whose cold path declines stops counting before it waits for the
    /// build (else the build would give way to the search waiting for it).
    #[test]
    fn a_search_that_needs_the_catalog_stops_counting_before_it_waits() {
        use crate::recall::grep::{build_query, Filter, Mode, Sort};
        let (conn, features) = database_of(1_100);
        let state = RecallState::default();
        let mut in_flight = state.cold_search();
        assert!(in_flight.is_some());
        // Hybrid order over more than 1,000 matches: the catalog's to answer.
        let q = build_query("alpha", Mode::FullText, Sort::Hybrid, 5, Filter::default());
        let (hits, stats) = state
            .search_messages(&conn, &q.unwrap(), features, &mut in_flight)
            .unwrap();
        assert!(in_flight.is_none());
        assert_eq!(state.cold.0.count.load(Ordering::Acquire), 0);
        assert!(!state.cold.0.busy(), "no pause after a search that waited");
        assert_eq!((hits.len(), stats.indexed_messages), (5, Some(1_100)));
        assert!(
            state.cold_search().is_none(),
            "built: nothing to give way to"
        );
    }

    #[test]
    fn a_build_keeps_giving_way_just_after_a_search_and_then_goes_on() {
        let cold = ColdSearches::default();
        drop(cold.enter());
        let mut budget = Duration::from_secs(1);
        let start = Instant::now();
        cold.give_way(&mut budget);
        let waited = start.elapsed();
        assert!(waited >= GIVE_WAY_AFTER / 2, "{waited:?}");
        assert!(waited < Duration::from_millis(500), "{waited:?}");
        // Past the grace period nothing is waited for, nothing spent.
        let left = budget;
        cold.give_way(&mut budget);
        assert_eq!(budget, left);
    }

    /// A paused build sleeps until the search's end wakes it (then the grace
    /// period), not until its budget runs out; a search that stops counting to
    /// wait for the build wakes it too.
    #[test]
    fn a_paused_build_is_woken_when_the_search_ends() {
        for answered in [true, false] {
            let cold = ColdSearches::default();
            let in_flight = cold.enter();
            let search = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                if answered {
                    drop(in_flight);
                } else {
                    in_flight.wait_for_build();
                }
            });
            let mut budget = Duration::from_secs(5);
            let start = Instant::now();
            cold.give_way(&mut budget);
            let waited = start.elapsed();
            search.join().unwrap();
            assert!(waited >= Duration::from_millis(30), "{waited:?}");
            assert!(waited < Duration::from_secs(2), "woken, {waited:?}");
            assert!(!cold.0.busy() || answered);
        }
    }

    /// Closing stops a build, which then installs nothing; after that no catalog
    /// is built, and `release` empties what was built.
    #[test]
    fn closing_stops_a_build_and_nothing_is_built_after() {
        let (conn, _) = database_of(1_100);
        let built = RecallState::default();
        built.sync_catalog(&conn).unwrap();
        assert!(built.catalog_ready());
        built.close();
        let released = built.release();
        assert!(
            !released._catalog.is_empty(),
            "the built catalog is handed out"
        );
        assert!(!built.catalog_ready());
        assert!(!built.catalog.read().unwrap().is_loaded());
        let err = built.sync_catalog(&conn).unwrap_err();
        assert_eq!(err.code, crate::error::ErrorCode::Closed);
        assert!(
            !built.catalog.read().unwrap().is_loaded(),
            "not built again"
        );

        // A first build in progress: wherever it is when the engine closes
        // (not started, reading, or done and waiting to install its catalog,
        // which this read lock holds off), it ends with `LCM_CLOSED`.
        let state = Arc::new(RecallState::default());
        let held = state.catalog.read().unwrap();
        let build = {
            let state = state.clone();
            let (conn, _) = database_of(1_100);
            std::thread::spawn(move || state.sync_catalog(&conn))
        };
        std::thread::sleep(Duration::from_millis(5));
        state.close();
        drop(held);
        let err = build.join().unwrap().unwrap_err();
        assert_eq!(err.code, crate::error::ErrorCode::Closed);
        assert!(!state.catalog_ready());
        assert!(
            !state.catalog.read().unwrap().is_loaded(),
            "nothing installed"
        );
    }

    /// A build paused for a search in flight wakes when the engine closes.
    #[test]
    fn a_paused_build_is_woken_when_the_engine_closes() {
        let state = Arc::new(RecallState::default());
        let _search = state.cold.enter();
        let closer = {
            let state = state.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                state.close();
            })
        };
        let mut budget = Duration::from_secs(5);
        let start = Instant::now();
        state.cold.give_way(&mut budget);
        let waited = start.elapsed();
        closer.join().unwrap();
        assert!(waited >= Duration::from_millis(30), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "woken, {waited:?}");
    }

    #[test]
    fn giving_way_stops_when_the_budget_is_spent() {
        let cold = ColdSearches::default();
        let _stuck = cold.enter();
        let mut budget = Duration::from_millis(20);
        let start = Instant::now();
        cold.give_way(&mut budget);
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert_eq!(budget, Duration::ZERO);
    }
}
