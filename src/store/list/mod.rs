//! List values, stored the way Redis's quicklist of listpacks is: a deque of
//! chunks, each a packed byte buffer of length-prefixed elements, as large
//! as `list-max-listpack-size` allows (a size class, 8 KB by default, or a
//! count of elements).
//!
//! An element is encoded as `varint(len) bytes rvarint(len)`: the LEB128
//! length before the bytes lets iteration walk forward, the same length
//! written backwards after them lets it walk backward (listpack's
//! `backlen`). A 16-byte element costs 18 bytes, as in Redis's listpack.
//! A chunk whose elements all have one length stores them bare instead,
//! the length kept once for the chunk (a 16-byte element then costs 16);
//! an element of another length rewrites it with lengths, or starts a new
//! chunk when it is full.
//!
//! Each chunk keeps free space at its front (`start`) as well as its back,
//! so pushes and pops at both ends of the list are O(1) amortised; changes
//! in the middle (LSET, LINSERT, LREM) rewrite one chunk, as Redis does.

mod chunk;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use self::chunk::CHUNK_MAX;
use self::chunk::{entry_size, read_fwd_in, Chunk, NodeLimit, CHUNK_MIN};
use super::tuning;

/// Elements at least this long get a chunk of their own (Redis's
/// quicklist packed threshold, 1 GB unless DEBUG QUICKLIST-PACKED-THRESHOLD
/// changes it), at either end of a list.
static PLAIN_THRESHOLD: AtomicUsize = AtomicUsize::new(1 << 30);

/// Sets the size from which elements pushed at a list's ends get a chunk
/// of their own; 0 restores 1 GB. False (and unchanged) from just under
/// 4 GB up, as Redis refuses.
pub fn set_plain_threshold(size: u64) -> bool {
    if size > (1 << 32) - (1 << 20) {
        return false;
    }
    let size = if size == 0 { 1 << 30 } else { size as usize };
    PLAIN_THRESHOLD.store(size, Ordering::Relaxed);
    true
}

/// The size from which elements pushed at a list's ends get a chunk of
/// their own.
pub fn plain_threshold() -> usize {
    PLAIN_THRESHOLD.load(Ordering::Relaxed)
}

/// An element of `len` bytes (`count` 1), or a chunk of `count` elements
/// in `len` bytes, stands alone.
#[inline]
fn plain(len: usize, count: usize) -> bool {
    count <= 1 && len >= PLAIN_THRESHOLD.load(Ordering::Relaxed)
}

/// A list of byte strings. 48 bytes, as a keyspace entry's box holds it.
#[derive(Clone, Debug)]
pub struct List {
    chunks: VecDeque<Chunk>,
    len: usize,
    /// `list-max-listpack-size` when the list was made (a quicklist keeps
    /// its own, as in Redis).
    fill: i32,
    /// `list-compress-depth` when the list was made: chunks this far from
    /// either end stay plain, the ones between are compressed (capped at
    /// 65535, which leaves lists of under 131070 chunks, 1 GB at the
    /// default node size, wholly plain as Redis would).
    depth: u16,
    /// A read decompressed views of compressed chunks (dropped at the
    /// next change).
    viewed: std::cell::Cell<bool>,
}

impl Default for List {
    fn default() -> Self {
        List {
            chunks: VecDeque::new(),
            len: 0,
            fill: tuning::list_fill() as i32,
            depth: u16::try_from(tuning::list_compress_depth()).unwrap_or(u16::MAX),
            viewed: std::cell::Cell::new(false),
        }
    }
}

const _: () = assert!(std::mem::size_of::<List>() == 48);
const _: () = assert!(std::mem::size_of::<Chunk>() == 48);

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The head (LEFT).
    Left,
    /// The tail (RIGHT).
    Right,
}

