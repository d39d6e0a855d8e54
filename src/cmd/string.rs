//! String commands (Redis's `t_string.c`): GET, SET and its options, the
//! GET*/SET* variants and MGET/MSET. Counters live in `string/incr.rs`,
//! byte ranges (APPEND, GETRANGE, SETRANGE...) in `string/range.rs` and LCS
//! in `string/lcs.rs`.

mod incr;
pub(crate) use incr::int_of;
mod lcs;
mod range;
pub(super) use range::make_raw;

use super::args;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::store::value::Value;
use crate::store::{lazyfree, Incoming, Ttl};
use crate::util::num;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("get", get),
    ("set", set),
    ("setnx", setnx),
    ("setex", setex),
    ("psetex", psetex),
    ("getset", getset),
    ("getdel", getdel),
    ("getex", getex),
    ("mget", mget),
    ("mset", mset),
    ("msetnx", msetnx),
    ("incr", incr::incr),
    ("decr", incr::decr),
    ("incrby", incr::incrby),
    ("decrby", incr::decrby),
    ("incrbyfloat", incr::incrbyfloat),
    ("append", range::append),
    ("strlen", range::strlen),
    ("getrange", range::getrange),
    ("substr", range::getrange),
    ("setrange", range::setrange),
    ("lcs", lcs::lcs),
];

/// A string value from argument `i`, kept in the argument's own buffer
/// when it has one (a large bulk) instead of copied, as Redis keeps the
/// query buffer of a big argument as the value.
#[inline]
fn value_arg<'a>(argv: Argv<'a>, i: usize) -> Incoming<'a> {
    match argv.shared(i) {
        Some(b) => Value::Large(Box::new(b)).into(),
        None => Incoming::string(argv.get(i)),
    }
}

/// Writes a string value as a bulk reply; WRONGTYPE for other types.
pub(super) fn write_string(reply: &mut ReplyBuf<'_>, value: &Value) -> CmdResult {
    match value {
        Value::Int(n) => reply.bulk_i64(*n),
        Value::Str(s) => reply.bulk(s.as_slice()),
        Value::Raw(v) => reply.bulk(v),
        Value::Large(v) => reply.bulk(v),
        _ => return Err(Error::WrongType),
    }
    Ok(())
}

/// Replies with the string at `key` (null when missing) and tells whether
/// the key existed; WRONGTYPE for other types. Redis's getGenericCommand.
fn reply_string_found(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, Error> {
    let db = ctx.db();
    match ctx.store.get_read(db, key) {
        None => {
            ctx.reply.null();
            Ok(false)
        }
        Some(e) => write_string(&mut ctx.reply, &e.value()).map(|()| true),
    }
}

/// Replies with the string at `key` (null when missing); WRONGTYPE for
/// other types. Redis's getGenericCommand.
pub(super) fn reply_string(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    reply_string_found(ctx, key).map(|_| ())
}

fn get(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    reply_string(ctx, argv.get(1))
}

/// An option keyword as Redis compares it: the C string up to the first NUL
/// byte (Redis matches `argv[j]->ptr` with strcasecmp or char by char).
pub(super) fn keyword(arg: &[u8]) -> &[u8] {
    match arg.iter().position(|&c| c == 0) {
        Some(n) => &arg[..n],
        None => arg,
    }
}

/// Options of SET (and GETEX), as parseExtendedStringArgumentsOrReply reads
/// them.
#[derive(Default)]
pub(super) struct SetOptions<'a> {
    /// NX: only set a missing key.
    pub nx: bool,
    /// XX: only set an existing key.
    pub xx: bool,
    /// GET: reply with the old value instead of OK.
    pub get: bool,
    /// KEEPTTL: keep the key's TTL.
    pub keepttl: bool,
    /// PERSIST (GETEX): clear the TTL.
    pub persist: bool,
    /// EX/PX/EXAT/PXAT with its argument.
    pub expire: Option<(ExpireUnit, &'a [u8])>,
}

/// The unit and base of an expiry argument.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum ExpireUnit {
    /// Seconds from now.
    Ex,
    /// Milliseconds from now.
    Px,
    /// Unix time in seconds.
    ExAt,
    /// Unix time in milliseconds.
    PxAt,
}

impl ExpireUnit {
    /// The unit named by an option keyword, if any.
    fn from_keyword(opt: &[u8]) -> Option<Self> {
        [
            ("ex", ExpireUnit::Ex),
            ("px", ExpireUnit::Px),
            ("exat", ExpireUnit::ExAt),
            ("pxat", ExpireUnit::PxAt),
        ]
        .iter()
        .find(|(name, _)| args::is(opt, name))
        .map(|(_, u)| *u)
    }
}

