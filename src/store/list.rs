//! List values, stored the way Redis's quicklist of listpacks is: a deque of
//! chunks, each a packed byte buffer of length-prefixed elements of at most
//! [`CHUNK_MAX`] bytes (Redis's `list-max-listpack-size -2`, 8 KB).
//!
//! An element is encoded as `varint(len) bytes rvarint(len)`: the LEB128
//! length before the bytes lets iteration walk forward, the same length
//! written backwards after them lets it walk backward (listpack's
//! `backlen`). A 16-byte element costs 18 bytes, close to Redis's listpack.
//!
//! Each chunk keeps free space at its front (`start`) as well as its back,
//! so pushes and pops at both ends of the list are O(1) amortised; changes
//! in the middle (LSET, LINSERT, LREM) rewrite one chunk, as Redis does.

use std::collections::VecDeque;

/// Largest chunk payload, as Redis's default `list-max-listpack-size -2`.
pub const CHUNK_MAX: usize = 8192;

/// Smallest chunk allocation.
const CHUNK_MIN: usize = 32;

/// Bytes of the LEB128 form of `n`.
#[inline]
fn varint_len(mut n: usize) -> usize {
    let mut l = 1;
    while n >= 0x80 {
        n >>= 7;
        l += 1;
    }
    l
}

/// Encoded size of an element of `len` bytes.
#[inline]
fn entry_size(len: usize) -> usize {
    2 * varint_len(len) + len
}

/// Appends the encoding of `s` to `out`.
fn encode_into(s: &[u8], out: &mut Vec<u8>) {
    let mut tmp = [0u8; 10];
    let mut n = s.len();
    let mut k = 0;
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            tmp[k] = b;
            k += 1;
            break;
        }
        tmp[k] = b | 0x80;
        k += 1;
    }
    out.extend_from_slice(&tmp[..k]);
    out.extend_from_slice(s);
    // The trailing length, reversed: its last byte holds the low bits, and
    // a set high bit means more bytes precede it.
    for &b in tmp[..k].iter().rev() {
        out.push(b);
    }
}

/// Writes the encoding of `s` into `dst`, which is exactly `entry_size` long.
fn encode_at(s: &[u8], dst: &mut [u8]) {
    let k = varint_len(s.len());
    let mut n = s.len();
    for i in 0..k {
        let b = (n & 0x7f) as u8 | if i + 1 < k { 0x80 } else { 0 };
        n >>= 7;
        dst[i] = b;
        dst[2 * k + s.len() - 1 - i] = b;
    }
    dst[k..k + s.len()].copy_from_slice(s);
}

