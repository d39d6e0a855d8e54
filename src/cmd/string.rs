//! String commands (Redis's `t_string.c`): GET, SET and its options,
//! counters, ranges and the rest of the family.

use super::args::{self, is};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::store::value::Value;
use crate::store::Ttl;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("get", get),
    ("set", set),
    ("setnx", setnx),
    ("incr", incr),
    ("decr", decr),
    ("incrby", incrby),
    ("decrby", decrby),
];

/// Replies with the string at `key` (null when missing); WRONGTYPE for
/// other types. Redis's getGenericCommand.
pub(super) fn reply_string(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let db = ctx.db();
    match ctx.store.get_read(db, key) {
        None => ctx.reply.null(),
        Some(e) => match &e.value {
            Value::Int(n) => ctx.reply.bulk_i64(*n),
            Value::Str(s) => ctx.reply.bulk(s.as_slice()),
            Value::Raw(v) => ctx.reply.bulk(v),
            _ => return Err(Error::WrongType),
        },
    }
    Ok(())
}

fn get(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    reply_string(ctx, argv.get(1))
}

/// Options of SET (and GETEX), as parseExtendedStringArgumentsOrReply reads
/// them.
#[derive(Default)]
pub(super) struct SetOptions<'a> {
    pub nx: bool,
    pub xx: bool,
    pub get: bool,
    pub keepttl: bool,
    pub persist: bool,
    /// EX/PX/EXAT/PXAT with its argument.
    pub expire: Option<(ExpireUnit, &'a [u8])>,
}

/// The unit and base of an expiry argument.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ExpireUnit {
    Ex,
    Px,
    ExAt,
    PxAt,
}

impl<'a> SetOptions<'a> {
    /// Parses options from `argv[from..]`; `for_set` selects SET's option
    /// set, otherwise GETEX's.
    pub fn parse(argv: Argv<'a>, from: usize, for_set: bool) -> Result<Self, Error> {
        let mut o = SetOptions::default();
        let mut j = from;
        while j < argv.len() {
            let opt = argv.get(j);
            let next = argv.try_get(j + 1);
            let has_expire = o.expire.is_some();
            let expire_kind =
                |o: &SetOptions<'_>, u: ExpireUnit| o.expire.is_some_and(|(k, _)| k != u);
            if for_set && is(opt, "nx") && !o.xx {
                o.nx = true;
            } else if for_set && is(opt, "xx") && !o.nx {
                o.xx = true;
            } else if for_set && is(opt, "get") {
                o.get = true;
            } else if for_set && is(opt, "keepttl") && !o.persist && !has_expire {
                o.keepttl = true;
            } else if !for_set && is(opt, "persist") && !has_expire && !o.keepttl {
                o.persist = true;
            } else if let Some(unit) = [
                ("ex", ExpireUnit::Ex),
                ("px", ExpireUnit::Px),
                ("exat", ExpireUnit::ExAt),
                ("pxat", ExpireUnit::PxAt),
            ]
            .iter()
            .find(|(name, _)| is(opt, name))
            .map(|(_, u)| *u)
            .filter(|&u| !o.keepttl && !o.persist && !expire_kind(&o, u) && next.is_some())
            {
                // invariant: the filter above required `next`.
                o.expire = Some((unit, next.expect("checked")));
                j += 1;
            } else {
                return Err(Error::Syntax);
            }
            j += 1;
        }
        Ok(o)
    }

    /// Converts the expiry argument to an absolute Unix time in ms, with
    /// Redis's checks (getExpireMillisecondsOrReply).
    pub fn expire_at(&self, now_ms: u64, cmd: &str) -> Result<Option<u64>, Error> {
        let Some((unit, arg)) = self.expire else {
            return Ok(None);
        };
        let n = args::int(arg)?;
        let invalid = || Error::InvalidExpire(cmd.to_string());
        let seconds = matches!(unit, ExpireUnit::Ex | ExpireUnit::ExAt);
        if n <= 0 || (seconds && n > i64::MAX / 1000) {
            return Err(invalid());
        }
        let mut ms = if seconds { n * 1000 } else { n };
        if matches!(unit, ExpireUnit::Ex | ExpireUnit::Px) {
            ms = ms.checked_add(now_ms as i64).ok_or_else(invalid)?;
        }
        if ms <= 0 {
            return Err(invalid());
        }
        Ok(Some(ms as u64))
    }
}

fn set(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let opts = SetOptions::parse(argv, 3, true)?;
    let expire_at = opts.expire_at(ctx.store.now(), "set")?;
    let (key, val) = (argv.get(1), argv.get(2));
    let db = ctx.db();
    if opts.get {
        reply_string(ctx, key)?;
    }
    let found = ctx.store.exists(db, key);
    if (opts.nx && found) || (opts.xx && !found) {
        if !opts.get {
            ctx.reply.null();
        }
        return Ok(());
    }
    let ttl = match expire_at {
        Some(at) => Ttl::At(at),
        None if opts.keepttl => Ttl::Keep,
        None => Ttl::None,
    };
    ctx.store.set(db, key, Value::string(val), ttl);
    if !opts.get {
        ctx.reply.ok();
    }
    Ok(())
}

fn setnx(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    if ctx.store.exists(db, key) {
        ctx.reply.int(0);
    } else {
        ctx.store
            .set(db, key, Value::string(argv.get(2)), Ttl::None);
        ctx.reply.int(1);
    }
    Ok(())
}

/// The integer value of a string at `key` (0 when missing), with Redis's
/// errors for other types and non-integers.
pub(super) fn int_value(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<i64>, Error> {
    let db = ctx.db();
    match ctx.store.get(db, key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Int(n) => Ok(Some(*n)),
            Value::Str(s) => args::int(s.as_slice()).map(Some),
            Value::Raw(v) => args::int(v).map(Some),
            _ => Err(Error::WrongType),
        },
    }
}

/// INCR/DECR/INCRBY/DECRBY: adds `by`, keeping any TTL.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], by: i64) -> CmdResult {
    let db = ctx.db();
    let old = int_value(ctx, key)?;
    let new = old.unwrap_or(0).checked_add(by).ok_or(Error::Overflow)?;
    match ctx.store.get(db, key) {
        Some(e) => {
            e.value = Value::Int(new);
            ctx.store.signal_modified(db, key);
        }
        None => {
            ctx.store.insert_new(db, key, Value::Int(new));
        }
    }
    ctx.reply.int(new);
    Ok(())
}

fn incr(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    incr_by(ctx, argv.get(1), 1)
}

fn decr(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    incr_by(ctx, argv.get(1), -1)
}

fn incrby(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let by = args::int(argv.get(2))?;
    incr_by(ctx, argv.get(1), by)
}

fn decrby(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let by = args::int(argv.get(2))?;
    if by == i64::MIN {
        return Err(Error::err("decrement would overflow"));
    }
    incr_by(ctx, argv.get(1), -by)
}
