//! The encoding thresholds of the collection types, as Redis's
//! `server.hash_max_listpack_entries` and its siblings: set from the
//! configuration (`hash-max-listpack-*`, `zset-max-listpack-*`,
//! `set-max-intset-entries`, `list-max-listpack-size`,
//! `list-compress-depth`) at start-up and by CONFIG SET, and read where a
//! value converts. They are process-wide, like Redis's globals: one server
//! runs per process, and a conversion reads one relaxed atomic.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

static HASH_MAX_ENTRIES: AtomicUsize = AtomicUsize::new(512);
static HASH_MAX_VALUE: AtomicUsize = AtomicUsize::new(64);
static ZSET_MAX_ENTRIES: AtomicUsize = AtomicUsize::new(128);
static ZSET_MAX_VALUE: AtomicUsize = AtomicUsize::new(64);
static SET_MAX_INTSET_ENTRIES: AtomicUsize = AtomicUsize::new(512);
static LIST_FILL: AtomicI64 = AtomicI64::new(-2);
static LIST_COMPRESS_DEPTH: AtomicUsize = AtomicUsize::new(0);

/// The thresholds, as the configuration gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// `hash-max-listpack-entries`.
    pub hash_max_entries: u64,
    /// `hash-max-listpack-value`.
    pub hash_max_value: u64,
    /// `zset-max-listpack-entries`.
    pub zset_max_entries: u64,
    /// `zset-max-listpack-value`.
    pub zset_max_value: u64,
    /// `set-max-intset-entries`.
    pub set_max_intset_entries: u64,
    /// `list-max-listpack-size`: a count of elements per node when
    /// positive, a byte size class (-1 4 KB ... -5 64 KB) when negative.
    pub list_fill: i64,
    /// `list-compress-depth`: nodes left uncompressed at each end of a
    /// list (0: none compressed).
    pub list_compress_depth: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            hash_max_entries: 512,
            hash_max_value: 64,
            zset_max_entries: 128,
            zset_max_value: 64,
            set_max_intset_entries: 512,
            list_fill: -2,
            list_compress_depth: 0,
        }
    }
}

fn clamp(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// Installs new thresholds; they apply to the next conversion.
pub fn set(t: &Thresholds) {
    HASH_MAX_ENTRIES.store(clamp(t.hash_max_entries), Ordering::Relaxed);
    HASH_MAX_VALUE.store(clamp(t.hash_max_value), Ordering::Relaxed);
    ZSET_MAX_ENTRIES.store(clamp(t.zset_max_entries), Ordering::Relaxed);
    ZSET_MAX_VALUE.store(clamp(t.zset_max_value), Ordering::Relaxed);
    SET_MAX_INTSET_ENTRIES.store(clamp(t.set_max_intset_entries), Ordering::Relaxed);
    // quicklistSetFill: at most 1 << 15 elements, at least the -5 class.
    LIST_FILL.store(t.list_fill.clamp(-5, 1 << 15), Ordering::Relaxed);
    LIST_COMPRESS_DEPTH.store(clamp(t.list_compress_depth), Ordering::Relaxed);
}

/// Most fields a listpack-encoded hash holds.
#[inline]
pub fn hash_max_entries() -> usize {
    HASH_MAX_ENTRIES.load(Ordering::Relaxed)
}

/// Longest field or value a listpack-encoded hash holds.
#[inline]
pub fn hash_max_value() -> usize {
    HASH_MAX_VALUE.load(Ordering::Relaxed)
}

/// Most members a listpack-encoded sorted set holds.
#[inline]
pub fn zset_max_entries() -> usize {
    ZSET_MAX_ENTRIES.load(Ordering::Relaxed)
}

/// Longest member a listpack-encoded sorted set holds.
#[inline]
pub fn zset_max_value() -> usize {
    ZSET_MAX_VALUE.load(Ordering::Relaxed)
}

/// Most members an intset-encoded set holds.
#[inline]
pub fn set_max_intset_entries() -> usize {
    SET_MAX_INTSET_ENTRIES.load(Ordering::Relaxed)
}

/// The node size rule of lists (`list-max-listpack-size`, clamped).
#[inline]
pub fn list_fill() -> i64 {
    LIST_FILL.load(Ordering::Relaxed)
}

/// Nodes kept uncompressed at each end of a list (0: no compression).
#[inline]
pub fn list_compress_depth() -> usize {
    LIST_COMPRESS_DEPTH.load(Ordering::Relaxed)
}
