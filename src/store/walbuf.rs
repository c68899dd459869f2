//! Fewer system calls per commit: a VFS over the platform's default that gathers
//! the frames a transaction appends to the write-ahead log and hands them to the
//! file in one write when the commit frame is complete.
//!
//! SQLite writes every WAL frame with two `pwrite`s (its 24-byte header, then the
//! page) and an unaligned frame touches two pages of the page cache, so a commit of
//! N pages costs 2N system calls and about 3N page-cache operations; at one commit
//! per turn that was a fifth of the writer thread's time. Gathered, it is one call
//! over about N+1 pages.
//!
//! What reaches the file, and when it is visible, is unchanged:
//! - only appends are gathered: a run starts with a frame header written past the
//!   end of everything this handle has written, and continues only with writes that
//!   follow it exactly; any other write (a header rewritten by a checksum pass, a
//!   page rewritten in place, the log's own header) first writes out the run, then
//!   goes straight to the file;
//! - the run is written out as soon as the page of a commit frame (a header whose
//!   "database size" field is non-zero) joins it, that is inside SQLite's last write
//!   of the commit, before SQLite publishes the new frames in the shared WAL index.
//!   Readers in this or another process (which read only published frames), a crash
//!   after the commit returns, and an acknowledgement after COMMIT all see the file as
//!   without this layer;
//! - every other operation on the log (read, size, truncate, sync, lock, file control,
//!   close, shared memory, mapping) writes out the run first; so does a run reaching
//!   [`MAX_RUN`] bytes (a large transaction spilling pages);
//! - a failed write of the run is reported by the write SQLite is in (an I/O error
//!   it handles as for any failed frame write), and the run is dropped;
//! - the run is written out before the connection releases the log's write lock
//!   (SQLite's `xShmLock` on the database file of the same connection, which is how
//!   this layer pairs each log with its database handle). A transaction that spills
//!   frames and then rolls back never reaches a commit frame: without this, its run
//!   would outlive the lock and land later over frames another connection had
//!   committed at the same offsets. A log whose database handle is not found is
//!   not gathered at all.
//!
//! The database file, journals and everything else pass through untouched.

use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::{Mutex, OnceLock};

use rusqlite::ffi;

/// The VFS name connections open with.
pub const NAME: &CStr = c"lcm-walbuf";

/// Largest run kept before it is written out (bytes).
const MAX_RUN: usize = 4 << 20;
/// Largest single write handed to the wrapped VFS: the unix VFS writes at most
/// 128 KiB - 1 per call (it masks the length to 17 bits, sized for pages).
const MAX_WRITE: usize = (1 << 17) - 4096;
/// A WAL frame header's size; a write of this size appending to the log is a header.
const FRAME_HEADER: usize = 24;
/// The WAL file header's size (written at offset 0 when the log starts over).
const WAL_HEADER: usize = 32;

/// Registers the VFS once per process; `false` when SQLite has no default VFS to
/// wrap (connections then use the default).
pub fn register() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| unsafe { register_once() })
}

struct Vfs {
    vfs: ffi::sqlite3_vfs,
    real: *mut ffi::sqlite3_vfs,
}

// The struct is written once, before registration, and only read afterwards.
unsafe impl Send for Vfs {}
unsafe impl Sync for Vfs {}

static VFS: OnceLock<Box<Vfs>> = OnceLock::new();

unsafe fn register_once() -> bool {
    let real = ffi::sqlite3_vfs_find(ptr::null());
    if real.is_null() {
        return false;
    }
    let mut vfs: ffi::sqlite3_vfs = ptr::read(real);
    vfs.szOsFile = (file_header_size() + (*real).szOsFile as usize) as c_int;
    vfs.zName = NAME.as_ptr();
    vfs.pNext = ptr::null_mut();
    vfs.xOpen = Some(x_open);
    let boxed = VFS.get_or_init(|| Box::new(Vfs { vfs, real }));
    let p = &boxed.vfs as *const ffi::sqlite3_vfs as *mut ffi::sqlite3_vfs;
    ffi::sqlite3_vfs_register(p, 0) == ffi::SQLITE_OK
}

