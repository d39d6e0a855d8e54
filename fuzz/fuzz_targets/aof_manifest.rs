//! The multi-part AOF manifest (Redis's `aofLoadManifestFromFile`): any
//! bytes are parsed or refused; what parses is written back and parses again
//! to the same manifest.

#![no_main]

use ferrokv::persist::aof_load::parse_manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = parse_manifest(data) else {
        return;
    };
    if m.files().next().is_none() {
        // Only comments: written back it is empty, which Redis refuses.
        return;
    }
    if m.text().lines().any(|l| l.len() >= 1024) {
        // A name that reads within Redis's 1024-byte line can be longer
        // quoted (as in Redis, which refuses it on the next start too).
        return;
    }
    let again = parse_manifest(m.text().as_bytes());
    // History files are written after the base: a manifest whose order
    // was otherwise reads back in Redis's order, with the same files.
    let again = again.expect("a manifest ferrokv wrote parses");
    assert_eq!(again.text(), m.text(), "manifest text is not stable");
});
