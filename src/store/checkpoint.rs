//! Checkpointing the WAL: a background thread (`lcm-checkpoint`, its own
//! connection) copies committed frames into the database file so the writer does
//! not pay for it, and the writer starts the log over when asked.
//!
//! The checkpointer is paced by the writer's commits. SQLite's WAL hook, called
//! after each commit on the writer's connection, rings a bell
//! ([`Checkpoints::committed`]); a rung checkpointer runs a PASSIVE pass at most
//! every [`Pace::gap`] (10 ms), so each pass copies about that long of commits
//! (the gap bounds how long one pass runs). When the writer and the
//! checkpointer both run, the JavaScript thread may wait for a core, so short
//! passes keep its waits short; passes on the writer thread instead gave no
//! gain and a lower ingest rate (docs/decisions/wal-checkpointing.md). When the
//! writer is idle the thread sleeps and wakes once per [`Pace::idle`] (100 ms)
//! for frames other processes committed to the same file. (Lowering the thread's priority instead, Linux's
//! `SCHED_IDLE`, gave about the same p99, but under a saturated CPU it stalled
//! mid-pass holding the checkpoint lock and the WAL grew to 178 MB; an
//! unprivileged thread cannot raise its priority back.)
//!
//! A PASSIVE checkpoint copies frames but never starts the log over: SQLite does
//! that when a write transaction begins with every frame already copied, which
//! under steady writes never happens (new commits always land between the
//! checkpoint and the next write). The WAL would then grow without bound (≈ 150 MB
//! after 10k messages ingested back to back) and every page read would search
//! more of it. So once the log passes [`WAL_RESTART_FRAMES`], the writer is asked
//! to copy the few frames committed since and wait briefly for readers of the log
//! ([`top_up`], between two of its transactions); its next write transaction
//! then starts the log over.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::busy;
use crate::error::{LcmError, Result};

/// WAL length (frames, ≈ 4 KiB each) past which the checkpointer has the writer
/// start the log over.
pub const WAL_RESTART_FRAMES: i64 = 4096;

/// WAL length past which the writer starts the log over on its own, whatever the
/// checkpointer did: its commits report the log's length (SQLite's WAL hook), so
/// a checkpointer that falls behind (starved of CPU on a saturated machine, or
/// gone) never leaves the log unbounded. The writer then copies every frame
/// itself, a few tens of milliseconds once per 32 MiB of log.
pub const WAL_OVERDUE_FRAMES: i64 = 2 * WAL_RESTART_FRAMES;

/// How long the writer's top-up checkpoint waits for readers of old frames (and
/// another process's writer) before leaving the restart to the next round.
const RESTART_WAIT: Duration = Duration::from_millis(2);

/// When the checkpointer runs a pass.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// Shortest time between two passes while this store's writer commits.
    pub gap: Duration,
    /// Time between two passes while it does not (frames other processes
    /// committed to the same file).
    pub idle: Duration,
}

impl Default for Pace {
    fn default() -> Self {
        Pace {
            gap: Duration::from_millis(10),
            idle: Duration::from_millis(100),
        }
    }
}

#[cfg(test)]
impl Pace {
    /// Passes an hour apart: within a test, a checkpointer that never runs, like
    /// one starved of CPU.
    pub fn never() -> Self {
        let hour = Duration::from_secs(3600);
        Pace {
            gap: hour,
            idle: hour,
        }
    }
}

/// What the writer, the checkpointer and `close` tell each other.
#[derive(Debug, Default)]
pub struct Checkpoints {
    /// The writer committed since the last pass began.
    rung: AtomicBool,
    /// The writer should start the log over (see [`top_up`]).
    restart: AtomicBool,
    /// The checkpointer should end.
    stop: AtomicBool,
    /// The checkpointer thread, once spawned.
    thread: OnceLock<Thread>,
}

impl Checkpoints {
    /// Called after each commit of the writer with the WAL's length in frames:
    /// wakes the checkpointer (once per pass), and asks for the writer's own
    /// restart past [`WAL_OVERDUE_FRAMES`].
    pub fn committed(&self, frames: i64) {
        if frames >= WAL_OVERDUE_FRAMES {
            self.restart.store(true, Ordering::Release);
        }
        if !self.rung.swap(true, Ordering::AcqRel) {
            self.wake();
        }
    }

    /// Ends the checkpointer (it finishes a pass in progress first).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// Starts the checkpointer on `conn` (a write connection of its own).
pub fn spawn(conn: Connection, pace: Pace, signals: Arc<Checkpoints>) -> Result<JoinHandle<()>> {
    let theirs = signals.clone();
    let handle = std::thread::Builder::new()
        .name("lcm-checkpoint".into())
        .spawn(move || run(&conn, pace, &theirs))
        .map_err(LcmError::from)?;
    let _ = signals.thread.set(handle.thread().clone());
    Ok(handle)
}

/// The checkpointer's loop: a pass [`Pace::gap`] after the last one once the
/// writer has committed, else [`Pace::idle`] after it; asleep in between.
fn run(conn: &Connection, pace: Pace, signals: &Checkpoints) {
    let mut last = Instant::now();
    while !signals.stop.load(Ordering::Acquire) {
        let wait = if signals.rung.load(Ordering::Acquire) {
            pace.gap
        } else {
            pace.idle
        };
        let left = wait.saturating_sub(last.elapsed());
        if !left.is_zero() {
            // Woken early by a commit or by `stop`: look again.
            std::thread::park_timeout(left);
            continue;
        }
        signals.rung.store(false, Ordering::Release);
        pass(conn, signals);
        last = Instant::now();
    }
}

/// One PASSIVE checkpoint; asks for the writer's restart when the log is long.
fn pass(conn: &Connection, signals: &Checkpoints) {
    let log = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1));
    if log.is_ok_and(|frames| frames >= WAL_RESTART_FRAMES) {
        signals.restart.store(true, Ordering::Release);
    }
}

/// When the checkpointer (or the writer's WAL hook) asked for it: a RESTART
/// checkpoint on the writer connection, between transactions. After the
/// checkpointer's pass only the frames committed since are left to copy; RESTART
/// then waits (at most [`RESTART_WAIT`]) until no reader still reads from the
/// log, so the next write transaction starts it over. A busy attempt changes
/// nothing and is retried on a later round.
pub fn top_up(conn: &Connection, signals: &Checkpoints) {
    if signals.restart.swap(false, Ordering::AcqRel) {
        let timeout = busy::timeout();
        busy::set_timeout(RESTART_WAIT);
        let _ = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()));
        busy::set_timeout(timeout);
    }
}
