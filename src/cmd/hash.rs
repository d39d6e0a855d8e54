//! Hash commands (Redis's `t_hash.c`). Errors are checked in Redis's order
//! (arguments, then the key's type, then values), and a hash whose last
//! field goes is deleted.

use super::args;
use super::coll::{self, finish_write, hash_read, hash_write};
use super::scan::parse_cursor;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::store::hash::Hash;
use crate::util::num::{self, FloatIncrError};

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("hset", hset),
    ("hmset", hmset),
    ("hsetnx", hsetnx),
    ("hget", hget),
    ("hmget", hmget),
    ("hgetall", hgetall),
    ("hkeys", hkeys),
    ("hvals", hvals),
    ("hdel", hdel),
    ("hexists", hexists),
    ("hlen", hlen),
    ("hstrlen", hstrlen),
    ("hincrby", hincrby),
    ("hincrbyfloat", hincrbyfloat),
    ("hrandfield", hrandfield),
    ("hscan", hscan),
];

/// HSET/HMSET: sets field/value pairs; returns how many fields were new.
fn set_pairs(ctx: &mut Ctx<'_>, argv: &Argv<'_>, name: &str) -> Result<i64, Error> {
    if argv.len() % 2 == 1 {
        return Err(Error::WrongArity(name.into()));
    }
    let db = ctx.db();
    let key = argv.get(1);
    let Some(h) = hash_write(ctx.store, db, key, true)? else {
        return Ok(0);
    };
    // Like hashTypeTryConversion: any long argument converts first.
    if let Some(longest) = argv.iter_from(2).map(<[u8]>::len).max() {
        h.fit(longest);
    }
    let mut added = 0;
    let mut i = 2;
    while i + 1 < argv.len() {
        added += i64::from(h.set(argv.get(i), argv.get(i + 1)));
        i += 2;
    }
    finish_write(ctx.store, db, key, true);
    // Every pair counts, new or not (Redis's hsetCommand).
    ctx.count_changes((argv.len() as u64 - 2) / 2);
    Ok(added)
}

fn hset(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let n = set_pairs(ctx, &argv, "hset")?;
    super::pubsub::notify(ctx, b'h', "hset", argv.get(1));
    ctx.reply.int(n);
    Ok(())
}

fn hmset(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    set_pairs(ctx, &argv, "hmset")?;
    super::pubsub::notify(ctx, b'h', "hset", argv.get(1));
    ctx.reply.ok();
    Ok(())
}

fn hsetnx(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    let Some(h) = hash_write(ctx.store, db, key, true)? else {
        return Ok(());
    };
    let added = !h.contains(argv.get(2)) && h.set(argv.get(2), argv.get(3));
    finish_write(ctx.store, db, key, added);
    if added {
        super::pubsub::notify(ctx, b'h', "hset", key);
    }
    ctx.count_changes(u64::from(added));
    ctx.reply.int(i64::from(added));
    Ok(())
}

fn hget(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    match hash_read(ctx.store, db, argv.get(1))?.and_then(|h| h.get(argv.get(2))) {
        Some(v) => ctx.reply.bulk(v),
        None => ctx.reply.null(),
    }
    Ok(())
}

fn hmget(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let h = hash_read(ctx.store, db, argv.get(1))?;
    ctx.reply.array(argv.len() - 2);
    for f in argv.iter_from(2) {
        match h.and_then(|h| h.get(f)) {
            Some(v) => ctx.reply.bulk(v),
            None => ctx.reply.null(),
        }
    }
    Ok(())
}

/// HGETALL/HKEYS/HVALS (Redis's genericHgetallCommand).
fn getall(ctx: &mut Ctx<'_>, argv: Argv<'_>, keys: bool, vals: bool) -> CmdResult {
    let db = ctx.db();
    let h = hash_read(ctx.store, db, argv.get(1))?;
    let n = h.map_or(0, Hash::len);
    if keys && vals {
        ctx.reply.map(n);
    } else {
        ctx.reply.array(n);
    }
    if let Some(h) = h {
        for (f, v) in h.iter() {
            if keys {
                ctx.reply.bulk(f);
            }
            if vals {
                ctx.reply.bulk(v);
            }
        }
    }
    Ok(())
}

