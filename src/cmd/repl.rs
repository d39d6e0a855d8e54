//! Replication commands (Redis's `replication.c`): REPLCONF, SYNC and
//! PSYNC on the master's side, REPLICAOF/SLAVEOF to follow a master, ROLE
//! and WAIT. What they change lives in `server/repl`; the snapshots,
//! transfers and the master link are driven by the engine's cron
//! (`exec/repl.rs`).

use super::args::{self, is};
use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::net::link::ToConn;
use crate::server::blocking::{BlockRequest, WaitKind};
use crate::server::client::ClientKind;
pub use crate::server::repl::{drop_master_link, set_master};
use crate::server::repl::{Failover, FailoverState, LinkState, Replica, ReplicaConf, ReplicaState};
use crate::util::clock;

/// Handlers of this family.
pub(super) const COMMANDS: &[(&str, super::Handler)] = &[
    ("replconf", replconf),
    ("sync", sync),
    ("psync", sync),
    ("replicaof", replicaof),
    ("slaveof", replicaof),
    ("role", role),
    ("wait", wait),
    ("failover", failover),
];

/// REPLCONF option value ...: a replica's facts before it syncs, and the
/// acknowledgements exchanged after (replconfCommand).
fn replconf(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() % 2 == 0 {
        return Err(Error::Syntax);
    }
    for i in (1..argv.len()).step_by(2) {
        let (opt, val) = (argv.get(i), argv.get(i + 1));
        if is(opt, "listening-port") {
            let port = args::int(val)?;
            conf(ctx).listening_port = u16::try_from(port).unwrap_or(0);
        } else if is(opt, "ip-address") {
            conf(ctx).announced_ip = Some(args::lossy(val));
        } else if is(opt, "capa") {
            if is(val, "eof") {
                conf(ctx).capa_eof = true;
            } else if is(val, "psync2") {
                conf(ctx).capa_psync2 = true;
            }
        } else if is(opt, "ack") {
            // From a replica only, and never answered.
            if ctx.client.kind == ClientKind::Replica {
                if let Ok(offset) = args::int(val) {
                    let id = ctx.client.id;
                    if let Some(r) = ctx.server.repl.replica_mut(id) {
                        r.ack_offset = r.ack_offset.max(offset.max(0) as u64);
                        r.ack_ms = clock::real_now_ms();
                        if r.state == ReplicaState::WaitAck {
                            r.state = ReplicaState::Online;
                            // The stream kept since the fork follows.
                            ctx.server.repl.lagging = true;
                        }
                    }
                    ctx.server.repl.pump();
                    ctx.server.repl.refresh_good_replicas();
                }
            }
            return Ok(());
        } else if is(opt, "getack") {
            // From our master: answer with our offset, past the reply
            // suppression the master's commands have.
            if ctx.client.kind == ClientKind::Master {
                send_ack(ctx.server, &ctx.client.tx);
            }
            return Ok(());
        } else if is(opt, "rdb-only") {
            match args::int(val)? {
                0 => conf(ctx).rdb_only = false,
                1 => conf(ctx).rdb_only = true,
                // getRangeLongFromObjectOrReply's words.
                _ => {
                    return Err(Error::err(
                        "value is out of range, value must between 0 and 1",
                    ))
                }
            }
        } else if is(opt, "rdb-filter-only") {
            // Only "functions" may be kept (redis-cli --functions-rdb); an
            // empty list keeps nothing (redis-cli --replica wants the
            // stream alone).
            let mut functions = false;
            for f in String::from_utf8_lossy(val).split_ascii_whitespace() {
                if !f.eq_ignore_ascii_case("functions") {
                    return Err(Error::err_owned(format!(
                        "Unsupported rdb-filter-only option: {f}"
                    )));
                }
                functions = true;
            }
            conf(ctx).exclude_data = true;
            conf(ctx).exclude_functions = !functions;
        } else {
            return Err(Error::err_owned(format!(
                "Unrecognized REPLCONF option: {}",
                args::lossy(opt)
            )));
        }
    }
    ctx.reply.ok();
    Ok(())
}

