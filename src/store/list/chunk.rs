//! The packed chunk a list is made of, and its element encoding:
//! `varint(len) bytes rvarint(len)`. The LEB128 length before the bytes lets
//! iteration walk forward; the same length written backwards after them
//! lets it walk backward (listpack's `backlen`).
//!
//! An interior chunk of a list with `list-compress-depth` set holds its
//! bytes LZF-compressed, as Redis's quicklist compresses interior nodes
//! (`__quicklistCompressNode`); reads decompress it into a view kept until
//! the list is next changed, changes decompress it first.

use std::cell::OnceCell;

/// Chunks smaller than this are not compressed (Redis's
/// MIN_COMPRESS_BYTES).
const MIN_COMPRESS_BYTES: usize = 48;
/// Compression must save more than this many bytes to be kept (Redis's
/// MIN_COMPRESS_IMPROVE).
const MIN_COMPRESS_IMPROVE: usize = 8;

/// The decompressed bytes of a compressed chunk, once a read needed them.
type View = OnceCell<Box<[u8]>>;

/// Largest chunk payload at Redis's default `list-max-listpack-size -2`.
pub const CHUNK_MAX: usize = 8192;

/// How large a chunk may grow, from `list-max-listpack-size` (Redis's
/// `_quicklistNodeAllowInsert`): a byte size class when negative (-1 4 KB
/// ... -5 64 KB), else a count of elements within 8 KB.
#[derive(Clone, Copy, Debug)]
pub(super) struct NodeLimit {
    /// Most payload bytes.
    pub(super) bytes: usize,
    /// Most elements.
    pub(super) count: usize,
}

impl NodeLimit {
    /// The limit a list made with `list-max-listpack-size` `fill` has.
    #[inline]
    pub(super) fn of(fill: i32) -> NodeLimit {
        if fill < 0 {
            NodeLimit {
                bytes: 4096 << (fill.unsigned_abs().min(5) - 1),
                count: usize::MAX,
            }
        } else {
            // Redis's SIZE_SAFETY_LIMIT; a fill of 0 admits nothing past
            // a node's first element.
            NodeLimit {
                bytes: CHUNK_MAX,
                count: (fill as usize).max(1),
            }
        }
    }

    /// True when a chunk of `count` elements in `used` bytes is over it.
    #[inline]
    pub(super) fn exceeded(&self, used: usize, count: usize) -> bool {
        used > self.bytes || count > self.count
    }

    /// A fresh chunk's capacity for a first element of `need` bytes:
    /// room for a full node when nodes are sized in bytes, less when
    /// they hold few elements.
    pub(super) fn first_capacity(&self, need: usize) -> usize {
        let full = if self.count == usize::MAX {
            self.bytes
        } else {
            need.saturating_mul(self.count).min(self.bytes)
        };
        need.max(full)
    }
}

/// Smallest chunk allocation.
pub(super) const CHUNK_MIN: usize = 16;

/// Bytes of the LEB128 form of `n`.
#[inline]
pub(super) fn varint_len(mut n: usize) -> usize {
    let mut l = 1;
    while n >= 0x80 {
        n >>= 7;
        l += 1;
    }
    l
}

