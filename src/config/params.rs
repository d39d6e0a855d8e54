//! The table of every Redis 7.0 configuration parameter: name, alias, flags
//! and value type, transcribed from `static_configs[]` in Redis's config.c.
//! Defaults come from `defaults.tsv` (captured from redis-server).

/// Cannot change at run time (`can't set immutable config`).
pub const IMMUTABLE: u8 = 1;
/// Refused by CONFIG SET unless enable-protected-configs allows it.
pub const PROTECTED: u8 = 2;
/// The value is split on spaces into several arguments.
pub const MULTI_ARG: u8 = 4;
/// Only matched by exact name in CONFIG GET, never by a pattern.
pub const HIDDEN: u8 = 8;
/// Refused by CONFIG SET with -LOADING while a data set loads (Redis's
/// DENY_LOADING_CONFIG).
pub const DENY_LOADING: u8 = 16;

/// Numeric parsing flags (Redis's `INTEGER_CONFIG`, `MEMORY_CONFIG`...).
pub const MEMORY: u8 = 1;
/// Accepts `N%` (stored negative).
pub const PERCENT: u8 = 2;
/// Octal (unixsocketperm).
pub const OCTAL: u8 = 4;

/// How a parameter's value is parsed and printed.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// yes/no.
    Bool,
    /// Free text.
    Str,
    /// One of a fixed list of names.
    Enum(&'static [&'static str]),
    /// A number in `[min, max]`; `unsigned` types compare bounds as Redis's
    /// unsigned check does.
    Num {
        /// Lower bound.
        min: i128,
        /// Upper bound.
        max: i128,
        /// MEMORY/PERCENT/OCTAL.
        flags: u8,
        /// Unsigned C type (uint, ulong long, size_t).
        unsigned: bool,
    },
    /// Parsed by its own function (save, bind, dir...).
    Special,
}

/// One parameter.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    /// Canonical name.
    pub name: &'static str,
    /// Alternative name, reported by CONFIG GET too.
    pub alias: Option<&'static str>,
    /// IMMUTABLE, PROTECTED, MULTI_ARG, HIDDEN.
    pub flags: u8,
    /// Value type.
    pub kind: Kind,
}

const INT_MAX: i128 = i32::MAX as i128;
const INT_MIN: i128 = i32::MIN as i128;
const UINT_MAX: i128 = u32::MAX as i128;
const LONG_MAX: i128 = i64::MAX as i128;
const ULLONG_MAX: i128 = u64::MAX as i128;

