//! The event loop's network half: one mio poll over the listening sockets
//! and every client connection, run on the executor's thread (Redis's `ae`
//! loop). What a poll finds (a connection, a framed batch, a disconnect)
//! waits in a list of fired events for the executor, as ae's `fired`; the
//! executor hands each batch's replies straight back ([`Net::replies`]);
//! pushes and closes for other connections come through the outbox
//! ([`ToConn`]). Output is written in one pass per loop iteration.
//!
//! Keeping the sockets on the thread that owns the keyspace means a request
//! costs no thread hand-off: no wake-up, no context switch. A script that
//! runs past busy-reply-threshold polls this same loop from its hook to
//! answer other clients (see `script/busy.rs`).

use std::cell::Cell;
use std::collections::VecDeque;
use std::io::Write;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hashbrown::HashMap;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use socket2::{Domain, Socket, Type};

use super::addr::PeerAddr;
use super::conn::{query_buffer_limit, Conn, ReadOutcome, Stream};
use super::io_threads::{IoThreads, Op, Outcome, Task};
use super::listener::{bind_all, protected_denies};
use crate::net::link::{ConnTx, Outbox, ToConn};
use crate::net::link::{NewClient, Request, Shared};

/// Connection `id` of a [`Net`], its socket and buffers back from the I/O
/// threads first if lent (a write's outcome is still to be acted on, see
/// [`Net::finish_write`]): every access to a connection goes through this
/// (a macro, so the other fields stay free to borrow).
macro_rules! conn {
    ($net:ident, $id:expr) => {
        settled(&mut $net.conns, &mut $net.io_threads, $id)
    };
}

/// See [`conn!`].
fn settled<'a>(
    conns: &'a mut HashMap<u64, Conn>,
    threads: &mut Option<IoThreads>,
    id: u64,
) -> Option<&'a mut Conn> {
    let c = conns.get_mut(&id)?;
    if let Some(t) = threads {
        if let Some(i) = c.lent.take() {
            t.settle(Op::Read, i as usize);
        }
        if let Some(i) = c.writing {
            t.settle(Op::Write, i as usize);
        }
    }
    Some(c)
}

/// The waker's token (signals, [`crate::Server::shutdown`]).
const WAKER: Token = Token(usize::MAX);
/// Listener `i` has token `LISTENER_BASE - i`; client tokens are client ids,
/// which never get near.
const LISTENER_BASE: usize = usize::MAX - 1;
/// At most this many listening sockets.
const MAX_LISTENERS: usize = 64;
/// The unix socket's listener (`unixsocket`), just below the TCP ones.
const UNIX_LISTENER: Token = Token(LISTENER_BASE - MAX_LISTENERS);
/// TLS listener `i` (`tls-port`) has token `TLS_LISTENER_BASE - i`, below
/// the unix socket's.
const TLS_LISTENER_BASE: usize = UNIX_LISTENER.0 - 1;

/// Retry delay after accept failed for want of resources (EMFILE).
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// The limits the network side applies, from the configuration
/// ([`Net::load_config`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct NetLimits {
    /// proto-max-bulk-len.
    pub proto_max_bulk_len: usize,
    /// maxclients.
    pub maxclients: usize,
    /// client-query-buffer-limit (0: the 1 GB default).
    pub query_buffer_limit: usize,
    /// A password is set (unauthenticated clients get smaller limits).
    pub auth_required: bool,
    /// protected-mode: refuse non-loopback clients while the default
    /// user has no password.
    pub protected_mode: bool,
    /// The default user has `nopass` (protected mode's condition).
    pub default_nopass: bool,
    /// How reply buffers are resized (DEBUG REPLYBUFFER).
    pub reply_resize: super::conn::ReplyResize,
    /// tcp-keepalive: seconds of idleness before keepalive probes on
    /// accepted connections (0: off).
    pub tcp_keepalive: u64,
    /// tcp-backlog and socket-mark-id: how listening sockets are set up.
    pub listen: super::listener::ListenOpts,
}

/// Connection counters for INFO (stats and clients).
#[derive(Clone, Copy, Debug, Default)]
pub struct NetStats {
    /// Connected clients.
    pub connected_clients: usize,
    /// Connections accepted (total_connections_received).
    pub total_connections: u64,
    /// Connections refused at maxclients.
    pub rejected_connections: u64,
    /// Bytes read from clients.
    pub net_input_bytes: u64,
    /// Bytes written to clients.
    pub net_output_bytes: u64,
    /// Reads from client sockets (total_reads_processed).
    pub total_reads: u64,
    /// Writes to client sockets (total_writes_processed).
    pub total_writes: u64,
    /// Reply buffers shrunk to their peak (reply_buffer_shrinks).
    pub reply_buffer_shrinks: u64,
    /// Reply buffers doubled (reply_buffer_expands).
    pub reply_buffer_expands: u64,
}

