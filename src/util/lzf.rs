//! LZF compression as liblzf (which Redis embeds) writes and reads it:
//! literal runs of up to 32 bytes, back references of 3 to 264 bytes within
//! 8 KiB. Redis compresses RDB strings longer than 20 bytes with it.

const HLOG: u32 = 16;
const HSIZE: usize = 1 << HLOG;
const MAX_LIT: usize = 1 << 5;
const MAX_OFF: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);

#[inline]
fn idx(h: u32) -> usize {
    // liblzf's VERY_FAST hash, as Redis builds it.
    ((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1)
}

thread_local! {
    /// The hash table, reused across calls: a slot holds `base + pos + 1`,
    /// and only values of the current call (at least its `base`) count, so
    /// the table never needs clearing (zeroing 512 KiB per short string
    /// would dominate the cost of a save).
    static TABLE: std::cell::RefCell<(Vec<u64>, u64)> =
        std::cell::RefCell::new((vec![0u64; HSIZE], 1));
}

/// Compresses `input` into at most `max_out` bytes; None when the result
/// would not fit (the caller then stores the data uncompressed).
pub fn compress(input: &[u8], max_out: usize) -> Option<Vec<u8>> {
    if input.len() < 3 || max_out == 0 {
        return None;
    }
    TABLE.with(|t| {
        let mut t = t.borrow_mut();
        let (table, next_base) = &mut *t;
        let base = *next_base;
        *next_base = base + input.len() as u64 + 1;
        compress_with(input, max_out, table, base)
    })
}

fn compress_with(input: &[u8], max_out: usize, htab: &mut [u64], base: u64) -> Option<Vec<u8>> {
    let in_len = input.len();
    let mut out: Vec<u8> = Vec::with_capacity(max_out + 3);
    let mut lit: usize = 0;
    out.push(0); // literal run header placeholder
    let mut ip = 0usize;
    let mut hval: u32 = (u32::from(input[0]) << 8) | u32::from(input[1]);
    while ip + 2 < in_len {
        hval = (hval << 8) | u32::from(input[ip + 2]);
        let slot = idx(hval);
        let r = htab[slot].checked_sub(base).map_or(0, |v| v as usize);
        htab[slot] = base + ip as u64 + 1;
        // liblzf never refers back to offset 0 (`ref > in_data`).
        let matched = r > 1 && r <= ip && {
            let rf = r - 1;
            let off = ip - rf - 1;
            off < MAX_OFF
                && input[rf] == input[ip]
                && input[rf + 1] == input[ip + 1]
                && input[rf + 2] == input[ip + 2]
        };
        if matched {
            let rf = r - 1;
            let off = ip - rf - 1;
            let mut len = 2usize;
            let maxlen = (in_len - ip - len).min(MAX_REF);
            if out.len() + 3 + 1 >= max_out && out.len() - usize::from(lit == 0) + 3 + 1 >= max_out
            {
                return None;
            }
            let run_start = out.len() - lit - 1;
            out[run_start] = (lit as u8).wrapping_sub(1);
            if lit == 0 {
                out.pop();
            }
            // liblzf first compares up to 16 bytes without looking at
            // maxlen when more than 16 remain, so a match may reach two
            // bytes further than maxlen; Redis's output depends on it.
            'extend: {
                if maxlen > 16 {
                    for _ in 0..16 {
                        len += 1;
                        if input[rf + len] != input[ip + len] {
                            break 'extend;
                        }
                    }
                }
                loop {
                    len += 1;
                    if len >= maxlen || input[rf + len] != input[ip + len] {
                        break;
                    }
                }
            }
            len -= 2;
            ip += 1;
            if len < 7 {
                out.push(((off >> 8) + (len << 5)) as u8);
            } else {
                out.push(((off >> 8) + (7 << 5)) as u8);
                out.push((len - 7) as u8);
            }
            out.push(off as u8);
            lit = 0;
            out.push(0);
            ip += len + 1;
            if ip + 2 >= in_len {
                break;
            }
            // Hash the two positions before the new one, as VERY_FAST does.
            ip -= 2;
            hval = (u32::from(input[ip]) << 8) | u32::from(input[ip + 1]);
            for _ in 0..2 {
                hval = (hval << 8) | u32::from(input[ip + 2]);
                htab[idx(hval)] = base + ip as u64 + 1;
                ip += 1;
            }
        } else {
            if out.len() >= max_out {
                return None;
            }
            lit += 1;
            out.push(input[ip]);
            ip += 1;
            if lit == MAX_LIT {
                let run_start = out.len() - lit - 1;
                out[run_start] = (lit - 1) as u8;
                lit = 0;
                out.push(0);
            }
        }
    }
    if out.len() + 3 > max_out {
        return None;
    }
    while ip < in_len {
        lit += 1;
        out.push(input[ip]);
        ip += 1;
        if lit == MAX_LIT {
            let run_start = out.len() - lit - 1;
            out[run_start] = (lit - 1) as u8;
            lit = 0;
            out.push(0);
        }
    }
    let run_start = out.len() - lit - 1;
    out[run_start] = (lit as u8).wrapping_sub(1);
    if lit == 0 {
        out.pop();
    }
    if out.len() > max_out {
        return None;
    }
    Some(out)
}

