//! Replication's moving parts (Redis's `replicationCron`, the snapshot
//! done handler and `syncWithMaster`'s end): starting and collecting the
//! snapshots replicas wait for, keepalives, PINGs and timeouts on the
//! master's side; on a replica's side, the handshake with the master, the
//! loading of its snapshot and the master client that applies its stream.
//! The state lives in `server/repl`; the handshake itself runs on a thread
//! of its own (`server/repl/master_link.rs`).

use super::Executor;
use crate::net::link::ToConn;
use crate::net::request::Argv;
use crate::server::client::{ClientKind, ReplyMode};
use crate::server::repl::master_link::{stage, Handshake, HandshakeConf, Linked, Payload, Synced};
use crate::server::repl::{new_replid, FailoverState, LinkState, ReplicaState};
use crate::util::clock;

/// A handshake under way.
pub struct PendingLink {
    /// The master link's generation it is for.
    generation: u64,
    /// The thread running it.
    handshake: Handshake,
    /// A diskless load of the snapshot: with `repl-diskless-load swapdb`
    /// (true) the old data set may stay served meanwhile.
    diskless: Option<bool>,
    /// The load set `loading` (and `async_loading`), cleared at its end.
    loading: bool,
}

/// A replica's queued output past which a streamed snapshot waits for it.
const TRANSFER_QUEUE_MAX: usize = 64 * 1024;
/// Pieces handed on per loop round at most: the queues' sizes are only
/// brought up to date between rounds.
const FEED_PIECES_PER_ROUND: usize = 8;

impl Executor {
    /// Periodic replication work, from the timers.
    pub(super) fn repl_cron(&mut self) {
        // What the timers propagated (expired keys) goes out first, so a
        // snapshot starts at the offset its replicas are told.
        self.server.flush_stream();
        self.failover_cron();
        self.master_link_cron();
        self.start_snapshot_if_due();
        self.collect_snapshot();
        let now = clock::real_now_ms();
        if now.saturating_sub(self.repl_second_ms) >= 1000 {
            self.repl_second_ms = now;
            self.repl_every_second(now);
        }
        self.server.flush_stream();
    }

    /// Moves a FAILOVER on (updateFailoverStatus): past its timeout it is
    /// given up, or forced onto its target; once the target (or, with
    /// none named, any replica) acknowledged the whole stream, this server
    /// follows it, and its handshake asks it to take over.
    fn failover_cron(&mut self) {
        let repl = &mut self.server.repl;
        let Some(f) = &repl.failover else {
            return;
        };
        if f.state != FailoverState::WaitForSync {
            return;
        }
        let now = clock::real_now_ms();
        if f.end_ms != 0 && f.end_ms <= now {
            if let (true, Some((host, port))) = (f.force, f.target.clone()) {
                tracing::info!("FAILOVER to {host}:{port} time out exceeded, failing over.");
                self.hand_over(host, port);
            } else {
                crate::cmd::repl::abort_failover(
                    &mut self.server,
                    "Replica never caught up before timeout",
                );
            }
            return;
        }
        let offset = repl.offset;
        let caught_up = match &f.target {
            Some((host, port)) => repl
                .find_replica(host, *port)
                .filter(|r| r.ack_offset == offset)
                .map(|_| (host.clone(), *port)),
            None => repl
                .replicas
                .iter()
                .find(|r| r.state == ReplicaState::Online && r.ack_offset == offset)
                .map(|r| (r.ip(), r.conf.listening_port)),
        };
        if let Some((host, port)) = caught_up {
            tracing::info!("Failover target {host}:{port} is synced, failing over.");
            self.hand_over(host, port);
        }
    }

    /// Follows the failover's target; the handshake carries `FAILOVER`.
    fn hand_over(&mut self, host: String, port: u16) {
        if let Some(f) = &mut self.server.repl.failover {
            f.state = FailoverState::InProgress;
            f.target = Some((host.clone(), port));
        }
        crate::cmd::repl::set_master(&mut self.server, host, port);
    }

    /// True while a synchronization is under way whose next step (a
    /// snapshot to start or collect, a handshake's outcome) the loop
    /// takes at once rather than at the next timer tick.
    pub(super) fn repl_in_flight(&self) -> bool {
        let repl = &self.server.repl;
        repl.snapshot.is_some()
            || self.handshake.is_some()
            || repl.master.as_ref().is_some_and(|m| m.attempt_due())
            || repl
                .replicas
                .iter()
                .any(|r| r.state == ReplicaState::WaitSnapshotStart)
    }

    /// The steps of a synchronization under way, between timer ticks.
    pub(super) fn repl_poll(&mut self) {
        self.server.flush_stream();
        self.master_link_cron();
        self.start_snapshot_if_due();
        self.collect_snapshot();
        self.server.flush_stream();
    }

