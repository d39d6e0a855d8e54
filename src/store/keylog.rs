//! A log of written keys packed into one buffer, for consumers that read
//! every write in order (client-side caching's invalidations, Redis's
//! trackingInvalidateKey calls from signalModifiedKey): recording a key
//! copies its bytes and allocates nothing once the buffer has grown.

/// Marks a flush in place of a key length.
const FLUSH: u32 = u32::MAX;

/// Keys (and flushes) in the order they were written.
#[derive(Default, Debug)]
pub struct KeyLog {
    /// Each entry: its length as a native u32, then its bytes; a flush is
    /// the length FLUSH alone.
    buf: Vec<u8>,
}

impl KeyLog {
    /// Records a write to `key`.
    #[inline]
    pub fn push_key(&mut self, key: &[u8]) {
        // Keys are bounded by proto-max-bulk-len (at most 512 MB in Redis
        // and here), far below FLUSH.
        self.buf
            .extend_from_slice(&(key.len() as u32).to_ne_bytes());
        self.buf.extend_from_slice(key);
    }

    /// Records a flush of one or every database.
    pub fn push_flush(&mut self) {
        self.buf.extend_from_slice(&FLUSH.to_ne_bytes());
    }

    /// True when nothing was recorded.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Forgets everything, keeping the buffer.
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// The entries in order: Some(key), or None for a flush.
    pub fn iter(&self) -> impl Iterator<Item = Option<&[u8]>> {
        let mut at = 0;
        std::iter::from_fn(move || {
            let head = self.buf.get(at..at + 4)?;
            let mut len = [0u8; 4];
            len.copy_from_slice(head);
            let len = u32::from_ne_bytes(len);
            at += 4;
            if len == FLUSH {
                return Some(None);
            }
            let key = &self.buf[at..at + len as usize];
            at += len as usize;
            Some(Some(key))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_flushes_in_order() {
        let mut log = KeyLog::default();
        assert!(log.is_empty());
        log.push_key(b"a");
        log.push_flush();
        log.push_key(b"");
        log.push_key(b"longer key");
        let got: Vec<Option<&[u8]>> = log.iter().collect();
        assert_eq!(
            got,
            vec![
                Some(&b"a"[..]),
                None,
                Some(&b""[..]),
                Some(&b"longer key"[..])
            ]
        );
        log.clear();
        assert_eq!(log.iter().count(), 0);
    }
}
