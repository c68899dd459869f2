//! Prompt, bounded waiting for the write lock when several processes share one
//! database file. SQLite's default busy handler sleeps in growing steps of up to
//! 100 ms, so a waiting process often sleeps long after the lock was released
//! while the holder takes it again: four processes lose most of their combined
//! rate. Write connections here retry every [`STEP`] instead (after a short spin),
//! which hands the lock over within a fraction of a millisecond, and give up with
//! `SQLITE_BUSY` (`LCM_DB_BUSY`) only once the configured busy timeout has passed.

use std::cell::Cell;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::Result;

/// The wait between two attempts at the lock after the first spins.
pub const STEP: Duration = Duration::from_micros(250);
/// Attempts made with a bare `yield` before sleeping.
const SPINS: i32 = 4;

thread_local! {
    static TIMEOUT: Cell<Duration> = const { Cell::new(Duration::from_secs(30)) };
    static SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Installs the prompt busy handler on a write connection; `timeout` applies to
/// the calling thread (call [`set_timeout`] on the thread that will use it).
pub fn install(conn: &mut Connection, timeout: Duration) -> Result<()> {
    set_timeout(timeout);
    conn.busy_handler(Some(retry))?;
    Ok(())
}

/// Sets the busy timeout of the write connections used on this thread.
pub fn set_timeout(timeout: Duration) {
    TIMEOUT.with(|t| t.set(timeout));
}

/// The busy timeout of the write connections used on this thread.
pub fn timeout() -> Duration {
    TIMEOUT.with(Cell::get)
}

/// SQLite calls this with the number of earlier attempts for the same lock;
/// returning false ends the wait with `SQLITE_BUSY`.
fn retry(attempt: i32) -> bool {
    let now = Instant::now();
    let since = SINCE.with(|s| {
        if attempt == 0 || s.get().is_none() {
            s.set(Some(now));
        }
        s.get().unwrap_or(now)
    });
    if now.duration_since(since) >= TIMEOUT.with(Cell::get) {
        SINCE.with(|s| s.set(None));
        return false;
    }
    if attempt < SPINS {
        std::thread::yield_now();
    } else {
        std::thread::sleep(STEP);
    }
    true
}

/// `BEGIN IMMEDIATE`: takes the write lock now (waiting through [`retry`]).
pub fn begin_immediate(conn: &Connection) -> Result<()> {
    super::tx::run_cached(conn, "BEGIN IMMEDIATE")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn a_held_lock_gives_db_busy_only_after_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (v);")
            .unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut waiter = Connection::open(&path).unwrap();
        install(&mut waiter, Duration::from_millis(150)).unwrap();
        let t = Instant::now();
        let err =
            crate::error::LcmError::from(waiter.execute_batch("BEGIN IMMEDIATE").unwrap_err());
        assert_eq!(err.code, ErrorCode::DbBusy);
        assert!(t.elapsed() >= Duration::from_millis(150));
        // Released while another thread waits: that waiter gets the lock.
        let p2 = path.clone();
        let h = std::thread::spawn(move || {
            let mut w = Connection::open(&p2).unwrap();
            install(&mut w, Duration::from_secs(30)).unwrap();
            begin_immediate(&w).map(|_| w.execute_batch("COMMIT").is_ok())
        });
        std::thread::sleep(Duration::from_millis(50));
        holder.execute_batch("COMMIT").unwrap();
        assert!(h.join().unwrap().unwrap());
    }
}