    /// Before the loop sleeps: a WAIT asked replicas for acknowledgements.
    /// Replicas behind are given more of the stream, and the buffer's
    /// blocks none needs are freed, ten steps' worth (Redis's beforeSleep).
    /// True when something was queued for a connection.
    pub(super) fn repl_before_sleep(&mut self) -> bool {
        let repl = &mut self.server.repl;
        let mut queued = false;
        if std::mem::take(&mut repl.get_ack) && repl.feeding() {
            repl.feed_raw_command(&[&b"REPLCONF"[..], b"GETACK", b"*"]);
            self.server.flush_stream();
            queued = true;
        }
        let repl = &mut self.server.repl;
        if repl.lagging {
            repl.pump();
            queued = true;
        }
        repl.trim(10 * crate::server::repl::backlog::TRIM_BLOCKS_PER_CALL);
        queued
    }

    fn repl_every_second(&mut self, now: u64) {
        let loops = self.server.repl.cron_loops;
        self.server.repl.cron_loops += 1;
        self.server.repl.refresh_good_replicas();
        self.remove_rdb_used_to_sync_replicas();
        let timeout_ms = self
            .server
            .config
            .get_i64("repl-timeout")
            .unwrap_or(60)
            .max(1) as u64
            * 1000;
        let repl = &mut self.server.repl;
        // Replicas waiting for their snapshot hear a newline each second,
        // so they do not time out (they skip it before the payload).
        // Not into a streamed snapshot's bytes, of course.
        let streaming = repl.snapshot.as_ref().is_some_and(|s| s.streamed());
        let mut timed_out = Vec::new();
        for r in &repl.replicas {
            match r.state {
                ReplicaState::WaitSnapshotStart => {
                    let _ = r.tx.send(ToConn::Push(b"\n".to_vec()));
                }
                ReplicaState::WaitSnapshotEnd if !streaming => {
                    let _ = r.tx.send(ToConn::Push(b"\n".to_vec()));
                }
                ReplicaState::Online if !r.old_sync && !r.conf.rdb_only => {
                    if now.saturating_sub(r.ack_ms) > timeout_ms {
                        timed_out.push(r.client_id);
                    }
                }
                _ => {}
            }
        }
        self.transfer_timeouts(now, timeout_ms);
        for id in timed_out {
            tracing::warn!("Disconnecting timedout replica (streaming sync)");
            self.server.kill_client(id);
            self.server.repl.forget(id);
        }
        let repl = &mut self.server.repl;
        if repl.master.is_none() {
            let period = self
                .server
                .config
                .get_i64("repl-ping-replica-period")
                .unwrap_or(10)
                .max(1) as u64;
            // As Redis: on the cron runs that are a multiple of the period
            // (so a period raised by CONFIG SET holds at once), and not
            // while a failover waits, as a PING would move the offset the
            // replica must reach.
            if !repl.replicas.is_empty()
                && repl.failover.is_none()
                && loops % period == 0
                && repl.feeding()
            {
                repl.feed_raw_command(&[b"PING"]);
            }
            let ttl = self
                .server
                .config
                .get_i64("repl-backlog-ttl")
                .unwrap_or(3600)
                .max(0) as u64;
            if repl.backlog.is_some()
                && repl.replicas.is_empty()
                && ttl > 0
                && now.saturating_sub(repl.no_replicas_since_ms) > ttl * 1000
            {
                repl.replid = new_replid();
                repl.clear_replid2();
                repl.backlog = None;
                tracing::info!(
                    "Replication backlog freed after {ttl} seconds without connected replicas."
                );
            }
        }
        // A replica acknowledges what it applied every second, and drops
        // a master that went silent for repl-timeout.
        let Some(m) = &mut self.server.repl.master else {
            return;
        };
        if m.state != LinkState::Connected {
            return;
        }
        if now.saturating_sub(m.last_io_ms) > timeout_ms {
            tracing::warn!("MASTER timeout: no data nor PING received...");
            crate::cmd::repl::drop_master_link(&mut self.server);
            self.master_link_lost();
            return;
        }
        if let Some(tx) = m.tx.clone() {
            m.last_ack_ms = now;
            crate::cmd::repl::send_ack(&self.server, &tx);
        }
    }