fn hgetall(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    getall(ctx, argv, true, true)
}

fn hkeys(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    getall(ctx, argv, true, false)
}

fn hvals(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    getall(ctx, argv, false, true)
}

fn hdel(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    let mut deleted = 0;
    if let Some(h) = hash_write(ctx.store, db, key, false)? {
        for f in argv.iter_from(2) {
            deleted += i64::from(h.remove(f));
            if h.is_empty() {
                break;
            }
        }
        finish_write(ctx.store, db, key, deleted > 0);
    }
    if deleted > 0 {
        super::pubsub::notify_removed(ctx, b'h', "hdel", key);
    }
    ctx.count_changes(deleted as u64);
    ctx.reply.int(deleted);
    Ok(())
}

fn hexists(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let found = hash_read(ctx.store, db, argv.get(1))?.is_some_and(|h| h.contains(argv.get(2)));
    ctx.reply.int(i64::from(found));
    Ok(())
}

fn hlen(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let n = hash_read(ctx.store, db, argv.get(1))?.map_or(0, Hash::len);
    ctx.reply.int(n as i64);
    Ok(())
}

fn hstrlen(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let n = hash_read(ctx.store, db, argv.get(1))?
        .and_then(|h| h.get(argv.get(2)))
        .map_or(0, <[u8]>::len);
    ctx.reply.int(n as i64);
    Ok(())
}

fn hincrby(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let incr = args::int(argv.get(3))?;
    let db = ctx.db();
    let key = argv.get(1);
    let field = argv.get(2);
    let current = match hash_read_for_write(ctx, key)? {
        Some(h) => match h.get(field) {
            Some(v) => Some(num::parse_i64(v).ok_or(Error::err("hash value is not an integer"))?),
            None => None,
        },
        None => None,
    };
    let value = current
        .unwrap_or(0)
        .checked_add(incr)
        .ok_or(Error::Overflow)?;
    let mut buf = num::itoa_buf();
    let text = num::fmt_i64(value, &mut buf);
    if let Some(h) = hash_write(ctx.store, db, key, true)? {
        h.set(field, text);
    }
    finish_write(ctx.store, db, key, true);
    super::pubsub::notify(ctx, b'h', "hincrby", key);
    ctx.count_changes(1);
    ctx.reply.int(value);
    Ok(())
}

/// The hash at `key` through a write lookup (no hit/miss stats), for the
/// read half of a read-modify-write.
fn hash_read_for_write<'a>(ctx: &'a mut Ctx<'_>, key: &[u8]) -> Result<Option<&'a Hash>, Error> {
    let db = ctx.db();
    Ok(hash_write(ctx.store, db, key, false)?.map(|h| &*h))
}

fn hincrbyfloat(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let incr = argv.get(3);
    // The increment alone: not a number, or NaN/infinite (0 + inf).
    match num::incr_by_float(Some(b"0"), incr) {
        Ok(_) => {}
        Err(FloatIncrError::NanOrInfinity) => return Err(Error::err("value is NaN or Infinity")),
        Err(_) => return Err(Error::NotFloat),
    }
    let db = ctx.db();
    let key = argv.get(1);
    let field = argv.get(2);
    let current = hash_read_for_write(ctx, key)?.and_then(|h| h.get(field).map(<[u8]>::to_vec));
    let value = match num::incr_by_float(current.as_deref(), incr) {
        Ok(v) => v,
        Err(FloatIncrError::NotFloatValue) => return Err(Error::err("hash value is not a float")),
        Err(FloatIncrError::NanOrInfinity) => {
            return Err(Error::err("increment would produce NaN or Infinity"))
        }
        Err(FloatIncrError::NotFloatIncrement) => return Err(Error::NotFloat),
    };
    if let Some(h) = hash_write(ctx.store, db, key, true)? {
        h.set(field, &value);
    }
    finish_write(ctx.store, db, key, true);
    super::pubsub::notify(ctx, b'h', "hincrbyfloat", key);
    ctx.count_changes(1);
    // Replicas and the AOF get the result, not the increment, so float
    // formatting can never make them differ (Redis's hincrbyfloatCommand).
    ctx.propagate_as(&[b"HSET", key, field, &value]);
    ctx.reply.bulk(&value);
    Ok(())
}

