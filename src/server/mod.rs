//! The server model (Redis's `struct redisServer` and the client table):
//! the state command handlers read and change, apart from the event loop
//! and timers that drive it (`exec/`). Configuration, the command table,
//! clients, pub/sub, the blocking registry, CLIENT PAUSE, statistics and
//! persistence state live here; [`call::call`] is the one place a command
//! runs.

pub mod acl;
pub mod aof_replay;
pub mod blocking;
pub mod call;
pub mod client;
pub mod client_mem;
pub mod cluster;
pub mod evict;
pub mod keyspec;
pub mod latency;
pub mod monitor;
pub mod multi;
pub mod obuf;
pub mod pause;
pub mod propagate;
pub mod pubsub;
pub mod repl;
pub mod script_host;
pub mod shutdown;
pub mod slowlog;
pub mod spec;
pub mod table;
pub mod tracking;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use self::client::Client;
use self::table::CommandTable;
use crate::config::Config;
use crate::error::CmdResult;
use crate::net::link::{NewClient, Shared};
use crate::net::reply::ReplyBuf;
use crate::net::request::{Argv, Batch};
use crate::store::Store;
use crate::util::clock;

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
    /// Clients closed by client eviction (INFO evicted_clients).
    pub evicted_clients: u64,
    /// Deep integrity checks of RESTORE payloads (INFO
    /// dump_payload_sanitizations).
    pub dump_payload_sanitizations: u64,
    /// Errors replied to the master, a replica or the AOF loader (INFO
    /// unexpected_error_replies).
    pub unexpected_error_replies: u64,
}

/// A load in progress: Redis's loading_start_time, loading_total_bytes and
/// loading_loaded_bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadProgress {
    /// Unix time the load started, in seconds.
    pub start_time: u64,
    /// Bytes of the files being loaded.
    pub total_bytes: u64,
    /// Bytes read so far.
    pub loaded_bytes: u64,
}

impl LoadProgress {
    /// Starts counting a load of `total_bytes`.
    pub fn start(total_bytes: u64) -> LoadProgress {
        LoadProgress {
            start_time: crate::util::clock::real_now_ms() / 1000,
            total_bytes,
            loaded_bytes: 0,
        }
    }
}