    /// Starts the handshake with the master when the link is down, and
    /// installs the link once the handshake is done.
    fn master_link_cron(&mut self) {
        let Some(generation) = self.server.repl.master.as_ref().map(|m| m.generation) else {
            self.end_handshake();
            return;
        };
        if self
            .handshake
            .as_ref()
            .is_some_and(|h| h.generation != generation)
        {
            // For a master we no longer follow: its thread ends alone.
            self.end_handshake();
            if let Some(m) = &mut self.server.repl.master {
                if m.state != LinkState::Connected {
                    m.state = LinkState::Connect;
                }
            }
        }
        let Some(m) = &mut self.server.repl.master else {
            return;
        };
        let now = clock::real_now_ms();
        match m.state {
            LinkState::Connect => {
                if now < m.next_attempt_ms {
                    return;
                }
                m.next_attempt_ms = now + 1000;
                let Some(conf) = self.handshake_conf() else {
                    return;
                };
                let diskless = conf
                    .diskless_load
                    .map(|_| self.server.config.get("repl-diskless-load") == "swapdb");
                let Some(m) = self.server.repl.master.as_mut() else {
                    return;
                };
                if !std::mem::take(&mut m.announced) {
                    tracing::info!("Connecting to MASTER {}:{}", m.host, m.port);
                    crate::server::repl::log_sync_started(&m.host);
                }
                match Handshake::start(conf) {
                    Ok(handshake) => {
                        self.handshake = Some(PendingLink {
                            generation: m.generation,
                            handshake,
                            diskless,
                            loading: false,
                        });
                        m.state = LinkState::Connecting;
                    }
                    Err(e) => tracing::warn!("Unable to connect to MASTER: {e}"),
                }
            }
            LinkState::Connecting | LinkState::Handshake | LinkState::Transfer => {
                let Some(pending) = &mut self.handshake else {
                    m.state = LinkState::Connect;
                    return;
                };
                let h = &pending.handshake;
                m.state = match h.stage() {
                    stage::CONNECTING => LinkState::Connecting,
                    stage::TRANSFER => LinkState::Transfer,
                    _ => LinkState::Handshake,
                };
                if m.state == LinkState::Transfer && !pending.loading {
                    if let Some(swapdb) = pending.diskless {
                        // Loading from the socket (readSyncBulkPayload):
                        // with swapdb and the master's history ours, the
                        // old data set is served meanwhile.
                        let theirs = h.full_replid.lock().ok().and_then(|id| id.clone());
                        let same = theirs.as_deref() == Some(self.server.repl.replid.as_str());
                        pending.loading = true;
                        self.server.loading = true;
                        self.server.async_loading = swapdb && same;
                        self.server.load_progress = crate::server::LoadProgress::start(0);
                    }
                }
                let Some(result) = h.poll() else {
                    return;
                };
                let reached = h.stage();
                self.end_handshake();
                let failing_over = self.server.repl.failover.is_some();
                match result {
                    Ok(linked) => {
                        // The target took over (clearFailoverState).
                        if failing_over {
                            crate::cmd::repl::clear_failover(&mut self.server);
                        }
                        self.install_master_link(linked);
                    }
                    Err(e) => {
                        tracing::warn!("{e}");
                        if let Some(m) = &mut self.server.repl.master {
                            m.state = LinkState::Connect;
                        }
                        if failing_over && reached >= stage::PSYNC_SENT {
                            crate::cmd::repl::abort_failover(
                                &mut self.server,
                                "Failover target rejected psync request",
                            );
                        }
                    }
                }
            }
            LinkState::Connected => {}
        }
    }

    /// Forgets the handshake under way, and the load it was making.
    fn end_handshake(&mut self) {
        if self.handshake.take().is_some_and(|p| p.loading) {
            self.server.loading = false;
            self.server.async_loading = false;
        }
    }

    fn handshake_conf(&self) -> Option<HandshakeConf> {
        let c = &self.server.config;
        let m = self.server.repl.master.as_ref()?;
        let pass = c.get("masterauth");
        let user = c.get("masteruser");
        let ip = c.get("replica-announce-ip");
        let announced_port = c.get_i64("replica-announce-port").unwrap_or(0);
        let repl = &self.server.repl;
        let tls = c.get_bool("tls-replication");
        let tls_port: u16 = c.get("tls-port").parse().unwrap_or(0);
        let contexts = if tls {
            self.server
                .net
                .as_ref()
                .and_then(|n| n.borrow().tls().cloned())
        } else {
            None
        };
        Some(HandshakeConf {
            host: m.host.clone(),
            port: m.port,
            // Redis's: the announced port, else the TLS port when the
            // replica speaks TLS to its master, else the port.
            listening_port: if announced_port > 0 {
                announced_port as u16
            } else if tls && tls_port != 0 {
                tls_port
            } else {
                self.server.port
            },
            announce_ip: (!ip.is_empty()).then_some(ip),
            source_addr: Some(self.server.config.get("bind-source-addr")).filter(|a| !a.is_empty()),
            auth: (!pass.is_empty()).then(|| ((!user.is_empty()).then_some(user), pass)),
            psync: repl
                .cached_master
                .then(|| (repl.replid.clone(), repl.offset + 1)),
            timeout: std::time::Duration::from_secs(
                c.get_i64("repl-timeout").unwrap_or(60).max(1) as u64
            ),
            failover: repl
                .failover
                .as_ref()
                .is_some_and(|f| f.state == FailoverState::InProgress),
            tls: contexts,
            diskless_load: self.diskless_load(),
            diskless_in_place: c.get("repl-diskless-load") == "on-empty-db",
            dir: std::path::PathBuf::from(&c.dir),
        })
    }

