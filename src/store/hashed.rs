//! `HashedMap`: the table behind large hashes, sets and sorted sets (Redis's
//! `hashtable` encoding, `dict.c`). Chained buckets in a power-of-two
//! array, grown when it holds as many entries as buckets and shrunk below a
//! tenth full, moved to the new array a bucket at a time by the operations
//! on the table (Redis's incremental rehashing). Owning the table gives
//! what those commands promise: the reverse-binary scan cursor that returns
//! every member present for a whole SCAN however the table resizes between
//! calls, Redis's fair random sampling, and DEBUG HTSTATS-KEY's figures.
//!
//! While a fork child saves, Redis resizes only when the table is far from
//! its load (`dict_can_resize` / `dict_force_resize_ratio`) so the child's
//! pages stay shared; [`child_started`] and [`child_ended`] track those
//! children, and [`in_fork_child`] stops all resizing in a child.

use crate::util::siphash::SipKey;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::bytes::CompactBytes;

/// When tables may resize (Redis's `dictResizeEnable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ResizePolicy {
    /// No child process: resize as the load calls for.
    Enable,
    /// A child is saving: resize only past [`FORCE_RESIZE_RATIO`].
    Avoid,
    /// In the child itself: never.
    Forbid,
}

/// Saving children alive (Redis's hasActiveChildProcess).
static CHILDREN: AtomicUsize = AtomicUsize::new(0);
/// True in a fork child.
static IN_CHILD: AtomicBool = AtomicBool::new(false);

/// A saving child (RDB, AOF rewrite, replica sync) was forked.
pub fn child_started() {
    CHILDREN.fetch_add(1, Ordering::Relaxed);
}

/// A saving child was reaped.
pub fn child_ended() {
    let _ = CHILDREN.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
}

/// Called in a fork child: its copy of the tables never resizes.
pub fn in_fork_child() {
    IN_CHILD.store(true, Ordering::Relaxed);
}

/// Redis's updateDictResizePolicy, read where a resize is decided.
fn resize_policy() -> ResizePolicy {
    if IN_CHILD.load(Ordering::Relaxed) {
        ResizePolicy::Forbid
    } else if CHILDREN.load(Ordering::Relaxed) > 0 {
        ResizePolicy::Avoid
    } else {
        ResizePolicy::Enable
    }
}

/// A table holding `used` entries in `size` buckets grows now: at one
/// entry per bucket, or while a child saves only past
/// [`FORCE_RESIZE_RATIO`] (Redis's _dictExpandIfNeeded). For the keyspace
/// too, so a save's pages stay shared.
pub(crate) fn may_grow(used: usize, size: usize) -> bool {
    match resize_policy() {
        ResizePolicy::Enable => used >= size,
        ResizePolicy::Avoid => used / size > FORCE_RESIZE_RATIO,
        ResizePolicy::Forbid => false,
    }
}

/// Bytes the keyspace may still take before maxmemory (u64::MAX without
/// a limit), as the server last counted them.
static EXPAND_HEADROOM: AtomicU64 = AtomicU64::new(u64::MAX);

/// The server's count of what memory is left under maxmemory, for
/// [`expand_allowed`]; u64::MAX when no limit is set.
pub fn set_expand_headroom(bytes: u64) {
    EXPAND_HEADROOM.store(bytes, Ordering::Relaxed);
}

/// Redis's dictExpandAllowed for the keyspace: a table at most 1.618
/// entries per bucket does not grow when its new array (`more` bytes)
/// would pass maxmemory; fuller, it grows anyway.
pub(crate) fn expand_allowed(more: usize, used: usize, size: usize) -> bool {
    // used / size <= 1.618, in integers.
    if used.saturating_mul(1000) > size.saturating_mul(1618) {
        return true;
    }
    more as u64 <= EXPAND_HEADROOM.load(Ordering::Relaxed)
}

/// Tables shrink only while no child saves (Redis's dictResize).
pub(crate) fn may_shrink() -> bool {
    resize_policy() == ResizePolicy::Enable
}

