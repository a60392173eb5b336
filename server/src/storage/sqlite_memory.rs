//! SQLite's own allocations go to mimalloc, without SQLite's global
//! memory-statistics lock.
//!
//! sqlx copies every column of every row out of SQLite
//! (`sqlite3_value_dup`) on the connection's worker thread, and the copy is
//! freed on the tokio thread that read the row. Through glibc's malloc, with
//! SQLite taking its statistics mutex around each call, that was a third of
//! the worker threads' time on a `/jobs` page under load (perf, job_list
//! bench). SQLite must be configured before its first connection opens, so
//! [`configure`] runs once, from [`super::db::connect`].

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use libsqlite3_sys as ffi;

unsafe extern "C" {
    // In libmimalloc (linked through `libmimalloc_sys`), but only declared
    // by its "extended" feature.
    fn mi_usable_size(p: *const c_void) -> usize;
}

unsafe extern "C" fn malloc(n: c_int) -> *mut c_void {
    // SAFETY: mi_malloc takes any size; SQLite never asks for a negative one.
    unsafe { libmimalloc_sys::mi_malloc(usize::try_from(n).unwrap_or(0)) }
}

unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: SQLite frees only what `malloc`/`realloc` here returned.
    unsafe { libmimalloc_sys::mi_free(p) }
}

unsafe extern "C" fn realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    // SAFETY: as for `malloc` and `free`.
    unsafe { libmimalloc_sys::mi_realloc(p, usize::try_from(n).unwrap_or(0)) }
}

unsafe extern "C" fn size(p: *mut c_void) -> c_int {
    // SAFETY: `p` came from `malloc`/`realloc` here.
    c_int::try_from(unsafe { mi_usable_size(p) }).unwrap_or(c_int::MAX)
}

unsafe extern "C" fn roundup(n: c_int) -> c_int {
    (n + 7) & !7
}

unsafe extern "C" fn init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn shutdown(_: *mut c_void) {}

/// Configures SQLite's allocator, once per process. Whether it took: SQLite
/// refuses (`SQLITE_MISUSE`) once a connection has opened, and then keeps
/// its own, which works, only slower.
pub fn configure() -> bool {
    static TOOK: OnceLock<bool> = OnceLock::new();
    *TOOK.get_or_init(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(malloc),
            xFree: Some(free),
            xRealloc: Some(realloc),
            xSize: Some(size),
            xRoundup: Some(roundup),
            xInit: Some(init),
            xShutdown: Some(shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: both calls come before any other SQLite call in this
        // process could have initialised it (or SQLite refuses them and
        // nothing changes); SQLite copies the methods struct.
        unsafe {
            ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int) == ffi::SQLITE_OK
                && ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods as *const _)
                    == ffi::SQLITE_OK
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_allocates_through_mimalloc_and_gives_back_what_it_took() {
        // The unit-test binary opens no SQLite connection before this.
        assert!(configure(), "SQLite refused the allocator");
        // SAFETY: plain calls into the SQLite C API.
        unsafe {
            let p = ffi::sqlite3_malloc(100);
            assert!(!p.is_null());
            assert!(ffi::sqlite3_msize(p) >= 100);
            assert_eq!(mi_usable_size(p), ffi::sqlite3_msize(p) as usize);
            let p = ffi::sqlite3_realloc(p, 5000);
            assert!(ffi::sqlite3_msize(p) >= 5000);
            ffi::sqlite3_free(p);
        }
    }
}