    /// Whether a snapshot from the master is loaded as it arrives
    /// (useDisklessLoad), and with what.
    fn diskless_load(&self) -> Option<(usize, crate::persist::rdb::load::LoadOptions)> {
        let c = &self.server.config;
        let on = match c.get("repl-diskless-load").as_str() {
            "swapdb" => true,
            "on-empty-db" => self.store.total_keys() == 0,
            _ => false,
        };
        on.then(|| {
            (
                self.store.dbs.len(),
                crate::persist::load_options(c, clock::now_ms(), false),
            )
        })
    }

    /// With rdb-del-sync-files, a server without persistence removes the
    /// `dbfilename` it wrote for replicas once none is waiting for it
    /// (Redis's removeRDBUsedToSyncReplicas).
    fn remove_rdb_used_to_sync_replicas(&mut self) {
        let c = &self.server.config;
        let repl = &mut self.server.repl;
        if !c.get_bool("rdb-del-sync-files") {
            // Not left set for a later CONFIG SET to act on.
            repl.rdb_from_replication = false;
            return;
        }
        if !repl.rdb_from_replication || !c.save.is_empty() || self.server.aof.enabled() {
            return;
        }
        let syncing = repl.replicas.iter().any(|r| {
            matches!(
                r.state,
                ReplicaState::WaitSnapshotStart | ReplicaState::WaitSnapshotEnd
            )
        });
        let path = crate::persist::rdb_path(c);
        if syncing || std::fs::symlink_metadata(&path).is_err() {
            return;
        }
        repl.rdb_from_replication = false;
        tracing::info!(
            "Removing the RDB file used to feed replicas in a persistence-less instance"
        );
        std::thread::spawn(move || {
            let _ = std::fs::remove_file(path);
        });
    }

    /// With rdb-del-sync-files and no persistence, the file a full
    /// resynchronization wrote is removed once loaded (or refused), in the
    /// background (Redis's bg_unlink).
    fn remove_synced_file(&self) {
        let c = &self.server.config;
        if !c.get_bool("rdb-del-sync-files") || !c.save.is_empty() || self.server.aof.enabled() {
            return;
        }
        tracing::info!(
            "Removing the RDB file obtained from the master. This replica has persistence disabled"
        );
        let path = crate::persist::rdb_path(c);
        std::thread::spawn(move || {
            let _ = std::fs::remove_file(path);
        });
    }

    /// Loads the snapshot a full resynchronization wrote to disk, as Redis's
    /// rdbLoad there: the server is loading meanwhile, answering clients
    /// (-LOADING, INFO) and the cluster bus every
    /// `loading-process-events-interval-bytes`.
    fn load_synced_file(&mut self, rdb: &[u8]) -> Result<(), crate::persist::rdb::load::LoadError> {
        let config = self.server.config.clone();
        self.server.loading = true;
        self.server.load_progress = crate::server::LoadProgress::start(rdb.len() as u64);
        let server = &mut self.server;
        let loaded =
            crate::persist::load_file_with(rdb, &mut self.store, &config, &mut |store, bytes| {
                server.load_progress.loaded_bytes += bytes;
                (server.serve_while_busy)(server, store);
                !server.shutdown
            });
        self.server.loading = false;
        loaded.map(|_| ())
    }

