//! Per-client state kept by the executor (Redis's `client` struct): the
//! selected database, protocol, name, auth, reply mode and connection facts
//! for CLIENT LIST.

use std::net::SocketAddr;

use crate::net::addr::PeerAddr;
use crate::net::conn::REPLY_CHUNK;
use std::rc::Rc;

use std::fmt::Write as _;

use super::acl::UserRef;
use super::multi::MultiState;
use super::ServerState;
use crate::net::link::{ConnBuffers, ConnTx};
use crate::net::request::Argv;
use crate::store::Store;
use crate::util::clock;

/// What CLIENT REPLY set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    /// Replies are sent.
    On,
    /// Replies are discarded.
    Off,
    /// The next command's reply is discarded.
    Skip,
    /// The reply of the command running now is discarded.
    SkipThis,
}

/// Client kinds CLIENT LIST and KILL distinguish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientKind {
    /// An ordinary client.
    Normal,
    /// A client in subscriber mode.
    PubSub,
    /// A replica of this server (after SYNC or PSYNC).
    Replica,
    /// This server's master, sending the replication stream.
    Master,
    /// A client in MONITOR mode.
    Monitor,
}

/// One connected client.
pub struct Client {
    /// Unique, increasing id (CLIENT ID).
    pub id: u64,
    /// Selected database.
    pub db: usize,
    /// Negotiated RESP3 (HELLO 3).
    pub resp3: bool,
    /// CLIENT SETNAME name; empty when unset.
    pub name: Vec<u8>,
    /// Authenticated (always true without requirepass); the connection
    /// learns it with each batch's replies, to apply Redis's smaller
    /// request limits to unauthenticated clients.
    pub authenticated: bool,
    /// The socket's file descriptor (CLIENT LIST `fd`).
    pub fd: i64,
    /// A TLS connection.
    pub tls: bool,
    /// Peer address.
    pub addr: PeerAddr,
    /// Local address.
    pub laddr: PeerAddr,
    /// Creation time in Unix milliseconds.
    pub created_ms: u64,
    /// Last command time in Unix milliseconds.
    pub last_interaction_ms: u64,
    /// Name of the last command run (CLIENT LIST `cmd=`).
    pub last_cmd: String,
    /// The bytes of the batch its running command came in, as read (0
    /// between batches): Redis's query buffer holds a whole read until
    /// every command in it has run (CLIENT LIST `qbuf`).
    pub batch_input: usize,
    /// CLIENT REPLY state.
    pub reply_mode: ReplyMode,
    /// CLIENT NO-EVICT.
    pub no_evict: bool,
    /// Close once the current reply is written.
    pub close_after_reply: bool,
    /// Channel to the connection task.
    pub tx: ConnTx,
    /// Kind for CLIENT KILL TYPE.
    pub kind: ClientKind,
    /// Set while commands run inside EXEC or a script: blocking commands
    /// then act like their non-blocking forms, as in Redis.
    pub deny_blocking: bool,
    /// The scripts' client (Redis's CLIENT_SCRIPT): commands that must
    /// stay deterministic in scripts check it.
    pub script: bool,
    /// Its blocking command is running again because a key it waited on
    /// is ready (Redis's CLIENT_REPROCESSING_COMMAND).
    pub reprocessing: bool,
    /// The open transaction, between MULTI and EXEC/DISCARD (Redis
    /// `CLIENT_MULTI` plus `mstate`).
    pub multi: Option<Box<MultiState>>,
    /// Pub/sub output shared with the connection task.
    pub bufs: Rc<ConnBuffers>,
    /// The ACL user it is authenticated as; None for internal clients,
    /// which may run anything.
    pub user: Option<UserRef>,
    /// For the scripts' client while a restricted user's script runs: the
    /// caller's CLIENT INFO, which ACL LOG records for the script's
    /// denials.
    pub script_caller_info: Option<String>,
    /// What the client said with REPLCONF before asking to sync.
    pub replica_conf: Option<Box<super::repl::ReplicaConf>>,
    /// The replication offset right after its last write (WAIT).
    pub woff: u64,
    /// SCRIPT DEBUG YES|SYNC: its next EVAL runs under the Lua debugger.
    pub lua_debug: Option<LuaDebug>,
    /// Cluster READONLY: reads of its master's slots are served by this
    /// replica.
    pub cluster_readonly: bool,
    /// Cluster ASKING: its next command may use a slot being imported.
    pub asking: bool,
    /// The hash slot of the running command's keys (Redis's `c->slot`),
    /// -1 when none; for the scripts' client, its caller's.
    pub cluster_slot: i32,
    /// The scripts' client runs for the master's stream or the AOF, which
    /// cluster routing obeys (mustObeyClient).
    pub cluster_obey: bool,
}

