//! A replica's link to its master (Redis's `syncWithMaster` and
//! `readSyncBulkPayload`): the input plays the master, answering the
//! handshake, PSYNC and the snapshot (`$<len>` or `$EOF:<mark>`), in reads
//! of the size its first byte picks. The snapshot is then loaded as the
//! replica loads it, and the stream bytes after it framed as the master
//! client's requests.

#![no_main]

use std::io::{Read, Write};
use std::time::Duration;

use bytes::BytesMut;
use ferrokv::net::request::{Batch, Limits, RequestParser};
use ferrokv::persist::rdb::load::{load_rdb, LoadOptions};
use ferrokv::server::repl::master_link::{handshake_over, HandshakeConf, Payload, Synced};
use ferrokv::store::Store;
use libfuzzer_sys::fuzz_target;

/// The master's side of the socket: reads give the input in pieces, then
/// end of stream; writes go nowhere.
struct Master<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl Read for Master<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

impl Write for Master<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn opts() -> LoadOptions {
    LoadOptions {
        verify_checksum: true,
        now_ms: 1_000_000,
        key_delay_us: 0,
        events_interval: 0,
        allow_dup: false,
        feed_expired: false,
        keep_expired: false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let conf = HandshakeConf {
        host: "127.0.0.1".into(),
        port: 6379,
        listening_port: 6380,
        announce_ip: (head & 1 != 0).then(|| "10.0.0.1".into()),
        source_addr: None,
        auth: (head & 2 != 0).then(|| (Some("user".into()), "secret".into())),
        psync: (head & 4 != 0).then(|| ("8de1787ba490483314a4d30f1c628bc5025eb761".into(), 15)),
        timeout: Duration::from_secs(1),
        failover: head & 8 != 0,
        tls: None,
        // Half the runs load the snapshot as it arrives (a diskless load),
        // the other half read it whole and load it after.
        diskless_load: (head & 16 != 0).then(|| (16, opts())),
        // In place (on-empty-db) or beside the data set (swapdb).
        diskless_in_place: head & 32 != 0,
        // The other half write it to a temp file first, removed below.
        dir: std::env::temp_dir(),
    };
    let master = Master {
        bytes: rest,
        // Reads of 1 byte to 16 KiB.
        step: 1 << ((head >> 5) * 2),
    };
    let Ok((synced, leftover)) = handshake_over(master, &conf) else {
        return;
    };
    if let Synced::Full {
        payload: Payload::Rdb(rdb, _received),
        ..
    } = synced
    {
        // `_received`, dropped at the end of this block, removes its file.
        let _ = load_rdb(&rdb, &mut Store::new(16), opts());
    }
    let limits = Limits {
        max_bulk: 512 * 1024 * 1024,
        unauthenticated: false,
        big_arg: 0,
    };
    let mut parser = RequestParser::default();
    let mut buf = BytesMut::from(&leftover[..]);
    let mut batch = Batch::default();
    let _ = parser.parse(&buf, &mut batch, limits);
    let n = parser.consumed();
    batch.input = buf.split_to(n).freeze();
    for i in 0..batch.len() {
        assert!(batch.argv(i).len() > 0, "an empty command was framed");
    }
});
