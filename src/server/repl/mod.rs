//! Replication state (Redis's `replication.c` and the `repl_*` fields of
//! `struct redisServer`): the replication ID and offset, the backlog, the
//! replicas attached to this server and, when this server is itself a
//! replica, its master link.
//!
//! As a master, the propagation stream (`server/propagate.rs`) is encoded
//! into [`Replication::log`] while a batch runs, exactly as the AOF gets
//! it; [`Replication::flush`] then appends it to the replication buffer
//! (`backlog.rs`), shared by the backlog and every replica, and hands it
//! to the replicas that are up to date, before the batch's replies go
//! out; those behind are given more as their connection drains
//! ([`Replication::pump`]). A replica that asks with PSYNC continues from
//! its offset (`+CONTINUE`) while the buffer holds it, or gets a full
//! resynchronization: a snapshot made by a forked child, followed by
//! everything propagated since the fork.
//!
//! As a replica, the commands the master sends run through the one command
//! path as the master client; they reach this server's AOF as any write
//! does, and their bytes go on verbatim to this server's own replicas and
//! backlog ([`Replication::proxy`]), as Redis's
//! `replicationFeedStreamFromMasterStream`.

pub mod backlog;
pub mod master_link;

use std::rc::Rc;

use self::backlog::ReplBuffer;
use crate::net::link::{ConnBuffers, ConnTx, ToConn};
use crate::persist::cmdlog::CommandLog;
use crate::util::clock;

/// Output a replica's connection may be handed beyond what it has
/// written before the rest waits in the shared buffer.
const PUMP_HIGH: usize = 256 * 1024;

/// A replica's replication ID placeholder (no history yet).
pub const NO_REPLID: &str = "0000000000000000000000000000000000000000";

/// Where a replica stands in its synchronization (Redis's `replstate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaState {
    /// Waits for a snapshot to start (repl-diskless-sync-delay, or a
    /// child already running).
    WaitSnapshotStart,
    /// A snapshot is being made; the stream since its fork is kept.
    WaitSnapshotEnd,
    /// Got a diskless snapshot; the stream since its fork waits for the
    /// replica's first acknowledgement (its reader must see the end mark
    /// last).
    WaitAck,
    /// Receives the stream as it is produced.
    Online,
}

impl ReplicaState {
    /// The name INFO replication shows.
    pub fn name(self) -> &'static str {
        match self {
            ReplicaState::WaitSnapshotStart => "wait_bgsave",
            ReplicaState::WaitSnapshotEnd => "wait_bgsave",
            ReplicaState::WaitAck | ReplicaState::Online => "online",
        }
    }
}

/// What a client said about itself with REPLCONF before it asked to sync.
#[derive(Clone, Debug, Default)]
pub struct ReplicaConf {
    /// `listening-port`.
    pub listening_port: u16,
    /// `ip-address`.
    pub announced_ip: Option<String>,
    /// `capa eof`: it reads a diskless snapshot's EOF-marker format.
    pub capa_eof: bool,
    /// `capa psync2`: it understands `+CONTINUE <replid>`.
    pub capa_psync2: bool,
    /// `rdb-only 1`: it wants the snapshot and no stream (redis-cli --rdb).
    pub rdb_only: bool,
    /// `rdb-filter-only`: its snapshot holds no keys.
    pub exclude_data: bool,
    /// `rdb-filter-only` without `functions`: nor function libraries.
    pub exclude_functions: bool,
}

impl ReplicaConf {
    /// How logs name the replica at `addr`: the address it announced (else
    /// its connection's) and its listening port (Redis's
    /// replicationGetSlaveName).
    pub fn name(&self, addr: &crate::net::addr::PeerAddr) -> String {
        let ip = match &self.announced_ip {
            Some(ip) => ip.clone(),
            None => addr.ip().to_string(),
        };
        match self.listening_port {
            0 => format!("{ip}:<unknown-replica-port>"),
            port if ip.contains(':') => format!("[{ip}]:{port}"),
            port => format!("{ip}:{port}"),
        }
    }
}

