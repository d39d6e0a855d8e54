//! Transaction commands (Redis's `multi.c` commands): MULTI, EXEC, DISCARD,
//! WATCH, UNWATCH. Queueing happens in the dispatcher (`exec/call.rs`);
//! the queue and its execution are `exec/multi.rs`; the WATCH registry is
//! `store/watch.rs`.

use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::server::multi;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("multi", multi_cmd),
    ("exec", exec),
    ("discard", discard),
    ("watch", watch),
    ("unwatch", unwatch),
];

fn multi_cmd(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    if ctx.client.multi.is_some() {
        // A plain error: it does not flag the transaction.
        return Err(Error::err("MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(Box::default());
    ctx.reply.ok();
    Ok(())
}

fn exec(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let Some(m) = ctx.client.multi.as_ref() else {
        return Err(Error::err("EXEC without MULTI"));
    };
    let id = ctx.client.id;
    let dirty_exec = m.dirty_exec;
    // A watched key that expired since WATCH counts as changed, though
    // nothing deleted it yet (Redis 7.0 isWatchedKeyExpired).
    if ctx.store.watched_key_expired(id) {
        ctx.store.watches.mark_dirty(id);
    }
    if dirty_exec {
        multi::discard_transaction(ctx.client, ctx.store);
        return Err(Error::ExecAbort);
    }
    if ctx.store.watches.is_dirty(id) {
        multi::discard_transaction(ctx.client, ctx.store);
        ctx.reply.null_array();
        return Ok(());
    }
    multi::run_queue(ctx.store, ctx.server, ctx.client, ctx.reply.raw())
}

fn discard(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    if ctx.client.multi.is_none() {
        return Err(Error::err("DISCARD without MULTI"));
    }
    multi::discard_transaction(ctx.client, ctx.store);
    ctx.reply.ok();
    Ok(())
}

fn watch(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if ctx.client.multi.is_some() {
        // A plain error: it does not flag the transaction.
        return Err(Error::err("WATCH inside MULTI is not allowed"));
    }
    let id = ctx.client.id;
    // Once dirty, the next EXEC fails anyway: no point in watching more.
    if !ctx.store.watches.is_dirty(id) {
        let db = ctx.db();
        for key in argv.iter_from(1) {
            ctx.store.watch_key(id, db, key);
        }
    }
    ctx.reply.ok();
    Ok(())
}

fn unwatch(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.store.watches.unwatch_all(ctx.client.id);
    ctx.reply.ok();
    Ok(())
}