impl<'a> SetOptions<'a> {
    /// Parses options from `argv[from..]`; `for_set` selects SET's option
    /// set, otherwise GETEX's. As in Redis, conflicting options (NX with XX,
    /// two different expiry kinds, KEEPTTL or PERSIST with an expiry) are a
    /// syntax error, while repeating the same option is allowed (the last
    /// expiry argument wins).
    pub fn parse(argv: Argv<'a>, from: usize, for_set: bool) -> Result<Self, Error> {
        let mut o = SetOptions::default();
        let mut j = from;
        while j < argv.len() {
            let opt = keyword(argv.get(j));
            let next = argv.try_get(j + 1);
            let has_expire = o.expire.is_some();
            let other_expire =
                |o: &SetOptions<'_>, u: ExpireUnit| o.expire.is_some_and(|(k, _)| k != u);
            if for_set && args::is(opt, "nx") && !o.xx {
                o.nx = true;
            } else if for_set && args::is(opt, "xx") && !o.nx {
                o.xx = true;
            } else if for_set && args::is(opt, "get") {
                o.get = true;
            } else if for_set && args::is(opt, "keepttl") && !o.persist && !has_expire {
                o.keepttl = true;
            } else if !for_set && args::is(opt, "persist") && !has_expire && !o.keepttl {
                o.persist = true;
            } else if let (Some(unit), Some(arg)) = (ExpireUnit::from_keyword(opt), next) {
                if o.keepttl || o.persist || other_expire(&o, unit) {
                    return Err(Error::Syntax);
                }
                o.expire = Some((unit, arg));
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
        match self.expire {
            None => Ok(None),
            Some((unit, arg)) => expire_ms(unit, arg, now_ms, cmd).map(Some),
        }
    }
}

/// An expiry argument as an absolute Unix time in ms: not positive, or
/// overflowing once scaled or made absolute, is `invalid expire time`.
fn expire_ms(unit: ExpireUnit, arg: &[u8], now_ms: u64, cmd: &str) -> Result<u64, Error> {
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
    Ok(ms as u64)
}

/// Redis's setGenericCommand: writes argument `vi` under the key (the
/// first argument) unless NX/XX say otherwise. `replies` holds the integer replies for
/// success and for an NX/XX refusal (SETNX); None means `+OK` and null.
fn set_generic(
    ctx: &mut Ctx<'_>,
    opts: &SetOptions<'_>,
    expire_at: Option<u64>,
    argv: Argv<'_>,
    vi: usize,
    replies: Option<(i64, i64)>,
) -> CmdResult {
    let (key, val) = (argv.get(1), argv.get(vi));
    let db = ctx.db();
    if opts.get {
        reply_string(ctx, key)?;
    }
    // Without NX/XX nothing is looked up here: `set` reaps an expired key
    // (counted in expired_keys) before overwriting it, as in Redis.
    let refused = (opts.nx || opts.xx) && {
        let found = ctx.store.exists(db, key);
        (opts.nx && found) || (opts.xx && !found)
    };
    if refused {
        if !opts.get {
            match replies {
                Some((_, abort)) => ctx.reply.int(abort),
                None => ctx.reply.null(),
            }
        }
        return Ok(());
    }
    let ttl = match expire_at {
        Some(at) => Ttl::At(at),
        None if opts.keepttl => Ttl::Keep,
        None => Ttl::None,
    };
    ctx.store.set(db, key, value_arg(argv, vi), ttl);
    // Any expiry reaches the AOF and replicas as an absolute one: Redis
    // 7.0 rewrites SET, SETEX and PSETEX with one to SET key value PXAT ms
    // (a PXAT given too, so the options read as Redis writes them).
    if let Some(at) = expire_at {
        let mut buf = num::itoa_buf();
        let at = num::fmt_i64(at as i64, &mut buf);
        ctx.propagate_as(&[b"SET", key, val, b"PXAT", at]);
    }
    // GET is no business of replicas: Redis propagates without it (but
    // for an expiry option, whose own rewrite stands).
    if opts.get && opts.expire.is_none() {
        let args: Vec<&[u8]> = (0..argv.len())
            .map(|j| argv.get(j))
            .enumerate()
            .filter(|&(j, a)| j < 3 || !a.eq_ignore_ascii_case(b"get"))
            .map(|(_, a)| a)
            .collect();
        ctx.propagate_as(&args);
    }
    super::pubsub::notify(ctx, b'$', "set", key);
    if expire_at.is_some() {
        super::pubsub::notify(ctx, b'g', "expire", key);
    }
    if !opts.get {
        match replies {
            Some((ok, _)) => ctx.reply.int(ok),
            None => ctx.reply.ok(),
        }
    }
    Ok(())
}

fn set(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let opts = SetOptions::parse(argv, 3, true)?;
    let expire_at = opts.expire_at(ctx.store.now(), "set")?;
    set_generic(ctx, &opts, expire_at, argv, 2, None)
}

fn setnx(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let opts = SetOptions {
        nx: true,
        ..SetOptions::default()
    };
    set_generic(ctx, &opts, None, argv, 2, Some((1, 0)))
}

/// SETEX and PSETEX: SET with a mandatory relative expiry.
fn set_with_expire(ctx: &mut Ctx<'_>, argv: Argv<'_>, unit: ExpireUnit, cmd: &str) -> CmdResult {
    let at = expire_ms(unit, argv.get(2), ctx.store.now(), cmd)?;
    let opts = SetOptions::default();
    set_generic(ctx, &opts, Some(at), argv, 3, None)
}

fn setex(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    set_with_expire(ctx, argv, ExpireUnit::Ex, "setex")
}

fn psetex(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    set_with_expire(ctx, argv, ExpireUnit::Px, "psetex")
}

fn getset(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let key = argv.get(1);
    reply_string(ctx, key)?;
    let db = ctx.db();
    ctx.store.set(db, key, value_arg(argv, 2), Ttl::None);
    super::pubsub::notify(ctx, b'$', "set", key);
    // Replicas and the AOF get a SET (Redis rewrites argv[0]).
    ctx.propagate_as(&[b"SET", key, argv.get(2)]);
    Ok(())
}

fn getdel(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let key = argv.get(1);
    if reply_string_found(ctx, key)? {
        let db = ctx.db();
        let (_, lazy) = ctx.store.delete_as_user(db, key);
        super::pubsub::notify(ctx, b'g', "del", key);
        // Replicas and the AOF get a DEL, or an UNLINK under
        // `lazyfree-lazy-user-del` (Redis rewrites the command).
        ctx.propagate_as(&[lazyfree::deletion_verb(lazy), key]);
    }
    Ok(())
}

/// GETEX: GET that also sets or clears the TTL. As in Redis, a missing key
/// answers null before the expiry argument is even checked, and an EXAT or
/// PXAT time already past deletes the key after replying with its value.
fn getex(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let opts = SetOptions::parse(argv, 2, false)?;
    let key = argv.get(1);
    let db = ctx.db();
    let now = ctx.store.now();
    let Some(e) = ctx.store.get_read(db, key) else {
        ctx.reply.null();
        return Ok(());
    };
    if !e.is_string() {
        return Err(Error::WrongType);
    }
    let at = opts.expire_at(now, "getex")?;
    write_string(&mut ctx.reply, &e.value())?;
    let had_ttl = e.expire_at() != 0;
    let absolute = matches!(opts.expire, Some((ExpireUnit::ExAt | ExpireUnit::PxAt, _)));
    match at {
        Some(at) if absolute && at <= now => {
            let (_, lazy) = ctx.store.delete_as_expiry(db, key);
            ctx.propagate_as(&[lazyfree::deletion_verb(lazy), key]);
            super::pubsub::notify(ctx, b'g', "del", key);
        }
        Some(at) => {
            ctx.store.set_expire(db, key, at);
            let mut buf = num::itoa_buf();
            let at = num::fmt_i64(at as i64, &mut buf);
            ctx.propagate_as(&[b"PEXPIREAT", key, at]);
            super::pubsub::notify(ctx, b'g', "expire", key);
        }
        None if opts.persist && had_ttl => {
            ctx.store.set_expire(db, key, 0);
            ctx.propagate_as(&[b"PERSIST", key]);
            super::pubsub::notify(ctx, b'g', "persist", key);
        }
        None => {}
    }
    Ok(())
}

/// MGET: null for missing keys and for keys of other types.
fn mget(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    ctx.reply.array(argv.len() - 1);
    for key in argv.iter_from(1) {
        match ctx.store.get_read(db, key) {
            Some(e) if e.is_string() => write_string(&mut ctx.reply, &e.value())?,
            _ => ctx.reply.null(),
        }
    }
    Ok(())
}

/// MSET and MSETNX; MSETNX writes nothing when any key exists.
fn mset_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, nx: bool) -> CmdResult {
    if argv.len().is_multiple_of(2) {
        let name = if nx { "msetnx" } else { "mset" };
        return Err(Error::WrongArity(name.into()));
    }
    let db = ctx.db();
    if nx {
        let mut i = 1;
        while i < argv.len() {
            if ctx.store.exists(db, argv.get(i)) {
                ctx.reply.int(0);
                return Ok(());
            }
            i += 2;
        }
    }
    let mut i = 1;
    while i + 1 < argv.len() {
        let key = argv.get(i);
        ctx.store.set(db, key, value_arg(argv, i + 1), Ttl::None);
        super::pubsub::notify(ctx, b'$', "set", key);
        i += 2;
    }
    if nx {
        ctx.reply.int(1);
    } else {
        ctx.reply.ok();
    }
    Ok(())
}

fn mset(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    mset_generic(ctx, argv, false)
}

fn msetnx(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    mset_generic(ctx, argv, true)
}

#[cfg(test)]
mod tests;
