//! The keyspace hash table: chained buckets in a power-of-two table, like
//! Redis's `dict.c`. Owning the table (rather than using a map crate) gives
//! what the keyspace needs from it: SCAN's reverse-binary cursor, which
//! returns every key present for a whole iteration even across resizes;
//! fair random sampling for RANDOMKEY; and a bucket cursor for the active
//! expiry cycle. Each entry (`entry.rs`) is one allocation holding its
//! chain link, key, expiry and value, so a TTL costs no second copy of the
//! key. A bucket is one 8-byte word; the table doubles when it holds as
//! many keys as buckets, so buckets cost 8 to 16 bytes per key.

use crate::util::siphash::SipKey;

use super::entry::{drop_entry, entry_mut, entry_ref, key_of, new_entry, next_of, untag, FLAGS};
pub use super::entry::{Entry, EntryBox, EntryMut, Incoming};

/// One power-of-two array of bucket chains: each word is the first
/// entry's address, or null.
type Buckets = Vec<*mut u8>;

/// A chained hash table keyed by byte strings, resized incrementally as
/// Redis's: while it grows or shrinks, entries live in two arrays, and
/// each insertion and removal (and the server's cron, for a millisecond)
/// moves a bucket or more from the old one to the new one, so no single
/// command pays for rehashing millions of keys.
pub struct Dict {
    /// The table (the old one while rehashing).
    buckets: Buckets,
    /// The new table while rehashing; empty otherwise.
    next: Buckets,
    /// While rehashing, the buckets of `buckets` before this one have
    /// been moved to `next`.
    rehash_at: usize,
    len: usize,
    hasher: SipKey,
    /// The keys by cluster hash slot, in cluster mode (database 0).
    slots: Option<Box<super::slots::SlotIndex>>,
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

/// The entry for `key` in the chain starting at `cur`.
#[inline]
fn chain_get<'a>(mut cur: *mut u8, key: &[u8]) -> Option<&'a Entry> {
    while !cur.is_null() {
        // SAFETY: chain words link live entries the table owns; the table
        // is borrowed for 'a by the caller.
        unsafe {
            if key_of(cur) == key {
                return Some(entry_ref(cur));
            }
            cur = next_of(cur);
        }
    }
    None
}

/// The link word pointing at the entry for `key` in the chain hanging
/// from `link`.
#[inline]
fn chain_find(mut link: *mut *mut u8, key: &[u8]) -> Option<*mut *mut u8> {
    loop {
        // SAFETY: `link` is a bucket or an entry's link word of a table
        // the caller borrows mutably.
        let cur = untag(unsafe { *link });
        if cur.is_null() {
            return None;
        }
        // SAFETY: as above; the link word heads the entry.
        unsafe {
            if key_of(cur) == key {
                return Some(link);
            }
            link = cur.cast::<*mut u8>();
        }
    }
}

/// Calls `f` on each entry of a chain.
#[inline]
fn chain_each(mut cur: *mut u8, f: &mut impl FnMut(&Entry)) {
    while !cur.is_null() {
        // SAFETY: as chain_get.
        let e = unsafe { entry_ref(cur) };
        f(e);
        cur = e.next();
    }
}

/// Unlinks the entry the word at `link` points to, returning it.
///
/// # Safety
/// `link` is a live link word pointing at a live entry.
unsafe fn unlink(link: *mut *mut u8) -> EntryBox {
    // SAFETY: per the caller; the owner's flag bits stay with the word.
    unsafe {
        let e = untag(*link);
        let next = entry_ref(e).next();
        let owner = (*link).addr() & FLAGS;
        *link = next.map_addr(|a| a | owner);
        EntryBox::from_raw(e)
    }
}

/// Unlinks the entries `pred` selects from the chain in `bucket` into
/// `removed`.
fn chain_remove_if(
    bucket: &mut *mut u8,
    pred: &mut impl FnMut(&Entry) -> bool,
    removed: &mut Vec<EntryBox>,
) {
    let mut link: *mut *mut u8 = bucket;
    loop {
        // SAFETY: `link` is the bucket or a link word of this chain.
        let cur = untag(unsafe { *link });
        if cur.is_null() {
            return;
        }
        // SAFETY: a live entry of the chain.
        let e = unsafe { entry_mut(cur) };
        if pred(e) {
            // SAFETY: `link` points at `cur`.
            removed.push(unsafe { unlink(link) });
        } else {
            link = e.link_word();
        }
    }
}

/// Unlinks the entry for `key` from the chain in `bucket`.
fn chain_unlink(bucket: &mut *mut u8, key: &[u8]) -> Option<EntryBox> {
    let link = chain_find(bucket, key)?;
    // SAFETY: chain_find returned the word pointing at the entry.
    Some(unsafe { unlink(link) })
}

/// Redis's reverse-binary cursor increment under `mask`.
#[inline]
fn next_cursor(cursor: u64, mask: u64) -> u64 {
    let v = (cursor | !mask).reverse_bits().wrapping_add(1);
    v.reverse_bits()
}

/// `n` empty buckets.
fn empty_buckets(n: usize) -> Buckets {
    vec![std::ptr::null_mut(); n]
}

// SAFETY: the table owns its entries outright, as boxes would; nothing
// is shared between tables.
unsafe impl Send for Dict {}

impl Default for Dict {
    fn default() -> Self {
        Dict {
            buckets: Vec::new(),
            next: Vec::new(),
            rehash_at: 0,
            len: 0,
            hasher: SipKey::random(),
            slots: None,
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

    /// The size of the larger bucket array, a power of two: indexes below
    /// it name every bucket to [`Dict::bucket_each`].
    pub fn buckets(&self) -> usize {
        self.buckets.len().max(self.next.len())
    }

    /// Bucket slots allocated, over both arrays while rehashing.
    pub fn allocated_buckets(&self) -> usize {
        self.buckets.len() + self.next.len()
    }

    /// True while entries are being moved to a resized array.
    pub fn is_rehashing(&self) -> bool {
        !self.next.is_empty()
    }

    /// The keyed SipHash of `key`.
    #[inline]
    pub fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash(key)
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
        let found = chain_get(self.buckets[hash as usize & self.mask()], key);
        if found.is_some() || self.next.is_empty() {
            return found;
        }
        let i = hash as usize & (self.next.len() - 1);
        chain_get(self.next[i], key)
    }

    /// True when `key` has an entry (its key compared, nothing decoded).
    pub fn contains(&self, hash: u64, key: &[u8]) -> bool {
        if self.buckets.is_empty() {
            return false;
        }
        let has = |mut cur: *mut u8| {
            while !cur.is_null() {
                // SAFETY: chain words link live entries the table owns.
                unsafe {
                    if key_of(cur) == key {
                        return true;
                    }
                    cur = next_of(cur);
                }
            }
            false
        };
        has(self.buckets[hash as usize & self.mask()])
            || (!self.next.is_empty() && has(self.next[hash as usize & (self.next.len() - 1)]))
    }

    /// Starts loading the buckets, then the entries, of `keys` into the CPU
    /// cache. A pipelined batch calls this before running its commands, so
    /// their lookups overlap their memory latency instead of paying it one
    /// after another. Only a hint: nothing is read that a lookup would not.
    pub fn prefetch<'a>(&self, keys: impl Iterator<Item = &'a [u8]>) {
        if self.buckets.is_empty() {
            return;
        }
        let mut at = [(false, 0usize); PREFETCH_MAX];
        let mut n = 0;
        for k in keys.take(PREFETCH_MAX) {
            let (in_next, i) = self.bucket_of(self.hash(k));
            let table = if in_next { &self.next } else { &self.buckets };
            prefetch_read(table.as_ptr().wrapping_add(i));
            at[n] = (in_next, i);
            n += 1;
        }
        for &(in_next, i) in &at[..n] {
            let table = if in_next { &self.next } else { &self.buckets };
            if let Some(&e) = table.get(i) {
                prefetch_read(e);
            }
        }
    }