/// A replica attached to this server.
pub struct Replica {
    /// Its client id.
    pub client_id: u64,
    /// Its connection.
    pub tx: ConnTx,
    /// Its connection's buffers (output limits).
    pub bufs: Rc<ConnBuffers>,
    /// Its address.
    pub addr: crate::net::addr::PeerAddr,
    /// What it announced.
    pub conf: ReplicaConf,
    /// Where it stands.
    pub state: ReplicaState,
    /// The offset its snapshot stands for.
    pub sync_offset: u64,
    /// The offset of the next stream byte it is to be given (Redis's
    /// `ref_repl_buf_node` and `ref_block_pos`): set by the first bytes
    /// fed after it attached, or where its PSYNC continues. While its
    /// snapshot is made it stays there, so the buffer keeps the stream
    /// since the fork for it.
    pub cursor: Option<u64>,
    /// The offset it last acknowledged (REPLCONF ACK).
    pub ack_offset: u64,
    /// Real Unix ms of its last acknowledgement.
    pub ack_ms: u64,
    /// Real Unix ms when it asked to sync.
    pub since_ms: u64,
    /// It used SYNC, not PSYNC: no `+FULLRESYNC` line before the snapshot.
    pub old_sync: bool,
    /// While a streamed snapshot is sent: its output bytes still queued
    /// when last looked at, and the real Unix ms when they last went down
    /// (Redis's repl_last_partial_write).
    pub transfer_progress: (usize, u64),
}

impl Replica {
    /// Where it reads on, when it is online and has stream before `next`
    /// (the next byte to come) still to be given.
    fn behind(&self, next: u64) -> Option<u64> {
        self.cursor
            .filter(|&c| c < next && self.state == ReplicaState::Online)
    }

    /// How logs name it (replicationGetSlaveName).
    pub fn name(&self) -> String {
        self.conf.name(&self.addr)
    }

    /// The address it is known by: the one it announced, else its
    /// connection's.
    pub fn ip(&self) -> String {
        self.conf
            .announced_ip
            .clone()
            .unwrap_or_else(|| self.addr.ip().to_string())
    }
}

/// The state of a replica's link to its master (Redis's `repl_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// Not connected; connects at the next cron.
    Connect,
    /// Connecting.
    Connecting,
    /// Connected, handshaking up to the PSYNC reply.
    Handshake,
    /// Receiving the snapshot.
    Transfer,
    /// Connected: applying the stream.
    Connected,
}

impl LinkState {
    /// The name ROLE shows.
    pub fn role_name(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Transfer => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// This server's master, when it is a replica (REPLICAOF host port).
pub struct MasterLink {
    /// The master's host.
    pub host: String,
    /// The master's port.
    pub port: u16,
    /// Where the link stands.
    pub state: LinkState,
    /// The master client, once connected.
    pub client_id: Option<u64>,
    /// The replication offset the master client's stream started at (its
    /// bytes read so far are added for INFO's `slave_read_repl_offset`).
    pub read_base: u64,
    /// Its connection, for REPLCONF ACK.
    pub tx: Option<ConnTx>,
    /// Real Unix ms of the last data from the master.
    pub last_io_ms: u64,
    /// Real Unix ms since when the link is down (0: never connected).
    pub down_since_ms: u64,
    /// Real Unix ms of the last REPLCONF ACK sent.
    pub last_ack_ms: u64,
    /// Real Unix ms before which no new connection is tried.
    pub next_attempt_ms: u64,
    /// The next attempt, due at once, was already logged: "Connecting to
    /// MASTER" by REPLICAOF (replicationSetMaster), "Reconnecting to
    /// MASTER" when the link was lost (replicationHandleMasterDisconnection);
    /// Redis connects from there, not from its once-a-second cron.
    pub announced: bool,
    /// Bumped on every change of master, so a handshake for an older one
    /// is ignored.
    pub generation: u64,
    /// The master's commands since its MULTI, applied (queued) but not yet
    /// counted in the offset: as in Redis, a link lost inside a
    /// transaction resumes at its MULTI, not in its middle.
    pub multi_held: Vec<u8>,
}

impl MasterLink {
    /// The master client went away (closed, or killed by CLIENT KILL):
    /// the link is down from now, its state kept to continue from, and
    /// the executor reconnects at once, as Redis 7.0's
    /// replicationCacheMaster and replicationHandleMasterDisconnection do
    /// (not a second later, as a failed attempt is retried).
    pub fn lost(&mut self) {
        self.client_id = None;
        self.tx = None;
        self.state = LinkState::Connect;
        self.down_since_ms = crate::util::clock::real_now_ms();
        self.multi_held.clear();
        tracing::warn!("Connection with master lost.");
        tracing::info!("Caching the disconnected master state.");
        tracing::info!("Reconnecting to MASTER {}:{}", self.host, self.port);
        log_sync_started(&self.host);
        self.next_attempt_ms = 0;
        self.announced = true;
    }

    /// A connection attempt is due now (the loop makes it without
    /// waiting for its timer). The clock is read only while the link is
    /// down: the loop asks on every round.
    pub fn attempt_due(&self) -> bool {
        self.state == LinkState::Connect
            && crate::util::clock::real_now_ms() >= self.next_attempt_ms
    }
}

/// Where a FAILOVER stands (Redis's `failover_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailoverState {
    /// Writes are paused until a replica acknowledged the whole stream.
    WaitForSync,
    /// This server follows the target and asks it, with `PSYNC ...
    /// FAILOVER`, to become the master.
    InProgress,
}

/// A coordinated failover to a replica (FAILOVER).
#[derive(Clone, Debug)]
pub struct Failover {
    /// Where it stands.
    pub state: FailoverState,
    /// The replica to hand over to (`TO host port`), or the first caught
    /// up once found.
    pub target: Option<(String, u16)>,
    /// Real Unix ms when waiting for the replica ends (`TIMEOUT`); 0 never.
    pub end_ms: u64,
    /// Hand over at the timeout even to a replica behind (`FORCE`).
    pub force: bool,
}

impl Failover {
    /// The state's name in INFO replication (`master_failover_state`).
    pub fn state_name(failover: Option<&Failover>) -> &'static str {
        match failover.map(|f| f.state) {
            None => "no-failover",
            Some(FailoverState::WaitForSync) => "waiting-for-sync",
            Some(FailoverState::InProgress) => "failover-in-progress",
        }
    }
}