/// How a client's EVAL is debugged (SCRIPT DEBUG).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LuaDebug {
    /// YES: in a forked child, whose writes are thrown away with it.
    Forked,
    /// SYNC: in the server itself, blocking it; writes are kept.
    Sync,
}

impl Client {
    /// A connection through the unix socket or from 127.0.0.1 or ::1
    /// (Redis's islocalClient).
    pub fn is_local(&self) -> bool {
        self.addr.is_local()
    }

    /// A fresh client in database 0 speaking RESP2.
    pub fn new(id: u64, addr: PeerAddr, laddr: PeerAddr, tx: ConnTx, now_ms: u64) -> Self {
        Client {
            id,
            db: 0,
            resp3: false,
            name: Vec::new(),
            authenticated: false,
            fd: -1,
            tls: false,
            addr,
            laddr,
            created_ms: now_ms,
            last_interaction_ms: now_ms,
            last_cmd: "NULL".into(),
            batch_input: 0,
            reply_mode: ReplyMode::On,
            no_evict: false,
            close_after_reply: false,
            tx,
            kind: ClientKind::Normal,
            deny_blocking: false,
            script: false,
            reprocessing: false,
            multi: None,
            bufs: Rc::new(ConnBuffers::default()),
            user: None,
            script_caller_info: None,
            lua_debug: None,
            cluster_readonly: false,
            asking: false,
            cluster_slot: -1,
            cluster_obey: false,
            replica_conf: None,
            woff: 0,
        }
    }

    /// A client with no connection (Redis's fake clients: the scripts'
    /// client, the AOF loader): authenticated, its messages go nowhere.
    pub fn internal() -> Self {
        let addr = PeerAddr::Tcp(SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), 0));
        let mut c = Client::new(
            0,
            addr.clone(),
            addr,
            ConnTx::detached(),
            clock::real_now_ms(),
        );
        c.authenticated = true;
        c
    }

    /// Commands queued when the client is in MULTI (CLIENT LIST `multi=`,
    /// `-1` when None; flag `x` when Some). The count stays while EXEC
    /// runs, as in Redis.
    pub fn multi_len(&self) -> Option<usize> {
        self.multi.as_ref().map(|m| m.len())
    }

    /// Sets the authentication state.
    pub fn set_authenticated(&mut self, yes: bool) {
        self.authenticated = yes;
    }
}

/// Size of `argv` framed as a RESP multibulk request: what Redis's query
/// buffer holds while the command runs (CLIENT LIST `qbuf`).
fn request_size(argv: &Argv<'_>) -> usize {
    let digits = |n: usize| n.to_string().len();
    let mut n = 3 + digits(argv.len());
    for a in argv.iter_from(0) {
        n += 5 + digits(a.len()) + a.len();
    }
    n
}

/// Executor-side facts about a client that CLIENT LIST shows as flags.
#[derive(Clone, Copy)]
struct ClientState {
    /// Blocked in a blocking command (`b`).
    blocked: bool,
    /// A watched key was touched (`d`).
    dirty_cas: bool,
    /// Channels, patterns and shard channels subscribed to.
    subs: (usize, usize, usize),
}

impl ClientState {
    fn of(server: &ServerState, store: &Store, id: u64) -> Self {
        ClientState {
            blocked: server.is_blocked(id),
            dirty_cas: store.watches.is_dirty(id),
            subs: server.pubsub.counts(id),
        }
    }
}

