//! Sorted-set values. As in Redis 7.0, a sorted set of at most
//! `zset-max-listpack-entries` members (128) of at most
//! `zset-max-listpack-value` bytes (64; [`super::tuning`]) is compact (`listpack`): here member/score
//! pairs packed in order into one buffer ([`Packed`]), searched linearly as
//! Redis searches its listpack. Larger ones are a [`Tree`] (`skiplist`):
//! O(log n) lookups, ranks and ranges. A set that outgrew the compact form
//! stays a tree, except where Redis converts back (stored results, see
//! [`ZSet::shrink_encoding`]).

use std::cmp::Ordering;

use super::packed::{Packed, Spans};
use super::tuning;
use super::zset_tree::{self, Tree};

/// A sorted set.
#[derive(Clone, Debug)]
pub enum ZSet {
    /// Compact: member, score ([`PackedScore`]), ... in (score, member)
    /// order.
    Listpack(Packed),
    /// Large.
    Skiplist(Box<Tree>),
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet::Listpack(Packed::default())
    }
}

/// Orders (score, member) pairs as Redis's skiplist does.
#[inline]
pub fn cmp_entry(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    s1.partial_cmp(&s2)
        .unwrap_or(Ordering::Equal)
        .then_with(|| m1.cmp(m2))
}

/// Listpack scores are text, where -0 reads back as 0.
fn lp_score(s: f64) -> f64 {
    if s == 0.0 {
        0.0
    } else {
        s
    }
}

impl ZSet {
    /// A sorted set created for `size` members of up to `member_len`
    /// bytes: a skiplist from the start when they would not fit a listpack
    /// (Redis's zsetTypeCreate).
    pub fn with_hint(size: usize, member_len: usize) -> Self {
        if size <= tuning::zset_max_entries() && member_len <= tuning::zset_max_value() {
            ZSet::default()
        } else {
            ZSet::Skiplist(Box::default())
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            ZSet::Listpack(p) => p.count() / 2,
            ZSet::Skiplist(t) => t.len(),
        }
    }

