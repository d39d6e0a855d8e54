//! The listpack (Redis 7.0 `listpack.c`) and ziplist (`ziplist.c`, read
//! only) blobs that RDB stores list nodes in. Decoding never trusts the
//! blob: every length is checked against what is left.

use crate::store::listpack::backlen_size;
use crate::util::num;

/// Largest listpack node Redis 7.0 builds with `list-max-listpack-size -2`,
/// and with a count for a fill (its SIZE_SAFETY_LIMIT).
pub const NODE_MAX_BYTES: usize = 8192;

/// Elements from this size on go into a PLAIN node of their own (Redis's
/// default `packed_threshold`, 1 GiB).
pub const PLAIN_THRESHOLD: usize = 1 << 30;

const HEADER: usize = 6;
const EOF: u8 = 0xFF;

fn push_backlen(out: &mut Vec<u8>, l: usize) {
    match backlen_size(l) {
        1 => out.push(l as u8),
        2 => out.extend_from_slice(&[(l >> 7) as u8, (l & 127) as u8 | 128]),
        3 => out.extend_from_slice(&[
            (l >> 14) as u8,
            ((l >> 7) & 127) as u8 | 128,
            (l & 127) as u8 | 128,
        ]),
        4 => out.extend_from_slice(&[
            (l >> 21) as u8,
            ((l >> 14) & 127) as u8 | 128,
            ((l >> 7) & 127) as u8 | 128,
            (l & 127) as u8 | 128,
        ]),
        _ => out.extend_from_slice(&[
            (l >> 28) as u8,
            ((l >> 21) & 127) as u8 | 128,
            ((l >> 14) & 127) as u8 | 128,
            ((l >> 7) & 127) as u8 | 128,
            (l & 127) as u8 | 128,
        ]),
    }
}

/// Appends one element's entry (encoding, data, back-length), choosing the
/// encoding as `lpEncodeGetType` does: canonical integers of up to 20
/// characters are stored as integers.
pub fn push_entry(out: &mut Vec<u8>, item: &[u8]) {
    let start = out.len();
    let int = if item.len() <= 20 {
        num::parse_i64(item)
    } else {
        None
    };
    match int {
        Some(v) if (0..=127).contains(&v) => out.push(v as u8),
        Some(v) if (-4096..=4095).contains(&v) => {
            let u = if v < 0 { (1 << 13) + v } else { v } as u16;
            out.extend_from_slice(&[(u >> 8) as u8 | 0xC0, u as u8]);
        }
        Some(v) if i16::try_from(v).is_ok() => {
            out.push(0xF1);
            out.extend_from_slice(&(v as i16).to_le_bytes());
        }
        Some(v) if (-(1 << 23)..(1 << 23)).contains(&v) => {
            out.push(0xF2);
            out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
        }
        Some(v) if i32::try_from(v).is_ok() => {
            out.push(0xF3);
            out.extend_from_slice(&(v as i32).to_le_bytes());
        }
        Some(v) => {
            out.push(0xF4);
            out.extend_from_slice(&v.to_le_bytes());
        }
        None => {
            let n = item.len();
            if n < 64 {
                out.push(n as u8 | 0x80);
            } else if n < 4096 {
                out.extend_from_slice(&[(n >> 8) as u8 | 0xE0, n as u8]);
            } else {
                out.push(0xF0);
                out.extend_from_slice(&(n as u32).to_le_bytes());
            }
            out.extend_from_slice(item);
        }
    }
    let l = out.len() - start;
    push_backlen(out, l);
}

/// How a list's elements are grouped into quicklist nodes: its
/// `list-max-listpack-size` and the size from which an element gets a
/// PLAIN node of its own.
#[derive(Clone, Copy, Debug)]
pub struct NodeRule {
    /// `list-max-listpack-size`: a size class when negative, else a count.
    pub fill: i32,
    /// Elements this large or larger stand alone.
    pub plain_threshold: usize,
}

impl NodeRule {
    /// Redis's defaults: 8 KB nodes, PLAIN from 1 GiB.
    pub const DEFAULT: NodeRule = NodeRule {
        fill: -2,
        plain_threshold: PLAIN_THRESHOLD,
    };