/// Replication's memory (INFO memory, MEMORY STATS).
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplMemory {
    /// `mem_replication_backlog`.
    pub backlog: u64,
    /// `mem_clients_slaves`.
    pub replicas: u64,
    /// `mem_total_replication_buffers`.
    pub buffers: u64,
}

/// Full and partial synchronizations served (INFO stats).
#[derive(Clone, Copy, Debug, Default)]
pub struct SyncStats {
    /// `sync_full`.
    pub full: u64,
    /// `sync_partial_ok`.
    pub partial_ok: u64,
    /// `sync_partial_err`.
    pub partial_err: u64,
}

/// The replication state of the server.
pub struct Replication {
    /// The replication ID of the history this server has.
    pub replid: String,
    /// The ID of the history before the last promotion.
    pub replid2: String,
    /// Up to which offset `replid2` is valid (-1: none).
    pub second_replid_offset: i64,
    /// Bytes of stream produced or received (`master_repl_offset`).
    pub offset: u64,
    /// The replication buffer and its backlog, once a replica ever
    /// attached.
    pub backlog: Option<ReplBuffer>,
    /// `repl-backlog-size`.
    pub backlog_size: usize,
    /// An online replica has stream left to be given
    /// ([`Replication::pump`]).
    pub lagging: bool,
    /// `dbfilename` was last written for replicas (Redis's
    /// RDBGeneratedByReplication), for rdb-del-sync-files to remove.
    pub rdb_from_replication: bool,
    /// The stream written by the running batch, not yet handed out.
    pub log: CommandLog,
    /// The replicas attached.
    pub replicas: Vec<Replica>,
    /// The master, when this server is a replica.
    pub master: Option<MasterLink>,
    /// Synchronizations served.
    pub stats: SyncStats,
    /// Real Unix ms since when no replica is attached (backlog TTL).
    pub no_replicas_since_ms: u64,
    /// Runs of the once-a-second replication cron (Redis's
    /// `replication_cron_loops`): replicas are pinged when it is a multiple
    /// of `repl-ping-replica-period`.
    pub cron_loops: u64,
    /// A replica has a history to continue (Redis's cached master): its
    /// master's after a sync, its own after REPLICAOF demoted it, the one
    /// its file recorded at start-up. PSYNC asks to continue it; without
    /// one a replica asks `PSYNC ? -1`.
    pub cached_master: bool,
    /// A WAIT asks replicas to acknowledge (REPLCONF GETACK before the
    /// loop sleeps).
    pub get_ack: bool,
    /// The snapshot being made for replicas.
    pub snapshot: Option<crate::persist::SyncSnapshot>,
    /// What the snapshot's rdb-filter-only replicas get instead, made
    /// when it started: no keys, and no keys but the functions.
    pub filtered_rdbs: Option<(Vec<u8>, Vec<u8>)>,
    /// client-output-buffer-limit for replicas: the stream queued for one
    /// (or kept while its snapshot is made) past it closes it.
    pub obuf: super::obuf::Limits,
    /// `min-replicas-to-write` and `min-replicas-max-lag` (seconds).
    pub min_replicas: (usize, u64),
    /// Online replicas whose last acknowledgement is within
    /// `min-replicas-max-lag` (refreshGoodSlavesCount).
    pub good_replicas: usize,
    /// A FAILOVER under way.
    pub failover: Option<Failover>,
    /// As a replica: the database its master's stream was in after the
    /// last command applied; a partial resynchronization continues there
    /// (Redis keeps it in the cached master client).
    pub stream_db: usize,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            replid: new_replid(),
            replid2: NO_REPLID.into(),
            second_replid_offset: -1,
            offset: 0,
            backlog: None,
            backlog_size: 1 << 20,
            lagging: false,
            rdb_from_replication: false,
            log: CommandLog::default(),
            replicas: Vec::new(),
            master: None,
            stats: SyncStats::default(),
            no_replicas_since_ms: clock::real_now_ms(),
            cron_loops: 0,
            cached_master: false,
            get_ack: false,
            snapshot: None,
            filtered_rdbs: None,
            obuf: super::obuf::Limits::default(),
            min_replicas: (0, 0),
            good_replicas: 0,
            failover: None,
            stream_db: 0,
        }
    }
}

