//! Sorted-set commands (Redis's `t_zset.c`): ZADD and single-member
//! commands here; ranges (ZRANGE and its variants, counts, removals by
//! range) in `zset/range.rs`; pops, random members, ZSCAN and the
//! multi-key operations in `zset/ops.rs`. Scores are replied as doubles
//! (`%.17g` bulk strings in RESP2, `,` doubles in RESP3).

mod ops;
pub(super) use ops::parse_mpop;
mod range;

use super::args;
use super::coll::{finish_write, zset_read, zset_write};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::store::zset::ZSet;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("zadd", zadd),
    ("zincrby", zincrby),
    ("zrem", zrem),
    ("zcard", zcard),
    ("zscore", zscore),
    ("zmscore", zmscore),
    ("zrank", zrank),
    ("zrevrank", zrevrank),
    ("zcount", range::zcount),
    ("zlexcount", range::zlexcount),
    ("zrange", range::zrange),
    ("zrangestore", range::zrangestore),
    ("zrevrange", range::zrevrange),
    ("zrangebyscore", range::zrangebyscore),
    ("zrevrangebyscore", range::zrevrangebyscore),
    ("zrangebylex", range::zrangebylex),
    ("zrevrangebylex", range::zrevrangebylex),
    ("zremrangebyrank", range::zremrangebyrank),
    ("zremrangebyscore", range::zremrangebyscore),
    ("zremrangebylex", range::zremrangebylex),
    ("zpopmin", ops::zpopmin),
    ("zpopmax", ops::zpopmax),
    ("zmpop", ops::zmpop),
    ("zrandmember", ops::zrandmember),
    ("zscan", ops::zscan),
    ("zunion", ops::zunion),
    ("zunionstore", ops::zunionstore),
    ("zinter", ops::zinter),
    ("zinterstore", ops::zinterstore),
    ("zdiff", ops::zdiff),
    ("zdiffstore", ops::zdiffstore),
    ("zintercard", ops::zintercard),
];

/// Parses a score argument (strtod rules, no NaN).
fn score_arg(arg: &[u8]) -> Result<f64, Error> {
    args::float(arg)
}

/// Writes a member and optionally its score: flat in RESP2, a nested pair
/// in RESP3 when `pairs`.
pub(super) fn emit(
    reply: &mut ReplyBuf<'_>,
    member: &[u8],
    score: f64,
    withscores: bool,
    pairs: bool,
) {
    if withscores && pairs {
        reply.array(2);
    }
    reply.bulk(member);
    if withscores {
        reply.double(score);
    }
}

/// ZADD flags (Redis's ZADD_IN_*).
#[derive(Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// Outcome of adding one member (Redis's zsetAdd out flags).
enum Added {
    New(f64),
    Updated(f64),
    Same(f64),
    Skipped,
    Nan,
}

/// Redis's zsetAdd: applies one score under the flags.
fn add_one(z: &mut ZSet, f: &AddFlags, member: &[u8], score: f64) -> Added {
    match z.score(member) {
        Some(cur) => {
            if f.nx {
                return Added::Skipped;
            }
            let new = if f.incr { cur + score } else { score };
            if new.is_nan() {
                return Added::Nan;
            }
            if (f.lt && new >= cur) || (f.gt && new <= cur) {
                return Added::Skipped;
            }
            if new != cur {
                z.insert(member, new);
                Added::Updated(new)
            } else {
                Added::Same(new)
            }
        }
        None => {
            if f.xx {
                return Added::Skipped;
            }
            z.insert(member, score);
            Added::New(score)
        }
    }
}

pub(super) fn zadd(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    zadd_generic(ctx, argv, false)
}

fn zincrby(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    zadd_generic(ctx, argv, true)
}

