//! Configuration: typed values with Redis 7.0 defaults, read from a
//! redis.conf-style file (`file.rs`) and `--directive value` arguments
//! (`cli.rs`), and changed at run time by CONFIG SET.
//!
//! Every Redis 7.0 parameter exists (`params.rs`, defaults captured from
//! redis-server in `defaults.tsv`); the ones ferrokv acts on are typed fields
//! of [`Config`], the others keep their normalized text in [`Config::other`]
//! so CONFIG GET/SET behave as in Redis.

pub mod cli;
pub mod file;
pub mod log;
pub mod params;
pub mod rewrite;
pub mod value;

use std::collections::BTreeMap;

use params::{Kind, Param, MULTI_ARG};
use value::ValueError;

/// One `rename-command` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenameCommand {
    /// The command's current name.
    pub from: Vec<u8>,
    /// Its new name; empty removes the command.
    pub to: Vec<u8>,
    /// Line number and text, for the start-up error when the rename
    /// cannot be done.
    pub line: Option<(usize, String)>,
}

/// The server configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// TCP port (0 picks a free one).
    pub port: u16,
    /// Addresses to bind; a leading `-` marks an optional one.
    pub bind: Vec<String>,
    /// Password for AUTH; None disables authentication.
    pub requirepass: Option<Vec<u8>>,
    /// `user <name> <rules...>` lines, in order: ACL users to create at
    /// start-up.
    pub users: Vec<Vec<Vec<u8>>>,
    /// `rename-command <old> <new>` lines, in order: the command table
    /// renames (or, with an empty new name, drops) these at start-up.
    pub renamed_commands: Vec<RenameCommand>,
    /// `loadmodule` paths: ferrokv loads no modules, so a server given one
    /// stops at start-up as Redis does when a module fails to load.
    pub modules: Vec<String>,
    /// Number of databases.
    pub databases: usize,
    /// Background task frequency.
    pub hz: u32,
    /// Largest bulk string accepted.
    pub proto_max_bulk_len: usize,
    /// Most simultaneous clients.
    pub maxclients: usize,
    /// Log level name.
    pub loglevel: String,
    /// Log file; empty logs to standard output.
    pub logfile: String,
    /// Refuse non-loopback clients when no password is set.
    pub protected_mode: bool,
    /// io-threads: threads reading and writing client sockets, the
    /// executor's thread included (`net/io_threads.rs`).
    pub io_threads: usize,
    /// Close clients idle for this many seconds (0 = never).
    pub timeout: u64,
    /// Milliseconds a script may run before other clients get -BUSY
    /// (`busy-reply-threshold`, alias `lua-time-limit`).
    pub busy_reply_threshold: u64,
    /// Working directory for RDB/AOF files (absolute).
    pub dir: String,
    /// RDB file name.
    pub dbfilename: String,
    /// RDB save points: (seconds, changes).
    pub save: Vec<(u64, u64)>,
    /// LZF-compress strings in RDB files (`rdbcompression`).
    pub rdbcompression: bool,
    /// Write and verify the RDB CRC64 (`rdbchecksum`).
    pub rdbchecksum: bool,
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION (not a directive): RESTORE and
    /// RDB loads skip the CRC64 check (Redis's skip_checksum_validation).
    pub skip_checksum_validation: bool,
    /// AOF enabled.
    pub appendonly: bool,
    /// AOF base name.
    pub appendfilename: String,
    /// AOF directory name (inside `dir`).
    pub appenddirname: String,
    /// AOF fsync policy: everysec, always, no.
    pub appendfsync: String,
    /// Memory limit in bytes (0 = none).
    pub maxmemory: u64,
    /// Eviction policy name.
    pub maxmemory_policy: String,
    /// Keys sampled per eviction.
    pub maxmemory_samples: u32,
    /// Commands slower than this many microseconds go to the slow log
    /// (-1 disables, 0 logs everything).
    pub slowlog_log_slower_than: i64,
    /// Slow log length.
    pub slowlog_max_len: u64,
    /// `latency-tracking`: per-command latency histograms.
    pub latency_tracking: bool,
    /// `latency-monitor-threshold` in milliseconds (0: off).
    pub latency_monitor_threshold: u64,
    /// `tracking-table-max-keys`: keys client-side caching remembers at
    /// most (0: no limit).
    pub tracking_table_max_keys: u64,
    /// Keyspace notification classes, normalized (`AKE`...).
    pub notify_keyspace_events: String,
    /// Run as a daemon (accepted; ferrokv stays in the foreground).
    pub daemonize: bool,
    /// PID file path; empty for none.
    pub pidfile: String,
    /// TCP keepalive seconds.
    pub tcp_keepalive: u64,
    /// Largest query buffer per client.
    pub client_query_buffer_limit: u64,
    /// Active expiry effort 1..10.
    pub active_expire_effort: u32,
    /// Largest sparse HyperLogLog (header included) before it turns dense.
    pub hll_sparse_max_bytes: usize,
    /// Every other parameter (canonical name → value as CONFIG GET prints).
    pub other: BTreeMap<&'static str, String>,
    /// `lua-memory-limit`: most bytes the Lua heap may take while script
    /// code runs; a script going past it stops with an error (Redis has no
    /// such limit and would grow until OOM). 0: no limit.
    pub lua_memory_limit: usize,
}