/// A random 40-hex-character replication ID.
pub fn new_replid() -> String {
    (0..40)
        .map(|_| char::from_digit(u32::from(rand::random::<u8>() % 16), 16).unwrap_or('0'))
        .collect()
}

impl Replication {
    /// The stream applied so far (master_repl_offset, and a replica's
    /// processed offset).
    pub fn current_offset(&self) -> u64 {
        self.offset + self.log.buf.len() as u64
    }

    /// replicationGetSlaveOffset: the offset applied from the master, 0
    /// when this server follows none, or is taking a full resynchronization
    /// (Redis then has neither a master client nor a cached one: the
    /// cluster hides such a replica from CLUSTER SLOTS).
    pub fn replica_offset(&self) -> u64 {
        match &self.master {
            Some(m) if m.state != LinkState::Transfer => self.current_offset(),
            _ => 0,
        }
    }

    /// True when this server produces a stream for replicas: it has a
    /// backlog and is not itself a replica (which passes its master's
    /// stream on instead). The one check on the hot path.
    #[inline]
    pub fn feeding(&self) -> bool {
        self.backlog.is_some() && self.master.is_none()
    }

    /// Creates the backlog when the first replica attaches (Redis's
    /// createReplicationBacklog); a master starts a new history then.
    pub fn ensure_backlog(&mut self) {
        if self.backlog.is_some() {
            return;
        }
        if self.master.is_none() {
            self.replid = new_replid();
            self.clear_replid2();
            tracing::info!(
                "Replication backlog created, my new replication IDs are '{}' and '{}'",
                self.replid,
                self.replid2
            );
        }
        self.backlog = Some(ReplBuffer::new(self.backlog_size, self.offset + 1));
        self.log.db = None;
    }

    /// Forgets the previous history's ID.
    pub fn clear_replid2(&mut self) {
        self.replid2 = NO_REPLID.into();
        self.second_replid_offset = -1;
    }

    /// The offset of the backlog's first byte (`repl_backlog_first_byte_offset`).
    pub fn backlog_first_offset(&self) -> u64 {
        match &self.backlog {
            Some(b) => b.first_offset(),
            None => 0,
        }
    }

    /// Appends the batch's stream to the backlog and hands it to the
    /// replicas: online ones get it now, those whose snapshot is being
    /// made keep it for after the snapshot.
    pub fn flush(&mut self) {
        if self.log.buf.is_empty() {
            return;
        }
        let buf = std::mem::take(&mut self.log.buf);
        self.append(&buf);
        self.log.buf = buf;
        self.log.buf.clear();
    }

    /// Passes bytes of the master's stream on (a replica's own replicas
    /// and backlog get exactly what its master sent).
    pub fn proxy(&mut self, bytes: &[u8]) {
        self.append(bytes);
    }

    fn append(&mut self, bytes: &[u8]) {
        let from = self.offset + 1;
        self.offset += bytes.len() as u64;
        let limits = self.obuf_limits();
        let Some(b) = &mut self.backlog else {
            return;
        };
        let added = b.append(bytes);
        let mut over = false;
        for r in &mut self.replicas {
            if r.state == ReplicaState::WaitSnapshotStart || r.conf.rdb_only {
                continue;
            }
            let cursor = *r.cursor.get_or_insert(from);
            // Up to date with room in its output: given the bytes now.
            if r.state == ReplicaState::Online && cursor == from {
                if r.bufs.pending.get() < PUMP_HIGH {
                    let _ = r.tx.send(ToConn::Push(bytes.to_vec()));
                    r.cursor = Some(self.offset + 1);
                } else {
                    self.lagging = true;
                }
            }
            // Checked as a block is added, as in Redis's feedReplicationBuffer.
            if added && !limits.is_off() {
                let held = b.held_from(r.cursor.unwrap_or(from)).0 + r.bufs.pending.get();
                if limits.reached(&r.bufs, held) && r.bufs.kill() {
                    over = true;
                    tracing::warn!(
                        "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits (slave).",
                        r.client_id,
                        r.addr
                    );
                    let _ = r.tx.send(ToConn::Close);
                }
            }
        }
        if over {
            self.replicas.retain(|r| !r.bufs.killed.get());
            if self.replicas.is_empty() {
                self.no_replicas_since_ms = clock::real_now_ms();
            }
        }
        if added {
            self.trim(backlog::TRIM_BLOCKS_PER_CALL);
        }
    }

