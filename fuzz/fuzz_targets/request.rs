//! Client requests (Redis's `processMultibulkBuffer` / `processInlineBuffer`):
//! the bytes arrive in the splits the input chooses, the parser keeps its
//! state across reads as the connection does, and large arguments are read
//! apart as the connection reads them. Whatever the parser accepts as a
//! multibulk command is checked against `redis-protocol`'s decoding of the
//! same bytes.

#![no_main]

use bytes::BytesMut;
use ferrokv::net::request::{take_big_start, Batch, Limits, RequestParser};
use libfuzzer_sys::fuzz_target;
use redis_protocol::resp2::decode::decode;
use redis_protocol::resp2::types::OwnedFrame;

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let limits = Limits {
        max_bulk: if head & 1 == 0 { 512 * 1024 * 1024 } else { 64 },
        unauthenticated: head & 2 != 0,
        big_arg: if head & 4 == 0 { 0 } else { 16 },
    };
    // Split points: the high bits of the first byte pick a read size,
    // 1 to 16 bytes or 8 to 15.5 KiB.
    let step = match usize::from(head >> 3) {
        n @ 0..=15 => n + 1,
        n => n * 512,
    };
    let mut conn = Conn::default();
    let mut commands: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut failed = false;
    for chunk in rest.chunks(step) {
        conn.read(chunk);
        let (batch, err) = conn.parse(limits);
        for i in 0..batch.len() {
            commands.push(batch.argv(i).iter_from(0).map(<[u8]>::to_vec).collect());
        }
        if err {
            failed = true;
            break;
        }
    }
    let parser = &conn.parser;
    // Differential check: a whole input of multibulk commands only, all
    // accepted, decodes to the same arguments with redis-protocol.
    if failed || parser.in_progress() || !rest.starts_with(b"*") {
        return;
    }
    let mut pos = 0;
    let mut oracle: Vec<Vec<Vec<u8>>> = Vec::new();
    while pos < rest.len() {
        if rest[pos] != b'*' {
            return;
        }
        match decode(&rest[pos..]) {
            Ok(Some((frame, used))) => {
                pos += used;
                match frame {
                    OwnedFrame::Array(items) if !items.is_empty() => {
                        let mut args = Vec::new();
                        for it in items {
                            match it {
                                OwnedFrame::BulkString(b) => args.push(b),
                                _ => return,
                            }
                        }
                        oracle.push(args);
                    }
                    _ => return,
                }
            }
            _ => return,
        }
    }
    assert_eq!(commands, oracle, "parser and redis-protocol disagree");
});

/// The connection's side of framing (`net::conn`): the query buffer, and a
/// large argument read into a buffer of its own.
#[derive(Default)]
struct Conn {
    parser: RequestParser,
    inbuf: BytesMut,
    big: Option<Vec<u8>>,
}

impl Conn {
    /// One read: into the large argument while one is wanted, then the
    /// query buffer.
    fn read(&mut self, mut bytes: &[u8]) {
        if let (Some(big), Some(want)) = (&mut self.big, self.parser.big_wanted()) {
            let take = (want - big.len()).min(bytes.len());
            big.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.inbuf.extend_from_slice(bytes);
    }

    /// Frames what is buffered, as `Conn::parse` then `take_batch` do;
    /// true when a protocol error ended the connection.
    fn parse(&mut self, limits: Limits) -> (Batch, bool) {
        let mut batch = Batch::default();
        let mut err = false;
        // Until nothing more frames: an unauthenticated client's commands
        // come one per call.
        let mut before = usize::MAX;
        while !err && batch.len() != before {
            before = batch.len();
            self.frame(&mut batch, limits, &mut err);
        }
        let n = self.parser.consumed();
        batch.input = self.inbuf.split_to(n).freeze();
        self.parser.rebase(n);
        (batch, err)
    }

    fn frame(&mut self, batch: &mut Batch, limits: Limits, err: &mut bool) {
        loop {
            if let (Some(big), Some(want)) = (&self.big, self.parser.big_wanted()) {
                if big.len() < want {
                    break;
                }
                let data = self.big.take().unwrap_or_default();
                self.parser.finish_big(data.into());
            }
            if self.parser.parse(&self.inbuf, batch, limits).is_err() {
                *err = true;
                break;
            }
            let Some(want) = self.parser.big_wanted() else {
                break;
            };
            let at = self.parser.cursor();
            self.big = Some(take_big_start(&mut self.inbuf, at, want));
        }
    }
}
