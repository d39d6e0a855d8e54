//! Redis's `sdscatrepr`: a byte string quoted for humans, with `\\`, `"`
//! and control characters escaped and other unprintable bytes as `\xHH`
//! (MONITOR lines, `redis.conf` values, CONFIG REWRITE), and arguments cut
//! for error messages.

/// Appends `bytes` to `out`, quoted as sdscatrepr does.
pub fn repr(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[
                    b'\\',
                    b'x',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 15)],
                ]);
            }
        }
    }
    out.push(b'"');
}

/// True when `bytes` must be quoted to read back as one word (Redis's
/// `sdsneedsrepr`): a backslash, a quote, a space or an unprintable byte.
pub fn needs_repr(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .any(|&b| b == b'\\' || b == b'"' || !(0x21..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests {
    #[test]
    fn quotes_as_sdscatrepr() {
        let mut out = Vec::new();
        super::repr(b"a b\"c\n\x01\\\x7f\xff", &mut out);
        assert_eq!(out, b"\"a b\\\"c\\n\\x01\\\\\\x7f\\xff\"");
    }
}

/// The first `max` bytes of `bytes` as text (Redis's `%.128s` of an
/// argument in an error): the bytes are cut, not the text, so a cut inside
/// a UTF-8 sequence is fine.
pub fn lossy_cut(bytes: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned()
}
