//! The engine: the event loop's driver, and the only owner of the data.
//! Each poll of the network (`net/event_loop.rs`) leaves a list of fired
//! events, as Redis's `ae`; for each framed batch the engine runs the
//! commands in order through the one command path
//! ([`crate::server::call::call`]), writing the replies into the batch's
//! output buffer, and hands the batch straight back to its connection.
//! Nothing else touches the store, so nothing locks.
//!
//! The loop also drives timers: the active expiry cycle at `hz`, saves,
//! AOF fsync and rewrites, and blocked-client timeouts (`blocking.rs`).
//! MULTI/EXEC, blocking pops and scripts all run here, which is what makes
//! them atomic.

pub mod batch;
pub mod blocking;
pub mod busy;
pub mod crash;
pub mod pause;
pub mod repl;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::net::link::{Request, Shared, ToConn};
use crate::server::client::ClientKind;
use crate::server::{pubsub, ServerState};
use crate::store::Store;

/// Clients the clients cron visits at least per period (Redis's
/// CLIENTS_CRON_MIN_ITERATIONS).
const CLIENTS_CRON_MIN_ITERATIONS: usize = 5;
use crate::util::clock;

/// How often the cluster's cron runs (Redis runs clusterCron every 100 ms
/// whatever `hz` is).
const CLUSTER_CRON: Duration = Duration::from_millis(100);

/// The executor: the store plus server state, driven by [`Executor::run`].
pub struct Executor {
    /// The keyspace.
    pub store: Store,
    /// Everything else.
    pub server: ServerState,
    last_cycle: Instant,
    /// The handshake with the master under way, on a replica.
    handshake: Option<repl::PendingLink>,
    /// Real Unix ms of the last once-a-second replication work.
    repl_second_ms: u64,
    /// When the cluster's cron last ran (ten times a second).
    cluster_cron: Instant,
    /// Real Unix ms of the last look for idle clients' buffers.
    /// Clients the clients cron has yet to visit this round.
    cron_clients: Vec<u64>,
}

/// What a configuration asks of the server that only the layers above the
/// config parser can check, as Redis's config loader does with the
/// command table at hand: each `rename-command` line names a command and
/// a free new name. The error is the config file's, at the failing line.
pub fn check_config(config: &Config) -> Result<(), crate::config::file::LoadError> {
    if config.renamed_commands.is_empty() {
        return Ok(());
    }
    let mut table = crate::server::table::CommandTable::build(crate::cmd::FAMILIES);
    table
        .apply_renames(&config.renamed_commands)
        .map_err(|(i, reason)| crate::config::file::LoadError::Bad {
            line: config.renamed_commands[i].line.clone(),
            reason: reason.into(),
        })
}

impl Executor {
    /// Creates an executor for `config`.
    pub fn new(config: Config, shared: Arc<Shared>, port: u16) -> Self {
        let mut e = Executor {
            store: Store::new(config.databases),
            server: ServerState {
                serve_while_busy: busy::serve_while_busy,
                ..ServerState::new(config, shared, port, crate::cmd::FAMILIES)
            },
            last_cycle: Instant::now(),
            handshake: None,
            repl_second_ms: 0,
            cluster_cron: Instant::now(),
            cron_clients: Vec::new(),
        };
        e.server.sync_access_tracking(&mut e.store);
        e.update_hz();
        e.server.memory.startup = crate::server::evict::allocated();
        e
    }

    /// Loads the data set at start-up: the AOF with `appendonly yes` (each
    /// command run through the one command path by a client of its own,
    /// as Redis's fake client), else the RDB file.
    pub fn load_on_start(&mut self) -> std::io::Result<()> {
        crate::server::aof_replay::load_on_start(&mut self.server, &mut self.store)
    }

    /// Gives the server its network: from here on (the load at start-up
    /// included) it can serve clients.
    pub fn attach_net(&mut self, net: Rc<RefCell<crate::net::event_loop::Net>>) {
        self.server.clients_mem = net.borrow().clients_mem();
        self.server.net = Some(net);
    }