fn conf<'c>(ctx: &'c mut Ctx<'_>) -> &'c mut ReplicaConf {
    ctx.client.replica_conf.get_or_insert_with(Box::default)
}

/// Sends `REPLCONF ACK <offset>` to the master over `tx`.
pub fn send_ack(server: &crate::server::ServerState, tx: &crate::net::link::ConnTx) {
    let mut buf = Vec::new();
    // What this replica applied, including the commands of the batch
    // running now that have not reached its backlog yet.
    let offset = (server.repl.offset + server.repl.log.buf.len() as u64).to_string();
    crate::persist::cmdlog::encode(&mut buf, &[b"REPLCONF", b"ACK", offset.as_bytes()]);
    let _ = tx.send(ToConn::Push(buf));
}

/// SYNC and PSYNC replid offset (syncCommand): continue from the backlog
/// when it holds the replica's history, else a full resynchronization
/// with a snapshot the cron starts.
fn sync(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if ctx.client.kind == ClientKind::Replica {
        return Ok(());
    }
    // The old master of a FAILOVER asks this replica to take over.
    if argv.len() > 3 && is(argv.get(0), "psync") && is(argv.get(3), "failover") {
        tracing::warn!(
            "Failover request received for replid {}.",
            args::lossy(argv.get(1))
        );
        if ctx.server.repl.master.is_none() {
            return Err(Error::err("PSYNC FAILOVER can't be sent to a master."));
        }
        if argv.get(1) != ctx.server.repl.replid.as_bytes() {
            return Err(Error::err("PSYNC FAILOVER replid must match my replid."));
        }
        drop_master_link(ctx.server);
        ctx.server.repl.promote();
        tracing::info!(
            "MASTER MODE enabled (failover request from '{}')",
            ctx.caller_info(&argv)
        );
    }
    if ctx.server.repl.failover.is_some() {
        return Err(Error::raw("NOMASTERLINK Can't SYNC while failing over"));
    }
    if let Some(m) = &ctx.server.repl.master {
        if m.state != LinkState::Connected {
            return Err(Error::raw(
                "NOMASTERLINK Can't SYNC while not connected with my master",
            ));
        }
    }
    let psync = is(argv.get(0), "psync");
    let name = match &ctx.client.replica_conf {
        Some(c) => c.name(&ctx.client.addr),
        None => ReplicaConf::default().name(&ctx.client.addr),
    };
    tracing::info!("Replica {name} asks for synchronization");
    if psync && args::int(argv.get(2)).is_err() {
        tracing::warn!("Replica {name} asks for synchronization but with a wrong offset");
        return Err(Error::NotInteger);
    }
    let conf = ctx
        .client
        .replica_conf
        .take()
        .map(|c| *c)
        .unwrap_or_default();
    let repl = &mut ctx.server.repl;
    if psync {
        let replid = args::lossy(argv.get(1));
        let offset = args::int(argv.get(2)).unwrap_or(-1);
        let from = repl.psync_from(&replid, offset, &name);
        if let (Some(from), false) = (from, conf.rdb_only) {
            let out = ctx.reply.raw();
            if conf.capa_psync2 {
                out.extend_from_slice(format!("+CONTINUE {}\r\n", repl.replid).as_bytes());
            } else {
                out.extend_from_slice(b"+CONTINUE\r\n");
            }
            repl.stats.partial_ok += 1;
            tracing::info!(
                "Partial resynchronization request from {name} accepted. Sending {} bytes of backlog starting from offset {offset}.",
                repl.offset + 1 - from
            );
            // The stream from its offset on is given to it after this
            // reply, from the shared buffer (addReplyReplicationBacklog:
            // no reference while the backlog is empty).
            let held = repl.backlog.as_ref().is_some_and(|b| b.histlen() > 0);
            attach(ctx, conf, ReplicaState::Online, false);
            let repl = &mut ctx.server.repl;
            if let Some(r) = repl.replicas.last_mut() {
                r.cursor = held.then_some(from);
            }
            repl.lagging = true;
            return Ok(());
        }
        if replid != "?" {
            repl.stats.partial_err += 1;
        }
    }
    repl.stats.full += 1;
    repl.ensure_backlog();
    // A snapshot already being made for other replicas serves this one
    // too: it gets their copy of the stream since the fork.
    // Not a streamed one: its start has gone by (this one waits for the
    // next, as Redis's socket target).
    let running = ctx
        .server
        .repl
        .snapshot
        .as_ref()
        .is_some_and(|s| !s.streamed());
    let peer = ctx
        .server
        .repl
        .replicas
        .iter()
        // Only with the same rdb-filter-only (Redis's slave_req check).
        .find(|r| {
            r.state == ReplicaState::WaitSnapshotEnd
                && running
                && r.conf.exclude_data == conf.exclude_data
                && r.conf.exclude_functions == conf.exclude_functions
        });
    let attached = peer.map(|r| (r.sync_offset, r.cursor));
    log_sync_wait(ctx, attached.is_some(), &conf);
    match attached {
        Some((offset, cursor)) => {
            if psync {
                let line = format!("+FULLRESYNC {} {offset}\r\n", ctx.server.repl.replid);
                ctx.reply.raw().extend_from_slice(line.as_bytes());
            }
            attach(ctx, conf, ReplicaState::WaitSnapshotEnd, !psync);
            if let Some(r) = ctx.server.repl.replicas.last_mut() {
                r.sync_offset = offset;
                // Shares the stream kept since the fork
                // (copyReplicaOutputBuffer).
                r.cursor = cursor;
            }
        }
        None => attach(ctx, conf, ReplicaState::WaitSnapshotStart, !psync),
    }
    Ok(())
}