    /// Redis's `_quicklistNodeAllowInsert`: whether an element of `sz`
    /// bytes joins a node of `node_sz` listpack bytes holding `count`
    /// elements. Redis estimates the new size as the element's text length
    /// plus 8 bytes (SIZE_ESTIMATE_OVERHEAD), whatever its encoding; the
    /// nodes only match Redis's with the same estimate.
    fn admits(&self, node_sz: usize, count: usize, sz: usize) -> bool {
        let new_sz = node_sz + sz + 8;
        // optimization_level: 4 KB for -1 up to 64 KB for -5.
        let level = (-i64::from(self.fill) - 1) as u64;
        if self.fill < 0 && level < 5 && new_sz <= 4096 << level {
            return true;
        }
        new_sz <= NODE_MAX_BYTES && self.fill > 0 && count < self.fill as usize
    }
}

/// Builds listpacks from a list's elements as Redis's quicklistPushTail
/// groups them under `rule`, so a list made by RPUSH is saved in Redis's
/// nodes. Large elements become PLAIN nodes. Calls `node(container,
/// bytes)` for each node in order.
pub fn build_nodes<'a, E>(
    items: impl Iterator<Item = &'a [u8]>,
    rule: NodeRule,
    mut node: impl FnMut(u64, &[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let mut lp: Vec<u8> = Vec::new();
    let mut count = 0usize;
    let mut entry: Vec<u8> = Vec::new();
    for item in items {
        if item.len() >= rule.plain_threshold {
            if count > 0 {
                node(super::container::PACKED, &finish(&mut lp, count))?;
                count = 0;
            }
            node(super::container::PLAIN, item)?;
            continue;
        }
        entry.clear();
        push_entry(&mut entry, item);
        let node_sz = HEADER + lp.len() + 1;
        if count > 0 && (!rule.admits(node_sz, count, item.len()) || count >= 65535) {
            node(super::container::PACKED, &finish(&mut lp, count))?;
            count = 0;
        }
        lp.extend_from_slice(&entry);
        count += 1;
    }
    if count > 0 {
        node(super::container::PACKED, &finish(&mut lp, count))?;
    }
    Ok(())
}

/// One listpack holding `items` (a small hash's or sorted set's blob).
pub fn build<'a>(items: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut entries = Vec::new();
    let mut count = 0;
    for item in items {
        push_entry(&mut entries, item);
        count += 1;
    }
    finish(&mut entries, count)
}

/// Wraps entries into a listpack (header, entries, terminator) and empties
/// `entries`.
pub fn finish(entries: &mut Vec<u8>, count: usize) -> Vec<u8> {
    let total = HEADER + entries.len() + 1;
    let mut lp = Vec::with_capacity(total);
    lp.extend_from_slice(&(total as u32).to_le_bytes());
    lp.extend_from_slice(&(count.min(65535) as u16).to_le_bytes());
    lp.append(entries);
    lp.push(EOF);
    lp
}

fn take<'a>(b: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], &'static str> {
    let s = b
        .get(*pos..pos.saturating_add(n))
        .ok_or("entry runs past the end of the blob")?;
    *pos += n;
    Ok(s)
}

fn le_int(bytes: &[u8]) -> i64 {
    // Sign-extends a little-endian integer of 1 to 8 bytes.
    let mut v: u64 = 0;
    for (i, b) in bytes.iter().enumerate() {
        v |= u64::from(*b) << (8 * i);
    }
    let shift = 64 - 8 * bytes.len() as u32;
    ((v << shift) as i64) >> shift
}

/// Calls `f` with each element of a listpack; fails on any inconsistency
/// (Redis's `lpValidateIntegrity` with deep checks).
pub fn decode(lp: &[u8], f: impl FnMut(&[u8])) -> Result<(), &'static str> {
    decode_with(lp, true, f)
}

/// [`decode`], or with `deep` false the shallow check of
/// `sanitize-dump-payload no`: only the header's size and the terminator
/// at the end are required; back-lengths and the header's count are not
/// checked, and the elements before an early terminator or an entry that
/// cannot be read are all there is (the rest is let go).
pub fn decode_with(lp: &[u8], deep: bool, mut f: impl FnMut(&[u8])) -> Result<(), &'static str> {
    if lp.len() < HEADER + 1 {
        return Err("listpack too short");
    }
    let total = u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]) as usize;
    if total != lp.len() {
        return Err("listpack header size does not match its length");
    }
    if !deep && lp[lp.len() - 1] != EOF {
        return Err("listpack has no terminator");
    }
    let declared = u16::from_le_bytes([lp[4], lp[5]]);
    let mut pos = HEADER;
    let mut count = 0usize;
    let mut buf = num::itoa_buf();
    loop {
        let b = *lp.get(pos).ok_or("listpack has no terminator")?;
        if b == EOF {
            if deep && pos + 1 != lp.len() {
                return Err("listpack terminator before its end");
            }
            break;
        }
        match entry(lp, &mut pos, deep, &mut f, &mut buf) {
            Ok(()) => count += 1,
            Err(e) if deep => return Err(e),
            Err(_) => return Ok(()),
        }
    }
    if deep && declared != 65535 && usize::from(declared) != count {
        return Err("listpack element count does not match its header");
    }
    Ok(())
}

