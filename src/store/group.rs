//! Group commit on the writer thread. Grouped jobs waiting in the queue (ingests of
//! several sessions, unawaited calls), and those that arrive while the group runs
//! ([`run_arriving`]), run in one `BEGIN IMMEDIATE … COMMIT`, each but the first
//! under its own savepoint: a job that fails or panics is rolled back to its
//! savepoint and fails alone, the others commit (the first is alone in the
//! transaction when it runs, which rolls back whole if it fails). Every job's
//! result is delivered only after the group's COMMIT (or, if the COMMIT itself
//! fails, every job gets that error and nothing of the group is stored). One
//! commit then pays the WAL write of the whole group instead of one per job.

use std::sync::{mpsc, Arc};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::guard::{Guard, JobKind, OpName};
use super::tx::run_cached;
use super::Msg;
use crate::error::{LcmError, Result};

/// At most this many jobs share one transaction (bounds the latency of the first
/// job of a group and the size of one commit).
pub const MAX_GROUP: usize = 64;

/// A job of a group: prepared (what needs no connection), run inside the open
/// transaction, then settled after COMMIT.
pub trait GroupJob: Send {
    /// Runs the job's preparation (parsing, validating, mapping: no connection) if
    /// it has one and it has not run yet. The writer calls this for the job that
    /// opens a group before the group's `BEGIN IMMEDIATE`, so the write lock,
    /// which other processes on the same file wait for, is not held meanwhile;
    /// [`GroupJob::run`] calls it for the others.
    fn prepare(&mut self);
    /// Runs the job (inside its savepoint). Returns whether it succeeded.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Delivers the result once the group's transaction has ended: `Ok` when it
    /// committed, the COMMIT (or BEGIN) error otherwise.
    fn settle(self: Box<Self>, outcome: std::result::Result<(), &LcmError>);
}

/// Where a grouped job's result goes once its group's transaction has ended; called
/// on the writer thread.
pub type Reply<T> = Box<dyn FnOnce(Result<T>) + Send>;

/// A grouped job's preparation and its outcome.
enum Prep<X, P> {
    /// Not run yet.
    Pending(P),
    /// Run (or nothing to run): what the write takes.
    Ready(Result<X>),
    /// Taken by the write.
    Taken,
}

struct Grouped<T, X, P, F> {
    prep: Prep<X, P>,
    job: Option<F>,
    guard: Arc<Guard>,
    op: OpName,
    result: Option<Result<T>>,
    /// Taken when the job settles; a job dropped unsettled (its writer gone) answers
    /// `LCM_CLOSED` from its `Drop`, so no caller waits forever.
    reply: Option<Reply<T>>,
}

impl<T, X, P, F> Drop for Grouped<T, X, P, F> {
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                reply(Err(LcmError::closed()))
            }));
        }
    }
}

impl<T, X, P, F> GroupJob for Grouped<T, X, P, F>
where
    T: Send + 'static,
    X: Send + 'static,
    P: FnOnce() -> Result<X> + Send + 'static,
    F: FnOnce(&Connection, X) -> Result<T> + Send + 'static,
{
    fn prepare(&mut self) {
        // Contained like the write itself (LCM_INTERNAL naming the operation).
        self.prep = match std::mem::replace(&mut self.prep, Prep::Taken) {
            Prep::Pending(p) => Prep::Ready(self.guard.run(self.op, JobKind::Write, p)),
            other => other,
        };
    }

    fn run(&mut self, conn: &Connection) -> bool {
        self.prepare();
        let prep = std::mem::replace(&mut self.prep, Prep::Taken);
        let (Some(job), Prep::Ready(input)) = (self.job.take(), prep) else {
            return false;
        };
        // Panics are contained by the one guard (LCM_INTERNAL naming the operation,
        // reported to the log sink); the caller rolls back to the job's savepoint.
        let r = input.and_then(|x| self.guard.run(self.op, JobKind::Write, || job(conn, x)));
        let ok = r.is_ok();
        self.result = Some(r);
        ok
    }

    fn settle(mut self: Box<Self>, outcome: std::result::Result<(), &LcmError>) {
        let r = match (self.result.take(), outcome) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(v)), Ok(())) => Ok(v),
            (_, Err(e)) => Err(e.clone()),
            (None, Ok(())) => Err(LcmError::internal("a grouped write job never ran")),
        };
        // The reply runs on the writer thread: a panic in it must not end the writer.
        if let Some(reply) = self.reply.take() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || reply(r)));
        }
    }
}