/// Decompresses `input` into exactly `out_len` bytes; None when the data is
/// malformed or does not produce that length.
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut ip = 0usize;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            let lit = input.get(ip..ip + n)?;
            if out.len() + n > out_len {
                return None;
            }
            out.extend_from_slice(lit);
            ip += n;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(ip)?);
                ip += 1;
            }
            len += 2;
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(ip)?) + 1;
            ip += 1;
            if back > out.len() || out.len() + len > out_len {
                return None;
            }
            let start = out.len() - back;
            // Overlapping copies repeat the pattern, byte by byte.
            for i in 0..len {
                let b = out[start + i];
                out.push(b);
            }
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let samples: Vec<Vec<u8>> = vec![
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".to_vec(),
            b"hello world hello world hello world, hello there world".to_vec(),
            (0..5000u32).map(|i| (i % 251) as u8).collect(),
            (0..5000u32).map(|i| (i * 7 % 13) as u8).collect(),
            (0..300u32)
                .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
                .collect(),
        ];
        for s in samples {
            if let Some(c) = compress(&s, s.len() - 4) {
                assert!(c.len() <= s.len() - 4);
                assert_eq!(decompress(&c, s.len()).as_deref(), Some(&s[..]));
            }
        }
        let c = compress(&[b'x'; 50], 46).unwrap_or_default();
        assert_eq!(decompress(&c, 50), Some(vec![b'x'; 50]));
    }

    #[test]
    fn decodes_redis_output() {
        // What redis-server 7.0 stores for 50 'x' bytes.
        let c = [0x01, 0x78, 0x78, 0xe0, 0x25, 0x00, 0x01, 0x78, 0x78];
        assert_eq!(decompress(&c, 50), Some(vec![b'x'; 50]));
        assert_eq!(decompress(&c, 49), None);
        assert_eq!(decompress(&[0xe0], 10), None);
    }

    #[test]
    fn compresses_as_redis_does() {
        // redis-server 7.0's DUMP of 20 zero bytes and 0x7f: the unrolled
        // comparison carries the match past liblzf's maxlen.
        let mut input = vec![0u8; 20];
        input.push(0x7f);
        let c = [0x01, 0x00, 0x00, 0xe0, 0x09, 0x00, 0x00, 0x7f];
        assert_eq!(compress(&input, 20).as_deref(), Some(&c[..]));
        let x = [0x01, 0x78, 0x78, 0xe0, 0x25, 0x00, 0x01, 0x78, 0x78];
        assert_eq!(compress(&[b'x'; 50], 49).as_deref(), Some(&x[..]));
    }
}
