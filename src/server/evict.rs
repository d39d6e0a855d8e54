//! maxmemory (Redis's `performEvictions` and `getMaxmemoryState`): how much
//! memory is in use, and evicting keys under `maxmemory-policy` until it
//! is under the limit again. The keyspace side (sampling, the pool, LFU)
//! is `store/evict.rs`.
//!
//! Memory in use is what the allocator has handed out, as Redis's
//! `used_memory`, less what Redis leaves out for eviction (the AOF
//! buffer, the replicas' buffers). Reading the allocator's total costs a
//! statistics refresh, so each command reads the executor thread's own
//! allocation counters (two loads) on top of the last refreshed total; the
//! total is refreshed when that estimate passes the limit (at most once a
//! millisecond: a refresh costs more than a command) and at every cron
//! tick, so memory freed or taken by other threads (lazy free, a
//! background save) is counted within one tick.

use std::time::Instant;

use super::ServerState;
use crate::store::evict::{Lfu, Policy, Pool};
use crate::store::Store;

/// What an eviction attempt achieved (Redis's EVICT_OK / RUNNING / FAIL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evicted {
    /// Memory is within the limit.
    Ok,
    /// Still over, the time budget ran out; the cron goes on evicting and
    /// commands are not refused meanwhile.
    Running,
    /// Still over and nothing more may be evicted: denyoom commands fail.
    Fail,
}

/// Memory accounting and eviction state.
#[derive(Default)]
pub struct Memory {
    /// The executor thread's cumulative allocated and freed byte counters
    /// (jemalloc's `thread.allocatedp`/`deallocatedp`), read lazily on
    /// that thread.
    counters: Option<(*const u64, *const u64)>,
    /// The allocator's total at the last refresh.
    total: u64,
    /// The executor's allocated minus freed bytes at the last refresh.
    own_at_total: i64,
    /// When the total was last refreshed.
    refreshed: Option<Instant>,
    /// The eviction pool.
    pub pool: Pool,
    /// The limit was still exceeded when the last attempt's time ran out.
    pub running: bool,
    /// The OOM state seen when the current command started (Redis's
    /// pre_command_oom_state): scripts refuse their first denyoom write.
    pub pre_command_oom: bool,
    /// The policy the store's access tracking was last set up for.
    tracking: Option<(Policy, u32, u32)>,
    /// Bytes in use once the server was set up, before any data
    /// (`used_memory_startup`).
    pub startup: u64,
}

impl Memory {
    /// The executor thread's allocated minus freed bytes.
    fn own(&mut self) -> i64 {
        if self.counters.is_none() {
            self.counters = thread_counters();
        }
        match self.counters {
            // SAFETY: jemalloc's per-thread counters live as long as the
            // executor thread, which is the only one that calls this (the
            // server state never leaves it), and jemalloc writes them only
            // from this same thread.
            Some((a, d)) => unsafe { (*a).wrapping_sub(*d) as i64 },
            None => 0,
        }
    }

    /// Reads the allocator's total in use (a statistics refresh).
    pub fn refresh(&mut self) {
        self.total = allocated();
        self.own_at_total = self.own();
        self.refreshed = Some(Instant::now());
    }

    /// Refreshes the total unless that was done within the last
    /// millisecond.
    fn refresh_if_stale(&mut self) {
        if self
            .refreshed
            .is_none_or(|at| at.elapsed() >= std::time::Duration::from_millis(1))
        {
            self.refresh();
        }
    }

    /// Bytes in use now: the last total plus what this thread allocated or
    /// freed since.
    pub fn used(&mut self) -> u64 {
        let own = self.own();
        (self.total as i64 + own - self.own_at_total).max(0) as u64
    }
}

/// Pointers to the calling thread's jemalloc allocation counters.
#[cfg(ferrokv_jemalloc)]
fn thread_counters() -> Option<(*const u64, *const u64)> {
    use tikv_jemalloc_ctl::raw;
    // SAFETY: reading these two mallctl names yields pointers (uint64_t *)
    // into the calling thread's jemalloc state, as documented.
    unsafe {
        let a = raw::read::<*mut u64>(b"thread.allocatedp\0").ok()?;
        let d = raw::read::<*mut u64>(b"thread.deallocatedp\0").ok()?;
        Some((a as *const u64, d as *const u64))
    }
}

