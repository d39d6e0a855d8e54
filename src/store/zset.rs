//! Sorted-set values. As in Redis 7.0, a sorted set of at most 128 members
//! of at most 64 bytes (`zset-max-listpack-entries` /
//! `zset-max-listpack-value`) is compact (`listpack`): here a vector of
//! (score, member) kept in order, searched by binary search. Larger ones are
//! a [`Tree`] (`skiplist`): O(log n) lookups, ranks and ranges. A set that
//! outgrew the compact form stays a tree, except where Redis converts back
//! (stored results, see [`ZSet::shrink_encoding`]).

use std::cmp::Ordering;

use super::bytes::CompactBytes;
use super::zset_tree::{self, Tree};

/// Most members a listpack-encoded sorted set holds.
pub const MAX_LISTPACK_ENTRIES: usize = 128;
/// Longest member a listpack-encoded sorted set holds.
pub const MAX_LISTPACK_VALUE: usize = 64;

/// A sorted set.
#[derive(Clone, Debug)]
pub enum ZSet {
    /// Compact: entries in (score, member) order.
    Listpack(Vec<(f64, CompactBytes)>),
    /// Large.
    Skiplist(Box<Tree>),
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet::Listpack(Vec::new())
    }
}

/// Orders (score, member) pairs as Redis's skiplist does.
#[inline]
pub fn cmp_entry(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    s1.partial_cmp(&s2)
        .unwrap_or(Ordering::Equal)
        .then_with(|| m1.cmp(m2))
}

impl ZSet {
    /// A sorted set created for `size` members of up to `member_len`
    /// bytes: a skiplist from the start when they would not fit a listpack
    /// (Redis's zsetTypeCreate).
    pub fn with_hint(size: usize, member_len: usize) -> Self {
        if size <= MAX_LISTPACK_ENTRIES && member_len <= MAX_LISTPACK_VALUE {
            ZSet::Listpack(Vec::with_capacity(size))
        } else {
            ZSet::Skiplist(Box::default())
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            ZSet::Listpack(v) => v.len(),
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
    /// for stored results (zsetConvertToListpackIfNeeded). Listpack scores
    /// are text, so -0 reads back as 0.
    pub fn shrink_encoding(&mut self) {
        if let ZSet::Skiplist(t) = self {
            let fits = t.len() <= MAX_LISTPACK_ENTRIES
                && t.iter_from(0).all(|(m, _)| m.len() <= MAX_LISTPACK_VALUE);
            if fits {
                let v = t
                    .iter_from(0)
                    .map(|(m, s)| (if s == 0.0 { 0.0 } else { s }, CompactBytes::new(m)))
                    .collect();
                *self = ZSet::Listpack(v);
            }
        }
    }

    fn to_skiplist(&mut self) {
        if let ZSet::Listpack(v) = self {
            let mut t = Tree::default();
            for (s, m) in v.iter() {
                t.insert(m.as_slice(), *s);
            }
            *self = ZSet::Skiplist(Box::new(t));
        }
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Listpack(v) => v
                .iter()
                .find(|(_, m)| m.as_slice() == member)
                .map(|(s, _)| *s),
            ZSet::Skiplist(t) => t.score(member),
        }
    }

    /// Sets `member`'s score; returns the previous score if it existed.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        if let ZSet::Listpack(v) = self {
            let pos = v.iter().position(|(_, m)| m.as_slice() == member);
            if pos.is_none()
                && (v.len() >= MAX_LISTPACK_ENTRIES || member.len() > MAX_LISTPACK_VALUE)
            {
                self.to_skiplist();
            } else {
                // A listpack stores scores as text, where -0 becomes "0".
                let score = if score == 0.0 { 0.0 } else { score };
                let old = pos.map(|i| v.remove(i).0);
                if old == Some(score) {
                    // Unchanged: put it back where it was.
                    if let Some(i) = pos {
                        v.insert(i, (score, CompactBytes::new(member)));
                    }
                    return old;
                }
                let at = v.partition_point(|(s, m)| {
                    cmp_entry(*s, m.as_slice(), score, member) == Ordering::Less
                });
                if v.len() == v.capacity() {
                    // Grow by one, as a listpack reallocates per insert.
                    v.reserve_exact(1);
                }
                v.insert(at, (score, CompactBytes::new(member)));
                return old;
            }
        }
        match self {
            ZSet::Skiplist(t) => t.insert(member, score),
            ZSet::Listpack(_) => None,
        }
    }

    /// Removes `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Listpack(v) => {
                let i = v.iter().position(|(_, m)| m.as_slice() == member)?;
                Some(v.remove(i).0)
            }
            ZSet::Skiplist(t) => t.remove(member),
        }
    }

    /// Number of entries for which `below(score, member)` holds, where
    /// `below` is true for a prefix of the order.
    pub fn count_prefix(&self, below: impl Fn(f64, &[u8]) -> bool) -> usize {
        match self {
            ZSet::Listpack(v) => v.partition_point(|(s, m)| below(*s, m.as_slice())),
            ZSet::Skiplist(t) => t.count_prefix(below),
        }
    }

    /// The 0-based rank of `member`.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match self {
            ZSet::Listpack(v) => v.iter().position(|(_, m)| m.as_slice() == member),
            ZSet::Skiplist(t) => t.rank(member),
        }
    }

    /// Entries from rank `start` upwards, in order.
    pub fn iter_from(&self, start: usize) -> Iter<'_> {
        match self {
            ZSet::Listpack(v) => Iter::Slice(v.get(start..).unwrap_or(&[]).iter()),
            ZSet::Skiplist(t) => Iter::Tree(t.iter_from(start)),
        }
    }

    /// Entries from rank `start` downwards (towards rank 0).
    pub fn iter_rev_from(&self, start: usize) -> Iter<'_> {
        match self {
            ZSet::Listpack(v) => {
                let end = if start >= v.len() { 0 } else { start + 1 };
                Iter::Rev(v[..end].iter().rev())
            }
            ZSet::Skiplist(t) => Iter::Tree(t.iter_rev_from(start)),
        }
    }

    /// Members and scores of up to `count` hash positions from `cursor`;
    /// returns the next cursor. A listpack is returned whole.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(&'a [u8], f64)) -> u64 {
        match self {
            ZSet::Listpack(v) => {
                v.iter().for_each(|(s, m)| f(m.as_slice(), *s));
                0
            }
            ZSet::Skiplist(t) => t.scan(cursor, count, f),
        }
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        match self {
            ZSet::Listpack(v) => {
                v.capacity() * std::mem::size_of::<(f64, CompactBytes)>()
                    + v.iter().map(|(_, m)| m.heap_size()).sum::<usize>()
            }
            ZSet::Skiplist(t) => t.heap_size(),
        }
    }
}

/// A walk over a [`ZSet`] in either direction.
pub enum Iter<'a> {
    /// Forward over a listpack.
    Slice(std::slice::Iter<'a, (f64, CompactBytes)>),
    /// Backward over a listpack.
    Rev(std::iter::Rev<std::slice::Iter<'a, (f64, CompactBytes)>>),
    /// Over a tree.
    Tree(zset_tree::Iter<'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Slice(i) => i.next().map(|(s, m)| (m.as_slice(), *s)),
            Iter::Rev(i) => i.next().map(|(s, m)| (m.as_slice(), *s)),
            Iter::Tree(i) => i.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
