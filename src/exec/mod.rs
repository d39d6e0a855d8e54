//! The keyspace executor: it alone owns the data. The event loop on the
//! same thread (`net/event_loop.rs`) hands it whole batches of parsed
//! commands ([`Request::Batch`]); it runs them in order, writes the replies
//! into the batch's output buffer and sends the batch back. Nothing else
//! touches the store, so nothing locks.
//!
//! The loop also drives timers: the active expiry cycle at `hz`, and
//! blocked-client timeouts (`blocking.rs`). MULTI/EXEC, blocking pops and
//! scripts all run here, which is what makes them atomic.

pub mod blocking;
pub mod call;
pub mod client;
pub mod clock;
pub mod multi;
pub mod pause;
pub mod pubsub;

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use self::client::{Client, ConnTx, ToConn};
use crate::cmd::table::CommandTable;
use crate::config::Config;
use crate::net::request::Batch;
use crate::store::Store;

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
    pub outq: Arc<client::OutQueue>,
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

/// Server-wide counters for INFO stats.
#[derive(Default, Clone)]
pub struct ServerStats {
    /// Commands run.
    pub total_commands_processed: u64,
    /// Commands refused before running (unknown, arity, auth).
    pub rejected_calls: u64,
    /// Commands that replied with an error.
    pub failed_calls: u64,
    /// Error replies by prefix (INFO errorstats).
    pub errors: std::collections::BTreeMap<String, u64>,
}

/// Everything the executor owns besides the store and the client running a
/// command; handlers reach it through `ctx.server`.
pub struct ServerState {
    /// The configuration (CONFIG GET/SET).
    pub config: Config,
    /// The command table.
    pub table: CommandTable,
    /// Every client but the one running a command.
    pub clients: HashMap<u64, Client>,
    /// State shared with the network side.
    pub shared: Arc<Shared>,
    /// Counters.
    pub stats: ServerStats,
    /// When the server started.
    pub started: Instant,
    /// Start time in Unix seconds.
    pub started_unix: u64,
    /// A random 40-hex-character run id.
    pub run_id: String,
    /// Unix time of the last successful save.
    pub last_save: u64,
    /// Set by SHUTDOWN: the executor stops after the current batch.
    pub shutdown: bool,
    /// Set once the shutdown's save question is settled (SHUTDOWN saved or
    /// was told NOSAVE); a signal leaves it unset, so `stop` saves when
    /// save rules are configured, as Redis does on SIGTERM.
    pub shutdown_save_done: bool,
    /// CLIENT PAUSE state.
    pub pause: pause::Pause,
    /// Batches held back by CLIENT PAUSE, in arrival order.
    pub postponed: Vec<pause::Postponed>,
    /// The TCP port actually bound.
    pub port: u16,
    /// Path of the config file, if any (INFO `config_file`).
    pub config_file: Option<String>,
    /// Path of the executable (INFO `executable`).
    pub executable: String,
    /// Clients blocked by BLPOP and friends; `blocking.blocked_clients()`
    /// is INFO's `blocked_clients`.
    pub blocking: blocking::Blocking,
    /// The Lua engine (state, script cache), created on first use. It is
    /// taken out while a script runs, so the script can reach the rest of
    /// the server state.
    pub scripting: crate::script::EngineSlot,
    /// The network side of the event loop, kept here so a long-running
    /// script can answer other clients with -BUSY (Redis's
    /// processEventsWhileBlocked) and CONFIG SET can rebind.
    pub net: Option<Rc<RefCell<crate::net::event_loop::Net>>>,
    /// RDB save state (INFO persistence).
    pub persist: crate::persist::PersistState,
    /// Pub/sub channels, patterns and their subscribers.
    pub pubsub: pubsub::PubSub,
    /// The append-only file (INFO persistence aof_*).
    pub aof: crate::persist::aof::Aof,
    /// Unix µs when the running top-level command started.
    pub call_started_us: u64,
}

impl ServerState {
    /// Registers a newly connected client.
    pub fn connect(&mut self, nc: NewClient) {
        let mut c = Client::new(nc.id, nc.addr, nc.laddr, nc.tx, clock::now_ms());
        c.auth_flag = nc.auth;
        c.fd = nc.fd;
        c.outq = nc.outq;
        c.set_authenticated(self.config.requirepass.is_none());
        self.clients.insert(nc.id, c);
    }
}

/// The executor: the store plus server state, driven by [`Executor::run`].
pub struct Executor {
    /// The keyspace.
    pub store: Store,
    /// Everything else.
    pub server: ServerState,
    last_cycle: Instant,
}

impl Executor {
    /// Creates an executor for `config`.
    pub fn new(config: Config, shared: Arc<Shared>, port: u16) -> Self {
        let store = Store::new(config.databases);
        let now = clock::now_ms();
        let run_id: String = (0..40)
            .map(|_| format!("{:x}", rand::random::<u8>() % 16))
            .collect();
        Executor {
            store,
            server: ServerState {
                config,
                table: CommandTable::build(),
                clients: HashMap::new(),
                shared,
                stats: ServerStats::default(),
                started: Instant::now(),
                started_unix: now / 1000,
                run_id,
                last_save: now / 1000,
                shutdown: false,
                shutdown_save_done: false,
                pause: pause::Pause::default(),
                postponed: Vec::new(),
                port,
                config_file: None,
                executable: std::env::current_exe()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                blocking: blocking::Blocking::default(),
                scripting: crate::script::EngineSlot::default(),
                net: None,
                persist: Default::default(),
                pubsub: pubsub::PubSub::default(),
                aof: Default::default(),
                call_started_us: 0,
            },
            last_cycle: Instant::now(),
        }
    }