const fn b(name: &'static str, alias: Option<&'static str>, flags: u8) -> Param {
    Param {
        name,
        alias,
        flags,
        kind: Kind::Bool,
    }
}
const fn s(name: &'static str, alias: Option<&'static str>, flags: u8) -> Param {
    Param {
        name,
        alias,
        flags,
        kind: Kind::Str,
    }
}
const fn e(name: &'static str, flags: u8, values: &'static [&'static str]) -> Param {
    Param {
        name,
        alias: None,
        flags,
        kind: Kind::Enum(values),
    }
}
const fn n(
    name: &'static str,
    alias: Option<&'static str>,
    flags: u8,
    min: i128,
    max: i128,
    nflags: u8,
) -> Param {
    Param {
        name,
        alias,
        flags,
        kind: Kind::Num {
            min,
            max,
            flags: nflags,
            unsigned: false,
        },
    }
}
const fn u(
    name: &'static str,
    alias: Option<&'static str>,
    flags: u8,
    min: i128,
    max: i128,
    nflags: u8,
) -> Param {
    Param {
        name,
        alias,
        flags,
        kind: Kind::Num {
            min,
            max,
            flags: nflags,
            unsigned: true,
        },
    }
}
const fn x(name: &'static str, alias: Option<&'static str>, flags: u8) -> Param {
    Param {
        name,
        alias,
        flags,
        kind: Kind::Special,
    }
}

const M: u8 = 0; // modifiable
const I: u8 = IMMUTABLE;
const YES_NO_LOCAL: &[&str] = &["no", "yes", "local"];

/// Every parameter, in config.c's order.
#[rustfmt::skip]
pub const PARAMS: &[Param] = &[
    b("rdbchecksum", None, I),
    b("daemonize", None, I),
    b("io-threads-do-reads", None, I),
    b("always-show-logo", None, I),
    b("protected-mode", None, M),
    b("rdbcompression", None, M),
    b("rdb-del-sync-files", None, M),
    b("activerehashing", None, M),
    b("stop-writes-on-bgsave-error", None, M),
    b("set-proc-title", None, I),
    b("dynamic-hz", None, M),
    b("lazyfree-lazy-eviction", None, M),
    b("lazyfree-lazy-expire", None, M),
    b("lazyfree-lazy-server-del", None, M),
    b("lazyfree-lazy-user-del", None, M),
    b("lazyfree-lazy-user-flush", None, M),
    b("repl-disable-tcp-nodelay", None, M),
    b("repl-diskless-sync", None, M),
    b("aof-rewrite-incremental-fsync", None, M),
    b("no-appendfsync-on-rewrite", None, M),
    b("cluster-require-full-coverage", None, M),
    b("rdb-save-incremental-fsync", None, M),
    b("aof-load-truncated", None, M),
    b("aof-use-rdb-preamble", None, M),
    b("aof-timestamp-enabled", None, M),
    b("cluster-replica-no-failover", Some("cluster-slave-no-failover"), M),
    b("replica-lazy-flush", Some("slave-lazy-flush"), M),
    b("replica-serve-stale-data", Some("slave-serve-stale-data"), M),
    b("replica-read-only", Some("slave-read-only"), M),
    b("replica-ignore-maxmemory", Some("slave-ignore-maxmemory"), M),
    b("jemalloc-bg-thread", None, M),
    b("activedefrag", None, M),
    b("syslog-enabled", None, I),
    b("cluster-enabled", None, I),
    b("appendonly", None, DENY_LOADING),
    b("cluster-allow-reads-when-down", None, M),
    b("cluster-allow-pubsubshard-when-down", None, M),
    b("crash-log-enabled", None, M),
    b("crash-memcheck-enabled", None, M),
    b("use-exit-on-panic", None, HIDDEN),
    b("disable-thp", None, I),
    b("cluster-allow-replica-migration", None, M),
    b("replica-announced", None, M),
    b("latency-tracking", None, M),
    b("aof-disable-auto-gc", None, M),
    b("replica-ignore-disk-write-errors", None, M),
    s("aclfile", None, I),
    s("unixsocket", None, I),
    s("pidfile", None, I),
    s("replica-announce-ip", Some("slave-announce-ip"), M),
    s("masteruser", None, M),
    s("cluster-announce-ip", None, M),
    s("cluster-config-file", None, I),
    s("cluster-announce-hostname", None, M),
    s("syslog-ident", None, I),
    s("dbfilename", None, PROTECTED),
    s("appendfilename", None, I),
    s("appenddirname", None, I),
    s("server_cpulist", None, I),
    s("bio_cpulist", None, I),
    s("aof_rewrite_cpulist", None, I),
    s("bgsave_cpulist", None, I),
    s("ignore-warnings", None, M),
    s("proc-title-template", None, M),
    s("bind-source-addr", None, M),
    s("logfile", None, I),
    s("masterauth", None, M),
    s("requirepass", None, M),
    e("supervised", I, &["upstart", "systemd", "auto", "no"]),
    e("syslog-facility", I, &["user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"]),
    e("repl-diskless-load", DENY_LOADING, &["disabled", "on-empty-db", "swapdb"]),
    e("loglevel", M, &["debug", "verbose", "notice", "warning"]),
    e("maxmemory-policy", M, &["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"]),
    e("appendfsync", M, &["everysec", "always", "no"]),
    e("oom-score-adj", M, &["no", "yes", "relative", "absolute"]),
    e("acl-pubsub-default", M, &["allchannels", "resetchannels"]),
    e("sanitize-dump-payload", M, &["no", "yes", "clients"]),
    e("enable-protected-configs", I, YES_NO_LOCAL),
    e("enable-debug-command", I, YES_NO_LOCAL),
    e("enable-module-command", I, YES_NO_LOCAL),
    // ferrokv's own: allows the CLOCK command. Hidden, so CONFIG GET *
    // lists exactly Redis's parameters.
    e("enable-clock-command", I | HIDDEN, YES_NO_LOCAL),
    e("propagation-error-behavior", M, &["ignore", "panic", "panic-on-replicas"]),
    x("shutdown-on-sigint", None, MULTI_ARG),
    x("shutdown-on-sigterm", None, MULTI_ARG),
    e("cluster-preferred-endpoint-type", M, &["ip", "hostname", "unknown-endpoint"]),
    n("databases", None, I, 1, INT_MAX, 0),
    n("port", None, M, 0, 65535, 0),
    n("io-threads", None, I, 1, 128, 0),
    n("auto-aof-rewrite-percentage", None, M, 0, INT_MAX, 0),
    n("cluster-replica-validity-factor", Some("cluster-slave-validity-factor"), M, 0, INT_MAX, 0),
    n("list-max-listpack-size", Some("list-max-ziplist-size"), M, INT_MIN, INT_MAX, 0),
    n("tcp-keepalive", None, M, 0, INT_MAX, 0),
    n("cluster-migration-barrier", None, M, 0, INT_MAX, 0),
    n("active-defrag-cycle-min", None, M, 1, 99, 0),
    n("active-defrag-cycle-max", None, M, 1, 99, 0),
    n("active-defrag-threshold-lower", None, M, 0, 1000, 0),
    n("active-defrag-threshold-upper", None, M, 0, 1000, 0),
    n("lfu-log-factor", None, M, 0, INT_MAX, 0),
    n("lfu-decay-time", None, M, 0, INT_MAX, 0),
    n("replica-priority", Some("slave-priority"), M, 0, INT_MAX, 0),
    n("repl-diskless-sync-delay", None, M, 0, INT_MAX, 0),
    n("maxmemory-samples", None, M, 1, INT_MAX, 0),
    n("maxmemory-eviction-tenacity", None, M, 0, 100, 0),
    n("timeout", None, M, 0, INT_MAX, 0),
    n("replica-announce-port", Some("slave-announce-port"), M, 0, 65535, 0),
    n("tcp-backlog", None, I, 0, INT_MAX, 0),
    n("cluster-port", None, I, 0, 65535, 0),
    n("cluster-announce-bus-port", None, M, 0, 65535, 0),
    n("cluster-announce-port", None, M, 0, 65535, 0),
    n("cluster-announce-tls-port", None, M, 0, 65535, 0),
    n("repl-timeout", None, M, 1, INT_MAX, 0),
    n("repl-ping-replica-period", Some("repl-ping-slave-period"), M, 1, INT_MAX, 0),
    n("list-compress-depth", None, M, 0, INT_MAX, 0),
    n("rdb-key-save-delay", None, HIDDEN, INT_MIN, INT_MAX, 0),
    n("key-load-delay", None, HIDDEN, INT_MIN, INT_MAX, 0),
    n("active-expire-effort", None, M, 1, 10, 0),
    n("hz", None, M, 0, INT_MAX, 0),
    n("min-replicas-to-write", Some("min-slaves-to-write"), M, 0, INT_MAX, 0),
    n("min-replicas-max-lag", Some("min-slaves-max-lag"), M, 0, INT_MAX, 0),
    n("watchdog-period", None, HIDDEN, 0, INT_MAX, 0),
    n("shutdown-timeout", None, M, 0, INT_MAX, 0),
    n("repl-diskless-sync-max-replicas", None, M, 0, INT_MAX, 0),
    u("maxclients", None, M, 1, UINT_MAX, 0),
    u("unixsocketperm", None, I, 0, 0o777, OCTAL),
    u("socket-mark-id", None, I, 0, UINT_MAX, 0),
    n("active-defrag-max-scan-fields", None, M, 1, LONG_MAX, 0),
    n("slowlog-max-len", None, M, 0, LONG_MAX, 0),
    n("acllog-max-len", None, M, 0, LONG_MAX, 0),
    n("busy-reply-threshold", Some("lua-time-limit"), M, 0, LONG_MAX, 0),
    n("cluster-node-timeout", None, M, 0, LONG_MAX, 0),
    n("slowlog-log-slower-than", None, M, -1, LONG_MAX, 0),
    n("latency-monitor-threshold", None, M, 0, LONG_MAX, 0),
    n("proto-max-bulk-len", None, M, 1024 * 1024, LONG_MAX, MEMORY),
    n("stream-node-max-entries", None, M, 0, LONG_MAX, 0),
    n("repl-backlog-size", None, M, 1, LONG_MAX, MEMORY),
    u("maxmemory", None, M, 0, ULLONG_MAX, MEMORY),
    u("cluster-link-sendbuf-limit", None, M, 0, ULLONG_MAX, MEMORY),
    u("hash-max-listpack-entries", Some("hash-max-ziplist-entries"), M, 0, LONG_MAX, 0),
    u("set-max-intset-entries", None, M, 0, LONG_MAX, 0),
    u("zset-max-listpack-entries", Some("zset-max-ziplist-entries"), M, 0, LONG_MAX, 0),
    u("active-defrag-ignore-bytes", None, M, 1, LONG_MAX, MEMORY),
    u("hash-max-listpack-value", Some("hash-max-ziplist-value"), M, 0, LONG_MAX, MEMORY),
    u("stream-node-max-bytes", None, M, 0, LONG_MAX, MEMORY),
    u("zset-max-listpack-value", Some("zset-max-ziplist-value"), M, 0, LONG_MAX, MEMORY),
    u("hll-sparse-max-bytes", None, M, 0, LONG_MAX, MEMORY),
    u("tracking-table-max-keys", None, M, 0, LONG_MAX, 0),
    u("client-query-buffer-limit", None, M, 1024 * 1024, LONG_MAX, MEMORY),
    // ferrokv's own: the Lua heap cap (Redis has none). Hidden, so CONFIG
    // GET * lists exactly Redis's parameters.
    u("lua-memory-limit", None, M | HIDDEN, 0, LONG_MAX, MEMORY),
    n("maxmemory-clients", None, M, -100, LONG_MAX, MEMORY | PERCENT),
    n("repl-backlog-ttl", None, M, 0, LONG_MAX, 0),
    n("auto-aof-rewrite-min-size", None, M, 0, LONG_MAX, MEMORY),
    n("loading-process-events-interval-bytes", None, HIDDEN, 1024, INT_MAX, 0),
    n("tls-port", None, M, 0, 65535, 0),
    n("tls-session-cache-size", None, M, 0, INT_MAX, 0),
    n("tls-session-cache-timeout", None, M, 0, INT_MAX, 0),
    b("tls-cluster", None, M),
    b("tls-replication", None, M),
    e("tls-auth-clients", M, &["no", "yes", "optional"]),
    b("tls-prefer-server-ciphers", None, M),
    b("tls-session-caching", None, M),
    s("tls-cert-file", None, M),
    s("tls-key-file", None, M),
    s("tls-key-file-pass", None, M),
    s("tls-client-cert-file", None, M),
    s("tls-client-key-file", None, M),
    s("tls-client-key-file-pass", None, M),
    s("tls-dh-params-file", None, M),
    s("tls-ca-cert-file", None, M),
    s("tls-ca-cert-dir", None, M),
    s("tls-protocols", None, M),
    s("tls-ciphers", None, M),
    s("tls-ciphersuites", None, M),
    x("dir", None, PROTECTED | DENY_LOADING),
    x("save", None, MULTI_ARG),
    x("client-output-buffer-limit", None, MULTI_ARG),
    x("oom-score-adj-values", None, MULTI_ARG),
    x("notify-keyspace-events", None, M),
    x("bind", None, MULTI_ARG),
    x("replicaof", Some("slaveof"), I | MULTI_ARG),
    x("latency-tracking-info-percentiles", None, MULTI_ARG),
];

/// Defaults captured from redis-server (name TAB value per line).
pub const DEFAULTS_TSV: &str = include_str!("defaults.tsv");

/// Hidden parameters are not in the capture; their defaults.
pub const HIDDEN_DEFAULTS: &[(&str, &str)] = &[
    ("use-exit-on-panic", "no"),
    ("rdb-key-save-delay", "0"),
    ("key-load-delay", "0"),
    ("watchdog-period", "0"),
    ("loading-process-events-interval-bytes", "2097152"),
    ("enable-clock-command", "no"),
];

/// Looks a parameter up by name or alias, ignoring case. Returns the
/// parameter and the registered name matched (the alias when it was used).
pub fn lookup(name: &[u8]) -> Option<(&'static Param, &'static str)> {
    PARAMS.iter().find_map(|p| {
        if p.name.as_bytes().eq_ignore_ascii_case(name) {
            Some((p, p.name))
        } else {
            match p.alias {
                Some(a) if a.as_bytes().eq_ignore_ascii_case(name) => Some((p, a)),
                _ => None,
            }
        }
    })
}