    /// The replicas' output limits; a hard limit below the backlog's size
    /// counts as that size (Redis's checkClientOutputBufferLimits: the
    /// stream a partial resynchronization sends must fit).
    fn obuf_limits(&self) -> super::obuf::Limits {
        let mut limits = self.obuf;
        if limits.hard != 0 && limits.hard < self.backlog_size {
            limits.hard = self.backlog_size;
        }
        limits
    }

    /// Gives the online replicas that are behind more of the stream, as
    /// their connections take it (Redis's writeToClient for replicas
    /// reading the shared buffer); the blocks none needs any more are
    /// trimmed.
    pub fn pump(&mut self) {
        if !std::mem::take(&mut self.lagging) {
            return;
        }
        let Some(b) = &self.backlog else {
            return;
        };
        let next = self.offset + 1;
        let mut moved = false;
        for r in &mut self.replicas {
            let Some(cursor) = r.behind(next) else {
                continue;
            };
            let room = PUMP_HIGH.saturating_sub(r.bufs.pending.get());
            if room == 0 {
                self.lagging = true;
                continue;
            }
            let mut chunk = Vec::with_capacity(room.min((next - cursor) as usize));
            let to = b.read(cursor, room, &mut chunk);
            let _ = r.tx.send(ToConn::Push(chunk));
            r.cursor = Some(to);
            moved = true;
            if to < next {
                self.lagging = true;
            }
        }
        if moved {
            self.trim(backlog::TRIM_BLOCKS_PER_CALL);
        }
    }

    /// True when a replica behind has room in its connection's output:
    /// the loop pumps again without sleeping (a replica whose output is
    /// full wakes it when its socket drains).
    pub fn pump_ready(&self) -> bool {
        if !self.lagging {
            return false;
        }
        let next = self.offset + 1;
        (self.replicas.iter()).any(|r| r.behind(next).is_some() && r.bufs.pending.get() < PUMP_HIGH)
    }

    /// Frees up to `max_blocks` blocks of the buffer no replica needs
    /// beyond the backlog's size (incrementalTrimReplicationBacklog).
    pub fn trim(&mut self, max_blocks: usize) {
        let Some(b) = &mut self.backlog else {
            return;
        };
        if b.histlen() <= b.limit() {
            return;
        }
        let needed = (self.replicas.iter())
            .filter_map(|r| r.cursor)
            .min()
            .unwrap_or(u64::MAX);
        b.trim(max_blocks, needed);
    }

    /// Where a replica named `name` asking `PSYNC replid offset` continues
    /// from, or None for a full resynchronization, with Redis's log line
    /// for why: it can when the ID names this history, or the one before
    /// the last promotion up to where they part, and the buffer still
    /// holds the stream from there (masterTryPartialResynchronization).
    pub fn psync_from(&self, replid: &str, offset: i64, name: &str) -> Option<u64> {
        let known = replid.eq_ignore_ascii_case(&self.replid)
            || (replid.eq_ignore_ascii_case(&self.replid2) && offset <= self.second_replid_offset);
        if !known {
            if replid.starts_with('?') {
                tracing::info!("Full resync requested by replica {name}");
            } else if !replid.eq_ignore_ascii_case(&self.replid)
                && !replid.eq_ignore_ascii_case(&self.replid2)
            {
                tracing::info!(
                    "Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '{replid}', my replication IDs are '{}' and '{}')",
                    self.replid,
                    self.replid2
                );
            } else {
                tracing::info!(
                    "Partial resynchronization not accepted: Requested offset for second ID was {offset}, but I can reply up to {}",
                    self.second_replid_offset
                );
            }
            return None;
        }
        let from = u64::try_from(offset).ok();
        match from.filter(|&o| self.backlog.as_ref().is_some_and(|b| b.holds(o))) {
            Some(o) => Some(o),
            None => {
                tracing::info!(
                    "Unable to partial resync with replica {name} for lack of backlog (Replica request was: {offset})."
                );
                if offset > self.offset as i64 {
                    tracing::warn!(
                        "Warning: replica {name} tried to PSYNC with an offset that is greater than the master replication offset."
                    );
                }
                None
            }
        }
    }

