//! CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0, no
//! reflection), the checksum Redis Cluster maps keys to hash slots with
//! (`crc16.c`, `keyHashSlot` in `cluster.c`).

/// The table of the checksum of every byte value, built at compile time.
const TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The CRC16 of `data`.
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ TABLE[usize::from((crc >> 8) as u8 ^ b)]
    })
}

/// Number of hash slots of a cluster.
pub const SLOTS: usize = 16384;

/// The hash slot of `key` (Redis's keyHashSlot): the CRC16 of the key, or
/// of what lies between its first `{` and the next `}` when that is not
/// empty, modulo 16384.
pub fn key_hash_slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|s| {
            let rest = &key[s + 1..];
            let e = rest.iter().position(|&b| b == b'}')?;
            (e > 0).then(|| &rest[..e])
        })
        .unwrap_or(key);
    crc16(hashed) & 0x3FFF
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_values() {
        // crc16.c's test vector.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
    }

    #[test]
    fn hash_tags_pick_the_hashed_part() {
        assert_eq!(key_hash_slot(b"foo"), 12182);
        assert_eq!(
            key_hash_slot(b"{user1000}.following"),
            key_hash_slot(b"user1000")
        );
        assert_eq!(key_hash_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") & 0x3FFF);
        assert_eq!(key_hash_slot(b"foo{{bar}}zap"), key_hash_slot(b"{bar"));
        assert_eq!(key_hash_slot(b"foo{bar}{zap}"), key_hash_slot(b"bar"));
        assert_eq!(key_hash_slot(b"{"), crc16(b"{") & 0x3FFF);
    }
}
