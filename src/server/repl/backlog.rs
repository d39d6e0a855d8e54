//! The replication buffer (Redis 7.0's `repl_buffer_blocks` with the
//! `repl_backlog` that references it, `feedReplicationBuffer` and
//! `incrementalTrimReplicationBacklog`): the stream is kept once, in a
//! list of blocks, and shared by the backlog and every replica. A replica
//! reads it from its own offset (its cursor); the backlog holds at least
//! `repl-backlog-size` bytes of it, and more while a replica still needs
//! older blocks, so such a replica can also continue from there with PSYNC.

use std::collections::VecDeque;

/// Redis's `PROTO_REPLY_CHUNK_BYTES`: the smallest block.
const BLOCK_MIN: usize = 16 * 1024;
/// What Redis's `replBufBlock` header takes in a block's allocation.
const BLOCK_HEADER: usize = 40;
/// What Redis's list node takes per block.
const LIST_NODE: usize = 24;
/// Blocks trimmed per step (Redis's REPL_BACKLOG_TRIM_BLOCKS_PER_CALL).
pub const TRIM_BLOCKS_PER_CALL: usize = 64;
/// The smallest `repl-backlog-size` CONFIG SET gives (CONFIG_REPL_BACKLOG_MIN_SIZE).
pub const MIN_SIZE: usize = 16 * 1024;

/// A block of the stream.
struct Block {
    /// The offset of its first byte.
    start: u64,
    /// Its bytes; its capacity is its size.
    data: Vec<u8>,
}

impl Block {
    /// The offset after its last byte.
    fn end(&self) -> u64 {
        self.start + self.data.len() as u64
    }

    fn room(&self) -> usize {
        self.data.capacity() - self.data.len()
    }
}

/// The stream's blocks, from the backlog's first on.
pub struct ReplBuffer {
    blocks: VecDeque<Block>,
    /// The offset of the next byte appended (`master_repl_offset` + 1).
    next: u64,
    /// Bytes held from the first block on (`repl_backlog_histlen`).
    histlen: usize,
    /// The blocks' memory (`mem_total_replication_buffers`).
    mem: usize,
    /// `repl-backlog-size`.
    limit: usize,
}

/// Memory counted for a block of `size` bytes asked for: what the allocator
/// gives for it with Redis's header, and its list node (Redis's
/// `repl_buffer_mem` share).
fn block_capacity(size: usize) -> usize {
    crate::util::counting_alloc::usable_size(size + BLOCK_HEADER) - BLOCK_HEADER
}

impl ReplBuffer {
    /// An empty buffer whose first byte will have offset `next`
    /// (createReplicationBacklog).
    pub fn new(limit: usize, next: u64) -> Self {
        ReplBuffer {
            blocks: VecDeque::new(),
            next,
            histlen: 0,
            mem: 0,
            limit: limit.max(1),
        }
    }