    /// What replica `r` holds of the shared buffer, as Redis counts a
    /// replica's output memory, and the number of blocks that is.
    pub fn replica_share(&self, r: &Replica) -> (usize, usize) {
        match (&self.backlog, r.cursor) {
            (Some(b), Some(c)) => b.held_from(c),
            _ => (0, 0),
        }
    }

    /// The replica with client id `id`.
    pub fn replica_mut(&mut self, id: u64) -> Option<&mut Replica> {
        self.replicas.iter_mut().find(|r| r.client_id == id)
    }

    /// Forgets a replica whose connection closed; the blocks it alone
    /// held go in steps (freeReplicaReferencedReplBuffer).
    pub fn forget(&mut self, id: u64) {
        let Some(at) = self.replicas.iter().position(|r| r.client_id == id) else {
            return;
        };
        let r = self.replicas.remove(at);
        tracing::warn!("Connection with replica {} lost.", r.name());
        if self.replicas.is_empty() {
            self.no_replicas_since_ms = clock::real_now_ms();
        }
        self.trim(backlog::TRIM_BLOCKS_PER_CALL);
    }

    /// Takes `min-replicas-to-write` and `min-replicas-max-lag` from the
    /// configuration.
    pub fn load_config(&mut self, config: &crate::config::Config) {
        self.obuf = super::obuf::Limits::from_config(&config.get("client-output-buffer-limit"))
            [super::obuf::Class::Replica as usize];
        self.min_replicas = (
            config.get_i64("min-replicas-to-write").unwrap_or(0).max(0) as usize,
            config.get_i64("min-replicas-max-lag").unwrap_or(10).max(0) as u64,
        );
        self.backlog_size = config
            .get_i64("repl-backlog-size")
            .unwrap_or(1 << 20)
            .max(1) as usize;
        if let Some(b) = &mut self.backlog {
            b.set_limit(self.backlog_size);
        }
        self.trim(backlog::TRIM_BLOCKS_PER_CALL);
        self.refresh_good_replicas();
    }

    /// Counts the replicas that acknowledged within `min-replicas-max-lag`.
    pub fn refresh_good_replicas(&mut self) {
        let now = clock::real_now_ms();
        let lag_ms = self.min_replicas.1 * 1000;
        self.good_replicas = self
            .replicas
            .iter()
            .filter(|r| r.state == ReplicaState::Online && now.saturating_sub(r.ack_ms) <= lag_ms)
            .count();
    }

    /// True when writes are refused for want of good replicas
    /// (`-NOREPLICAS`).
    pub fn too_few_replicas(&self) -> bool {
        let (n, lag) = self.min_replicas;
        self.master.is_none() && n > 0 && lag > 0 && self.good_replicas < n
    }

    /// The replica known as `host:port`: its announced or connection
    /// address and its listening port (findReplica).
    pub fn find_replica(&self, host: &str, port: u16) -> Option<&Replica> {
        self.replicas
            .iter()
            .find(|r| r.conf.listening_port == port && r.ip() == host)
    }

    /// Replicas whose acknowledged offset reached `offset` (WAIT).
    pub fn acked(&self, offset: u64) -> usize {
        self.replicas
            .iter()
            .filter(|r| r.state == ReplicaState::Online && r.ack_offset >= offset)
            .count()
    }

    /// Closes every replica's connection (this server follows a new
    /// master; they must resynchronize, as Redis's disconnectSlaves).
    pub fn disconnect_replicas(&mut self) {
        for r in self.replicas.drain(..) {
            let _ = r.tx.send(ToConn::Close);
        }
        self.no_replicas_since_ms = clock::real_now_ms();
    }

    /// Becomes a master with the history it has (REPLICAOF NO ONE, Redis's
    /// shiftReplicationId): the old ID stays valid up to the current
    /// offset, so replicas of the old master continue partially. This
    /// server's own replicas are disconnected (Redis's
    /// replicationUnsetMaster): they reconnect, continue partially and so
    /// learn the new ID.
    pub fn promote(&mut self) {
        crate::config::log::set_role(b'M');
        super::set_oom_class(crate::util::process::OomClass::Master);
        self.discard_cached_master();
        self.replid2 = std::mem::replace(&mut self.replid, new_replid());
        self.second_replid_offset = self.offset as i64 + 1;
        tracing::warn!(
            "Setting secondary replication ID to {}, valid up to offset: {}. New replication ID is {}",
            self.replid2,
            self.second_replid_offset,
            self.replid
        );
        self.master = None;
        self.log.db = None;
        if !self.replicas.is_empty() {
            self.disconnect_replicas();
        }
    }