    /// Runs the event loop until SHUTDOWN or a signal: poll the sockets,
    /// serve what arrived, run the timers, write the replies.
    pub fn run(mut self, net: Rc<RefCell<crate::net::event_loop::Net>>) {
        crash::watch(Some(&mut self));
        crate::util::watchdog::set_executor_thread(true);
        self.attach_net(net.clone());
        self.server.acl_changed();
        // The store records the event classes the configuration asks for
        // from the first command on.
        pubsub::drain_key_events(&mut self.server, &mut self.store, None, &mut Vec::new());
        // Redis's first replicationCron runs as the server starts, before
        // any replica is there: its loop 0 PINGs nobody, and a replica
        // that attaches at once waits for the period like any other.
        self.repl_cron();
        loop {
            let mut timeout = self.next_timeout();
            if let Some(t) = net.borrow().timeout_hint() {
                timeout = timeout.min(t);
            }
            net.borrow_mut().poll(timeout);
            self.serve(&net);
            if self.server.cluster.is_some() {
                self.cluster_work();
                net.borrow_mut().deliver();
            }
            if !self.server.shutdown {
                self.expire_blocked();
                self.timers();
                if self.repl_in_flight() {
                    self.repl_poll();
                }
                net.borrow_mut().deliver();
                self.serve(&net);
            }
            // Redis's beforeSleep continues unblocked clients first.
            if self.resume_served() {
                net.borrow_mut().deliver();
            }
            if self.repl_before_sleep() {
                net.borrow_mut().deliver();
            }
            if self.server.cluster.is_some() {
                crate::server::cluster::cron::before_sleep(&mut self.server);
            }
            if crate::server::tracking::before_sleep(&mut self.server, &mut self.store) {
                net.borrow_mut().deliver();
            }
            // Redis's beforeSleep: clients whose buffers grew in this
            // round (a large argument arriving) are evicted now.
            if self.server.clients_over_limit() {
                self.server.evict_clients(&self.store, None);
                net.borrow_mut().deliver();
            }
            net.borrow_mut().flush();
            if self.server.shutdown {
                break;
            }
        }
        crash::watch(None);
        crate::util::watchdog::set_executor_thread(false);
        self.stop();
        for pid in std::mem::take(&mut self.server.ldb_children) {
            tracing::warn!("Killing debugging session {pid}");
            // SAFETY: signals a child this process forked.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
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
        Duration::from_micros(1_000_000 / u64::from(self.server.hz.clamp(1, 500)))
    }

    /// The cron's frequency (serverCron's first step): `hz`, doubled under
    /// `dynamic-hz` while there are more than 200 clients per tick, up to
    /// 500.
    fn update_hz(&mut self) {
        let mut hz = self.server.config.hz.clamp(1, 500);
        if self.server.config.get_bool("dynamic-hz") {
            let clients = self.server.clients.len() as u32;
            while clients / hz > 200 {
                hz *= 2;
                if hz > 500 {
                    hz = 500;
                    break;
                }
            }
        }
        self.server.hz = hz;
    }

    /// The cluster bus's messages, and the cluster's cron every 100 ms.
    fn cluster_work(&mut self) {
        use crate::server::cluster::{bus, cron};
        bus::process_events(&mut self.server, &mut self.store);
        if self.cluster_cron.elapsed() >= CLUSTER_CRON {
            self.cluster_cron = Instant::now();
            cron::cron(&mut self.server, &mut self.store);
            if !self.server.blocking.parked.is_empty() {
                // A command of this round (DELSLOTS, a failover) may have
                // left the cluster's state to update: blocked clients are
                // judged on the state it leads to, not the one before.
                cron::before_sleep(&mut self.server);
                self.cluster_redirect_blocked();
                self.handle_ready();
            }
        }
    }

    fn next_timeout(&self) -> Duration {
        let mut cycle = self.period().saturating_sub(self.last_cycle.elapsed());
        if self.server.cluster.is_some() {
            cycle = cycle.min(CLUSTER_CRON.saturating_sub(self.cluster_cron.elapsed()));
        }
        if self.repl_in_flight() {
            // A snapshot or handshake finishing is noticed within 1 ms.
            cycle = cycle.min(Duration::from_millis(1));
        }
        if self.server.repl.pump_ready() {
            // A replica behind takes more of the stream at once.
            return Duration::ZERO;
        }
        match self.server.blocking.next_deadline() {
            // Wake for the nearest blocked-client timeout too.
            Some(at) => cycle.min(Duration::from_millis(at.saturating_sub(clock::now_ms()))),
            None => cycle,
        }
    }

    /// Collects forked Lua debugging sessions that ended.
    fn reap_ldb_children(&mut self) {
        self.server.ldb_children.retain(|&pid| {
            let mut status = 0;
            // SAFETY: a non-blocking wait for a child this process forked.
            unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 }
        });
    }