/// The sockets and what is queued for and from the executor.
pub struct Net {
    poll: Poll,
    events: Events,
    listeners: Vec<TcpListener>,
    /// The TLS port's listening sockets (`tls-port`).
    tls_listeners: Vec<TcpListener>,
    /// The TLS contexts, while TLS is configured.
    tls: Option<super::tls::Contexts>,
    /// `tls-auth-clients`.
    tls_auth: super::tls::AuthClients,
    /// `tls-cluster`: the bus's links speak TLS.
    tls_cluster: bool,
    /// The unix socket listened on, and its path.
    #[cfg(unix)]
    unix: Option<(mio::net::UnixListener, std::sync::Arc<str>)>,
    conns: HashMap<u64, Conn>,
    /// Requests for the executor, in arrival order.
    requests: VecDeque<Request>,
    outbox: Outbox,
    spare: Vec<(u64, ToConn)>,
    /// Connections with output to write.
    dirty: Vec<u64>,
    /// Connections whose socket may hold more unread bytes.
    unread: Vec<u64>,
    /// (token, readable, writable, peer closed) of the last poll.
    ready: Vec<(Token, bool, bool, bool)>,
    shared: Arc<Shared>,
    waker: Arc<Waker>,
    accept_retry: bool,
    limits: NetLimits,
    stats: NetStats,
    /// The last client id given out.
    last_id: u64,
    /// The memory of every connection's buffers together.
    clients_mem: Rc<Cell<usize>>,
    /// The cluster bus's sockets (cluster mode only).
    bus: super::bus::Bus,
    /// The I/O threads (`io-threads` above 1).
    io_threads: Option<IoThreads>,
    /// The connections of the I/O threads' open read job, by task index.
    job_ids: Vec<u64>,
    /// The open read job's next task whose outcome is to be acted on here.
    job_next: usize,
    /// The connections of the I/O threads' write job, by task index.
    write_ids: Vec<u64>,
}

