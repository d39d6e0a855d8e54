//! Expiry commands (the command half of Redis's `expire.c`): EXPIRE,
//! PEXPIRE, EXPIREAT, PEXPIREAT with NX/XX/GT/LT, TTL, PTTL, EXPIRETIME,
//! PEXPIRETIME and PERSIST. Reclaiming expired keys is the store's job
//! (lazily on access, actively in `store/expire.rs`).

use super::args::{self, is};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("expire", expire),
    ("pexpire", pexpire),
    ("expireat", expireat),
    ("pexpireat", pexpireat),
    ("ttl", ttl),
    ("pttl", pttl),
    ("expiretime", expiretime),
    ("pexpiretime", pexpiretime),
    ("persist", persist),
];

/// The NX/XX/GT/LT conditions of the EXPIRE family.
#[derive(Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

/// Redis's parseExtendedExpireArgumentsOrReply.
fn parse_conditions(argv: Argv<'_>) -> Result<Conditions, Error> {
    let mut c = Conditions::default();
    for opt in argv.iter_from(3) {
        if is(opt, "nx") {
            c.nx = true;
        } else if is(opt, "xx") {
            c.xx = true;
        } else if is(opt, "gt") {
            c.gt = true;
        } else if is(opt, "lt") {
            c.lt = true;
        } else {
            return Err(Error::err_owned(format!(
                "Unsupported option {}",
                args::lossy(opt)
            )));
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Err(Error::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if c.gt && c.lt {
        return Err(Error::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    Ok(c)
}

/// Redis's expireGenericCommand: `relative` adds the current time, `seconds`
/// scales the argument to milliseconds. A time already past deletes the key
/// and still answers 1.
fn expire_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, relative: bool, seconds: bool) -> CmdResult {
    let cond = parse_conditions(argv)?;
    let mut when = args::int(argv.get(2))?;
    let invalid = || Error::InvalidExpire(String::from_utf8_lossy(argv.get(0)).to_lowercase());
    if seconds {
        when = when.checked_mul(1000).ok_or_else(invalid)?;
    }
    if relative {
        // Redis only checks the upper bound: a very negative time is simply
        // in the past.
        let base = ctx.store.now() as i64;
        if when > i64::MAX - base {
            return Err(invalid());
        }
        when += base;
    }
    let db = ctx.db();
    let key = argv.get(1);
    let Some(e) = ctx.store.get(db, key) else {
        ctx.reply.int(0);
        return Ok(());
    };
    // -1 stands for "no TTL", which GT treats as infinite.
    let current: i64 = match e.expire_at() {
        0 => -1,
        at => at as i64,
    };
    let refused = (cond.nx && current != -1)
        || (cond.xx && current == -1)
        || (cond.gt && (current == -1 || when <= current))
        || (cond.lt && current != -1 && when >= current);
    if refused {
        ctx.reply.int(0);
        return Ok(());
    }
    if when <= ctx.store.now() as i64 {
        let (_, lazy) = ctx.store.delete_as_expiry(db, key);
        ctx.propagate_as(&[crate::store::lazyfree::deletion_verb(lazy), key]);
        super::pubsub::notify(ctx, b'g', "del", key);
    } else {
        ctx.store.set_expire(db, key, when as u64);
        // Replayed later, a relative time would mean another instant: it
        // goes as PEXPIREAT with the same conditions, as in Redis.
        if !is(argv.get(0), "pexpireat") && ctx.propagating() {
            let mut buf = crate::util::num::itoa_buf();
            let mut args: Vec<&[u8]> = vec![b"PEXPIREAT", key];
            args.push(crate::util::num::fmt_i64(when, &mut buf));
            args.extend(argv.iter_from(3));
            ctx.propagate_as(&args);
        }
        super::pubsub::notify(ctx, b'g', "expire", key);
    }
    ctx.reply.int(1);
    Ok(())
}

fn expire(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    expire_generic(ctx, argv, true, true)
}

fn pexpire(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    expire_generic(ctx, argv, true, false)
}

fn expireat(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    expire_generic(ctx, argv, false, true)
}

fn pexpireat(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    expire_generic(ctx, argv, false, false)
}

/// Redis's ttlGenericCommand: -2 for a missing key, -1 without a TTL, else
/// the remaining (`absolute`: the expiry) time, in ms or rounded seconds.
fn ttl_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, ms: bool, absolute: bool) -> CmdResult {
    let db = ctx.db();
    let now = ctx.store.now() as i64;
    let Some(e) = ctx.store.get_read_notouch(db, argv.get(1)) else {
        ctx.reply.int(-2);
        return Ok(());
    };
    let at = e.expire_at();
    if at == 0 {
        ctx.reply.int(-1);
        return Ok(());
    }
    let t = if absolute {
        at
    } else {
        (at as i64 - now).max(0) as u64
    };
    // Rounded to the nearest second; Redis's arithmetic behaves as unsigned
    // near i64::MAX (PEXPIREAT k 9223372036854775807 reads back as
    // 9223372036854776 seconds), so do it in u64.
    let t = if ms { t } else { (t + 500) / 1000 };
    ctx.reply.int(t as i64);
    Ok(())
}

fn ttl(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    ttl_generic(ctx, argv, false, false)
}

fn pttl(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    ttl_generic(ctx, argv, true, false)
}

fn expiretime(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    ttl_generic(ctx, argv, false, true)
}

fn pexpiretime(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    ttl_generic(ctx, argv, true, true)
}

fn persist(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    let has_ttl = ctx.store.get(db, key).is_some_and(|e| e.expire_at() != 0);
    if has_ttl {
        ctx.store.set_expire(db, key, 0);
        super::pubsub::notify(ctx, b'g', "persist", key);
    }
    ctx.reply.int(i64::from(has_ttl));
    Ok(())
}