/// Appends one CLIENT LIST line (Redis's catClientInfoString), without the
/// trailing newline. `current` is the running command's argv when `c` is
/// the caller: its query buffer and argv fields then describe it, as in
/// Redis. Fields ferrokv does not track get Redis's values for an idle
/// client.
pub fn info_line(
    out: &mut String,
    c: &Client,
    server: &ServerState,
    store: &Store,
    now_ms: u64,
    current: Option<&Argv<'_>>,
) {
    let state = ClientState::of(server, store, c.id);
    let now_s = now_ms / 1000;
    let mut flags = String::new();
    match c.kind {
        ClientKind::Replica => flags.push('S'),
        ClientKind::Master => flags.push('M'),
        ClientKind::PubSub => flags.push('P'),
        ClientKind::Monitor => flags.push('O'),
        ClientKind::Normal => {}
    }
    if c.multi_len().is_some() {
        flags.push('x');
    }
    if state.blocked {
        flags.push('b');
    }
    let tracking = server.tracking.of(c.id);
    if let Some(t) = tracking {
        flags.push('t');
        if t.broken_redirect {
            flags.push('R');
        }
        if t.bcast {
            flags.push('B');
        }
    }
    if state.dirty_cas {
        flags.push('d');
    }
    if c.close_after_reply {
        flags.push('c');
    }
    if c.addr.is_unix() {
        flags.push('U');
    }
    if c.no_evict {
        flags.push('e');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let bufs = &c.bufs;
    let argv_len = |argv: &Argv<'_>| argv.iter_from(0).map(<[u8]>::len).sum::<usize>();
    let (qbuf, argv_mem) = match (current, server.held_command(c.id)) {
        (Some(argv), _) => {
            let read = match c.batch_input {
                0 => request_size(argv),
                n => n,
            };
            (bufs.query.get() + read, argv_len(argv))
        }
        (None, Some((batch, next))) => {
            let rest: usize = (next + 1..batch.len())
                .map(|i| request_size(&batch.argv(i)))
                .sum();
            (bufs.query.get() + rest, argv_len(&batch.argv(next)))
        }
        (None, None) => (bufs.query.get(), 0),
    };
    let qbuf_free = bufs.query_alloc.get().saturating_sub(qbuf);
    // Output as Redis lays it out: the first 16 KB pending in the client's
    // reply buffer (`obl`), the rest in 16 KB blocks (`oll`), and `omem`
    // the memory output takes beyond the client's reply buffer and the
    // written-out one it swaps with (each `rbs`).
    let pending = bufs.pending.get();
    let rbs = bufs.reply_size.get();
    let obl = pending.min(rbs);
    let mut oll = (pending - obl).div_ceil(REPLY_CHUNK);
    let mut omem = bufs.output_alloc.get().saturating_sub(2 * rbs);
    let mut tot_mem = bufs.query_alloc.get()
        + bufs.output_alloc.get()
        + super::client_mem::held(c, server, store)
        + argv_mem;
    // A replica's output is mostly the shared replication buffer from
    // where it reads on (Redis's getClientOutputBufferMemoryUsage).
    if c.kind == ClientKind::Replica {
        if let Some(r) = server.repl.replicas.iter().find(|r| r.client_id == c.id) {
            let (shared, blocks) = server.repl.replica_share(r);
            oll += blocks;
            omem = shared + pending;
            tot_mem += shared;
        }
    }
    let _ = write!(
        out,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} \
         multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} \
         tot-mem={} events=r cmd={} user={} redir={} resp={}",
        c.id,
        c.addr,
        c.laddr,
        c.fd,
        String::from_utf8_lossy(&c.name),
        now_s.saturating_sub(c.created_ms / 1000),
        now_s.saturating_sub(c.last_interaction_ms / 1000),
        flags,
        c.db,
        state.subs.0,
        state.subs.1,
        state.subs.2,
        c.multi_len().map_or(-1, |n| n as i64),
        qbuf,
        qbuf_free,
        argv_mem,
        c.multi.as_ref().map_or(0, |m| m.argv_len_sums()),
        rbs,
        bufs.reply_peak.get(),
        obl,
        oll,
        omem,
        tot_mem,
        c.last_cmd,
        c.user
            .as_ref()
            // The master client runs as no user, as Redis's.
            .map_or_else(|| "(superuser)".into(), |u| String::from_utf8_lossy(&u.borrow().name).into_owned()),
        tracking.map_or(-1, |t| t.redirect as i64),
        if c.resp3 { 3 } else { 2 },
    );
}