    /// Periodic work (Redis's serverCron): the active expiry cycle.
    fn timers(&mut self) {
        let period = self.period();
        if self.server.pause_cron || self.last_cycle.elapsed() < period {
            return;
        }
        self.last_cycle = Instant::now();
        self.update_hz();
        if self.server.shutdown_wait.is_some() {
            crate::server::shutdown::cron(&mut self.store, &mut self.server);
            if self.server.shutdown {
                return;
            }
            self.handle_ready();
        } else if let Some(sig) = self.server.shutdown_asap.take() {
            self.signal_shutdown(sig);
            if self.server.shutdown {
                return;
            }
        }
        // Redis's cron does not run while it loads (processEventsWhileBlocked
        // runs no timers), so a load longer than the period trips the
        // watchdog there: the same here.
        if !self.server.loading {
            crate::util::watchdog::arm();
        }
        self.store.set_now(clock::now_ms());
        self.store.log_expired = self.server.stream_on();
        // A replica leaves expiry to its master's DELs (Redis runs the
        // active cycle on masters only).
        // Nor while clients are paused: the data set stays as it is.
        if self.server.repl.master.is_none()
            && self.server.active_expire
            && !self.server.pause.active(clock::now_ms())
        {
            let started = Instant::now();
            // Redis's slow cycle may use 25% of each period, two points more
            // for each step of active-expire-effort above 1.
            let effort = self.server.config.active_expire_effort.clamp(1, 10);
            let budget = period * (25 + 2 * (effort - 1)) / 100;
            self.store.active_expire_cycle(budget, effort);
            let ms = started.elapsed().as_millis() as u64;
            let threshold = self.server.config.latency_monitor_threshold;
            self.server
                .latency
                .add_if_needed("expire-cycle", ms, threshold);
        }
        // A writable replica expires the keys its own clients gave a TTL.
        if self.server.repl.master.is_some()
            && self.server.active_expire
            && !self.store.replica_volatile.is_empty()
        {
            self.store.expire_replica_keys();
        }
        if self.server.stream_on() {
            self.server.feed_expired(&mut self.store);
        }
        // Redis's activerehashing: a millisecond per period.
        if self.server.config.get_bool("activerehashing") {
            self.store.rehash(Duration::from_millis(1));
        }
        if self.server.config.maxmemory != 0 {
            // Memory other threads freed or took counts from here on; an
            // eviction that ran out of time goes on (evictionTimeProc).
            self.server.memory.refresh();
            if self.server.memory.running {
                self.server.perform_evictions(&mut self.store);
            }
        }
        self.close_idle_clients();
        self.clients_cron();
        crate::cmd::migrate::close_idle_sockets(&mut self.server);
        self.reap_ldb_children();
        self.resume_postponed();
        // Group readers blocked on a stream that expired learn it now.
        self.handle_ready();
        self.after_writes();
        crate::persist::bgsave_poll(&mut self.store, &mut self.server.persistence());
        crate::persist::check_save_rules(&self.store, &mut self.server.persistence());
        self.server.aof.saving_child = self.server.persist.bgsave.is_some();
        self.server.aof.cron();
        self.repl_cron();
        crate::persist::aof::auto_rewrite(&self.store, &mut self.server.persistence());
    }

