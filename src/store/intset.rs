//! `IntSet`: sorted integers in one buffer, 2, 4 or 8 bytes each — the
//! narrowest width that holds every member, widened (never narrowed) as
//! members arrive, like Redis's `intset.c`.

/// A sorted set of integers.
#[derive(Clone, Debug)]
pub struct IntSet {
    width: usize,
    buf: Vec<u8>,
}

impl Default for IntSet {
    fn default() -> Self {
        IntSet {
            width: 2,
            buf: Vec::new(),
        }
    }
}

/// Bytes needed for `v`.
fn width_of(v: i64) -> usize {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

impl IntSet {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.buf.len() / self.width
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The member at index `i` (ascending order); 0 past the end.
    pub fn get(&self, i: usize) -> i64 {
        let at = i * self.width;
        let b = self.buf.get(at..at + self.width).unwrap_or(&[]);
        match self.width {
            2 => b.try_into().map_or(0, |a| i64::from(i16::from_le_bytes(a))),
            4 => b.try_into().map_or(0, |a| i64::from(i32::from_le_bytes(a))),
            _ => b.try_into().map_or(0, i64::from_le_bytes),
        }
    }

    /// Binary search: Ok(index) when present, Err(insertion index).
    pub fn search(&self, v: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.get(mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    fn encode(&self, v: i64, out: &mut Vec<u8>) {
        match self.width {
            2 => out.extend_from_slice(&(v as i16).to_le_bytes()),
            4 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            _ => out.extend_from_slice(&v.to_le_bytes()),
        }
    }

    /// Adds `v`; false when already present.
    pub fn insert(&mut self, v: i64) -> bool {
        let w = width_of(v);
        if w > self.width {
            // Widen every member first.
            let old: Vec<i64> = (0..self.len()).map(|i| self.get(i)).collect();
            self.width = w;
            let mut buf = Vec::with_capacity((old.len() + 1) * w);
            for x in old {
                self.encode(x, &mut buf);
            }
            self.buf = buf;
        }
        let Err(i) = self.search(v) else {
            return false;
        };
        let mut enc = Vec::with_capacity(8);
        self.encode(v, &mut enc);
        if self.buf.capacity() - self.buf.len() < enc.len() {
            // Grow by one member, as an intset reallocates per insert.
            self.buf.reserve_exact(enc.len());
        }
        let at = i * self.width;
        self.buf.splice(at..at, enc);
        true
    }

    /// Removes `v`; false when absent.
    pub fn remove(&mut self, v: i64) -> bool {
        let Ok(i) = self.search(v) else {
            return false;
        };
        let at = i * self.width;
        self.buf.drain(at..at + self.width);
        true
    }

    /// Members in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Heap bytes owned.
    pub fn heap_size(&self) -> usize {
        self.buf.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widens_and_stays_sorted() {
        let mut s = IntSet::default();
        for v in [5, -3, 100, 5, 70000, i64::MIN, i64::MAX, 0] {
            s.insert(v);
        }
        let all: Vec<i64> = s.iter().collect();
        assert_eq!(all, vec![i64::MIN, -3, 0, 5, 100, 70000, i64::MAX]);
        assert!(s.remove(70000));
        assert!(!s.remove(70000));
        assert_eq!(s.search(100), Ok(4));
        assert_eq!(s.len(), 6);
    }
}
