//! ferrokv: a Redis-compatible in-memory key-value server.
//!
//! One thread serves the sockets and owns the keyspace. The modules form
//! layers, each naming only those below it:
//!
//! - [`exec`]: the engine. It drives the event loop, hands each read's
//!   batch of commands to [`server::call::call`] one by one, runs timers
//!   (active expiry, saves, blocked-client timeouts), serves blocked
//!   clients and, while a script is busy, other clients.
//! - [`cmd`]: one file per command family; a handler parses its arguments,
//!   works on the store and writes its reply.
//! - [`server`]: the server model (configuration, clients, MULTI, pub/sub,
//!   the blocking registry, CLIENT PAUSE, statistics, the command table)
//!   and `call()`, the one path every command takes.
//! - [`script`]: the Lua engine, which reaches the server only through the
//!   [`script::Host`] it is handed for a run; [`persist`]: RDB and AOF, given
//!   the configuration, their own state and the store.
//! - [`net`]: sockets, request framing and the reply writer.
//! - [`config`], [`store`]: configuration; databases, values and expiry.
//! - [`util`], [`error`]: helpers; every error string.
//!
//! [`Server`] starts the whole thing, in a binary or inside a test, and
//! stops it when dropped.
//!
//! # Embedding it in tests
//!
//! [`Server::builder`] starts a server in-process on a free port of
//! 127.0.0.1; [`Server::addr`] and [`Server::url`] say where to connect
//! any Redis client. Give it a [`ManualClock`](util::clock::ManualClock)
//! and keep a clone: moving that clock moves the server's time, so a test
//! of a TTL, a lock timeout or a rate-limit window runs in milliseconds
//! instead of waiting. `examples/embedded.rs` (which `cargo test` runs)
//! rate-limits with CL.THROTTLE and expires a session that way.
//!
//! Over the network, the CLOCK command does the same for any client
//! (`CLOCK NOW | FREEZE | RESUME | SET unix-ms | ADVANCE ms`), once the
//! `enable-clock-command` directive is `yes` (or `local`, for connections
//! from 127.0.0.1 and ::1).

pub mod cmd;
pub mod config;
pub mod error;
pub mod exec;
pub mod net;
pub mod persist;
pub mod script;
pub mod server;
pub mod store;
pub mod util;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use config::Config;
use exec::Executor;
use net::link::Shared;

/// Version reported as `redis_version`, so clients that check it accept
/// the server.
pub const REDIS_VERSION: &str = "7.0.15";

/// Stack of the event loop's thread: scripts recurse through Rust (cjson
/// encodes 1000 levels deep, replies nest), so it gets more than the
/// default 2 MiB.
pub const EXEC_STACK: usize = 64 * 1024 * 1024;

/// ferrokv's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A running server.
pub struct Server {
    /// Addresses bound.
    pub addrs: Vec<SocketAddr>,
    handle: ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
    /// A shutdown came while the data set loaded: the server is stopping.
    stopped_loading: bool,
}

/// A server run by [`Server::run_on_this_thread`], once serving.
pub struct Started {
    /// Addresses bound.
    pub addrs: Vec<SocketAddr>,
    /// A shutdown came while the data set loaded: the server is stopping.
    pub stopped_loading: bool,
}

/// Asks a running server to stop, from any thread (signals).
#[derive(Clone)]
pub struct ServerHandle {
    shared: Arc<Shared>,
    waker: Arc<mio::Waker>,
}

impl ServerHandle {
    /// Stops the server as SIGTERM (or SIGINT) does: the event loop logs
    /// the signal and shuts down, saving when save rules are set.
    pub fn signal(&self, signo: i32) {
        if signo != net::STOP_REQUEST {
            let pending = self.shared.shutdown_asap.swap(true, Ordering::SeqCst);
            if pending && signo == libc::SIGINT {
                // Redis's sigShutdownHandler: the user insists, the final
                // save (and its temp file) is abandoned.
                tracing::warn!("You insist... exiting now.");
                let _ = std::fs::remove_file(format!("temp-{}.rdb", std::process::id()));
                std::process::exit(1);
            }
        }
        self.shared.signal.store(signo, Ordering::SeqCst);
        if let Err(e) = self.waker.wake() {
            tracing::warn!("cannot wake the event loop: {e}");
        }
    }