#[cfg(not(any(ferrokv_jemalloc, ferrokv_sanitize)))]
fn thread_counters() -> Option<(*const u64, *const u64)> {
    None
}

/// The counting allocator's, in a sanitizer build.
#[cfg(ferrokv_sanitize)]
fn thread_counters() -> Option<(*const u64, *const u64)> {
    crate::util::counting_alloc::thread_counters()
}

/// The allocator's bytes in use, all threads (jemalloc `stats.allocated`).
pub fn allocated() -> u64 {
    crate::util::counting_alloc::allocated()
}

/// Returns the allocator's dirty pages to the system (MEMORY PURGE, the
/// `arena.<all>.purge` control); false when that failed.
pub fn purge() -> bool {
    #[cfg(ferrokv_jemalloc)]
    {
        // MALLCTL_ARENAS_ALL is 4096; the control takes no value.
        // SAFETY: a NUL-terminated name, and no old or new value pointers,
        // as jemalloc documents for this control.
        let r = unsafe {
            tikv_jemalloc_sys::mallctl(
                b"arena.4096.purge\0".as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        r == 0
    }
    #[cfg(not(ferrokv_jemalloc))]
    {
        true
    }
}

/// Redis's evictionTimeLimitUs: how long one attempt may evict.
fn time_limit_us(tenacity: i64) -> u64 {
    match tenacity {
        t if t <= 10 => 50 * t.max(0) as u64,
        t if t < 100 => (500.0 * 1.15f64.powi((t - 10) as i32)) as u64,
        _ => u64::MAX,
    }
}

impl ServerState {
    /// Memory counted against maxmemory: in use, less the AOF buffer and
    /// the replicas' buffers (Redis's freeMemoryGetNotCountedMemory).
    fn counted_memory(&mut self) -> u64 {
        let used = self.memory.used();
        used.saturating_sub(self.not_counted_memory())
    }

    /// Ends the I/O threads' open write job, if any (see
    /// `Net::settle_writes`); false when there was none to wait for.
    fn settle_threaded_writes(&mut self) -> bool {
        let Some(net) = &self.net else {
            return false;
        };
        // Not borrowed while a command runs; if it ever is, eviction
        // measures as it did.
        net.try_borrow_mut()
            .is_ok_and(|mut net| net.settle_writes())
    }

    /// `mem_not_counted_for_evict`.
    pub fn not_counted_memory(&self) -> u64 {
        self.aof.buffered() as u64 + self.repl.not_counted_memory()
    }

    /// Bytes over maxmemory, or None when within it. An estimate past the
    /// limit is checked against a fresh total before anything is evicted.
    fn over_limit(&mut self) -> Option<u64> {
        let max = self.config.maxmemory;
        if self.counted_memory() <= max {
            return None;
        }
        self.memory.refresh_if_stale();
        let counted = self.counted_memory();
        (counted > max).then(|| counted - max)
    }

    /// Sets the store's access tracking to the policy in force (LRU clock
    /// or LFU counters).
    pub fn sync_access_tracking(&mut self, store: &mut Store) {
        let policy = Policy::parse(&self.config.maxmemory_policy);
        let factor = self.config.get_i64("lfu-log-factor").unwrap_or(10) as u32;
        let decay = self.config.get_i64("lfu-decay-time").unwrap_or(1) as u32;
        let want = (policy, factor, decay);
        if self.memory.tracking == Some(want) {
            return;
        }
        if self.memory.tracking.map(|t| t.0) != Some(policy) {
            self.memory.pool.clear();
        }
        self.memory.tracking = Some(want);
        store.set_lfu(policy.is_lfu().then_some(Lfu {
            log_factor: factor,
            decay_time: decay,
        }));
    }

    /// Redis's performEvictions: evicts keys until memory is within
    /// maxmemory, the time budget runs out, or nothing may be evicted.
    /// Each evicted key reaches the AOF as DEL, fires `evicted`, and wakes
    /// WATCH and blocked clients as a deletion does.
    pub fn perform_evictions(&mut self, store: &mut Store) -> Evicted {
        if self.config.maxmemory == 0 {
            crate::store::hashed::set_expand_headroom(u64::MAX);
            return Evicted::Ok;
        }
        // A replica keeps what its master sends: the master evicts and its
        // DELs follow (`replica-ignore-maxmemory`).
        if self.repl.master.is_some() && self.config.get_bool("replica-ignore-maxmemory") {
            return Evicted::Ok;
        }
        let mut over = self.over_limit();
        if over.is_some() && self.settle_threaded_writes() {
            // Replies and invalidations the I/O threads were writing
            // (the last evictions' among them) are gone now: counted, they
            // made every command evict more, down to an empty keyspace.
            self.memory.refresh();
            over = self.over_limit();
        }
        let Some(to_free) = over else {
            self.memory.running = false;
            let left = self.config.maxmemory.saturating_sub(self.counted_memory());
            crate::store::hashed::set_expand_headroom(left);
            return Evicted::Ok;
        };
        crate::store::hashed::set_expand_headroom(0);
        // Nothing is evicted while clients are paused (Redis's
        // isSafeToPerformEvictions): the data set stays as it is.
        if self.pause.active(crate::util::clock::now_ms()) {
            return Evicted::Ok;
        }
        let policy = Policy::parse(&self.config.maxmemory_policy);
        if policy == Policy::NoEviction {
            return Evicted::Fail;
        }
        let started = Instant::now();
        let result = self.evict_for(store, policy, to_free);
        let left = self.config.maxmemory.saturating_sub(self.counted_memory());
        crate::store::hashed::set_expand_headroom(left);
        let ms = started.elapsed().as_millis() as u64;
        let threshold = self.config.latency_monitor_threshold;
        self.latency.add_if_needed("eviction-cycle", ms, threshold);
        result
    }

    /// The eviction loop of [`ServerState::perform_evictions`].
    fn evict_for(&mut self, store: &mut Store, policy: Policy, mut to_free: u64) -> Evicted {
        let limit = time_limit_us(
            self.config
                .get_i64("maxmemory-eviction-tenacity")
                .unwrap_or(10),
        );
        let samples = self.config.maxmemory_samples.max(1) as usize;
        let started = Instant::now();
        let mut freed_keys = 0u64;
        let lazy = crate::store::lazyfree::LAZY_EVICTION.load(std::sync::atomic::Ordering::Relaxed);
        let mut pool = std::mem::take(&mut self.memory.pool);
        let mut sink = Vec::new();
        let result = loop {
            let Some((db, key)) = store.eviction_candidate(policy, samples, &mut pool) else {
                break Evicted::Fail;
            };
            // Only the deletion counts as freed, as in Redis: what the
            // notification and the propagated DEL take is not the key's.
            let before = self.memory.used();
            if !store.evict(db, &key) {
                continue;
            }
            let freed = before.saturating_sub(self.memory.used());
            freed_keys += 1;
            // Watchers, notifications and replicas are told at once, as
            // Redis does, so that the key's name is freed with it; what
            // they take is not held against the deletion: counted, the
            // invalidations of tracked keys made each eviction call for
            // more (Redis's loop likewise counts the deletion alone).
            store.signal_uncounted(db, &key);
            super::pubsub::notify(self, None, &mut sink, b'e', "evicted", db, &key);
            if self.stream_on() {
                self.feed_del(db, &key, lazy);
            }
            drop(key);
            to_free = to_free.saturating_sub(freed);
            if to_free == 0 {
                break Evicted::Ok;
            }
            if freed_keys.is_multiple_of(16) {
                // Freed by another thread, the memory is seen only now.
                if lazy && self.over_limit().is_none() {
                    break Evicted::Ok;
                }
                if started.elapsed().as_micros() as u64 > limit {
                    break Evicted::Running;
                }
            }
        };
        self.memory.pool = pool;
        self.memory.running = result == Evicted::Running;
        result
    }
}