    /// Where a key of `hash` is most likely: (in the new array, index).
    /// While rehashing, a bucket already moved is in the new array; a key
    /// added since may be there too.
    #[inline]
    fn bucket_of(&self, hash: u64) -> (bool, usize) {
        let i = hash as usize & self.mask();
        if i < self.rehash_at && !self.next.is_empty() {
            (true, hash as usize & (self.next.len() - 1))
        } else {
            (false, i)
        }
    }

    /// The entry for `key`, mutably.
    pub fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<EntryMut<'_>> {
        if self.buckets.is_empty() {
            return None;
        }
        let i = hash as usize & self.mask();
        let mut link = chain_find(&mut self.buckets[i], key);
        if link.is_none() && !self.next.is_empty() {
            let j = hash as usize & (self.next.len() - 1);
            link = chain_find(&mut self.next[j], key);
        }
        // SAFETY: the word links the live entry; `self` stays mutably
        // borrowed as long as the EntryMut.
        link.map(|l| unsafe { EntryMut::new(l) })
    }

    /// Whether the full table grows now: as any table (the fork child's
    /// policy), and not past maxmemory unless it is well over full.
    fn may_grow(&self) -> bool {
        let (used, size) = (self.len, self.buckets.len());
        let more = (used + 1).next_power_of_two() * std::mem::size_of::<usize>();
        super::hashed::may_grow(used, size) && super::hashed::expand_allowed(more, used, size)
    }

