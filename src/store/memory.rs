//! SQLite's memory through mimalloc, the allocator the rest of the engine uses
//! (`lib.rs`'s global allocator): glibc's `malloc`/`free` were about a tenth of
//! the writer's time with eight sessions ingesting (a third of it SQLite's page
//! and statement allocations), and mimalloc's per-thread free lists cost less.
//!
//! SQLite takes its allocator only before it initializes, once per process
//! (`sqlite3_config(SQLITE_CONFIG_MALLOC)`): [`install`] runs before every
//! connection the crate opens (the engine's and the operator CLI's). When SQLite is
//! already up (something else in the process used it first), SQLite keeps its
//! default allocator; nothing else changes.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use libmimalloc_sys as mi;
use rusqlite::ffi;

/// Hands SQLite's allocations to mimalloc, once per process. Returns whether SQLite
/// uses it (`false` when SQLite was initialized before the first call).
pub fn install() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(x_malloc),
            xFree: Some(x_free),
            xRealloc: Some(x_realloc),
            xSize: Some(x_size),
            xRoundup: Some(x_roundup),
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: SQLite copies the methods; it refuses (SQLITE_MISUSE) once it
        // has initialized, and this runs once, before the engine opens anything.
        unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods) == ffi::SQLITE_OK }
    })
}

/// A SQLite size (`c_int`, never negative from SQLite) as a byte count.
fn bytes(n: c_int) -> usize {
    usize::try_from(n).unwrap_or(0)
}

unsafe extern "C" fn x_malloc(n: c_int) -> *mut c_void {
    mi::mi_malloc(bytes(n))
}

unsafe extern "C" fn x_free(p: *mut c_void) {
    mi::mi_free(p)
}

unsafe extern "C" fn x_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    mi::mi_realloc(p, bytes(n))
}

unsafe extern "C" fn x_size(p: *mut c_void) -> c_int {
    c_int::try_from(mi::mi_usable_size(p)).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn x_roundup(n: c_int) -> c_int {
    c_int::try_from(mi::mi_good_size(bytes(n))).unwrap_or(n)
}

unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shutdown(_: *mut c_void) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_allocates_through_the_installed_methods_when_it_takes_them() {
        // Tests share one process, so SQLite may already be up: then it keeps its
        // own allocator and `install` says so. Either way memory works.
        let taken = install();
        assert_eq!(install(), taken, "installed once");
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let s: String = conn
            .query_row("SELECT hex(randomblob(40000))", [], |r| r.get(0))
            .unwrap();
        assert_eq!(s.len(), 80000);
        if taken {
            // SAFETY: plain SQLite allocation calls.
            unsafe {
                let p = ffi::sqlite3_malloc(100);
                assert!(!p.is_null());
                assert!(ffi::sqlite3_msize(p) >= 100);
                assert_eq!(ffi::sqlite3_msize(p) as usize, mi::mi_usable_size(p));
                ffi::sqlite3_free(p);
            }
        }
    }
}