/// Everything the executor owns besides the store and the client running a
/// command; handlers reach it through `ctx.server`.
pub struct ServerState {
    /// The configuration (CONFIG GET/SET).
    pub config: Config,
    /// The command table.
    pub table: CommandTable,
    /// Users, permissions and the ACL log.
    pub acl: acl::Acl,
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
    /// Set by SHUTDOWN: the executor stops after the current batch.
    pub shutdown: bool,
    /// A signal's shutdown waiting for the cron (Redis's shutdown_asap),
    /// which SHUTDOWN ABORT cancels.
    pub shutdown_asap: Option<i32>,
    /// A shutdown waiting for replicas to catch up (Redis's
    /// shutdown_mstime), moved on by the cron.
    pub shutdown_wait: Option<shutdown::Waiting>,
    /// DEBUG PAUSE-CRON: the periodic work is held.
    pub pause_cron: bool,
    /// DEBUG DROP-CLUSTER-PACKET-FILTER: cluster bus messages of this type
    /// are dropped on receipt (-1: none).
    pub cluster_drop_packet_filter: i64,
    /// The cron's frequency now: `hz`, raised with many clients under
    /// `dynamic-hz` (INFO's `hz`).
    pub hz: u32,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call `noscript`
    /// commands (a test hook).
    pub script_allow_noscript: bool,
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
    /// Logical Unix µs when the running top-level command started: the
    /// time it acts at.
    pub call_started_us: u64,
    /// Real Unix µs when the running top-level command started: where its
    /// duration is measured from.
    pub call_started_real_us: u64,
    /// The script or function running now, while it runs (SCRIPT KILL,
    /// FUNCTION STATS and the busy loop look at it).
    pub running_script: Option<Rc<crate::script::RunState>>,
    /// Children running forked Lua debugging sessions (SCRIPT DEBUG YES),
    /// reaped by the cron and killed at shutdown.
    pub ldb_children: Vec<i32>,
    /// DEBUG REPLYBUFFER's settings.
    pub reply_resize: crate::net::conn::ReplyResize,
    /// The scripts' client (Redis's lua_client), taken out while a script
    /// runs; made on first use.
    pub script_client: Option<Box<Client>>,
    /// Replication: ID and offset, backlog, replicas, the master link.
    pub repl: repl::Replication,
    /// Commands waiting to reach the AOF, and the running command's
    /// statement about its own effects.
    pub propagation: propagate::Propagation,
    /// Memory accounting and eviction under maxmemory.
    pub memory: evict::Memory,
    /// client-output-buffer-limit, per class.
    pub obuf_limits: [obuf::Limits; 3],
    /// maxmemory-clients in bytes (0: no client eviction).
    pub client_evict_limit: usize,
    /// The memory of every client's buffers together, kept by the network
    /// side (INFO mem_clients_normal, client eviction).
    pub clients_mem: Rc<std::cell::Cell<usize>>,
    /// Serves other clients while a script is busy or the data set loads
    /// (the event loop's processEventsWhileBlocked, installed by `exec`).
    pub serve_while_busy: fn(&mut ServerState, &mut Store),
    /// The clients in MONITOR mode.
    pub monitors: Vec<u64>,
    /// Client-side caching: tracked keys and invalidations.
    pub tracking: tracking::Tracking,
    /// The slow log.
    pub slowlog: slowlog::SlowLog,
    /// Latency events (LATENCY).
    pub latency: latency::Monitor,
    /// The data set is being loaded at start-up or by DEBUG LOADAOF
    /// (Redis's `server.loading`): clients get -LOADING but for the
    /// commands flagged `loading`.
    pub loading: bool,
    /// A replica loads its master's snapshot while serving the old data
    /// set (Redis's `server.async_loading`, with `loading` set too):
    /// only commands flagged `no-async-loading` get -LOADING.
    pub async_loading: bool,
    /// How far the load has come (INFO's `loading_*` figures).
    pub load_progress: LoadProgress,
    /// The active expiry cycle runs (DEBUG SET-ACTIVE-EXPIRE).
    pub active_expire: bool,
    /// The cluster, with `cluster-enabled yes`.
    pub cluster: Option<Box<cluster::ClusterState>>,
    /// MIGRATE's connections to its targets, by `host:port`.
    pub migrate_sockets: HashMap<String, MigrateSocket>,
}

/// A connection MIGRATE keeps to a target (Redis's migrateCachedSocket).
pub struct MigrateSocket {
    /// The socket, for writing.
    pub writer: std::net::TcpStream,
    /// The same socket, buffered for reading replies.
    pub reader: std::io::BufReader<std::net::TcpStream>,
    /// The database selected on it, once known.
    pub last_dbid: Option<i64>,
    /// When it was last used (Unix ms).
    pub last_use_ms: u64,
}

/// Installs the collection encoding thresholds `config` sets (Redis reads
/// them from `server.*` where a value converts).
pub fn apply_tuning(config: &Config) {
    let n = |name: &str| config.get_i64(name).unwrap_or(0);
    let u = |name: &str| config.get(name).parse::<u64>().unwrap_or(0);
    crate::store::tuning::set(&crate::store::tuning::Thresholds {
        hash_max_entries: u("hash-max-listpack-entries"),
        hash_max_value: u("hash-max-listpack-value"),
        zset_max_entries: u("zset-max-listpack-entries"),
        zset_max_value: u("zset-max-listpack-value"),
        set_max_intset_entries: u("set-max-intset-entries"),
        list_fill: n("list-max-listpack-size"),
        list_compress_depth: u("list-compress-depth"),
    });
    crate::store::lazyfree::configure(
        config.get_bool("lazyfree-lazy-user-del"),
        config.get_bool("lazyfree-lazy-expire"),
        config.get_bool("lazyfree-lazy-eviction"),
        config.get_bool("lazyfree-lazy-server-del"),
    );
}

