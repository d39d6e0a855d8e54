//! Sizes of listpack entries (Redis 7.0 `listpack.c`), which the store
//! uses to account streams as Redis lays them out; the RDB writer
//! (`persist/rdb/listpack.rs`) builds the same entries.

use crate::util::num;

/// Bytes needed to store the back-length `l`.
pub fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Bytes one integer element takes in a listpack (encoding and
/// back-length), as `lpAppendInteger` would store it.
pub fn int_entry_size(v: i64) -> usize {
    let enc = match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8388608..=8388607 => 4,
        -2147483648..=2147483647 => 5,
        _ => 9,
    };
    enc + backlen_size(enc)
}

/// Bytes the listpack writer's `push_entry` appends for `item`.
pub fn entry_size(item: &[u8]) -> usize {
    if item.len() <= 20 {
        if let Some(v) = num::parse_i64(item) {
            return int_entry_size(v);
        }
    }
    let n = item.len();
    let enc = if n < 64 {
        1 + n
    } else if n < 4096 {
        2 + n
    } else {
        5 + n
    };
    enc + backlen_size(enc)
}
