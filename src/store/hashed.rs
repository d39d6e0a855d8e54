//! `HashedMap`: the large-collection table behind hashes and sets (Redis's
//! `hashtable` encoding). Entries are kept ordered by a keyed hash of their
//! member, so the hash value itself is a stable scan cursor: HSCAN/SSCAN
//! resume from "the first hash at or after the cursor", which returns every
//! member present for the whole iteration however the table changes between
//! calls (the guarantee Redis gets from its reverse-binary cursor). The
//! same order gives cheap random sampling: pick a random point in hash space
//! and take the next entry.

use crate::util::siphash::SipKey;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::bytes::CompactBytes;

/// Entries sharing one hash value. Collisions of the 62-bit keyed hash are
/// vanishingly rare, so the common case holds one entry inline.
#[derive(Clone, Debug)]
enum Slot<V> {
    One(CompactBytes, V),
    Many(Vec<(CompactBytes, V)>),
}

impl<V> Slot<V> {
    /// The entries at this hash position.
    fn entries(&self) -> impl Iterator<Item = (&[u8], &V)> {
        let (one, many) = match self {
            Slot::One(k, v) => (Some((k.as_slice(), v)), &[][..]),
            Slot::Many(items) => (None, &items[..]),
        };
        one.into_iter()
            .chain(many.iter().map(|(k, v)| (k.as_slice(), v)))
    }
}

/// A map from byte strings to `V`, iterated in hash order.
#[derive(Clone, Debug)]
pub struct HashedMap<V> {
    map: BTreeMap<u64, Slot<V>>,
    len: usize,
}

impl<V> Default for HashedMap<V> {
    fn default() -> Self {
        HashedMap {
            map: BTreeMap::new(),
            len: 0,
        }
    }
}

/// Up to this many entries a random draw walks to a uniformly drawn rank.
const EXACT_RANDOM_MAX: usize = 1024;

/// Entries a larger table's random draw chooses among (Redis's
/// GETFAIR_NUM_ENTRIES is 15).
const FAIR_RUN: usize = 16;

/// The process-wide hash key, so clones of a map (COPY) stay valid.
fn seed() -> &'static SipKey {
    static SEED: OnceLock<SipKey> = OnceLock::new();
    SEED.get_or_init(SipKey::random)
}

/// The member's position in hash space: never 0 (0 is the cursor that
/// starts and ends a scan) and below 2^63 (cursors fit a signed integer).
fn position(key: &[u8]) -> u64 {
    (seed().hash(key) >> 1) | 1
}

impl<V> HashedMap<V> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value stored for `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        match self.map.get(&position(key))? {
            Slot::One(k, v) => (k.as_slice() == key).then_some(v),
            Slot::Many(items) => items
                .iter()
                .find(|(k, _)| k.as_slice() == key)
                .map(|(_, v)| v),
        }
    }

    /// The value stored for `key`, mutable.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        match self.map.get_mut(&position(key))? {
            Slot::One(k, v) => (k.as_slice() == key).then_some(v),
            Slot::Many(items) => items
                .iter_mut()
                .find(|(k, _)| k.as_slice() == key)
                .map(|(_, v)| v),
        }
    }

    /// True when `key` is present.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: &[u8], value: V) -> Option<V> {
        use std::collections::btree_map::Entry as E;
        match self.map.entry(position(key)) {
            E::Vacant(v) => {
                v.insert(Slot::One(CompactBytes::new(key), value));
                self.len += 1;
                None
            }
            E::Occupied(mut o) => {
                let slot = o.get_mut();
                match slot {
                    Slot::One(k, v) if k.as_slice() == key => {
                        return Some(std::mem::replace(v, value))
                    }
                    Slot::Many(items) => {
                        if let Some((_, v)) = items.iter_mut().find(|(k, _)| k.as_slice() == key) {
                            return Some(std::mem::replace(v, value));
                        }
                        items.push((CompactBytes::new(key), value));
                    }
                    Slot::One(..) => {
                        // A hash collision: the slot becomes a list.
                        let old = std::mem::replace(slot, Slot::Many(Vec::with_capacity(2)));
                        if let (Slot::One(k, v), Slot::Many(items)) = (old, slot) {
                            items.push((k, v));
                            items.push((CompactBytes::new(key), value));
                        }
                    }
                }
                self.len += 1;
                None
            }
        }
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        use std::collections::btree_map::Entry as E;
        let E::Occupied(mut o) = self.map.entry(position(key)) else {
            return None;
        };
        let removed = match o.get_mut() {
            Slot::One(k, _) if k.as_slice() == key => match o.remove() {
                Slot::One(_, v) => Some(v),
                Slot::Many(_) => None,
            },
            Slot::One(..) => None,
            Slot::Many(items) => {
                let i = items.iter().position(|(k, _)| k.as_slice() == key)?;
                let (_, v) = items.swap_remove(i);
                if items.is_empty() {
                    o.remove();
                }
                Some(v)
            }
        };
        if removed.is_some() {
            self.len -= 1;
        }
        removed
    }

    /// Every entry, in hash order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &V)> {
        self.map.values().flat_map(Slot::entries)
    }

    /// Calls `f` for the entries of up to `count` hash positions starting
    /// at `cursor`; returns the cursor to continue from (0 when done).
    pub fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        mut f: impl FnMut(&'a [u8], &'a V),
    ) -> u64 {
        for (seen, (&pos, slot)) in self.map.range(cursor..).enumerate() {
            if seen >= count {
                return pos;
            }
            match slot {
                Slot::One(k, v) => f(k.as_slice(), v),
                Slot::Many(items) => items.iter().for_each(|(k, v)| f(k.as_slice(), v)),
            }
        }
        0
    }

    /// A random entry, every entry equally likely. Entries sit at keyed
    /// hash positions whose gaps differ, so "the first at or after a random
    /// point" would favour entries after wide gaps: small tables are drawn
    /// by rank exactly; larger ones, as Redis's dictGetFairRandomKey, draw
    /// uniformly among a run of consecutive entries from a random point,
    /// which evens the gaps out.
    pub fn random(&self, point: u64) -> Option<(&[u8], &V)> {
        if self.len == 0 {
            return None;
        }
        // A second, independent draw from the one given (splitmix64).
        let mut z = point.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let second = z ^ (z >> 31);
        if self.len <= EXACT_RANDOM_MAX {
            return self.iter().nth((point % self.len as u64) as usize);
        }
        let start = point >> 1;
        let run = || {
            self.map
                .range(start..)
                .chain(self.map.range(..start))
                .flat_map(|(_, slot)| slot.entries())
                .take(FAIR_RUN)
        };
        let n = run().count().max(1);
        run().nth((second % n as u64) as usize)
    }

    /// Approximate heap bytes owned, given each value's own heap size.
    pub fn heap_size(&self, value_size: impl Fn(&V) -> usize) -> usize {
        // A B-tree node spends roughly (8 + slot) bytes per entry plus
        // edges; 1.5x covers the half-full nodes.
        let slot = std::mem::size_of::<Slot<V>>() + 8;
        self.len * slot * 3 / 2
            + self
                .iter()
                .map(|(k, v)| k.len() + value_size(v))
                .sum::<usize>()
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
}
