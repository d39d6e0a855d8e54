//! ferrokv: a Redis-compatible in-memory key-value server.
//!
//! Data flows in one direction:
//!
//! - [`net`]: the listener and one task per connection. Each read is framed
//!   into a batch of commands (RESP arrays or inline lines) and handed to the
//!   executor in one message; replies come back as bytes to write.
//! - [`cmd`]: the command table (arity, flags and key positions captured from
//!   Redis 7.0) and one file per command family.
//! - [`exec`]: the keyspace executor, a single thread that alone owns the
//!   data, runs every command in order and drives timers (active expiry).
//! - [`store`]: databases, values and expiry.
//! - [`persist`]: RDB snapshots (SAVE/BGSAVE, load on start).
//!
//! [`config`] and [`util`] sit beside them; [`error`] holds every error
//! string. [`Server`] starts the whole thing, in a binary or inside a test.

pub mod cmd;
pub mod config;
pub mod error;
pub mod exec;
pub mod net;
pub mod persist;
pub mod script;
pub mod store;
pub mod util;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use config::Config;
use exec::{Executor, Shared};

/// Version reported as `redis_version`, so clients that check it accept
/// the server.
pub const REDIS_VERSION: &str = "7.0.15";

/// Stack of the executor thread: scripts recurse through Rust (cjson
/// encodes 1000 levels deep, replies nest), so it gets more than the
/// default 2 MiB.
const EXEC_STACK: usize = 64 * 1024 * 1024;

/// ferrokv's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A running server.
pub struct Server {
    /// Addresses bound.
    pub addrs: Vec<SocketAddr>,
    shared: Arc<Shared>,
    executor: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds the configured addresses and starts the executor thread and the
    /// accept loops on the current tokio runtime.
    pub async fn start(config: Config) -> std::io::Result<Server> {
        Self::start_with_file(config, None).await
    }

    /// As [`Server::start`], remembering the config file path for INFO.
    pub async fn start_with_file(
        config: Config,
        config_file: Option<String>,
    ) -> std::io::Result<Server> {
        tune_allocator();
        let listeners = net::listener::bind_all(&config.bind, config.port).await?;
        let addrs: Vec<SocketAddr> = listeners
            .iter()
            .filter_map(net::listener::local_addr)
            .collect();
        let port = addrs.first().map_or(config.port, |a| a.port());
        let shared = Arc::new(Shared::default());
        shared
            .proto_max_bulk_len
            .store(config.proto_max_bulk_len, Ordering::Relaxed);
        shared
            .maxclients
            .store(config.maxclients, Ordering::Relaxed);
        shared
            .auth_required
            .store(config.requirepass.is_some(), Ordering::Relaxed);
        shared
            .protected_mode
            .store(config.protected_mode, Ordering::Relaxed);
        shared
            .query_buffer_limit
            .store(config.client_query_buffer_limit as usize, Ordering::Relaxed);
        let (tx, rx) = std::sync::mpsc::channel();
        let mut executor = Executor::new(config, shared.clone(), port);
        executor.server.config_file = config_file;
        if executor.server.config.appendonly {
            persist::aof_load::load_on_start(&mut executor.store, &mut executor.server)?;
        } else {
            persist::load_on_start(&mut executor.store, &mut executor.server)?;
        }
        let handle = std::thread::Builder::new()
            .name("ferrokv-exec".into())
            .stack_size(EXEC_STACK)
            .spawn(move || executor.run(rx))?;
        let ctl = net::listener::Listeners::start(listeners, tx, &shared);
        if let Ok(mut slot) = shared.listeners.lock() {
            *slot = Some(ctl);
        }
        Ok(Server {
            addrs,
            shared,
            executor: Some(handle),
        })
    }

    /// The port bound.
    pub fn port(&self) -> u16 {
        self.addrs.first().map_or(0, |a| a.port())
    }

    /// Waits until the server shuts down (SHUTDOWN command or signal).
    pub async fn wait(&self) {
        loop {
            let notified = self.shared.shutdown.notified();
            if self.shared.shutting_down.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Stops the server as SHUTDOWN does (used on SIGTERM/SIGINT); returns
    /// once the executor has stopped.
    pub async fn shutdown(&self) {
        if let Ok(slot) = self.shared.listeners.lock() {
            if let Some(l) = slot.as_ref() {
                l.request_shutdown();
            }
        }
        self.wait().await;
    }

    /// True once shutdown began.
    pub fn is_shut_down(&self) -> bool {
        self.shared.shutting_down.load(Ordering::SeqCst)
    }

    /// Joins the executor thread after shutdown.
    pub fn join(mut self) {
        if let Some(h) = self.executor.take() {
            let _ = h.join();
        }
    }
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

/// Starts a server on its own runtime in a background thread (for tests and
/// embedding); returns its port. The server lives until SHUTDOWN.
pub fn spawn_background(config: Config) -> std::io::Result<u16> {
    let (ptx, prx) = std::sync::mpsc::channel();
    let threads = config.io_threads.max(1);
    std::thread::Builder::new()
        .name("ferrokv-net".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ptx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                match Server::start(config).await {
                    Ok(server) => {
                        let _ = ptx.send(Ok(server.port()));
                        server.wait().await;
                    }
                    Err(e) => {
                        let _ = ptx.send(Err(e));
                    }
                }
            });
        })?;
    prx.recv()
        .map_err(|e| std::io::Error::other(e.to_string()))?
}