impl ServerState {
    /// Shows the process title `set-proc-title` and `proc-title-template`
    /// ask for (Redis's redisSetProcTitle(NULL)); forked children show
    /// theirs from the same parts.
    pub fn apply_proc_title(&self) {
        let c = &self.config;
        if !c.get_bool("set-proc-title") {
            crate::util::proctitle::configure(None);
            return;
        }
        let tls_port = c.get("tls-port");
        let unixsocket = c.get("unixsocket");
        let listen_addr = if self.port != 0 || tls_port != "0" {
            let port = if self.port != 0 {
                self.port.to_string()
            } else {
                tls_port.clone()
            };
            format!("{}:{port}", c.bind.first().map_or("*", String::as_str))
        } else {
            format!("unixsocket:{unixsocket}")
        };
        crate::util::proctitle::configure(Some(crate::util::proctitle::TitleVars {
            template: c.get("proc-title-template"),
            listen_addr,
            server_mode: if self.cluster.is_some() {
                "[cluster]".into()
            } else {
                String::new()
            },
            port: c.port.to_string(),
            tls_port,
            unixsocket,
            config_file: self.config_file.clone().unwrap_or_else(|| "-".into()),
        }));
    }
}

/// Puts `watchdog-period` into effect; a period under two cron periods is
/// raised, in `config` too, as Redis's applyWatchdogPeriod raises it.
pub fn apply_watchdog(config: &mut Config) {
    let want = config.get_i64("watchdog-period").unwrap_or(0).max(0) as u64;
    let got = crate::util::watchdog::apply(want, config.hz);
    if got != want {
        if let Some((p, _)) = crate::config::params::lookup(b"watchdog-period") {
            let _ = config.set_args(p, &[got.to_string().as_bytes()], false);
        }
    }
}

/// Puts `oom-score-adj` and `oom-score-adj-values` of `config` into
/// effect for the process's class now (Redis's updateOOMScoreAdj); the
/// error is CONFIG SET's.
pub fn apply_oom_config(config: &Config) -> Result<(), &'static str> {
    let mut values = [0i32; 3];
    for (v, text) in values
        .iter_mut()
        .zip(config.get("oom-score-adj-values").split(' '))
    {
        *v = text.parse().unwrap_or(0);
    }
    crate::util::process::configure_oom(&config.get("oom-score-adj"), values);
    crate::util::process::apply_oom_score(None).map_err(|e| {
        tracing::warn!("{e}");
        "Failed to set current oom_score_adj. Check server logs."
    })
}

/// Moves the process to OOM class `class` (a replica or a master now).
pub fn set_oom_class(class: crate::util::process::OomClass) {
    if let Err(e) = crate::util::process::apply_oom_score(Some(class)) {
        tracing::warn!("{e}");
    }
}