/// A reply that sends the result to the returned receiver.
fn to_receiver<T: Send + 'static>() -> (Reply<T>, oneshot::Receiver<Result<T>>) {
    let (tx, rx) = oneshot::channel();
    let reply: Reply<T> = Box::new(move |r| {
        let _ = tx.send(r);
    });
    (reply, rx)
}

/// Wraps a job in two steps for the group runner (see [`GroupJob::prepare`]): the
/// job writes what `prepare` made; the receiver yields its result after COMMIT.
pub fn grouped_prepared<X, T, P, F>(
    guard: Arc<Guard>,
    op: OpName,
    prepare: P,
    job: F,
) -> (Box<dyn GroupJob>, oneshot::Receiver<Result<T>>)
where
    T: Send + 'static,
    X: Send + 'static,
    P: FnOnce() -> Result<X> + Send + 'static,
    F: FnOnce(&Connection, X) -> Result<T> + Send + 'static,
{
    let (reply, rx) = to_receiver();
    (grouped_prepared_then(guard, op, prepare, job, reply), rx)
}

/// Like [`grouped_prepared`], with `reply` receiving the result on the writer
/// thread right after the group's transaction has ended (after COMMIT).
pub fn grouped_prepared_then<X, T, P, F>(
    guard: Arc<Guard>,
    op: OpName,
    prepare: P,
    job: F,
    reply: Reply<T>,
) -> Box<dyn GroupJob>
where
    T: Send + 'static,
    X: Send + 'static,
    P: FnOnce() -> Result<X> + Send + 'static,
    F: FnOnce(&Connection, X) -> Result<T> + Send + 'static,
{
    Box::new(Grouped {
        prep: Prep::Pending(prepare),
        job: Some(job),
        guard,
        op,
        result: None,
        reply: Some(reply),
    })
}

/// Runs `first`, then every grouped job queued behind it or arriving while the
/// group runs (up to [`MAX_GROUP`]), in one transaction, and settles them after
/// it ends; returns the first other message, which must run next.
///
/// Taking in the jobs that arrive meanwhile is what makes the groups whole: when
/// a group settles, its callers send their next jobs one by one (each caller's
/// JavaScript continuation runs in turn), so the queue holds only the first few
/// when the writer looks. Running those while the rest arrive, and committing
/// once the queue is empty, gives one commit per round of the sessions (8 jobs
/// per group for 8 sessions instead of ≈ 4) with no waiting: the writer never
/// idles while a job is queued, and a single caller's job commits as soon as it
/// has run. `first` runs alone in the transaction, so it needs no savepoint: if
/// it fails, the transaction rolls back and the jobs behind it stay queued for
/// the next group.
pub(super) fn run_arriving(
    conn: &mut Connection,
    first: Box<dyn GroupJob>,
    rx: &mpsc::Receiver<Msg>,
) -> Option<Msg> {
    let mut jobs = vec![first];
    let mut next = None;
    let outcome = run_in_transaction(conn, &mut jobs, Some(rx), &mut next);
    settle(jobs, outcome);
    next
}

/// Runs a group in one transaction and settles every job after it ends.
pub fn run(conn: &mut Connection, mut jobs: Vec<Box<dyn GroupJob>>) {
    let outcome = run_in_transaction(conn, &mut jobs, None, &mut None);
    settle(jobs, outcome);
}

/// Delivers every job's result once the group's transaction has ended.
fn settle(jobs: Vec<Box<dyn GroupJob>>, outcome: Result<()>) {
    for job in jobs {
        job.settle(outcome.as_ref().map(|_| ()));
    }
}