impl Net {
    /// Registers `listeners` with a new poll.
    pub fn new(listeners: Vec<TcpListener>, shared: Arc<Shared>) -> std::io::Result<Net> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let mut net = Net {
            poll,
            events: Events::with_capacity(1024),
            listeners: Vec::new(),
            tls_listeners: Vec::new(),
            tls: None,
            tls_auth: super::tls::AuthClients::default(),
            tls_cluster: false,
            #[cfg(unix)]
            unix: None,
            conns: HashMap::new(),
            requests: VecDeque::new(),
            outbox: Outbox::default(),
            spare: Vec::new(),
            dirty: Vec::new(),
            unread: Vec::new(),
            ready: Vec::new(),
            shared,
            waker,
            accept_retry: false,
            limits: NetLimits::default(),
            stats: NetStats::default(),
            // Redis 7.0 gives ids 1 and 2 to its Lua and function-engine
            // clients at start-up: its first connection is id 3.
            last_id: 2,
            clients_mem: Rc::default(),
            bus: super::bus::Bus::default(),
            io_threads: None,
            job_ids: Vec::new(),
            job_next: 0,
            write_ids: Vec::new(),
        };
        net.listen(listeners)?;
        Ok(net)
    }

    fn listen(&mut self, listeners: Vec<TcpListener>) -> std::io::Result<()> {
        for mut l in listeners.into_iter().take(MAX_LISTENERS) {
            let token = Token(LISTENER_BASE - self.listeners.len());
            self.poll
                .registry()
                .register(&mut l, token, Interest::READABLE)?;
            self.listeners.push(l);
        }
        Ok(())
    }

    /// Listens on the unix socket at `path` (Redis's anetUnixServer: a
    /// file left there is removed first) with permissions `perm` (0: as
    /// the umask leaves them).
    #[cfg(unix)]
    pub fn listen_unix(&mut self, path: &str, perm: u32) -> std::io::Result<()> {
        let _ = std::fs::remove_file(path);
        let sock = Socket::new(Domain::UNIX, Type::STREAM, None)?;
        sock.bind(&socket2::SockAddr::unix(path)?)?;
        if perm != 0 {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))?;
        }
        self.limits.listen.listen(&sock)?;
        sock.set_nonblocking(true)?;
        let std_listener: std::os::unix::net::UnixListener = sock.into();
        let mut l = mio::net::UnixListener::from_std(std_listener);
        self.poll
            .registry()
            .register(&mut l, UNIX_LISTENER, Interest::READABLE)?;
        self.unix = Some((l, path.into()));
        Ok(())
    }

    /// Stops listening on the unix socket and removes its file (Redis's
    /// prepareForShutdown).
    #[cfg(unix)]
    fn close_unix(&mut self) {
        if let Some((mut l, path)) = self.unix.take() {
            let _ = self.poll.registry().deregister(&mut l);
            tracing::info!("Removing the unix socket file.");
            if let Err(e) = std::fs::remove_file(&*path) {
                tracing::warn!("Error removing the unix socket file: {e}");
            }
        }
    }

    /// Accepts every pending connection on the unix socket.
    #[cfg(unix)]
    fn accept_unix(&mut self) {
        loop {
            let Some((l, path)) = &self.unix else {
                return;
            };
            let accepted = l
                .accept()
                .map(|(sock, _)| (Stream::Unix(sock), PeerAddr::Unix(path.clone())));
            if !self.on_accept(accepted) {
                return;
            }
        }
    }

    /// Takes the limits from the configuration (at start and after CONFIG
    /// SET).
    pub fn load_config(&mut self, c: &crate::config::Config) {
        // io-threads is immutable: the threads start with the first load.
        if c.io_threads > 1 && self.io_threads.is_none() {
            match IoThreads::start(c.io_threads, c.get_bool("io-threads-do-reads")) {
                Ok(t) => self.io_threads = Some(t),
                Err(e) => tracing::warn!("cannot start the I/O threads: {e}"),
            }
        }
        self.tls_auth = super::tls::AuthClients::from_config(c);
        self.tls_cluster = c.get_bool("tls-cluster");
        self.sync_bus_tls();
        self.limits = NetLimits {
            proto_max_bulk_len: c.proto_max_bulk_len,
            maxclients: c.maxclients,
            query_buffer_limit: c.client_query_buffer_limit as usize,
            // The executor's ACL state decides this (set_auth_required).
            auth_required: self.limits.auth_required,
            protected_mode: c.protected_mode,
            default_nopass: self.limits.default_nopass,
            reply_resize: self.limits.reply_resize,
            tcp_keepalive: c.tcp_keepalive,
            listen: super::listener::ListenOpts::from_config(c),
        };
    }

    /// DEBUG REPLYBUFFER: how reply buffers are resized.
    pub fn set_reply_resize(&mut self, rs: super::conn::ReplyResize) {
        self.limits.reply_resize = rs;
    }

    /// Whether connections must authenticate and whether the default user
    /// has `nopass`, as the executor's ACL state says after it changed.
    pub fn set_auth_required(&mut self, required: bool, default_nopass: bool) {
        self.limits.auth_required = required;
        self.limits.default_nopass = default_nopass;
    }

    /// The memory of every connection together, kept current as buffers
    /// change ([`ConnBuffers`](crate::net::link::ConnBuffers)).
    pub fn clients_mem(&self) -> Rc<Cell<usize>> {
        self.clients_mem.clone()
    }

    /// The connection counters.
    pub fn stats(&self) -> NetStats {
        self.stats
    }

    /// The I/O threads' state for INFO: (io_threads_active,
    /// io_threaded_reads_processed, io_threaded_writes_processed).
    pub fn io_thread_stats(&self) -> (bool, u64, u64) {
        self.io_threads.as_ref().map_or((false, 0, 0), |t| {
            (t.active(), t.reads_processed, t.writes_processed)
        })
    }

    /// CONFIG RESETSTAT: zeroes the counters (not the connected clients).
    pub fn reset_stats(&mut self) {
        if let Some(t) = &mut self.io_threads {
            t.reads_processed = 0;
            t.writes_processed = 0;
        }
        self.stats = NetStats {
            connected_clients: self.stats.connected_clients,
            ..NetStats::default()
        };
    }

    /// Wakes the loop from another thread.
    pub fn waker(&self) -> Arc<Waker> {
        self.waker.clone()
    }

    /// True when some socket listens: TCP, TLS or unix.
    pub fn listens_anywhere(&self) -> bool {
        !self.listeners.is_empty() || !self.tls_listeners.is_empty() || self.unix.is_some()
    }

    /// The plain TCP listeners' addresses.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect()
    }

    /// How long the next poll may wait at most, if the network has work of
    /// its own: none when requests are queued or sockets hold unread bytes.
    pub fn timeout_hint(&self) -> Option<Duration> {
        if !self.requests.is_empty() || !self.unread.is_empty() || !self.job_ids.is_empty() {
            Some(Duration::ZERO)
        } else if self.accept_retry {
            Some(ACCEPT_RETRY)
        } else {
            None
        }
    }

    /// Waits up to `timeout` for socket events, then accepts, reads and
    /// frames what arrived.
    pub fn poll(&mut self, timeout: Duration) {
        // With writes still out on the I/O threads, look without waiting;
        // before sleeping, their outcomes are acted on (a connection to
        // close once written, one to watch for writability).
        let writing = !self.write_ids.is_empty();
        if !self.wait_events(if writing { Duration::ZERO } else { timeout }) {
            return;
        }
        if writing && self.events.is_empty() {
            self.finish_writes();
            let wait = if self.requests.is_empty() {
                timeout
            } else {
                Duration::ZERO
            };
            if !self.wait_events(wait) {
                return;
            }
        }
        let mut ready = std::mem::take(&mut self.ready);
        ready.extend(self.events.iter().map(|e| {
            let hup = e.is_read_closed() || e.is_error();
            let readable = e.is_readable() || hup;
            (
                e.token(),
                readable,
                e.is_writable() || e.is_write_closed(),
                hup,
            )
        }));
        if std::mem::take(&mut self.accept_retry) {
            for i in 0..self.listeners.len() {
                self.accept(i);
            }
            for i in 0..self.tls_listeners.len() {
                self.accept_tls(i);
            }
            #[cfg(unix)]
            self.accept_unix();
        }
        for (token, readable, writable, hup) in ready.drain(..) {
            if token == WAKER {
                self.take_signal();
            } else if super::bus::Bus::owns(token) {
                self.bus
                    .ready(self.poll.registry(), token, readable, writable);
            } else if token.0 > LISTENER_BASE - MAX_LISTENERS {
                self.accept(LISTENER_BASE - token.0);
            } else if token.0 <= TLS_LISTENER_BASE && token.0 > TLS_LISTENER_BASE - MAX_LISTENERS {
                self.accept_tls(TLS_LISTENER_BASE - token.0);
            } else if token == UNIX_LISTENER {
                #[cfg(unix)]
                self.accept_unix();
            } else {
                let id = token.0 as u64;
                let Some(c) = conn!(self, id) else {
                    continue;
                };
                // A TLS read or write may wait for the other direction
                // (Redis's TLS_CONN_FLAG_READ_WANT_WRITE and its twin).
                let write = writable || (readable && c.io.sock.write_wants_read());
                let read = readable || (writable && c.io.sock.read_wants_write());
                if write && !c.dirty {
                    c.dirty = true;
                    self.dirty.push(id);
                }
                // The peer's close may come with its last bytes, in one
                // edge: reads go on past a short one until they see it.
                c.peer_closed |= hup;
                if read && !c.readable {
                    c.readable = true;
                    self.unread.push(id);
                }
            }
        }
        self.ready = ready;
        self.read_all();
    }

    /// One wait for socket events; false when it failed.
    fn wait_events(&mut self, timeout: Duration) -> bool {
        if let Err(e) = self.poll.poll(&mut self.events, Some(timeout)) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                tracing::warn!("poll failed: {e}");
            }
            return false;
        }
        true
    }

    /// A signal asked the server to stop (the flag is set by the signal
    /// thread before it wakes the loop).
    fn take_signal(&mut self) {
        let sig = self.shared.signal.swap(0, Ordering::SeqCst);
        if sig == 0 {
            return;
        }
        if sig == super::STOP_REQUEST {
            self.requests.push_back(Request::Shutdown(None));
            return;
        }
        let name = if sig == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        tracing::warn!("Received {name} scheduling shutdown...");
        self.requests.push_back(Request::Shutdown(Some(sig)));
    }

    /// One read for each connection that may have bytes (Redis reads once
    /// per readable event too, which keeps a flooding client from starving
    /// the others).
    fn read_all(&mut self) {
        // A job still open (a script polling mid-batch) is acted on first.
        self.finish_job();
        let mut unread = std::mem::take(&mut self.unread);
        let limit = query_buffer_limit(&self.limits);
        if self
            .io_threads
            .as_mut()
            .is_some_and(|t| t.threads_reads(unread.len()))
        {
            self.read_threaded(&mut unread, limit);
        }
        for id in unread.drain(..) {
            let Some(c) = conn!(self, id) else {
                continue;
            };
            if c.eof || c.closing || c.qbuf_len() >= limit {
                // Read again once the buffer is consumed (see `progress`).
                continue;
            }
            let read = c.io.read();
            self.after_read(id, read);
        }
        // Keep the allocation unless a read filled its buffer meanwhile.
        if self.unread.is_empty() {
            self.unread = unread;
        }
    }

    /// [`Self::read_all`] on the I/O threads: the connections in `unread`
    /// are lent to them to read and frame, and `unread` is left empty.
    /// Their outcomes are acted on here in the same order, as the executor
    /// asks for requests ([`Self::next_request`]), so it runs the first
    /// connection's commands while the threads read the others.
    fn read_threaded(&mut self, unread: &mut Vec<u64>, limit: usize) {
        self.lend(Op::Read, unread, |c| {
            if c.eof || c.closing || c.qbuf_len() >= limit {
                return None;
            }
            c.io.prepare_read();
            Some(!c.in_flight)
        });
    }

    /// Opens a job of `op` on the connections in `ids` (left empty) that
    /// `pick` accepts, `pick` saying whether a read is to be framed. A
    /// read job may open while writes are out: a connection still being
    /// written is waited for first (its outcome is acted on later).
    fn lend(&mut self, op: Op, ids: &mut Vec<u64>, pick: impl Fn(&mut Conn) -> Option<bool>) {
        self.finish_job();
        if op == Op::Write {
            self.finish_writes();
        }
        let Some(threads) = &mut self.io_threads else {
            return;
        };
        let mut tasks = Vec::with_capacity(ids.len());
        for id in ids.drain(..) {
            let Some(c) = self.conns.get_mut(&id) else {
                continue;
            };
            // Listed twice: lent once.
            if c.lent.is_some() || (op == Op::Write && c.writing.is_some()) {
                continue;
            }
            if let Some(w) = c.writing {
                threads.settle(Op::Write, w as usize);
            }
            let Some(parse) = pick(c) else {
                continue;
            };
            let i = tasks.len() as u32;
            if op == Op::Read {
                c.lent = Some(i);
                self.job_ids.push(id);
            } else {
                c.writing = Some(i);
                self.write_ids.push(id);
            }
            tasks.push(Task::new(&mut c.io, parse));
        }
        if op == Op::Read {
            self.job_next = 0;
        }
        threads.open(op, tasks, &self.limits);
    }

    /// Acts on the open job's next outcome; false when none is left (the
    /// job is then closed).
    fn process_next(&mut self) -> bool {
        let Some(threads) = &mut self.io_threads else {
            return false;
        };
        let i = self.job_next;
        if i >= threads.len(Op::Read) {
            if !threads.is_empty(Op::Read) || !self.job_ids.is_empty() {
                threads.close(Op::Read);
                self.job_ids.clear();
                self.job_next = 0;
            }
            return false;
        }
        let outcome = threads.outcome(Op::Read, i);
        self.job_next += 1;
        let id = self.job_ids[i];
        let Some(c) = self.conns.get_mut(&id) else {
            return true;
        };
        c.lent = None;
        if let Outcome::Read(read) = outcome {
            self.after_read(id, read);
        }
        true
    }

    /// Acts on every outcome of the open read job, and closes it.
    fn finish_job(&mut self) {
        while self.process_next() {}
    }

    /// Acts on connection `id`'s write on the I/O threads, if one is still
    /// to be acted on (before more output is queued for it).
    fn finish_write(&mut self, id: u64) {
        let Some(threads) = &mut self.io_threads else {
            return;
        };
        let Some(i) = self.conns.get_mut(&id).and_then(|c| c.writing.take()) else {
            return;
        };
        if let Outcome::Wrote(wrote) = threads.outcome(Op::Write, i as usize) {
            self.after_write(id, wrote);
        }
    }

    /// Waits for the write job the I/O threads may still be working on
    /// and acts on its outcomes, so the output they wrote is released;
    /// false when none was open. Redis's threaded writes end before the
    /// next command runs: eviction measures memory as they left it.
    pub fn settle_writes(&mut self) -> bool {
        if self.write_ids.is_empty() {
            return false;
        }
        self.finish_writes();
        true
    }

    /// Acts on every outcome of the write job not acted on yet, and
    /// closes it.
    fn finish_writes(&mut self) {
        if self.write_ids.is_empty() {
            return;
        }
        let ids = std::mem::take(&mut self.write_ids);
        for (i, &id) in ids.iter().enumerate() {
            let Some(threads) = &mut self.io_threads else {
                break;
            };
            let Some(c) = self.conns.get_mut(&id) else {
                continue;
            };
            if c.writing != Some(i as u32) {
                continue;
            }
            c.writing = None;
            if let Outcome::Wrote(wrote) = threads.outcome(Op::Write, i) {
                self.after_write(id, wrote);
            }
        }
        if let Some(threads) = &mut self.io_threads {
            threads.close(Op::Write);
        }
        // Keep the allocation.
        let mut ids = ids;
        ids.clear();
        if self.write_ids.is_empty() {
            self.write_ids = ids;
        }
    }

    /// Acts on one read's outcome for connection `id`, then frames.
    fn after_read(&mut self, id: u64, read: ReadOutcome) {
        self.stats.total_reads += 1;
        let Some(c) = conn!(self, id) else {
            return;
        };
        match read {
            ReadOutcome::Data { n, drained } => {
                self.stats.net_input_bytes += n as u64;
                c.bufs.read_total.set(c.bufs.read_total.get() + n as u64);
                if drained && !c.peer_closed {
                    c.readable = false;
                } else {
                    self.unread.push(id);
                }
            }
            ReadOutcome::WouldBlock => {
                c.readable = false;
                if c.io.sock.read_wants_write() && !c.want_write {
                    // The handshake's reply did not fit the socket:
                    // writability lets the read go on.
                    c.want_write = true;
                    let _ = self.poll.registry().reregister(
                        &mut c.io.sock,
                        Token(id as usize),
                        Interest::READABLE | Interest::WRITABLE,
                    );
                }
            }
            ReadOutcome::Closed => {
                c.readable = false;
                c.eof = true;
            }
        }
        self.progress(id);
    }

    /// Frames buffered bytes and queues the batch, or acts on end of file,
    /// a protocol error or an overfull query buffer.
    fn progress(&mut self, id: u64) {
        self.frame(id);
        if let Some(c) = conn!(self, id) {
            c.account();
        }
    }

    fn frame(&mut self, id: u64) {
        let Some(c) = conn!(self, id) else {
            return;
        };
        if c.in_flight {
            if c.eof {
                // Tell the executor now, so a blocked command is forgotten.
                self.drop_conn(id, true);
            }
            return;
        }
        if c.closing {
            return;
        }
        c.io.parse(&self.limits);
        if !c.io.batch.is_empty() {
            let (batch, out) = c.take_batch();
            self.requests.push_back(Request::Batch { id, batch, out });
            return;
        }
        if let Some(e) = c.io.error.take() {
            c.io.queue(&e.line());
            c.closing = true;
            self.mark_dirty(id);
        } else if c.eof {
            self.drop_conn(id, true);
        } else if c.qbuf_len() >= query_buffer_limit(&self.limits) {
            tracing::warn!(
                client = id,
                "closing client that reached the query buffer limit"
            );
            self.drop_conn(id, true);
        }
    }

    fn mark_dirty(&mut self, id: u64) {
        if let Some(c) = conn!(self, id) {
            if !c.dirty {
                c.dirty = true;
                self.dirty.push(id);
            }
        }
    }

    /// The next request for the executor; with I/O threads reading, the
    /// next connection they read is acted on first when none is queued.
    pub fn next_request(&mut self) -> Option<Request> {
        loop {
            if let Some(r) = self.requests.pop_front() {
                return Some(r);
            }
            if !self.process_next() {
                return None;
            }
        }
    }

    /// Applies what the executor sent: replies and pushes are queued for
    /// writing, closes happen now. A connection whose batch came back
    /// frames what it buffered meanwhile.
    pub fn deliver(&mut self) {
        loop {
            std::mem::swap(&mut *self.outbox.borrow_mut(), &mut self.spare);
            if self.spare.is_empty() {
                return;
            }
            let mut msgs = std::mem::take(&mut self.spare);
            for (id, msg) in msgs.drain(..) {
                match msg {
                    ToConn::Push(bytes) => {
                        self.finish_write(id);
                        if let Some(c) = conn!(self, id) {
                            self.stats.net_output_bytes += bytes.len() as u64;
                            c.io.queue(&bytes);
                            c.note_reply_peak();
                            c.account();
                            self.mark_dirty(id);
                        }
                    }
                    // The Disconnect lets the executor forget what else the
                    // client held (subscriptions, watches, a blocked pop).
                    ToConn::Close => self.drop_conn(id, true),
                    ToConn::NoDelay(on) => {
                        if let Some(c) = conn!(self, id) {
                            // Not critical when it fails, as in Redis.
                            let _ = c.io.sock.set_nodelay(on);
                        }
                    }
                }
            }
            self.spare = msgs;
        }
    }

    /// Takes back a batch from the executor with its replies: `close`
    /// after writing them (QUIT, CLIENT KILL of itself, SHUTDOWN);
    /// `authenticated` is the client's state for parsing what follows.
    /// The connection then frames what it buffered meanwhile.
    pub fn replies(
        &mut self,
        id: u64,
        batch: crate::net::request::Batch,
        out: Vec<u8>,
        close: bool,
        authenticated: bool,
    ) {
        // Pushes queued for it earlier go out first, in order.
        self.deliver();
        self.finish_write(id);
        let Some(c) = conn!(self, id) else {
            return;
        };
        c.io.batch = batch;
        c.in_flight = false;
        c.io.authenticated = authenticated;
        let wrote = !out.is_empty();
        if wrote {
            self.stats.net_output_bytes += out.len() as u64;
            c.out = c.queue_output(out);
        } else {
            c.out = out;
        }
        c.closing |= close;
        let rs = self.limits.reply_resize;
        c.note_reply_peak();
        c.release_idle_buffers(!rs.resizing || rs.peak_reset_ms.is_none());
        c.account();
        let more = c.readable && !close;
        if wrote || close {
            self.mark_dirty(id);
        }
        if close {
            return;
        }
        self.progress(id);
        if more && self.conns.contains_key(&id) && !self.unread.contains(&id) {
            self.unread.push(id);
        }
    }

    /// Writes queued output; closes connections that asked to be closed
    /// once written, and those whose socket failed.
    pub fn flush(&mut self) {
        self.finish_job();
        self.finish_writes();
        let mut dirty = std::mem::take(&mut self.dirty);
        if self
            .io_threads
            .as_mut()
            .is_some_and(|t| t.threads_writes(dirty.len()))
        {
            self.flush_threaded(&mut dirty);
        }
        for id in dirty.drain(..) {
            let Some(c) = conn!(self, id) else {
                continue;
            };
            c.dirty = false;
            let wrote = c.io.write_pending();
            self.after_write(id, wrote);
        }
        if self.dirty.is_empty() {
            self.dirty = dirty;
        }
    }

    /// [`Self::flush`] on the I/O threads: the connections in `dirty` are
    /// written there while this thread goes on (polls, reads, runs the
    /// next commands); their outcomes are acted on when a connection is
    /// touched or before the next flush ([`Self::finish_writes`]). `dirty`
    /// is left empty.
    fn flush_threaded(&mut self, dirty: &mut Vec<u64>) {
        for &id in dirty.iter() {
            if let Some(c) = self.conns.get_mut(&id) {
                c.dirty = false;
            }
        }
        self.lend(Op::Write, dirty, |_| Some(false));
    }

    /// Acts on one write's outcome for connection `id`: closes it when the
    /// socket failed, or when it asked to be closed once written; watches
    /// for writability while output remains.
    fn after_write(&mut self, id: u64, wrote: std::io::Result<usize>) {
        self.stats.total_writes += 1;
        let Some(c) = conn!(self, id) else {
            return;
        };
        c.io.output.reclaim();
        c.account();
        if wrote.is_err() {
            self.drop_conn(id, true);
            return;
        }
        if c.pending() == 0 {
            if c.closing {
                self.drop_conn(id, true);
            } else if c.want_write {
                c.want_write = false;
                let _ = self.poll.registry().reregister(
                    &mut c.io.sock,
                    Token(id as usize),
                    Interest::READABLE,
                );
            }
        } else if !c.want_write {
            c.want_write = true;
            let _ = self.poll.registry().reregister(
                &mut c.io.sock,
                Token(id as usize),
                Interest::READABLE | Interest::WRITABLE,
            );
        }
    }

    /// Closes connection `id`; `tell` queues a Disconnect for the executor
    /// (not wanted at shutdown).
    fn drop_conn(&mut self, id: u64, tell: bool) {
        // Back from the I/O threads first, if lent.
        let _ = conn!(self, id);
        let Some(mut c) = self.conns.remove(&id) else {
            return;
        };
        let _ = self.poll.registry().deregister(&mut c.io.sock);
        if !c.bufs.handed_over.get() {
            let _ = c.io.sock.shutdown(std::net::Shutdown::Write);
        }
        c.bufs.kill();
        self.stats.connected_clients -= 1;
        if tell {
            self.requests.push_back(Request::Disconnect { id });
        }
    }

    /// Accepts every pending connection on listener `i`.
    fn accept(&mut self, i: usize) {
        loop {
            let Some(l) = self.listeners.get(i) else {
                return;
            };
            let accepted = l
                .accept()
                .map(|(sock, addr)| (Stream::Tcp(sock), PeerAddr::Tcp(addr)));
            if !self.on_accept(accepted) {
                return;
            }
        }
    }

    /// Accepts every pending connection on TLS listener `i`; each starts
    /// its handshake with its first read.
    fn accept_tls(&mut self, i: usize) {
        loop {
            let Some(l) = self.tls_listeners.get(i) else {
                return;
            };
            let accepted = l.accept();
            let accepted = match (accepted, &self.tls) {
                (Ok((sock, addr)), Some(ctx)) => {
                    match super::tls::TlsStream::accept(ctx, self.tls_auth, sock) {
                        Ok(tls) => Ok((Stream::Tls(Box::new(tls)), PeerAddr::Tcp(addr))),
                        Err(e) => {
                            tracing::warn!("Error accepting a client connection: {e}");
                            continue;
                        }
                    }
                }
                // TLS was configured away meanwhile: nothing to speak.
                (Ok(_), None) => continue,
                (Err(e), _) => Err(e),
            };
            if !self.on_accept(accepted) {
                return;
            }
        }
    }

    /// Acts on one accept's outcome; false when the listener has nothing
    /// more to give now.
    fn on_accept(&mut self, accepted: std::io::Result<(Stream, PeerAddr)>) -> bool {
        match accepted {
            Ok((sock, addr)) => {
                self.admit(sock, addr);
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => true,
            Err(e) => {
                // Out of file descriptors, say: the connection stays in the
                // backlog, try again shortly.
                tracing::warn!("accept failed: {e}");
                self.accept_retry = true;
                false
            }
        }
    }

    fn admit(&mut self, mut sock: Stream, addr: PeerAddr) {
        self.stats.total_connections += 1;
        // In cluster mode the bus links count too (Redis's
        // getClusterConnectionsCount).
        let bus_links = self.bus.link_count();
        let refusal: Option<&[u8]> =
            if self.stats.connected_clients + bus_links >= self.limits.maxclients {
                Some(if self.bus.is_listening() {
                    b"-ERR max number of clients + cluster connections reached\r\n"
                } else {
                    b"-ERR max number of clients reached\r\n"
                })
            } else if protected_denies(&self.limits, &addr) {
                Some(crate::error::DENIED_PROTECTED_MODE)
            } else {
                None
            };
        if let Some(msg) = refusal {
            self.stats.rejected_connections += 1;
            // Best effort, as Redis: the socket is fresh, the line fits.
            // A TLS client gets nothing: no handshake was done, so the
            // connection just drops (Redis's acceptCommonHandler).
            if !sock.is_tls() {
                let _ = sock.write(msg);
            }
            let _ = sock.shutdown(std::net::Shutdown::Write);
            return;
        }
        let tcp = match &sock {
            Stream::Tcp(tcp) => Some(tcp),
            Stream::Tls(tls) => Some(tls.tcp()),
            #[cfg(unix)]
            Stream::Unix(_) => None,
        };
        if let Some(tcp) = tcp {
            let _ = tcp.set_nodelay(true);
            if self.limits.tcp_keepalive > 0 {
                set_keepalive(tcp, self.limits.tcp_keepalive);
            }
        }
        // The executor reports AUTH/HELLO AUTH/RESET with its replies.
        let authenticated = !self.limits.auth_required;
        match self.register(sock, addr, authenticated) {
            Ok(nc) => self.requests.push_back(Request::Connect(nc)),
            Err(e) => tracing::warn!("cannot register a client socket: {e}"),
        }
    }

    /// Registers a connection with the poller and the connection table;
    /// returns what the executor needs to know of it.
    fn register(
        &mut self,
        mut sock: Stream,
        addr: PeerAddr,
        authenticated: bool,
    ) -> std::io::Result<NewClient> {
        let id = self.last_id + 1;
        self.poll
            .registry()
            .register(&mut sock, Token(id as usize), Interest::READABLE)?;
        self.last_id = id;
        self.stats.connected_clients += 1;
        let laddr = match &sock {
            Stream::Tcp(tcp) => tcp.local_addr().map_or(addr.clone(), PeerAddr::Tcp),
            Stream::Tls(tls) => tls.tcp().local_addr().map_or(addr.clone(), PeerAddr::Tcp),
            // Redis shows the socket's path for both ends.
            #[cfg(unix)]
            Stream::Unix(_) => addr.clone(),
        };
        #[cfg(unix)]
        let fd = i64::from(std::os::fd::AsRawFd::as_raw_fd(&sock));
        #[cfg(not(unix))]
        let fd = -1;
        let tls = sock.is_tls();
        let conn = Conn::new(sock, addr.clone(), authenticated, self.clients_mem.clone());
        let nc = NewClient {
            id,
            addr,
            laddr,
            tx: ConnTx::new(id, self.outbox.clone()),
            fd,
            tls,
            bufs: conn.bufs.clone(),
        };
        // Lent connections are pointed at: they must be back before the
        // table grows and moves them.
        if self.conns.len() >= self.conns.capacity() {
            if let Some(t) = &mut self.io_threads {
                t.settle_all();
            }
        }
        self.conns.insert(id, conn);
        Ok(nc)
    }

    /// Takes a connection this server opened (the link to its master,
    /// after the handshake) into the loop like an accepted one, with the
    /// stream bytes already read; returns it for the executor to register
    /// instead of queueing a Connect.
    pub fn adopt(
        &mut self,
        sock: super::conn::LinkSock,
        leftover: &[u8],
    ) -> std::io::Result<NewClient> {
        let (sock, addr) = match sock {
            super::conn::LinkSock::Plain(sock) => {
                sock.set_nonblocking(true)?;
                let addr = sock.peer_addr()?;
                (Stream::Tcp(TcpStream::from_std(sock)), addr)
            }
            super::conn::LinkSock::Tls(tls) => {
                socket2::SockRef::from(tls.get_ref().tcp()).set_nonblocking(true)?;
                let addr = tls.get_ref().tcp().peer_addr()?;
                (
                    Stream::Tls(Box::new(super::tls::TlsStream::established(tls))),
                    addr,
                )
            }
        };
        let nc = self.register(sock, addr.into(), true)?;
        // The stream bytes read with the handshake come first, and the
        // socket may hold more already.
        if let Some(c) = conn!(self, nc.id) {
            c.io.inbuf.extend_from_slice(leftover);
            c.bufs.read_total.set(leftover.len() as u64);
            c.readable = true;
        }
        self.unread.push(nc.id);
        Ok(nc)
    }

    /// Listens for the cluster bus on `addrs` at `port`.
    pub fn bus_listen(&mut self, addrs: &[String], port: u16) -> std::io::Result<()> {
        self.bus
            .listen(self.poll.registry(), addrs, port, self.limits.listen)
    }

    /// Opens a bus link to `addr`; its id.
    pub fn bus_connect(&mut self, addr: SocketAddr) -> std::io::Result<u64> {
        self.bus.connect(self.poll.registry(), addr)
    }

    /// Sends `bytes` on bus link `id`.
    pub fn bus_send(&mut self, id: u64, bytes: &[u8]) {
        self.bus.send(self.poll.registry(), id, bytes);
    }

    /// Closes bus link `id`.
    pub fn bus_close(&mut self, id: u64) {
        self.bus.close(self.poll.registry(), id);
    }

    /// The bus's sockets, to query.
    pub fn bus(&self) -> &super::bus::Bus {
        &self.bus
    }

    /// Shrinks the bus links' mostly unused send buffers.
    pub fn resize_bus_send_buffers(&mut self) {
        self.bus.resize_send_buffers();
    }

    /// What happened on the bus since the last call.
    pub fn bus_events(&mut self) -> Vec<super::bus::BusEvent> {
        self.bus.take_events()
    }

    /// The outbox the executor's clients send into.
    pub fn outbox(&self) -> Outbox {
        self.outbox.clone()
    }

    /// Listens on `bind`/`port` instead of the current listening sockets;
    /// when that fails, keeps listening on `old` and returns the error.
    /// Returns the port bound (CONFIG SET port/bind).
    ///
    /// The new sockets are bound while the old ones stay open, so a refused
    /// address leaves the server listening without a gap. Only when the new
    /// set reuses an address and port held now (address in use) are the old
    /// sockets closed first, as Redis does, and bound again on failure.
    pub fn rebind(
        &mut self,
        bind: &[String],
        port: u16,
        old: (&[String], u16),
    ) -> std::io::Result<u16> {
        let bound = match bind_all(bind, port, self.limits.listen) {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                self.close_listeners();
                bind_all(bind, port, self.limits.listen).inspect_err(|_| {
                    match bind_all(old.0, old.1, self.limits.listen) {
                        Ok(ls) => {
                            let _ = self.listen(ls);
                        }
                        Err(e) => {
                            tracing::warn!("cannot listen on the previous addresses again: {e}")
                        }
                    }
                })
            }
            other => other,
        }?;
        self.close_listeners();
        let port = bound
            .first()
            .and_then(|l| l.local_addr().ok())
            .map_or(port, |a| a.port());
        self.listen(bound)?;
        Ok(port)
    }

    fn close_listeners(&mut self) {
        for mut l in self.listeners.drain(..) {
            let _ = self.poll.registry().deregister(&mut l);
        }
    }

    /// Installs the TLS contexts new connections are made from (at start
    /// and when CONFIG SET changes a `tls-*` directive); connections
    /// already open keep theirs.
    pub fn set_tls(&mut self, ctx: Option<super::tls::Contexts>) {
        self.tls = ctx;
        self.sync_bus_tls();
    }

    /// New bus links speak TLS in a TLS cluster.
    fn sync_bus_tls(&mut self) {
        let ctx = if self.tls_cluster {
            self.tls.clone()
        } else {
            None
        };
        self.bus.set_tls(ctx);
    }

    /// The TLS contexts, while TLS is configured.
    pub fn tls(&self) -> Option<&super::tls::Contexts> {
        self.tls.as_ref()
    }

    /// Listens for TLS clients on `bind` at `port` instead of the TLS
    /// sockets open now (none for port 0), as Redis's changeListenPort:
    /// the old sockets close only once the new ones are bound. Returns the
    /// port bound.
    pub fn listen_tls(&mut self, bind: &[String], port: u16) -> std::io::Result<u16> {
        if port == 0 {
            self.close_tls_listeners();
            return Ok(0);
        }
        let bound = match bind_all(bind, port, self.limits.listen) {
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse && !self.tls_listeners.is_empty() =>
            {
                self.close_tls_listeners();
                bind_all(bind, port, self.limits.listen)
            }
            other => other,
        }?;
        self.close_tls_listeners();
        for mut l in bound.into_iter().take(MAX_LISTENERS) {
            let token = Token(TLS_LISTENER_BASE - self.tls_listeners.len());
            self.poll
                .registry()
                .register(&mut l, token, Interest::READABLE)?;
            self.tls_listeners.push(l);
        }
        Ok(port)
    }

    fn close_tls_listeners(&mut self) {
        for mut l in self.tls_listeners.drain(..) {
            let _ = self.poll.registry().deregister(&mut l);
        }
    }

    /// Connection `id`'s share of the clients cron ([`Conn::cron`]);
    /// `idle_s` is how long the client has been idle.
    pub fn client_cron(&mut self, id: u64, idle_s: u64, now_ms: u64) {
        let rs = self.limits.reply_resize;
        let Some(c) = conn!(self, id) else {
            return;
        };
        match c.cron(idle_s, now_ms, rs) {
            super::conn::Resized::Shrunk => self.stats.reply_buffer_shrinks += 1,
            super::conn::Resized::Expanded => self.stats.reply_buffer_expands += 1,
            super::conn::Resized::No => {}
        }
    }

    /// Closes the listening sockets (TCP, TLS, Unix): the first step of a
    /// shutdown, so that once a client sees its connection close a new
    /// one is refused, as when Redis's process exits.
    pub fn stop_listening(&mut self) {
        self.close_listeners();
        self.close_tls_listeners();
        #[cfg(unix)]
        self.close_unix();
    }

    /// At shutdown: writes what can be written without waiting, then
    /// closes every connection and the listening sockets.
    pub fn close_all(&mut self) {
        self.finish_job();
        self.finish_writes();
        self.stop_listening();
        self.deliver();
        let ids: Vec<u64> = self.conns.keys().copied().collect();
        for id in ids {
            if let Some(c) = conn!(self, id) {
                let _ = c.write_pending();
            }
            self.drop_conn(id, false);
        }
        self.bus.close_all(self.poll.registry());
    }
}

impl Drop for Net {
    /// The I/O threads' job ends before the connections it points into go.
    fn drop(&mut self) {
        if let Some(t) = &mut self.io_threads {
            t.close(Op::Read);
            t.close(Op::Write);
        }
    }
}

/// Turns on keepalive probes after `secs` idle seconds, every third of
/// that, three before the peer counts as gone (Redis's anetKeepAlive).
fn set_keepalive(sock: &TcpStream, secs: u64) {
    let idle = std::time::Duration::from_secs(secs);
    let every = std::time::Duration::from_secs((secs / 3).max(1));
    let ka = socket2::TcpKeepalive::new()
        .with_time(idle)
        .with_interval(every);
    #[cfg(any(target_os = "linux", target_os = "macos", target_os = "freebsd"))]
    let ka = ka.with_retries(3);
    if let Err(e) = socket2::SockRef::from(sock).set_tcp_keepalive(&ka) {
        tracing::debug!("cannot set keepalive: {e}");
    }
}
