//! Blocking list commands (the blocking half of Redis's `t_list.c`): BLPOP,
//! BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, plus CLIENT UNBLOCK.
//!
//! Each first tries to act like its non-blocking form. When every key is
//! empty it records a block request for the executor (`exec/blocking.rs`),
//! which parks the client and runs the command again once a key it waits
//! on holds a list. Inside MULTI/EXEC and scripts (`client.deny_blocking`)
//! an empty result is answered at once instead, as in Redis.

use super::args::{self, is};
use super::list::{after_removal, list_mut, lmove_generic, mpop_first, parse_end, parse_mpop};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::net::request::OwnedArgv;
use crate::server::blocking::{BlockRequest, WaitKind};
use crate::store::list::End;
use crate::util::num;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("blpop", blpop),
    ("brpop", brpop),
    ("blmove", blmove),
    ("brpoplpush", brpoplpush),
    ("blmpop", blmpop),
    ("client|unblock", client_unblock),
];

/// Parses a timeout in seconds into an absolute deadline in Unix ms (0 =
/// forever), as Redis 7.0's getTimeoutFromObjectOrReply.
pub(super) fn parse_timeout(arg: &[u8], now_ms: u64) -> Result<u64, Error> {
    let ms = num::timeout_ms(arg).ok_or(Error::err("timeout is not a float or out of range"))?;
    if ms < 0 {
        return Err(Error::err("timeout is negative"));
    }
    Ok(if ms == 0 {
        0
    } else {
        now_ms.saturating_add(ms as u64)
    })
}

/// Asks the executor to park the client on `keys` until one holds `kind`
/// of value; then the command runs again (`rerun`, or as sent).
pub(super) fn block(
    ctx: &mut Ctx<'_>,
    keys: impl Iterator<Item = Vec<u8>>,
    deadline: u64,
    kind: WaitKind,
    rerun: Option<OwnedArgv>,
) {
    let mut uniq: Vec<Vec<u8>> = Vec::new();
    for k in keys {
        if !uniq.contains(&k) {
            uniq.push(k);
        }
    }
    ctx.server.blocking.pending = Some(BlockRequest {
        db: ctx.db(),
        keys: uniq,
        deadline,
        kind,
        rerun,
    });
}

/// A BLPOP, BRPOP, BLMOVE or BRPOPLPUSH served after blocking is still
/// propagated but counts no change towards the next save, as Redis 7.0's
/// serveClientBlockedOnList (BLMPOP's served pops count, as at once).
fn served_uncounted(ctx: &mut Ctx<'_>) {
    if ctx.client.reprocessing {
        ctx.count_changes(0);
        ctx.force_propagation();
    }
}

/// BLPOP/BRPOP (blockingPopGenericCommand).
fn bpop(ctx: &mut Ctx<'_>, argv: Argv<'_>, end: End) -> CmdResult {
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
        if let Some(l) = list_mut(ctx.store, db, key)? {
            if let Some(v) = l.peek(end) {
                ctx.reply.array(2);
                ctx.reply.bulk(key);
                ctx.reply.bulk(v);
                l.drop_end(end);
                after_removal(ctx.store, db, key);
                // Replayed as the pop it was, never as a blocking command.
                let pop: &[u8] = if end == End::Left { b"LPOP" } else { b"RPOP" };
                ctx.propagate_as(&[pop, key]);
                served_uncounted(ctx);
                super::pubsub::notify_removed(ctx, b'l', pop_event(end), key);
                return Ok(());
            }
        }
    }
    if ctx.client.deny_blocking {
        ctx.reply.null_array();
        return Ok(());
    }
    let keys = (1..last).map(|j| argv.get(j).to_vec());
    block(ctx, keys, deadline, WaitKind::List, None);
    Ok(())
}

fn blpop(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    bpop(ctx, argv, End::Left)
}

fn brpop(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    bpop(ctx, argv, End::Right)
}