/// Encoded size of an element of `len` bytes.
#[inline]
pub(super) fn entry_size(len: usize) -> usize {
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

/// Reads the element starting at `pos` of a chunk's `bytes` whose
/// `fixed` length is given: (data start, data len, next pos).
#[inline]
pub(super) fn read_fwd_in(bytes: &[u8], fixed: usize, pos: usize) -> (usize, usize, usize) {
    match fixed {
        0 => read_fwd(bytes, pos),
        n => (pos, n, pos + n),
    }
}

/// Appends `s` encoded for a chunk whose `fixed` length is given: bare in
/// a run of same-size elements, with its lengths otherwise.
fn encode_entry(fixed: usize, s: &[u8], out: &mut Vec<u8>) {
    match fixed {
        0 => encode_into(s, out),
        _ => out.extend_from_slice(s),
    }
}

/// One packed run of elements.
#[derive(Clone, Debug, Default)]
pub(super) struct Chunk {
    /// Encoded elements live in `buf[start..]`.
    pub(super) buf: Vec<u8>,
    /// Free bytes before the first element (below 4 GiB: a chunk grows
    /// past its node size only for its first element, and elements from
    /// the plain threshold up, which is below 4 GiB, stand alone).
    start: u32,
    /// Elements held.
    pub(super) count: usize,
    /// When not 0, every element is exactly this many bytes long and is
    /// stored bare, with no lengths: runs of same-size elements (ids,
    /// hashes, timestamps) cost nothing beyond their bytes. 0: elements are
    /// `varint(len) bytes rvarint(len)`. Elements of 4 GiB or more are
    /// never stored bare.
    fixed: u32,
    /// Present when the chunk is compressed: `buf` then holds the LZF
    /// bytes and `start` the length they decompress to.
    lzf: Option<Box<View>>,
}

impl Chunk {
    /// Free bytes before the first element.
    #[inline]
    pub(super) fn start(&self) -> usize {
        if self.lzf.is_some() {
            0
        } else {
            self.start as usize
        }
    }

    /// Sets the free bytes before the first element (see the field).
    #[inline]
    pub(super) fn set_start(&mut self, start: usize) {
        debug_assert!(u32::try_from(start).is_ok());
        self.start = start as u32;
    }

    /// The length of every element when stored bare, else 0.
    #[inline]
    pub(super) fn fixed(&self) -> usize {
        self.fixed as usize
    }

    /// Stores elements bare when `len` (0: with lengths) fits the field.
    #[inline]
    fn set_fixed(&mut self, len: usize) {
        self.fixed = u32::try_from(len).unwrap_or(0);
    }

    pub(super) fn with_capacity(cap: usize) -> Chunk {
        Chunk {
            buf: Vec::with_capacity(cap),
            ..Chunk::default()
        }
    }

    /// The chunk's bytes: elements live in `bytes()[start..]`.
    #[inline]
    pub(super) fn bytes(&self) -> &[u8] {
        match &self.lzf {
            None => &self.buf,
            Some(view) => view.get_or_init(|| {
                let raw = crate::util::lzf::decompress(&self.buf, self.start as usize);
                // invariant: `buf` was compressed from `start` bytes by `compress`, unchanged since.
                raw.expect("a chunk's own LZF bytes decompress")
                    .into_boxed_slice()
            }),
        }
    }

    /// True when the chunk's bytes are compressed.
    pub(super) fn is_compressed(&self) -> bool {
        self.lzf.is_some()
    }

    /// Compresses the chunk's bytes when that saves enough (Redis's
    /// __quicklistCompressNode); a compressed chunk drops the view a read
    /// left.
    pub(super) fn compress(&mut self) {
        if self.lzf.is_some() {
            self.drop_view();
            return;
        }
        let raw = &self.buf[self.start()..];
        if raw.len() < MIN_COMPRESS_BYTES || u32::try_from(raw.len()).is_err() {
            return;
        }
        let Some(mut c) = crate::util::lzf::compress(raw, raw.len() - MIN_COMPRESS_IMPROVE - 1)
        else {
            return;
        };
        c.shrink_to_fit();
        self.start = raw.len() as u32;
        self.buf = c;
        self.lzf = Some(Box::default());
    }

    /// Makes the chunk's bytes plain again, ready for a change.
    pub(super) fn decompress(&mut self) {
        if self.lzf.is_none() {
            return;
        }
        let raw = self.bytes().to_vec();
        self.lzf = None;
        self.buf = raw;
        self.start = 0;
    }

    /// Drops the view a read left on a compressed chunk.
    pub(super) fn drop_view(&mut self) {
        if let Some(view) = &mut self.lzf {
            view.take();
        }
    }

    /// Heap bytes owned.
    pub(super) fn heap_size(&self) -> usize {
        self.buf.capacity()
            + self
                .lzf
                .as_ref()
                .map_or(0, |v| 16 + v.get().map_or(0, |b| b.len()))
    }

    /// Reads the element starting at `pos`: (data start, data len, next pos).
    #[inline]
    pub(super) fn read_fwd(&self, pos: usize) -> (usize, usize, usize) {
        match self.fixed() {
            0 => read_fwd(self.bytes(), pos),
            n => (pos, n, pos + n),
        }
    }

    /// Reads the element ending at `end`: (element start, data start, data
    /// len).
    #[inline]
    pub(super) fn read_back(&self, end: usize) -> (usize, usize, usize) {
        match self.fixed() {
            0 => read_back(self.bytes(), end),
            n => (end - n, end - n, n),
        }
    }

    /// Bytes an element of `len` bytes takes in this chunk once admitted.
    #[inline]
    pub(super) fn entry_size(&self, len: usize) -> usize {
        match self.fixed() {
            0 => entry_size(len),
            _ => len,
        }
    }

    /// Appends the encoding of `s` (admitted) to `out`.
    pub(super) fn encode_into(&self, s: &[u8], out: &mut Vec<u8>) {
        encode_entry(self.fixed(), s, out);
    }

    /// Readies the chunk for an element of `len` bytes at one of its ends:
    /// false when the element should start a chunk of its own instead,
    /// which is when this one holds a run of another size and is too full
    /// to be rewritten with lengths.
    pub(super) fn admit_at_end(&mut self, len: usize, limit: NodeLimit) -> bool {
        if self.count >= limit.count {
            return false;
        }
        if self.fixed() == 0 || self.fixed() == len {
            return true;
        }
        if self.count * entry_size(self.fixed()) + entry_size(len) > limit.bytes {
            return false;
        }
        self.admit(len);
        true
    }

    /// Readies the chunk for an element of `len` bytes anywhere: a run of
    /// another size is rewritten with lengths (the caller splits the chunk
    /// if that made it too large).
    pub(super) fn admit(&mut self, len: usize) {
        if self.fixed() == 0 || self.fixed() == len {
            return;
        }
        let mut nb = Vec::with_capacity(self.count * entry_size(self.fixed()) + entry_size(len));
        for e in self.buf[self.start()..].chunks_exact(self.fixed()) {
            encode_into(e, &mut nb);
        }
        self.buf = nb;
        self.set_start(0);
        self.set_fixed(0);
    }

    /// True when the chunk stores a bare run of same-size elements.
    #[cfg(test)]
    pub(super) fn is_fixed(&self) -> bool {
        self.fixed() != 0
    }

    /// Starts fixed-size storage for a first element of `len` bytes.
    fn begin(&mut self, len: usize) {
        if self.count == 0 {
            self.set_fixed(len);
        }
    }

    #[inline]
    pub(super) fn used(&self) -> usize {
        match &self.lzf {
            None => self.buf.len() - self.start(),
            Some(_) => self.start as usize,
        }
    }

    /// Offset just past the last element.
    #[inline]
    pub(super) fn end(&self) -> usize {
        match &self.lzf {
            None => self.buf.len(),
            Some(_) => self.start as usize,
        }
    }

    /// Makes room for `need` more bytes at the front or back; false when
    /// the chunk should not grow (the caller starts a new chunk).
    pub(super) fn make_room(&mut self, need: usize, front: bool, limit: NodeLimit) -> bool {
        let max = limit.bytes;
        let used = self.used();
        let free = if front {
            self.start()
        } else {
            self.buf.capacity() - self.buf.len()
        };
        if free >= need {
            return true;
        }
        // A chunk past three quarters full is not recentred: a new chunk is
        // cheaper than moving its bytes again and again.
        if self.count > 0 && used + need > max * 3 / 4 && self.buf.capacity() >= max {
            return false;
        }
        if self.count > 0 && used + need > max {
            return false;
        }
        let cap = self.buf.capacity();
        let new_cap = if used + need <= cap && cap >= CHUNK_MIN {
            cap
        } else {
            (used + need)
                .next_power_of_two()
                .clamp(CHUNK_MIN, max.max(CHUNK_MIN))
                .max(used + need)
        };
        let mut nb = Vec::with_capacity(new_cap);
        if front {
            let gap = new_cap - used;
            nb.resize(gap, 0);
            nb.extend_from_slice(&self.buf[self.start()..]);
            self.set_start(gap);
        } else {
            nb.extend_from_slice(&self.buf[self.start()..]);
            self.set_start(0);
        }
        self.buf = nb;
        true
    }

    /// Appends `s`, admitted (or this chunk's first element), with room made.
    pub(super) fn push_back(&mut self, s: &[u8]) {
        self.begin(s.len());
        encode_entry(self.fixed(), s, &mut self.buf);
        self.count += 1;
    }

    /// Prepends `s`, admitted (or this chunk's first element), with room made.
    pub(super) fn push_front(&mut self, s: &[u8]) {
        self.begin(s.len());
        let start = self.start();
        let at = start - self.entry_size(s.len());
        match self.fixed() {
            0 => encode_at(s, &mut self.buf[at..start]),
            _ => self.buf[at..start].copy_from_slice(s),
        }
        self.set_start(at);
        self.count += 1;
    }

    pub(super) fn front(&self) -> &[u8] {
        let (d, n, _) = self.read_fwd(self.start());
        &self.bytes()[d..d + n]
    }

    pub(super) fn back(&self) -> &[u8] {
        let (_, d, n) = self.read_back(self.end());
        &self.bytes()[d..d + n]
    }

    pub(super) fn drop_front(&mut self) {
        let (_, _, next) = self.read_fwd(self.start());
        self.set_start(next);
        self.count -= 1;
        if self.count == 0 {
            self.clear();
        }
    }

    pub(super) fn drop_back(&mut self) {
        let (s, _, _) = self.read_back(self.buf.len());
        self.buf.truncate(s);
        self.count -= 1;
        if self.count == 0 {
            self.clear();
        }
    }

    /// Empties the chunk; the next element chooses its storage again.
    fn clear(&mut self) {
        self.buf.clear();
        self.set_start(0);
        self.set_fixed(0);
    }

    /// Byte offset of element `i` (0 <= i < count).
    pub(super) fn offset_of(&self, i: usize) -> usize {
        if self.fixed() != 0 {
            self.start() + i * self.fixed()
        } else if i < self.count / 2 {
            let bytes = self.bytes();
            let mut p = self.start();
            for _ in 0..i {
                p = read_fwd(bytes, p).2;
            }
            p
        } else {
            let bytes = self.bytes();
            let mut p = bytes.len();
            for _ in 0..self.count - i {
                p = read_back(bytes, p).0;
            }
            p
        }
    }

    /// Compacts the chunk into a fresh buffer, replacing the `old_len`
    /// bytes at offset `at` with `new` (encoded elements) when given.
    pub(super) fn rebuild(&mut self, replace: Option<(usize, usize, &[u8])>) {
        let mut nb = Vec::with_capacity(self.used().next_power_of_two().max(CHUNK_MIN));
        match replace {
            Some((at, old_len, new)) => {
                nb.extend_from_slice(&self.buf[self.start()..at]);
                nb.extend_from_slice(new);
                nb.extend_from_slice(&self.buf[at + old_len..]);
            }
            None => nb.extend_from_slice(&self.buf[self.start()..]),
        }
        self.buf = nb;
        self.set_start(0);
    }

    /// Splits off the second half of an oversized chunk.
    pub(super) fn split(&mut self) -> Chunk {
        let half = self.count / 2;
        let at = self.offset_of(half);
        let mut tail = Chunk::with_capacity((self.buf.len() - at).max(CHUNK_MIN));
        tail.buf.extend_from_slice(&self.buf[at..]);
        tail.count = self.count - half;
        tail.fixed = self.fixed;
        self.buf.truncate(at);
        self.count = half;
        self.rebuild(None);
        tail
    }
}
