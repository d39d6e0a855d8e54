//! Set values. As in Redis 7.0, a set of integers (each member a canonical
//! 64-bit integer) is a sorted `intset` of up to `set-max-intset-entries`
//! members (512; [`super::tuning`]); any other member, or one more, turns it
//! into a [`HashedMap`] (`hashtable`, Redis's dict) for good.
//! Intset order is ascending, which is what SMEMBERS shows.

use super::hashed::HashedMap;
use super::intset::IntSet;
use super::tuning;
use crate::util::num;

/// A set of byte strings.
#[derive(Clone, Debug)]
pub enum Set {
    /// Integers, ascending.
    Intset(IntSet),
    /// Anything else; boxed so a `Set` stays 16 bytes (a keyspace entry
    /// holds it in place of a 32-byte value).
    Table(Box<HashedMap<()>>),
}

const _: () = assert!(std::mem::size_of::<Set>() == 16);

impl Default for Set {
    fn default() -> Self {
        Set::Intset(IntSet::default())
    }
}

/// A member borrowed from a set: bytes or an intset integer.
#[derive(Clone, Copy, Debug)]
pub enum Member<'a> {
    /// Bytes stored as such.
    Bytes(&'a [u8]),
    /// An intset member.
    Int(i64),
}

impl Member<'_> {
    /// Calls `f` with the member's bytes.
    pub fn with<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Member::Bytes(b) => f(b),
            Member::Int(n) => {
                let mut buf = num::itoa_buf();
                f(num::fmt_i64(*n, &mut buf))
            }
        }
    }

    /// An owned copy of the member's bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        self.with(<[u8]>::to_vec)
    }
}

impl Set {
    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            Set::Intset(v) => v.len(),
            Set::Table(m) => m.len(),
        }
    }

    /// True when empty (the key must then be deleted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            Set::Intset(_) => "intset",
            Set::Table(_) => "hashtable",
        }
    }

    /// True when `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match self {
            Set::Intset(v) => num::parse_i64(member).is_some_and(|n| v.search(n).is_ok()),
            Set::Table(m) => m.contains(member),
        }
    }

    fn convert(&mut self) {
        if let Set::Intset(v) = self {
            let mut m = HashedMap::with_capacity(v.len());
            for n in v.iter() {
                let mut buf = num::itoa_buf();
                m.insert(num::fmt_i64(n, &mut buf), ());
            }
            *self = Set::Table(Box::new(m));
        }
    }

    /// Adds `member`; true when it was not there.
    pub fn add(&mut self, member: &[u8]) -> bool {
        if let Set::Intset(v) = self {
            match num::parse_i64(member) {
                Some(n) => match v.search(n) {
                    Ok(_) => return false,
                    Err(_) => {
                        if v.len() < tuning::set_max_intset_entries() {
                            return v.insert(n);
                        }
                        self.convert();
                    }
                },
                None => self.convert(),
            }
        }
        match self {
            Set::Table(m) => m.insert(member, ()).is_none(),
            // invariant: converted above
            Set::Intset(_) => false,
        }
    }

    /// Removes `member`; true when it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            Set::Intset(v) => num::parse_i64(member).is_some_and(|n| v.remove(n)),
            Set::Table(m) => m.remove(member).is_some(),
        }
    }

    /// Every member, ascending for an intset, bucket order for a table.
    pub fn iter(&self) -> Box<dyn Iterator<Item = Member<'_>> + '_> {
        match self {
            Set::Intset(v) => Box::new(v.iter().map(Member::Int)),
            Set::Table(m) => Box::new(m.iter().map(|(k, _)| Member::Bytes(k))),
        }
    }

    /// One step of a table's incremental rehash (a lookup's share).
    pub fn rehash_step(&mut self) {
        if let Set::Table(m) = self {
            m.rehash_step();
        }
    }

    /// The rehash work Redis does before each random draw from a table
    /// (dictGetSomeKeys steps once per entry it samples).
    pub fn rehash_for_draw(&mut self) {
        if let Set::Table(m) = self {
            for _ in 0..15 {
                m.rehash_step();
            }
        }
    }

    /// The table of a `hashtable` set (DEBUG HTSTATS-KEY); None for an
    /// intset.
    pub fn table(&self) -> Option<&HashedMap<()>> {
        match self {
            Set::Table(m) => Some(m),
            Set::Intset(_) => None,
        }
    }

    /// A random member (`point` is random bits).
    pub fn random(&self, point: u64) -> Option<Member<'_>> {
        match self {
            Set::Intset(v) => {
                if v.is_empty() {
                    return None;
                }
                Some(Member::Int(v.get((point % v.len() as u64) as usize)))
            }
            Set::Table(m) => m.random(point).map(|(k, _)| Member::Bytes(k)),
        }
    }

    /// Members from `cursor` until about `count` are found (a table, see
    /// [`HashedMap::scan`]); an intset is returned whole with cursor 0, as
    /// Redis does.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(Member<'a>)) -> u64 {
        match self {
            Set::Intset(v) => {
                v.iter().for_each(|n| f(Member::Int(n)));
                0
            }
            Set::Table(m) => m.scan(cursor, count, |k, _| f(Member::Bytes(k))),
        }
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        match self {
            Set::Intset(v) => v.heap_size(),
            Set::Table(m) => m.heap_size(|_| 0),
        }
    }
}
