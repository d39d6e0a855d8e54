//! The multi-part AOF manifest (Redis's `aofLoadManifestFromFile`): any
//! text is parsed or refused; what parses is written back and parses again
//! to the same manifest.

#![no_main]

use ferrokv::persist::aof_load::parse_manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(m) = parse_manifest(text) else {
        return;
    };
    let again = parse_manifest(&m.text());
    // History files are written after the base: a manifest whose order
    // was otherwise reads back in Redis's order, with the same files.
    let again = again.expect("a manifest ferrokv wrote parses");
    assert_eq!(again.text(), m.text(), "manifest text is not stable");
});