/// ZADD and ZINCRBY (Redis's zaddGenericCommand).
fn zadd_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, incr: bool) -> CmdResult {
    let mut f = AddFlags {
        incr,
        ..AddFlags::default()
    };
    let mut i = 2;
    if !incr {
        while i < argv.len() {
            let a = argv.get(i);
            match () {
                _ if args::is(a, "nx") => f.nx = true,
                _ if args::is(a, "xx") => f.xx = true,
                _ if args::is(a, "gt") => f.gt = true,
                _ if args::is(a, "lt") => f.lt = true,
                _ if args::is(a, "ch") => f.ch = true,
                _ if args::is(a, "incr") => f.incr = true,
                _ => break,
            }
            i += 1;
        }
    }
    let elements = argv.len() - i;
    if elements % 2 == 1 || elements == 0 {
        return Err(Error::Syntax);
    }
    let pairs = elements / 2;
    if f.nx && f.xx {
        return Err(Error::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(Error::err(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && pairs > 1 {
        return Err(Error::err(
            "INCR option supports a single increment-element pair",
        ));
    }
    let mut scores = Vec::with_capacity(pairs);
    for p in 0..pairs {
        scores.push(score_arg(argv.get(i + 2 * p))?);
    }
    let db = ctx.db();
    let key = argv.get(1);
    let create = if f.xx {
        None
    } else {
        // Redis 7.0 decides the new key's encoding from the first member's
        // length alone; the count converts later, member by member.
        Some((1, argv.get(i + 1).len()))
    };
    let Some(z) = zset_write(ctx.store, db, key, create)? else {
        // XX on a missing key: nothing happens.
        if f.incr {
            ctx.reply.null();
        } else {
            ctx.reply.int(0);
        }
        return Ok(());
    };
    let (mut added, mut updated) = (0i64, 0i64);
    let mut last = None;
    let mut nan = false;
    for (p, &score) in scores.iter().enumerate() {
        match add_one(z, &f, argv.get(i + 2 * p + 1), score) {
            Added::New(s) => {
                added += 1;
                last = Some(s);
            }
            Added::Updated(s) => {
                updated += 1;
                last = Some(s);
            }
            Added::Same(s) => last = Some(s),
            Added::Skipped => last = None,
            Added::Nan => {
                nan = true;
                break;
            }
        }
    }
    finish_write(ctx.store, db, key, added + updated > 0);
    if nan {
        return Err(Error::err("resulting score is not a number (NaN)"));
    }
    ctx.count_changes((added + updated) as u64);
    if added + updated > 0 {
        let event = if f.incr { "zincr" } else { "zadd" };
        super::pubsub::notify(ctx, b'z', event, key);
    }
    if f.incr {
        match last {
            Some(s) => ctx.reply.double(s),
            None => ctx.reply.null(),
        }
    } else {
        ctx.reply.int(if f.ch { added + updated } else { added });
    }
    Ok(())
}

fn zrem(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    let mut removed = 0;
    if let Some(z) = zset_write(ctx.store, db, key, None)? {
        for m in argv.iter_from(2) {
            removed += i64::from(z.remove(m).is_some());
            if z.is_empty() {
                break;
            }
        }
        finish_write(ctx.store, db, key, removed > 0);
    }
    if removed > 0 {
        super::pubsub::notify_removed(ctx, b'z', "zrem", key);
    }
    ctx.count_changes(removed as u64);
    ctx.reply.int(removed);
    Ok(())
}

fn zcard(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let n = zset_read(ctx.store, db, argv.get(1))?.map_or(0, ZSet::len);
    ctx.reply.int(n as i64);
    Ok(())
}

fn zscore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    match zset_read(ctx.store, db, argv.get(1))?.and_then(|z| z.score(argv.get(2))) {
        Some(s) => ctx.reply.double(s),
        None => ctx.reply.null(),
    }
    Ok(())
}

fn zmscore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let z = zset_read(ctx.store, db, argv.get(1))?;
    ctx.reply.array(argv.len() - 2);
    for m in argv.iter_from(2) {
        match z.and_then(|z| z.score(m)) {
            Some(s) => ctx.reply.double(s),
            None => ctx.reply.null(),
        }
    }
    Ok(())
}

fn rank_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, rev: bool) -> CmdResult {
    let db = ctx.db();
    let r = zset_read(ctx.store, db, argv.get(1))?.and_then(|z| {
        z.rank(argv.get(2))
            .map(|r| if rev { z.len() - 1 - r } else { r })
    });
    match r {
        Some(r) => ctx.reply.int(r as i64),
        None => ctx.reply.null(),
    }
    Ok(())
}

fn zrank(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    rank_generic(ctx, argv, false)
}

fn zrevrank(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    rank_generic(ctx, argv, true)
}