    /// Runs the event loop until SHUTDOWN or a signal: poll the sockets,
    /// serve what arrived, run the timers, write the replies.
    pub fn run(mut self, net: Rc<RefCell<crate::net::event_loop::Net>>) {
        self.server.net = Some(net.clone());
        loop {
            let mut timeout = self.next_timeout();
            if let Some(t) = net.borrow().timeout_hint() {
                timeout = timeout.min(t);
            }
            net.borrow_mut().poll(timeout);
            self.serve(&net);
            if !self.server.shutdown {
                self.expire_blocked();
                self.timers();
                net.borrow_mut().deliver();
                self.serve(&net);
            }
            net.borrow_mut().flush();
            if self.server.shutdown {
                break;
            }
        }
        self.stop();
        net.borrow_mut().close_all();
        self.server.net = None;
    }

    /// Handles every queued request, applying the executor's answers after
    /// each (a connection whose batch came back may queue its next one).
    fn serve(&mut self, net: &RefCell<crate::net::event_loop::Net>) {
        loop {
            let req = net.borrow_mut().next_request();
            let Some(req) = req else {
                return;
            };
            self.handle(req);
            net.borrow_mut().deliver();
            if self.server.shutdown {
                return;
            }
        }
    }

    fn period(&self) -> Duration {
        Duration::from_micros(1_000_000 / u64::from(self.server.config.hz.clamp(1, 500)))
    }

    fn next_timeout(&self) -> Duration {
        let cycle = self.period().saturating_sub(self.last_cycle.elapsed());
        match self.server.blocking.next_deadline() {
            // Wake for the nearest blocked-client timeout too.
            Some(at) => cycle.min(Duration::from_millis(at.saturating_sub(clock::now_ms()))),
            None => cycle,
        }
    }

    /// Periodic work (Redis's serverCron): the active expiry cycle.
    fn timers(&mut self) {
        let period = self.period();
        if self.last_cycle.elapsed() < period {
            return;
        }
        self.last_cycle = Instant::now();
        self.store.set_now(clock::now_ms());
        // Redis's slow cycle may use 25% of each period.
        self.store.log_expired = self.server.aof.on;
        self.store.active_expire_cycle(period / 4);
        if self.server.aof.on {
            self.server.aof.feed_expired(&mut self.store);
        }
        self.close_idle_clients();
        self.resume_postponed();
        self.after_writes();
        crate::persist::bgsave_poll(&mut self.store, &mut self.server);
        crate::persist::check_save_rules(&self.store, &mut self.server);
        self.server.aof.cron();
        crate::persist::aof::auto_rewrite(&self.store, &mut self.server);
    }

    /// `timeout`: closes clients idle longer than the limit
    /// (clientsCronHandleTimeout). Pub/sub clients are exempt, as in Redis.
    fn close_idle_clients(&mut self) {
        let limit_ms = self.server.config.timeout.saturating_mul(1000);
        if limit_ms == 0 {
            return;
        }
        let now = clock::now_ms();
        let idle: Vec<u64> = self
            .server
            .clients
            .values()
            .filter(|c| c.kind == client::ClientKind::Normal)
            .filter(|c| now.saturating_sub(c.last_interaction_ms) > limit_ms)
            .map(|c| c.id)
            .collect();
        for id in idle {
            if let Some(c) = self.server.clients.remove(&id) {
                tracing::debug!("Closing idle client");
                let _ = c.tx.send(ToConn::Close);
            }
        }
    }

    fn handle(&mut self, req: Request) {
        match req {
            Request::Connect(nc) => self.server.connect(nc),
            Request::Batch {
                id,
                batch,
                out,
                qbuf,
            } => {
                self.run_batch(id, batch, out, qbuf);
                // CLIENT UNPAUSE releases held batches at once.
                self.resume_postponed();
            }
            Request::Disconnect { id } => {
                self.server.clients.remove(&id);
                self.server.pubsub.forget(id);
                self.store.watches.unwatch_all(id);
                self.forget_blocked(id);
            }
            Request::Shutdown => self.server.shutdown = true,
        }
    }

    /// Hook after a batch or cycle: WATCH and blocked clients consume the
    /// touched-key lists here.
    fn after_writes(&mut self) {
        pubsub::drain_expired(&mut self.server, &mut self.store);
        self.server.pubsub.held.clear();
        self.store.touched.clear();
        self.store.touched_dbs.clear();
        self.server.blocking.reset_touched();
    }

    fn stop(&mut self) {
        self.server.aof.stop();
        if !self.server.shutdown_save_done {
            if let Err(e) =
                crate::persist::save_on_shutdown(&mut self.store, &mut self.server, false, false)
            {
                tracing::warn!("error saving the dataset on shutdown: {e}");
            }
        }
        self.server
            .shared
            .shutting_down
            .store(true, Ordering::SeqCst);
        for c in self.server.clients.values() {
            let _ = c.tx.send(ToConn::Close);
        }
        self.server.clients.clear();
    }
}
