//! Counters on string values: INCR, DECR, INCRBY, DECRBY (64-bit integers,
//! int-encoded results) and INCRBYFLOAT (long double, never int-encoded).
//! All of them keep the key's TTL, as Redis's dbReplaceValue does.

use crate::cmd::args;
use crate::cmd::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::store::value::Value;
use crate::util::num::{self, FloatIncrError};

/// A string value read as a 64-bit integer (string2ll rules); WRONGTYPE
/// for other types.
pub(crate) fn int_of(value: &Value) -> Result<i64, Error> {
    match value {
        Value::Int(n) => Ok(*n),
        Value::Str(s) => args::int(s.as_slice()),
        Value::Raw(v) => args::int(v),
        Value::Large(v) => args::int(v),
        _ => Err(Error::WrongType),
    }
}

/// Adds `by` to the integer at `key` (0 when missing), keeping any TTL.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], by: i64) -> CmdResult {
    let db = ctx.db();
    let new = match ctx.store.get(db, key) {
        Some(mut e) => {
            let new = int_of(&e.value())?.checked_add(by).ok_or(Error::Overflow)?;
            e.set_value(Value::Int(new));
            ctx.store.signal_modified(db, key);
            new
        }
        None => {
            ctx.store.insert_new(db, key, Value::Int(by));
            by
        }
    };
    crate::cmd::pubsub::notify(ctx, b'$', "incrby", key);
    ctx.reply.int(new);
    Ok(())
}

pub(super) fn incr(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    incr_by(ctx, argv.get(1), 1)
}

pub(super) fn decr(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    incr_by(ctx, argv.get(1), -1)
}

pub(super) fn incrby(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let by = args::int(argv.get(2))?;
    incr_by(ctx, argv.get(1), by)
}

pub(super) fn decrby(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let by = args::int(argv.get(2))?;
    // Negating LLONG_MIN overflows; Redis checks it before the addition.
    if by == i64::MIN {
        return Err(Error::err("decrement would overflow"));
    }
    incr_by(ctx, argv.get(1), -by)
}

/// INCRBYFLOAT: long double arithmetic, the result stored as text exactly
/// as Redis formats it (never int-encoded, even when it looks integral).
pub(super) fn incrbyfloat(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (key, incr) = (argv.get(1), argv.get(2));
    let db = ctx.db();
    let result = match ctx.store.get(db, key) {
        Some(e) => match e.as_str() {
            Some(cur) => cur.with(|cur| num::incr_by_float(Some(cur), incr)),
            None => return Err(Error::WrongType),
        },
        None => num::incr_by_float(None, incr),
    };
    let text = result.map_err(|e| match e {
        FloatIncrError::NotFloatValue | FloatIncrError::NotFloatIncrement => Error::NotFloat,
        FloatIncrError::NanOrInfinity => Error::err("increment would produce NaN or Infinity"),
    })?;
    ctx.reply.bulk(&text);
    // Float arithmetic may differ where the AOF is replayed: the result
    // goes there as a SET that keeps the TTL, as Redis does.
    ctx.propagate_as(&[b"SET", key, &text, b"KEEPTTL"]);
    match ctx.store.get(db, key) {
        Some(mut e) => {
            e.set_value(Value::plain_string(text));
            ctx.store.signal_modified(db, key);
        }
        None => {
            ctx.store.insert_new(db, key, Value::plain_string(text));
        }
    }
    // After the write, so a created key's `new` event comes first.
    crate::cmd::pubsub::notify(ctx, b'$', "incrbyfloat", key);
    Ok(())
}
