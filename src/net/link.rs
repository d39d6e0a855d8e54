//! What the event loop and the engine exchange on their one thread: the
//! requests a read produces, the messages that go back to a connection,
//! and the few facts the network side reads without the engine (limits,
//! counters, the stop signal).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::request::Batch;
use crate::config::Config;

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
        /// Bytes still buffered after the batch (CLIENT LIST `qbuf`).
        qbuf: usize,
    },
    /// A client went away.
    Disconnect {
        /// Its id.
        id: u64,
    },
    /// SIGTERM/SIGINT: stop as SHUTDOWN does.
    Shutdown,
}

/// A newly accepted connection, as the executor registers it.
pub struct NewClient {
    /// Its id.
    pub id: u64,
    /// Peer address.
    pub addr: SocketAddr,
    /// Local address.
    pub laddr: SocketAddr,
    /// Where its replies go.
    pub tx: ConnTx,
    /// Authentication state shared with the connection.
    pub auth: Arc<AtomicBool>,
    /// The socket's file descriptor (CLIENT LIST).
    pub fd: i64,
    /// Output accounting shared with the connection.
    pub outq: Arc<OutQueue>,
}

/// State shared with the network side, read without going through the
/// executor.
#[derive(Default)]
pub struct Shared {
    /// proto-max-bulk-len, read by the request parser.
    pub proto_max_bulk_len: AtomicUsize,
    /// maxclients.
    pub maxclients: AtomicUsize,
    /// client-query-buffer-limit (0: the 1 GB default).
    pub query_buffer_limit: AtomicUsize,
    /// Connected clients.
    pub connected_clients: AtomicUsize,
    /// Connections accepted (INFO total_connections_received).
    pub total_connections: AtomicU64,
    /// Connections refused at maxclients.
    pub rejected_connections: AtomicU64,
    /// Bytes read from clients.
    pub net_input_bytes: AtomicU64,
    /// Bytes written to clients.
    pub net_output_bytes: AtomicU64,
    /// Whether requirepass is set (unauthenticated clients get smaller
    /// protocol limits).
    pub auth_required: AtomicBool,
    /// protected-mode: refuse non-loopback clients while no password is set.
    pub protected_mode: AtomicBool,
    /// Set when the server is shutting down.
    pub shutting_down: AtomicBool,
    /// A signal (SIGTERM/SIGINT number) waiting for the event loop.
    pub signal: AtomicI32,
    /// Ids for new clients.
    pub next_client_id: AtomicU64,
}

impl Shared {
    /// Copies what the network side reads without the executor from the
    /// configuration (at start and after CONFIG SET).
    pub fn load_config(&self, c: &Config) {
        self.proto_max_bulk_len
            .store(c.proto_max_bulk_len, Ordering::Relaxed);
        self.maxclients.store(c.maxclients, Ordering::Relaxed);
        self.auth_required
            .store(c.requirepass.is_some(), Ordering::Relaxed);
        self.protected_mode
            .store(c.protected_mode, Ordering::Relaxed);
        self.query_buffer_limit
            .store(c.client_query_buffer_limit as usize, Ordering::Relaxed);
    }

    /// A fresh id for a new client.
    pub fn new_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// A message from the executor to a connection task.
pub enum ToConn {
    /// A batch's replies; the batch comes back so its buffers are reused.
    Replies {
        /// The batch, emptied.
        batch: Batch,
        /// Reply bytes to write.
        out: Vec<u8>,
        /// Close the connection once `out` is written (QUIT, CLIENT KILL of
        /// itself, SHUTDOWN).
        close: bool,
    },
    /// Bytes to write outside a reply (RESP3 push, pub/sub messages).
    Push(Vec<u8>),
    /// Close the connection now (CLIENT KILL, shutdown).
    Close,
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

/// Output queued for a connection and not yet written, shared by the
/// executor (which adds pub/sub messages) and the event loop (which sets
/// what is left after each write), so slow subscribers can be cut off.
#[derive(Default)]
pub struct OutQueue {
    /// Bytes queued and not yet written.
    pub pending: AtomicUsize,
    /// Unix ms since when `pending` is over the soft limit (0: not over).
    pub soft_since: AtomicU64,
    /// Set when the client is being closed for its output.
    pub killed: AtomicBool,
}