/// A resize from `s0` to `s1` buckets goes on: while a child saves only
/// by a large ratio, never in the child (Redis's dictRehash).
pub(crate) fn may_rehash(s0: usize, s1: usize) -> bool {
    match resize_policy() {
        ResizePolicy::Enable => true,
        ResizePolicy::Avoid => {
            !((s1 > s0 && s1 / s0 < FORCE_RESIZE_RATIO)
                || (s1 < s0 && s0 / s1 < FORCE_RESIZE_RATIO))
        }
        ResizePolicy::Forbid => false,
    }
}

/// Entries per bucket past which a table grows even while a child saves,
/// and the size ratio past which a started resize goes on.
const FORCE_RESIZE_RATIO: usize = 5;

/// The smallest array.
const INITIAL_SIZE: usize = 4;

/// Below this fill percentage a table shrinks (HASHTABLE_MIN_FILL).
const MIN_FILL_PERCENT: usize = 10;

/// Entries a fair random draw chooses among (GETFAIR_NUM_ENTRIES).
const FAIR_SAMPLE: usize = 15;

/// Up to this many entries a random draw walks to a uniformly drawn rank:
/// exact, where Redis's sampling of a run of buckets favours the entries
/// after empty ones (a chi-square of about 130 over 26 members).
const EXACT_RANDOM_MAX: usize = 1024;

/// The process-wide hash key, so clones of a map (COPY) stay valid.
fn seed() -> &'static SipKey {
    static SEED: OnceLock<SipKey> = OnceLock::new();
    SEED.get_or_init(SipKey::random)
}

fn hash_of(key: &[u8]) -> usize {
    seed().hash(key) as usize
}

/// One entry, linked to the next in its bucket.
struct Node<V> {
    next: Link<V>,
    key: CompactBytes,
    value: V,
}

type Link<V> = Option<Box<Node<V>>>;

/// A map from byte strings to `V` in Redis's dict layout.
pub struct HashedMap<V> {
    /// `[0]` the table (the old one while rehashing); `[1]` the new one
    /// while rehashing, empty otherwise.
    tables: [Box<[Link<V>]>; 2],
    /// Entries in each table.
    used: [usize; 2],
    /// While rehashing, the buckets of table 0 before this one are moved.
    rehash_at: usize,
}

impl<V> Default for HashedMap<V> {
    fn default() -> Self {
        HashedMap {
            tables: [Box::default(), Box::default()],
            used: [0, 0],
            rehash_at: 0,
        }
    }
}

/// A stream of random numbers from one seed (splitmix64), so one random
/// word from the caller drives a whole draw.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as usize
    }
}

/// The chain link holding `key`, or the empty link ending the chain.
fn chain_link<'a, V>(mut link: &'a mut Link<V>, key: &[u8]) -> &'a mut Link<V> {
    while link.as_ref().is_some_and(|n| n.key.as_slice() != key) {
        // invariant: the loop condition saw a node here.
        link = &mut link.as_mut().expect("checked above").next;
    }
    link
}

fn empty_table<V>(n: usize) -> Box<[Link<V>]> {
    std::iter::repeat_with(|| None).take(n).collect()
}

/// Frees a chain without recursing once per node.
fn drop_chain<V>(mut link: Link<V>) {
    while let Some(mut node) = link {
        link = node.next.take();
    }
}

impl<V> HashedMap<V> {
    /// An empty map whose array already fits `n` entries (Redis expands a
    /// set's dict to its final size when it converts or loads one).
    pub fn with_capacity(n: usize) -> Self {
        let mut m = Self::default();
        m.expand(n);
        m
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.used[0] + self.used[1]
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True while entries are being moved to a resized array.
    pub fn is_rehashing(&self) -> bool {
        !self.tables[1].is_empty()
    }

    /// Buckets in both arrays (Redis's dictSlots).
    fn slots(&self) -> usize {
        self.tables[0].len() + self.tables[1].len()
    }

    fn find(&self, key: &[u8]) -> Option<&Node<V>> {
        if self.is_empty() {
            return None;
        }
        let h = hash_of(key);
        for t in &self.tables {
            if t.is_empty() {
                continue;
            }
            let mut cur = t[h & (t.len() - 1)].as_deref();
            while let Some(n) = cur {
                if n.key.as_slice() == key {
                    return Some(n);
                }
                cur = n.next.as_deref();
            }
        }
        None
    }

    /// The value stored for `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.find(key).map(|n| &n.value)
    }