impl List {
    /// An empty list.
    pub fn new() -> List {
        List::default()
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The name OBJECT ENCODING reports: Redis 7.0 encodes every list as a
    /// quicklist (listpack-encoded lists arrived in 7.2).
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// Each chunk's bytes, its element count, and whether it holds one
    /// element alone for its size (DEBUG QUICKLIST).
    pub fn chunks(&self) -> impl Iterator<Item = (usize, usize, bool)> + '_ {
        self.chunks
            .iter()
            .map(|c| (c.used(), c.count, plain(c.used(), c.count)))
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        self.chunks.iter().map(|c| c.heap_size() + 40).sum()
    }

    /// Chunks (Redis's quicklist nodes).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// `list-max-listpack-size` as the list keeps it (the quicklist's fill).
    pub fn fill(&self) -> i32 {
        self.fill
    }

    /// `list-compress-depth` as the list keeps it.
    pub fn compress_depth(&self) -> u16 {
        self.depth
    }

    /// The bytes Redis's quicklist nodes would hold for these chunks,
    /// uncompressed: a listpack per chunk (its 6-byte header, entries and
    /// end byte), or the element alone where a chunk stands for a plain
    /// node (DEBUG OBJECT's `ql_uncompressed_size`).
    pub fn listpack_bytes(&self) -> usize {
        let mut items = self.iter();
        let mut total = 0;
        for (_, count, plain) in self.chunks() {
            if plain {
                total += items.next().map_or(0, <[u8]>::len);
                continue;
            }
            total += 7;
            for item in items.by_ref().take(count) {
                total += super::listpack::entry_size(item);
            }
        }
        total
    }

    /// Chunks that hold their bytes compressed (DEBUG QUICKLIST).
    pub fn compressed_chunks(&self) -> usize {
        self.chunks.iter().filter(|c| c.is_compressed()).count()
    }

    /// Re-establishes compression after a change (Redis's
    /// __quicklistCompress): the `depth` chunks at each end plain, the
    /// interior ones compressed. `touched` are interior chunks the change
    /// rewrote; chunks past them that the change did not reach stay as
    /// they are, except that views left by reads are dropped.
    fn settle(&mut self, touched: std::ops::Range<usize>) {
        let depth = self.depth as usize;
        if depth == 0 {
            return;
        }
        let n = self.chunks.len();
        if self.viewed.replace(false) {
            for c in &mut self.chunks {
                c.drop_view();
            }
        }
        for i in 0..depth.min(n) {
            self.chunks[i].decompress();
            self.chunks[n - 1 - i].decompress();
        }
        if n <= 2 * depth {
            return;
        }
        self.chunks[depth].compress();
        self.chunks[n - 1 - depth].compress();
        for i in touched {
            if i >= depth && i + depth < n {
                self.chunks[i].compress();
            }
        }
    }

    /// Makes every chunk plain, before a change that walks the whole list.
    fn decompress_all(&mut self) {
        if self.depth != 0 {
            for c in &mut self.chunks {
                c.decompress();
            }
        }
    }

    /// Appends `s` at the tail.
    pub fn push_back(&mut self, s: &[u8]) {
        let need = entry_size(s.len());
        let limit = NodeLimit::of(self.fill);
        let fits = match self.chunks.back_mut() {
            _ if plain(s.len(), 1) => false,
            Some(c) if plain(c.used(), c.count) => false,
            Some(c) => {
                c.admit_at_end(s.len(), limit) && c.make_room(c.entry_size(s.len()), false, limit)
            }
            None => false,
        };
        if !fits {
            let cap = if self.chunks.is_empty() {
                need.next_power_of_two()
                    .clamp(CHUNK_MIN, limit.bytes)
                    .max(need)
            } else {
                limit.first_capacity(need)
            };
            self.reserve_chunk();
            self.chunks.push_back(Chunk::with_capacity(cap));
        }
        // invariant: a chunk was pushed just above when none had room.
        let c = self.chunks.back_mut().expect("chunk exists");
        c.push_back(s);
        self.len += 1;
        if !fits {
            self.settle(0..0);
        }
    }

