//! Multi-key set algebra (Redis's sinterGenericCommand and
//! sunionDiffGenericCommand). Every key is type-checked before anything
//! is computed; a missing key is an empty set. Results are built as a set
//! that starts as an intset, exactly as Redis builds its destination set,
//! so the reply order matches Redis whenever the result is an intset.

use super::super::args;
use super::super::{Argv, Ctx};
use super::bulk_member;
use crate::error::{CmdResult, Error};
use crate::store::set::Set;
use crate::store::value::Value;
use crate::store::{Store, Ttl};

/// Looks up every key (expiring as needed), then returns shared views of
/// the sets: None for a missing key, WRONGTYPE if any key is not a set.
fn load<'a>(
    store: &'a mut Store,
    db: usize,
    keys: &[&[u8]],
) -> Result<Vec<Option<&'a Set>>, Error> {
    for k in keys {
        if let Some(e) = store.get_read(db, k) {
            if e.set().is_none() {
                return Err(Error::WrongType);
            }
        }
    }
    let store: &'a Store = store;
    Ok(keys
        .iter()
        .map(|k| store.peek(db, k).and_then(|e| e.set()))
        .collect())
}

/// The intersection of `sets`, stopping after `limit` members (0 = all).
fn intersect(sets: &[Option<&Set>], limit: usize) -> Set {
    let mut out = Set::default();
    let Some(mut all) = sets.iter().copied().collect::<Option<Vec<&Set>>>() else {
        return out;
    };
    if all.is_empty() {
        return out;
    }
    // Smallest first, as Redis does: fewest membership checks.
    all.sort_by_key(|s| s.len());
    for m in all[0].iter() {
        if m.with(|b| all[1..].iter().all(|s| s.contains(b))) {
            m.with(|b| out.add(b));
            if limit != 0 && out.len() >= limit {
                break;
            }
        }
    }
    out
}

/// The union of `sets`.
fn union(sets: &[Option<&Set>]) -> Set {
    let mut out = Set::default();
    for s in sets.iter().flatten() {
        for m in s.iter() {
            m.with(|b| out.add(b));
        }
    }
    out
}

/// The first set minus all the others.
fn diff(sets: &[Option<&Set>]) -> Set {
    let mut out = Set::default();
    let Some(Some(first)) = sets.first() else {
        return out;
    };
    for m in first.iter() {
        if m.with(|b| !sets[1..].iter().flatten().any(|s| s.contains(b))) {
            m.with(|b| out.add(b));
        }
    }
    out
}

/// Replies with a computed set (RESP3 set type).
fn reply_set(ctx: &mut Ctx<'_>, s: &Set) {
    ctx.reply.set(s.len());
    for m in s.iter() {
        bulk_member(&mut ctx.reply, m);
    }
}

/// Stores a computed set at `dst` (replacing whatever was there, TTL
/// included) or deletes `dst` when the result is empty; replies its size.
/// `event` (`sinterstore`...) is announced for a stored result, `del` for
/// a removed destination.
fn store_result(ctx: &mut Ctx<'_>, dst: &[u8], s: Set, event: &str) {
    let db = ctx.db();
    let n = s.len();
    ctx.reply.int(n as i64);
    if n == 0 {
        if ctx.store.delete_destination(db, dst) {
            crate::cmd::pubsub::notify(ctx, b'g', "del", dst);
        }
    } else {
        ctx.store.set(db, dst, Value::Set(s), Ttl::None);
        crate::cmd::pubsub::notify(ctx, b's', event, dst);
    }
}

/// The keys `argv[from..]` as a vector of slices.
fn keys<'a>(argv: &Argv<'a>, from: usize) -> Vec<&'a [u8]> {
    argv.iter_from(from).collect()
}

/// SINTER key... (and SMEMBERS key).
pub(super) fn sinter(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let ks = keys(&argv, 1);
    let sets = load(ctx.store, db, &ks)?;
    if let [Some(only)] = sets[..] {
        // One set: reply straight from it.
        ctx.reply.set(only.len());
        for m in only.iter() {
            bulk_member(&mut ctx.reply, m);
        }
        return Ok(());
    }
    let out = intersect(&sets, 0);
    reply_set(ctx, &out);
    Ok(())
}

pub(super) fn sinterstore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let ks = keys(&argv, 2);
    let out = intersect(&load(ctx.store, db, &ks)?, 0);
    store_result(ctx, argv.get(1), out, "sinterstore");
    Ok(())
}

/// SINTERCARD numkeys key... [LIMIT limit].
pub(super) fn sintercard(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let numkeys = match args::int(argv.get(1)) {
        Ok(n) if n > 0 => n as usize,
        _ => return Err(Error::err("numkeys should be greater than 0")),
    };
    if numkeys > argv.len() - 2 {
        return Err(Error::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    let mut limit = 0usize;
    let mut i = 2 + numkeys;
    while i < argv.len() {
        if args::is(argv.get(i), "limit") && i + 1 < argv.len() {
            limit = match args::int(argv.get(i + 1)) {
                Ok(n) if n >= 0 => n as usize,
                _ => return Err(Error::err("LIMIT can't be negative")),
            };
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let db = ctx.db();
    let ks: Vec<&[u8]> = (2..2 + numkeys).map(|j| argv.get(j)).collect();
    let n = intersect(&load(ctx.store, db, &ks)?, limit).len();
    ctx.reply.int(n as i64);
    Ok(())
}

pub(super) fn sunion(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let ks = keys(&argv, 1);
    let out = union(&load(ctx.store, db, &ks)?);
    reply_set(ctx, &out);
    Ok(())
}

pub(super) fn sunionstore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let ks = keys(&argv, 2);
    let out = union(&load(ctx.store, db, &ks)?);
    store_result(ctx, argv.get(1), out, "sunionstore");
    Ok(())
}

pub(super) fn sdiff(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let ks = keys(&argv, 1);
    let out = diff(&load(ctx.store, db, &ks)?);
    reply_set(ctx, &out);
    Ok(())
}

pub(super) fn sdiffstore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let ks = keys(&argv, 2);
    let out = diff(&load(ctx.store, db, &ks)?);
    store_result(ctx, argv.get(1), out, "sdiffstore");
    Ok(())
}