impl Default for Config {
    fn default() -> Self {
        let mut other = BTreeMap::new();
        for line in params::DEFAULTS_TSV.lines() {
            if line.starts_with('#') {
                continue;
            }
            let (name, value) = line.split_once('\t').unwrap_or((line, ""));
            if let Some(p) = params::PARAMS.iter().find(|p| p.name == name) {
                other.insert(p.name, value.to_string());
            }
        }
        for (name, value) in params::HIDDEN_DEFAULTS {
            if let Some(p) = params::PARAMS.iter().find(|p| p.name == *name) {
                other.insert(p.name, value.to_string());
            }
        }
        let dir = std::env::current_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| ".".into());
        let mut c = Config {
            port: 6379,
            bind: vec!["*".into(), "-::*".into()],
            requirepass: None,
            users: Vec::new(),
            renamed_commands: Vec::new(),
            modules: Vec::new(),
            databases: 16,
            hz: 10,
            proto_max_bulk_len: 512 * 1024 * 1024,
            maxclients: 10000,
            loglevel: "notice".into(),
            logfile: String::new(),
            protected_mode: true,
            io_threads: 1,
            timeout: 0,
            busy_reply_threshold: 5000,
            lua_memory_limit: 1024 * 1024 * 1024,
            dir,
            dbfilename: "dump.rdb".into(),
            save: vec![(3600, 1), (300, 100), (60, 10000)],
            rdbcompression: true,
            rdbchecksum: true,
            skip_checksum_validation: false,
            appendonly: false,
            appendfilename: "appendonly.aof".into(),
            appenddirname: "appendonlydir".into(),
            appendfsync: "everysec".into(),
            maxmemory: 0,
            maxmemory_policy: "noeviction".into(),
            maxmemory_samples: 5,
            slowlog_log_slower_than: 10000,
            slowlog_max_len: 128,
            latency_tracking: true,
            latency_monitor_threshold: 0,
            tracking_table_max_keys: 1_000_000,
            notify_keyspace_events: String::new(),
            daemonize: false,
            pidfile: String::new(),
            tcp_keepalive: 300,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            active_expire_effort: 1,
            hll_sparse_max_bytes: 3000,
            other: BTreeMap::new(),
        };
        // Typed parameters live in their fields only.
        other.retain(|name, _| c.get_typed(name).is_none());
        c.other = other;
        c
    }
}

/// Redis's refusal of `activedefrag yes` when built without a
/// defragmentation-capable jemalloc (isValidActiveDefrag).
const ACTIVE_DEFRAG_REFUSED: &str = "Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution";

/// What went wrong setting a parameter (the text after Redis's prefix).
pub type SetError = ValueError;

impl Config {
    /// The value of parameter `name` (canonical) as CONFIG GET prints it.
    pub fn get(&self, name: &str) -> String {
        self.get_typed(name)
            .or_else(|| self.other.get(name).cloned())
            .unwrap_or_default()
    }

    /// A parameter's value parsed as an integer (for parameters without a
    /// typed field, e.g. `list-max-listpack-size`).
    pub fn get_i64(&self, name: &str) -> Option<i64> {
        self.get(name).parse().ok()
    }

    /// A yes/no parameter's value.
    pub fn get_bool(&self, name: &str) -> bool {
        self.get(name) == "yes"
    }