    /// A master turning replica, or a replica started from a file that
    /// recorded its history, offers its own history to continue (Redis's
    /// replicationCacheMasterUsingMyself).
    pub fn cache_master_using_myself(&mut self) {
        tracing::info!(
            "Before turning into a replica, using my own master parameters to synthesize a \
             cached master: I may be able to synchronize with the new master with just a \
             partial transfer."
        );
        self.cached_master = true;
    }

    /// Forgets the history a replica had to continue (Redis's
    /// replicationDiscardCachedMaster): on promotion, and before a full
    /// sync's data set replaces this one.
    pub fn discard_cached_master(&mut self) {
        if std::mem::take(&mut self.cached_master) {
            tracing::info!("Discarding previously cached master state.");
        }
    }

    /// Memory ferrokv holds for replicas besides the shared buffer: the
    /// stream (or snapshot) handed to their connections and not yet
    /// written, and a snapshot collected for them.
    fn replica_output_memory(&self) -> u64 {
        let queued: usize = (self.replicas.iter())
            .map(|r| match r.bufs.pending.get() {
                0 => 0,
                // While output waits its whole buffer is the replica's.
                n => n.max(r.bufs.output_alloc.get()),
            })
            .sum();
        (queued + self.snapshot.as_ref().map_or(0, |s| s.held())) as u64
    }

    /// The replication buffer's memory as Redis reports it
    /// (getMemoryOverheadData): the backlog's share, at most its size
    /// while replicas are attached (with the index Redis keeps over the
    /// blocks), and the replicas' share, what passes it plus what they
    /// hold of their own.
    pub fn memory(&self) -> ReplMemory {
        let Some(b) = &self.backlog else {
            return ReplMemory {
                replicas: self.replica_output_memory(),
                ..ReplMemory::default()
            };
        };
        let total = b.mem() as u64;
        let limit = b.limit() as u64;
        let (backlog, shared) = if !self.replicas.is_empty() && total > limit {
            (limit, total - limit)
        } else {
            (total, 0)
        };
        ReplMemory {
            backlog: backlog + b.index_memory() as u64,
            replicas: shared + self.replica_output_memory(),
            buffers: total,
        }
    }

    /// What maxmemory leaves out for replication (Redis's
    /// freeMemoryGetNotCountedMemory): the buffer beyond the backlog's
    /// size, replicas or not (a disconnected replica's blocks are freed in
    /// steps), and the replicas' own output.
    pub fn not_counted_memory(&self) -> u64 {
        let beyond = self.backlog.as_ref().map_or(0, |b| {
            let counted = b.limit() + b.limit().div_ceil(16 * 1024).max(1) * 64;
            b.mem().saturating_sub(counted)
        }) as u64;
        let own = if self.replicas.is_empty() {
            0
        } else {
            self.replica_output_memory()
        };
        beyond + own
    }

    /// The history a save records (rdbPopulateSaveInfo): a master's when
    /// it has a backlog, a replica's always.
    pub fn save_info(&self) -> Option<crate::persist::ReplInfo> {
        let stream_db = match (&self.master, &self.backlog) {
            (None, Some(_)) => self.log.db.unwrap_or(0) as i64,
            (None, None) => return None,
            (Some(_), _) => self.stream_db as i64,
        };
        Some(crate::persist::ReplInfo {
            stream_db,
            id: self.replid.as_bytes().try_into().ok()?,
            offset: self.offset,
        })
    }

    /// Takes up the history a file loaded at start-up recorded (Redis's
    /// loadDataFromDisk): a replica continues it with its master; a master
    /// keeps it as its previous history, so its replicas continue.
    pub fn resume(&mut self, info: crate::persist::ReplInfo, backlog_size: usize, replica: bool) {
        let id = String::from_utf8_lossy(&info.id).into_owned();
        if replica || self.master.is_some() {
            self.cache_master_using_myself();
            self.replid = id;
            self.offset = info.offset;
            self.stream_db = info.stream_db as usize;
        } else {
            self.replid2 = id;
            self.second_replid_offset = info.offset as i64 + 1;
            self.offset = info.offset;
            self.backlog = Some(ReplBuffer::new(backlog_size, self.offset + 1));
            self.no_replicas_since_ms = clock::real_now_ms();
        }
    }