impl ServerState {
    /// The state of a server that has just bound `port`, with the command
    /// table joined from `families` (each a list of name → handler).
    pub fn new(
        config: Config,
        shared: Arc<Shared>,
        port: u16,
        families: &[&[(&str, Handler)]],
    ) -> Self {
        let now = clock::real_now_ms();
        let run_id: String = (0..40)
            .map(|_| format!("{:x}", rand::random::<u8>() % 16))
            .collect();
        let mut table = CommandTable::build(families);
        // Checked before start-up (exec::check_config); a failing line
        // stops the server there.
        let _ = table.apply_renames(&config.renamed_commands);
        let obuf_limits = obuf::Limits::from_config(&config.get("client-output-buffer-limit"));
        let client_evict_limit = client_mem::eviction_limit(&config);
        let mut acl = acl::Acl::new(&table.universe);
        acl.all_channels_default = config.get("acl-pubsub-default") == "allchannels";
        acl.set_default_password(&table.universe, config.requirepass.as_deref());
        let mut repl = repl::Replication::default();
        repl.load_config(&config);
        apply_tuning(&config);
        let mut config = config;
        apply_watchdog(&mut config);
        let class = if config.get("replicaof").is_empty() {
            crate::util::process::OomClass::Master
        } else {
            crate::util::process::OomClass::Replica
        };
        let _ = crate::util::process::apply_oom_score(Some(class));
        let _ = apply_oom_config(&config);
        let mut aof = crate::persist::aof::Aof::default();
        aof.no_fsync_on_rewrite = config.get_bool("no-appendfsync-on-rewrite");
        aof.timestamps = config.get_bool("aof-timestamp-enabled");
        ServerState {
            config,
            table,
            acl,
            clients: HashMap::new(),
            shared,
            stats: ServerStats::default(),
            started: Instant::now(),
            started_unix: now / 1000,
            run_id,
            shutdown: false,
            shutdown_asap: None,
            shutdown_wait: None,
            script_allow_noscript: false,
            pause_cron: false,
            cluster_drop_packet_filter: -1,
            hz: 0,
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
            aof,
            call_started_us: 0,
            call_started_real_us: 0,
            running_script: None,
            ldb_children: Vec::new(),
            reply_resize: crate::net::conn::ReplyResize::default(),
            repl,
            propagation: propagate::Propagation::default(),
            memory: evict::Memory::default(),
            obuf_limits,
            client_evict_limit,
            clients_mem: Rc::default(),
            script_client: None,
            serve_while_busy: |_, _| {},
            monitors: Vec::new(),
            tracking: Default::default(),
            slowlog: slowlog::SlowLog::default(),
            latency: latency::Monitor::default(),
            loading: false,
            async_loading: false,
            load_progress: LoadProgress::default(),
            active_expire: true,
            cluster: None,
            migrate_sockets: HashMap::new(),
        }
    }

