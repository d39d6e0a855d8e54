//! A connection's output not yet written: Redis's reply buffer and reply
//! list (`_addReplyToBufferOrList` and `writeToClient` in networking.c).
//!
//! Replies usually leave in the write that follows them, so a batch's
//! reply buffer is taken in whole and written from where it is. What a
//! slow reader leaves pending keeps the size its bytes need, as in Redis:
//! more output fills the buffer's spare room, then blocks of at least
//! [`REPLY_CHUNK`] bytes (Redis's reply list nodes), never a doubled copy
//! of the backlog; blocks go as they are written, and a large buffer gives
//! back its written part. CLIENT LIST `omem`, client eviction and
//! `used_memory` then follow what is pending.

use std::collections::VecDeque;
use std::io::{ErrorKind, IoSlice, Write};

use super::conn::REPLY_CHUNK;

/// A large buffer partly written gives back its written part once it is
/// at least this much and at least half of what the buffer holds.
const GIVE_BACK_MIN: usize = 64 * 1024;

/// Blocks offered to one vectored write.
const WRITE_SLICES: usize = 16;

/// Output bytes queued for one connection, in order: `buf[pos..]`, then
/// each of `blocks`.
pub struct Output {
    /// The buffer being written (a batch's replies, or the reply buffer).
    buf: Vec<u8>,
    /// Written prefix of `buf`.
    pos: usize,
    /// Output queued once `buf` had no room left.
    blocks: VecDeque<Vec<u8>>,
    /// Bytes in `blocks`.
    blocks_len: usize,
    /// Bytes allocated for `blocks`.
    blocks_alloc: usize,
    /// Buffers written out, freed by [`Self::reclaim`] on the executor's
    /// thread: a write on an I/O thread leaves them, so allocations stay
    /// with one thread's cache (jemalloc's `used_memory` counts what a
    /// thread's cache holds).
    spent: Vec<Vec<u8>>,
    /// Bytes allocated for `spent`.
    spent_alloc: usize,
    /// What the buffer keeps once written out: the reply buffer's size.
    keep: usize,
}

impl Output {
    /// Empty output with a reply buffer of `keep` bytes.
    pub fn new(keep: usize) -> Self {
        Output {
            buf: Vec::with_capacity(keep),
            pos: 0,
            blocks: VecDeque::new(),
            blocks_len: 0,
            blocks_alloc: 0,
            spent: Vec::new(),
            spent_alloc: 0,
            keep,
        }
    }

    /// Bytes queued and not written.
    #[inline]
    pub fn pending(&self) -> usize {
        self.buf.len() - self.pos + self.blocks_len
    }

    /// Bytes allocated for output, pending or spare.
    #[inline]
    pub fn alloc(&self) -> usize {
        self.buf.capacity() + self.blocks_alloc + self.spent_alloc
    }

    /// Sets the reply buffer's size, and gives the buffer that size when
    /// nothing is pending and it is more than twice as large.
    pub fn set_keep(&mut self, keep: usize) {
        self.keep = keep;
        if self.pending() == 0 && self.buf.capacity() > keep * 2 {
            self.buf = Vec::with_capacity(keep);
            self.pos = 0;
        }
    }

    /// Frees the buffer of an idle connection with nothing pending.
    pub fn free_idle(&mut self) {
        if self.pending() == 0 && self.buf.capacity() > 0 {
            self.buf = Vec::new();
            self.pos = 0;
        }
    }

    /// Queues a batch's replies, taking `out`'s buffer when nothing is
    /// pending (no copy); returns a buffer for the next batch, empty.
    pub fn take(&mut self, mut out: Vec<u8>) -> Vec<u8> {
        if self.pending() == 0 {
            self.buf.clear();
            self.pos = 0;
            std::mem::swap(&mut self.buf, &mut out);
        } else {
            self.queue(&out);
        }
        out.clear();
        out
    }

