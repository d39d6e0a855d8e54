//! The shutdown sequence (Redis's `prepareForShutdown`, `finishShutdown`,
//! `isReadyToShutdown` and `abortShutdown` in server.c): SHUTDOWN and the
//! signals first let lagging replicas catch up for up to
//! `shutdown-timeout` seconds (writes paused, SHUTDOWN callers blocked),
//! then stop background children, sync the AOF and make the final save.
//! A failure leaves the server running and answers the blocked callers.

use super::blocking::WaitKind;
use super::ServerState;
use crate::error::Error;
use crate::net::reply::ReplyBuf;
use crate::store::Store;
use crate::util::clock;

/// SHUTDOWN's modifiers (Redis's SHUTDOWN_* flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// Save even without save rules.
    pub save: bool,
    /// Do not save even with save rules.
    pub nosave: bool,
    /// Do not wait for lagging replicas.
    pub now: bool,
    /// Exit even when the AOF or the final save fails.
    pub force: bool,
}

impl Flags {
    /// The flags a `shutdown-on-sigint` / `shutdown-on-sigterm` value names
    /// (`default` names none).
    pub fn from_config(value: &str) -> Flags {
        let has = |f: &str| value.split(' ').any(|x| x == f);
        Flags {
            save: has("save"),
            nosave: has("nosave"),
            now: has("now"),
            force: has("force"),
        }
    }
}

/// A shutdown waiting for replicas (Redis's shutdown_mstime with
/// shutdown_flags).
#[derive(Clone, Copy, Debug)]
pub struct Waiting {
    /// Real Unix ms when it goes on whatever the replicas' state.
    pub deadline_ms: u64,
    /// The flags it was asked with.
    pub flags: Flags,
}

/// What [`prepare`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything is done: the server stops after this command.
    Done,
    /// A shutdown waits for replicas (this one, or one already under way).
    Waiting,
    /// It failed (logged); the server keeps running.
    Failed,
}

/// Starts a shutdown (`prepareForShutdown`). While loading, or in the
/// middle of a shutdown already under way, nothing more happens here.
pub fn prepare(store: &mut Store, server: &mut ServerState, mut flags: Flags) -> Outcome {
    if server.shutdown_wait.is_some() {
        return Outcome::Waiting;
    }
    if server.loading {
        // Half a data set is never saved.
        flags.save = false;
        flags.nosave = true;
    }
    tracing::warn!("User requested shutdown...");
    let timeout_s = server.config.get_i64("shutdown-timeout").unwrap_or(10);
    if !flags.now && timeout_s != 0 && !ready(server) {
        let now = clock::real_now_ms();
        server.shutdown_wait = Some(Waiting {
            deadline_ms: now + timeout_s as u64 * 1000,
            flags,
        });
        if !server.pause.active(clock::now_ms()) {
            server.repl.get_ack = true;
        }
        server.pause.shutdown = true;
        tracing::info!("Waiting for replicas before shutting down.");
        return Outcome::Waiting;
    }
    if finish(store, server, flags) {
        Outcome::Done
    } else {
        Outcome::Failed
    }
}

/// True when every replica acknowledged the whole stream
/// (`isReadyToShutdown`).
pub fn ready(server: &ServerState) -> bool {
    let offset = server.repl.offset;
    server.repl.replicas.iter().all(|r| r.ack_offset == offset)
}

/// The cron's step (serverCron): a waiting shutdown goes on once the
/// replicas caught up or its time is up. True when the server now stops.
pub fn cron(store: &mut Store, server: &mut ServerState) -> bool {
    let Some(w) = server.shutdown_wait else {
        return false;
    };
    if clock::real_now_ms() < w.deadline_ms && !ready(server) {
        return false;
    }
    finish(store, server, w.flags)
}

