//! What the event loop and the engine exchange on their one thread: the
//! events a poll produces (a connection, a framed batch, a disconnect),
//! the pushes and closes the engine sends to connections other than the
//! one it is serving, and the stop signal other threads set.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicI32};

use super::request::Batch;

/// A message from the network to the executor.
pub enum Request {
    /// A client connected.
    Connect(NewClient),
    /// Commands parsed from one read.
    Batch {
        /// The client.
        id: u64,
        /// The commands.
        batch: Batch,
        /// Output buffer to append replies to.
        out: Vec<u8>,
    },
    /// A client went away.
    Disconnect {
        /// Its id.
        id: u64,
    },
    /// SIGTERM/SIGINT (the signal), or a stop asked for by the embedding
    /// program (None): stop as SHUTDOWN does.
    Shutdown(Option<i32>),
}

/// A newly accepted connection, as the executor registers it.
pub struct NewClient {
    /// Its id.
    pub id: u64,
    /// Peer address.
    pub addr: super::addr::PeerAddr,
    /// Local address.
    pub laddr: super::addr::PeerAddr,
    /// Where pushes and closes for it go.
    pub tx: ConnTx,
    /// The socket's file descriptor (CLIENT LIST).
    pub fd: i64,
    /// A TLS connection (`tls-port`).
    pub tls: bool,
    /// Output accounting shared with the connection.
    pub bufs: Rc<ConnBuffers>,
}

/// What threads other than the event loop's touch: the stop signal. A
/// signal handler (or a dropped [`crate::Server`]) stores a number and
/// wakes the loop; the loop sets `shutting_down` when it stops.
#[derive(Default)]
pub struct Shared {
    /// Set when the server is shutting down.
    pub shutting_down: AtomicBool,
    /// A signal (SIGTERM/SIGINT number) waiting for the event loop.
    pub signal: AtomicI32,
    /// A signal's shutdown is pending (Redis's shutdown_asap): a second
    /// SIGINT meanwhile ends the process at once.
    pub shutdown_asap: AtomicBool,
}

/// What the executor sends a connection besides its own replies, which
/// it hands back directly ([`crate::net::event_loop::Net::replies`]).
pub enum ToConn {
    /// Bytes to write outside a reply (RESP3 push, pub/sub messages, the
    /// replies of a client that blocked).
    Push(Vec<u8>),
    /// Close the connection now (CLIENT KILL, shutdown).
    Close,
    /// Set TCP_NODELAY on the connection (a replica's link under
    /// `repl-disable-tcp-nodelay`).
    NoDelay(bool),
}

/// Messages for connections, tagged with the client id, in the order the
/// executor produced them. The event loop drains it after every request;
/// both sides run on the same thread, so nothing waits or wakes.
pub type Outbox = Rc<RefCell<Vec<(u64, ToConn)>>>;

/// A client's way to its connection: messages go to the event loop's
/// outbox under the client's id.
#[derive(Clone)]
pub struct ConnTx {
    id: u64,
    outbox: Option<Outbox>,
}

impl ConnTx {
    /// Messages for connection `id`, delivered through `outbox`.
    pub fn new(id: u64, outbox: Outbox) -> Self {
        ConnTx {
            id,
            outbox: Some(outbox),
        }
    }

    /// For clients without a connection (scripts, AOF loading, tests):
    /// every message is dropped.
    pub fn detached() -> Self {
        ConnTx {
            id: 0,
            outbox: None,
        }
    }

    /// Queues `msg` for the connection; fails when there is none.
    pub fn send(&self, msg: ToConn) -> Result<(), ToConn> {
        match &self.outbox {
            Some(o) => {
                o.borrow_mut().push((self.id, msg));
                Ok(())
            }
            None => Err(msg),
        }
    }
}

/// What a connection's buffers hold, shared by the event loop (which
/// sets it as it reads, frames and writes) and the executor (CLIENT LIST,
/// output buffer limits, client eviction). Both run on one thread.
#[derive(Default)]
pub struct ConnBuffers {
    /// Output bytes queued and not yet written.
    pub pending: Cell<usize>,
    /// Unix second since when `pending` is over the soft limit (0: not over).
    pub soft_since: Cell<u64>,
    /// Set when the client is being closed (output limits, eviction).
    pub killed: Cell<bool>,
    /// Another process serves the socket now (a forked Lua debugging
    /// session): closing it here must not shut it down for that process.
    pub handed_over: Cell<bool>,
    /// Bytes in the query buffer (a large argument's own buffer included).
    pub query: Cell<usize>,
    /// Bytes read from the socket so far (a master link's read offset).
    pub read_total: Cell<u64>,
    /// Bytes allocated for the query buffer.
    pub query_alloc: Cell<usize>,
    /// Bytes allocated for output, queued or spare.
    pub output_alloc: Cell<usize>,
    /// The reply buffer's size (CLIENT LIST `rbs`).
    pub reply_size: Cell<usize>,
    /// The reply buffer's recent peak (CLIENT LIST `rbp`).
    pub reply_peak: Cell<usize>,
    /// Bytes the executor holds for the client besides its buffers (its
    /// state, MULTI queue, subscriptions), as it last counted them.
    pub held: Cell<usize>,
    /// This connection's share last added to `total`.
    counted: Cell<usize>,
    /// A replica or master link: not a client in `total` (Redis counts
    /// those apart from normal and pub/sub clients).
    link: Cell<bool>,
    /// The sum of every connection's [`Self::memory`] (INFO
    /// `mem_clients_normal`, `maxmemory-clients`).
    total: Rc<Cell<usize>>,
}

impl ConnBuffers {
    /// Buffers counted in `total`.
    pub fn new(total: Rc<Cell<usize>>) -> Self {
        ConnBuffers {
            total,
            ..ConnBuffers::default()
        }
    }

    /// The client's memory: its buffers and what the executor holds for
    /// it (Redis's getClientMemoryUsage).
    pub fn memory(&self) -> usize {
        self.query_alloc.get() + self.output_alloc.get() + self.held.get()
    }

    /// Counts the current [`Self::memory`] in the total, after a change.
    /// A client being closed no longer counts.
    pub fn recount(&self) {
        let now = if self.killed.get() || self.link.get() {
            0
        } else {
            self.memory()
        };
        let total = (self.total.get() + now).saturating_sub(self.counted.get());
        self.total.set(total);
        self.counted.set(now);
    }

    /// Marks the connection as a replica's or the master's: it leaves the
    /// clients' total (INFO mem_clients_normal, `maxmemory-clients`).
    pub fn set_link(&self) {
        self.link.set(true);
        self.recount();
    }

    /// Marks the client as being closed: it leaves the total at once.
    /// Returns false when it already was.
    pub fn kill(&self) -> bool {
        if self.killed.replace(true) {
            return false;
        }
        self.recount();
        true
    }
}
