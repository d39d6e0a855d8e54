//! `IntSet`: sorted integers in one buffer, 2, 4 or 8 bytes each — the
//! narrowest width that holds every member, widened (never narrowed) as
//! members arrive, like Redis's `intset.c`.

use super::bytes::ThinBytes;

/// Bytes per member. An enum (not a plain integer) leaves the compiler
/// niches, so a [`super::set::Set`] holding an `IntSet` stays 24 bytes and
/// fits inside a [`super::value::Value`] with no box of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum Width {
    W2 = 2,
    W4 = 4,
    W8 = 8,
}

/// Bytes needed for `v`.
fn width_of(v: i64) -> Width {
    if i16::try_from(v).is_ok() {
        Width::W2
    } else if i32::try_from(v).is_ok() {
        Width::W4
    } else {
        Width::W8
    }
}

/// A sorted set of integers in an exactly sized buffer, reallocated per
/// insert and removal as Redis's intset is (it holds at most 512 members).
#[derive(Clone, Debug)]
pub struct IntSet {
    buf: ThinBytes,
    width: Width,
}

impl Default for IntSet {
    fn default() -> Self {
        IntSet {
            buf: ThinBytes::default(),
            width: Width::W2,
        }
    }
}

impl IntSet {
    fn width(&self) -> usize {
        self.width as usize
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.buf.len() / self.width()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The member at index `i` (ascending order); 0 past the end.
    pub fn get(&self, i: usize) -> i64 {
        let at = i * self.width();
        let b = self.buf.get(at..at + self.width()).unwrap_or(&[]);
        match self.width {
            Width::W2 => b.try_into().map_or(0, |a| i64::from(i16::from_le_bytes(a))),
            Width::W4 => b.try_into().map_or(0, |a| i64::from(i32::from_le_bytes(a))),
            Width::W8 => b.try_into().map_or(0, i64::from_le_bytes),
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

    fn encode(width: Width, v: i64, out: &mut Vec<u8>) {
        match width {
            Width::W2 => out.extend_from_slice(&(v as i16).to_le_bytes()),
            Width::W4 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            Width::W8 => out.extend_from_slice(&v.to_le_bytes()),
        }
    }

    /// Adds `v`; false when already present. Every member is rewritten at
    /// the width `v` needs when that is more than they have.
    pub fn insert(&mut self, v: i64) -> bool {
        let at = match self.search(v) {
            Ok(_) => return false,
            Err(i) => i,
        };
        let width = width_of(v).max(self.width);
        let mut buf = Vec::with_capacity((self.len() + 1) * width as usize);
        if width == self.width {
            let split = at * self.width();
            buf.extend_from_slice(&self.buf[..split]);
            Self::encode(width, v, &mut buf);
            buf.extend_from_slice(&self.buf[split..]);
        } else {
            for i in 0..at {
                Self::encode(width, self.get(i), &mut buf);
            }
            Self::encode(width, v, &mut buf);
            for i in at..self.len() {
                Self::encode(width, self.get(i), &mut buf);
            }
        }
        self.buf = ThinBytes::new(&buf);
        self.width = width;
        true
    }

    /// Removes `v`; false when absent.
    pub fn remove(&mut self, v: i64) -> bool {
        let Ok(i) = self.search(v) else {
            return false;
        };
        let at = i * self.width();
        let mut buf = Vec::with_capacity(self.buf.len() - self.width());
        buf.extend_from_slice(&self.buf[..at]);
        buf.extend_from_slice(&self.buf[at + self.width()..]);
        self.buf = ThinBytes::new(&buf);
        true
    }

    /// Members in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Heap bytes owned.
    pub fn heap_size(&self) -> usize {
        4 + self.buf.len()
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