    /// Appends a command to the stream outside any database (the PING
    /// masters send their replicas, REPLCONF GETACK).
    pub fn feed_raw_command(&mut self, args: &[&[u8]]) {
        crate::persist::cmdlog::encode(&mut self.log.buf, args);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continues_from_the_buffer_only_within_its_history() {
        let mut r = Replication {
            backlog_size: 16,
            ..Replication::default()
        };
        r.ensure_backlog();
        let id = r.replid.clone();
        r.proxy(b"0123456789");
        assert_eq!(r.offset, 10);
        assert!(r.psync_from(&id, 11, "r").is_some());
        assert!(r.psync_from(&id, 6, "r").is_some());
        assert!(r.psync_from(&id, 12, "r").is_none());
        assert!(r.psync_from("x", 6, "r").is_none());
        r.proxy(&[b'a'; 40_000]);
        // Trimmed to what the backlog's size needs, in whole blocks.
        r.trim(backlog::TRIM_BLOCKS_PER_CALL);
        assert!(r.psync_from(&id, 1, "r").is_none());
        let first = r.backlog_first_offset();
        assert!(first > 1 && r.psync_from(&id, first as i64, "r").is_some());
        r.promote();
        assert!(r.psync_from(&id, r.offset as i64 + 1, "r").is_some());
        r.proxy(b"z");
        assert!(r.psync_from(&id, r.offset as i64, "r").is_some());
        assert!(r.psync_from(&id, r.offset as i64 + 1, "r").is_none());
    }
}

/// Follows `host:port` from now on (replicationSetMaster): the link to any
/// previous master is dropped and the connection is tried at once. This
/// server's replicas stay: they may continue from it, and are disconnected
/// only when its history changes (a full sync's load, a new replication
/// ID). Its own history (ID, offset, backlog) is what the new link asks
/// the new master to continue (replicationCacheMasterUsingMyself).
pub fn set_master(server: &mut crate::server::ServerState, host: String, port: u16) {
    let was_master = server.repl.master.is_none();
    let down_since_ms = down_since(server);
    drop_master_link(server);
    crate::config::log::set_role(b'S');
    if was_master {
        server.repl.cache_master_using_myself();
    }
    tracing::info!("Connecting to MASTER {host}:{port}");
    log_sync_started(&host);
    follow(server, host, port, down_since_ms, true);
}

/// `replicaof` in the configuration file or arguments: the master is set
/// as Redis's config loading sets it, with no history to offer but the one
/// the loaded file records (taken up after) and nothing logged; the loop
/// connects once it runs, logging "Connecting to MASTER" then.
pub fn set_master_from_config(server: &mut crate::server::ServerState, host: String, port: u16) {
    crate::config::log::set_role(b'S');
    let down_since_ms = down_since(server);
    follow(server, host, port, down_since_ms, false);
}

/// Since when the link to a new master is down: Redis's repl_down_since
/// is kept, so a link up now is down from now, one already down from when
/// it dropped; a master was never connected.
fn down_since(server: &crate::server::ServerState) -> u64 {
    match &server.repl.master {
        Some(m) if m.client_id.is_some() => crate::util::clock::real_now_ms(),
        Some(m) => m.down_since_ms,
        None => 0,
    }
}

/// The master link to `host:port`, down, its first attempt due now;
/// `announced` when the attempt was already logged.
fn follow(
    server: &mut crate::server::ServerState,
    host: String,
    port: u16,
    down_since_ms: u64,
    announced: bool,
) {
    crate::server::set_oom_class(crate::util::process::OomClass::Replica);
    let generation = server.repl.master.as_ref().map_or(0, |m| m.generation) + 1;
    server.repl.master = Some(MasterLink {
        host,
        port,
        state: LinkState::Connect,
        client_id: None,
        read_base: 0,
        tx: None,
        last_io_ms: 0,
        down_since_ms,
        last_ack_ms: 0,
        next_attempt_ms: 0,
        announced,
        generation,
        multi_held: Vec::new(),
    });
}

/// Logs "MASTER <-> REPLICA sync started" as a connection to `host` is
/// tried, where Redis's connectWithMaster does: here for an address,
/// whose connect cannot fail before it starts; for a name, the handshake
/// thread logs it once the name resolved (Redis logs "Unable to connect
/// to MASTER" instead when it does not).
pub fn log_sync_started(host: &str) {
    if is_address(host) {
        tracing::info!("MASTER <-> REPLICA sync started");
    }
}

/// `host` is an IP address, not a name to resolve.
pub fn is_address(host: &str) -> bool {
    host.parse::<std::net::IpAddr>().is_ok()
}

/// Closes the connection to the master, if there is one, for a new master
/// or none. Redis's freeClient logs it as a master's lost link, under the
/// role `M`: the master's address is already cleared then.
pub fn drop_master_link(server: &mut crate::server::ServerState) {
    let Some(id) = server.repl.master.as_mut().and_then(|m| m.client_id.take()) else {
        return;
    };
    crate::config::log::set_role(b'M');
    tracing::warn!("Connection with master lost.");
    tracing::info!("Caching the disconnected master state.");
    server.kill_client(id);
    if let Some(m) = &mut server.repl.master {
        m.tx = None;
    }
}
