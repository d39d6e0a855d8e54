//! Set commands (Redis's `t_set.c`): membership, SPOP/SRANDMEMBER, SMOVE
//! and SSCAN here; the multi-key algebra (SINTER, SUNION, SDIFF, their
//! STORE forms and SINTERCARD) in `set/algebra.rs`.

mod algebra;

use super::args;
use super::coll::{self, finish_write, set_read, set_sample, set_write};
use super::scan::parse_cursor;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::store::set::{Member, Set};

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("sadd", sadd),
    ("srem", srem),
    ("smembers", algebra::sinter),
    ("sismember", sismember),
    ("smismember", smismember),
    ("scard", scard),
    ("spop", spop),
    ("srandmember", srandmember),
    ("smove", smove),
    ("sinter", algebra::sinter),
    ("sinterstore", algebra::sinterstore),
    ("sintercard", algebra::sintercard),
    ("sunion", algebra::sunion),
    ("sunionstore", algebra::sunionstore),
    ("sdiff", algebra::sdiff),
    ("sdiffstore", algebra::sdiffstore),
    ("sscan", sscan),
];

/// Writes a member as a bulk string.
fn bulk_member(reply: &mut ReplyBuf<'_>, m: Member<'_>) {
    match m {
        Member::Bytes(b) => reply.bulk(b),
        Member::Int(n) => reply.bulk_i64(n),
    }
}

fn sadd(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    let mut added = 0;
    if let Some(s) = set_write(ctx.store, db, key, true)? {
        for m in argv.iter_from(2) {
            added += i64::from(s.add(m));
        }
    }
    finish_write(ctx.store, db, key, added > 0);
    if added > 0 {
        super::pubsub::notify(ctx, b's', "sadd", key);
    }
    ctx.count_changes(added as u64);
    ctx.reply.int(added);
    Ok(())
}

fn srem(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    let mut removed = 0;
    if let Some(s) = set_write(ctx.store, db, key, false)? {
        for m in argv.iter_from(2) {
            removed += i64::from(s.remove(m));
            if s.is_empty() {
                break;
            }
        }
        finish_write(ctx.store, db, key, removed > 0);
    }
    if removed > 0 {
        super::pubsub::notify_removed(ctx, b's', "srem", key);
    }
    ctx.count_changes(removed as u64);
    ctx.reply.int(removed);
    Ok(())
}

fn sismember(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let found = set_read(ctx.store, db, argv.get(1))?.is_some_and(|s| s.contains(argv.get(2)));
    ctx.reply.int(i64::from(found));
    Ok(())
}

fn smismember(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let s = set_read(ctx.store, db, argv.get(1))?;
    ctx.reply.array(argv.len() - 2);
    for m in argv.iter_from(2) {
        ctx.reply.int(i64::from(s.is_some_and(|s| s.contains(m))));
    }
    Ok(())
}

fn scard(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let n = set_read(ctx.store, db, argv.get(1))?.map_or(0, Set::len);
    ctx.reply.int(n as i64);
    Ok(())
}

/// A random member, after the rehash work of a draw.
fn draw(s: &mut Set) -> Option<Member<'_>> {
    s.rehash_for_draw();
    s.random(coll::rnd())
}

