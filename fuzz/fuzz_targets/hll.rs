//! HyperLogLog strings (Redis's `isHLLObjectOrReply` then the sparse and
//! dense readers): a client can SET any bytes and call PFCOUNT, PFADD,
//! PFMERGE or PFDEBUG on them. Corrupt encodings are refused, never read
//! out of bounds.

#![no_main]

use ferrokv::store::hll;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The magic is given, so the fuzzer works on the encoding and body.
    let mut v = b"HYLL".to_vec();
    v.extend_from_slice(data);
    if !hll::is_hll(&v) {
        return;
    }
    let _ = hll::count(&v);
    let _ = hll::decode(&v);
    let mut regs = Box::new([0u8; hll::REGISTERS]);
    let _ = hll::merge_into(&mut regs, &v);
    let mut added = v.clone();
    if hll::add(&mut added, b"element", 3000).is_ok() {
        assert!(hll::is_hll(&added), "PFADD left a value that is not an HLL");
        let _ = hll::count(&added);
    }
    let mut dense = v.clone();
    if hll::to_dense(&mut dense).is_ok() {
        assert!(
            hll::is_hll(&dense),
            "sparse to dense left a value that is not an HLL"
        );
        hll::count(&dense).expect("a dense HLL ferrokv made counts");
    }
});