    fn get_typed(&self, name: &str) -> Option<String> {
        let yn = |b: bool| if b { "yes" } else { "no" }.to_string();
        Some(match name {
            "port" => self.port.to_string(),
            "bind" => self.bind.join(" "),
            "requirepass" => self
                .requirepass
                .as_deref()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .unwrap_or_default(),
            "databases" => self.databases.to_string(),
            "hz" => self.hz.to_string(),
            "proto-max-bulk-len" => self.proto_max_bulk_len.to_string(),
            "maxclients" => self.maxclients.to_string(),
            "loglevel" => self.loglevel.clone(),
            "logfile" => self.logfile.clone(),
            "protected-mode" => yn(self.protected_mode),
            "io-threads" => self.io_threads.to_string(),
            "timeout" => self.timeout.to_string(),
            "busy-reply-threshold" => self.busy_reply_threshold.to_string(),
            "dir" => self.dir.clone(),
            "dbfilename" => self.dbfilename.clone(),
            "save" => value::render_save(&self.save),
            "appendonly" => yn(self.appendonly),
            "rdbcompression" => yn(self.rdbcompression),
            "rdbchecksum" => yn(self.rdbchecksum),
            "appendfilename" => self.appendfilename.clone(),
            "appenddirname" => self.appenddirname.clone(),
            "appendfsync" => self.appendfsync.clone(),
            "maxmemory" => self.maxmemory.to_string(),
            "maxmemory-policy" => self.maxmemory_policy.clone(),
            "maxmemory-samples" => self.maxmemory_samples.to_string(),
            "slowlog-log-slower-than" => self.slowlog_log_slower_than.to_string(),
            "slowlog-max-len" => self.slowlog_max_len.to_string(),
            "latency-tracking" => yn(self.latency_tracking),
            "latency-monitor-threshold" => self.latency_monitor_threshold.to_string(),
            "tracking-table-max-keys" => self.tracking_table_max_keys.to_string(),
            "notify-keyspace-events" => value::notify_for_display(&self.notify_keyspace_events),
            "daemonize" => yn(self.daemonize),
            "pidfile" => self.pidfile.clone(),
            "tcp-keepalive" => self.tcp_keepalive.to_string(),
            "client-query-buffer-limit" => self.client_query_buffer_limit.to_string(),
            "active-expire-effort" => self.active_expire_effort.to_string(),
            "hll-sparse-max-bytes" => self.hll_sparse_max_bytes.to_string(),
            "lua-memory-limit" => self.lua_memory_limit.to_string(),
            _ => return None,
        })
    }

    /// Stores a normalized value.
    fn put(&mut self, p: &'static Param, v: String) {
        let num = |s: &str| s.parse::<u64>().unwrap_or(0);
        match p.name {
            "port" => self.port = num(&v) as u16,
            "bind" => {
                self.bind = v
                    .split(' ')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            }
            "requirepass" => {
                self.requirepass = (!v.is_empty()).then(|| v.into_bytes());
            }
            "databases" => self.databases = num(&v) as usize,
            // Redis clamps hz to 1..=500 when applying it.
            "hz" => self.hz = num(&v).clamp(1, 500) as u32,
            "proto-max-bulk-len" => self.proto_max_bulk_len = num(&v) as usize,
            "maxclients" => self.maxclients = num(&v) as usize,
            "loglevel" => self.loglevel = v,
            "logfile" => self.logfile = v,
            "protected-mode" => self.protected_mode = v == "yes",
            "io-threads" => self.io_threads = num(&v) as usize,
            "timeout" => self.timeout = num(&v),
            "busy-reply-threshold" => self.busy_reply_threshold = num(&v),
            "dir" => self.dir = v,
            "dbfilename" => self.dbfilename = v,
            "appendonly" => self.appendonly = v == "yes",
            "rdbcompression" => self.rdbcompression = v == "yes",
            "rdbchecksum" => self.rdbchecksum = v == "yes",
            "appendfilename" => self.appendfilename = v,
            "appenddirname" => self.appenddirname = v,
            "appendfsync" => self.appendfsync = v,
            "maxmemory" => self.maxmemory = num(&v),
            "maxmemory-policy" => self.maxmemory_policy = v,
            "maxmemory-samples" => self.maxmemory_samples = num(&v) as u32,
            "slowlog-log-slower-than" => self.slowlog_log_slower_than = v.parse().unwrap_or(0),
            "slowlog-max-len" => self.slowlog_max_len = num(&v),
            "latency-tracking" => self.latency_tracking = v == "yes",
            "latency-monitor-threshold" => self.latency_monitor_threshold = num(&v),
            "tracking-table-max-keys" => self.tracking_table_max_keys = num(&v),
            "notify-keyspace-events" => self.notify_keyspace_events = v,
            "daemonize" => self.daemonize = v == "yes",
            "pidfile" => self.pidfile = v,
            "tcp-keepalive" => self.tcp_keepalive = num(&v),
            "client-query-buffer-limit" => self.client_query_buffer_limit = num(&v),
            "active-expire-effort" => self.active_expire_effort = num(&v) as u32,
            "hll-sparse-max-bytes" => self.hll_sparse_max_bytes = num(&v) as usize,
            "lua-memory-limit" => self.lua_memory_limit = num(&v) as usize,
            _ => {
                self.other.insert(p.name, v);
            }
        }
    }

