//! `Packed`: byte strings stored back to back in one buffer, each prefixed
//! by its length as a LEB128 varint — the role of Redis's listpack for
//! small hashes: one allocation, a byte or so of overhead per string,
//! linear search (the collection is small by construction). The count
//! of strings heads the buffer as a varint (a listpack's header holds its
//! count too; one byte up to 127 strings), so a `Packed` is one `Vec`: 24
//! bytes, and the hash or sorted set that holds it fits in a
//! [`super::value::Value`] without a box of its own.

/// A sequence of byte strings in one buffer: the count of strings (a
/// varint; nothing when there are none), then each string. Offsets taken
/// and given by its methods count from the first string.
#[derive(Clone, Debug, Default)]
pub struct Packed {
    buf: Vec<u8>,
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
        if self.buf.is_empty() {
            return 0;
        }
        read_varint(&self.buf, 0).0
    }

    /// Bytes of the count heading the buffer.
    fn head(&self) -> usize {
        if self.buf.is_empty() {
            return 0;
        }
        read_varint(&self.buf, 0).1
    }

    /// Adds `n` to the count, making room for `more` bytes of strings
    /// too; the head is rewritten, longer or shorter as the count needs.
    fn add_count(&mut self, n: isize, more: usize) {
        let count = (self.count() as isize + n) as usize;
        let mut head = Vec::with_capacity(4);
        write_varint(count, &mut head);
        let need = more + head.len().saturating_sub(self.head());
        if self.buf.capacity() - self.buf.len() < need {
            // Grow to fit exactly, as a listpack reallocates per insert.
            self.buf.reserve_exact(need);
        }
        let old = self.head();
        if old == head.len() {
            self.buf[..old].copy_from_slice(&head);
        } else {
            self.buf.splice(..old, head);
        }
    }

    /// The strings' bytes, after the head.
    fn data(&self) -> &[u8] {
        self.buf.get(self.head()..).unwrap_or(&[])
    }

    /// Appends a string.
    pub fn push(&mut self, s: &[u8]) {
        self.add_count(1, varint_len(s.len()) + s.len());
        write_varint(s.len(), &mut self.buf);
        self.buf.extend_from_slice(s);
    }

    /// Inserts `strings` before the byte offset `pos` (a span start, or the
    /// buffer's end).
    pub fn insert_at(&mut self, pos: usize, strings: &[&[u8]]) {
        let mut enc = Vec::new();
        for s in strings {
            write_varint(s.len(), &mut enc);
            enc.extend_from_slice(s);
        }
        self.add_count(strings.len() as isize, enc.len());
        let pos = self.head() + pos.min(self.byte_len());
        self.buf.splice(pos..pos, enc);
    }

    /// Byte length of the strings (the offset just past the last one).
    pub fn byte_len(&self) -> usize {
        self.data().len()
    }

    /// Every string with its byte span `(start, end)`.
    pub fn spans(&self) -> Spans<'_> {
        Spans {
            buf: self.data(),
            pos: 0,
        }
    }

    /// The string whose span starts at `start`.
    pub fn at(&self, start: usize) -> &[u8] {
        let data = self.data();
        let (len, h) = read_varint(data, start);
        data.get(start + h..start + h + len).unwrap_or(&[])
    }

    /// Replaces the string spanning `start..end` with `s`.
    pub fn replace(&mut self, start: usize, end: usize, s: &[u8]) {
        let mut enc = Vec::with_capacity(varint_len(s.len()) + s.len());
        write_varint(s.len(), &mut enc);
        enc.extend_from_slice(s);
        let head = self.head();
        self.buf.splice(head + start..head + end, enc);
        self.buf.shrink_to_fit();
    }

    /// Removes the bytes `start..end` holding `n` whole strings.
    pub fn remove(&mut self, start: usize, end: usize, n: usize) {
        let head = self.head();
        self.buf.drain(head + start..head + end);
        self.add_count(-(n as isize), 0);
        if self.count() == 0 {
            self.buf = Vec::new();
        } else {
            self.buf.shrink_to_fit();
        }
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

    #[test]
    fn count_head_grows_and_shrinks() {
        let mut p = Packed::default();
        for i in 0..200u32 {
            p.push(&i.to_le_bytes());
        }
        assert_eq!(p.count(), 200);
        let got: Vec<u32> = p
            .spans()
            .map(|(s, _, _)| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
            .collect();
        assert_eq!(got, (0..200).collect::<Vec<_>>());
        // Down across 128 strings: the head shrinks to one byte.
        let (_, start, _) = p.spans().nth(10).expect("11th");
        let (_, _, end) = p.spans().nth(109).expect("110th");
        p.remove(start, end, 100);
        assert_eq!(p.count(), 100);
        assert_eq!(p.heap_size(), 1 + 100 * 5);
        let (s, _, _) = p.spans().nth(10).expect("11th");
        assert_eq!(s, 110u32.to_le_bytes());
        // Up again by inserting in the middle.
        let (_, at, _) = p.spans().nth(5).expect("6th");
        let many: Vec<[u8; 4]> = (1000..1050u32).map(u32::to_le_bytes).collect();
        let refs: Vec<&[u8]> = many.iter().map(|b| b.as_slice()).collect();
        p.insert_at(at, &refs);
        assert_eq!(p.count(), 150);
        let (s, _, _) = p.spans().nth(5).expect("6th");
        assert_eq!(s, 1000u32.to_le_bytes());
        let (s, _, _) = p.spans().nth(55).expect("56th");
        assert_eq!(s, 5u32.to_le_bytes());
        assert_eq!(p.spans().count(), 150);
    }
}
