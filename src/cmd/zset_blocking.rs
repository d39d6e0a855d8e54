//! Blocking sorted-set pops (the blocking half of Redis's `t_zset.c`):
//! BZPOPMIN, BZPOPMAX and BZMPOP. They park through the same machinery as
//! the blocking list commands (`exec/blocking.rs`).

use super::coll::{finish_write, zset_write};
use super::list_blocking::{block, parse_timeout};
use super::zset::emit;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::server::blocking::WaitKind;
use crate::store::Store;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("bzpopmin", bzpopmin),
    ("bzpopmax", bzpopmax),
    ("bzmpop", bzmpop),
];

/// Members popped, with their scores.
type Popped = Vec<(Vec<u8>, f64)>;

/// Pops up to `count` members from the sorted set at `key`; None when the
/// key is missing.
fn pop(
    store: &mut Store,
    db: usize,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Popped>, Error> {
    let Some(z) = zset_write(store, db, key, None)? else {
        return Ok(None);
    };
    let n = count.min(z.len());
    let popped: Popped = if max {
        z.iter_rev_from(z.len().saturating_sub(1))
            .take(n)
            .map(|(m, s)| (m.to_vec(), s))
            .collect()
    } else {
        z.iter_from(0)
            .take(n)
            .map(|(m, s)| (m.to_vec(), s))
            .collect()
    };
    for (m, _) in &popped {
        z.remove(m);
    }
    finish_write(store, db, key, !popped.is_empty());
    Ok(Some(popped))
}

/// `[key, member, score]` (BZPOPMIN/BZPOPMAX).
fn reply_one(reply: &mut ReplyBuf<'_>, key: &[u8], popped: &[(Vec<u8>, f64)]) {
    reply.array(3);
    reply.bulk(key);
    if let Some((m, s)) = popped.first() {
        emit(reply, m, *s, true, false);
    }
}

/// `[key, [[member, score]...]]` (BZMPOP, as ZMPOP).
fn reply_many(reply: &mut ReplyBuf<'_>, key: &[u8], popped: &[(Vec<u8>, f64)]) {
    reply.array(2);
    reply.bulk(key);
    reply.array(popped.len());
    for (m, s) in popped {
        emit(reply, m, *s, true, true);
    }
}

/// ZPOPMIN or ZPOPMAX: what a blocking or multi-key pop replays as.
pub(super) fn pop_name(max: bool) -> &'static [u8] {
    if max {
        b"ZPOPMAX"
    } else {
        b"ZPOPMIN"
    }
}

/// Keyspace events of a pop (clients served later are not announced).
fn notify_pop(ctx: &mut Ctx<'_>, key: &[u8], max: bool) {
    let event = if max { "zpopmax" } else { "zpopmin" };
    super::pubsub::notify_removed(ctx, b'z', event, key);
}

/// BZPOPMIN/BZPOPMAX key... timeout (blockingGenericZpopCommand).
fn bzpop(ctx: &mut Ctx<'_>, argv: Argv<'_>, max: bool) -> CmdResult {
    let last = argv.len() - 1;
    let deadline = parse_timeout(argv.get(last), ctx.store.now())?;
    let db = ctx.db();
    for j in 1..last {
        let key = argv.get(j);
        if !ctx
            .server
            .blocking
            .may_serve_from(ctx.client.reprocessing, key)
        {
            continue;
        }
        if let Some(popped) = pop(ctx.store, db, key, max, 1)? {
            notify_pop(ctx, key, max);
            reply_one(&mut ctx.reply, key, &popped);
            ctx.propagate_as(&[pop_name(max), key]);
            return Ok(());
        }
    }
    if ctx.client.deny_blocking {
        ctx.reply.null_array();
        return Ok(());
    }
    let keys = (1..last).map(|j| argv.get(j).to_vec());
    block(ctx, keys, deadline, WaitKind::ZSet, None);
    Ok(())
}

fn bzpopmin(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    bzpop(ctx, argv, false)
}

fn bzpopmax(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    bzpop(ctx, argv, true)
}

/// BZMPOP timeout numkeys key... MIN|MAX [COUNT count].
fn bzmpop(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let deadline = parse_timeout(argv.get(1), ctx.store.now())?;
    let (numkeys, max, count) = super::zset::parse_mpop(argv, 2)?;
    let db = ctx.db();
    for i in 0..numkeys {
        let key = argv.get(3 + i);
        if !ctx
            .server
            .blocking
            .may_serve_from(ctx.client.reprocessing, key)
        {
            continue;
        }
        if let Some(popped) = pop(ctx.store, db, key, max, count)? {
            notify_pop(ctx, key, max);
            reply_many(&mut ctx.reply, key, &popped);
            super::list::propagate_counted(ctx, pop_name(max), key, popped.len());
            ctx.count_changes(popped.len() as u64);
            return Ok(());
        }
    }
    if ctx.client.deny_blocking {
        ctx.reply.null_array();
        return Ok(());
    }
    let keys = (0..numkeys).map(|i| argv.get(3 + i).to_vec());
    block(ctx, keys, deadline, WaitKind::ZSet, None);
    Ok(())
}