    /// `repl-backlog-size`.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A new `repl-backlog-size`; what it frees goes in steps.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(1);
    }

    /// Bytes of history held (`repl_backlog_histlen`).
    pub fn histlen(&self) -> usize {
        self.histlen
    }

    /// The offset of the first byte held (`repl_backlog_first_byte_offset`).
    pub fn first_offset(&self) -> u64 {
        self.next - self.histlen as u64
    }

    /// The offset of the next byte appended.
    pub fn next_offset(&self) -> u64 {
        self.next
    }

    /// The memory the blocks take (`mem_total_replication_buffers`).
    pub fn mem(&self) -> usize {
        self.mem
    }

    /// What Redis's index over the blocks takes (a radix tree node of 4
    /// bytes per entry, one entry every 64 blocks, and its root), which
    /// it adds to `mem_replication_backlog`.
    pub fn index_memory(&self) -> usize {
        4 + self.blocks.len() / 64 * (4 + 8)
    }

    /// Appends stream bytes: into the last block while it has room, then
    /// into new blocks of at least 16 KB and at most a sixteenth of the
    /// backlog (so a large write leaves no block too large to trim). True
    /// when a block was added (the output limits are checked then).
    pub fn append(&mut self, mut bytes: &[u8]) -> bool {
        let mut added = false;
        while !bytes.is_empty() {
            if let Some(tail) = self.blocks.back_mut().filter(|b| b.room() > 0) {
                let n = tail.room().min(bytes.len());
                tail.data.extend_from_slice(&bytes[..n]);
                bytes = &bytes[n..];
                self.next += n as u64;
                self.histlen += n;
                continue;
            }
            let largest = (self.limit / 16).max(BLOCK_MIN);
            let capacity = block_capacity(bytes.len().clamp(BLOCK_MIN, largest));
            self.mem += capacity + BLOCK_HEADER + LIST_NODE;
            self.blocks.push_back(Block {
                start: self.next,
                data: Vec::with_capacity(capacity),
            });
            added = true;
        }
        added
    }

    /// Drops up to `max_blocks` of the oldest blocks while more than the
    /// backlog's size is held and no replica still needs them (`needed`:
    /// the lowest offset a replica has yet to be given); never the last
    /// block, nor one whose loss would leave less than the backlog's size.
    pub fn trim(&mut self, max_blocks: usize, needed: u64) {
        let mut trimmed = 0;
        while self.histlen > self.limit && trimmed < max_blocks && self.blocks.len() > 1 {
            let first = &self.blocks[0];
            if needed < first.end() {
                break;
            }
            let len = first.data.len();
            if self.histlen - len <= self.limit {
                break;
            }
            self.mem -= first.data.capacity() + BLOCK_HEADER + LIST_NODE;
            self.histlen -= len;
            self.blocks.pop_front();
            trimmed += 1;
        }
    }

    /// True when the stream from `offset` on is held (up to the next byte
    /// to come).
    pub fn holds(&self, offset: u64) -> bool {
        offset >= self.first_offset() && offset <= self.next
    }

    /// The index of the block a reader at `offset` references: the one
    /// holding that byte, or the last when it is the next to come.
    fn block_of(&self, offset: u64) -> Option<usize> {
        if self.blocks.is_empty() || offset < self.first_offset() {
            return None;
        }
        let i = self.blocks.partition_point(|b| b.end() <= offset);
        Some(i.min(self.blocks.len() - 1))
    }

    /// Copies the stream from `offset` into `out`, at most `max` bytes;
    /// returns the offset after what was copied.
    pub fn read(&self, mut offset: u64, max: usize, out: &mut Vec<u8>) -> u64 {
        let Some(mut i) = self.block_of(offset) else {
            return offset;
        };
        let mut left = max;
        while left > 0 && i < self.blocks.len() {
            let b = &self.blocks[i];
            let from = (offset - b.start) as usize;
            let n = (b.data.len() - from).min(left);
            out.extend_from_slice(&b.data[from..from + n]);
            offset += n as u64;
            left -= n;
            i += 1;
        }
        offset
    }

    /// What a reader at `offset` holds of the buffer, as Redis counts a
    /// replica's output (getClientOutputBufferMemoryUsage): the blocks from
    /// the one it references to the last, whole, with their headers; and
    /// how many blocks those are (CLIENT LIST `oll`).
    pub fn held_from(&self, offset: u64) -> (usize, usize) {
        let Some(i) = self.block_of(offset) else {
            return (0, 0);
        };
        let (first, last) = (&self.blocks[i], &self.blocks[self.blocks.len() - 1]);
        let blocks = self.blocks.len() - i;
        let bytes = (last.start - first.start) as usize + last.data.capacity();
        (bytes + blocks * (BLOCK_HEADER + LIST_NODE), blocks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(b: &ReplBuffer, from: u64) -> Vec<u8> {
        let mut out = Vec::new();
        b.read(from, usize::MAX, &mut out);
        out
    }

    #[test]
    fn holds_the_stream_in_blocks_read_from_any_offset() {
        let mut b = ReplBuffer::new(1 << 20, 1);
        assert!(b.append(b"abcde"));
        assert!(!b.append(b"fgh"));
        assert_eq!(b.histlen(), 8);
        assert_eq!(b.first_offset(), 1);
        assert_eq!(read_all(&b, 1), b"abcdefgh");
        assert_eq!(read_all(&b, 6), b"fgh");
        assert_eq!(read_all(&b, 9), b"");
        assert!(b.holds(9) && !b.holds(10) && !b.holds(0));
        let big = vec![7u8; 3 * BLOCK_MIN];
        assert!(b.append(&big));
        assert_eq!(
            b.blocks.len(),
            2,
            "the tail filled, then one block for the rest"
        );
        let mut out = Vec::new();
        assert_eq!(b.read(3, 4, &mut out), 7);
        assert_eq!(out, b"cdef");
        assert_eq!(read_all(&b, 1).len(), 8 + big.len());
    }

    #[test]
    fn trims_to_the_backlog_size_but_not_what_a_reader_needs() {
        let mut b = ReplBuffer::new(MIN_SIZE, 1);
        for _ in 0..10 {
            b.append(&[1u8; 10_000]);
        }
        let held = b.histlen();
        b.trim(TRIM_BLOCKS_PER_CALL, 1);
        assert_eq!(b.histlen(), held, "a reader at offset 1 keeps every block");
        let mem = b.mem();
        b.trim(TRIM_BLOCKS_PER_CALL, b.next_offset());
        assert!(b.histlen() > MIN_SIZE && b.histlen() < held);
        assert!(b.mem() < mem);
        assert_eq!(b.first_offset(), b.next_offset() - b.histlen() as u64);
        assert_eq!(read_all(&b, b.first_offset()).len(), b.histlen());
        let (bytes, blocks) = b.held_from(b.next_offset());
        assert_eq!(blocks, 1);
        assert!(bytes >= BLOCK_MIN);
    }
}
