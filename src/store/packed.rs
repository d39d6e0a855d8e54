//! `Packed`: byte strings stored back to back in one buffer, each prefixed
//! by its length as a LEB128 varint — the role of Redis's listpack for
//! small hashes: one allocation, a byte or so of overhead per string,
//! linear search (the collection is small by construction).

/// A sequence of byte strings in one buffer.
#[derive(Clone, Debug, Default)]
pub struct Packed {
    buf: Vec<u8>,
    count: usize,
}

/// Reads the varint at `pos`: (value, bytes used).
fn read_varint(buf: &[u8], pos: usize) -> (usize, usize) {
    let mut v = 0usize;
    let mut shift = 0;
    let mut i = pos;
    while let Some(&b) = buf.get(i) {
        v |= usize::from(b & 0x7f) << shift;
        i += 1;
        if b & 0x80 == 0 || shift >= 56 {
            break;
        }
        shift += 7;
    }
    (v, i - pos)
}

fn write_varint(mut v: usize, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

impl Packed {
    /// Number of strings.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Appends a string.
    pub fn push(&mut self, s: &[u8]) {
        let need = varint_len(s.len()) + s.len();
        if self.buf.capacity() - self.buf.len() < need {
            // Grow to fit exactly, as a listpack reallocates per insert.
            self.buf.reserve_exact(need);
        }
        write_varint(s.len(), &mut self.buf);
        self.buf.extend_from_slice(s);
        self.count += 1;
    }

    /// Inserts `strings` before the byte offset `pos` (a span start, or the
    /// buffer's end).
    pub fn insert_at(&mut self, pos: usize, strings: &[&[u8]]) {
        let mut enc = Vec::new();
        for s in strings {
            write_varint(s.len(), &mut enc);
            enc.extend_from_slice(s);
        }
        if self.buf.capacity() - self.buf.len() < enc.len() {
            self.buf.reserve_exact(enc.len());
        }
        let pos = pos.min(self.buf.len());
        self.buf.splice(pos..pos, enc);
        self.count += strings.len();
    }

    /// Byte length of the buffer (the offset just past the last string).
    pub fn byte_len(&self) -> usize {
        self.buf.len()
    }

    /// Every string with its byte span `(start, end)` in the buffer.
    pub fn spans(&self) -> Spans<'_> {
        Spans {
            buf: &self.buf,
            pos: 0,
        }
    }

    /// The string whose span starts at `start`.
    pub fn at(&self, start: usize) -> &[u8] {
        let (len, h) = read_varint(&self.buf, start);
        self.buf.get(start + h..start + h + len).unwrap_or(&[])
    }

    /// Replaces the string spanning `start..end` with `s`.
    pub fn replace(&mut self, start: usize, end: usize, s: &[u8]) {
        let mut enc = Vec::with_capacity(varint_len(s.len()) + s.len());
        write_varint(s.len(), &mut enc);
        enc.extend_from_slice(s);
        self.buf.splice(start..end, enc);
        self.buf.shrink_to_fit();
    }

    /// Removes the bytes `start..end` holding `n` whole strings.
    pub fn remove(&mut self, start: usize, end: usize, n: usize) {
        self.buf.drain(start..end);
        self.buf.shrink_to_fit();
        self.count -= n;
    }

    /// Heap bytes owned.
    pub fn heap_size(&self) -> usize {
        self.buf.capacity()
    }
}

/// Iterator over the strings of a [`Packed`] with their spans.
pub struct Spans<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Spans<'a> {
    type Item = (&'a [u8], usize, usize);

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let start = self.pos;
        let (len, h) = read_varint(self.buf, start);
        let end = (start + h + len).min(self.buf.len());
        self.pos = end;
        Some((&self.buf[start + h..end], start, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_replace_remove() {
        let mut p = Packed::default();
        let long = vec![7u8; 300];
        p.push(b"a");
        p.push(b"");
        p.push(&long);
        p.push(b"tail");
        let all: Vec<Vec<u8>> = p.spans().map(|(s, _, _)| s.to_vec()).collect();
        assert_eq!(
            all,
            vec![b"a".to_vec(), vec![], long.clone(), b"tail".to_vec()]
        );
        let (_, s, e) = p.spans().nth(1).expect("second");
        p.replace(s, e, b"xyz");
        assert_eq!(p.at(s), b"xyz");
        let (_, s, _) = p.spans().nth(2).expect("third");
        let (_, _, e) = p.spans().nth(3).expect("fourth");
        p.remove(s, e, 2);
        assert_eq!(p.count(), 2);
        let all: Vec<Vec<u8>> = p.spans().map(|(s, _, _)| s.to_vec()).collect();
        assert_eq!(all, vec![b"a".to_vec(), b"xyz".to_vec()]);
    }
}
