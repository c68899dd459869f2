//! The write-transaction pattern: `BEGIN IMMEDIATE` (the write lock taken up front,
//! so a busy database waits on the busy timeout instead of failing at the first
//! write), the job, `COMMIT` when it succeeds; any error drops the transaction,
//! which rolls it back. Nothing is acknowledged before the commit.

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::Store;
use crate::error::Result;

impl Store {
    /// [`Store::write`] with the job in one IMMEDIATE transaction ([`write_tx`]):
    /// resolves after the commit, or with the job's error after the rollback.
    pub fn write_tx<T, F>(
        &self,
        job: F,
    ) -> impl std::future::Future<Output = Result<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(&Transaction) -> Result<T> + Send + 'static,
    {
        // Named after the caller's job, not this wrapper, for contained panics.
        self.queue(
            super::guard::operation_name::<F>,
            super::JobKind::Write,
            move |conn| write_tx(conn, job),
        )
    }
}

/// Runs `job` in one IMMEDIATE transaction on `conn`; commits when it returns
/// `Ok`, rolls back when it returns `Err` (the error is passed on).
pub fn write_tx<T>(
    conn: &mut Connection,
    job: impl FnOnce(&Transaction) -> Result<T>,
) -> Result<T> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let out = job(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// Runs `job` in one DEFERRED transaction on `conn`: a consistent snapshot of the
/// file without the write lock, so a job that finds nothing to write never waits
/// for another process holding it. For reads only: nothing is written.
pub fn read_tx<T>(conn: &mut Connection, job: impl FnOnce(&Transaction) -> Result<T>) -> Result<T> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
    let out = job(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// Runs one statement without a result through the connection's statement cache:
/// the transaction and savepoint statements of every group, which `execute_batch`
/// would parse and plan again on each run.
pub(super) fn run_cached(conn: &Connection, sql: &str) -> Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::LcmError;

    fn count(conn: &Connection) -> i64 {
        conn.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn commits_on_ok_and_rolls_back_on_err() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute("CREATE TABLE t (x INTEGER)", []).unwrap();
        let n = write_tx(&mut conn, |tx| {
            tx.execute("INSERT INTO t VALUES (1)", [])?;
            Ok(7)
        })
        .unwrap();
        assert_eq!((n, count(&conn)), (7, 1));
        let err = write_tx(&mut conn, |tx| {
            tx.execute("INSERT INTO t VALUES (2)", [])?;
            Err::<(), _>(LcmError::invalid("stop"))
        })
        .unwrap_err();
        assert_eq!(err.message, "stop");
        assert_eq!(count(&conn), 1, "the failed job wrote nothing");
        assert!(conn.is_autocommit(), "no transaction left open");
    }
}
