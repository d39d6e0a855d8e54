//! Cluster bus messages (Redis's `clusterProcessPacket` checks and
//! decoding): a peer's packet is decoded or ignored; what decodes encodes
//! to a packet that decodes and encodes to the same bytes.

#![no_main]

use ferrokv::server::cluster::msg::{decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((header, body)) = decode(data) else {
        return;
    };
    let bytes = encode(&header, &body);
    let (h2, b2) = decode(&bytes).expect("a message ferrokv encoded decodes");
    assert_eq!(
        encode(&h2, &b2),
        bytes,
        "encode, decode, encode is not stable"
    );
});
