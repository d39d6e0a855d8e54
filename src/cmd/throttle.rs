//! CL.THROTTLE, redis-cell's rate limiter (`ThrottleCommand` in its
//! `lib.rs`; Redis has no such command), built in: one atomic command
//! answers whether an action is allowed under a GCRA limit
//! (`util/gcra.rs`).
//!
//! The state is an ordinary string key holding the theoretical arrival
//! time in Unix nanoseconds (redis-cell's format), with a TTL at that time,
//! so it persists, replicates and expires like any key, and TYPE says
//! string. It reaches the AOF as `SET key tat PXAT ms`, the same on replay
//! whenever that happens, and fires `set` and `expire` notifications as
//! that SET would. The time is the logical clock's as the command (or the
//! script or transaction around it) started.

use std::borrow::Cow;

use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::store::value::Value;
use crate::store::Ttl;
use crate::util::gcra::{self, Limit, LimitError};
use crate::util::num;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[("cl.throttle", throttle)];

/// redis-cell's error line: `Cell error: Store error: <what>`, with no ERR
/// prefix (a module's reply error passes through as written).
fn cell_error(what: String) -> Error {
    Error::Raw(Cow::Owned(format!("Cell error: Store error: {what}")))
}

/// An argument as redis-cell reads it (Rust's integer parsing: an optional
/// sign and digits), refused when negative: none of the four has a meaning
/// below zero.
fn count_arg(arg: &[u8]) -> Result<i64, Error> {
    let text = String::from_utf8_lossy(arg);
    let n: i64 = text
        .parse()
        .map_err(|_| cell_error(format!("Couldn't parse as integer: {text}")))?;
    if n < 0 {
        return Err(cell_error(format!(
            "Negative values are not supported: {text}"
        )));
    }
    Ok(n)
}

/// CL.THROTTLE key max_burst count_per_period period [quantity]: replies
/// limited (0/1), the limit (max_burst + 1), the tokens remaining, seconds
/// until a retry may succeed (-1 when allowed) and seconds until the
/// bucket is full again.
fn throttle(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 6 {
        return Err(Error::WrongArity("cl.throttle".into()));
    }
    let key = argv.get(1);
    let max_burst = count_arg(argv.get(2))?;
    let count = count_arg(argv.get(3))?;
    let period = count_arg(argv.get(4))?;
    let quantity = argv.try_get(5).map_or(Ok(1), count_arg)?;
    let limit = Limit::new(max_burst, count, period).map_err(|e| match e {
        LimitError::ZeroRate => cell_error("Zero rates are not supported".into()),
    })?;
    let db = ctx.db();
    // Looked up as a write (redis-cell opens the key for writing): no
    // keyspace hit or miss is counted.
    let tat = match ctx.store.get(db, key) {
        Some(e) => Some(i128::from(super::string::int_of(&e.value())?)),
        None => None,
    };
    let now_ns = i128::from(ctx.server.call_started_us) * 1000;
    let d = gcra::decide(&limit, tat, now_ns, quantity);
    if let Some(new_tat) = d.new_tat_ns {
        let tat = i64::try_from(new_tat).map_err(|_| Error::Overflow)?;
        // The key lives until its TAT (rounded up to the millisecond):
        // after that, no state and a full bucket mean the same.
        let expire_at =
            u64::try_from((new_tat + 999_999) / 1_000_000).map_err(|_| Error::Overflow)?;
        ctx.store.set(db, key, Value::Int(tat), Ttl::At(expire_at));
        let (mut tat_buf, mut at_buf) = (num::itoa_buf(), num::itoa_buf());
        let tat_text = num::fmt_i64(tat, &mut tat_buf);
        let at_text = num::fmt_i64(expire_at as i64, &mut at_buf);
        ctx.propagate_as(&[b"SET", key, tat_text, b"PXAT", at_text]);
        super::pubsub::notify(ctx, b'$', "set", key);
        super::pubsub::notify(ctx, b'g', "expire", key);
    }
    ctx.reply.array(5);
    ctx.reply.int(i64::from(d.limited));
    ctx.reply.int(limit.limit);
    ctx.reply.int(d.remaining);
    ctx.reply
        .int(d.retry_after_ns.map_or(-1, gcra::reply_seconds));
    ctx.reply.int(gcra::reply_seconds(d.reset_after_ns));
    Ok(())
}
