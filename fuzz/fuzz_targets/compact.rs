//! The compact encodings inside RDB files and RESTORE payloads, each
//! validated as Redis's `*ValidateIntegrity` functions do with deep
//! sanitization: listpacks, ziplists, intsets, zipmaps, and the stream
//! encoding. The first byte picks the decoder.

#![no_main]

use ferrokv::persist::rdb::compact;
use ferrokv::persist::rdb::load::Dec;
use ferrokv::persist::rdb::{listpack, stream};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, blob)) = data.split_first() else {
        return;
    };
    // The selector's high bit picks the shallow checks of
    // `sanitize-dump-payload no`.
    let deep = which & 0x80 == 0;
    match which % 8 {
        0 => {
            let mut n = 0usize;
            let _ = listpack::decode_with(blob, deep, |e| n += e.len());
        }
        1 => {
            let mut n = 0usize;
            let _ = listpack::decode_ziplist(blob, |e| n += e.len());
        }
        2 => {
            let _ = compact::intset(blob, deep);
        }
        3 => {
            if let Ok(items) = compact::zipmap(blob) {
                let _ = compact::hash(&items, true, true);
            }
        }
        4 => {
            if let Ok(items) = compact::elements(blob, false, deep) {
                let _ = compact::hash(&items, false, deep);
            }
        }
        5 => {
            if let Ok(items) = compact::elements(blob, true, true) {
                let _ = compact::zset(&items, true);
            }
        }
        6 => {
            let mut d = Dec::new(blob);
            d.deep = deep;
            let _ = stream::load(&mut d, true);
        }
        _ => {
            let _ = stream::load(&mut Dec::new(blob), false);
        }
    }
});