/// Reads the element starting at `pos`: (data start, data len, next pos).
#[inline]
fn read_fwd(buf: &[u8], pos: usize) -> (usize, usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    let mut p = pos;
    loop {
        let b = buf[p];
        p += 1;
        n |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let k = p - pos;
    (p, n, p + n + k)
}

/// Reads the element ending at `end`: (element start, data start, data len).
#[inline]
fn read_back(buf: &[u8], end: usize) -> (usize, usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    let mut p = end;
    loop {
        p -= 1;
        let b = buf[p];
        n |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let k = end - p;
    let start = end - 2 * k - n;
    (start, start + k, n)
}

/// One packed run of elements.
#[derive(Clone, Debug, Default)]
struct Chunk {
    /// Encoded elements live in `buf[start..]`.
    buf: Vec<u8>,
    start: usize,
    count: usize,
}

impl Chunk {
    fn with_capacity(cap: usize) -> Chunk {
        Chunk {
            buf: Vec::with_capacity(cap),
            start: 0,
            count: 0,
        }
    }

    #[inline]
    fn used(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Makes room for `need` more bytes at the front or back; false when
    /// the chunk should not grow (the caller starts a new chunk).
    fn make_room(&mut self, need: usize, front: bool) -> bool {
        let used = self.used();
        let free = if front {
            self.start
        } else {
            self.buf.capacity() - self.buf.len()
        };
        if free >= need {
            return true;
        }
        // A chunk past three quarters full is not recentred: a new chunk is
        // cheaper than moving its bytes again and again.
        if self.count > 0 && used + need > CHUNK_MAX * 3 / 4 && self.buf.capacity() >= CHUNK_MAX {
            return false;
        }
        if self.count > 0 && used + need > CHUNK_MAX {
            return false;
        }
        let cap = self.buf.capacity();
        let new_cap = if used + need <= cap && cap >= CHUNK_MIN {
            cap
        } else {
            (used + need)
                .next_power_of_two()
                .clamp(CHUNK_MIN, CHUNK_MAX)
                .max(used + need)
        };
        let mut nb = Vec::with_capacity(new_cap);
        if front {
            let gap = new_cap - used;
            nb.resize(gap, 0);
            nb.extend_from_slice(&self.buf[self.start..]);
            self.start = gap;
        } else {
            nb.extend_from_slice(&self.buf[self.start..]);
            self.start = 0;
        }
        self.buf = nb;
        true
    }

    fn push_back(&mut self, s: &[u8]) {
        encode_into(s, &mut self.buf);
        self.count += 1;
    }

    fn push_front(&mut self, s: &[u8]) {
        let size = entry_size(s.len());
        let at = self.start - size;
        encode_at(s, &mut self.buf[at..self.start]);
        self.start = at;
        self.count += 1;
    }

    fn front(&self) -> &[u8] {
        let (d, n, _) = read_fwd(&self.buf, self.start);
        &self.buf[d..d + n]
    }

    fn back(&self) -> &[u8] {
        let (_, d, n) = read_back(&self.buf, self.buf.len());
        &self.buf[d..d + n]
    }

    fn drop_front(&mut self) {
        let (_, _, next) = read_fwd(&self.buf, self.start);
        self.start = next;
        self.count -= 1;
        if self.count == 0 {
            self.buf.clear();
            self.start = 0;
        }
    }

    fn drop_back(&mut self) {
        let (s, _, _) = read_back(&self.buf, self.buf.len());
        self.buf.truncate(s);
        self.count -= 1;
        if self.count == 0 {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Byte offset of element `i` (0 <= i < count).
    fn offset_of(&self, i: usize) -> usize {
        if i < self.count / 2 {
            let mut p = self.start;
            for _ in 0..i {
                p = read_fwd(&self.buf, p).2;
            }
            p
        } else {
            let mut p = self.buf.len();
            for _ in 0..self.count - i {
                p = read_back(&self.buf, p).0;
            }
            p
        }
    }

    /// Rebuilds the chunk from its elements, keeping those `keep` accepts and
    /// putting `insert` (encoded) at byte offset `at` when given.
    fn rebuild(&mut self, replace: Option<(usize, usize, &[u8])>) {
        let mut nb = Vec::with_capacity(self.used().next_power_of_two().max(CHUNK_MIN));
        match replace {
            Some((at, old_len, new)) => {
                nb.extend_from_slice(&self.buf[self.start..at]);
                nb.extend_from_slice(new);
                nb.extend_from_slice(&self.buf[at + old_len..]);
            }
            None => nb.extend_from_slice(&self.buf[self.start..]),
        }
        self.buf = nb;
        self.start = 0;
    }

    /// Splits off the second half of an oversized chunk.
    fn split(&mut self) -> Chunk {
        let half = self.count / 2;
        let at = self.offset_of(half);
        let mut tail = Chunk::with_capacity((self.buf.len() - at).max(CHUNK_MIN));
        tail.buf.extend_from_slice(&self.buf[at..]);
        tail.count = self.count - half;
        self.buf.truncate(at);
        self.count = half;
        self.rebuild(None);
        tail
    }
}

/// A list of byte strings.
#[derive(Clone, Debug, Default)]
pub struct List {
    chunks: VecDeque<Chunk>,
    len: usize,
}

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

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        self.chunks.iter().map(|c| c.buf.capacity() + 40).sum()
    }

    /// Appends `s` at the tail.
    pub fn push_back(&mut self, s: &[u8]) {
        let need = entry_size(s.len());
        let fits = match self.chunks.back_mut() {
            Some(c) => c.make_room(need, false),
            None => false,
        };
        if !fits {
            let cap = if self.chunks.is_empty() {
                need.next_power_of_two()
                    .clamp(CHUNK_MIN, CHUNK_MAX)
                    .max(need)
            } else {
                need.max(CHUNK_MAX)
            };
            self.chunks.push_back(Chunk::with_capacity(cap));
        }
        // invariant: a chunk was pushed just above when none had room.
        let c = self.chunks.back_mut().expect("chunk exists");
        c.push_back(s);
        self.len += 1;
    }

    /// Prepends `s` at the head.
    pub fn push_front(&mut self, s: &[u8]) {
        let need = entry_size(s.len());
        let fits = match self.chunks.front_mut() {
            Some(c) => c.make_room(need, true),
            None => false,
        };
        if !fits {
            let cap = if self.chunks.is_empty() {
                need.next_power_of_two()
                    .clamp(CHUNK_MIN, CHUNK_MAX)
                    .max(need)
            } else {
                need.max(CHUNK_MAX)
            };
            let mut c = Chunk::with_capacity(cap);
            c.buf.resize(cap, 0);
            c.start = cap;
            self.chunks.push_front(c);
        }
        // invariant: a chunk was pushed just above when none had room.
        let c = self.chunks.front_mut().expect("chunk exists");
        c.push_front(s);
        self.len += 1;
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
                    c.drop_front();
                    (true, c.count == 0)
                }
                None => (false, false),
            },
            End::Right => match self.chunks.back_mut() {
                Some(c) => {
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
        let (d, n, _) = read_fwd(&c.buf, c.offset_of(k));
        Some(&c.buf[d..d + n])
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
        let at = c.offset_of(k);
        let (_, _, next) = read_fwd(&c.buf, at);
        let mut enc = Vec::with_capacity(entry_size(s.len()));
        encode_into(s, &mut enc);
        c.rebuild(Some((at, next - at, &enc)));
        self.fix_size(ci);
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
        let at = c.offset_of(k);
        let mut enc = Vec::with_capacity(entry_size(s.len()));
        encode_into(s, &mut enc);
        c.rebuild(Some((at, 0, &enc)));
        c.count += 1;
        self.len += 1;
        self.fix_size(ci);
    }

    /// Splits chunk `ci` when it grew past the limit.
    fn fix_size(&mut self, ci: usize) {
        let Some(c) = self.chunks.get_mut(ci) else {
            return;
        };
        if c.used() > CHUNK_MAX && c.count > 1 {
            let tail = c.split();
            self.chunks.insert(ci + 1, tail);
            self.fix_size(ci + 1);
            self.fix_size(ci);
        }
    }

    /// Removes up to `limit` elements equal to `s` (0 = all), scanning from
    /// the tail when `from_tail`; returns how many went (LREM).
    pub fn remove_matching(&mut self, s: &[u8], limit: usize, from_tail: bool) -> usize {
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
            let mut p = c.start;
            while p < c.buf.len() {
                let next = read_fwd(&c.buf, p).2;
                offsets.push((p, next));
                p = next;
            }
            let mut drop = vec![false; offsets.len()];
            let mut any = false;
            let order: Box<dyn Iterator<Item = usize>> = if from_tail {
                Box::new((0..offsets.len()).rev())
            } else {
                Box::new(0..offsets.len())
            };
            for j in order {
                if limit != 0 && removed >= limit {
                    break;
                }
                let (p, _) = offsets[j];
                let (d, len, _) = read_fwd(&c.buf, p);
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
                c.start = 0;
                c.count = kept;
            }
        }
        self.chunks.retain(|c| c.count > 0);
        self.len -= removed;
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
            return Iter {
                list: self,
                ci: self.chunks.len(),
                pos: 0,
            };
        }
        let (ci, k) = self.locate(from);
        let pos = self.chunks.get(ci).map_or(0, |c| c.offset_of(k));
        Iter {
            list: self,
            ci,
            pos,
        }
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
            read_fwd(&c.buf, p).2
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
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            let c = self.list.chunks.get(self.ci)?;
            if self.pos < c.buf.len() {
                let (d, n, next) = read_fwd(&c.buf, self.pos);
                self.pos = next;
                return Some(&c.buf[d..d + n]);
            }
            self.ci += 1;
            self.pos = self.list.chunks.get(self.ci).map_or(0, |c| c.start);
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
            if self.end > c.start {
                let (s, d, n) = read_back(&c.buf, self.end);
                self.end = s;
                return Some(&c.buf[d..d + n]);
            }
            if self.ci == 0 {
                self.done = true;
                return None;
            }
            self.ci -= 1;
            self.end = self.list.chunks.get(self.ci).map_or(0, |c| c.buf.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_check(l: &List, m: &VecDeque<Vec<u8>>) {
        assert_eq!(l.len(), m.len());
        let v: Vec<&[u8]> = l.iter().collect();
        let w: Vec<&[u8]> = m.iter().map(|x| x.as_slice()).collect();
        assert_eq!(v, w);
        let r: Vec<&[u8]> = if m.is_empty() {
            vec![]
        } else {
            l.iter_rev_from(m.len() - 1).collect()
        };
        let mut w2 = w.clone();
        w2.reverse();
        assert_eq!(r, w2);
        for c in &l.chunks {
            assert!(c.count > 0);
        }
        assert_eq!(l.chunks.iter().map(|c| c.count).sum::<usize>(), l.len());
    }

    #[test]
    fn random_ops_match_vecdeque() {
        let mut l = List::new();
        let mut m: VecDeque<Vec<u8>> = VecDeque::new();
        let mut seed = 12345u64;
        let mut rnd = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for step in 0..20000 {
            let size = match rnd(10) {
                0 => rnd(300) as usize,
                1 => 20000,
                _ => rnd(20) as usize,
            };
            let val: Vec<u8> = (0..size).map(|i| (i as u8) ^ (step as u8)).collect();
            match rnd(10) {
                0 | 1 => {
                    l.push_back(&val);
                    m.push_back(val);
                }
                2 | 3 => {
                    l.push_front(&val);
                    m.push_front(val);
                }
                4 => assert_eq!(l.pop(End::Left), m.pop_front()),
                5 => assert_eq!(l.pop(End::Right), m.pop_back()),
                6 if !m.is_empty() => {
                    let i = rnd(m.len() as u64) as usize;
                    assert_eq!(l.get(i), Some(m[i].as_slice()));
                    l.set(i, &val);
                    m[i] = val;
                }
                7 => {
                    let i = rnd(m.len() as u64 + 1) as usize;
                    l.insert(i, &val);
                    m.insert(i, val);
                }
                8 if !m.is_empty() && rnd(20) == 0 => {
                    let target = m[rnd(m.len() as u64) as usize].clone();
                    let n = l.remove_matching(&target, 0, false);
                    let before = m.len();
                    m.retain(|x| *x != target);
                    assert_eq!(n, before - m.len());
                }
                9 if !m.is_empty() && rnd(50) == 0 => {
                    let s = rnd(m.len() as u64) as usize;
                    let e = s + rnd(m.len() as u64) as usize;
                    l.retain_range(s, e);
                    let e = e.min(m.len() - 1);
                    let kept: VecDeque<Vec<u8>> = m.drain(..).skip(s).take(e + 1 - s).collect();
                    m = kept;
                }
                _ => {}
            }
            if step % 97 == 0 {
                model_check(&l, &m);
            }
        }
        model_check(&l, &m);
    }
}