    /// What persistence works on: the configuration, its state and the AOF.
    pub fn persistence(&mut self) -> crate::persist::Persistence<'_> {
        crate::persist::Persistence {
            config: &self.config,
            state: &mut self.persist,
            aof: &mut self.aof,
            repl: self.repl.save_info(),
            replica_snapshot: self.repl.snapshot.is_some(),
        }
    }

    /// Counts a blocked command of client `client` that CLIENT UNBLOCK
    /// answered, as Redis 7.0's updateStatsOnUnblock with had_errors: a
    /// failed call whichever the reason, a latency sample and a slow log
    /// entry (of no time spent running); and an UNBLOCKED error when it was
    /// answered with one. Its call was counted when it blocked.
    pub fn count_unblocked(&mut self, client: u64, argv: Argv<'_>, error: bool) {
        let table = &mut self.table;
        if let Some(id) = table.resolve(argv.get(0), argv.try_get(1)) {
            let cmd = &mut table.commands[id];
            cmd.failed_calls += 1;
            self.stats.failed_calls += 1;
            if self.config.latency_tracking {
                cmd.latency.get_or_insert_with(Box::default).record(0);
            }
            if let (0, Some(c)) = (
                self.config.slowlog_log_slower_than,
                self.clients.get(&client),
            ) {
                let max_len = self.config.slowlog_max_len as usize;
                self.slowlog.push(c, &cmd.name, argv, 0, max_len);
            }
        }
        if error {
            self.count_error_prefix("UNBLOCKED");
        }
    }

    /// Counts an error reply by its prefix (INFO errorstats and
    /// total_error_replies).
    pub fn count_error_prefix(&mut self, prefix: &str) {
        *self.stats.errors.entry(prefix.to_string()).or_insert(0) += 1;
    }

    /// Function libraries and functions loaded (FUNCTION STATS, INFO
    /// memory). While a script runs the engine is out of the server; its
    /// run state kept the counts from when it started.
    pub fn function_counts(&self) -> (usize, usize) {
        match (&self.running_script, self.scripting.get()) {
            (Some(run), _) => (run.libraries.get(), run.functions.get()),
            (None, Some(e)) => (e.libraries.libs.len(), e.libraries.function_count()),
            (None, None) => (0, 0),
        }
    }

    /// Clients blocked now (INFO `blocked_clients`): on keys, or held by
    /// CLIENT PAUSE, as Redis counts BLOCKED_POSTPONE.
    pub fn blocked_clients(&self) -> usize {
        self.blocking.blocked_clients() + self.postponed.len()
    }

    /// True when client `id` is blocked (CLIENT LIST flag `b`).
    pub fn is_blocked(&self, id: u64) -> bool {
        self.blocking.is_blocked(id) || self.postponed.iter().any(|p| p.id == id)
    }

    /// The command client `id` is blocked in, and the batch it came in,
    /// when it is blocked on keys or held by a pause: Redis keeps such a
    /// client's argv (CLIENT LIST `argv-mem`) and the rest of its pipeline
    /// in its query buffer (`qbuf`).
    pub fn held_command(&self, id: u64) -> Option<(&Batch, usize)> {
        if let Some(p) = self.blocking.parked.get(&id) {
            return Some((&p.batch, p.next));
        }
        self.postponed
            .iter()
            .find(|p| p.id == id)
            .map(|p| (&p.batch, p.next))
    }

    /// The -BUSY error while a script or function runs too long.
    pub fn busy_error(&self) -> crate::error::Error {
        match &self.running_script {
            Some(run) if run.is_function.get() => crate::error::Error::BusyFunction,
            _ => crate::error::Error::Busy,
        }
    }

    /// The network side's connection counters (zero without a network, as
    /// in unit tests).
    pub fn net_stats(&self) -> crate::net::event_loop::NetStats {
        self.net
            .as_ref()
            // A crash report may read it while the event loop holds it.
            .and_then(|n| n.try_borrow().ok().map(|n| n.stats()))
            .unwrap_or_default()
    }

    /// The I/O threads' state (INFO): (io_threads_active,
    /// io_threaded_reads_processed, io_threaded_writes_processed).
    pub fn io_thread_stats(&self) -> (bool, u64, u64) {
        self.net
            .as_ref()
            .and_then(|n| n.try_borrow().ok().map(|n| n.io_thread_stats()))
            .unwrap_or_default()
    }

    /// Hands a batch and its replies straight back to the client's
    /// connection, with what the connection needs for the next batch
    /// (close after writing, authenticated). Without a network (unit
    /// tests) they are dropped.
    pub fn send_replies(&self, client: &Client, batch: crate::net::request::Batch, out: Vec<u8>) {
        if let Some(net) = &self.net {
            let (close, auth) = (client.close_after_reply, client.authenticated);
            net.borrow_mut().replies(client.id, batch, out, close, auth);
        }
    }

    /// Registers a newly connected client.
    pub fn connect(&mut self, nc: NewClient) {
        let mut c = Client::new(nc.id, nc.addr, nc.laddr, nc.tx, clock::real_now_ms());
        c.fd = nc.fd;
        c.tls = nc.tls;
        c.bufs = nc.bufs;
        c.bufs.held.set(client_mem::CLIENT_FIXED);
        c.bufs.recount();
        c.user = Some(self.acl.default.clone());
        c.set_authenticated(!self.acl.auth_required());
        self.clients.insert(nc.id, c);
    }

    /// Makes the scripting engine's function libraries those of
    /// `store.functions`, as a load left them (the RDB's FUNCTION2
    /// records): nothing when they already are. A library that does not
    /// compile is logged and left out.
    pub fn install_functions(&mut self, store: &mut Store) {
        let same = match self.scripting.get() {
            Some(e) => e.has_library_codes(&store.functions),
            None => store.functions.is_empty(),
        };
        if same {
            return;
        }
        let mut engine = match self.scripting.take() {
            Some(e) => e,
            None => match crate::script::Engine::new(self.config.lua_memory_limit) {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!("Failed loading functions: {}", e.message());
                    return;
                }
            },
        };
        engine.flush_libraries();
        for code in &store.functions {
            if let Err(e) = engine.load_library(code, true) {
                tracing::warn!("Failed loading library: {}", e.message());
            }
        }
        store.functions = engine.library_codes();
        self.scripting.put(engine);
    }

    /// Whether `client` is shown the nodes' plaintext ports: a plain
    /// connection in a TLS cluster (Redis's `use_pport`).
    pub fn use_pport(&self, client: &Client) -> bool {
        client.fd >= 0 && !client.tls && self.config.get_bool("tls-cluster")
    }

    /// Tells the network side whether connections must authenticate,
    /// after the default user changed (requirepass, ACL SETUSER, ACL
    /// LOAD): unauthenticated clients get smaller request limits, and
    /// protected mode applies only without a password.
    pub fn acl_changed(&mut self) {
        let required = self.acl.auth_required();
        let nopass = self.acl.default_nopass();
        if let Some(net) = &self.net {
            net.borrow_mut().set_auth_required(required, nopass);
        }
    }

    /// Creates the users of the configuration's `user` lines, then reads
    /// the ACL file, as Redis does before loading data
    /// (ACLLoadUsersAtStartup). An error is the reason to stop.
    pub fn load_acl_at_startup(&mut self) -> Result<(), String> {
        let aclfile = self.config.get("aclfile");
        if !aclfile.is_empty() && !self.config.users.is_empty() {
            return Err(
                "Configuring Redis with users defined in redis.conf and at the same \
                        setting an ACL file path is invalid. This setup is very likely to lead \
                        to configuration errors and security holes, please define either an ACL \
                        file or declare users directly in your redis.conf, but not both."
                    .into(),
            );
        }
        let users = self.config.users.clone();
        self.acl
            .load_configured(&self.table.universe, &users)
            .map_err(|e| format!("{e}\nCritical error while loading ACLs. Exiting."))?;
        if !aclfile.is_empty() {
            self.acl
                .load_file(&self.table.universe, &aclfile)
                .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
        }
        self.acl_changed();
        Ok(())
    }

    /// Disconnects the clients authenticated as any of `users` (a deleted
    /// or replaced user, ACLFreeUserAndKillClients); the calling client is
    /// closed after its reply.
    pub fn kill_clients_of(&mut self, users: &[acl::UserRef], current: &mut Client) {
        let of = |c: &Client| {
            c.user
                .as_ref()
                .is_some_and(|u| users.iter().any(|x| Rc::ptr_eq(x, u)))
        };
        let victims: Vec<u64> = self
            .clients
            .values()
            .filter(|c| of(c))
            .map(|c| c.id)
            .collect();
        for id in victims {
            self.kill_client(id);
        }
        if of(current) {
            current.user = Some(self.acl.default.clone());
            current.set_authenticated(false);
            current.close_after_reply = true;
        }
    }

    /// Drops what client `id` listens to: its channels and its key
    /// tracking (RESET, and a disconnection).
    pub fn forget_subscriptions(&mut self, id: u64) {
        self.pubsub.forget(id);
        self.tracking.forget(id);
    }

    /// Client `id` disconnected: what it listens to and its tracking slot
    /// are dropped.
    pub fn forget_disconnected(&mut self, id: u64) {
        self.forget_subscriptions(id);
        self.tracking.disconnected(id);
    }

    /// Closes another client's connection and forgets it. The master
    /// client's link is down from now (Redis frees it at once), not from
    /// when its connection is closed: a replica's data age counts from
    /// here even when the command that killed it runs on (a MULTI with
    /// DEBUG SLEEP after the kill).
    pub fn kill_client(&mut self, id: u64) {
        if let Some(m) = self
            .repl
            .master
            .as_mut()
            .filter(|m| m.client_id == Some(id))
        {
            m.lost();
        }
        if let Some(c) = self.clients.remove(&id) {
            // A failed send means the connection is already going away.
            let _ = c.tx.send(crate::net::link::ToConn::Close);
        }
    }

    /// Records a denied command or failed authentication in the ACL log
    /// (addACLLogEntry). `client` is who ran it; a script's denials name
    /// the script's caller. `current` is the command being refused: the
    /// client info counts it in `qbuf` and `argv-mem`, as Redis's does.
    pub fn acl_log(
        &mut self,
        store: &Store,
        client: &Client,
        (reason, context): (acl::log::Reason, acl::log::Context),
        object: &[u8],
        username: Option<&[u8]>,
        current: Option<&Argv<'_>>,
    ) {
        let username = match username {
            Some(u) => u.to_vec(),
            None => client
                .user
                .as_ref()
                .map(|u| u.borrow().name.clone())
                .unwrap_or_default(),
        };
        let client_info = match &client.script_caller_info {
            Some(info) => info.clone(),
            None => {
                let mut s = String::new();
                client::info_line(&mut s, client, self, store, clock::real_now_ms(), current);
                s
            }
        };
        let max_len = self.config.get_i64("acllog-max-len").unwrap_or(128).max(0) as usize;
        self.acl.log.add(
            acl::log::Entry {
                count: 1,
                reason,
                context,
                object: object.to_vec(),
                username,
                time_ms: clock::real_now_ms(),
                client_info,
            },
            max_len,
        );
    }
}