/// What a full synchronization waits for, in Redis's syncCommand words:
/// a snapshot running for other replicas, or the next one.
fn log_sync_wait(ctx: &Ctx<'_>, attached: bool, conf: &ReplicaConf) {
    let server = &*ctx.server;
    let streamed = server.repl.snapshot.as_ref().map(|s| s.streamed());
    let line = if attached {
        "Waiting for end of BGSAVE for SYNC"
    } else if streamed == Some(true) {
        "Current BGSAVE has socket target. Waiting for next BGSAVE for SYNC"
    } else if streamed == Some(false) || server.persist.bgsave.is_some() {
        "Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC"
    } else if server.config.get_bool("repl-diskless-sync")
        && conf.capa_eof
        && server
            .config
            .get_i64("repl-diskless-sync-delay")
            .unwrap_or(0)
            > 0
    {
        "Delay next BGSAVE for diskless SYNC"
    } else if server.aof.rewrite.is_some() {
        "No BGSAVE in progress, but another BG operation is active. BGSAVE for replication delayed"
    } else {
        return;
    };
    tracing::info!("{line}");
}

/// Makes the calling client a replica in `state`.
fn attach(ctx: &mut Ctx<'_>, conf: ReplicaConf, state: ReplicaState, old_sync: bool) {
    let c = &mut *ctx.client;
    c.kind = ClientKind::Replica;
    c.bufs.set_link();
    // A full sync's replica (Redis's syncCommand): fewer, larger packets.
    if state != ReplicaState::Online && ctx.server.config.get_bool("repl-disable-tcp-nodelay") {
        let _ = c.tx.send(crate::net::link::ToConn::NoDelay(false));
    }
    let now = clock::real_now_ms();
    let offset = ctx.server.repl.offset;
    ctx.server.repl.replicas.push(Replica {
        client_id: c.id,
        tx: c.tx.clone(),
        bufs: c.bufs.clone(),
        addr: c.addr.clone(),
        conf,
        state,
        sync_offset: offset,
        cursor: None,
        ack_offset: 0,
        ack_ms: now,
        since_ms: now,
        old_sync,
        transfer_progress: (0, now),
    });
}