    /// Stops the server as a signal does, without logging one: what
    /// dropping a [`Server`] does.
    pub fn stop(&self) {
        self.signal(net::STOP_REQUEST);
    }
}

/// Builds a server to run inside a program or a test: by default on a free
/// port of 127.0.0.1, with no save points (nothing is written to disk
/// unless a directive asks for it), and on the system's clock.
///
/// ```
/// use std::io::{Read, Write};
/// use std::time::Duration;
/// use ferrokv::util::clock::ManualClock;
///
/// # fn main() -> std::io::Result<()> {
/// let clock = ManualClock::new(); // frozen at the system's time now
/// let server = ferrokv::Server::builder()
///     .directive("maxmemory", "64mb")
///     .clock(clock.clone())
///     .start()?;
/// let mut conn = std::net::TcpStream::connect(server.addr())?;
/// let mut ask = |cmd: &[u8]| -> std::io::Result<String> {
///     conn.write_all(cmd)?;
///     let mut buf = [0u8; 64];
///     let n = conn.read(&mut buf)?;
///     Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
/// };
/// assert_eq!(ask(b"SET session abc EX 30\r\n")?, "+OK\r\n");
/// clock.advance(Duration::from_secs(31)); // no waiting: the TTL has passed
/// assert_eq!(ask(b"EXISTS session\r\n")?, ":0\r\n");
/// // Dropping the server stops it.
/// # Ok(())
/// # }
/// ```
pub struct ServerBuilder {
    config: Config,
    clock: Option<util::clock::ManualClock>,
    error: Option<String>,
}

impl ServerBuilder {
    /// The TCP port to bind; 0 (the builder's default) takes a free one,
    /// which [`Server::addr`] then reports.
    pub fn port(mut self, port: u16) -> Self {
        self.config.port = port;
        self
    }

    /// The addresses to bind, as the `bind` directive lists them (the
    /// builder's default: `127.0.0.1`).
    pub fn bind(mut self, addrs: &[&str]) -> Self {
        self.config.bind = addrs.iter().map(|a| a.to_string()).collect();
        self
    }

    /// Any directive, written as it would be on a line of redis.conf:
    /// `.directive("maxmemory", "100mb")`, `.directive("save", "900 1")`.
    /// A directive ferrokv refuses makes [`ServerBuilder::start`] fail
    /// with the same message the binary would print.
    pub fn directive(mut self, name: &str, value: &str) -> Self {
        if self.error.is_none() {
            if let Err(e) = config::file::load_str(&mut self.config, &format!("{name} {value}")) {
                self.error = Some(e.to_string());
            }
        }
        self
    }

    /// Starts from this whole configuration instead of the builder's
    /// defaults (directives given before it are replaced).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Reads the server's time from `clock`, which the caller keeps a
    /// clone of and moves ([`ManualClock::advance`](util::clock::ManualClock::advance),
    /// `set_ms`, `freeze`, `resume`): TTLs, expiry, blocking timeouts,
    /// TIME and CL.THROTTLE follow it (the expiry cycle still runs `hz`
    /// times a second of real time).
    pub fn clock(mut self, clock: util::clock::ManualClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Binds, loads any data the configuration points at and starts the
    /// event loop on a thread of its own; the [`Server`] stops it when
    /// dropped.
    pub fn start(self) -> std::io::Result<Server> {
        if let Some(e) = self.error {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e));
        }
        Server::start_inner(self.config, None, self.clock, None)
    }
}

impl Server {
    /// A [`ServerBuilder`] with the embedding defaults: a free port on
    /// 127.0.0.1, no save points, the system's clock.
    pub fn builder() -> ServerBuilder {
        let mut config = Config::default();
        config.port = 0;
        config.bind = vec!["127.0.0.1".into()];
        config.save.clear();
        ServerBuilder {
            config,
            clock: None,
            error: None,
        }
    }

    /// Binds the configured addresses, loads the data and starts the event
    /// loop on a thread of its own.
    pub fn start(config: Config) -> std::io::Result<Server> {
        Self::start_with_file(config, None, None)
    }

    /// As [`Server::start`], with the server's time read from `clock`, a
    /// [`ManualClock`](util::clock::ManualClock) the caller moves: TTLs,
    /// expiry and blocking timeouts follow it (the expiry cycle still runs
    /// `hz` times a second of real time).
    pub fn start_with_clock(
        config: Config,
        clock: util::clock::ManualClock,
    ) -> std::io::Result<Server> {
        Self::start_inner(config, None, Some(clock), None)
    }