/// Our part of a file handle; the wrapped VFS's handle follows it in the same
/// allocation (SQLite allocates `szOsFile` bytes).
#[repr(C)]
struct File {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// The gathered run, for the log of a WAL database; null otherwise.
    run: *mut Run,
    /// The same connection's other handle: a main database's log, or a log's main
    /// database; null when there is none (yet).
    peer: *mut File,
}

/// The main database handles open through this VFS, keyed by the filename pointer
/// SQLite passed to `xOpen`: each connection's pager owns that memory, and
/// `sqlite3_filename_database` on its log's name returns the same pointer.
static MAIN_DBS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// The registry, usable even if a thread panicked while holding it.
fn main_dbs() -> std::sync::MutexGuard<'static, Vec<(usize, usize)>> {
    MAIN_DBS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A run of appended frames not yet written.
#[derive(Default)]
struct Run {
    start: i64,
    bytes: Vec<u8>,
    /// The run ends with a commit frame's header: write it out after its page.
    commit_header: bool,
    /// The end of the furthest write through this handle: a frame header at or past
    /// it is an append.
    written_end: i64,
}

fn file_header_size() -> usize {
    std::mem::size_of::<File>().div_ceil(8) * 8
}

unsafe fn real_vfs() -> *mut ffi::sqlite3_vfs {
    VFS.get().map_or(ptr::null_mut(), |v| v.real)
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let real_vfs = real_vfs();
    let f = file as *mut File;
    let real = (file as *mut u8).add(file_header_size()) as *mut ffi::sqlite3_file;
    (*f).base.pMethods = ptr::null();
    (*f).real = real;
    (*f).run = ptr::null_mut();
    (*f).peer = ptr::null_mut();
    let Some(open) = (*real_vfs).xOpen else {
        return ffi::SQLITE_CANTOPEN;
    };
    let rc = open(real_vfs, name, real, flags, out_flags);
    if rc != ffi::SQLITE_OK {
        // SQLite closes only what it sees opened: release what the wrapped VFS left.
        if let Some(close) = (*real).pMethods.as_ref().and_then(|m| m.xClose) {
            close(real);
        }
        return rc;
    }
    if (*real).pMethods.is_null() {
        return ffi::SQLITE_CANTOPEN;
    }
    if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 && !name.is_null() {
        main_dbs().push((name as usize, f as usize));
    } else if flags & ffi::SQLITE_OPEN_WAL != 0 && !name.is_null() {
        pair_log(f, name);
    }
    (*f).base.pMethods = &METHODS;
    ffi::SQLITE_OK
}

/// Links log `f` with its connection's main database handle and gives it a run;
/// left ungathered when that handle is not found.
unsafe fn pair_log(f: *mut File, name: ffi::sqlite3_filename) {
    let db_name = ffi::sqlite3_filename_database(name) as usize;
    let db = main_dbs()
        .iter()
        .find(|&&(n, _)| n == db_name)
        .map(|&(_, db)| db as *mut File);
    #[cfg(test)]
    tests::count_wal_open(db.is_some());
    if let Some(db) = db {
        (*db).peer = f;
        (*f).peer = db;
        (*f).run = Box::into_raw(Box::default());
    }
}

/// The wrapped handle, its methods and the run (for a WAL file). Callers hold at
/// most one of these at a time.
unsafe fn parts<'a>(
    file: *mut ffi::sqlite3_file,
) -> (
    *mut ffi::sqlite3_file,
    &'a ffi::sqlite3_io_methods,
    Option<&'a mut Run>,
) {
    let f = file as *mut File;
    let real = (*f).real;
    (real, &*(*real).pMethods, (*f).run.as_mut())
}

/// Writes out the gathered run, if any.
unsafe fn flush(file: *mut ffi::sqlite3_file) -> c_int {
    match parts(file) {
        (real, m, Some(run)) => write_run(real, m, run),
        _ => ffi::SQLITE_OK,
    }
}

