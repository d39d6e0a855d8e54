//! BITFIELD and BITFIELD_RO (Redis's bitfieldGeneric): signed and unsigned
//! integers of 1 to 64 bits (unsigned to 63) at any bit offset, read, set
//! and incremented with WRAP, SAT or FAIL overflow, several operations in
//! one call.

use super::{bit_offset, string_for_bits, Grown};
use crate::cmd::args;
use crate::cmd::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::util::num;

/// What to do when a SET or INCRBY does not fit the field.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// The kind of one operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Get,
    Set,
    IncrBy,
}

/// One parsed operation.
#[derive(Clone, Copy, Debug)]
struct FieldOp {
    kind: Kind,
    offset: u64,
    /// The SET value or INCRBY increment.
    value: i64,
    overflow: Overflow,
    bits: u32,
    signed: bool,
}

/// Redis's getBitfieldTypeFromArgument: `i1`..`i64` or `u1`..`u63`.
fn field_type(arg: &[u8]) -> Result<(bool, u32), Error> {
    let invalid = || {
        Error::err(
            "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
        )
    };
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(invalid()),
    };
    let bits = num::parse_i64(&arg[1..]).ok_or_else(invalid)?;
    let max = if signed { 64 } else { 63 };
    if !(1..=max).contains(&bits) {
        return Err(invalid());
    }
    Ok((signed, bits as u32))
}

/// Parses the operations from `argv[2..]`; also returns the highest bit a
/// write touches (None when every operation is a GET).
fn parse_ops(ctx: &Ctx<'_>, argv: &Argv<'_>) -> Result<(Vec<FieldOp>, Option<u64>), Error> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest: Option<u64> = None;
    let mut j = 2;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let sub = argv.get(j);
        let kind = if args::is(sub, "get") && left >= 2 {
            Kind::Get
        } else if args::is(sub, "set") && left >= 3 {
            Kind::Set
        } else if args::is(sub, "incrby") && left >= 3 {
            Kind::IncrBy
        } else if args::is(sub, "overflow") && left >= 1 {
            let t = argv.get(j + 1);
            overflow = if args::is(t, "wrap") {
                Overflow::Wrap
            } else if args::is(t, "sat") {
                Overflow::Sat
            } else if args::is(t, "fail") {
                Overflow::Fail
            } else {
                return Err(Error::err("Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(Error::Syntax);
        };
        let (signed, bits) = field_type(argv.get(j + 1))?;
        let offset = bit_offset(ctx, argv.get(j + 2), bits)?;
        let mut value = 0;
        if kind != Kind::Get {
            let last = offset + u64::from(bits) - 1;
            highest = Some(highest.map_or(last, |h| h.max(last)));
            value = args::int(argv.get(j + 3))?;
        }
        ops.push(FieldOp {
            kind,
            offset,
            value,
            overflow,
            bits,
            signed,
        });
        j += if kind == Kind::Get { 3 } else { 4 };
    }
    Ok((ops, highest))
}

pub(in crate::cmd) fn bitfield(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    bitfield_generic(ctx, argv, false)
}

pub(in crate::cmd) fn bitfield_ro(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    bitfield_generic(ctx, argv, true)
}

fn bitfield_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, read_only: bool) -> CmdResult {
    let (ops, highest) = parse_ops(ctx, &argv)?;
    let (db, key) = (ctx.db(), argv.get(1));
    let Some(highest) = highest else {
        // Only GETs: a read lookup; a missing key reads as zeros.
        let replies: Vec<Option<i64>> = match ctx.store.get_read(db, key) {
            None => ops.iter().map(|op| Some(get(&[], op))).collect(),
            Some(e) => {
                let s = e.as_str().ok_or(Error::WrongType)?;
                s.with(|p| ops.iter().map(|op| Some(get(p, op))).collect())
            }
        };
        write_replies(ctx, &replies);
        return Ok(());
    };
    if read_only {
        return Err(Error::err("BITFIELD_RO only supports the GET subcommand"));
    }
    let (bytes, grown) = string_for_bits(ctx.store, db, key, highest)?;
    let mut changes = 0;
    let replies: Vec<Option<i64>> = ops
        .iter()
        .map(|op| match op.kind {
            Kind::Get => Some(get(bytes, op)),
            Kind::Set | Kind::IncrBy => {
                let (reply, changed) = write(bytes, op, grown != Grown::Same);
                changes += usize::from(changed);
                reply
            }
        })
        .collect();
    if changes > 0 {
        // Redis counts one change per field written; creating the key
        // counted one already.
        if grown != Grown::Created {
            ctx.store.signal_modified(db, key);
        }
        ctx.store.stats.dirty += changes as u64 - 1;
        crate::cmd::pubsub::notify(ctx, b'$', "setbit", key);
    }
    write_replies(ctx, &replies);
    Ok(())
}

/// Writes one integer per operation, null for a FAIL overflow.
fn write_replies(ctx: &mut Ctx<'_>, replies: &[Option<i64>]) {
    ctx.reply.array(replies.len());
    for r in replies {
        match r {
            Some(n) => ctx.reply.int(*n),
            None => ctx.reply.null(),
        }
    }
}

