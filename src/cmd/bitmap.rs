//! Bitmap commands (Redis's `bitops.c`): SETBIT, GETBIT, BITCOUNT, BITPOS,
//! BITOP, BITFIELD and BITFIELD_RO. A bitmap is a plain string value; bit 0
//! is the most significant bit of the first byte. Writers grow the string
//! with zero bytes and leave it "raw", as Redis's
//! lookupStringForBitCommand does; readers see an int-encoded string as its
//! decimal digits.

mod field;

use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::store::value::Value;
use crate::store::{Store, Ttl};
use crate::util::num;
use std::borrow::Cow;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("setbit", setbit),
    ("getbit", getbit),
    ("bitcount", bitcount),
    ("bitpos", bitpos),
    ("bitop", bitop),
    ("bitfield", field::bitfield),
    ("bitfield_ro", field::bitfield_ro),
];

/// Redis's getBitOffsetFromArgument: a bit offset, or with `bits` > 0 a
/// `#n` offset counted in fields of that width. Negative offsets and
/// offsets whose byte is at or past `proto-max-bulk-len` are refused.
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8], bits: u32) -> Result<u64, Error> {
    let invalid = || Error::err("bit offset is not an integer or out of range");
    let hash = bits > 0 && arg.first() == Some(&b'#');
    let digits = if hash { &arg[1..] } else { arg };
    let mut offset = num::parse_i64(digits).ok_or_else(invalid)?;
    if hash {
        // C multiplies without an overflow check; wrapping keeps its result.
        offset = offset.wrapping_mul(i64::from(bits));
    }
    let max = ctx.server.config.proto_max_bulk_len as u64;
    if offset < 0 || (offset as u64 >> 3) >= max {
        return Err(invalid());
    }
    Ok(offset as u64)
}

/// What [`string_for_bits`] did to the key before the bits are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Grown {
    /// The key did not exist and was created (already signalled).
    Created,
    /// The string was padded with zero bytes.
    Padded,
    /// The string was long enough.
    Same,
}

/// Redis's lookupStringForBitCommand: the string at `key` made raw and at
/// least long enough to address bit `maxbit`, created zero-filled when
/// missing; WRONGTYPE for other types.
fn string_for_bits<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
    maxbit: u64,
) -> Result<(&'a mut Vec<u8>, Grown), Error> {
    let need = (maxbit >> 3) as usize + 1;
    let grown = match store.get(db, key) {
        None => {
            store.insert_new(db, key, Value::Raw(Box::new(vec![0; need])));
            Grown::Created
        }
        Some(e) => {
            let bytes = super::string::make_raw(e.into_value_mut())?;
            if bytes.len() < need {
                bytes.resize(need, 0);
                Grown::Padded
            } else {
                Grown::Same
            }
        }
    };
    match store.get(db, key).map(|e| e.into_value_mut()) {
        Some(Value::Raw(v)) => Ok((v, grown)),
        _ => Err(Error::WrongType),
    }
}

/// The bit at `offset` of `bytes`; bits past the end read as 0.
fn bit_at(bytes: &[u8], offset: u64) -> u8 {
    let byte = (offset >> 3) as usize;
    bytes.get(byte).map_or(0, |b| (b >> (7 - (offset & 7))) & 1)
}

fn setbit(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let offset = bit_offset(ctx, argv.get(2), 0)?;
    let on = num::parse_i64(argv.get(3))
        .filter(|v| v & !1 == 0)
        .ok_or_else(|| Error::err("bit is not an integer or out of range"))? as u8;
    let (db, key) = (ctx.db(), argv.get(1));
    let (bytes, grown) = string_for_bits(ctx.store, db, key, offset)?;
    let old = bit_at(bytes, offset);
    if grown != Grown::Same || old != on {
        let byte = &mut bytes[(offset >> 3) as usize];
        let shift = 7 - (offset & 7);
        *byte = (*byte & !(1 << shift)) | (on << shift);
        if grown != Grown::Created {
            ctx.store.signal_modified(db, key);
        }
        super::pubsub::notify(ctx, b'$', "setbit", key);
    }
    ctx.reply.int(i64::from(old));
    Ok(())
}

fn getbit(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let offset = bit_offset(ctx, argv.get(2), 0)?;
    let db = ctx.db();
    let bit = match ctx.store.get_read(db, argv.get(1)) {
        None => 0,
        Some(e) => e
            .as_str()
            .ok_or(Error::WrongType)?
            .with(|s| bit_at(s, offset)),
    };
    ctx.reply.int(i64::from(bit));
    Ok(())
}

/// Parses the BIT|BYTE unit of BITCOUNT and BITPOS: true for BIT.
fn unit_is_bit(arg: &[u8]) -> Result<bool, Error> {
    if super::args::is(arg, "bit") {
        Ok(true)
    } else if super::args::is(arg, "byte") {
        Ok(false)
    } else {
        Err(Error::Syntax)
    }
}

