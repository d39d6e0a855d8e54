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
const EXEC_STACK: usize = 64 * 1024 * 1024;

/// ferrokv's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A running server.
pub struct Server {
    /// Addresses bound.
    pub addrs: Vec<SocketAddr>,
    handle: ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
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

impl Server {
    /// Binds the configured addresses, loads the data and starts the event
    /// loop on a thread of its own.
    pub fn start(config: Config) -> std::io::Result<Server> {
        Self::start_with_file(config, None)
    }

    /// As [`Server::start`], with the server's time read from `clock`, a
    /// [`ManualClock`](util::clock::ManualClock) the caller moves: TTLs,
    /// expiry and blocking timeouts follow it (the expiry cycle still runs
    /// `hz` times a second of real time).
    pub fn start_with_clock(
        config: Config,
        clock: util::clock::ManualClock,
    ) -> std::io::Result<Server> {
        Self::start_inner(config, None, Some(clock))
    }

    /// As [`Server::start`], remembering the config file path for INFO.
    pub fn start_with_file(config: Config, config_file: Option<String>) -> std::io::Result<Server> {
        Self::start_inner(config, config_file, None)
    }

    fn start_inner(
        config: Config,
        config_file: Option<String>,
        clock: Option<util::clock::ManualClock>,
    ) -> std::io::Result<Server> {
        tune_allocator();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("ferrokv".into())
            .stack_size(EXEC_STACK)
            .spawn(move || {
                if let Some(clock) = &clock {
                    util::clock::install(Some(clock.clone()));
                }
                match prepare(config, config_file) {
                    Ok((executor, net, handle)) => {
                        if let Some(clock) = clock {
                            let waker = net.waker();
                            clock.on_move(Box::new(move || {
                                let _ = waker.wake();
                            }));
                        }
                        let addrs = net.local_addrs();
                        let _ = tx.send(Ok((addrs, handle)));
                        executor.run(Rc::new(RefCell::new(net)));
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            })?;
        let (addrs, handle) = rx
            .recv()
            .map_err(|e| std::io::Error::other(e.to_string()))??;
        Ok(Server {
            addrs,
            handle,
            thread: Some(thread),
        })
    }

    /// The port bound.
    pub fn port(&self) -> u16 {
        self.addrs.first().map_or(0, |a| a.port())
    }

    /// A handle to stop the server from another thread.
    pub fn handle(&self) -> ServerHandle {
        self.handle.clone()
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

/// Binds, builds the executor and loads the data set, on the thread that
/// will run the event loop.
fn prepare(
    config: Config,
    config_file: Option<String>,
) -> std::io::Result<(Executor, net::event_loop::Net, ServerHandle)> {
    let listeners = net::listener::bind_all(&config.bind, config.port)?;
    let shared = Arc::new(Shared::default());
    let mut net = net::event_loop::Net::new(listeners, shared.clone())?;
    net.load_config(&config);
    let port = net.local_addrs().first().map_or(config.port, |a| a.port());
    let handle = ServerHandle {
        shared: shared.clone(),
        waker: net.waker(),
    };
    let mut executor = Executor::new(config, shared, port);
    executor.server.config_file = config_file;
    executor.load_on_start()?;
    Ok((executor, net, handle))
}

/// How long jemalloc keeps freed (dirty) pages before returning them to the
/// OS. Its default of 10 s makes memory freed by expiry or DEL show up in
/// RSS only slowly; one second keeps reuse cheap and still lets RSS follow
/// the dataset.
#[cfg(not(target_env = "msvc"))]
const DIRTY_DECAY_MS: isize = 1000;

/// Asks jemalloc to purge freed pages from a background thread (as Redis's
/// `jemalloc-bg-thread yes`) and shortens the decay time, so RSS falls
/// after keys are deleted or expire without any allocation activity.
/// Failures are ignored: when jemalloc is not the global allocator these
/// settings only concern an unused heap.
fn tune_allocator() {
    #[cfg(not(target_env = "msvc"))]
    {
        use tikv_jemalloc_ctl::raw;
        if let Err(e) = tikv_jemalloc_ctl::background_thread::write(true) {
            tracing::debug!("jemalloc background thread not enabled: {e}");
        }
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