/// Everything a handler may touch while it runs.
pub struct Ctx<'a> {
    /// The keyspace.
    pub store: &'a mut Store,
    /// The calling client's state.
    pub client: &'a mut Client,
    /// Where the reply goes.
    pub reply: ReplyBuf<'a>,
    /// Server-wide state: config, stats, other clients, the command table.
    pub server: &'a mut ServerState,
}

impl Ctx<'_> {
    /// The caller's CLIENT LIST line while it runs `argv` (Redis's
    /// catClientInfoString of the current client): for log lines and
    /// the ACL log entries of the scripts it runs.
    pub fn caller_info(&self, argv: &Argv<'_>) -> String {
        let mut out = String::new();
        client::info_line(
            &mut out,
            self.client,
            self.server,
            self.store,
            clock::real_now_ms(),
            Some(argv),
        );
        out
    }

    /// The client's selected database.
    #[inline]
    pub fn db(&self) -> usize {
        self.client.db
    }

    /// The running command reaches the AOF as `args` instead of as it was
    /// called (Redis's `rewriteClientCommandVector`): relative TTLs made
    /// absolute, random or generated choices made explicit. It is
    /// propagated only if it changed the data set, as any command.
    pub fn propagate_as(&mut self, args: &[&[u8]]) {
        let p = &mut self.server.propagation;
        if p.on {
            p.rewritten = Some(propagate::argv_of(args));
        }
    }

    /// The running command counts `n` changes towards the next save and
    /// INFO's rdb_changes_since_last_save (Redis's `server.dirty += n`),
    /// instead of one per key write it signalled. With 0 it is not
    /// propagated either, as in Redis.
    #[inline]
    pub fn count_changes(&mut self, n: u64) {
        self.store.stats.counted = Some(n);
    }

    /// `args` reaches the AOF, in the client's database, before the
    /// running command (Redis's `alsoPropagate`).
    pub fn also_propagate(&mut self, args: &[&[u8]]) {
        self.server.propagation.also(self.client.db, args);
    }

    /// The running command is propagated even when it changed nothing
    /// (Redis's forceCommandPropagation).
    pub fn force_propagation(&mut self) {
        let p = &mut self.server.propagation;
        if p.on {
            p.forced = true;
        }
    }

    /// The running command itself reaches no AOF; what it did was said
    /// with [`Ctx::also_propagate`] (Redis's `preventCommandPropagation`).
    pub fn prevent_propagation(&mut self) {
        self.server.propagation.prevented = true;
    }

    /// True when the AOF reads the propagation stream, so a handler can
    /// skip work only propagation needs.
    pub fn propagating(&self) -> bool {
        self.server.propagation.on
    }
}

/// A command implementation.
pub type Handler = fn(&mut Ctx<'_>, Argv<'_>) -> CmdResult;