/// A BITCOUNT/BITPOS range resolved to whole bytes, with the bits of the
/// first and last byte that fall outside a BIT range masked off.
struct ByteRange {
    start: i64,
    end: i64,
    /// Bits of the first byte before the range (BIT unit only).
    first_mask: u8,
    /// Bits of the last byte after the range (BIT unit only).
    last_mask: u8,
}

/// Clamps `start..=end` (negative from the end) to a string of `len` bytes
/// as Redis's bitcountCommand and bitposCommand do.
fn resolve_range(len: i64, mut start: i64, mut end: i64, bit: bool) -> ByteRange {
    let total = if bit { len << 3 } else { len };
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0).min(total - 1);
    let (mut first_mask, mut last_mask) = (0, 0);
    if bit && start <= end {
        first_mask = !((1u16 << (8 - (start & 7))) - 1) as u8;
        last_mask = ((1u16 << (7 - (end & 7))) - 1) as u8;
        start >>= 3;
        end >>= 3;
    }
    ByteRange {
        start,
        end,
        first_mask,
        last_mask,
    }
}

/// The number of set bits in `bytes`.
fn popcount(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut n: u64 = 0;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        n += u64::from(u64::from_ne_bytes(w).count_ones());
    }
    n + chunks
        .remainder()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum::<u64>()
}

fn bitcount(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let Some(e) = ctx.store.get_read(db, argv.get(1)) else {
        ctx.reply.int(0);
        return Ok(());
    };
    let s = e.as_str().ok_or(Error::WrongType)?;
    let count = s.with(|p| -> Result<u64, Error> {
        let r = match argv.len() {
            2 => ByteRange {
                start: 0,
                end: p.len() as i64 - 1,
                first_mask: 0,
                last_mask: 0,
            },
            4 | 5 => {
                let start = super::args::int(argv.get(2))?;
                let end = super::args::int(argv.get(3))?;
                if start < 0 && end < 0 && start > end {
                    return Ok(0);
                }
                let bit = argv.len() == 5 && unit_is_bit(argv.get(4))?;
                resolve_range(p.len() as i64, start, end, bit)
            }
            _ => return Err(Error::Syntax),
        };
        if r.start > r.end {
            return Ok(0);
        }
        let (start, end) = (r.start as usize, r.end as usize);
        let mut n = popcount(&p[start..=end]);
        n -= u64::from((p[start] & r.first_mask).count_ones());
        n -= u64::from((p[end] & r.last_mask).count_ones());
        Ok(n)
    })?;
    ctx.reply.int(count as i64);
    Ok(())
}

/// Redis's redisBitpos: the position of the first `bit` in `bytes`; for a
/// 0 not found, the first position past the end (the string counts as
/// padded with zeros), for a 1 not found, -1.
fn first_bit(bytes: &[u8], bit: u8) -> i64 {
    let skip = if bit == 1 { 0 } else { 0xff };
    match bytes.iter().position(|&b| b != skip) {
        None if bit == 1 => -1,
        None => bytes.len() as i64 * 8,
        Some(i) => {
            let b = if bit == 1 { bytes[i] } else { !bytes[i] };
            i as i64 * 8 + i64::from(b.leading_zeros())
        }
    }
}

fn bitpos(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let bit = super::args::int(argv.get(2))?;
    if bit != 0 && bit != 1 {
        return Err(Error::err("The bit argument must be 1 or 0."));
    }
    let bit = bit as u8;
    let db = ctx.db();
    let Some(e) = ctx.store.get_read(db, argv.get(1)) else {
        ctx.reply.int(if bit == 1 { -1 } else { 0 });
        return Ok(());
    };
    let s = e.as_str().ok_or(Error::WrongType)?;
    let pos = s.with(|p| bitpos_in(p, &argv, bit))?;
    ctx.reply.int(pos);
    Ok(())
}

/// BITPOS over the string `p` with the range arguments of `argv`.
fn bitpos_in(p: &[u8], argv: &Argv<'_>, bit: u8) -> Result<i64, Error> {
    let len = p.len() as i64;
    let mut end_given = false;
    let r = match argv.len() {
        3 => ByteRange {
            start: 0,
            end: len - 1,
            first_mask: 0,
            last_mask: 0,
        },
        4..=6 => {
            let start = super::args::int(argv.get(3))?;
            let is_bit = argv.len() == 6 && unit_is_bit(argv.get(5))?;
            let end = if argv.len() >= 5 {
                end_given = true;
                super::args::int(argv.get(4))?
            } else if is_bit {
                (len << 3) + 7
            } else {
                len - 1
            };
            resolve_range(len, start, end, is_bit)
        }
        _ => return Err(Error::Syntax),
    };
    if r.start > r.end {
        return Ok(-1);
    }
    let (mut start, end) = (r.start as usize, r.end as usize);
    let mut bytes = (end - start + 1) as i64;
    // The first and last bytes of a BIT range have their outside bits
    // forced to the value not searched for, as Redis does.
    let masked = |b: u8, mask: u8| if bit == 1 { b & !mask } else { b | mask };
    let pos = 'found: {
        if r.first_mask != 0 {
            let mut b = masked(p[start], r.first_mask);
            if r.last_mask != 0 && bytes == 1 {
                b = masked(b, r.last_mask);
            }
            let pos = first_bit(&[b], bit);
            if bytes == 1 || (pos != -1 && pos != 8) {
                break 'found pos;
            }
            start += 1;
            bytes -= 1;
        }
        let cur = bytes - i64::from(r.last_mask != 0);
        if cur > 0 {
            let pos = first_bit(&p[start..start + cur as usize], bit);
            if bytes == cur || (pos != -1 && pos != cur << 3) {
                break 'found pos;
            }
            start += cur as usize;
            bytes -= cur;
        }
        first_bit(&[masked(p[end], r.last_mask)], bit)
    };
    // With an explicit end, a clear bit is not looked for past the range.
    if end_given && bit == 0 && pos == bytes << 3 {
        return Ok(-1);
    }
    Ok(if pos == -1 {
        -1
    } else {
        pos + ((start as i64) << 3)
    })
}