/// Reads the listpack entry at `pos` (its back-length checked when
/// `deep`), calls `f` with its element and moves `pos` past it.
fn entry(
    lp: &[u8],
    pos: &mut usize,
    deep: bool,
    f: &mut impl FnMut(&[u8]),
    buf: &mut [u8; 20],
) -> Result<(), &'static str> {
    let start = *pos;
    let b = lp[start];
    *pos += 1;
    let int: Option<i64> = if b & 0x80 == 0 {
        Some(i64::from(b & 0x7f))
    } else if b & 0xC0 == 0x80 {
        let n = usize::from(b & 0x3f);
        f(take(lp, pos, n)?);
        None
    } else if b & 0xE0 == 0xC0 {
        let lo = take(lp, pos, 1)?[0];
        let u = (i64::from(b & 0x1f) << 8) | i64::from(lo);
        Some(if u >= 1 << 12 { u - (1 << 13) } else { u })
    } else if b & 0xF0 == 0xE0 {
        let lo = take(lp, pos, 1)?[0];
        let n = (usize::from(b & 0x0f) << 8) | usize::from(lo);
        f(take(lp, pos, n)?);
        None
    } else {
        match b {
            0xF0 => {
                let l = take(lp, pos, 4)?;
                let n = u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize;
                f(take(lp, pos, n)?);
                None
            }
            0xF1 => Some(le_int(take(lp, pos, 2)?)),
            0xF2 => Some(le_int(take(lp, pos, 3)?)),
            0xF3 => Some(le_int(take(lp, pos, 4)?)),
            0xF4 => Some(le_int(take(lp, pos, 8)?)),
            _ => return Err("bad listpack entry encoding"),
        }
    };
    if let Some(v) = int {
        f(num::fmt_i64(v, buf));
    }
    let l = *pos - start;
    let bl = take(lp, pos, backlen_size(l))?;
    if deep {
        let mut check = Vec::with_capacity(5);
        push_backlen(&mut check, l);
        if bl != check.as_slice() {
            return Err("bad listpack entry back-length");
        }
    }
    Ok(())
}

