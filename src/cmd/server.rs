//! Server commands: INFO, DBSIZE, FLUSHDB/FLUSHALL, TIME, SHUTDOWN,
//! LASTSAVE. CONFIG lives in `config.rs`, the INFO text in `info.rs`.

use super::args::is;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};

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

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT] (shutdownCommand). On
/// success nothing is replied: the executor stops after this command, the
/// connections close and the binary exits 0.
fn shutdown(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (mut nosave, mut save, mut now, mut force, mut abort) = (false, false, false, false, false);
    for a in argv.iter_from(1) {
        if is(a, "nosave") {
            nosave = true;
        } else if is(a, "save") {
            save = true;
        } else if is(a, "now") {
            now = true;
        } else if is(a, "force") {
            force = true;
        } else if is(a, "abort") {
            abort = true;
        } else {
            return Err(Error::Syntax);
        }
    }
    let any_flag = nosave || save || now || force;
    if (abort && any_flag) || (nosave && save) {
        return Err(Error::Syntax);
    }
    if ctx.server.loading {
        // Half a data set is never saved.
        (nosave, save) = (true, false);
    }
    if abort {
        // Only a signal's shutdown waits (for the cron) to be aborted.
        if ctx.server.shutdown_asap.take().is_none() {
            return Err(Error::err("No shutdown in progress."));
        }
        ctx.server
            .shared
            .shutdown_asap
            .store(false, std::sync::atomic::Ordering::SeqCst);
        tracing::info!("Shutdown manually aborted.");
        ctx.reply.ok();
        return Ok(());
    }
    if !now && ctx.client.deny_blocking {
        return Err(Error::err(
            "SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client",
        ));
    }
    if let Some(run) = &ctx.server.running_script {
        // Only the busy loop runs commands while a script runs: there,
        // only NOSAVE may stop the server, and it stops the script too.
        if !nosave {
            return Err(ctx.server.busy_error());
        }
        run.killed.set(true);
        tracing::warn!("User requested shutdown...");
        ctx.server.shutdown_save_done = true;
        ctx.server.shutdown = true;
        ctx.client.close_after_reply = true;
        return Ok(());
    }
    tracing::warn!("User requested shutdown...");
    if let Err(e) =
        crate::persist::save_on_shutdown(ctx.store, &mut ctx.server.persistence(), save, nosave)
    {
        tracing::warn!("error saving the dataset on shutdown: {e}");
        if !force {
            return Err(Error::err("Errors trying to SHUTDOWN. Check logs."));
        }
    }
    ctx.server.shutdown_save_done = true;
    ctx.server.shutdown = true;
    ctx.client.close_after_reply = true;
    Ok(())
}