/// Hands `run` to the wrapped file (in pieces the wrapped VFS accepts) and empties
/// it, written or not.
unsafe fn write_run(
    real: *mut ffi::sqlite3_file,
    m: &ffi::sqlite3_io_methods,
    run: &mut Run,
) -> c_int {
    if run.bytes.is_empty() {
        return ffi::SQLITE_OK;
    }
    let mut rc = ffi::SQLITE_IOERR_WRITE;
    if let Some(write) = m.xWrite {
        let mut at = run.start;
        for chunk in run.bytes.chunks(MAX_WRITE) {
            #[cfg(test)]
            tests::count_wal_write();
            rc = write(
                real,
                chunk.as_ptr() as *const c_void,
                chunk.len() as c_int,
                at,
            );
            if rc != ffi::SQLITE_OK {
                break;
            }
            at += chunk.len() as i64;
        }
    }
    run.bytes.clear();
    run.commit_header = false;
    rc
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amt: c_int,
    off: i64,
) -> c_int {
    let (real, m, run) = parts(file);
    let Some(write) = m.xWrite else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    let Some(run) = run else {
        return write(real, buf, amt, off);
    };
    let len = amt.max(0) as usize;
    let end = off + len as i64;
    let continues = !run.bytes.is_empty() && off == run.start + run.bytes.len() as i64;
    let starts = run.bytes.is_empty()
        && len == FRAME_HEADER
        && off >= run.written_end
        && off >= WAL_HEADER as i64;
    if !(continues || starts) {
        let rc = write_run(real, m, run);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        // The log starting over: appends begin again right after its header.
        run.written_end = if off == 0 {
            end
        } else {
            run.written_end.max(end)
        };
        #[cfg(test)]
        tests::count_wal_write();
        return write(real, buf, amt, off);
    }
    if starts {
        run.start = off;
    }
    let data = std::slice::from_raw_parts(buf as *const u8, len);
    let after_commit_header = run.commit_header;
    run.bytes.extend_from_slice(data);
    run.written_end = run.written_end.max(end);
    if len == FRAME_HEADER {
        // Bytes 4..8 of a frame header: the database size after a commit, else 0.
        run.commit_header = data[4..8] != [0, 0, 0, 0];
        return ffi::SQLITE_OK;
    }
    run.commit_header = false;
    if after_commit_header || run.bytes.len() >= MAX_RUN {
        return write_run(real, m, run);
    }
    ffi::SQLITE_OK
}

/// Forwards a method to the wrapped handle after writing out the run.
macro_rules! forward {
    ($name:ident, $field:ident, ($($arg:ident : $ty:ty),*), $missing:expr) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            let rc = flush(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            let (real, m, _) = parts(file);
            match m.$field {
                Some(f) => f(real $(, $arg)*),
                None => $missing,
            }
        }
    };
}

forward!(x_read, xRead, (buf: *mut c_void, amt: c_int, off: i64), ffi::SQLITE_IOERR_READ);
forward!(x_truncate, xTruncate, (size: i64), ffi::SQLITE_IOERR_TRUNCATE);
forward!(x_sync, xSync, (flags: c_int), ffi::SQLITE_IOERR_FSYNC);
forward!(x_file_size, xFileSize, (size: *mut i64), ffi::SQLITE_IOERR_FSTAT);
forward!(x_lock, xLock, (level: c_int), ffi::SQLITE_IOERR_LOCK);
forward!(x_unlock, xUnlock, (level: c_int), ffi::SQLITE_IOERR_UNLOCK);
forward!(x_check_reserved_lock, xCheckReservedLock, (out: *mut c_int), ffi::SQLITE_IOERR_CHECKRESERVEDLOCK);
forward!(x_file_control, xFileControl, (op: c_int, arg: *mut c_void), ffi::SQLITE_NOTFOUND);
forward!(x_shm_map, xShmMap, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void), ffi::SQLITE_IOERR_SHMMAP);

