//! The keyspace hash table: chained buckets in a power-of-two table, like
//! Redis's `dict.c`. Owning the table (rather than using a map crate) gives
//! what the keyspace needs from it: SCAN's reverse-binary cursor, which
//! returns every key present for a whole iteration even across resizes;
//! fair random sampling for RANDOMKEY; and a bucket cursor for the active
//! expiry cycle. Each entry holds key, value and expiry together, so a TTL
//! costs no second copy of the key.

use std::hash::{BuildHasher, Hasher};

use super::bytes::CompactBytes;
use super::value::Value;

/// A key with its value and metadata.
pub struct Entry {
    next: Option<Box<Entry>>,
    /// The key.
    pub key: CompactBytes,
    /// The value.
    pub value: Value,
    /// Absolute expiry in Unix milliseconds; 0 means none.
    pub(super) expire_at: u64,
    /// Last access, in seconds of the server's LRU clock.
    pub lru: u32,
}

impl Entry {
    /// Absolute expiry in Unix milliseconds; 0 means none. Changed only
    /// through the store, which keeps the volatile-key count.
    #[inline]
    pub fn expire_at(&self) -> u64 {
        self.expire_at
    }

    /// True when the entry has a TTL that has passed at `now_ms`.
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now_ms
    }
}

/// A chained hash table keyed by byte strings.
pub struct Dict {
    buckets: Vec<Option<Box<Entry>>>,
    len: usize,
    hasher: std::collections::hash_map::RandomState,
}

const INITIAL_SIZE: usize = 4;

/// Most keys [`Dict::prefetch`] looks ahead.
const PREFETCH_MAX: usize = 32;

/// A cache prefetch of the line holding `p` (no-op off x86_64).
#[inline(always)]
fn prefetch_read<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads nothing architecturally;
    // any address is allowed.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl Default for Dict {
    fn default() -> Self {
        Dict {
            buckets: Vec::new(),
            len: 0,
            hasher: Default::default(),
        }
    }
}

impl Dict {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of buckets (for INFO-style stats and tests).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// The keyed SipHash of `key`.
    #[inline]
    pub fn hash(&self, key: &[u8]) -> u64 {
        let mut h = self.hasher.build_hasher();
        h.write(key);
        h.finish()
    }

    #[inline]
    fn mask(&self) -> usize {
        self.buckets.len().wrapping_sub(1)
    }

    /// The entry for `key`.
    pub fn get(&self, hash: u64, key: &[u8]) -> Option<&Entry> {
        if self.buckets.is_empty() {
            return None;
        }
        let mut cur = self.buckets[hash as usize & self.mask()].as_deref();
        while let Some(e) = cur {
            if e.key.as_slice() == key {
                return Some(e);
            }
            cur = e.next.as_deref();
        }
        None
    }