/// Calls `f` with each element of a ziplist (lists before Redis 7.0).
pub fn decode_ziplist(zl: &[u8], mut f: impl FnMut(&[u8])) -> Result<(), &'static str> {
    if zl.len() < 11 {
        return Err("ziplist too short");
    }
    let total = u32::from_le_bytes([zl[0], zl[1], zl[2], zl[3]]) as usize;
    if total != zl.len() {
        return Err("ziplist header size does not match its length");
    }
    let declared = u16::from_le_bytes([zl[8], zl[9]]);
    let mut pos = 10;
    let mut prev_size = 0usize;
    let tail = u32::from_le_bytes([zl[4], zl[5], zl[6], zl[7]]) as usize;
    let mut last = 10;
    let mut count = 0usize;
    let mut buf = num::itoa_buf();
    loop {
        let b = *zl.get(pos).ok_or("ziplist has no terminator")?;
        if b == EOF {
            if pos + 1 != zl.len() {
                return Err("ziplist terminator before its end");
            }
            break;
        }
        // Previous entry length: 1 byte, or 0xFE and 4 more; it must be
        // the size of the entry before (0 for the first).
        let start = pos;
        last = start;
        let prevlen = if b == 0xFE {
            let l = take(zl, &mut pos, 5)?;
            u32::from_le_bytes([l[1], l[2], l[3], l[4]]) as usize
        } else {
            pos += 1;
            usize::from(b)
        };
        if prevlen != prev_size {
            return Err("ziplist entry has a wrong previous-entry length");
        }
        let e = *zl.get(pos).ok_or("ziplist entry runs past the end")?;
        pos += 1;
        let int = match e >> 6 {
            0 => {
                f(take(zl, &mut pos, usize::from(e & 0x3f))?);
                None
            }
            1 => {
                let lo = take(zl, &mut pos, 1)?[0];
                let n = (usize::from(e & 0x3f) << 8) | usize::from(lo);
                f(take(zl, &mut pos, n)?);
                None
            }
            2 => {
                let l = take(zl, &mut pos, 4)?;
                let n = u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize;
                f(take(zl, &mut pos, n)?);
                None
            }
            _ => Some(match e {
                0xC0 => le_int(take(zl, &mut pos, 2)?),
                0xD0 => le_int(take(zl, &mut pos, 4)?),
                0xE0 => le_int(take(zl, &mut pos, 8)?),
                0xF0 => le_int(take(zl, &mut pos, 3)?),
                0xFE => le_int(take(zl, &mut pos, 1)?),
                0xF1..=0xFD => i64::from(e & 0x0f) - 1,
                _ => return Err("bad ziplist entry encoding"),
            }),
        };
        if let Some(v) = int {
            f(num::fmt_i64(v, &mut buf));
        }
        prev_size = pos - start;
        count += 1;
    }
    if tail != last {
        return Err("ziplist tail offset does not point at its last entry");
    }
    if declared != 65535 && usize::from(declared) != count {
        return Err("ziplist element count does not match its header");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items_of(lp: &[u8]) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        decode(lp, |e| v.push(e.to_vec())).expect("valid listpack");
        v
    }

    #[test]
    fn matches_redis_listpack() {
        // RPUSH l a b 1 2 -5000 in redis-server 7.0, as DUMP shows it.
        let redis = [
            0x15, 0, 0, 0, 5, 0, 0x81, b'a', 2, 0x81, b'b', 2, 1, 1, 2, 1, 0xf1, 0x78, 0xec, 3,
            0xff,
        ];
        let items: [&[u8]; 5] = [b"a", b"b", b"1", b"2", b"-5000"];
        let mut nodes = Vec::new();
        build_nodes(items.iter().copied(), NodeRule::DEFAULT, |c, b| {
            nodes.push((c, b.to_vec()));
            Ok::<(), ()>(())
        })
        .unwrap_or(());
        assert_eq!(nodes, vec![(2, redis.to_vec())]);
        assert_eq!(
            items_of(&redis),
            items.iter().map(|i| i.to_vec()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn every_encoding_round_trips() {
        let mut items: Vec<Vec<u8>> = vec![];
        for v in [
            0i64,
            127,
            128,
            -1,
            -4096,
            4095,
            4096,
            -32768,
            32767,
            40000,
            -8388608,
            8388607,
            8388608,
            i32::MIN as i64,
            i32::MAX as i64,
            i64::MIN,
            i64::MAX,
        ] {
            items.push(v.to_string().into_bytes());
        }
        items.push(b"007".to_vec());
        items.push(vec![b'y'; 63]);
        items.push(vec![b'y'; 64]);
        items.push(vec![b'z'; 4095]);
        items.push(vec![b'z'; 4096]);
        items.push(vec![b'w'; 20000]);
        let mut got = Vec::new();
        let mut nodes = 0;
        build_nodes(
            items.iter().map(|i| i.as_slice()),
            NodeRule::DEFAULT,
            |c, b| {
                assert_eq!(c, 2);
                assert!(b.len() <= NODE_MAX_BYTES || decode(b, |_| ()).is_ok());
                nodes += 1;
                decode(b, |e| got.push(e.to_vec()))
            },
        )
        .expect("decodes");
        assert_eq!(got, items);
        assert!(nodes >= 3);
    }

    #[test]
    fn decodes_a_ziplist() {
        // ["a", "1", "300"] as Redis 6.2 stores them: a 1-byte string, an
        // immediate 4-bit integer and an int16.
        let zl = [
            20, 0, 0, 0, 15, 0, 0, 0, 3, 0, 0x00, 0x01, b'a', 0x03, 0xF2, 0x02, 0xC0, 0x2C, 0x01,
            0xFF,
        ];
        let mut got = Vec::new();
        decode_ziplist(&zl, |e| got.push(e.to_vec())).expect("valid ziplist");
        assert_eq!(got, vec![b"a".to_vec(), b"1".to_vec(), b"300".to_vec()]);
        assert!(decode_ziplist(&zl[..19], |_| ()).is_err());
    }

    #[test]
    fn refuses_damage() {
        let good = [0x0b, 0, 0, 0, 1, 0, 0x81, b'a', 2, 0xff];
        assert!(decode(&good, |_| ()).is_err(), "size mismatch");
        let good = [0x0a, 0, 0, 0, 1, 0, 0x81, b'a', 2, 0xff];
        assert!(decode(&good, |_| ()).is_ok());
        let mut bad = good;
        bad[8] = 3;
        assert!(decode(&bad, |_| ()).is_err());
        let mut bad = good;
        bad[6] = 0x85;
        assert!(decode(&bad, |_| ()).is_err());
    }
}