/// A GET: the field's value (bytes past the end read as zero).
fn get(bytes: &[u8], op: &FieldOp) -> i64 {
    if op.signed {
        get_signed(bytes, op.offset, op.bits)
    } else {
        get_unsigned(bytes, op.offset, op.bits) as i64
    }
}

/// A SET or INCRBY: the reply (None when FAIL refused it) and whether the
/// string changed (`grown` counts as a change, as in Redis).
fn write(bytes: &mut [u8], op: &FieldOp, grown: bool) -> (Option<i64>, bool) {
    let incr = op.kind == Kind::IncrBy;
    if op.signed {
        let old = get_signed(bytes, op.offset, op.bits);
        let (new, overflowed) = if incr {
            match signed_overflow(old, op.value, op.bits, op.overflow) {
                Some(v) => (v, true),
                None => (old.wrapping_add(op.value), false),
            }
        } else {
            match signed_overflow(op.value, 0, op.bits, op.overflow) {
                Some(v) => (v, true),
                None => (op.value, false),
            }
        };
        if overflowed && op.overflow == Overflow::Fail {
            return (None, false);
        }
        set_unsigned(bytes, op.offset, op.bits, new as u64);
        (Some(if incr { new } else { old }), grown || old != new)
    } else {
        let old = get_unsigned(bytes, op.offset, op.bits);
        let (start, incr_by) = if incr {
            (old, op.value)
        } else {
            (op.value as u64, 0)
        };
        let (new, overflowed) = match unsigned_overflow(start, incr_by, op.bits, op.overflow) {
            Some(v) => (v, true),
            None => (start.wrapping_add(incr_by as u64), false),
        };
        if overflowed && op.overflow == Overflow::Fail {
            return (None, false);
        }
        set_unsigned(bytes, op.offset, op.bits, new);
        let reply = if incr { new } else { old };
        (Some(reply as i64), grown || old != new)
    }
}

/// Redis's getUnsignedBitfield; bytes past the end read as zero.
fn get_unsigned(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    (0..u64::from(bits)).fold(0u64, |v, j| {
        (v << 1) | u64::from(super::bit_at(bytes, offset + j))
    })
}

/// Redis's getSignedBitfield: the unsigned field sign-extended.
fn get_signed(bytes: &[u8], offset: u64, bits: u32) -> i64 {
    let v = get_unsigned(bytes, offset, bits);
    if bits < 64 && v & (1 << (bits - 1)) != 0 {
        (v | (u64::MAX << bits)) as i64
    } else {
        v as i64
    }
}

/// Redis's setUnsignedBitfield: the low `bits` of `value`, most significant
/// first. The string covers the field (it was grown to the highest write).
fn set_unsigned(bytes: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..u64::from(bits) {
        let bit = ((value >> (u64::from(bits) - 1 - j)) & 1) as u8;
        let at = offset + j;
        let shift = 7 - (at & 7);
        if let Some(b) = bytes.get_mut((at >> 3) as usize) {
            *b = (*b & !(1 << shift)) | (bit << shift);
        }
    }
}

/// Redis's checkUnsignedBitfieldOverflow: None when `value + incr` fits in
/// `bits`, else the value to store under WRAP or SAT.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, overflow: Overflow) -> Option<u64> {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = value.wrapping_neg() as i64;
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > max_incr) {
        Some(if overflow == Overflow::Sat {
            max
        } else {
            wrap()
        })
    } else if incr < 0 && incr < min_incr {
        Some(if overflow == Overflow::Sat { 0 } else { wrap() })
    } else {
        None
    }
}

/// Redis's checkSignedBitfieldOverflow: None when `value + incr` fits in
/// a signed field of `bits`, else the value to store under WRAP or SAT.
fn signed_overflow(value: i64, incr: i64, bits: u32, overflow: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrap = || {
        let c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1 << (bits - 1)) != 0 {
                (c | mask) as i64
            } else {
                (c & !mask) as i64
            }
        } else {
            c as i64
        }
    };
    let wide = bits != 64;
    if value > max || (wide && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr) {
        Some(if overflow == Overflow::Sat {
            max
        } else {
            wrap()
        })
    } else if value < min || (wide && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr)
    {
        Some(if overflow == Overflow::Sat {
            min
        } else {
            wrap()
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let mut b = vec![0u8; 16];
        set_unsigned(&mut b, 5, 13, 0x1abc);
        assert_eq!(get_unsigned(&b, 5, 13), 0x1abc);
        set_unsigned(&mut b, 64, 64, (-2i64) as u64);
        assert_eq!(get_signed(&b, 64, 64), -2);
        set_unsigned(&mut b, 3, 4, 0b1001);
        assert_eq!(get_signed(&b, 3, 4), -7);
    }

    #[test]
    fn overflow_rules() {
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Wrap), Some(4));
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Sat), Some(255));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Sat), Some(0));
        assert_eq!(unsigned_overflow(5, -5, 8, Overflow::Wrap), None);
        assert_eq!(signed_overflow(127, 1, 8, Overflow::Wrap), Some(-128));
        assert_eq!(signed_overflow(-128, -1, 8, Overflow::Sat), Some(-128));
        assert_eq!(
            signed_overflow(i64::MAX, 1, 64, Overflow::Wrap),
            Some(i64::MIN)
        );
        assert_eq!(signed_overflow(100, 0, 8, Overflow::Wrap), None);
    }
}