    /// Starts loading the buckets, then the entries, of `keys` into the CPU
    /// cache. A pipelined batch calls this before running its commands, so
    /// their lookups overlap their memory latency instead of paying it one
    /// after another. Only a hint: nothing is read that a lookup would not.
    pub fn prefetch<'a>(&self, keys: impl Iterator<Item = &'a [u8]>) {
        if self.buckets.is_empty() {
            return;
        }
        let mask = self.mask();
        let mut idx = [0usize; PREFETCH_MAX];
        let mut n = 0;
        for k in keys.take(PREFETCH_MAX) {
            let i = self.hash(k) as usize & mask;
            prefetch_read(self.buckets.as_ptr().wrapping_add(i));
            idx[n] = i;
            n += 1;
        }
        for &i in &idx[..n] {
            if let Some(e) = self.buckets.get(i).and_then(|b| b.as_deref()) {
                prefetch_read(e as *const Entry);
            }
        }
    }

    /// The entry for `key`, mutably.
    pub fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Entry> {
        if self.buckets.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut cur = self.buckets[hash as usize & mask].as_deref_mut();
        while let Some(e) = cur {
            if e.key.as_slice() == key {
                return Some(e);
            }
            cur = e.next.as_deref_mut();
        }
        None
    }

    /// Inserts a new entry; the caller has checked the key is absent.
    pub fn insert_new(
        &mut self,
        hash: u64,
        key: CompactBytes,
        value: Value,
        expire_at: u64,
        lru: u32,
    ) -> &mut Entry {
        if self.len >= self.buckets.len() {
            self.resize((self.len + 1).next_power_of_two().max(INITIAL_SIZE));
        }
        let idx = hash as usize & self.mask();
        let next = self.buckets[idx].take();
        self.len += 1;
        let slot = &mut self.buckets[idx];
        *slot = Some(Box::new(Entry {
            next,
            key,
            value,
            expire_at,
            lru,
        }));
        slot.as_deref_mut().expect("just inserted") // invariant: the slot was filled on the line above.
    }

    /// Removes and returns the entry for `key`.
    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<Box<Entry>> {
        if self.buckets.is_empty() {
            return None;
        }
        let idx = hash as usize & self.mask();
        let removed = Self::unlink(&mut self.buckets[idx], key)?;
        self.len -= 1;
        self.maybe_shrink();
        Some(removed)
    }

    fn unlink(mut link: &mut Option<Box<Entry>>, key: &[u8]) -> Option<Box<Entry>> {
        loop {
            match link {
                None => return None,
                Some(e) if e.key.as_slice() == key => {
                    let mut e = link.take()?;
                    *link = e.next.take();
                    return Some(e);
                }
                Some(e) => link = &mut e.next,
            }
        }
    }

    /// Shrinks when fewer than a tenth of the buckets are used, as Redis
    /// does (HASHTABLE_MIN_FILL).
    fn maybe_shrink(&mut self) {
        let size = self.buckets.len();
        if size > INITIAL_SIZE && self.len * 10 < size {
            self.resize(self.len.next_power_of_two().max(INITIAL_SIZE));
        }
    }

    fn resize(&mut self, new_size: usize) {
        let old = std::mem::replace(&mut self.buckets, (0..new_size).map(|_| None).collect());
        let mask = new_size - 1;
        for mut head in old {
            while let Some(mut e) = head {
                head = e.next.take();
                let idx = self.hash(e.key.as_slice()) as usize & mask;
                e.next = self.buckets[idx].take();
                self.buckets[idx] = Some(e);
            }
        }
    }

    /// Removes every entry, returning the old table so the caller can drop
    /// it elsewhere (FLUSHALL ASYNC).
    pub fn take(&mut self) -> Dict {
        let hasher = self.hasher.clone();
        std::mem::replace(
            self,
            Dict {
                buckets: Vec::new(),
                len: 0,
                hasher,
            },
        )
    }

    /// Visits every entry.
    pub fn for_each(&self, mut f: impl FnMut(&Entry)) {
        for b in &self.buckets {
            let mut cur = b.as_deref();
            while let Some(e) = cur {
                f(e);
                cur = e.next.as_deref();
            }
        }
    }

    /// One SCAN step: visits the bucket(s) the cursor names and returns the
    /// next cursor (0 when the iteration is complete). Uses Redis's
    /// reverse-binary increment, so resizes between calls never make it
    /// miss an entry that stayed in the table.
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(&Entry)) -> u64 {
        if self.buckets.is_empty() {
            return 0;
        }
        let mask = self.mask() as u64;
        let mut cur = self.buckets[(cursor & mask) as usize].as_deref();
        while let Some(e) = cur {
            f(e);
            cur = e.next.as_deref();
        }
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    /// Removes the entries `pred` selects in the bucket named by `cursor`,
    /// returning the next cursor (as [`Dict::scan`]) and what was removed.
    /// `pred` sees every entry of the bucket. The active expiry cycle walks
    /// the table with it.
    pub fn sweep_bucket(
        &mut self,
        cursor: u64,
        mut pred: impl FnMut(&Entry) -> bool,
    ) -> (u64, Vec<Box<Entry>>) {
        if self.buckets.is_empty() {
            return (0, Vec::new());
        }
        let mask = self.mask() as u64;
        let mut removed = Vec::new();
        let mut link = &mut self.buckets[(cursor & mask) as usize];
        loop {
            match link {
                None => break,
                Some(e) => {
                    if pred(e) {
                        let mut e = link.take().expect("non-empty link"); // invariant: matched `Some` just above.
                        *link = e.next.take();
                        removed.push(e);
                    } else {
                        let next = link.as_mut().expect("non-empty link"); // invariant: matched `Some` above.
                        link = &mut next.next;
                    }
                }
            }
        }
        self.len -= removed.len();
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        (v.reverse_bits(), removed)
    }

    /// Shrinks the table if removals left it sparse (after a sweep).
    /// Calls `f` on each entry of bucket `index` (masked to the table).
    pub fn bucket_each(&self, index: u64, mut f: impl FnMut(&Entry)) {
        if self.buckets.is_empty() {
            return;
        }
        let mut cur = self.buckets[(index as usize) & self.mask()].as_deref();
        while let Some(e) = cur {
            f(e);
            cur = e.next.as_deref();
        }
    }

    pub fn compact(&mut self) {
        self.maybe_shrink();
    }

    /// A random entry, or None when empty, every entry equally likely.
    /// Redis's dictGetRandomKey (a random non-empty bucket, then a random
    /// entry of its chain) favours entries in short chains; here a random
    /// (bucket, depth) pair is drawn until it names an entry, which gives
    /// each entry the same chance, with the chain-walking pick kept only as
    /// the fallback when chains run deeper than the draw reaches.
    pub fn random(&self, mut rng: impl FnMut(usize) -> usize) -> Option<&Entry> {
        if self.len == 0 {
            return None;
        }
        let tries = 64 * self.buckets.len().div_ceil(self.len).max(1);
        for _ in 0..tries.min(1 << 16) {
            let depth = rng(RANDOM_DEPTH);
            let mut cur = self.buckets[rng(self.buckets.len())].as_deref();
            for _ in 0..depth {
                cur = cur.and_then(|e| e.next.as_deref());
            }
            if let Some(e) = cur {
                return Some(e);
            }
        }
        loop {
            let b = &self.buckets[rng(self.buckets.len())];
            if let Some(head) = b.as_deref() {
                let mut n = 0;
                let mut cur = Some(head);
                while let Some(e) = cur {
                    n += 1;
                    cur = e.next.as_deref();
                }
                let mut pick = rng(n);
                let mut cur = head;
                while pick > 0 {
                    cur = cur.next.as_deref().expect("chain shorter than counted"); // invariant: pick < chain length counted above.
                    pick -= 1;
                }
                return Some(cur);
            }
        }
    }
}