/// REPLICAOF host port | NO ONE (replicaofCommand).
fn replicaof(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if ctx.server.cluster.is_some() {
        return Err(Error::err("REPLICAOF not allowed in cluster mode."));
    }
    if ctx.server.repl.failover.is_some() {
        return Err(Error::err("REPLICAOF not allowed while failing over."));
    }
    let (host, port) = (argv.get(1), argv.get(2));
    if is(host, "no") && is(port, "one") {
        if ctx.server.repl.master.is_some() {
            drop_master_link(ctx.server);
            ctx.server.repl.promote();
            tracing::info!(
                "MASTER MODE enabled (user request from '{}')",
                ctx.caller_info(&argv)
            );
        }
        ctx.reply.ok();
        return Ok(());
    }
    if ctx.client.kind == ClientKind::Master {
        return Err(Error::err("Command is not valid when client is a replica."));
    }
    let port = args::int(port)
        .ok()
        .and_then(|p| u16::try_from(p).ok())
        .ok_or(Error::err("Invalid master port"))?;
    let host = args::lossy(host);
    if let Some(m) = &ctx.server.repl.master {
        if m.host.eq_ignore_ascii_case(&host) && m.port == port {
            tracing::info!("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.");
            ctx.reply.simple("OK Already connected to specified master");
            return Ok(());
        }
    }
    set_master(ctx.server, host, port);
    tracing::info!(
        "REPLICAOF {}:{} enabled (user request from '{}')",
        ctx.server
            .repl
            .master
            .as_ref()
            .map_or("", |m| m.host.as_str()),
        port,
        ctx.caller_info(&argv)
    );
    ctx.reply.ok();
    Ok(())
}

/// ROLE (roleCommand).
fn role(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let repl = &ctx.server.repl;
    let r = &mut ctx.reply;
    match &repl.master {
        None => {
            r.array(3);
            r.bulk(b"master");
            r.int(repl.offset as i64);
            let online: Vec<_> = repl
                .replicas
                .iter()
                .filter(|x| x.state == ReplicaState::Online && !x.conf.rdb_only)
                .collect();
            r.array(online.len());
            for x in online {
                r.array(3);
                r.bulk(x.ip().as_bytes());
                r.bulk(x.conf.listening_port.to_string().as_bytes());
                r.bulk(x.ack_offset.to_string().as_bytes());
            }
        }
        Some(m) => {
            r.array(5);
            r.bulk(b"slave");
            r.bulk(m.host.as_bytes());
            r.int(i64::from(m.port));
            r.bulk(m.state.role_name().as_bytes());
            let offset = if m.client_id.is_some() {
                repl.offset as i64
            } else {
                -1
            };
            r.int(offset);
        }
    }
    Ok(())
}

/// WAIT numreplicas timeout: how many replicas acknowledged everything
/// written so far. Without replicas, or when enough already have, it
/// answers at once; otherwise the replicas are asked for an
/// acknowledgement and the client waits (served by `exec/repl.rs`).
fn wait(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if ctx.server.repl.master.is_some() {
        return Err(Error::err("WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."));
    }
    let wanted = args::int(argv.get(1))?;
    let timeout = args::int(argv.get(2)).map_err(|_| Error::TimeoutNotInteger)?;
    if timeout < 0 {
        return Err(Error::err("timeout is negative"));
    }
    let offset = ctx.client.woff;
    let acked = ctx.server.repl.acked(offset);
    if acked as i64 >= wanted || ctx.client.multi.is_some() || ctx.client.script {
        ctx.reply.int(acked as i64);
        return Ok(());
    }
    ctx.server.repl.get_ack = true;
    let deadline = if timeout == 0 {
        0
    } else {
        clock::now_ms() + timeout as u64
    };
    ctx.server.blocking.pending = Some(BlockRequest {
        db: ctx.client.db,
        keys: Vec::new(),
        deadline,
        kind: WaitKind::Replicas,
        rerun: None,
    });
    Ok(())
}