    /// The value stored for `key`, mutable.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        if self.is_empty() {
            return None;
        }
        let h = hash_of(key);
        let t = if self.tables[0].is_empty() {
            1
        } else {
            let t0 = &self.tables[0];
            let mut cur = t0[h & (t0.len() - 1)].as_deref();
            let mut here = false;
            while let Some(n) = cur {
                if n.key.as_slice() == key {
                    here = true;
                    break;
                }
                cur = n.next.as_deref();
            }
            if here {
                0
            } else {
                1
            }
        };
        let table = &mut self.tables[t];
        if table.is_empty() {
            return None;
        }
        let i = h & (table.len() - 1);
        chain_link(&mut table[i], key)
            .as_mut()
            .map(|n| &mut n.value)
    }

    /// True when `key` is present.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.find(key).is_some()
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: &[u8], value: V) -> Option<V> {
        self.rehash_step();
        if let Some(v) = self.get_mut(key) {
            return Some(std::mem::replace(v, value));
        }
        self.expand_if_needed();
        // While rehashing, new entries go to the new array.
        let t = usize::from(self.is_rehashing());
        let table = &mut self.tables[t];
        let i = hash_of(key) & (table.len() - 1);
        let next = table[i].take();
        table[i] = Some(Box::new(Node {
            next,
            key: CompactBytes::new(key),
            value,
        }));
        self.used[t] += 1;
        None
    }

    /// Removes `key`; returns its value. A table left under a tenth full
    /// starts shrinking, as after Redis's SREM/HDEL/ZREM (htNeedsResize).
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        if self.is_empty() {
            return None;
        }
        self.rehash_step();
        let h = hash_of(key);
        let mut removed = None;
        for t in 0..2 {
            let table = &mut self.tables[t];
            if table.is_empty() {
                continue;
            }
            let i = h & (table.len() - 1);
            let link = chain_link(&mut table[i], key);
            if let Some(mut node) = link.take() {
                *link = node.next.take();
                self.used[t] -= 1;
                removed = Some(node.value);
                break;
            }
        }
        let size = self.slots();
        if removed.is_some() && size > INITIAL_SIZE && self.len() * 100 / size < MIN_FILL_PERCENT {
            self.shrink();
        }
        removed
    }

    /// Redis's dictResize: down to the smallest array holding every entry.
    fn shrink(&mut self) {
        if may_shrink() && !self.is_rehashing() {
            self.expand(self.used[0].max(INITIAL_SIZE));
        }
    }

    /// Redis's _dictExpandIfNeeded, before an insertion.
    fn expand_if_needed(&mut self) {
        if self.is_rehashing() {
            return;
        }
        let size = self.tables[0].len();
        if size == 0 {
            self.expand(INITIAL_SIZE);
            return;
        }
        let used = self.used[0];
        if used >= size && may_grow(used, size) {
            self.expand(used + 1);
        }
    }

    /// Redis's dictExpand: starts moving to an array of the next power of
    /// two at or above `size`; an empty table takes it at once. False when
    /// nothing changes.
    fn expand(&mut self, size: usize) -> bool {
        if self.is_rehashing() || self.used[0] > size {
            return false;
        }
        let new_size = size.max(INITIAL_SIZE).next_power_of_two();
        if new_size == self.tables[0].len() {
            return false;
        }
        if self.tables[0].is_empty() {
            self.tables[0] = empty_table(new_size);
            return true;
        }
        self.tables[1] = empty_table(new_size);
        self.rehash_at = 0;
        true
    }

    /// One step of incremental rehashing, as every lookup, insertion and
    /// removal does in Redis (_dictRehashStep).
    pub fn rehash_step(&mut self) {
        if self.is_rehashing() {
            self.rehash(1);
        }
    }

    /// Redis's dictRehash: moves up to `n` non-empty buckets, visiting at
    /// most ten times as many empty ones. While a child saves, only a
    /// resize by a large ratio goes on. True while there is more to move.
    pub fn rehash(&mut self, n: usize) -> bool {
        if !self.is_rehashing() {
            return false;
        }
        let (s0, s1) = (self.tables[0].len(), self.tables[1].len());
        if !may_rehash(s0, s1) {
            return true;
        }
        let mut empty_visits = n * 10;
        let mask = s1 - 1;
        let mut left = n;
        while left > 0 && self.used[0] != 0 {
            left -= 1;
            while self.tables[0][self.rehash_at].is_none() {
                self.rehash_at += 1;
                empty_visits -= 1;
                if empty_visits == 0 {
                    return true;
                }
            }
            let mut chain = self.tables[0][self.rehash_at].take();
            while let Some(mut node) = chain {
                chain = node.next.take();
                let i = hash_of(node.key.as_slice()) & mask;
                node.next = self.tables[1][i].take();
                self.tables[1][i] = Some(node);
                self.used[0] -= 1;
                self.used[1] += 1;
            }
            self.rehash_at += 1;
        }
        if self.used[0] != 0 {
            return true;
        }
        self.tables[0] = std::mem::take(&mut self.tables[1]);
        self.used = [self.used[1], 0];
        self.rehash_at = 0;
        false
    }

    /// Every entry, in bucket order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &V)> {
        self.tables.iter().flat_map(|t| t.iter()).flat_map(|head| {
            std::iter::successors(head.as_deref(), |n| n.next.as_deref())
                .map(|n| (n.key.as_slice(), &n.value))
        })
    }

    /// The entries of one bucket.
    fn bucket(&self, t: usize, i: usize) -> impl Iterator<Item = &Node<V>> {
        std::iter::successors(self.tables[t][i].as_deref(), |n| n.next.as_deref())
    }

    /// One call of Redis's dictScan: the entries of the bucket at `cursor`
    /// (and, while rehashing, of every bucket of the larger array it
    /// expands to); returns the next cursor, 0 at the end.
    fn scan_one<'a>(&'a self, mut v: usize, f: &mut impl FnMut(&'a [u8], &'a V)) -> usize {
        let mut emit = |t: usize, i: usize| {
            for n in self.bucket(t, i) {
                f(n.key.as_slice(), &n.value);
            }
        };
        let next =
            |v: usize, mask: usize| (v | !mask).reverse_bits().wrapping_add(1).reverse_bits();
        if !self.is_rehashing() {
            let m0 = self.tables[0].len() - 1;
            emit(0, v & m0);
            return next(v, m0);
        }
        let (small, large) = if self.tables[0].len() <= self.tables[1].len() {
            (0, 1)
        } else {
            (1, 0)
        };
        let m0 = self.tables[small].len() - 1;
        let m1 = self.tables[large].len() - 1;
        emit(small, v & m0);
        loop {
            emit(large, v & m1);
            v = next(v, m1);
            if v & (m0 ^ m1) == 0 {
                return v;
            }
        }
    }

    /// Redis's HSCAN/SSCAN/ZSCAN loop: buckets from `cursor` until `count`
    /// entries are found, the scan ends, or ten times `count` buckets are
    /// seen; returns the cursor to continue from (0 when done).
    pub fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        mut f: impl FnMut(&'a [u8], &'a V),
    ) -> u64 {
        if self.tables[0].is_empty() {
            return 0;
        }
        let mut found = 0;
        let mut v = cursor as usize;
        let mut iterations = count.saturating_mul(10);
        loop {
            v = self.scan_one(v, &mut |k, val| {
                found += 1;
                f(k, val)
            });
            if v == 0 || iterations == 0 || found >= count {
                return v as u64;
            }
            iterations -= 1;
        }
    }

    /// A random entry, `point` seeding the draw: in a small table, the
    /// entry at a random rank; in a larger one, as Redis's
    /// dictGetFairRandomKey, one of up to 15 entries gathered from a random
    /// run of buckets (reservoir-sampled along long chains).
    pub fn random(&self, point: u64) -> Option<(&[u8], &V)> {
        if self.is_empty() {
            return None;
        }
        let mut rng = Draws(point);
        if self.len() <= EXACT_RANDOM_MAX {
            return self.iter().nth(rng.next() % self.len());
        }
        let mut picks: [Option<&Node<V>>; FAIR_SAMPLE] = [None; FAIR_SAMPLE];
        let count = FAIR_SAMPLE.min(self.len());
        let stored = self.sample(count, &mut picks, &mut rng);
        let node = if stored == 0 {
            self.random_bucket_entry(&mut rng)
        } else {
            picks[rng.next() % stored.min(count)]
        };
        node.map(|n| (n.key.as_slice(), &n.value))
    }

    /// Redis's dictGetSomeKeys (without its rehash steps): entries from
    /// consecutive buckets starting at a random one; the count seen.
    fn sample<'a>(
        &'a self,
        count: usize,
        picks: &mut [Option<&'a Node<V>>; FAIR_SAMPLE],
        rng: &mut Draws,
    ) -> usize {
        let tables = if self.is_rehashing() { 2 } else { 1 };
        let mut mask = self.tables[0].len() - 1;
        if tables == 2 {
            mask = mask.max(self.tables[1].len() - 1);
        }
        let mut i = rng.next() & mask;
        let mut empty_run = 0;
        let mut stored = 0;
        let mut steps = count * 10;
        while stored < count && steps > 0 {
            steps -= 1;
            for t in 0..tables {
                // Buckets of the old array before the rehash point are
                // empty; past the new array's end, skip to that point.
                if tables == 2 && t == 0 && i < self.rehash_at {
                    if i >= self.tables[1].len() {
                        i = self.rehash_at;
                    } else {
                        continue;
                    }
                }
                if i >= self.tables[t].len() {
                    continue;
                }
                if self.tables[t][i].is_none() {
                    empty_run += 1;
                    if empty_run >= 5 && empty_run > count {
                        i = rng.next() & mask;
                        empty_run = 0;
                    }
                    continue;
                }
                empty_run = 0;
                for n in self.bucket(t, i) {
                    if stored < count {
                        picks[stored] = Some(n);
                    } else {
                        let r = rng.next() % (stored + 1);
                        if r < count {
                            picks[r] = Some(n);
                        }
                    }
                    stored += 1;
                }
                if stored >= count {
                    return stored;
                }
            }
            i = (i + 1) & mask;
        }
        stored
    }

    /// Redis's dictGetRandomKey: a random non-empty bucket, then a random
    /// entry of its chain.
    fn random_bucket_entry(&self, rng: &mut Draws) -> Option<&Node<V>> {
        if self.is_empty() {
            return None;
        }
        let s0 = self.tables[0].len();
        let head = loop {
            let link = if self.is_rehashing() {
                let h = self.rehash_at + rng.next() % (self.slots() - self.rehash_at);
                if h >= s0 {
                    &self.tables[1][h - s0]
                } else {
                    &self.tables[0][h]
                }
            } else {
                &self.tables[0][rng.next() & (s0 - 1)]
            };
            if let Some(n) = link.as_deref() {
                break n;
            }
        };
        let len = std::iter::successors(Some(head), |n| n.next.as_deref()).count();
        std::iter::successors(Some(head), |n| n.next.as_deref()).nth(rng.next() % len)
    }

    /// Chain lengths of every bucket of array `t` (0, or 1 while
    /// rehashing), for DEBUG HTSTATS-KEY.
    pub fn chain_lengths(&self, t: usize) -> Vec<usize> {
        (0..self.tables[t].len())
            .map(|i| self.bucket(t, i).count())
            .collect()
    }

    /// Approximate heap bytes owned, given each value's own heap size.
    pub fn heap_size(&self, value_size: impl Fn(&V) -> usize) -> usize {
        let node = std::mem::size_of::<Node<V>>();
        self.slots() * std::mem::size_of::<Link<V>>()
            + self
                .iter()
                .map(|(k, v)| {
                    let key_heap = if k.len() > super::bytes::INLINE_CAP {
                        k.len()
                    } else {
                        0
                    };
                    node + key_heap + value_size(v)
                })
                .sum::<usize>()
    }
}

