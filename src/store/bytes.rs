//! `CompactBytes`: a byte string stored inline when short (keys and small
//! values, no allocation) and boxed otherwise. 24 bytes either way.

/// Longest string kept inline.
pub const INLINE_CAP: usize = 22;

/// A byte string, inline up to [`INLINE_CAP`] bytes.
#[derive(Clone, PartialEq, Eq)]
pub enum CompactBytes {
    /// Short strings live in the entry itself.
    Inline { len: u8, data: [u8; INLINE_CAP] },
    /// Longer strings are boxed with no spare capacity.
    Heap(Box<[u8]>),
}

impl CompactBytes {
    /// Copies `s` into the most compact form.
    pub fn new(s: &[u8]) -> Self {
        if s.len() <= INLINE_CAP {
            let mut data = [0u8; INLINE_CAP];
            data[..s.len()].copy_from_slice(s);
            CompactBytes::Inline {
                len: s.len() as u8,
                data,
            }
        } else {
            CompactBytes::Heap(s.into())
        }
    }

    /// Takes ownership of a vector (shrinking it to fit when boxed).
    pub fn from_vec(v: Vec<u8>) -> Self {
        if v.len() <= INLINE_CAP {
            Self::new(&v)
        } else {
            CompactBytes::Heap(v.into_boxed_slice())
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            CompactBytes::Inline { len, data } => &data[..*len as usize],
            CompactBytes::Heap(b) => b,
        }
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            CompactBytes::Inline { len, .. } => *len as usize,
            CompactBytes::Heap(b) => b.len(),
        }
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes owned beyond the 24 inline ones.
    pub fn heap_size(&self) -> usize {
        match self {
            CompactBytes::Inline { .. } => 0,
            CompactBytes::Heap(b) => b.len(),
        }
    }
}

impl std::fmt::Debug for CompactBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_sizes() {
        assert_eq!(std::mem::size_of::<CompactBytes>(), 24);
        assert_eq!(CompactBytes::new(b"abc").as_slice(), b"abc");
        let long = vec![7u8; 100];
        assert_eq!(CompactBytes::new(&long).as_slice(), &long[..]);
    }
}
