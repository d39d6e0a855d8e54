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

/// A byte string behind one thin pointer: its length (4 bytes) heads the
/// allocation, so a holder spends 8 bytes on it rather than a boxed
/// slice's 16 (an intset inside a keyspace entry).
pub struct ThinBytes(std::ptr::NonNull<u8>);

// SAFETY: a ThinBytes owns its allocation outright, as a Box<[u8]> would.
unsafe impl Send for ThinBytes {}
// SAFETY: shared access only reads.
unsafe impl Sync for ThinBytes {}

impl ThinBytes {
    fn layout(len: usize) -> std::alloc::Layout {
        // invariant: the bytes were in memory already, so the size fits.
        std::alloc::Layout::from_size_align(4 + len, 4).expect("thin bytes fit a layout")
    }

    /// A copy of `s`. Intsets, its one user, stay far below 4 GiB.
    pub fn new(s: &[u8]) -> Self {
        // invariant: see above; a longer string would be a bug upstream.
        let len = u32::try_from(s.len()).expect("thin bytes under 4 GiB");
        let layout = Self::layout(s.len());
        // SAFETY: a non-zero layout; the header and bytes are written
        // before use.
        unsafe {
            let p = std::alloc::alloc(layout);
            let Some(p) = std::ptr::NonNull::new(p) else {
                std::alloc::handle_alloc_error(layout);
            };
            p.as_ptr().cast::<u32>().write(len);
            std::ptr::copy_nonoverlapping(s.as_ptr(), p.as_ptr().add(4), s.len());
            ThinBytes(p)
        }
    }
}

impl std::ops::Deref for ThinBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the header holds the length of the bytes that follow it.
        unsafe {
            let len = self.0.as_ptr().cast::<u32>().read() as usize;
            std::slice::from_raw_parts(self.0.as_ptr().add(4), len)
        }
    }
}

impl Drop for ThinBytes {
    fn drop(&mut self) {
        // SAFETY: allocated by `new` with this layout.
        unsafe { std::alloc::dealloc(self.0.as_ptr(), Self::layout(self.len())) }
    }
}

impl Default for ThinBytes {
    fn default() -> Self {
        ThinBytes::new(&[])
    }
}

impl Clone for ThinBytes {
    fn clone(&self) -> Self {
        ThinBytes::new(self)
    }
}

impl std::fmt::Debug for ThinBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", &self[..])
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
        assert_eq!(std::mem::size_of::<ThinBytes>(), 8);
        assert_eq!(&ThinBytes::new(&long)[..], &long[..]);
        assert!(ThinBytes::default().is_empty());
        assert_eq!(&ThinBytes::new(b"xyz").clone()[..], b"xyz");
    }
}