impl<V: Clone> Clone for HashedMap<V> {
    fn clone(&self) -> Self {
        let mut m = HashedMap::with_capacity(self.len());
        for (k, v) in self.iter() {
            m.insert(k, v.clone());
        }
        m
    }
}

impl<V: std::fmt::Debug> std::fmt::Debug for HashedMap<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (String::from_utf8_lossy(k), v)))
            .finish()
    }
}

impl<V> Drop for HashedMap<V> {
    fn drop(&mut self) {
        for t in &mut self.tables {
            for head in t.iter_mut() {
                drop_chain(head.take());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_remove_scan() {
        let mut m: HashedMap<u32> = HashedMap::default();
        for i in 0..1000u32 {
            assert!(m.insert(i.to_string().as_bytes(), i).is_none());
        }
        assert_eq!(m.insert(b"5", 55), Some(5));
        assert_eq!(m.len(), 1000);
        assert_eq!(m.get(b"5"), Some(&55));
        assert_eq!(m.remove(b"5"), Some(55));
        assert_eq!(m.remove(b"5"), None);
        assert_eq!(m.len(), 999);
        let mut seen = 0;
        let mut cursor = 0;
        loop {
            cursor = m.scan(cursor, 10, |_, _| seen += 1);
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen, 999);
        assert!(m.random(u64::MAX).is_some());
        assert!(m.random(0).is_some());
    }

    /// Every entry present for a whole scan is returned however the table
    /// grows and shrinks between calls.
    #[test]
    fn scan_survives_resizes() {
        let mut m: HashedMap<()> = HashedMap::default();
        for i in 0..500 {
            m.insert(format!("k{i}").as_bytes(), ());
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            cursor = m.scan(cursor, 5, |k, _| {
                seen.insert(k.to_vec());
            });
            step += 1;
            // Grow, then shrink, mid-scan.
            if step < 40 {
                m.insert(format!("extra{step}").as_bytes(), ());
            } else {
                for i in 0..20 {
                    m.remove(format!("extra{}", step * 20 + i).as_bytes());
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500 {
            assert!(seen.contains(format!("k{i}").as_bytes()), "k{i} missed");
        }
    }

    /// Shrinking follows Redis: below a tenth full, to the smallest power of
    /// two holding the entries, moved incrementally; not while a child
    /// saves unless the ratio is extreme.
    #[test]
    fn resize_policy_and_rehash() {
        let mut m: HashedMap<()> = HashedMap::default();
        for i in 0..1000 {
            m.insert(format!("m{i}").as_bytes(), ());
        }
        while m.rehash(100) {}
        assert_eq!(m.tables[0].len(), 1024);
        child_started();
        for i in 0..950 {
            m.remove(format!("m{i}").as_bytes());
        }
        assert!(!m.is_rehashing(), "no shrink while a child saves");
        child_ended();
        m.remove(b"m950");
        assert!(m.is_rehashing());
        assert_eq!(m.tables[1].len(), 64);
        child_started();
        // 1024 / 64 is past the forced ratio: the move goes on.
        while m.rehash(1) {}
        child_ended();
        assert_eq!((m.tables[0].len(), m.len()), (64, 49));
        for i in 951..1000 {
            assert!(m.contains(format!("m{i}").as_bytes()));
        }
        assert_eq!(m.chain_lengths(0).iter().sum::<usize>(), 49);
    }

    /// Random draws reach every entry, from both arrays while rehashing.
    #[test]
    fn random_reaches_every_entry() {
        let mut m: HashedMap<()> = HashedMap::default();
        // Past the exact-rank size, so Redis's sampling is what draws.
        for i in 0..1100 {
            m.insert(format!("r{i}").as_bytes(), ());
        }
        assert!(m.is_rehashing(), "drawn from both arrays");
        let mut seen = std::collections::HashSet::new();
        for p in 0..400_000u64 {
            if let Some((k, _)) = m.random(p.wrapping_mul(0x9E37_79B9_7F4A_7C15)) {
                seen.insert(k.to_vec());
            }
        }
        assert_eq!(seen.len(), 1100);
    }
}