    /// As [`Server::start`], remembering the config file path for INFO,
    /// and handing `on_bound` the server's handle once its ports are open,
    /// before the data set loads (the binary forwards signals through it,
    /// so a SIGTERM stops a long load as Redis's does).
    pub fn start_with_file(
        config: Config,
        config_file: Option<String>,
        on_bound: Option<OnBound>,
    ) -> std::io::Result<Server> {
        Self::start_inner(config, config_file, None, on_bound)
    }

    fn start_inner(
        config: Config,
        config_file: Option<String>,
        clock: Option<util::clock::ManualClock>,
        on_bound: Option<OnBound>,
    ) -> std::io::Result<Server> {
        tune_allocator(config.get_bool("jemalloc-bg-thread"));
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("ferrokv".into())
            .stack_size(EXEC_STACK)
            .spawn(move || {
                if let Some(clock) = &clock {
                    util::clock::install(Some(clock.clone()));
                }
                match prepare(config, config_file, on_bound) {
                    Ok((executor, net, handle)) => {
                        if let Some(clock) = clock {
                            let waker = net.borrow().waker();
                            clock.on_move(Box::new(move || {
                                let _ = waker.wake();
                            }));
                        }
                        let addrs = net.borrow().local_addrs();
                        let stopping = executor.server.shutdown;
                        let _ = tx.send(Ok((addrs, handle, stopping)));
                        executor.run(net);
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            })?;
        let (addrs, handle, stopped_loading) = rx
            .recv()
            .map_err(|e| std::io::Error::other(e.to_string()))??;
        Ok(Server {
            addrs,
            handle,
            thread: Some(thread),
            stopped_loading,
        })
    }

    /// Runs the server on the calling thread until it stops (SHUTDOWN or
    /// a signal), as Redis's main thread runs its event loop; `on_started`
    /// is called once the ports are open and the data set is loaded. The
    /// binary serves this way because the kernel hands a signal sent to
    /// the process (a SIGSTOP) to its main thread: an idle main thread
    /// let the event loop go on serving until it was next scheduled. The
    /// caller's stack must hold [`EXEC_STACK`].
    pub fn run_on_this_thread(
        config: Config,
        config_file: Option<String>,
        on_bound: Option<OnBound>,
        on_started: impl FnOnce(&Started),
    ) -> std::io::Result<()> {
        tune_allocator(config.get_bool("jemalloc-bg-thread"));
        let (executor, net, _handle) = prepare(config, config_file, on_bound)?;
        let addrs = net.borrow().local_addrs();
        on_started(&Started {
            addrs,
            stopped_loading: executor.server.shutdown,
        });
        executor.run(net);
        Ok(())
    }

    /// The first address bound (with the port actually taken), to
    /// connect a client to.
    pub fn addr(&self) -> SocketAddr {
        self.addrs
            .first()
            .copied()
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// A `redis://` URL of [`Server::addr`], for client libraries.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr())
    }

    /// The port bound.
    pub fn port(&self) -> u16 {
        self.addrs.first().map_or(0, |a| a.port())
    }

    /// A handle to stop the server from another thread.
    pub fn handle(&self) -> ServerHandle {
        self.handle.clone()
    }

    /// True when a shutdown (SHUTDOWN, a signal) stopped the load at
    /// start-up: the server stops without serving.
    pub fn stopped_loading(&self) -> bool {
        self.stopped_loading
    }

    /// True once shutdown began.
    pub fn is_shut_down(&self) -> bool {
        self.handle.shared.shutting_down.load(Ordering::SeqCst)
    }

    /// Waits until the server has stopped (SHUTDOWN or a signal).
    pub fn join(mut self) {
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Server {
    /// Stops the server (saving as on SIGTERM when save rules are set) and
    /// waits for its thread, so an embedding program or a test leaves no
    /// server behind.
    fn drop(&mut self) {
        if let Some(h) = self.thread.take() {
            self.handle.stop();
            let _ = h.join();
        }
    }
}

/// What [`Server::start_with_file`] calls with the server's handle once
/// the ports are open.
pub type OnBound = Box<dyn FnOnce(ServerHandle) + Send>;

/// Redis's redisAsciiArt, once the ports are open (the suite takes the
/// logo's PID line for a server that listens): the logo when asked for
/// (`always-show-logo`) or when logging to a terminal, else one line.
fn announce(config: &Config) {
    use std::io::IsTerminal;
    let mode = if config.get_bool("cluster-enabled") {
        "cluster"
    } else {
        "standalone"
    };
    let port = match config.port {
        0 => config.get("tls-port").parse().unwrap_or(0),
        port => port,
    };
    let to_terminal = !config.get_bool("syslog-enabled")
        && config.logfile.is_empty()
        && std::io::stdout().is_terminal();
    if to_terminal || config.get_bool("always-show-logo") {
        tracing::info!("{}", config::cli::logo(mode, port));
    } else {
        tracing::info!("Running mode={mode}, port={port}.");
    }
}

/// Binds, builds the executor and loads the data set (serving clients
/// meanwhile), on the thread that will run the event loop.
fn prepare(
    config: Config,
    config_file: Option<String>,
    on_bound: Option<OnBound>,
) -> std::io::Result<(Executor, Rc<RefCell<net::event_loop::Net>>, ServerHandle)> {
    // TLS first, as Redis's initServer: a configuration that cannot be
    // applied stops the start before any port opens.
    let tls = if net::tls::wanted(&config) {
        match net::tls::configure(&config) {
            Ok(ctx) => Some(ctx),
            Err(why) => {
                tracing::warn!("{why}");
                return Err(std::io::Error::other(
                    "Failed to configure TLS. Check logs for more info.",
                ));
            }
        }
    } else {
        None
    };
    let tls_port: u16 = config.get("tls-port").parse().unwrap_or(0);
    // `port 0` next to a TLS port means no plain TCP port, as in Redis;
    // alone, ferrokv takes a free port (embedding, tests).
    let listeners = if config.port == 0 && tls_port != 0 {
        Vec::new()
    } else {
        let opts = net::listener::ListenOpts::from_config(&config);
        net::listener::check_backlog(opts.backlog);
        net::listener::bind_all(&config.bind, config.port, opts)?
    };
    let shared = Arc::new(Shared::default());
    let mut net = net::event_loop::Net::new(listeners, shared.clone())?;
    net.load_config(&config);
    net.set_tls(tls);
    if tls_port != 0 {
        net.listen_tls(&config.bind, tls_port)?;
    }
    let unixsocket = config.get("unixsocket");
    if !unixsocket.is_empty() {
        #[cfg(unix)]
        {
            let perm = u32::from_str_radix(&config.get("unixsocketperm"), 8).unwrap_or(0);
            net.listen_unix(&unixsocket, perm).map_err(|e| {
                std::io::Error::new(e.kind(), format!("Failed opening Unix socket: {e}"))
            })?;
        }
    }
    // Redis's initServer: a server no one can reach does not start.
    if !net.listens_anywhere() {
        return Err(std::io::Error::other(
            "Configured to not listen anywhere, exiting.",
        ));
    }
    let port = net.local_addrs().first().map_or(config.port, |a| a.port());
    let handle = ServerHandle {
        shared: shared.clone(),
        waker: net.waker(),
    };
    let mut executor = Executor::new(config, shared, port);
    executor.server.config_file = config_file;
    executor
        .server
        .load_acl_at_startup()
        .map_err(std::io::Error::other)?;
    if executor.server.config.get_bool("cluster-enabled") {
        if !executor.server.config.get("replicaof").is_empty() {
            return Err(std::io::Error::other(
                "replicaof directive not allowed in cluster mode",
            ));
        }
        let cport =
            server::cluster::cron::init(&mut executor.server).map_err(std::io::Error::other)?;
        // Database 0's keys by hash slot, from the load on.
        executor.store.dbs[0].dict.index_slots();
        net.bus_listen(&executor.server.config.bind, cport)
            .map_err(|_| {
                std::io::Error::other(format!(
                    "Failed listening on port {cport} (cluster), aborting."
                ))
            })?;
    }
    executor.server.apply_proc_title();
    announce(&executor.server.config);
    tracing::warn!("Server initialized");
    // Redis's moduleLoadFromQueue: ferrokv loads no modules, so the first
    // `loadmodule` fails as a module that cannot be loaded does in Redis.
    if let Some(path) = executor.server.config.modules.first() {
        if std::fs::metadata(path).is_err() {
            tracing::warn!(
                "Module {path} failed to load: {path}: cannot open shared object file: No such file or directory"
            );
        } else {
            tracing::warn!("Module {path} failed to load: ferrokv does not load modules");
        }
        return Err(std::io::Error::other(format!(
            "Can't load module from {path}: server aborting"
        )));
    }
    if let Some(f) = on_bound {
        f(handle.clone());
    }
    let net = Rc::new(RefCell::new(net));
    executor.attach_net(net.clone());
    executor.load_on_start()?;
    if executor.server.shutdown {
        return Ok((executor, net, handle));
    }
    if executor.server.cluster.is_some() {
        server::cluster::cron::verify_with_data(&mut executor.server, &executor.store)
            .map_err(std::io::Error::other)?;
    }
    // `replicaof host port`: follow that master once the loop runs.
    let replicaof = executor.server.config.get("replicaof");
    if let Some((host, port)) = replicaof.split_once(' ') {
        let port = port.trim().parse().map_err(|_| {
            std::io::Error::other(format!("Invalid master port in replicaof: {port}"))
        })?;
        server::repl::set_master_from_config(&mut executor.server, host.to_string(), port);
    }
    // The replication history the data set stands for, so a restarted
    // replica or its replicas continue partially.
    if let Some(info) = executor.server.persist.loaded_repl.take() {
        let size = executor
            .server
            .config
            .get_i64("repl-backlog-size")
            .unwrap_or(1 << 20);
        // A cluster replica by its nodes.conf follows its master once the
        // bus runs: its history is a replica's (Redis's iAmMaster).
        let cluster_replica = executor
            .server
            .cluster
            .as_ref()
            .is_some_and(|c| c.me().is_replica());
        executor
            .server
            .repl
            .resume(info, size.max(1) as usize, cluster_replica);
        // What expired while the master was down reaches its backlog as
        // DELs after the loaded offset, so its replicas continue and drop
        // those keys too (Redis's RDBFLAGS_FEED_REPL).
        let expired = std::mem::take(&mut executor.server.persist.loaded_expired);
        let repl = &mut executor.server.repl;
        if repl.master.is_none() {
            let lazy = store::lazyfree::LAZY_EXPIRE.load(std::sync::atomic::Ordering::Relaxed);
            for (db, key) in &expired {
                repl.log.feed_del(*db, key, lazy);
            }
            repl.flush();
        }
    }
    Ok((executor, net, handle))
}

/// How long jemalloc keeps freed (dirty) pages before returning them to the
/// OS. Its default of 10 s makes memory freed by expiry or DEL show up in
/// RSS only slowly; one second keeps reuse cheap and still lets RSS follow
/// the dataset.
#[cfg(ferrokv_jemalloc)]
const DIRTY_DECAY_MS: isize = 1000;

/// Has jemalloc purge freed pages from a background thread as
/// `jemalloc-bg-thread` says (Redis's set_jemalloc_bg_thread) and shortens
/// the decay time, so RSS falls after keys are deleted or expire without
/// any allocation activity. Failures are ignored: when jemalloc is not the
/// global allocator these settings only concern an unused heap.
fn tune_allocator(background_thread: bool) {
    util::counting_alloc::set_background_thread(background_thread);
    #[cfg(ferrokv_jemalloc)]
    {
        use tikv_jemalloc_ctl::raw;
        // SAFETY: the names are NUL-terminated mallctl keys whose values are
        // `ssize_t` (isize) and `unsigned` (u32), as jemalloc documents.
        unsafe {
            let _ = raw::write(b"arenas.dirty_decay_ms\0", DIRTY_DECAY_MS);
            let n: u32 = raw::read(b"arenas.narenas\0").unwrap_or(0);
            for i in 0..n {
                let name = format!("arena.{i}.dirty_decay_ms\0");
                let _ = raw::write(name.as_bytes(), DIRTY_DECAY_MS);
            }
        }
    }
}

/// Starts a server in a background thread and returns its port. The
/// server lives until SHUTDOWN or a signal; keep the [`Server`] from
/// [`Server::start`] instead to stop it when it is dropped.
pub fn spawn_background(config: Config) -> std::io::Result<u16> {
    let mut server = Server::start(config)?;
    // Detached: dropping the Server no longer stops it.
    drop(server.thread.take());
    Ok(server.port())
}