    /// Sets parameter `p` from already split arguments (a config file line
    /// or a CONFIG SET value split for multi-argument parameters). `append`
    /// makes `save` add to the current points (later `save` lines of a file).
    pub fn set_args(
        &mut self,
        p: &'static Param,
        args: &[&[u8]],
        append: bool,
    ) -> Result<(), SetError> {
        if p.flags & MULTI_ARG == 0 && args.len() != 1 {
            return Err("wrong number of arguments".into());
        }
        let v = match (p.kind, p.name) {
            (Kind::Special, "save") => {
                let points = value::parse_save(args)?;
                // `save ""` empties the rules even after other save lines
                // (setConfigSaveOption's special case).
                let reset = args.len() == 1 && args[0].is_empty();
                if append && !reset {
                    self.save.extend(points);
                } else {
                    self.save = points;
                }
                return Ok(());
            }
            (Kind::Special, "dir") => {
                if args.len() != 1 {
                    return Err("wrong number of arguments".into());
                }
                let path = String::from_utf8_lossy(args[0]).into_owned();
                let full = std::path::Path::new(&self.dir).join(&path);
                match std::fs::canonicalize(&full) {
                    Ok(c) if c.is_dir() => c.display().to_string(),
                    Ok(_) => return Err(os_error(libc::ENOTDIR)),
                    Err(e) => return Err(os_error(e.raw_os_error().unwrap_or(libc::ENOENT))),
                }
            }
            (Kind::Special, "bind") => {
                if args.len() > 16 {
                    return Err("Too many bind addresses specified.".into());
                }
                args.iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            (Kind::Special, "client-output-buffer-limit") => {
                value::normalize_obuf(&self.get(p.name), args)?
            }
            (Kind::Special, "oom-score-adj-values") => value::normalize_oom(args)?,
            (Kind::Special, "notify-keyspace-events") => {
                if args.len() != 1 {
                    return Err("wrong number of arguments".into());
                }
                value::normalize_notify(args[0])?
            }
            (Kind::Special, "shutdown-on-sigint" | "shutdown-on-sigterm") => {
                let args: &[&[u8]] = if args.len() == 1 && args[0].is_empty() {
                    &[]
                } else {
                    args
                };
                value::normalize_shutdown_flags(args)?
            }
            (Kind::Special, "replicaof") => value::normalize_replicaof(args)?,
            (Kind::Special, "latency-tracking-info-percentiles") => {
                value::normalize_percentiles(args)?
            }
            _ => value::normalize(p, args[0])?,
        };
        if p.name == "activedefrag" && v == "yes" {
            // As a Redis built without its own patched jemalloc (Debian's):
            // active defragmentation needs an allocator that can say which
            // allocations are worth moving, which ferrokv's does not.
            return Err(ACTIVE_DEFRAG_REFUSED.into());
        }
        self.put(p, v);
        Ok(())
    }

    /// Sets a parameter from one CONFIG SET value (split on spaces for
    /// multi-argument parameters, as Redis's sdssplitlen does).
    pub fn set_value(&mut self, p: &'static Param, value: &[u8]) -> Result<(), SetError> {
        if p.flags & MULTI_ARG != 0 {
            let parts: Vec<&[u8]> = value.split(|&c| c == b' ').collect();
            let parts: &[&[u8]] = if value.is_empty() { &[] } else { &parts };
            // sdssplitlen of "" yields no elements; save/bind/percentiles
            // treat that as "clear".
            if parts.is_empty() {
                return self.set_args(p, &[b""], false);
            }
            self.set_args(p, parts, false)
        } else {
            self.set_args(p, &[value], false)
        }
    }
}

/// strerror text for an errno.
fn os_error(errno: i32) -> SetError {
    let msg = std::io::Error::from_raw_os_error(errno).to_string();
    // Rust appends " (os error N)"; Redis prints strerror alone.
    match msg.find(" (os error") {
        Some(i) => msg[..i].to_string().into(),
        None => msg.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_param_has_a_default() {
        let c = Config::default();
        for p in params::PARAMS {
            let typed = c.get_typed(p.name).is_some();
            assert!(
                typed || c.other.contains_key(p.name),
                "no default for {}",
                p.name
            );
        }
    }

    #[test]
    fn every_captured_name_is_a_param() {
        for line in params::DEFAULTS_TSV.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split('\t').next().unwrap_or("");
            assert!(params::lookup(name.as_bytes()).is_some(), "unknown {name}");
        }
    }

    #[test]
    fn set_and_get() {
        let mut c = Config::default();
        let (p, _) = params::lookup(b"maxmemory").unwrap();
        c.set_value(p, b"1gb").unwrap();
        assert_eq!(c.get("maxmemory"), "1073741824");
        let (p, _) = params::lookup(b"lua-time-limit").unwrap();
        c.set_value(p, b"100").unwrap();
        assert_eq!(c.busy_reply_threshold, 100);
        let (p, _) = params::lookup(b"save").unwrap();
        c.set_value(p, b"").unwrap();
        assert!(c.save.is_empty());
    }
}