    /// True when empty (the key must then be deleted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            ZSet::Listpack(_) => "listpack",
            ZSet::Skiplist(_) => "skiplist",
        }
    }

    /// Converts a small skiplist back to the compact form, as Redis does
    /// for stored results (zsetConvertToListpackIfNeeded).
    pub fn shrink_encoding(&mut self) {
        if let ZSet::Skiplist(t) = self {
            let max_value = tuning::zset_max_value();
            let fits = t.len() <= tuning::zset_max_entries()
                && t.iter_from(0).all(|(m, _)| m.len() <= max_value);
            if fits {
                let mut p = Packed::default();
                for (m, s) in t.iter_from(0) {
                    p.push(m);
                    p.push(PackedScore::new(lp_score(s)).as_bytes());
                }
                *self = ZSet::Listpack(p);
            }
        }
    }

    /// Holds the members in the large form from now on (Redis's
    /// zsetConvert to OBJ_ENCODING_SKIPLIST).
    pub fn convert_to_skiplist(&mut self) {
        if let ZSet::Listpack(p) = self {
            let mut t = Tree::default();
            for (m, s) in entries(p) {
                t.insert(m, s);
            }
            *self = ZSet::Skiplist(Box::new(t));
        }
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Listpack(p) => find(p, member).map(|(s, _, _)| s),
            ZSet::Skiplist(t) => t.score(member),
        }
    }

    /// Sets `member`'s score; returns the previous score if it existed.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        if let ZSet::Listpack(p) = self {
            let found = find(p, member);
            let full = p.count() / 2 >= tuning::zset_max_entries()
                || member.len() > tuning::zset_max_value();
            if found.is_some() || !full {
                let score = lp_score(score);
                let old = found.map(|(s, _, _)| s);
                if old == Some(score) {
                    return old;
                }
                if let Some((_, start, end)) = found {
                    p.remove(start, end, 2);
                }
                let at = entry_spans(p)
                    .find(|(m, s, _)| cmp_entry(*s, m, score, member) != Ordering::Less)
                    .map_or(p.byte_len(), |(_, _, start)| start);
                p.insert_at(at, &[member, PackedScore::new(score).as_bytes()]);
                return old;
            }
            // Redis converts before inserting what would not fit.
            self.convert_to_skiplist();
        }
        match self {
            ZSet::Skiplist(t) => t.insert(member, score),
            ZSet::Listpack(_) => None,
        }
    }

    /// Removes `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Listpack(p) => {
                let (s, start, end) = find(p, member)?;
                p.remove(start, end, 2);
                Some(s)
            }
            ZSet::Skiplist(t) => t.remove(member),
        }
    }

    /// Number of entries for which `below(score, member)` holds, where
    /// `below` is true for a prefix of the order.
    pub fn count_prefix(&self, below: impl Fn(f64, &[u8]) -> bool) -> usize {
        match self {
            ZSet::Listpack(p) => entries(p).take_while(|(m, s)| below(*s, m)).count(),
            ZSet::Skiplist(t) => t.count_prefix(below),
        }
    }

    /// The 0-based rank of `member`.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match self {
            ZSet::Listpack(p) => entries(p).position(|(m, _)| m == member),
            ZSet::Skiplist(t) => t.rank(member),
        }
    }

    /// Entries from rank `start` upwards, in order.
    pub fn iter_from(&self, start: usize) -> Iter<'_> {
        match self {
            ZSet::Listpack(p) => {
                let mut it = entries(p);
                for _ in 0..start {
                    if it.next().is_none() {
                        break;
                    }
                }
                Iter::Packed(it)
            }
            ZSet::Skiplist(t) => Iter::Tree(t.iter_from(start)),
        }
    }

    /// Entries from rank `start` downwards (towards rank 0).
    pub fn iter_rev_from(&self, start: usize) -> Iter<'_> {
        match self {
            ZSet::Listpack(p) => {
                let n = if start >= p.count() / 2 { 0 } else { start + 1 };
                let firsts: Vec<(&[u8], f64)> = entries(p).take(n).collect();
                Iter::Rev(firsts.into_iter().rev())
            }
            ZSet::Skiplist(t) => Iter::Tree(t.iter_rev_from(start)),
        }
    }

    /// One step of the member table's incremental rehash (a lookup's
    /// share, as Redis's dictFind).
    pub fn rehash_step(&mut self) {
        if let ZSet::Skiplist(t) = self {
            t.rehash_step();
        }
    }

    /// Members and scores from `cursor` until about `count` are found;
    /// returns the next cursor. A listpack is returned whole.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(&'a [u8], f64)) -> u64 {
        match self {
            ZSet::Listpack(p) => {
                entries(p).for_each(|(m, s)| f(m, s));
                0
            }
            ZSet::Skiplist(t) => t.scan(cursor, count, f),
        }
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        match self {
            ZSet::Listpack(p) => p.heap_size(),
            ZSet::Skiplist(t) => t.heap_size(),
        }
    }
}

/// A score as a compact sorted set stores it. An integral score of at most
/// 2^53 in magnitude (exact in an f64) takes the fewest little-endian
/// two's-complement bytes that hold it, 0 to 7, as a listpack stores
/// integer scores; any other score takes the 8 bytes of its f64.
pub struct PackedScore {
    bytes: [u8; 8],
    len: u8,
}

/// Largest magnitude stored as an integer: every integer up to it is exact.
const PACKED_INT_MAX: f64 = (1u64 << 53) as f64;

impl PackedScore {
    /// Encodes `s`.
    pub fn new(s: f64) -> Self {
        let integral = s.fract() == 0.0 && s.abs() <= PACKED_INT_MAX;
        if integral && !(s == 0.0 && s.is_sign_negative()) {
            let n = s as i64;
            // The fewest bytes whose sign extension gives `n` back: at most
            // 7, since 2^53 needs 54 bits and a sign bit.
            let len = (0u8..8).find(|&l| match l {
                0 => n == 0,
                _ => {
                    let shift = 64 - 8 * u32::from(l);
                    (n << shift) >> shift == n
                }
            });
            if let Some(len) = len {
                let bytes = n.to_le_bytes();
                return PackedScore { bytes, len };
            }
        }
        PackedScore {
            bytes: s.to_le_bytes(),
            len: 8,
        }
    }

