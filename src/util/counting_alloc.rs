//! The allocator of a sanitizer build (`ferrokv_sanitize`): the system
//! allocator, which AddressSanitizer replaces and checks, counting bytes
//! as jemalloc's `stats.allocated` and `thread.allocatedp` /
//! `thread.deallocatedp` do, so INFO `used_memory`, `maxmemory` and client
//! eviction act in that build as in the normal one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes allocated and not freed, all threads.
static IN_USE: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's cumulative allocated and freed bytes.
    static THREAD: [Cell<u64>; 2] = const { [Cell::new(0), Cell::new(0)] };
}

/// The system allocator, counting.
pub struct Counting;

fn count(alloc: u64, free: u64) {
    if alloc != 0 {
        IN_USE.fetch_add(alloc, Ordering::Relaxed);
    }
    if free != 0 {
        IN_USE.fetch_sub(free, Ordering::Relaxed);
    }
    // A thread being torn down has no counters left: its bytes still
    // count in the total.
    let _ = THREAD.try_with(|t| {
        t[0].set(t[0].get() + alloc);
        t[1].set(t[1].get() + free);
    });
}

// SAFETY: every call is passed to the system allocator unchanged; only
// counters are updated besides.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is the system allocator's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as u64, 0);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as u64, 0);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) };
        count(0, layout.size() as u64);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as u64, layout.size() as u64);
        }
        p
    }
}

/// Turns jemalloc's background purging thread on or off
/// (`jemalloc-bg-thread`); nothing without jemalloc.
pub fn set_background_thread(on: bool) {
    #[cfg(all(ferrokv_jemalloc, not(ferrokv_sanitize)))]
    if let Err(e) = tikv_jemalloc_ctl::background_thread::write(on) {
        tracing::debug!("jemalloc background thread not set: {e}");
    }
    #[cfg(not(all(ferrokv_jemalloc, not(ferrokv_sanitize))))]
    let _ = on;
}

/// The allocator's bytes in use, all threads: jemalloc's
/// `stats.allocated` less what the threads' caches hold (freed blocks kept
/// for reuse, which Redis's own count of used memory does not include
/// either), or this allocator's count in a sanitizer build.
pub fn allocated() -> u64 {
    #[cfg(ferrokv_sanitize)]
    {
        IN_USE.load(Ordering::Relaxed)
    }
    #[cfg(all(ferrokv_jemalloc, not(ferrokv_sanitize)))]
    {
        let _ = tikv_jemalloc_ctl::epoch::advance();
        let allocated = tikv_jemalloc_ctl::stats::allocated::read().map_or(0, |n| n as u64);
        // 4096 is MALLCTL_ARENAS_ALL: the sum over every arena.
        // SAFETY: a NUL-terminated name of a size_t statistic.
        let cached =
            unsafe { tikv_jemalloc_ctl::raw::read::<usize>(b"stats.arenas.4096.tcache_bytes\0") }
                .map_or(0, |n| n as u64);
        allocated.saturating_sub(cached)
    }
    #[cfg(all(not(ferrokv_jemalloc), not(ferrokv_sanitize)))]
    {
        0
    }
}

/// The size the allocator really gives for a request of `size` bytes
/// (jemalloc's size class, as Redis's zmalloc_usable_size reads it).
pub fn usable_size(size: usize) -> usize {
    #[cfg(all(ferrokv_jemalloc, not(ferrokv_sanitize)))]
    {
        // SAFETY: nallocx only computes a size class; 0 flags.
        let n = unsafe { tikv_jemalloc_sys::nallocx(size.max(1), 0) };
        if n >= size {
            return n;
        }
    }
    size
}

/// Pointers to the calling thread's allocated and freed counters, as
/// jemalloc's `thread.allocatedp` / `thread.deallocatedp` give them; they
/// stay valid while the thread lives.
pub fn thread_counters() -> Option<(*const u64, *const u64)> {
    THREAD
        .try_with(|t| (t[0].as_ptr() as *const u64, t[1].as_ptr() as *const u64))
        .ok()
}