    /// The handshake succeeded: load the snapshot of a full
    /// resynchronization (readSyncBulkPayload) or take the new ID of a
    /// partial one, then serve the socket as the master client.
    fn install_master_link(&mut self, linked: Linked) {
        let Linked {
            sock,
            leftover,
            synced,
        } = linked;
        match synced {
            Synced::Full {
                replid,
                offset,
                payload,
            } => {
                // Our replicas must resynchronize with the new data set
                // (replicationAttachToNewMaster).
                let in_place = matches!(payload, Payload::Loaded(..))
                    && self.server.config.get("repl-diskless-load") == "on-empty-db";
                if in_place {
                    // The loader logged it as the load began, as Redis.
                    self.server.repl.cached_master = false;
                } else {
                    self.server.repl.discard_cached_master();
                }
                self.server.repl.disconnect_replicas();
                if matches!(payload, Payload::Rdb(..)) && self.server.persist.bgsave.is_some() {
                    // It would write the old data set over the file.
                    tracing::info!(
                        "Replica is about to load the RDB file received from the master, but \
                         there is a pending RDB child running. Killing it and removing its \
                         temp file to avoid any race"
                    );
                    crate::persist::cancel_bgsave(&mut self.server.persistence());
                }
                if matches!(payload, Payload::Rdb(..)) {
                    tracing::info!("MASTER <-> REPLICA sync: Flushing old data");
                }
                // replica-lazy-flush: the old data set goes to the
                // background thread (Redis's EMPTYDB_ASYNC).
                let lazy = self.server.config.get_bool("replica-lazy-flush");
                crate::store::lazyfree::free_dicts(self.store.flush_all(), lazy);
                // The master's functions replace this server's.
                self.store.functions.clear();
                let loaded = match payload {
                    Payload::Rdb(rdb, received) => {
                        let c = &self.server.config;
                        let placed = received.place(&crate::persist::rdb_path(c), &c.dbfilename);
                        let loaded = placed.and_then(|()| {
                            tracing::info!("MASTER <-> REPLICA sync: Loading DB in memory");
                            self.load_synced_file(&rdb).map_err(|e| {
                                format!(
                                    "Failed trying to load the MASTER synchronization DB from disk: {e:?}"
                                )
                            })
                        });
                        self.remove_synced_file();
                        loaded
                    }
                    Payload::Loaded(store, _) => {
                        let swapdb = self.server.config.get("repl-diskless-load") == "swapdb";
                        if swapdb {
                            tracing::info!(
                                "MASTER <-> REPLICA sync: Swapping active DB with loaded DB"
                            );
                        }
                        self.store.adopt_loaded(*store);
                        if swapdb {
                            tracing::info!(
                                "MASTER <-> REPLICA sync: Discarding old DB in background"
                            );
                        }
                        Ok(())
                    }
                };
                self.server.install_functions(&mut self.store);
                if let Err(e) = loaded {
                    tracing::warn!("{e}");
                    if let Some(m) = &mut self.server.repl.master {
                        m.state = LinkState::Connect;
                    }
                    return;
                }
                tracing::info!("MASTER <-> REPLICA sync: Finished with success");
                crate::util::process::systemd_status(
                    "MASTER <-> REPLICA sync: Finished with success. Ready to accept \
                     connections in read-write mode.",
                );
                let repl = &mut self.server.repl;
                repl.cached_master = true;
                repl.stream_db = 0;
                repl.replid = replid;
                repl.clear_replid2();
                repl.offset = offset;
                repl.backlog = None;
                if self.server.aof.enabled() {
                    self.restart_aof_after_sync();
                }
            }
            Synced::Partial { replid } => {
                let repl = &mut self.server.repl;
                if let Some(id) = replid.filter(|id| *id != repl.replid) {
                    tracing::warn!("Master replication ID changed to {id}");
                    repl.replid2 = std::mem::replace(&mut repl.replid, id);
                    repl.second_replid_offset = repl.offset as i64 + 1;
                    // Our replicas must learn the new ID.
                    repl.disconnect_replicas();
                }
                tracing::info!(
                    "MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization."
                );
                crate::util::process::systemd_status(
                    "MASTER <-> REPLICA sync: Partial Resynchronization accepted. Ready to \
                     accept connections in read-write mode.",
                );
            }
        }
        self.server.repl.ensure_backlog();
        let Some(net) = self.server.net.clone() else {
            return;
        };
        let nc = match net.borrow_mut().adopt(sock, &leftover) {
            Ok(nc) => nc,
            Err(e) => {
                tracing::warn!("Cannot serve the master link: {e}");
                if let Some(m) = &mut self.server.repl.master {
                    m.state = LinkState::Connect;
                }
                return;
            }
        };
        let id = nc.id;
        self.server.connect(nc);
        let Some(c) = self.server.clients.get_mut(&id) else {
            return;
        };
        c.kind = ClientKind::Master;
        c.bufs.set_link();
        // A continued stream goes on in the database it was in.
        c.db = self.server.repl.stream_db;
        c.authenticated = true;
        // The master's commands run as the superuser; only REPLCONF
        // GETACK is answered.
        c.user = None;
        c.reply_mode = ReplyMode::Off;
        let tx = c.tx.clone();
        let now = clock::real_now_ms();
        let applied = self.server.repl.offset + self.server.repl.log.buf.len() as u64;
        if let Some(m) = &mut self.server.repl.master {
            m.client_id = Some(id);
            m.read_base = applied;
            m.tx = Some(tx.clone());
            m.state = LinkState::Connected;
            m.last_io_ms = now;
            m.last_ack_ms = now;
            m.multi_held.clear();
        }
        // The first acknowledgement puts us online at a master that sent
        // a diskless snapshot.
        crate::cmd::repl::send_ack(&self.server, &tx);
    }

    /// The master client went away: the link is down and the cron
    /// reconnects, asking to continue from where this replica stands.
    pub(super) fn master_link_lost(&mut self) {
        if let Some(m) = &mut self.server.repl.master {
            m.lost();
        }
    }

    /// After each command the master sent: its bytes go on to this
    /// server's backlog and replicas, and the link is alive.
    pub(super) fn applied_from_master(&mut self, argv: Argv<'_>, db: usize, in_multi: bool) {
        let repl = &mut self.server.repl;
        if let Some(m) = &mut repl.master {
            m.last_io_ms = clock::real_now_ms();
            if in_multi {
                crate::net::request::encode_argv(&mut m.multi_held, argv);
                return;
            }
            // The transaction ended (EXEC, DISCARD): counted whole.
            repl.log.buf.append(&mut m.multi_held);
        }
        crate::net::request::encode_argv(&mut repl.log.buf, argv);
        repl.stream_db = db;
    }