    /// Prepends `s` at the head.
    pub fn push_front(&mut self, s: &[u8]) {
        let need = entry_size(s.len());
        let limit = NodeLimit::of(self.fill);
        let fits = match self.chunks.front_mut() {
            _ if plain(s.len(), 1) => false,
            Some(c) if plain(c.used(), c.count) => false,
            Some(c) => {
                c.admit_at_end(s.len(), limit) && c.make_room(c.entry_size(s.len()), true, limit)
            }
            None => false,
        };
        if !fits {
            let cap = if self.chunks.is_empty() {
                need.next_power_of_two()
                    .clamp(CHUNK_MIN, limit.bytes)
                    .max(need)
            } else {
                limit.first_capacity(need)
            };
            let mut c = Chunk::with_capacity(cap);
            c.buf.resize(cap, 0);
            c.set_start(cap);
            self.reserve_chunk();
            self.chunks.push_front(c);
        }
        // invariant: a chunk was pushed just above when none had room.
        let c = self.chunks.front_mut().expect("chunk exists");
        c.push_front(s);
        self.len += 1;
        if !fits {
            self.settle(0..0);
        }
    }

    /// Room for one more chunk: a one-chunk list (most small lists) gets a
    /// deque of one slot instead of the default four.
    fn reserve_chunk(&mut self) {
        if self.chunks.capacity() == 0 {
            self.chunks.reserve_exact(1);
        }
    }

    /// Pushes at `end`.
    pub fn push(&mut self, end: End, s: &[u8]) {
        match end {
            End::Left => self.push_front(s),
            End::Right => self.push_back(s),
        }
    }

    /// The element at `end`, if any.
    pub fn peek(&self, end: End) -> Option<&[u8]> {
        match end {
            End::Left => self.chunks.front().map(Chunk::front),
            End::Right => self.chunks.back().map(Chunk::back),
        }
    }

    /// Drops the element at `end` (no-op when empty).
    pub fn drop_end(&mut self, end: End) {
        let (c, empty) = match end {
            End::Left => match self.chunks.front_mut() {
                Some(c) => {
                    c.decompress();
                    c.drop_front();
                    (true, c.count == 0)
                }
                None => (false, false),
            },
            End::Right => match self.chunks.back_mut() {
                Some(c) => {
                    c.decompress();
                    c.drop_back();
                    (true, c.count == 0)
                }
                None => (false, false),
            },
        };
        if c {
            self.len -= 1;
        }
        if empty {
            match end {
                End::Left => self.chunks.pop_front(),
                End::Right => self.chunks.pop_back(),
            };
            self.settle(0..0);
        }
    }

