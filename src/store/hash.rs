//! Hash values. Small hashes are field/value pairs in insertion order,
//! packed into one buffer ([`Packed`], Redis's `listpack`, and reported as
//! such); they become a [`HashedMap`] (`hashtable`) past
//! `hash-max-listpack-entries` fields (512) or when a field or value exceeds
//! `hash-max-listpack-value` bytes (64), and never convert back, as in Redis
//! 7.0 ([`super::tuning`]).

use super::bytes::CompactBytes;
use super::hashed::HashedMap;
use super::packed::Packed;
use super::tuning;

/// A hash of byte-string fields to byte-string values.
#[derive(Clone, Debug)]
pub enum Hash {
    /// Small: field, value, field, value... in insertion order.
    Listpack(Packed),
    /// Large.
    Table(Box<HashedMap<CompactBytes>>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Listpack(Packed::default())
    }
}

impl Hash {
    /// Number of fields.
    pub fn len(&self) -> usize {
        match self {
            Hash::Listpack(p) => p.count() / 2,
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
            Hash::Listpack(p) => find(p, field).map(|(_, v, _)| p.at(v)),
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
        if len > tuning::hash_max_value() {
            self.convert();
        }
    }

    /// Converts to the table encoding when the hash holds more fields
    /// than a listpack may (after a write, as Redis's hashTypeSet).
    pub fn fit_count(&mut self) {
        if self.is_listpack() && self.len() > tuning::hash_max_entries() {
            self.convert();
        }
    }

    fn convert(&mut self) {
        if let Hash::Listpack(p) = self {
            let mut m = HashedMap::with_capacity(p.count() / 2);
            for (f, v) in pairs(p) {
                m.insert(f, CompactBytes::new(v));
            }
            *self = Hash::Table(Box::new(m));
        }
    }

    /// Sets `field` to `value`; true when the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        self.fit(field.len().max(value.len()));
        let new = match self {
            Hash::Listpack(p) => match find(p, field) {
                Some((_, vs, ve)) => {
                    p.replace(vs, ve, value);
                    false
                }
                None => {
                    p.push(field);
                    p.push(value);
                    true
                }
            },
            Hash::Table(m) => m.insert(field, CompactBytes::new(value)).is_none(),
        };
        self.fit_count();
        new
    }

    /// Removes `field`; true when it existed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Listpack(p) => match find(p, field) {
                Some((fs, _, ve)) => {
                    p.remove(fs, ve, 2);
                    true
                }
                None => false,
            },
            Hash::Table(m) => m.remove(field).is_some(),
        }
    }

    /// Every field and value, in listpack order or bucket order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            Hash::Listpack(p) => Box::new(pairs(p)),
            Hash::Table(m) => Box::new(m.iter().map(|(f, v)| (f, v.as_slice()))),
        }
    }

    /// The field/value pair at position `i` of [`Hash::iter`]'s order for a
    /// listpack, or a random pair for a table (`point` is random bits).
    pub fn random(&self, point: u64) -> Option<(&[u8], &[u8])> {
        match self {
            Hash::Listpack(p) => {
                let n = p.count() / 2;
                if n == 0 {
                    return None;
                }
                pairs(p).nth((point % n as u64) as usize)
            }
            Hash::Table(m) => m.random(point).map(|(f, v)| (f, v.as_slice())),
        }
    }

    /// Approximate heap bytes owned.
    pub fn heap_size(&self) -> usize {
        match self {
            Hash::Listpack(p) => p.heap_size(),
            Hash::Table(m) => m.heap_size(CompactBytes::heap_size),
        }
    }
}

/// The field/value pairs of a packed hash.
fn pairs(p: &Packed) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut it = p.spans();
    std::iter::from_fn(move || {
        let (f, _, _) = it.next()?;
        let (v, _, _) = it.next()?;
        Some((f, v))
    })
}

/// Locates `field` in a packed hash: (field start, value start, value end).
fn find(p: &Packed, field: &[u8]) -> Option<(usize, usize, usize)> {
    let mut it = p.spans();
    while let Some((f, fs, _)) = it.next() {
        let (_, vs, ve) = it.next()?;
        if f == field {
            return Some((fs, vs, ve));
        }
    }
    None
}
