//! Server commands: INFO, DBSIZE, FLUSHDB/FLUSHALL, TIME, SHUTDOWN,
//! LASTSAVE. CONFIG lives in `config.rs`, the INFO text in `info.rs`.

use super::args::is;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::server::blocking::{BlockRequest, WaitKind};

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("info", info),
    ("dbsize", dbsize),
    ("flushdb", flushdb),
    ("flushall", flushall),
    ("time", time),
    ("shutdown", shutdown),
    ("lastsave", lastsave),
];

fn info(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let args: Vec<Vec<u8>> = argv.iter_from(1).map(<[u8]>::to_vec).collect();
    let text = super::info::generate(ctx, &args);
    ctx.reply.verbatim(text.as_bytes());
    Ok(())
}

fn dbsize(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let n = ctx.store.dbs[ctx.db()].len();
    ctx.reply.int(n as i64);
    Ok(())
}

/// FLUSHDB/FLUSHALL's optional ASYNC|SYNC (getFlushCommandFlags); without
/// one, `lazyfree-lazy-user-flush` decides.
fn flush_async(ctx: &Ctx<'_>, argv: &Argv<'_>) -> Result<bool, Error> {
    match argv.len() {
        1 => Ok(ctx.server.config.get_bool("lazyfree-lazy-user-flush")),
        2 if is(argv.get(1), "async") => Ok(true),
        2 if is(argv.get(1), "sync") => Ok(false),
        _ => Err(Error::Syntax),
    }
}

/// Frees flushed databases, on the lazy-free thread for ASYNC (Redis's
/// emptyDbAsync), so a big keyspace does not stall the executor.
fn dispose(old: Vec<crate::store::dict::Dict>, lazy: bool) {
    crate::store::lazyfree::free_dicts(old, lazy);
}

fn flushdb(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let lazy = flush_async(ctx, &argv)?;
    let db = ctx.db();
    let old = ctx.store.flush_db(db);
    dispose(vec![old], lazy);
    // Replicas and the AOF get it even when the database was empty.
    ctx.force_propagation();
    ctx.reply.ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let lazy = flush_async(ctx, &argv)?;
    let old = ctx.store.flush_all();
    dispose(old, lazy);
    kill_snapshots(ctx);
    // With save rules set, the empty data set is saved at once (the dirty
    // counter back to 0), as Redis's flushAllDataAndResetRDB does; a
    // failure is logged, the flush stands.
    let mut p = ctx.server.persistence();
    if !p.config.save.is_empty() {
        let _ = crate::persist::save_now(ctx.store, &mut p);
    }
    ctx.force_propagation();
    ctx.reply.ok();
    Ok(())
}

/// FLUSHALL kills the RDB child (Redis's flushAllDataAndResetRDB): a
/// background save, or a snapshot for replicas, whose replicas are
/// dropped and sync again from the empty data set.
fn kill_snapshots(ctx: &mut Ctx<'_>) {
    crate::persist::cancel_bgsave(&mut ctx.server.persistence());
    if ctx.server.repl.snapshot.take().is_none() {
        return;
    }
    let waiting: Vec<u64> = (ctx.server.repl.replicas.iter())
        .filter(|r| r.state == crate::server::repl::ReplicaState::WaitSnapshotEnd)
        .map(|r| r.client_id)
        .collect();
    for id in waiting {
        tracing::warn!("SYNC failed. BGSAVE child returned an error");
        ctx.server.kill_client(id);
        ctx.server.repl.forget(id);
    }
}

fn time(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let now_us = crate::util::clock::now_us();
    ctx.reply.array(2);
    ctx.reply.bulk_i64((now_us / 1_000_000) as i64);
    ctx.reply.bulk_i64((now_us % 1_000_000) as i64);
    Ok(())
}

fn lastsave(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.int(ctx.server.persist.last_save as i64);
    Ok(())
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT] (shutdownCommand). The
/// caller blocks while the shutdown waits for lagging replicas
/// (`server/shutdown.rs`); on success nothing is replied: the executor
/// stops after this command, the connections close and the binary exits
/// 0. On failure the caller gets `ERR Errors trying to SHUTDOWN`.
fn shutdown(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut flags = crate::server::shutdown::Flags::default();
    let mut abort = false;
    for a in argv.iter_from(1) {
        if is(a, "nosave") {
            flags.nosave = true;
        } else if is(a, "save") {
            flags.save = true;
        } else if is(a, "now") {
            flags.now = true;
        } else if is(a, "force") {
            flags.force = true;
        } else if is(a, "abort") {
            abort = true;
        } else {
            return Err(Error::Syntax);
        }
    }
    let any_flag = flags != crate::server::shutdown::Flags::default();
    if (abort && any_flag) || (flags.nosave && flags.save) {
        return Err(Error::Syntax);
    }
    if abort {
        if !crate::server::shutdown::abort(ctx.server) {
            return Err(Error::err("No shutdown in progress."));
        }
        ctx.reply.ok();
        return Ok(());
    }
    if !flags.now && ctx.client.deny_blocking {
        return Err(Error::err(
            "SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client",
        ));
    }
    if let Some(run) = &ctx.server.running_script {
        // Only the busy loop runs commands while a script runs: there,
        // only NOSAVE may stop the server, and it stops the script too.
        if !flags.nosave {
            return Err(ctx.server.busy_error());
        }
        run.killed.set(true);
        tracing::warn!("User requested shutdown...");
        ctx.server.shutdown_save_done = true;
        ctx.server.shutdown = true;
        return Ok(());
    }
    use crate::server::shutdown::Outcome;
    match crate::server::shutdown::prepare(ctx.store, ctx.server, flags) {
        // No reply: the caller's connection closes with the others once
        // the listening sockets are closed, as Redis exits (a client that
        // connects after seeing its link closed is refused).
        Outcome::Done => Ok(()),
        Outcome::Waiting => {
            ctx.server.blocking.pending = Some(BlockRequest {
                db: ctx.client.db,
                keys: Vec::new(),
                deadline: 0,
                kind: WaitKind::Shutdown,
                rerun: None,
            });
            Ok(())
        }
        Outcome::Failed => Err(Error::err("Errors trying to SHUTDOWN. Check logs.")),
    }
}