/// `count` distinct random members of `s` (count < len), owned.
fn distinct_sample(s: &mut Set, count: usize) -> Vec<Vec<u8>> {
    if count * 3 > s.len() || matches!(s, Set::Intset(_)) {
        let mut all: Vec<Member<'_>> = s.iter().collect();
        for i in 0..count {
            let j = i + (coll::rnd() % (all.len() - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(count);
        return all.iter().map(Member::to_vec).collect();
    }
    let mut seen = std::collections::HashSet::with_capacity(count);
    while seen.len() < count {
        if let Some(m) = draw(s) {
            seen.insert(m.to_vec());
        }
    }
    seen.into_iter().collect()
}

fn spop(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    let count = match argv.len() {
        2 => None,
        3 => match args::int(argv.get(2)) {
            Ok(n) if n >= 0 => Some(n as usize),
            _ => return Err(Error::NotPositive),
        },
        _ => return Err(Error::Syntax),
    };
    let Some(s) = set_write(ctx.store, db, key, false)? else {
        match count {
            None => ctx.reply.null(),
            Some(_) => ctx.reply.set(0),
        }
        return Ok(());
    };
    match count {
        None => {
            let m = draw(s).map(|m| m.to_vec());
            if let Some(m) = &m {
                s.remove(m);
                ctx.reply.bulk(m);
                // The random choice reaches the AOF as made.
                ctx.propagate_as(&[b"SREM", key, m]);
            } else {
                ctx.reply.null();
            }
        }
        Some(0) => {
            ctx.reply.set(0);
            return Ok(());
        }
        Some(n) if n >= s.len() => {
            // Everything, in the set's own order; the key goes.
            let size = s.len();
            ctx.reply.set(size);
            for m in s.iter() {
                bulk_member(&mut ctx.reply, m);
            }
            ctx.count_changes(size as u64);
            ctx.store.delete(db, key);
            ctx.propagate_as(&[b"DEL", key]);
            super::pubsub::notify_removed(ctx, b's', "spop", key);
            return Ok(());
        }
        Some(n) => {
            let picked = distinct_sample(s, n);
            ctx.reply.set(picked.len());
            for m in &picked {
                s.remove(m);
                ctx.reply.bulk(m);
            }
            // As SREMs of the members popped, 1024 a command (Redis's
            // SPOP_MOVE batches).
            if ctx.propagating() {
                for batch in picked.chunks(1024) {
                    let mut args: Vec<&[u8]> = vec![b"SREM", key];
                    args.extend(batch.iter().map(Vec::as_slice));
                    ctx.also_propagate(&args);
                }
            }
            ctx.prevent_propagation();
            ctx.count_changes(picked.len() as u64);
        }
    }
    finish_write(ctx.store, db, key, true);
    super::pubsub::notify_removed(ctx, b's', "spop", key);
    Ok(())
}

fn srandmember(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    if argv.len() == 2 {
        match set_sample(ctx.store, db, argv.get(1))?.and_then(draw) {
            Some(m) => bulk_member(&mut ctx.reply, m),
            None => ctx.reply.null(),
        }
        return Ok(());
    }
    if argv.len() > 3 {
        return Err(Error::Syntax);
    }
    let count = coll::random_count(argv.get(2))?;
    let Some(s) = set_sample(ctx.store, db, argv.get(1))? else {
        ctx.reply.array(0);
        return Ok(());
    };
    if count < 0 {
        let n = count.unsigned_abs() as usize;
        ctx.reply.array(n);
        for _ in 0..n {
            if let Some(m) = draw(s) {
                bulk_member(&mut ctx.reply, m);
            }
        }
    } else if count as usize >= s.len() {
        ctx.reply.array(s.len());
        for m in s.iter() {
            bulk_member(&mut ctx.reply, m);
        }
    } else {
        let picked = distinct_sample(s, count as usize);
        ctx.reply.array(picked.len());
        for m in &picked {
            ctx.reply.bulk(m);
        }
    }
    Ok(())
}

fn smove(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let (src, dst, member) = (argv.get(1), argv.get(2), argv.get(3));
    let src_type = ctx.store.get(db, src).map(|e| e.set().is_some());
    let dst_type = ctx.store.get(db, dst).map(|e| e.set().is_some());
    match (src_type, dst_type) {
        (None, _) => {
            ctx.reply.int(0);
            return Ok(());
        }
        (Some(false), _) | (_, Some(false)) => return Err(Error::WrongType),
        _ => {}
    }
    if src == dst {
        // Redis looks both keys up for writing: no keyspace hit is counted.
        let found = ctx
            .store
            .get(db, src)
            .and_then(|e| e.set().map(|s| s.contains(member)))
            .unwrap_or(false);
        ctx.reply.int(i64::from(found));
        return Ok(());
    }
    let removed = set_write(ctx.store, db, src, false)?.is_some_and(|s| s.remove(member));
    if !removed {
        ctx.reply.int(0);
        return Ok(());
    }
    finish_write(ctx.store, db, src, true);
    super::pubsub::notify_removed(ctx, b's', "srem", src);
    let added = set_write(ctx.store, db, dst, true)?.is_some_and(|s| s.add(member));
    // A member already in the destination leaves it untouched: no WATCH
    // fires and no event, as in Redis.
    finish_write(ctx.store, db, dst, added);
    if added {
        super::pubsub::notify(ctx, b's', "sadd", dst);
    }
    // The removal, and the addition when there was one (smoveCommand).
    ctx.count_changes(1 + u64::from(added));
    ctx.reply.int(1);
    Ok(())
}

fn sscan(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let cursor = parse_cursor(argv.get(2)).ok_or(Error::err("invalid cursor"))?;
    let db = ctx.db();
    let Some(s) = set_read(ctx.store, db, argv.get(1))? else {
        ctx.reply.array(2);
        ctx.reply.bulk(b"0");
        ctx.reply.array(0);
        return Ok(());
    };
    let opts = coll::scan_opts(&argv)?;
    let mut found: Vec<Member<'_>> = Vec::new();
    let next = s.scan(cursor, opts.count, |m| found.push(m));
    found.retain(|m| m.with(|b| opts.matches(b)));
    ctx.reply.array(2);
    ctx.reply.bulk_i64(next as i64);
    ctx.reply.array(found.len());
    for m in found {
        bulk_member(&mut ctx.reply, m);
    }
    Ok(())
}