fn hrandfield(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    if argv.len() == 2 {
        match hash_read(ctx.store, db, argv.get(1))?.and_then(|h| h.random(coll::rnd())) {
            Some((f, _)) => ctx.reply.bulk(f),
            None => ctx.reply.null(),
        }
        return Ok(());
    }
    let count = coll::random_count(argv.get(2))?;
    let withvalues = match argv.len() {
        3 => false,
        4 if args::is(argv.get(3), "withvalues") => true,
        _ => return Err(Error::Syntax),
    };
    if withvalues && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(Error::err("value is out of range"));
    }
    let Some(h) = hash_read(ctx.store, db, argv.get(1))? else {
        ctx.reply.array(0);
        return Ok(());
    };
    let resp3 = ctx.reply.is_resp3();
    let pairs = withvalues && resp3;
    // RESP2 flattens field/value pairs; RESP3 nests each pair.
    let width = if withvalues && !resp3 { 2 } else { 1 };
    let emit = |reply: &mut ReplyBuf<'_>, f: &[u8], v: &[u8]| {
        if pairs {
            reply.array(2);
        }
        reply.bulk(f);
        if withvalues {
            reply.bulk(v);
        }
    };
    if count < 0 {
        // Repeats allowed: independent draws.
        let n = count.unsigned_abs() as usize;
        ctx.reply.array(n * width);
        for _ in 0..n {
            if let Some((f, v)) = h.random(coll::rnd()) {
                emit(&mut ctx.reply, f, v);
            }
        }
    } else if count as usize >= h.len() {
        // The whole hash (Redis's case 1).
        ctx.reply.array(h.len() * width);
        for (f, v) in h.iter() {
            emit(&mut ctx.reply, f, v);
        }
    } else {
        let picked = distinct_sample(h, count as usize);
        ctx.reply.array(picked.len() * width);
        for (f, v) in picked {
            emit(&mut ctx.reply, f, v);
        }
    }
    Ok(())
}

/// `count` distinct random pairs of `h` (count < len): a partial shuffle of
/// all pairs when count is a large share, else random draws until enough
/// distinct ones are found (Redis's cases 3 and 4).
fn distinct_sample(h: &Hash, count: usize) -> Vec<(&[u8], &[u8])> {
    if count * 3 > h.len() || h.is_listpack() {
        let mut all: Vec<(&[u8], &[u8])> = h.iter().collect();
        for i in 0..count {
            let j = i + (coll::rnd() % (all.len() - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(count);
        return all;
    }
    let mut seen = std::collections::HashSet::with_capacity(count);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        if let Some((f, v)) = h.random(coll::rnd()) {
            if seen.insert(f) {
                out.push((f, v));
            }
        }
    }
    out
}

fn hscan(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let cursor = parse_cursor(argv.get(2)).ok_or(Error::err("invalid cursor"))?;
    let db = ctx.db();
    let Some(h) = hash_read(ctx.store, db, argv.get(1))? else {
        ctx.reply.array(2);
        ctx.reply.bulk(b"0");
        ctx.reply.array(0);
        return Ok(());
    };
    let opts = coll::scan_opts(&argv)?;
    let mut found: Vec<(&[u8], &[u8])> = Vec::new();
    let next = match h {
        // A listpack is returned whole in one call, as Redis does.
        Hash::Listpack(_) => {
            found.extend(h.iter());
            0
        }
        Hash::Table(m) => m.scan(cursor, opts.count, |f, v| found.push((f, v.as_slice()))),
    };
    found.retain(|(f, _)| opts.matches(f));
    ctx.reply.array(2);
    ctx.reply.bulk_i64(next as i64);
    ctx.reply.array(found.len() * 2);
    for (f, v) in found {
        ctx.reply.bulk(f);
        ctx.reply.bulk(v);
    }
    Ok(())
}