    /// Inserts a new entry; the caller has checked the key is absent.
    pub fn insert_new<'v>(
        &mut self,
        hash: u64,
        key: &[u8],
        value: impl Into<Incoming<'v>>,
        expire_at: u64,
        lru: u32,
    ) -> EntryMut<'_> {
        if self.next.is_empty()
            && self.len >= self.buckets.len()
            && (self.buckets.is_empty() || self.may_grow())
        {
            self.start_rehash((self.len + 1).next_power_of_two().max(INITIAL_SIZE));
        }
        self.rehash_step(1);
        self.len += 1;
        if let Some(ix) = &mut self.slots {
            ix.add(key);
        }
        // While rehashing, new entries go to the new array.
        let table = if self.next.is_empty() {
            &mut self.buckets
        } else {
            &mut self.next
        };
        let idx = hash as usize & (table.len() - 1);
        table[idx] = new_entry(key, value.into(), expire_at, lru, table[idx]);
        // SAFETY: the bucket now links the new entry; `self` stays
        // mutably borrowed as long as the EntryMut.
        unsafe { EntryMut::new(&mut table[idx]) }
    }

    /// Removes and returns the entry for `key`.
    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<EntryBox> {
        if self.buckets.is_empty() {
            return None;
        }
        self.rehash_step(1);
        let i = hash as usize & self.mask();
        let mut removed = chain_unlink(&mut self.buckets[i], key);
        if removed.is_none() && !self.next.is_empty() {
            let j = hash as usize & (self.next.len() - 1);
            removed = chain_unlink(&mut self.next[j], key);
        }
        let removed = removed?;
        self.len -= 1;
        if let Some(ix) = &mut self.slots {
            ix.remove(key);
        }
        self.maybe_shrink();
        Some(removed)
    }

    /// Starts shrinking when fewer than a tenth of the buckets are used,
    /// as Redis does (HASHTABLE_MIN_FILL).
    fn maybe_shrink(&mut self) {
        let size = self.buckets.len();
        if self.next.is_empty()
            && size > INITIAL_SIZE
            && self.len * 10 < size
            && super::hashed::may_shrink()
        {
            self.start_rehash(self.len.next_power_of_two().max(INITIAL_SIZE));
        }
    }

    /// Begins moving the entries into an array of `size` buckets. An empty
    /// table gets its array at once.
    fn start_rehash(&mut self, size: usize) {
        if self.len == 0 {
            self.buckets = empty_buckets(size);
            return;
        }
        self.next = empty_buckets(size);
        self.rehash_at = 0;
    }

    /// Moves up to `n` non-empty buckets to the new array, visiting at most
    /// ten times as many empty ones (Redis's dictRehash). True while there
    /// is more to move.
    pub fn rehash_step(&mut self, n: usize) -> bool {
        if self.next.is_empty() {
            return false;
        }
        if !super::hashed::may_rehash(self.buckets.len(), self.next.len()) {
            return true;
        }
        let mask = self.next.len() - 1;
        let mut empty_visits = n * 10;
        let mut moved = 0;
        while moved < n && self.rehash_at < self.buckets.len() {
            let mut head =
                std::mem::replace(&mut self.buckets[self.rehash_at], std::ptr::null_mut());
            self.rehash_at += 1;
            if head.is_null() {
                empty_visits -= 1;
                if empty_visits == 0 {
                    break;
                }
                continue;
            }
            while !head.is_null() {
                // SAFETY: an entry of the chain being moved, owned by the table.
                let e = unsafe { entry_mut(head) };
                let moving = head;
                head = e.next();
                let idx = self.hasher.hash(e.key()) as usize & mask;
                e.set_next(self.next[idx]);
                self.next[idx] = moving;
            }
            moved += 1;
        }
        if self.rehash_at < self.buckets.len() {
            return true;
        }
        self.buckets = std::mem::take(&mut self.next);
        self.rehash_at = 0;
        // Removals while it shrank may call for a smaller array still.
        self.maybe_shrink();
        self.is_rehashing()
    }

    /// Rehashes for about `budget` (Redis's incrementallyRehash from the
    /// cron): 100 buckets at a time between clock checks.
    pub fn rehash_for(&mut self, budget: std::time::Duration) {
        let start = std::time::Instant::now();
        while self.rehash_step(100) {
            if start.elapsed() >= budget {
                return;
            }
        }
    }

    /// Removes every entry, returning the old table so the caller can drop
    /// it elsewhere (FLUSHALL ASYNC).
    pub fn take(&mut self) -> Dict {
        let hasher = self.hasher;
        let slots = self.slots.as_ref().map(|_| Box::default());
        std::mem::replace(
            self,
            Dict {
                buckets: Vec::new(),
                next: Vec::new(),
                rehash_at: 0,
                len: 0,
                hasher,
                slots,
            },
        )
    }

    /// Keeps the keys by cluster hash slot from now on (cluster mode),
    /// starting with those present.
    pub fn index_slots(&mut self) {
        let mut ix = Box::<super::slots::SlotIndex>::default();
        self.for_each(|e| ix.add(e.key()));
        self.slots = Some(ix);
    }

    /// The keys by hash slot, when kept.
    pub fn slot_index(&self) -> Option<&super::slots::SlotIndex> {
        self.slots.as_deref()
    }

    /// The chain length of every bucket of array `table` (0: the table,
    /// 1: the rehashing target, empty when not rehashing), for DEBUG
    /// HTSTATS.
    pub fn chain_lengths(&self, table: usize) -> Vec<usize> {
        let array = if table == 0 {
            &self.buckets
        } else {
            &self.next
        };
        array
            .iter()
            .map(|b| {
                let mut n = 0;
                chain_each(*b, &mut |_| n += 1);
                n
            })
            .collect()
    }

    /// Visits every entry.
    pub fn for_each(&self, mut f: impl FnMut(&Entry)) {
        for b in self.buckets.iter().chain(&self.next) {
            chain_each(*b, &mut f);
        }
    }

    /// The arrays as (smaller, larger) and whether there are two.
    fn by_size(&self) -> (&Buckets, &Buckets) {
        if self.next.is_empty() || self.buckets.len() <= self.next.len() {
            (&self.buckets, &self.next)
        } else {
            (&self.next, &self.buckets)
        }
    }

    /// One SCAN step: visits the bucket(s) the cursor names and returns the
    /// next cursor (0 when the iteration is complete). Uses Redis's
    /// reverse-binary increment, so resizes between calls never make it
    /// miss an entry that stayed in the table; while rehashing, the
    /// smaller array's bucket and every bucket of the larger one it
    /// expands to are visited, as Redis's dictScan does.
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(&Entry)) -> u64 {
        if self.buckets.is_empty() {
            return 0;
        }
        let (small, large) = self.by_size();
        let m0 = small.len() as u64 - 1;
        chain_each(small[(cursor & m0) as usize], &mut f);
        if large.is_empty() {
            return next_cursor(cursor, m0);
        }
        let m1 = large.len() as u64 - 1;
        let mut v = cursor;
        loop {
            chain_each(large[(v & m1) as usize], &mut f);
            v = next_cursor(v, m1);
            if v & (m0 ^ m1) == 0 {
                return v;
            }
        }
    }

    /// Removes the entries `pred` selects in the bucket(s) named by
    /// `cursor`, returning the next cursor (as [`Dict::scan`]) and what was
    /// removed. `pred` sees every entry of those buckets. The active
    /// expiry cycle walks the table with it.
    pub fn sweep_bucket(
        &mut self,
        cursor: u64,
        mut pred: impl FnMut(&Entry) -> bool,
    ) -> (u64, Vec<EntryBox>) {
        let mut removed = Vec::new();
        if self.buckets.is_empty() {
            return (0, removed);
        }
        let swap = !self.next.is_empty() && self.buckets.len() > self.next.len();
        let (small, large) = if swap {
            (&mut self.next, &mut self.buckets)
        } else {
            (&mut self.buckets, &mut self.next)
        };
        let m0 = small.len() as u64 - 1;
        chain_remove_if(&mut small[(cursor & m0) as usize], &mut pred, &mut removed);
        let next = if large.is_empty() {
            next_cursor(cursor, m0)
        } else {
            let m1 = large.len() as u64 - 1;
            let mut v = cursor;
            loop {
                chain_remove_if(&mut large[(v & m1) as usize], &mut pred, &mut removed);
                v = next_cursor(v, m1);
                if v & (m0 ^ m1) == 0 {
                    break v;
                }
            }
        };
        self.len -= removed.len();
        if let Some(ix) = &mut self.slots {
            for e in &removed {
                ix.remove(e.key());
            }
        }
        (next, removed)
    }

    /// Calls `f` on each entry of bucket `index` (masked to each array;
    /// indexes range below [`Dict::buckets`]).
    pub fn bucket_each(&self, index: u64, mut f: impl FnMut(&Entry)) {
        for table in [&self.buckets, &self.next] {
            if !table.is_empty() {
                let i = index as usize & (table.len() - 1);
                chain_each(table[i], &mut f);
            }
        }
    }

    /// Shrinks the table if removals left it sparse (after a sweep).
    pub fn compact(&mut self) {
        self.maybe_shrink();
    }

    /// A random entry, or None when empty, every entry equally likely.
    /// Redis's dictGetRandomKey (a random non-empty bucket, then a random
    /// entry of its chain) favours entries in short chains; here a random
    /// (bucket, depth) pair over both arrays is drawn until it names an
    /// entry, which gives each entry the same chance, with the
    /// chain-walking pick kept only as the fallback when chains run deeper
    /// than the draw reaches.
    pub fn random(&self, mut rng: impl FnMut(usize) -> usize) -> Option<&Entry> {
        if self.len == 0 {
            return None;
        }
        let total = self.allocated_buckets();
        // SAFETY (both closures): chain words link live entries the
        // table owns, borrowed with `self`.
        let at = |p: *mut u8| (!p.is_null()).then(|| unsafe { entry_ref(p) });
        let bucket = |i: usize| {
            at(if i < self.buckets.len() {
                self.buckets[i]
            } else {
                self.next[i - self.buckets.len()]
            })
        };
        let tries = 64 * total.div_ceil(self.len).max(1);
        for _ in 0..tries.min(1 << 16) {
            let depth = rng(RANDOM_DEPTH);
            let mut cur = bucket(rng(total));
            for _ in 0..depth {
                cur = cur.and_then(|e| at(e.next()));
            }
            if let Some(e) = cur {
                return Some(e);
            }
        }
        loop {
            if let Some(head) = bucket(rng(total)) {
                let mut n = 0;
                let mut cur = head;
                loop {
                    n += 1;
                    match at(cur.next()) {
                        Some(e) => cur = e,
                        None => break,
                    }
                }
                let mut pick = rng(n);
                cur = head;
                while pick > 0 {
                    cur = at(cur.next()).expect("chain shorter than counted"); // invariant: pick < chain length counted above.
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
        for b in self.buckets.iter_mut().chain(self.next.iter_mut()) {
            let mut cur = std::mem::replace(b, std::ptr::null_mut());
            while !cur.is_null() {
                // SAFETY: each entry is reached once, by the one link to it.
                unsafe {
                    let next = entry_ref(cur).next();
                    drop_entry(cur);
                    cur = next;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::value::Value;

    fn insert(d: &mut Dict, k: &[u8]) {
        let h = d.hash(k);
        d.insert_new(h, k, Value::Int(1), 0, 0);
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
        d.rehash_for(std::time::Duration::from_secs(1));
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
                seen.insert(e.key().to_vec());
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

    /// Keys `k0..kn`.
    fn keys(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("k{i}").into_bytes()).collect()
    }

    #[test]
    fn lookups_during_a_rehash() {
        let mut d = Dict::default();
        let ks = keys(1000);
        for k in &ks[..512] {
            insert(&mut d, k);
        }
        // The 513th insertion starts a growth that the next ones advance.
        insert(&mut d, &ks[512]);
        assert!(d.is_rehashing());
        for k in &ks[513..600] {
            insert(&mut d, k);
        }
        assert!(d.is_rehashing(), "one bucket per insertion");
        for k in &ks[..600] {
            let h = d.hash(k);
            assert!(d.get(h, k).is_some());
            assert!(d.get_mut(h, k).is_some());
        }
        for k in &ks[..300] {
            assert!(d.remove(d.hash(k), k).is_some());
            assert!(d.get(d.hash(k), k).is_none());
        }
        assert_eq!(d.len(), 300);
        let mut n = 0;
        d.for_each(|_| n += 1);
        assert_eq!(n, 300);
        d.rehash_for(std::time::Duration::from_secs(1));
        assert!(!d.is_rehashing());
        assert_eq!(d.allocated_buckets(), 1024);
        for k in &ks[300..600] {
            assert!(d.get(d.hash(k), k).is_some());
        }
    }

    /// SCAN and the expiry sweep see every key that stays, whatever
    /// growth, shrinking and rehash steps happen between their calls.
    #[test]
    fn scan_and_sweep_through_rehashes() {
        let ks = keys(5000);
        for phase in 0..3 {
            let mut d = Dict::default();
            let stay = &ks[..200];
            for k in stay {
                insert(&mut d, k);
            }
            if phase == 2 {
                for k in &ks[200..5000] {
                    insert(&mut d, k);
                }
                d.rehash_for(std::time::Duration::from_secs(1));
            }
            let (mut seen, mut swept) = (std::collections::HashSet::new(), 0);
            let (mut cursor, mut sweep_cursor, mut steps) = (0, 0, 0);
            let (mut scanning, mut sweeping) = (true, true);
            while scanning || sweeping {
                if scanning {
                    cursor = d.scan(cursor, |e| {
                        seen.insert(e.key().to_vec());
                    });
                    scanning = cursor != 0;
                }
                if sweeping {
                    let (next, removed) = d.sweep_bucket(sweep_cursor, |e| e.key() == b"k7");
                    swept += removed.len();
                    sweep_cursor = next;
                    sweeping = next != 0;
                }
                steps += 1;
                match phase {
                    // Growth in steps while scanning.
                    0 if steps < 40 => {
                        for k in &ks[200 + steps * 50..250 + steps * 50] {
                            insert(&mut d, k);
                        }
                    }
                    // A big growth, then its rehash advanced by removals.
                    1 if steps == 5 => {
                        for k in &ks[200..5000] {
                            insert(&mut d, k);
                        }
                    }
                    1 if steps > 5 && steps < 60 => {
                        for k in &ks[200 + steps * 80..280 + steps * 80] {
                            d.remove(d.hash(k), k);
                        }
                    }
                    // Shrinking.
                    2 if steps < 60 => {
                        for k in &ks[200 + steps * 80..280 + steps * 80] {
                            d.remove(d.hash(k), k);
                        }
                    }
                    _ => {}
                }
            }
            for k in stay {
                assert!(
                    seen.contains(k) || k == b"k7",
                    "phase {phase}: {} missed",
                    String::from_utf8_lossy(k)
                );
            }
            assert_eq!(swept, 1, "phase {phase}: k7 swept once");
        }
    }

    #[test]
    fn random_reaches_both_arrays() {
        let mut d = Dict::default();
        let ks = keys(600);
        for k in &ks {
            insert(&mut d, k);
        }
        assert!(d.is_rehashing());
        let mut seed = 1u64;
        let mut rng = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n
        };
        let mut seen = std::collections::HashSet::new();
        for _ in 0..20000 {
            let e = d.random(&mut rng).expect("non-empty");
            seen.insert(e.key().to_vec());
        }
        assert_eq!(seen.len(), 600, "every key drawn");
    }
}
