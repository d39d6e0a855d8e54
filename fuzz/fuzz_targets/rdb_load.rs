//! RDB files (Redis's `rdbLoad`): any bytes, as a file at start-up, DEBUG
//! RELOAD or a replica's full sync would bring them. The load either
//! succeeds or is refused; what it loaded is then saved and loaded again,
//! which must succeed.

#![no_main]

use ferrokv::persist::rdb::load::{load_rdb_with, LoadOptions};
use ferrokv::persist::rdb::save::{write_rdb, SaveOptions};
use ferrokv::store::Store;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let opts = LoadOptions {
        // Mutated files rarely keep their CRC: check it only when the
        // file says 0 ("not computed") or the last byte asks for it.
        verify_checksum: data.last().is_some_and(|b| b & 1 == 1),
        now_ms: 1_000_000,
        key_delay_us: 0,
        events_interval: 64,
        allow_dup: false,
        feed_expired: false,
        keep_expired: false,
    };
    let mut store = Store::new(16);
    let mut calls = 0u32;
    let loaded = load_rdb_with(data, &mut store, opts, &mut |_, _| {
        calls += 1;
        true
    });
    if loaded.is_err() {
        return;
    }
    let mut image = Vec::new();
    let save = SaveOptions {
        compress: true,
        checksum: true,
        used_mem: 0,
        aof_base: false,
        repl: None,
        key_delay_us: 0,
        fsync_every: 0,
    };
    // Writing into a Vec cannot fail.
    write_rdb(&mut image, &store, save, None).expect("writes to memory");
    let mut again = Store::new(16);
    if let Err(e) = load_rdb_with(&image, &mut again, opts, &mut |_, _| true) {
        panic!("an image ferrokv wrote does not load: {e:?}");
    }
});