    /// Queues `bytes` after what is pending: into the buffer's spare room
    /// (what was written is dropped from its front first when that makes
    /// room cheaply), then into blocks.
    pub fn queue(&mut self, mut bytes: &[u8]) {
        if self.blocks.is_empty() {
            let waiting = self.buf.len() - self.pos;
            if waiting == 0 {
                self.buf.clear();
                self.pos = 0;
            } else if self.pos >= waiting && self.buf.len() + bytes.len() > self.buf.capacity() {
                // Moves fewer bytes than were written since the buffer
                // was last compacted.
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            if self.buf.is_empty() {
                self.buf.reserve_exact(bytes.len());
            }
            let room = self.buf.capacity() - self.buf.len();
            let (head, rest) = bytes.split_at(bytes.len().min(room));
            self.buf.extend_from_slice(head);
            bytes = rest;
        }
        if bytes.is_empty() {
            return;
        }
        if let Some(last) = self.blocks.back_mut() {
            let room = last.capacity() - last.len();
            let (head, rest) = bytes.split_at(bytes.len().min(room));
            last.extend_from_slice(head);
            self.blocks_len += head.len();
            bytes = rest;
        }
        if !bytes.is_empty() {
            let mut block = Vec::with_capacity(bytes.len().max(REPLY_CHUNK));
            block.extend_from_slice(bytes);
            self.blocks_len += block.len();
            self.blocks_alloc += block.capacity();
            self.blocks.push_back(block);
        }
    }

    /// Writes what the socket takes; Ok(n) is the number of bytes
    /// written, an error means the connection is dead. Buffers written out
    /// wait for [`Self::reclaim`].
    pub fn write_to<W: Write>(&mut self, sock: &mut W) -> std::io::Result<usize> {
        let mut written = 0;
        loop {
            if self.pos == self.buf.len() && !self.next_block() {
                break;
            }
            let r = if self.blocks.is_empty() {
                sock.write(&self.buf[self.pos..])
            } else {
                let mut slices = [IoSlice::new(&[]); WRITE_SLICES];
                slices[0] = IoSlice::new(&self.buf[self.pos..]);
                let mut n = 1;
                for (slot, block) in slices[1..].iter_mut().zip(&self.blocks) {
                    *slot = IoSlice::new(block);
                    n += 1;
                }
                sock.write_vectored(&slices[..n])
            };
            match r {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    written += n;
                    self.advance(n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(written)
    }

    /// Marks `n` more bytes written.
    fn advance(&mut self, mut n: usize) {
        loop {
            let here = (self.buf.len() - self.pos).min(n);
            self.pos += here;
            n -= here;
            if n == 0 || !self.next_block() {
                return;
            }
        }
    }

    /// Moves the next block in once the buffer is written out; false when
    /// there is none.
    fn next_block(&mut self) -> bool {
        let Some(next) = self.blocks.pop_front() else {
            return false;
        };
        self.blocks_len -= next.len();
        self.blocks_alloc -= next.capacity();
        let done = std::mem::replace(&mut self.buf, next);
        self.pos = 0;
        self.spent_alloc += done.capacity();
        self.spent.push(done);
        true
    }

    /// After a write, on the executor's thread: frees the buffers written
    /// out; once everything is written, the buffer goes back to the reply
    /// buffer's size; a slow reader's large buffer gives back what it
    /// wrote and what it will not fill.
    pub fn reclaim(&mut self) {
        if !self.spent.is_empty() {
            self.spent.clear();
            self.spent_alloc = 0;
        }
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
            if self.blocks.is_empty() && self.buf.capacity() > 2 * self.keep {
                self.buf.shrink_to(self.keep);
            }
            return;
        }
        // Moves fewer bytes than were written.
        if self.pos >= GIVE_BACK_MIN && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let spare = self.buf.capacity() - self.buf.len();
        if spare > REPLY_CHUNK && spare * 8 > self.buf.capacity() {
            self.buf.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket that takes at most `room` bytes per write, and then
    /// `WouldBlock` once `limit` is reached.
    struct Slow {
        got: Vec<u8>,
        room: usize,
        limit: usize,
    }

    impl Write for Slow {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.room).min(self.limit - self.got.len());
            if n == 0 {
                return Err(ErrorKind::WouldBlock.into());
            }
            self.got.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn bytes(seed: usize, n: usize) -> Vec<u8> {
        (0..n).map(|i| (seed * 31 + i) as u8).collect()
    }

    #[test]
    fn a_backlog_keeps_its_bytes_in_order_and_the_memory_they_need() {
        let mut out = Output::new(REPLY_CHUNK);
        let mut sock = Slow {
            got: Vec::new(),
            room: 7000,
            limit: 50_000,
        };
        let mut sent = Vec::new();
        for i in 0..400 {
            let b = bytes(i, 100 + i * 13 % 3000);
            sent.extend_from_slice(&b);
            out.queue(&b);
            if i % 50 == 0 {
                out.write_to(&mut sock).unwrap();
                out.reclaim();
            }
            // No doubling: what is allocated is what is pending, the
            // reply buffer and the last block's spare room.
            assert!(
                out.alloc() <= out.pending() + 3 * REPLY_CHUNK,
                "{} {}",
                out.alloc(),
                out.pending()
            );
        }
        sock.limit = usize::MAX;
        out.write_to(&mut sock).unwrap();
        out.reclaim();
        assert_eq!(sock.got, sent);
        assert_eq!(out.pending(), 0);
        assert!(out.alloc() <= 2 * REPLY_CHUNK);
    }

    #[test]
    fn a_large_reply_gives_back_what_was_written() {
        let mut out = Output::new(REPLY_CHUNK);
        let mut reply = Vec::with_capacity(8 << 20);
        reply.extend_from_slice(&bytes(1, 5 << 20));
        let sent = reply.clone();
        let spare = out.take(reply);
        assert!(spare.is_empty());
        let mut sock = Slow {
            got: Vec::new(),
            room: usize::MAX,
            limit: 3 << 20,
        };
        out.write_to(&mut sock).unwrap();
        out.reclaim();
        assert_eq!(out.pending(), 2 << 20);
        assert!(out.alloc() < (2 << 20) + REPLY_CHUNK, "{}", out.alloc());
        out.queue(b"+OK\r\n");
        sock.limit = usize::MAX;
        out.write_to(&mut sock).unwrap();
        out.reclaim();
        assert_eq!(&sock.got[..sent.len()], &sent[..]);
        assert_eq!(&sock.got[sent.len()..], b"+OK\r\n");
        assert!(out.alloc() <= 2 * REPLY_CHUNK);
    }

    #[test]
    fn replies_taken_while_nothing_is_pending_are_not_copied() {
        let mut out = Output::new(REPLY_CHUNK);
        let mut reply = Vec::with_capacity(REPLY_CHUNK);
        reply.extend_from_slice(b"+PONG\r\n");
        let at = reply.as_ptr();
        out.take(reply);
        assert_eq!(out.buf.as_ptr(), at);
        let mut sock = Slow {
            got: Vec::new(),
            room: usize::MAX,
            limit: usize::MAX,
        };
        assert_eq!(out.write_to(&mut sock).unwrap(), 7);
        assert_eq!(sock.got, b"+PONG\r\n");
    }
}