/// Runs `jobs` in one transaction; with `arriving`, also the grouped jobs that
/// arrive before it commits (a message of another kind stops that and lands in
/// `next`).
fn run_in_transaction(
    conn: &Connection,
    jobs: &mut Vec<Box<dyn GroupJob>>,
    arriving: Option<&mpsc::Receiver<Msg>>,
    next: &mut Option<Msg>,
) -> Result<()> {
    for job in jobs.iter_mut() {
        job.prepare();
    }
    super::busy::begin_immediate(conn)?;
    let body = run_jobs(conn, jobs).and_then(|committed| {
        if committed {
            if let Some(rx) = arriving {
                run_arrivals(conn, jobs, rx, next)?;
            }
            run_cached(conn, "COMMIT")?;
        }
        Ok(())
    });
    if body.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    body
}

/// Runs grouped jobs as they arrive, each under its savepoint, until the queue
/// is empty, the group is full or another kind of message comes.
fn run_arrivals(
    conn: &Connection,
    jobs: &mut Vec<Box<dyn GroupJob>>,
    rx: &mpsc::Receiver<Msg>,
    next: &mut Option<Msg>,
) -> Result<()> {
    while jobs.len() < MAX_GROUP {
        match rx.try_recv() {
            Ok(Msg::Grouped(mut job)) => {
                run_saved(conn, job.as_mut())?;
                jobs.push(job);
            }
            Ok(other) => {
                *next = Some(other);
                break;
            }
            Err(_) => break,
        }
    }
    Ok(())
}

/// Runs the jobs; returns whether the transaction is still open to commit (a lone
/// failing job rolls the whole transaction back: its savepoint is the transaction).
fn run_jobs(conn: &Connection, jobs: &mut [Box<dyn GroupJob>]) -> Result<bool> {
    if let [only] = jobs {
        if !only.run(conn) {
            conn.execute_batch("ROLLBACK")?;
            return Ok(false);
        }
        return Ok(true);
    }
    for job in jobs.iter_mut() {
        run_saved(conn, job.as_mut())?;
    }
    Ok(true)
}

