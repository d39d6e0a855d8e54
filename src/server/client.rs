//! Per-client state kept by the executor (Redis's `client` struct): the
//! selected database, protocol, name, auth, reply mode and connection facts
//! for CLIENT LIST.

use std::net::SocketAddr;
use std::rc::Rc;

use super::multi::MultiState;
use crate::net::link::{ConnTx, OutQueue};
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
    /// Peer address.
    pub addr: SocketAddr,
    /// Local address.
    pub laddr: SocketAddr,
    /// Creation time in Unix milliseconds.
    pub created_ms: u64,
    /// Last command time in Unix milliseconds.
    pub last_interaction_ms: u64,
    /// Name of the last command run (CLIENT LIST `cmd=`).
    pub last_cmd: String,
    /// CLIENT REPLY state.
    pub reply_mode: ReplyMode,
    /// CLIENT NO-EVICT.
    pub no_evict: bool,
    /// Close once the current reply is written.
    pub close_after_reply: bool,
    /// Channel to the connection task.
    pub tx: ConnTx,
    /// Bytes of the query buffer (CLIENT LIST `qbuf`), as last reported.
    pub qbuf: usize,
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
    pub outq: Rc<OutQueue>,
}

impl Client {
    /// A fresh client in database 0 speaking RESP2.
    pub fn new(id: u64, addr: SocketAddr, laddr: SocketAddr, tx: ConnTx, now_ms: u64) -> Self {
        Client {
            id,
            db: 0,
            resp3: false,
            name: Vec::new(),
            authenticated: false,
            fd: -1,
            addr,
            laddr,
            created_ms: now_ms,
            last_interaction_ms: now_ms,
            last_cmd: "NULL".into(),
            reply_mode: ReplyMode::On,
            no_evict: false,
            close_after_reply: false,
            tx,
            qbuf: 0,
            kind: ClientKind::Normal,
            deny_blocking: false,
            script: false,
            reprocessing: false,
            multi: None,
            outq: Rc::new(OutQueue::default()),
        }
    }

    /// A client with no connection (Redis's fake clients: the scripts'
    /// client, the AOF loader): authenticated, its messages go nowhere.
    pub fn internal() -> Self {
        let addr = SocketAddr::new(std::net::Ipv4Addr::UNSPECIFIED.into(), 0);
        let mut c = Client::new(0, addr, addr, ConnTx::detached(), clock::real_now_ms());
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
