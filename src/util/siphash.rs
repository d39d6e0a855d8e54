//! Keyed SipHash-1-2 over a byte string in one pass, the hash Redis's
//! keyspace uses (`siphash.c`, `dictGenHashFunction`): one compression
//! round per 8-byte word and two to finish, which keeps hash flooding out
//! at a fraction of SipHash-2-4's cost.

/// A 128-bit SipHash key.
#[derive(Clone, Copy, Debug)]
pub struct SipKey(u64, u64);

impl SipKey {
    /// A key drawn from the operating system's random source.
    pub fn random() -> SipKey {
        SipKey(rand::random(), rand::random())
    }

    /// SipHash-1-2 of `data` under this key.
    #[inline]
    pub fn hash(&self, data: &[u8]) -> u64 {
        sip::<1, 2>(*self, data)
    }
}

/// One SipRound.
#[inline(always)]
fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

/// Up to 7 bytes as a little-endian word, read without a variable-length
/// copy: two overlapping loads (overlapping bytes are the same bytes).
#[inline(always)]
fn tail_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    let u32_at = |i: usize| {
        let mut b = [0u8; 4];
        b.copy_from_slice(&rest[i..i + 4]);
        u64::from(u32::from_le_bytes(b))
    };
    match n {
        0 => 0,
        1..=3 => {
            u64::from(rest[0])
                | u64::from(rest[n / 2]) << (8 * (n / 2))
                | u64::from(rest[n - 1]) << (8 * (n - 1))
        }
        _ => u32_at(0) | u32_at(n - 4) << (8 * (n - 4)),
    }
}

/// SipHash-C-D of `data` under `key`.
#[inline(always)]
fn sip<const C: usize, const D: usize>(key: SipKey, data: &[u8]) -> u64 {
    let SipKey(k0, k1) = key;
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let compress = |v: &mut [u64; 4], m: u64| {
        v[3] ^= m;
        for _ in 0..C {
            round(v);
        }
        v[0] ^= m;
    };
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        compress(&mut v, u64::from_le_bytes(b));
    }
    // The last word: the remaining bytes, the length's low byte on top.
    compress(
        &mut v,
        tail_word(words.remainder()) | (data.len() as u64) << 56,
    );
    v[2] ^= 0xff;
    for _ in 0..D {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference SipHash-2-4 vectors (key 00..0f, messages 00..n-1)
    /// check the construction the 1-2 variant shares.
    #[test]
    fn reference_vectors() {
        let key = SipKey(0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);
        let msg: Vec<u8> = (0..64).collect();
        let expect: [(usize, u64); 2] = [(0, 0x726f_db47_dd0e_0e31), (1, 0x74f8_39c5_93dc_67fd)];
        for (n, h) in expect {
            assert_eq!(sip::<2, 4>(key, &msg[..n]), h, "length {n}");
        }
    }

    #[test]
    fn std_sip24_agrees_at_every_length() {
        let key = SipKey(0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210);
        let msg: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(37)).collect();
        for n in 0..msg.len() {
            #[allow(deprecated)]
            let mut h = std::hash::SipHasher::new_with_keys(key.0, key.1);
            std::hash::Hasher::write(&mut h, &msg[..n]);
            assert_eq!(sip::<2, 4>(key, &msg[..n]), std::hash::Hasher::finish(&h));
        }
    }

    #[test]
    fn keys_change_the_hash() {
        let (a, b) = (SipKey(1, 2), SipKey(1, 3));
        assert_ne!(a.hash(b"key:1"), b.hash(b"key:1"));
        assert_ne!(a.hash(b"key:1"), a.hash(b"key:2"));
        assert_eq!(a.hash(b"key:1"), a.hash(b"key:1"));
    }
}