/// Forwards a shared-memory lock change (called on a main database handle). Before
/// a lock range starting at the log's write lock (slot 0) is released, the paired
/// log's run is written out: no run outlives the transaction that gathered it.
unsafe extern "C" fn x_shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    let f = file as *mut File;
    if flags & ffi::SQLITE_SHM_UNLOCK != 0 && offset == 0 && !(*f).peer.is_null() {
        // The frames of a run still gathered here are past every commit: written
        // or not, they are dead; a failure to write them changes nothing.
        let _ = flush((*f).peer as *mut ffi::sqlite3_file);
    }
    let (real, m, _) = parts(file);
    match m.xShmLock {
        Some(lock) => lock(real, offset, n, flags),
        None => ffi::SQLITE_IOERR_SHMLOCK,
    }
}
forward!(x_shm_unmap, xShmUnmap, (delete: c_int), ffi::SQLITE_OK);
forward!(x_fetch, xFetch, (off: i64, amt: c_int, out: *mut *mut c_void), {
    *out = ptr::null_mut();
    ffi::SQLITE_OK
});
forward!(x_unfetch, xUnfetch, (off: i64, p: *mut c_void), ffi::SQLITE_OK);

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    let (real, m, _) = parts(file);
    m.xSectorSize.map_or(4096, |f| f(real))
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    let (real, m, _) = parts(file);
    m.xDeviceCharacteristics.map_or(0, |f| f(real))
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    let (real, m, _) = parts(file);
    if let Some(f) = m.xShmBarrier {
        f(real);
    }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    let flushed = flush(file);
    let f = file as *mut File;
    unpair(f);
    if !(*f).run.is_null() {
        drop(Box::from_raw((*f).run));
        (*f).run = ptr::null_mut();
    }
    let (real, m, _) = parts(file);
    let closed = m.xClose.map_or(ffi::SQLITE_OK, |c| c(real));
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

