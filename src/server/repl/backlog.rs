//! The replication backlog (Redis's `repl_backlog`): the last
//! `repl-backlog-size` bytes of the replication stream, so a replica that
//! lost its link can continue from its offset (`+CONTINUE`) instead of
//! loading a new snapshot.

/// A ring of the stream's most recent bytes.
pub struct Backlog {
    ring: Vec<u8>,
    /// Where the next byte goes.
    idx: usize,
    /// Bytes of history held (at most the ring's size).
    histlen: usize,
}

impl Backlog {
    /// An empty backlog of `size` bytes (at least one).
    pub fn new(size: usize) -> Self {
        Backlog {
            ring: vec![0; size.max(1)],
            idx: 0,
            histlen: 0,
        }
    }

    /// Its size (`repl_backlog_size`).
    pub fn size(&self) -> usize {
        self.ring.len()
    }

    /// Bytes of history held (`repl_backlog_histlen`).
    pub fn histlen(&self) -> usize {
        self.histlen
    }

    /// Appends stream bytes, dropping the oldest when full.
    pub fn append(&mut self, mut data: &[u8]) {
        let size = self.ring.len();
        if data.len() > size {
            data = &data[data.len() - size..];
        }
        while !data.is_empty() {
            let n = (size - self.idx).min(data.len());
            self.ring[self.idx..self.idx + n].copy_from_slice(&data[..n]);
            self.idx = (self.idx + n) % size;
            self.histlen = (self.histlen + n).min(size);
            data = &data[n..];
        }
    }

    /// The last `n` bytes of history (n ≤ histlen), oldest first.
    pub fn tail(&self, n: usize) -> Vec<u8> {
        let n = n.min(self.histlen);
        let size = self.ring.len();
        let start = (self.idx + size - n) % size;
        let mut out = Vec::with_capacity(n);
        if start + n <= size {
            out.extend_from_slice(&self.ring[start..start + n]);
        } else {
            out.extend_from_slice(&self.ring[start..]);
            out.extend_from_slice(&self.ring[..n - (size - start)]);
        }
        out
    }

    /// A new size (CONFIG SET repl-backlog-size): the newest history that
    /// fits is kept.
    pub fn resize(&mut self, size: usize) {
        if size.max(1) == self.ring.len() {
            return;
        }
        let keep = self.tail(self.histlen.min(size.max(1)));
        *self = Backlog::new(size);
        self.append(&keep);
    }
}

#[cfg(test)]
mod tests {
    use super::Backlog;

    #[test]
    fn keeps_the_newest_bytes_across_the_wrap() {
        let mut b = Backlog::new(8);
        b.append(b"abcde");
        assert_eq!(b.tail(5), b"abcde");
        b.append(b"fghij");
        assert_eq!(b.histlen(), 8);
        assert_eq!(b.tail(8), b"cdefghij");
        assert_eq!(b.tail(3), b"hij");
        b.append(b"0123456789xyz");
        assert_eq!(b.tail(8), b"56789xyz");
        b.resize(4);
        assert_eq!(b.tail(4), b"9xyz");
    }
}