/// The answer of a WAIT whose timeout passed: the replicas that
/// acknowledged the client's last write by then.
pub fn wait_timed_out(
    server: &crate::server::ServerState,
    client: &crate::server::client::Client,
) -> i64 {
    server.repl.acked(client.woff) as i64
}

/// FAILOVER [TO host port [FORCE]] [TIMEOUT ms] | ABORT (failoverCommand):
/// writes pause until a replica (the one named, or the first) has
/// acknowledged the whole stream; then this server follows it and asks
/// it, with `PSYNC <replid> <offset> FAILOVER`, to become the master. The
/// cron (`exec/repl.rs`) moves it on.
fn failover(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() == 2 && is(argv.get(1), "abort") {
        if ctx.server.repl.failover.is_none() {
            return Err(Error::err("No failover in progress."));
        }
        abort_failover(ctx.server, "Failover manually aborted");
        ctx.reply.ok();
        return Ok(());
    }
    let (mut timeout, mut force, mut target) = (0i64, false, None);
    let mut i = 1;
    while i < argv.len() {
        let a = argv.get(i);
        if is(a, "timeout") && i + 1 < argv.len() && timeout == 0 {
            timeout = args::int(argv.get(i + 1))?;
            if timeout <= 0 {
                return Err(Error::err("FAILOVER timeout must be greater than 0"));
            }
            i += 2;
        } else if is(a, "to") && i + 2 < argv.len() && target.is_none() {
            let port = args::int(argv.get(i + 2))?;
            target = Some((args::lossy(argv.get(i + 1)), port));
            i += 3;
        } else if is(a, "force") && !force {
            force = true;
            i += 1;
        } else {
            return Err(Error::Syntax);
        }
    }
    let repl = &mut ctx.server.repl;
    if repl.failover.is_some() {
        return Err(Error::err("FAILOVER already in progress."));
    }
    if repl.master.is_some() {
        return Err(Error::err(
            "FAILOVER is not valid when server is a replica.",
        ));
    }
    if repl.replicas.is_empty() {
        return Err(Error::err("FAILOVER requires connected replicas."));
    }
    if force && (timeout == 0 || target.is_none()) {
        return Err(Error::err(
            "FAILOVER with force option requires both a timeout and target HOST and IP.",
        ));
    }
    let target = match target {
        Some((host, port)) => {
            let found = u16::try_from(port)
                .ok()
                .and_then(|p| repl.find_replica(&host, p).map(|r| (r.state, p)));
            let Some((state, port)) = found else {
                return Err(Error::err(
                    "FAILOVER target HOST and PORT is not a replica.",
                ));
            };
            if state != ReplicaState::Online {
                return Err(Error::err("FAILOVER target replica is not online."));
            }
            tracing::info!("FAILOVER requested to {host}:{port}.");
            Some((host, port))
        }
        None => {
            tracing::info!("FAILOVER requested to any replica.");
            None
        }
    };
    let end_ms = if timeout > 0 {
        clock::real_now_ms().saturating_add(timeout as u64)
    } else {
        0
    };
    repl.failover = Some(Failover {
        state: FailoverState::WaitForSync,
        target,
        end_ms,
        force,
    });
    ctx.server.pause.failover = true;
    ctx.reply.ok();
    Ok(())
}

/// Gives a failover up (abortFailover): a server that already follows the
/// target is a master again, and writes resume.
pub fn abort_failover(server: &mut crate::server::ServerState, why: &str) {
    let Some(f) = server.repl.failover.take() else {
        return;
    };
    match &f.target {
        Some((host, port)) => tracing::info!("FAILOVER to {host}:{port} aborted: {why}"),
        None => tracing::info!("FAILOVER to any replica aborted: {why}"),
    }
    if f.state == FailoverState::InProgress {
        drop_master_link(server);
        server.repl.promote();
    }
    server.pause.failover = false;
}

/// A failover ended with the target as this server's master
/// (clearFailoverState): writes resume, and now meet READONLY.
pub fn clear_failover(server: &mut crate::server::ServerState) {
    server.repl.failover = None;
    server.pause.failover = false;
}
