//! Hash values. Small hashes are a flat vector of field/value pairs in
//! insertion order, standing in for Redis's `listpack` (and reported as
//! such); they become a [`HashedMap`] (`hashtable`) past 512 fields or when
//! a field or value exceeds 64 bytes, and never convert back, as in Redis
//! 7.0 (`hash-max-listpack-entries` / `hash-max-listpack-value`).

use super::bytes::CompactBytes;
use super::hashed::HashedMap;

/// Most fields a listpack-encoded hash holds.
pub const MAX_LISTPACK_ENTRIES: usize = 512;
/// Longest field or value a listpack-encoded hash holds.
pub const MAX_LISTPACK_VALUE: usize = 64;

/// A hash of byte-string fields to byte-string values.
#[derive(Clone, Debug)]
pub enum Hash {
    /// Small: pairs in insertion order.
    Listpack(Vec<(CompactBytes, CompactBytes)>),
    /// Large.
    Table(HashedMap<CompactBytes>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Listpack(Vec::new())
    }
}

impl Hash {
    /// Number of fields.
    pub fn len(&self) -> usize {
        match self {
            Hash::Listpack(v) => v.len(),
            Hash::Table(m) => m.len(),
        }
    }

    /// True when no field is left (the key must then be deleted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            Hash::Listpack(_) => "listpack",
            Hash::Table(_) => "hashtable",
        }
    }

    /// True for the compact encoding.
    pub fn is_listpack(&self) -> bool {
        matches!(self, Hash::Listpack(_))
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            Hash::Listpack(v) => v
                .iter()
                .find(|(f, _)| f.as_slice() == field)
                .map(|(_, v)| v.as_slice()),
            Hash::Table(m) => m.get(field).map(CompactBytes::as_slice),
        }
    }

    /// True when `field` exists.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Converts to the table encoding when an argument of `len` bytes would
    /// not fit a listpack (Redis's hashTypeTryConversion, which looks at
    /// the arguments before anything is written).
    pub fn fit(&mut self, len: usize) {
        if len > MAX_LISTPACK_VALUE {
            self.convert();
        }
    }

    fn convert(&mut self) {
        if let Hash::Listpack(v) = self {
            let mut m = HashedMap::default();
            for (f, val) in v.drain(..) {
                m.insert(f.as_slice(), val);
            }
            *self = Hash::Table(m);
        }
    }

    /// Sets `field` to `value`; true when the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        self.fit(field.len().max(value.len()));
        let new = match self {
            Hash::Listpack(v) => {
                if let Some((_, old)) = v.iter_mut().find(|(f, _)| f.as_slice() == field) {
                    *old = CompactBytes::new(value);
                    false
                } else {
                    v.push((CompactBytes::new(field), CompactBytes::new(value)));
                    true
                }
            }
            Hash::Table(m) => m.insert(field, CompactBytes::new(value)).is_none(),
        };
        if self.len() > MAX_LISTPACK_ENTRIES {
            self.convert();
        }
        new
    }

    /// Removes `field`; true when it existed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Listpack(v) => match v.iter().position(|(f, _)| f.as_slice() == field) {
                Some(i) => {
                    v.remove(i);
                    true
                }
                None => false,
            },
            Hash::Table(m) => m.remove(field).is_some(),
        }
    }

    /// Every field and value, in listpack order or hash order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            Hash::Listpack(v) => Box::new(v.iter().map(|(f, v)| (f.as_slice(), v.as_slice()))),
            Hash::Table(m) => Box::new(m.iter().map(|(f, v)| (f, v.as_slice()))),
        }
    }

    /// The field/value pair at position `i` of [`Hash::iter`]'s order for a
    /// listpack, or a random pair for a table (`point` is random bits).
    pub fn random(&self, point: u64) -> Option<(&[u8], &[u8])> {
        match self {
            Hash::Listpack(v) => {
                let n = v.len();
                if n == 0 {
                    return None;
                }
                let (f, val) = &v[(point % n as u64) as usize];
                Some((f.as_slice(), val.as_slice()))
            }
            Hash::Table(m) => m.random(point).map(|(f, v)| (f, v.as_slice())),
        }
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        match self {
            Hash::Listpack(v) => {
                v.capacity() * 48
                    + v.iter()
                        .map(|(f, v)| f.heap_size() + v.heap_size())
                        .sum::<usize>()
            }
            Hash::Table(m) => m.heap_size(CompactBytes::heap_size),
        }
    }
}
