//! RESTORE payloads (Redis's `verifyDumpPayload` and `rdbLoadObject`, with
//! `sanitize-dump-payload yes` as with `no`: ferrokv decodes every payload
//! into its own structures, so both go through the same deep check). A
//! client can always compute the CRC, so the decoder sees any bytes. What
//! decodes must dump and decode again to the same contents (DEBUG
//! DIGEST-VALUE: a table may come back in another order, as in Redis).

#![no_main]

use ferrokv::cmd::debug::digest_value;
use ferrokv::persist::rdb::load::{payload_value, verify_payload};
use ferrokv::persist::rdb::save::dump_payload;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = verify_payload(data, false);
    let Some(value) = payload_value(data) else {
        return;
    };
    let dumped = dump_payload(&value, true);
    assert!(
        verify_payload(&dumped, false),
        "a payload ferrokv dumped fails its own check"
    );
    let again = payload_value(&dumped).expect("a payload ferrokv dumped decodes");
    assert_eq!(
        digest_value(&again),
        digest_value(&value),
        "a dumped value restores with other contents"
    );
});