    /// Removes and returns the element at `end`.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let v = self.peek(end)?.to_vec();
        self.drop_end(end);
        Some(v)
    }

    /// Converts a Redis index (negative counts from the tail) to a position.
    pub fn resolve(&self, index: i64) -> Option<usize> {
        let len = self.len as i64;
        let i = if index < 0 {
            len.checked_add(index)?
        } else {
            index
        };
        (0..len).contains(&i).then_some(i as usize)
    }

    /// Finds the chunk holding element `i`: (chunk, index in chunk).
    fn locate(&self, i: usize) -> (usize, usize) {
        if i < self.len / 2 {
            let mut rem = i;
            for (ci, c) in self.chunks.iter().enumerate() {
                if rem < c.count {
                    return (ci, rem);
                }
                rem -= c.count;
            }
        } else {
            let mut rem = self.len - i;
            for (ci, c) in self.chunks.iter().enumerate().rev() {
                if rem <= c.count {
                    return (ci, c.count - rem);
                }
                rem -= c.count;
            }
        }
        (self.chunks.len(), 0)
    }

    /// The element at position `i`.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.len {
            return None;
        }
        let (ci, k) = self.locate(i);
        let c = self.chunks.get(ci)?;
        if c.is_compressed() {
            self.viewed.set(true);
        }
        let (d, n, _) = c.read_fwd(c.offset_of(k));
        Some(&c.bytes()[d..d + n])
    }

    /// Replaces the element at position `i`; false when out of range.
    pub fn set(&mut self, i: usize, s: &[u8]) -> bool {
        if i >= self.len {
            return false;
        }
        let (ci, k) = self.locate(i);
        let Some(c) = self.chunks.get_mut(ci) else {
            return false;
        };
        c.decompress();
        c.admit(s.len());
        let at = c.offset_of(k);
        let (_, _, next) = c.read_fwd(at);
        let mut enc = Vec::with_capacity(c.entry_size(s.len()));
        c.encode_into(s, &mut enc);
        c.rebuild(Some((at, next - at, &enc)));
        let before = self.chunks.len();
        self.fix_size(ci);
        self.settle(ci..ci + 1 + self.chunks.len() - before);
        true
    }

    /// Inserts `s` so that it becomes element `i` (0 <= i <= len).
    pub fn insert(&mut self, i: usize, s: &[u8]) {
        if i == 0 {
            return self.push_front(s);
        }
        if i >= self.len {
            return self.push_back(s);
        }
        let (ci, k) = self.locate(i);
        let Some(c) = self.chunks.get_mut(ci) else {
            return;
        };
        c.decompress();
        c.admit(s.len());
        let at = c.offset_of(k);
        let mut enc = Vec::with_capacity(c.entry_size(s.len()));
        c.encode_into(s, &mut enc);
        c.rebuild(Some((at, 0, &enc)));
        c.count += 1;
        self.len += 1;
        let before = self.chunks.len();
        self.fix_size(ci);
        self.settle(ci..ci + 1 + self.chunks.len() - before);
    }

    /// Splits chunk `ci` when it grew past the limit.
    fn fix_size(&mut self, ci: usize) {
        let Some(c) = self.chunks.get_mut(ci) else {
            return;
        };
        if NodeLimit::of(self.fill).exceeded(c.used(), c.count) && c.count > 1 {
            let tail = c.split();
            self.chunks.insert(ci + 1, tail);
            self.fix_size(ci + 1);
            self.fix_size(ci);
        }
    }

    /// Removes up to `limit` elements equal to `s` (0 = all), scanning from
    /// the tail when `from_tail`; returns how many went (LREM).
    pub fn remove_matching(&mut self, s: &[u8], limit: usize, from_tail: bool) -> usize {
        self.decompress_all();
        let mut removed = 0;
        let n = self.chunks.len();
        let mut offsets: Vec<(usize, usize)> = Vec::new();
        for step in 0..n {
            if limit != 0 && removed >= limit {
                break;
            }
            let ci = if from_tail { n - 1 - step } else { step };
            let c = &mut self.chunks[ci];
            offsets.clear();
            let mut p = c.start();
            while p < c.buf.len() {
                let next = c.read_fwd(p).2;
                offsets.push((p, next));
                p = next;
            }
            let mut drop = vec![false; offsets.len()];
            let mut any = false;
            let m = offsets.len();
            for t in 0..m {
                let j = if from_tail { m - 1 - t } else { t };
                if limit != 0 && removed >= limit {
                    break;
                }
                let (p, _) = offsets[j];
                let (d, len, _) = c.read_fwd(p);
                if &c.buf[d..d + len] == s {
                    drop[j] = true;
                    removed += 1;
                    any = true;
                }
            }
            if any {
                let mut nb = Vec::with_capacity(c.used().next_power_of_two().max(CHUNK_MIN));
                let mut kept = 0;
                for (j, &(p, next)) in offsets.iter().enumerate() {
                    if !drop[j] {
                        nb.extend_from_slice(&c.buf[p..next]);
                        kept += 1;
                    }
                }
                c.buf = nb;
                c.set_start(0);
                c.count = kept;
            }
        }
        self.chunks.retain(|c| c.count > 0);
        self.len -= removed;
        let n = self.chunks.len();
        self.settle(0..n);
        removed
    }

    /// Removes `n` elements from `end`.
    pub fn drop_n(&mut self, end: End, mut n: usize) {
        n = n.min(self.len);
        while n > 0 {
            let whole = match end {
                End::Left => self.chunks.front().map_or(0, |c| c.count),
                End::Right => self.chunks.back().map_or(0, |c| c.count),
            };
            if whole <= n {
                match end {
                    End::Left => self.chunks.pop_front(),
                    End::Right => self.chunks.pop_back(),
                };
                self.len -= whole;
                n -= whole;
            } else {
                for _ in 0..n {
                    self.drop_end(end);
                }
                n = 0;
            }
        }
        self.settle(0..0);
    }

    /// Keeps only positions `start..=end` (LTRIM, already clamped).
    pub fn retain_range(&mut self, start: usize, end: usize) {
        if start > end || start >= self.len {
            self.chunks.clear();
            self.len = 0;
            return;
        }
        let tail = self.len - 1 - end.min(self.len - 1);
        self.drop_n(End::Right, tail);
        self.drop_n(End::Left, start);
    }

    /// Iterates from position `from` toward the tail.
    pub fn iter_from(&self, from: usize) -> Iter<'_> {
        if from >= self.len {
            return Iter::new(self, self.chunks.len(), 0);
        }
        let (ci, k) = self.locate(from);
        let pos = self.chunks.get(ci).map_or(0, |c| c.offset_of(k));
        Iter::new(self, ci, pos)
    }

    /// Iterates from position `from` toward the head.
    pub fn iter_rev_from(&self, from: usize) -> RevIter<'_> {
        if from >= self.len {
            return RevIter {
                list: self,
                ci: 0,
                end: 0,
                done: true,
            };
        }
        let (ci, k) = self.locate(from);
        let end = self.chunks.get(ci).map_or(0, |c| {
            let p = c.offset_of(k);
            c.read_fwd(p).2
        });
        RevIter {
            list: self,
            ci,
            end,
            done: false,
        }
    }

    /// Iterates over every element, head to tail.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }
}

