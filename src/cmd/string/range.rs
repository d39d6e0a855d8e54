//! Byte-range string commands: APPEND, STRLEN, GETRANGE/SUBSTR and
//! SETRANGE. Values modified in place become "raw" (Redis's
//! dbUnshareStringValue) and keep their TTL.

use crate::cmd::args;
use crate::cmd::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::store::value::Value;

/// Redis's checkStringLength: a result longer than proto-max-bulk-len is
/// refused.
fn check_length(ctx: &Ctx<'_>, size: u64, append: u64) -> CmdResult {
    let max = ctx.server.config.proto_max_bulk_len as u64;
    match size.checked_add(append) {
        Some(total) if total <= max => Ok(()),
        _ => Err(Error::StringTooLong),
    }
}

/// Turns a string value into its raw, growable form and returns the bytes.
pub(in crate::cmd) fn make_raw(value: &mut Value) -> Result<&mut Vec<u8>, Error> {
    if !matches!(value, Value::Raw(_)) {
        let bytes = value.as_str().ok_or(Error::WrongType)?.to_vec();
        *value = Value::Raw(Box::new(bytes));
    }
    match value {
        Value::Raw(v) => Ok(v),
        _ => Err(Error::WrongType),
    }
}

pub(super) fn append(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (key, tail) = (argv.get(1), argv.get(2));
    let db = ctx.db();
    let max = ctx.server.config.proto_max_bulk_len as u64;
    let total = match ctx.store.get(db, key) {
        None => {
            // A new key stores the argument as SET would (int or embstr).
            ctx.store.insert_new(db, key, Value::string(tail));
            tail.len()
        }
        Some(e) => {
            let len = e.as_str().ok_or(Error::WrongType)?.len();
            if (len as u64).saturating_add(tail.len() as u64) > max {
                return Err(Error::StringTooLong);
            }
            let v = make_raw(e.into_value_mut())?;
            v.extend_from_slice(tail);
            let total = v.len();
            ctx.store.signal_modified(db, key);
            total
        }
    };
    crate::cmd::pubsub::notify(ctx, b'$', "append", key);
    ctx.reply.int(total as i64);
    Ok(())
}

pub(super) fn strlen(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let len = match ctx.store.get_read(db, argv.get(1)) {
        None => 0,
        Some(e) => e.as_str().ok_or(Error::WrongType)?.len(),
    };
    ctx.reply.int(len as i64);
    Ok(())
}

/// The byte range `[start, end]` (inclusive, negative counting from the
/// end) of a string of `len` bytes, as Redis's getrangeCommand clamps it;
/// None for an empty result.
fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let len_i = len as i64;
    let mut start = if start < 0 {
        len_i.wrapping_add(start)
    } else {
        start
    };
    let mut end = if end < 0 {
        len_i.wrapping_add(end)
    } else {
        end
    };
    start = start.max(0);
    end = end.max(0);
    if end >= len_i {
        end = len_i - 1;
    }
    if start > end || len == 0 {
        return None;
    }
    Some((start as usize, end as usize))
}

/// GETRANGE and SUBSTR.
pub(super) fn getrange(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let start = args::int(argv.get(2))?;
    let end = args::int(argv.get(3))?;
    let db = ctx.db();
    let Some(e) = ctx.store.get_read(db, argv.get(1)) else {
        ctx.reply.bulk(b"");
        return Ok(());
    };
    let s = e.as_str().ok_or(Error::WrongType)?;
    let reply = &mut ctx.reply;
    s.with(|bytes| match clamp_range(start, end, bytes.len()) {
        Some((a, b)) => reply.bulk(bytes.get(a..=b).unwrap_or_default()),
        None => reply.bulk(b""),
    });
    Ok(())
}

pub(super) fn setrange(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (key, value) = (argv.get(1), argv.get(3));
    let offset = args::int(argv.get(2))?;
    if offset < 0 {
        return Err(Error::err("offset is out of range"));
    }
    let offset_u = offset as u64;
    let db = ctx.db();
    let exists = match ctx.store.get(db, key) {
        None => false,
        Some(e) => {
            let len = e.as_str().ok_or(Error::WrongType)?.len();
            if value.is_empty() {
                ctx.reply.int(len as i64);
                return Ok(());
            }
            true
        }
    };
    if !exists && value.is_empty() {
        ctx.reply.int(0);
        return Ok(());
    }
    check_length(ctx, offset_u, value.len() as u64)?;
    // offset + len is at most proto-max-bulk-len here, so it fits usize.
    let off = usize::try_from(offset_u).map_err(|_| Error::StringTooLong)?;
    let end = off + value.len();
    let total = if exists {
        let Some(e) = ctx.store.get(db, key) else {
            return Err(Error::WrongType);
        };
        let v = make_raw(e.into_value_mut())?;
        if v.len() < end {
            v.resize(end, 0);
        }
        v[off..end].copy_from_slice(value);
        v.len()
    } else {
        let mut v = vec![0u8; end];
        v[off..end].copy_from_slice(value);
        ctx.store.insert_new(db, key, Value::Raw(Box::new(v)));
        end
    };
    if exists {
        ctx.store.signal_modified(db, key);
    }
    crate::cmd::pubsub::notify(ctx, b'$', "setrange", key);
    ctx.reply.int(total as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::clamp_range;

    #[test]
    fn ranges_clamp_like_redis() {
        assert_eq!(clamp_range(0, -1, 5), Some((0, 4)));
        assert_eq!(clamp_range(-1, -5, 5), None);
        assert_eq!(clamp_range(-3, -1, 5), Some((2, 4)));
        assert_eq!(clamp_range(0, -100, 5), Some((0, 0)));
        assert_eq!(clamp_range(i64::MIN, i64::MAX, 5), Some((0, 4)));
        assert_eq!(clamp_range(0, 0, 0), None);
        assert_eq!(clamp_range(10, 20, 5), None);
    }
}