/// The BITOP operations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Xor,
    Not,
}

fn bitop(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let name = argv.get(1);
    let op = [
        ("and", Op::And),
        ("or", Op::Or),
        ("xor", Op::Xor),
        ("not", Op::Not),
    ]
    .into_iter()
    .find(|(n, _)| super::args::is(name, n))
    .map(|(_, op)| op)
    .ok_or(Error::Syntax)?;
    if op == Op::Not && argv.len() != 4 {
        return Err(Error::err(
            "BITOP NOT must be called with a single source key.",
        ));
    }
    let db = ctx.db();
    // A first pass looks each source up as a read (expiring it, counting
    // hits) and checks its type; the second borrows the bytes.
    for key in argv.iter_from(3) {
        if let Some(e) = ctx.store.get_read(db, key) {
            if !e.is_string() {
                return Err(Error::WrongType);
            }
        }
    }
    let res = {
        let store: &Store = ctx.store;
        let srcs: Vec<Cow<'_, [u8]>> = argv
            .iter_from(3)
            .map(|key| match store.peek(db, key).and_then(|e| e.as_str()) {
                None => Cow::Borrowed(&[][..]),
                Some(crate::store::value::StrRef::Bytes(b)) => Cow::Borrowed(b),
                Some(s) => Cow::Owned(s.to_vec()),
            })
            .collect();
        combine(op, &srcs)
    };
    let target = argv.get(2);
    let len = res.len();
    if len > 0 {
        ctx.store
            .set(db, target, Value::Raw(Box::new(res)), Ttl::None);
        super::pubsub::notify(ctx, b'$', "set", target);
    } else if ctx.store.delete_destination(db, target) {
        super::pubsub::notify(ctx, b'g', "del", target);
    }
    ctx.reply.int(len as i64);
    Ok(())
}

/// BITOP's result: as long as the longest source, shorter sources read as
/// zero bytes.
fn combine(op: Op, srcs: &[Cow<'_, [u8]>]) -> Vec<u8> {
    let maxlen = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut res = vec![0u8; maxlen];
    let Some((first, rest)) = srcs.split_first() else {
        return res;
    };
    res[..first.len()].copy_from_slice(first);
    match op {
        Op::Not => res.iter_mut().for_each(|b| *b = !*b),
        Op::And => {
            for s in rest {
                res.iter_mut()
                    .enumerate()
                    .for_each(|(i, b)| *b &= s.get(i).copied().unwrap_or(0));
            }
        }
        Op::Or | Op::Xor => {
            for s in rest {
                for (b, x) in res.iter_mut().zip(s.iter()) {
                    if op == Op::Or {
                        *b |= x;
                    } else {
                        *b ^= x;
                    }
                }
            }
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bit_follows_redis() {
        assert_eq!(first_bit(&[0xff, 0xf0], 0), 12);
        assert_eq!(first_bit(&[0xff, 0xff], 0), 16);
        assert_eq!(first_bit(&[0, 0], 1), -1);
        assert_eq!(first_bit(&[0, 0x01], 1), 15);
        assert_eq!(first_bit(&[], 0), 0);
    }

    #[test]
    fn popcount_counts_every_byte() {
        let v: Vec<u8> = (0..=255u8).collect();
        assert_eq!(popcount(&v), 1024);
        assert_eq!(
            popcount(&v[..11]),
            (0..11u8).map(|b| b.count_ones() as u64).sum()
        );
    }

    #[test]
    fn combine_pads_short_sources() {
        let a = Cow::Borrowed(&[0xff, 0x0f][..]);
        let b = Cow::Borrowed(&[0xf0][..]);
        assert_eq!(combine(Op::And, &[a.clone(), b.clone()]), vec![0xf0, 0]);
        assert_eq!(combine(Op::Or, &[a.clone(), b.clone()]), vec![0xff, 0x0f]);
        assert_eq!(combine(Op::Xor, &[a.clone(), b]), vec![0x0f, 0x0f]);
        assert_eq!(combine(Op::Not, &[a]), vec![0x00, 0xf0]);
    }
}