/// Forgets `f` as a main database and unlinks it from its peer. A log whose main
/// database closes first (SQLite closes the log first) writes out its run and is no
/// longer gathered: nothing would tell it when the write lock is released.
unsafe fn unpair(f: *mut File) {
    main_dbs().retain(|&(_, db)| db != f as usize);
    let peer = (*f).peer;
    if peer.is_null() {
        return;
    }
    (*f).peer = ptr::null_mut();
    (*peer).peer = ptr::null_mut();
    if !(*peer).run.is_null() {
        let _ = flush(peer as *mut ffi::sqlite3_file);
        drop(Box::from_raw((*peer).run));
        (*peer).run = ptr::null_mut();
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::{params, Connection, OpenFlags};
    use std::cell::Cell;
    use std::path::Path;

    thread_local! {
        static WAL_WRITES: Cell<usize> = const { Cell::new(0) };
        static UNPAIRED_LOGS: Cell<usize> = const { Cell::new(0) };
    }

    /// Counts a write reaching a log file on this thread.
    pub(super) fn count_wal_write() {
        WAL_WRITES.set(WAL_WRITES.get() + 1);
    }

    /// Counts a log opened on this thread without its main database handle.
    pub(super) fn count_wal_open(paired: bool) {
        if !paired {
            UNPAIRED_LOGS.set(UNPAIRED_LOGS.get() + 1);
        }
    }

    fn open(path: &Path, cache_kib: u32) -> Connection {
        assert!(register());
        let c = Connection::open_with_flags_and_vfs(path, OpenFlags::default(), NAME).unwrap();
        c.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -{cache_kib};
             PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body BLOB NOT NULL);"
        ))
        .unwrap();
        c
    }

    /// A deterministic body of `len` bytes for row `id`.
    fn body(id: i64, len: usize) -> Vec<u8> {
        (0..len).map(|i| (id as usize * 31 + i * 7) as u8).collect()
    }

    /// What a crash now would leave: the database and its log as the OS holds them,
    /// copied without the shared index, opened by plain SQLite (recovery included).
    /// The copy lives as long as the returned directory.
    fn crash_image(db: &Path) -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("image.db");
        std::fs::copy(db, &copy).unwrap();
        let wal = db.with_extension("db-wal");
        if wal.exists() {
            std::fs::copy(&wal, dir.path().join("image.db-wal")).unwrap();
        }
        let conn = Connection::open(&copy).unwrap();
        (dir, conn)
    }

    /// Every committed row, byte for byte, and a sound file.
    fn assert_image_holds(db: &Path, rows: &[(i64, usize)]) {
        let (_dir, image) = crash_image(db);
        let ok: String = image
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let n: i64 = image
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n as usize, rows.len());
        let mut stmt = image.prepare("SELECT body FROM t WHERE id = ?1").unwrap();
        for &(id, len) in rows {
            let got: Vec<u8> = stmt.query_row([id], |r| r.get(0)).unwrap();
            assert!(got == body(id, len), "row {id} differs");
        }
    }

    #[test]
    fn every_commit_is_in_the_file_when_it_returns_through_restarts_of_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let c = open(&db, 2048);
        let mut rows = Vec::new();
        for commit in 0..240i64 {
            let tx = c.unchecked_transaction().unwrap();
            for k in 0..(1 + commit % 4) {
                let id = commit * 10 + k;
                let len = 50 + ((commit * 7919 + k * 104_729) % 20_000) as usize;
                tx.execute(
                    "INSERT INTO t (id, body) VALUES (?1, ?2)",
                    params![id, body(id, len)],
                )
                .unwrap();
                rows.push((id, len));
            }
            tx.commit().unwrap();
            if commit % 60 == 59 {
                c.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
                    .unwrap();
            }
            if commit % 20 == 19 {
                assert_image_holds(&db, &rows);
            }
        }
    }

    #[test]
    fn spilled_rewritten_and_rolled_back_frames_leave_exactly_the_commits() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        // A 64 KiB cache: a multi-megabyte transaction spills pages to the log
        // before its commit, and the updates below rewrite spilled frames in place.
        let c = open(&db, 64);
        let mut rows = Vec::new();
        let tx = c.unchecked_transaction().unwrap();
        for id in 0..1500i64 {
            let len = 3000 + (id as usize % 7) * 100;
            tx.execute(
                "INSERT INTO t (id, body) VALUES (?1, ?2)",
                params![id, body(id, len)],
            )
            .unwrap();
            rows.push((id, len));
        }
        for id in (0..1500i64).step_by(3) {
            let len = 2000;
            tx.execute(
                "UPDATE t SET body = ?2 WHERE id = ?1",
                params![id, body(id + 7, len)],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        let expected: Vec<(i64, usize)> = rows;
        let (_dir, image) = crash_image(&db);
        for id in (0..1500i64).step_by(3) {
            let got: Vec<u8> = image
                .query_row("SELECT body FROM t WHERE id = ?1", [id], |r| r.get(0))
                .unwrap();
            assert!(got == body(id + 7, 2000));
        }
        let n: i64 = image
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n as usize, expected.len());

        // A transaction that spills and rolls back leaves nothing; the next commit lands.
        let tx = c.unchecked_transaction().unwrap();
        for id in 10_000..11_000i64 {
            tx.execute(
                "INSERT INTO t (id, body) VALUES (?1, ?2)",
                params![id, body(id, 4000)],
            )
            .unwrap();
        }
        tx.rollback().unwrap();
        c.execute(
            "INSERT INTO t (id, body) VALUES (?1, ?2)",
            params![20_000, body(20_000, 10)],
        )
        .unwrap();
        let (_dir, image) = crash_image(&db);
        let ok: String = image
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let (n, top): (i64, i64) = image
            .query_row("SELECT COUNT(*), MAX(id) FROM t", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((n as usize, top), (expected.len() + 1, 20_000));
        let none: i64 = image
            .query_row(
                "SELECT COUNT(*) FROM t WHERE id BETWEEN 10000 AND 10999",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(none, 0);
    }

    #[test]
    fn a_rolled_back_spill_never_lands_over_another_connections_commits() {
        for other_is_ours in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("t.db");
            let a = open(&db, 64);
            let b = if other_is_ours {
                open(&db, 2048)
            } else {
                Connection::open(&db).unwrap()
            };
            a.execute("INSERT INTO t (id, body) VALUES (0, x'00')", [])
                .unwrap();
            // An empty log: the rollback below then reads nothing from it, and only
            // the write lock's release tells this layer the transaction is over.
            a.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .unwrap();
            let tx = a.unchecked_transaction().unwrap();
            for id in 10_000..10_300i64 {
                tx.execute(
                    "INSERT INTO t (id, body) VALUES (?1, ?2)",
                    params![id, body(id, 4000)],
                )
                .unwrap();
            }
            tx.rollback().unwrap();
            let mut rows = vec![(0, 1)];
            for id in 1..200i64 {
                b.execute(
                    "INSERT INTO t (id, body) VALUES (?1, ?2)",
                    params![id, body(id, 3000)],
                )
                .unwrap();
                rows.push((id, 3000));
            }
            // The first connection reads and writes again: nothing of its spill lands.
            let n: i64 = a
                .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 200, "other connection ours: {other_is_ours}");
            a.execute(
                "INSERT INTO t (id, body) VALUES (?1, ?2)",
                params![500, body(500, 7000)],
            )
            .unwrap();
            rows.push((500, 7000));
            assert_image_holds(&db, &rows);
            let ok: String = b
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(ok, "ok");
        }
        assert_eq!(
            UNPAIRED_LOGS.get(),
            0,
            "every log found its database handle"
        );
    }

    #[test]
    fn concurrent_writers_spilling_rolling_back_and_checkpointing_keep_every_commit() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        drop(open(&db, 2048));
        let writers: Vec<_> = (0..4i64)
            .map(|w| {
                let db = db.clone();
                std::thread::spawn(move || {
                    let c = open(&db, 64);
                    c.busy_timeout(std::time::Duration::from_secs(20)).unwrap();
                    let mut kept = Vec::new();
                    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (w as u64 + 1);
                    let mut next = move |m: u64| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed % m
                    };
                    for t in 0..120i64 {
                        let tx = c.unchecked_transaction().unwrap();
                        let rows = 1 + next(if t % 10 == 3 { 400 } else { 12 }) as i64;
                        let mut these = Vec::new();
                        for k in 0..rows {
                            let id = w * 1_000_000 + t * 1000 + k;
                            let len = 200 + next(7000) as usize;
                            tx.execute(
                                "INSERT INTO t (id, body) VALUES (?1, ?2)",
                                params![id, body(id, len)],
                            )
                            .unwrap();
                            these.push((id, len));
                        }
                        if next(5) == 0 {
                            tx.rollback().unwrap();
                        } else {
                            tx.commit().unwrap();
                            kept.extend(these);
                        }
                        match next(12) {
                            0 => {
                                let _ =
                                    c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                            }
                            1 => {
                                let _ =
                                    c.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()));
                            }
                            2 => {
                                let _ =
                                    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
                            }
                            _ => {
                                let _: i64 = c
                                    .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
                                    .unwrap();
                            }
                        }
                    }
                    kept
                })
            })
            .collect();
        let mut rows: Vec<(i64, usize)> = Vec::new();
        for h in writers {
            rows.extend(h.join().unwrap());
        }
        assert_image_holds(&db, &rows);
    }

    #[test]
    fn a_plain_sqlite_writer_on_the_same_file_interleaves_safely() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let ours = open(&db, 2048);
        let plain = Connection::open(&db).unwrap();
        plain
            .busy_timeout(std::time::Duration::from_secs(5))
            .unwrap();
        let mut rows = Vec::new();
        for i in 0..300i64 {
            // Plain SQLite appends and starts the log over too: this handle's idea of
            // the log's end goes stale, and its writes must then go straight through.
            let c = if i % 3 == 0 { &plain } else { &ours };
            let len = 100 + ((i * 7919) % 9000) as usize;
            c.execute(
                "INSERT INTO t (id, body) VALUES (?1, ?2)",
                params![i, body(i, len)],
            )
            .unwrap();
            rows.push((i, len));
            if i % 50 == 49 {
                plain
                    .query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
                    .unwrap();
            }
            if i % 70 == 69 {
                ours.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
                    .unwrap();
            }
            if i % 25 == 24 {
                assert_image_holds(&db, &rows);
            }
        }
    }

    #[test]
    fn a_commit_reaches_the_log_in_one_write_and_other_connections_see_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let c = open(&db, 2048);
        c.execute("INSERT INTO t (id, body) VALUES (0, x'00')", [])
            .unwrap();
        let plain = Connection::open(&db).unwrap();
        for round in 1..20i64 {
            let before = WAL_WRITES.get();
            let tx = c.unchecked_transaction().unwrap();
            // Eight rows of 5 KB: about 12 pages, 24 writes without gathering.
            for k in 0..8 {
                let id = round * 100 + k;
                tx.execute(
                    "INSERT INTO t (id, body) VALUES (?1, ?2)",
                    params![id, body(id, 5000)],
                )
                .unwrap();
            }
            tx.commit().unwrap();
            assert_eq!(WAL_WRITES.get() - before, 1, "round {round}");
            let n: i64 = plain
                .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 1 + round * 8);
        }
    }
}