/// Runs one job of a group under its own savepoint: a failure rolls back only it.
fn run_saved(conn: &Connection, job: &mut dyn GroupJob) -> Result<()> {
    run_cached(conn, "SAVEPOINT lcm_job")?;
    if job.run(conn) {
        run_cached(conn, "RELEASE lcm_job")?;
    } else {
        conn.execute_batch("ROLLBACK TO lcm_job; RELEASE lcm_job")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    /// A grouped job with nothing to prepare, under a fresh guard (panics
    /// contained as on the writer).
    fn grouped<T, F>(job: F) -> (Box<dyn GroupJob>, oneshot::Receiver<Result<T>>)
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, rx) = to_receiver();
        (grouped_then(job, reply), rx)
    }

    /// [`grouped`] with its result handed to `reply`.
    fn grouped_then<T, F>(job: F, reply: Reply<T>) -> Box<dyn GroupJob>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let op: OpName = || "test job".into();
        let write = move |c: &Connection, _: ()| job(c);
        grouped_prepared_then(Arc::new(Guard::default()), op, || Ok(()), write, reply)
    }

    fn setup() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (v TEXT PRIMARY KEY)")
            .unwrap();
        c
    }

    fn insert(v: &'static str) -> impl FnOnce(&Connection) -> Result<usize> + Send + 'static {
        move |c| Ok(c.execute("INSERT INTO t (v) VALUES (?1)", [v])?)
    }

    fn rows(c: &Connection) -> Vec<String> {
        let mut s = c.prepare("SELECT v FROM t ORDER BY v").unwrap();
        s.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn a_failing_job_fails_alone_and_the_others_commit() {
        let mut c = setup();
        let (a, mut ra) = grouped(insert("a"));
        let (b, mut rb) = grouped(|c: &Connection| -> Result<()> {
            c.execute("INSERT INTO t (v) VALUES ('b')", [])?;
            Err(LcmError::invalid("bad message"))
        });
        let (p, mut rp) = grouped(|c: &Connection| -> Result<()> {
            c.execute("INSERT INTO t (v) VALUES ('p')", [])?;
            panic!("boom")
        });
        let (d, mut rd) = grouped(insert("a")); // duplicate key: fails
        let (e, mut re) = grouped(insert("e"));
        run(&mut c, vec![a, b, p, d, e]);
        assert_eq!(rows(&c), vec!["a", "e"]);
        assert_eq!(ra.try_recv().unwrap().unwrap(), 1);
        assert_eq!(
            rb.try_recv().unwrap().unwrap_err().code,
            ErrorCode::InvalidInput
        );
        let panicked = rp.try_recv().unwrap().unwrap_err();
        assert_eq!(panicked.code, ErrorCode::Internal);
        assert!(panicked.message.contains("boom"), "{}", panicked.message);
        assert!(rd.try_recv().unwrap().is_err());
        assert_eq!(re.try_recv().unwrap().unwrap(), 1);
        assert!(c.is_autocommit());
    }

    #[test]
    fn a_lone_failing_job_rolls_back_and_the_connection_stays_usable() {
        let mut c = setup();
        let (b, mut rb) = grouped(|c: &Connection| -> Result<()> {
            c.execute("INSERT INTO t (v) VALUES ('b')", [])?;
            Err(LcmError::invalid("bad"))
        });
        run(&mut c, vec![b]);
        assert!(rb.try_recv().unwrap().is_err());
        assert!(rows(&c).is_empty());
        assert!(c.is_autocommit());
        let (a, mut ra) = grouped(insert("a"));
        run(&mut c, vec![a]);
        assert_eq!(ra.try_recv().unwrap().unwrap(), 1);
        assert_eq!(rows(&c), vec!["a"]);
    }

    /// The first job of a group runs without a savepoint: when it fails, the
    /// transaction rolls back with nothing else in it, and the jobs queued
    /// behind it make the next group, which commits them.
    #[test]
    fn a_failing_first_job_fails_alone_and_leaves_the_queued_ones_to_the_next_group() {
        let mut c = setup();
        let (tx, rx) = mpsc::channel::<Msg>();
        let (b, mut rb) = grouped(insert("b"));
        let (e, mut re) = grouped(insert("e"));
        tx.send(Msg::Grouped(b)).unwrap();
        tx.send(Msg::Grouped(e)).unwrap();
        let (a, mut ra) = grouped(|c: &Connection| -> Result<()> {
            c.execute("INSERT INTO t (v) VALUES ('a')", [])?;
            Err(LcmError::invalid("bad"))
        });
        assert!(run_arriving(&mut c, a, &rx).is_none());
        assert_eq!(
            ra.try_recv().unwrap().unwrap_err().code,
            ErrorCode::InvalidInput
        );
        assert!(rows(&c).is_empty() && c.is_autocommit());
        let Ok(Msg::Grouped(next)) = rx.try_recv() else {
            panic!("the queued jobs are still queued")
        };
        assert!(run_arriving(&mut c, next, &rx).is_none());
        assert_eq!(rb.try_recv().unwrap().unwrap(), 1);
        assert_eq!(re.try_recv().unwrap().unwrap(), 1);
        assert_eq!(rows(&c), vec!["b", "e"]);
    }

    #[test]
    fn no_result_is_delivered_before_the_group_commits() {
        let mut c = setup();
        let (a, mut ra) = grouped(insert("a"));
        // A later job of the same group looks at the first job's receiver while
        // the transaction is still open.
        let (b, mut rb) = grouped(move |_c: &Connection| -> Result<_> {
            let pending = matches!(ra.try_recv(), Err(oneshot::error::TryRecvError::Empty));
            Ok((pending, ra))
        });
        run(&mut c, vec![a, b]);
        let (pending, mut ra) = rb.try_recv().unwrap().unwrap();
        assert!(pending, "a job's result was delivered before COMMIT");
        assert_eq!(ra.try_recv().unwrap().unwrap(), 1);
    }

    #[test]
    fn jobs_that_arrive_while_a_group_runs_join_it() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let mut c = setup();
        let (tx, rx) = mpsc::channel::<Msg>();
        // `b` arrives while `a` runs (as a caller's next job does while the writer is
        // busy) and sees that `a` has not settled yet: both are in one transaction.
        let a_settled = Arc::new(AtomicBool::new(false));
        let seen = a_settled.clone();
        let (b, mut rb) = grouped(move |c: &Connection| -> Result<bool> {
            c.execute("INSERT INTO t (v) VALUES ('b')", [])?;
            Ok(seen.load(Ordering::SeqCst))
        });
        let settled = a_settled.clone();
        let a = grouped_then(
            move |c: &Connection| {
                tx.send(Msg::Grouped(b)).unwrap();
                Ok(c.execute("INSERT INTO t (v) VALUES ('a')", [])?)
            },
            Box::new(move |r: Result<usize>| settled.store(r.is_ok(), Ordering::SeqCst)),
        );
        assert!(run_arriving(&mut c, a, &rx).is_none());
        assert!(rx.try_recv().is_err(), "the arriving job ran in the group");
        assert!(
            !rb.try_recv().unwrap().unwrap(),
            "`a` settled before `b` ran"
        );
        assert!(a_settled.load(Ordering::SeqCst));
        assert_eq!(rows(&c), vec!["a", "b"]);
        assert!(c.is_autocommit());
    }

    #[test]
    fn another_kind_of_message_ends_the_gathering_and_runs_next() {
        let mut c = setup();
        let (tx, rx) = mpsc::channel::<Msg>();
        let (flush_tx, _flush_rx) = oneshot::channel();
        let (later, mut rlater) = grouped(insert("later"));
        let tx2 = tx.clone();
        let (a, mut ra) = grouped(move |c: &Connection| {
            tx2.send(Msg::FlushFts(flush_tx)).unwrap();
            tx2.send(Msg::Grouped(later)).unwrap();
            Ok(c.execute("INSERT INTO t (v) VALUES ('a')", [])?)
        });
        let next = run_arriving(&mut c, a, &rx);
        assert!(
            matches!(next, Some(Msg::FlushFts(_))),
            "the flush runs next"
        );
        assert_eq!(ra.try_recv().unwrap().unwrap(), 1);
        assert_eq!(rows(&c), vec!["a"], "a job behind the flush waits for it");
        // Still queued, unrun; dropped here, it answers LCM_CLOSED.
        assert!(matches!(rx.try_recv(), Ok(Msg::Grouped(_))));
        assert_eq!(
            rlater.try_recv().unwrap().unwrap_err().code,
            ErrorCode::Closed
        );
    }

    #[test]
    fn a_job_dropped_unsettled_answers_closed() {
        let (job, mut rx) = grouped(insert("a"));
        drop(job);
        assert_eq!(rx.try_recv().unwrap().unwrap_err().code, ErrorCode::Closed);
        // A reply that panics does not take the caller (the writer thread) with it.
        let mut c = setup();
        let job = grouped_then(
            insert("b"),
            Box::new(|_r: Result<usize>| panic!("reply failed")),
        );
        run(&mut c, vec![job]);
        assert_eq!(rows(&c), vec!["b"]);
    }

    #[test]
    fn a_failed_commit_fails_every_job_and_stores_nothing() {
        let mut c = setup();
        c.execute_batch(
            "PRAGMA foreign_keys = ON;
             CREATE TABLE parent (id INTEGER PRIMARY KEY);
             CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);",
        )
        .unwrap();
        let (a, mut ra) = grouped(insert("a"));
        // A deferred foreign-key violation: the job succeeds, the COMMIT fails.
        let (b, mut rb) =
            grouped(|c: &Connection| Ok(c.execute("INSERT INTO child (p) VALUES (42)", [])?));
        run(&mut c, vec![a, b]);
        assert!(ra.try_recv().unwrap().is_err());
        assert!(rb.try_recv().unwrap().is_err());
        assert!(rows(&c).is_empty(), "nothing of a failed group is stored");
        assert!(c.is_autocommit());
    }

    /// A job in two steps under a fresh guard.
    fn prepared<X, T, P, F>(prepare: P, job: F) -> (Box<dyn GroupJob>, oneshot::Receiver<Result<T>>)
    where
        T: Send + 'static,
        X: Send + 'static,
        P: FnOnce() -> Result<X> + Send + 'static,
        F: FnOnce(&Connection, X) -> Result<T> + Send + 'static,
    {
        grouped_prepared(
            Arc::new(Guard::default()),
            || "test job".into(),
            prepare,
            job,
        )
    }

    /// The job that opens a group is prepared before its transaction takes the
    /// write lock: another connection to the file can write meanwhile (as another
    /// process would, instead of waiting). The others are prepared inside it.
    #[test]
    fn the_job_that_opens_a_group_is_prepared_before_the_write_lock_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        let mut c = Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (v TEXT PRIMARY KEY)")
            .unwrap();
        // Another writer with no patience: it fails at once if the lock is held.
        let writes_now = move |v: &str| -> bool {
            let other = Connection::open(&path).unwrap();
            other.busy_timeout(std::time::Duration::ZERO).unwrap();
            other.execute("INSERT INTO t (v) VALUES (?1)", [v]).is_ok()
        };
        let (tx, rx) = mpsc::channel::<Msg>();
        let other = writes_now.clone();
        let (b, mut rb) = prepared(
            move || Ok(other("during b's preparation")),
            |c: &Connection, free: bool| {
                c.execute("INSERT INTO t (v) VALUES ('b')", [])?;
                Ok(free)
            },
        );
        let (a, mut ra) = prepared(
            move || Ok(writes_now("during a's preparation")),
            move |c: &Connection, free: bool| {
                tx.send(Msg::Grouped(b)).unwrap();
                c.execute("INSERT INTO t (v) VALUES ('a')", [])?;
                Ok(free)
            },
        );
        assert!(run_arriving(&mut c, a, &rx).is_none());
        assert!(
            ra.try_recv().unwrap().unwrap(),
            "a was prepared under the lock"
        );
        assert!(
            !rb.try_recv().unwrap().unwrap(),
            "b joined the open transaction and was prepared inside it"
        );
        assert_eq!(rows(&c), vec!["a", "b", "during a's preparation"]);
    }

    /// A preparation that fails or panics fails its job alone, like a write that
    /// does, and its write never runs.
    #[test]
    fn a_failing_or_panicking_preparation_fails_its_job_alone() {
        let mut c = setup();
        let (a, mut ra) = prepared(
            || Ok("a"),
            |c: &Connection, v: &str| Ok(c.execute("INSERT INTO t (v) VALUES (?1)", [v])?),
        );
        let (b, mut rb) = prepared(
            || -> Result<&str> { Err(LcmError::invalid("messages[0] has no role")) },
            |_c: &Connection, _v: &str| -> Result<usize> { panic!("the write ran") },
        );
        let (p, mut rp) = prepared(
            || -> Result<&str> { panic!("parse blew up") },
            |_c: &Connection, _v: &str| -> Result<usize> { panic!("the write ran") },
        );
        let (e, mut re) = prepared(
            || Ok("e"),
            |c: &Connection, v: &str| Ok(c.execute("INSERT INTO t (v) VALUES (?1)", [v])?),
        );
        run(&mut c, vec![a, b, p, e]);
        assert_eq!(rows(&c), vec!["a", "e"]);
        assert_eq!(ra.try_recv().unwrap().unwrap(), 1);
        let bad = rb.try_recv().unwrap().unwrap_err();
        assert_eq!(bad.code, ErrorCode::InvalidInput);
        assert!(bad.message.contains("no role"), "{}", bad.message);
        let panicked = rp.try_recv().unwrap().unwrap_err();
        assert_eq!(panicked.code, ErrorCode::Internal);
        assert!(
            panicked.message.contains("parse blew up"),
            "{}",
            panicked.message
        );
        assert_eq!(re.try_recv().unwrap().unwrap(), 1);
        assert!(c.is_autocommit());
        // Opening a group, a failed preparation leaves the queued jobs to the next.
        let (tx, rx) = mpsc::channel::<Msg>();
        let (f, mut rf) = grouped(insert("f"));
        tx.send(Msg::Grouped(f)).unwrap();
        let (first, mut rfirst) = prepared(
            || -> Result<()> { Err(LcmError::invalid("bad batch")) },
            |_c: &Connection, ()| -> Result<()> { panic!("the write ran") },
        );
        assert!(run_arriving(&mut c, first, &rx).is_none());
        assert_eq!(
            rfirst.try_recv().unwrap().unwrap_err().code,
            ErrorCode::InvalidInput
        );
        let Ok(Msg::Grouped(next)) = rx.try_recv() else {
            panic!("the queued job is still queued")
        };
        assert!(run_arriving(&mut c, next, &rx).is_none());
        assert_eq!(rf.try_recv().unwrap().unwrap(), 1);
        assert_eq!(rows(&c), vec!["a", "e", "f"]);
    }
}