/// Forward iterator over a list's elements.
pub struct Iter<'a> {
    list: &'a List,
    ci: usize,
    pos: usize,
    /// The current chunk's bytes and bare element length, looked up once
    /// per chunk.
    bytes: &'a [u8],
    fixed: usize,
}

impl<'a> Iter<'a> {
    fn new(list: &'a List, ci: usize, pos: usize) -> Iter<'a> {
        let mut it = Iter {
            list,
            ci,
            pos,
            bytes: &[],
            fixed: 0,
        };
        it.enter();
        it
    }

    /// Takes up chunk `ci` (reads decompress a compressed one).
    fn enter(&mut self) {
        if let Some(c) = self.list.chunks.get(self.ci) {
            if c.is_compressed() {
                self.list.viewed.set(true);
            }
            self.bytes = c.bytes();
            self.fixed = c.fixed();
        }
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            if self.pos < self.bytes.len() {
                let (d, n, next) = read_fwd_in(self.bytes, self.fixed, self.pos);
                self.pos = next;
                return Some(&self.bytes[d..d + n]);
            }
            self.ci += 1;
            let c = self.list.chunks.get(self.ci)?;
            self.pos = c.start();
            self.enter();
        }
    }
}

/// Backward iterator over a list's elements.
pub struct RevIter<'a> {
    list: &'a List,
    ci: usize,
    end: usize,
    done: bool,
}

impl<'a> Iterator for RevIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            if self.done {
                return None;
            }
            let c = self.list.chunks.get(self.ci)?;
            if self.end > c.start() {
                if c.is_compressed() {
                    self.list.viewed.set(true);
                }
                let (s, d, n) = c.read_back(self.end);
                self.end = s;
                return Some(&c.bytes()[d..d + n]);
            }
            if self.ci == 0 {
                self.done = true;
                return None;
            }
            self.ci -= 1;
            self.end = self.list.chunks.get(self.ci).map_or(0, Chunk::end);
        }
    }
}