/// Chain positions a random draw reaches: with the table kept at most
/// about as full as it has buckets, longer chains are very rare.
const RANDOM_DEPTH: usize = 8;

impl Drop for Dict {
    fn drop(&mut self) {
        // Unlink chains iteratively so a long chain cannot overflow the stack.
        for b in &mut self.buckets {
            let mut cur = b.take();
            while let Some(mut e) = cur {
                cur = e.next.take();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert(d: &mut Dict, k: &[u8]) {
        let h = d.hash(k);
        d.insert_new(h, CompactBytes::new(k), Value::Int(1), 0, 0);
    }

    #[test]
    fn insert_get_remove_resize() {
        let mut d = Dict::default();
        for i in 0..1000 {
            insert(&mut d, format!("k{i}").as_bytes());
        }
        assert_eq!(d.len(), 1000);
        for i in 0..1000 {
            let k = format!("k{i}");
            assert!(d.get(d.hash(k.as_bytes()), k.as_bytes()).is_some());
        }
        for i in 0..990 {
            let k = format!("k{i}");
            assert!(d.remove(d.hash(k.as_bytes()), k.as_bytes()).is_some());
        }
        assert_eq!(d.len(), 10);
        assert!(d.buckets() <= 16);
    }

    #[test]
    fn scan_survives_growth() {
        let mut d = Dict::default();
        for i in 0..100 {
            insert(&mut d, format!("old{i}").as_bytes());
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut steps = 0;
        loop {
            cursor = d.scan(cursor, |e| {
                seen.insert(e.key.as_slice().to_vec());
            });
            steps += 1;
            if steps == 10 {
                for i in 0..1000 {
                    insert(&mut d, format!("new{i}").as_bytes());
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..100 {
            assert!(seen.contains(format!("old{i}").as_bytes()), "old{i} missed");
        }
    }
}