    /// `timeout`: closes clients idle longer than the limit
    /// (clientsCronHandleTimeout). Pub/sub clients are exempt, as in Redis.
    /// Redis's clientsCron, every period: a share of the clients (all of
    /// them over a second, at least five a period) get their buffers
    /// resized to fit their use ([`Net::client_cron`]) and their soft
    /// output limit checked, so a client left over it with no more output
    /// coming is still closed when its time is up.
    ///
    /// [`Net::client_cron`]: crate::net::event_loop::Net::client_cron
    fn clients_cron(&mut self) {
        if self.cron_clients.is_empty() {
            self.cron_clients
                .extend(self.server.clients.keys().copied());
        }
        let n = self.server.clients.len();
        let hz = self.server.config.hz.max(1) as usize;
        let turn = (n / hz).max(CLIENTS_CRON_MIN_ITERATIONS);
        let now = clock::real_now_ms();
        let Some(net) = self.server.net.clone() else {
            return;
        };
        let mut net = net.borrow_mut();
        for _ in 0..turn {
            let Some(id) = self.cron_clients.pop() else {
                break;
            };
            let Some(c) = self.server.clients.get(&id) else {
                continue;
            };
            net.client_cron(id, now.saturating_sub(c.last_interaction_ms) / 1000, now);
            let class = crate::server::obuf::class_of(c);
            // A replica's stream has its limit checked as it is fed.
            if class == crate::server::obuf::Class::Replica {
                continue;
            }
            let limits = self.server.obuf_limits[class as usize];
            let pending = crate::server::obuf::counted(&c.bufs, c.bufs.pending.get());
            if !limits.is_off() && limits.reached(&c.bufs, pending) {
                crate::server::obuf::close(c, class);
            }
        }
    }

    fn close_idle_clients(&mut self) {
        let limit_ms = self.server.config.timeout.saturating_mul(1000);
        if limit_ms == 0 {
            return;
        }
        // Idle time is real time: moving the logical clock closes no one.
        let now = clock::real_now_ms();
        let idle: Vec<u64> = self
            .server
            .clients
            .values()
            .filter(|c| c.kind == ClientKind::Normal)
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
            Request::Batch { id, batch, out } => {
                // Batches held by a pause that has just ended run before a
                // newer one (Redis holds every arrival until its cron ends
                // the pause, then runs them in order).
                self.resume_postponed();
                self.run_batch(id, batch, out);
                // A replica's acknowledgement may complete a WAIT.
                if !self.server.blocking.parked.is_empty() && !self.server.repl.replicas.is_empty()
                {
                    self.serve_wait();
                }
                // CLIENT UNPAUSE releases held batches at once.
                self.resume_postponed();
            }
            Request::Disconnect { id } => {
                self.server.clients.remove(&id);
                self.server.repl.forget(id);
                if !self.server.monitors.is_empty() {
                    self.server.monitors.retain(|&m| m != id);
                }
                if self
                    .server
                    .repl
                    .master
                    .as_ref()
                    .is_some_and(|m| m.client_id == Some(id))
                {
                    self.master_link_lost();
                }
                self.server.forget_disconnected(id);
                self.store.watches.unwatch_all(id);
                self.forget_blocked(id);
            }
            Request::Shutdown(None) => self.server.shutdown = true,
            // Acted on by the cron, as Redis's serverCron does.
            Request::Shutdown(Some(sig)) => self.server.shutdown_asap = Some(sig),
        }
    }

    /// A shutdown signal, with the flags `shutdown-on-sigint` or
    /// `shutdown-on-sigterm` give it (Redis's serverCron calling
    /// prepareForShutdown with those flags): it may wait for replicas, and
    /// when the final save fails the server keeps running unless the flags
    /// say `force`.
    fn signal_shutdown(&mut self, sig: i32) {
        let name = if sig == libc::SIGINT {
            "shutdown-on-sigint"
        } else {
            "shutdown-on-sigterm"
        };
        let flags = crate::server::shutdown::Flags::from_config(&self.server.config.get(name));
        crate::server::shutdown::prepare(&mut self.store, &mut self.server, flags);
        // A failed shutdown answered its blocked callers.
        self.handle_ready();
    }

    /// Hook after a batch or cycle: WATCH and blocked clients consume the
    /// touched-key lists here.
    fn after_writes(&mut self) {
        pubsub::drain_key_events(&mut self.server, &mut self.store, None, &mut Vec::new());
        self.server.pubsub.held.clear();
        self.store.touched.clear();
        self.store.touched_dbs.clear();
        self.server.blocking.reset_touched();
    }

    fn stop(&mut self) {
        self.server.aof.stop();
        if !self.server.shutdown_save_done {
            if let Err(e) = crate::persist::save_on_shutdown(
                &mut self.store,
                &mut self.server.persistence(),
                false,
                false,
            ) {
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