    /// Starts the snapshot replicas wait for: at once, or with
    /// `repl-diskless-sync` after `repl-diskless-sync-delay` seconds
    /// unless `repl-diskless-sync-max-replicas` are already waiting.
    /// The AOF after a full sync replaced the data set (Redis's
    /// restartAOFAfterSYNC): the old files describe the old data, so the
    /// AOF starts over with a background rewrite; ten tries a second
    /// apart, then the replica exits rather than run without its AOF.
    fn restart_aof_after_sync(&mut self) {
        self.server.aof.stop();
        for _ in 0..10 {
            let mut p = self.server.persistence();
            if crate::persist::aof::enable(&self.store, &mut p, false) {
                return;
            }
            tracing::warn!(
                "Failed enabling the AOF after successful master synchronization! Trying it \
                 again in one second."
            );
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        tracing::warn!(
            "FATAL: this replica instance finished the synchronization with its master, but \
             the AOF can't be turned on. Exiting now."
        );
        std::process::exit(1);
    }

    fn start_snapshot_if_due(&mut self) {
        let repl = &self.server.repl;
        // One child at a time, as Redis's shouldStartChildReplication: a
        // background save or AOF rewrite is waited for.
        if repl.snapshot.is_some()
            || self.server.persist.bgsave.is_some()
            || self.server.aof.rewrite.is_some()
        {
            return;
        }
        let waiting = repl
            .replicas
            .iter()
            .filter(|r| r.state == ReplicaState::WaitSnapshotStart);
        let (count, oldest) = waiting.fold((0, u64::MAX), |(n, t), r| (n + 1, t.min(r.since_ms)));
        if count == 0 {
            return;
        }
        let c = &self.server.config;
        if c.get_bool("repl-diskless-sync") {
            let delay = c.get_i64("repl-diskless-sync-delay").unwrap_or(5).max(0) as u64 * 1000;
            let max = c
                .get_i64("repl-diskless-sync-max-replicas")
                .unwrap_or(0)
                .max(0) as usize;
            let full = max > 0 && count >= max;
            if !full && clock::real_now_ms().saturating_sub(oldest) < delay {
                return;
            }
        }
        // Streamed to the replicas as the child writes it when all of them
        // read the EOF-marked format (Redis's socket target); a filtered
        // snapshot (rdb-filter-only) is made here, so theirs is collected.
        let streamed = c.get_bool("repl-diskless-sync")
            && (self.server.repl.replicas.iter())
                .filter(|r| r.state == ReplicaState::WaitSnapshotStart)
                .all(|r| r.conf.capa_eof && !r.conf.exclude_data);
        let mark = streamed.then(new_replid);
        let info = self.server.repl.save_info();
        // Redis writes `dbfilename` unless it streams to the replicas, which
        // it does with repl-diskless-sync or a filtered snapshot, when all
        // of them read the EOF-marked format.
        let waiting = (self.server.repl.replicas.iter())
            .filter(|r| r.state == ReplicaState::WaitSnapshotStart);
        let (mut all_eof, mut filtered) = (true, false);
        for r in waiting {
            all_eof &= r.conf.capa_eof;
            filtered |= r.conf.exclude_data || r.conf.exclude_functions;
        }
        let disk = !((c.get_bool("repl-diskless-sync") || filtered) && all_eof);
        // Redis's socket target: streamed, or a filtered image.
        let target = if disk { "disk" } else { "replicas sockets" };
        tracing::info!("Starting BGSAVE for SYNC with target: {target}");
        self.server.repl.filtered_rdbs = filtered.then(|| {
            let c = &self.server.config;
            let empty = crate::persist::empty_rdb_for_replicas(c, &[], info);
            let functions = &self.store.functions;
            (
                empty,
                crate::persist::empty_rdb_for_replicas(c, functions, info),
            )
        });
        let started = crate::persist::SyncSnapshot::start(
            &self.store,
            &self.server.config,
            info,
            mark.clone(),
            disk,
        );
        if disk && started.is_ok() {
            self.server.persist.saves += 1;
        }
        let repl = &mut self.server.repl;
        match started {
            Ok(s) => repl.snapshot = Some(s),
            Err(e) => {
                tracing::warn!("Can't start the snapshot for replicas: {e}");
                self.drop_replicas_in(ReplicaState::WaitSnapshotStart);
                return;
            }
        }
        // The snapshot stands for this offset; the stream after it starts
        // with a SELECT (replicationSetupSlaveForFullResync).
        repl.log.db = None;
        let line = format!("+FULLRESYNC {} {}\r\n", repl.replid, repl.offset);
        let offset = repl.offset;
        let now = clock::real_now_ms();
        for r in &mut repl.replicas {
            if r.state != ReplicaState::WaitSnapshotStart {
                continue;
            }
            r.state = ReplicaState::WaitSnapshotEnd;
            r.sync_offset = offset;
            // The stream from the fork on is kept for it from the next
            // bytes fed.
            r.cursor = None;
            r.transfer_progress = (0, now);
            let mut head = Vec::new();
            if !r.old_sync {
                head.extend_from_slice(line.as_bytes());
            }
            if let Some(mark) = &mark {
                head.extend_from_slice(format!("$EOF:{mark}\r\n").as_bytes());
            }
            let _ = r.tx.send(ToConn::Push(head));
        }
    }

    /// Hands a streamed snapshot's bytes on to its replicas as the child
    /// writes them, no faster than the slowest takes them (Redis's
    /// rdbPipeReadHandler); ends it with the mark, or kills the child
    /// once no replica is left to receive it.
    fn feed_snapshot(&mut self) {
        let repl = &mut self.server.repl;
        let Some(snap) = repl.snapshot.as_mut().filter(|s| s.streamed()) else {
            return;
        };
        let receiving =
            |r: &&mut crate::server::repl::Replica| r.state == ReplicaState::WaitSnapshotEnd;
        if !repl.replicas.iter_mut().any(|r| receiving(&r)) {
            tracing::warn!("Diskless rdb transfer, last replica dropped, killing fork child.");
            // Dropping it kills the child.
            repl.snapshot = None;
            return;
        }
        if let Some(failed) = snap.child_failed() {
            repl.snapshot = None;
            tracing::warn!(
                "{}",
                failed.message("Background transfer", "Background transfer error")
            );
            self.sync_failed();
            return;
        }
        let now = clock::real_now_ms();
        for _ in 0..FEED_PIECES_PER_ROUND {
            let full = (repl.replicas.iter_mut())
                .filter(receiving)
                .any(|r| r.bufs.pending.get() >= TRANSFER_QUEUE_MAX);
            if full {
                return;
            }
            match snap.next_piece() {
                crate::persist::Piece::Data(bytes) => {
                    for r in repl.replicas.iter_mut().filter(receiving) {
                        let _ = r.tx.send(ToConn::Push(bytes.clone()));
                    }
                }
                crate::persist::Piece::Wait => return,
                crate::persist::Piece::End(Ok(())) => {
                    let mark = snap.mark.clone().unwrap_or_default();
                    self.server.persist.last_cow_size = snap.cow_size();
                    repl.snapshot = None;
                    let up = repl.replicas.iter_mut().filter(receiving).count();
                    tracing::warn!(
                        "Diskless rdb transfer, done reading from pipe, {up} replicas still up."
                    );
                    // The child has exited: the thread reaped it first.
                    tracing::info!("Background RDB transfer terminated with success");
                    for r in repl.replicas.iter_mut().filter(receiving) {
                        let _ = r.tx.send(ToConn::Push(mark.clone().into_bytes()));
                        r.state = ReplicaState::WaitAck;
                        r.ack_ms = now;
                        tracing::info!(
                            "Streamed RDB transfer with replica {} succeeded (socket). Waiting for REPLCONF ACK from slave to enable streaming",
                            r.name()
                        );
                        tracing::info!("Synchronization with replica {} succeeded", r.name());
                    }
                    return;
                }
                crate::persist::Piece::End(Err(e)) => {
                    repl.snapshot = None;
                    tracing::warn!("{e}");
                    self.sync_failed();
                    return;
                }
            }
        }
    }

    /// Replicas receiving a streamed snapshot that took nothing for
    /// `repl-timeout` are dropped (Redis's replicationCron).
    fn transfer_timeouts(&mut self, now: u64, timeout_ms: u64) {
        let repl = &mut self.server.repl;
        if !repl.snapshot.as_ref().is_some_and(|s| s.streamed()) {
            return;
        }
        let mut timed_out = Vec::new();
        for r in &mut repl.replicas {
            if r.state != ReplicaState::WaitSnapshotEnd {
                continue;
            }
            let pending = r.bufs.pending.get();
            let (last, since) = r.transfer_progress;
            if pending == 0 || pending < last {
                r.transfer_progress = (pending, now);
            } else if now.saturating_sub(since) > timeout_ms {
                timed_out.push((r.client_id, r.name()));
            } else {
                r.transfer_progress.0 = pending;
            }
        }
        for (id, name) in timed_out {
            tracing::warn!("Disconnecting timedout replica (full sync): {name}");
            self.server.kill_client(id);
            self.server.repl.forget(id);
        }
    }

    /// Sends a finished snapshot to the replicas waiting for it, followed
    /// by the stream since its fork; a diskless transfer's stream waits
    /// for the replica's first acknowledgement, as its reader must see the
    /// end mark last.
    fn collect_snapshot(&mut self) {
        self.feed_snapshot();
        let repl = &mut self.server.repl;
        if repl.snapshot.as_ref().is_none_or(|s| s.streamed()) {
            return;
        }
        // A snapshot none is waiting for any more is of no use unless save
        // rules would keep it (Redis's freeClient kills the disk child).
        let waiting = (repl.replicas.iter()).any(|r| r.state == ReplicaState::WaitSnapshotEnd);
        if !waiting && self.server.config.save.is_empty() {
            tracing::info!("Killing the snapshot child: no replica waits for it any more");
            repl.snapshot = None;
            return;
        }
        let Some(result) = repl.snapshot.as_ref().and_then(|s| s.poll()) else {
            return;
        };
        if result.is_ok() {
            self.server.persist.last_cow_size = repl.snapshot.as_ref().map_or(0, |s| s.cow_size());
        }
        let snap = repl.snapshot.take();
        if snap.as_ref().is_some_and(|s| !s.disk) && result.is_ok() {
            tracing::info!("Background RDB transfer terminated with success");
        }
        if let Some(snap) = snap.filter(|s| s.disk) {
            // Written to `dbfilename`: a background save's outcome
            // (backgroundSaveDoneHandlerDisk).
            let st = &mut self.server.persist;
            st.last_bgsave_time_sec = snap.started.elapsed().as_secs() as i64;
            st.last_bgsave_ok = result.is_ok();
            if result.is_ok() {
                let dirty = &mut self.store.stats.dirty;
                *dirty = dirty.saturating_sub(snap.dirty_at_start);
                st.last_save = clock::real_now_ms() / 1000;
                repl.rdb_from_replication = true;
                tracing::info!("Background saving terminated with success");
            }
        }
        let rdb = match result {
            Ok(rdb) => rdb,
            Err(e) => {
                tracing::warn!("{e}");
                self.sync_failed();
                return;
            }
        };
        let diskless = self.server.config.get_bool("repl-diskless-sync");
        repl.lagging = true;
        // A filtered replica that joined an unfiltered snapshot gets its
        // image as of now.
        let (empty, functions_only) = repl.filtered_rdbs.take().unwrap_or_else(|| {
            let c = &self.server.config;
            let functions = &self.store.functions;
            (
                crate::persist::empty_rdb_for_replicas(c, &[], None),
                crate::persist::empty_rdb_for_replicas(c, functions, None),
            )
        });
        for r in &mut repl.replicas {
            if r.state != ReplicaState::WaitSnapshotEnd {
                continue;
            }
            let rdb = match (r.conf.exclude_data, r.conf.exclude_functions) {
                (false, _) => &rdb,
                (true, true) => &empty,
                (true, false) => &functions_only,
            };
            let mut payload = Vec::with_capacity(rdb.len() + 100);
            // A filtered image goes as Redis's socket target does.
            let filtered = r.conf.exclude_data || r.conf.exclude_functions;
            if (diskless || filtered) && r.conf.capa_eof {
                let mark = new_replid();
                payload.extend_from_slice(format!("$EOF:{mark}\r\n").as_bytes());
                payload.extend_from_slice(rdb);
                payload.extend_from_slice(mark.as_bytes());
                r.state = ReplicaState::WaitAck;
            } else {
                payload.extend_from_slice(format!("${}\r\n", rdb.len()).as_bytes());
                payload.extend_from_slice(rdb);
                // The stream kept since the fork follows it (pump).
                r.state = ReplicaState::Online;
            }
            let _ = r.tx.send(ToConn::Push(payload));
            r.ack_ms = clock::real_now_ms();
            tracing::info!("Synchronization with replica {} succeeded", r.name());
        }
    }

    /// The snapshot failed: its replicas are disconnected, each with
    /// Redis's line (updateSlavesWaitingBgsave).
    fn sync_failed(&mut self) {
        let waiting = (self.server.repl.replicas.iter())
            .filter(|r| r.state == ReplicaState::WaitSnapshotEnd)
            .count();
        for _ in 0..waiting {
            tracing::warn!("SYNC failed. BGSAVE child returned an error");
        }
        self.drop_replicas_in(ReplicaState::WaitSnapshotEnd);
    }

    /// Disconnects the replicas in `state` (their snapshot failed).
    fn drop_replicas_in(&mut self, state: ReplicaState) {
        let ids: Vec<u64> = (self.server.repl.replicas.iter())
            .filter(|r| r.state == state)
            .map(|r| r.client_id)
            .collect();
        for id in ids {
            self.server.kill_client(id);
            self.server.repl.forget(id);
        }
    }

    /// Serves the clients blocked in WAIT after a replica acknowledged.
    pub(super) fn serve_wait(&mut self) {
        let ids: Vec<u64> = self
            .server
            .blocking
            .parked
            .iter()
            .filter(|(_, p)| p.req.kind == crate::server::blocking::WaitKind::Replicas)
            .map(|(id, _)| *id)
            .collect();
        if ids.is_empty() {
            return;
        }
        for id in ids {
            self.rerun(id);
        }
        self.handle_ready();
        self.after_writes();
    }
}