/// BLMOVE/BRPOPLPUSH once ends and timeout are parsed
/// (blmoveGenericCommand).
fn blmove_generic(
    ctx: &mut Ctx<'_>,
    argv: Argv<'_>,
    from: End,
    to: End,
    deadline: u64,
) -> CmdResult {
    let db = ctx.db();
    if list_mut(ctx.store, db, argv.get(1))?.is_some() {
        lmove_generic(ctx, argv, from, to)?;
        // Replayed as LMOVE or RPOPLPUSH, never as a blocking command.
        let (src, dst) = (argv.get(1), argv.get(2));
        if is(argv.get(0), "brpoplpush") {
            ctx.propagate_as(&[b"RPOPLPUSH", src, dst]);
        } else if ctx.client.reprocessing {
            // Served after blocking, Redis writes the ends in lowercase.
            let word = |e: End| -> &'static [u8] {
                if e == End::Left {
                    b"left"
                } else {
                    b"right"
                }
            };
            ctx.propagate_as(&[b"LMOVE", src, dst, word(from), word(to)]);
        } else {
            ctx.propagate_as(&[b"LMOVE", src, dst, argv.get(3), argv.get(4)]);
        }
        served_uncounted(ctx);
        return Ok(());
    }
    if ctx.client.deny_blocking {
        ctx.reply.null();
        return Ok(());
    }
    let key = std::iter::once(argv.get(1).to_vec());
    block(ctx, key, deadline, WaitKind::List, None);
    Ok(())
}

fn blmove(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let from = parse_end(argv.get(3))?;
    let to = parse_end(argv.get(4))?;
    let deadline = parse_timeout(argv.get(5), ctx.store.now())?;
    blmove_generic(ctx, argv, from, to, deadline)
}

fn brpoplpush(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let deadline = parse_timeout(argv.get(3), ctx.store.now())?;
    blmove_generic(ctx, argv, End::Right, End::Left, deadline)
}

fn blmpop(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let deadline = parse_timeout(argv.get(1), ctx.store.now())?;
    let a = parse_mpop(argv, 2)?;
    if mpop_first(ctx, argv, &a)? {
        return Ok(());
    }
    if ctx.client.deny_blocking {
        ctx.reply.null_array();
        return Ok(());
    }
    let keys = (a.first_key..a.first_key + a.numkeys).map(|j| argv.get(j).to_vec());
    block(ctx, keys, deadline, WaitKind::List, None);
    Ok(())
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: answers a blocked client as if it
/// timed out, or with an UNBLOCKED error.
fn client_unblock(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 4 {
        // Redis echoes the subcommand as the client typed it.
        return Err(Error::subcommand_arity(argv.get(1), "CLIENT"));
    }
    let mut error = false;
    if let Some(reason) = argv.try_get(3) {
        if is(reason, "error") {
            error = true;
        } else if !is(reason, "timeout") {
            return Err(Error::err(
                "CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ));
        }
    }
    let id = args::int(argv.get(2))?;
    let target = u64::try_from(id).ok();
    // A SHUTDOWN caller waits for the shutdown's own outcome.
    let shutdown = target.is_some_and(|t| {
        ctx.server
            .blocking
            .parked
            .get(&t)
            .is_some_and(|p| p.req.kind == crate::server::blocking::WaitKind::Shutdown)
    });
    let parked = target
        .filter(|_| !shutdown)
        .and_then(|t| ctx.server.blocking.unblock(t));
    let (Some(t), Some(mut p)) = (target, parked) else {
        ctx.reply.int(0);
        return Ok(());
    };
    let resp3 = ctx.server.clients.get(&t).is_some_and(|c| c.resp3);
    let mut r = ReplyBuf::new(&mut p.out, resp3);
    if error {
        r.error(&Error::raw("UNBLOCKED client unblocked via CLIENT UNBLOCK"));
    } else {
        r.null_array();
    }
    ctx.server.count_unblocked(t, p.command(), error);
    ctx.server.blocking.finish(t, p);
    ctx.reply.int(1);
    Ok(())
}

/// The events of a list move, in Redis's order: the push on `dst`, the
/// pop on `src`, `del` when `src` emptied.
pub(super) fn notify_move(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], from: End, to: End) {
    let push = if to == End::Left { "lpush" } else { "rpush" };
    super::pubsub::notify(ctx, b'l', push, dst);
    super::pubsub::notify_removed(ctx, b'l', pop_event(from), src);
}

/// `lpop` or `rpop`.
pub(crate) fn pop_event(end: End) -> &'static str {
    if end == End::Left {
        "lpop"
    } else {
        "rpop"
    }
}