/// SHUTDOWN ABORT (`abortShutdown`): cancels a shutdown waiting for
/// replicas, or a signal's not yet acted on. False when there is none.
pub fn abort(server: &mut ServerState) -> bool {
    if server.shutdown_wait.is_some() {
        cancel(server);
    } else if server.shutdown_asap.take().is_none() {
        return false;
    } else {
        server
            .shared
            .shutdown_asap
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
    tracing::info!("Shutdown manually aborted.");
    true
}

/// The last step (`finishShutdown`): when true the server stops after
/// this command; when false the failure was logged and the shutdown
/// cancelled.
pub fn finish(store: &mut Store, server: &mut ServerState, flags: Flags) -> bool {
    let offset = server.repl.offset;
    let now_s = clock::real_now_ms() / 1000;
    let mut lagging = 0;
    for r in &server.repl.replicas {
        if r.ack_offset != offset {
            lagging += 1;
            let lag = if r.state == super::repl::ReplicaState::Online {
                now_s.saturating_sub(r.ack_ms / 1000)
            } else {
                0
            };
            tracing::warn!(
                "Lagging replica {}:{} reported offset {} behind master, lag={lag}, state={}.",
                r.ip(),
                r.conf.listening_port,
                offset as i64 - r.ack_offset as i64,
                r.state.name()
            );
        }
    }
    let replicas = server.repl.replicas.len();
    if replicas > 0 {
        tracing::info!(
            "{} of {replicas} replicas are in sync when shutting down.",
            replicas - lagging
        );
    }
    if !finish_persistence(store, server, flags) {
        tracing::warn!(
            "Errors trying to shut down the server. Check the logs for more information."
        );
        cancel(server);
        return false;
    }
    if server.config.daemonize || !server.config.pidfile.is_empty() {
        tracing::info!("Removing the pid file.");
        let _ = std::fs::remove_file(&server.config.pidfile);
    }
    server.shutdown_wait = None;
    server.shutdown_save_done = true;
    server.shutdown = true;
    true
}

/// The children, the AOF and the final save of [`finish`]; false when
/// the shutdown cannot go on.
fn finish_persistence(store: &mut Store, server: &mut ServerState, flags: Flags) -> bool {
    let mut p = server.persistence();
    if p.state.bgsave.is_some() {
        tracing::warn!("There is a child saving an .rdb. Killing it!");
        crate::persist::cancel_bgsave(&mut p);
    }
    if p.aof.rewrite.is_some() {
        // Without its first base the AOF holds nothing yet.
        if p.aof.enabling {
            if flags.force {
                tracing::warn!("Writing initial AOF. Exit anyway.");
            } else {
                tracing::warn!("Writing initial AOF, can't exit.");
                return false;
            }
        }
        tracing::warn!("There is a child rewriting the AOF. Killing it!");
        p.aof.kill_rewrite();
    }
    if p.aof.enabled() {
        tracing::info!("Calling fsync() on the AOF file.");
        p.aof.sync_to_disk();
    }
    if (!p.config.save.is_empty() && !flags.nosave) || flags.save {
        tracing::info!("Saving the final RDB snapshot before exiting.");
        if crate::persist::save_now(store, &mut p).is_err() {
            if flags.force {
                tracing::warn!("Error trying to save the DB. Exit anyway.");
            } else {
                tracing::warn!("Error trying to save the DB, can't exit.");
                return false;
            }
        }
    }
    true
}

/// Ends a shutdown that will not happen (`cancelShutdown`): writes resume
/// and the blocked SHUTDOWN callers get an error.
fn cancel(server: &mut ServerState) {
    server.shutdown_wait = None;
    server.shutdown_asap = None;
    server
        .shared
        .shutdown_asap
        .store(false, std::sync::atomic::Ordering::SeqCst);
    server.pause.shutdown = false;
    let ids: Vec<u64> = server
        .blocking
        .parked
        .iter()
        .filter(|(_, p)| p.req.kind == WaitKind::Shutdown)
        .map(|(&id, _)| id)
        .collect();
    for id in ids {
        if let Some(mut p) = server.blocking.unblock(id) {
            let resp3 = server.clients.get(&id).is_some_and(|c| c.resp3);
            ReplyBuf::new(&mut p.out, resp3)
                .error(&Error::err("Errors trying to SHUTDOWN. Check logs."));
            server.blocking.finish(id, p);
        }
    }
}