    /// The stored bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Decodes a [`PackedScore`].
fn score_of(b: &[u8]) -> f64 {
    match b.len() {
        8 => b.try_into().map_or(0.0, f64::from_le_bytes),
        0 => 0.0,
        n => {
            // Sign-extend the little-endian bytes to 64 bits.
            let fill = if b[n - 1] & 0x80 != 0 { 0xff } else { 0 };
            let mut full = [fill; 8];
            full[..n].copy_from_slice(b);
            i64::from_le_bytes(full) as f64
        }
    }
}

/// Member/score pairs of a packed sorted set, in order.
pub struct Pairs<'a> {
    spans: Spans<'a>,
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        let (m, _, _) = self.spans.next()?;
        let (s, _, _) = self.spans.next()?;
        Some((m, score_of(s)))
    }
}

fn entries(p: &Packed) -> Pairs<'_> {
    Pairs { spans: p.spans() }
}

/// Pairs with the byte offset where each entry starts.
fn entry_spans(p: &Packed) -> impl Iterator<Item = (&[u8], f64, usize)> {
    let mut spans = p.spans();
    std::iter::from_fn(move || {
        let (m, start, _) = spans.next()?;
        let (s, _, _) = spans.next()?;
        Some((m, score_of(s), start))
    })
}

/// Locates `member`: (score, entry start, entry end).
fn find(p: &Packed, member: &[u8]) -> Option<(f64, usize, usize)> {
    let mut spans = p.spans();
    while let Some((m, start, _)) = spans.next() {
        let (s, _, end) = spans.next()?;
        if m == member {
            return Some((score_of(s), start, end));
        }
    }
    None
}

/// A walk over a [`ZSet`] in either direction.
pub enum Iter<'a> {
    /// Forward over a listpack.
    Packed(Pairs<'a>),
    /// Backward over a listpack.
    Rev(std::iter::Rev<std::vec::IntoIter<(&'a [u8], f64)>>),
    /// Over a tree.
    Tree(zset_tree::Iter<'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Packed(i) => i.next(),
            Iter::Rev(i) => i.next(),
            Iter::Tree(i) => i.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_scores_round_trip() {
        let two53 = (1u64 << 53) as f64;
        for (s, len) in [
            (0.0, 0),
            (1.0, 1),
            (-1.0, 1),
            (127.0, 1),
            (128.0, 2),
            (-128.0, 1),
            (-129.0, 2),
            (1e15, 7),
            (two53, 7),
            (-two53, 7),
            (two53 + 2.0, 8),
            (0.5, 8),
            (-0.0, 8),
            (f64::INFINITY, 8),
            (f64::NEG_INFINITY, 8),
        ] {
            let p = PackedScore::new(s);
            assert_eq!(p.as_bytes().len(), len, "{s}");
            let back = score_of(p.as_bytes());
            assert_eq!(back.to_bits(), s.to_bits(), "{s}");
        }
    }

    #[test]
    fn listpack_converts_and_keeps_order() {
        let mut z = ZSet::default();
        for i in 0..200u32 {
            z.insert(format!("m{i:03}").as_bytes(), f64::from(i % 7));
            if i < 128 {
                assert_eq!(z.encoding(), "listpack");
            }
        }
        assert_eq!(z.encoding(), "skiplist");
        assert_eq!(z.len(), 200);
        let all: Vec<(Vec<u8>, f64)> = z.iter_from(0).map(|(m, s)| (m.to_vec(), s)).collect();
        for w in all.windows(2) {
            assert_eq!(cmp_entry(w[0].1, &w[0].0, w[1].1, &w[1].0), Ordering::Less);
        }
        let mut small = ZSet::default();
        small.insert(b"b", 1.0);
        small.insert(b"a", 1.0);
        small.insert(b"c", -0.0);
        small.insert(b"b", 1.0);
        assert_eq!(small.rank(b"c"), Some(0));
        assert_eq!(small.rank(b"b"), Some(2));
        assert_eq!(small.score(b"c").map(f64::is_sign_negative), Some(false));
        let rev: Vec<&[u8]> = small.iter_rev_from(2).map(|(m, _)| m).collect();
        assert_eq!(rev, [&b"b"[..], b"a", b"c"]);
        assert_eq!(small.iter_rev_from(5).count(), 0);
        assert_eq!(small.iter_from(5).count(), 0);
    }
}
