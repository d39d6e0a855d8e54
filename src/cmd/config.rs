//! CONFIG GET/SET/RESETSTAT/REWRITE/HELP (Redis's config.c command side).

use super::{Argv, Ctx, Handler};
use crate::config::params::{self, Param, DENY_LOADING, HIDDEN, IMMUTABLE, PROTECTED};
use crate::error::{CmdResult, Error};
use crate::util::glob::glob_match;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("config|get", get),
    ("config|set", set),
    ("config|resetstat", resetstat),
    ("config|rewrite", rewrite),
    ("config|help", help),
];

fn value_of(ctx: &Ctx<'_>, p: &Param) -> String {
    // With `port 0` the port actually bound is the useful answer.
    if p.name == "port" && ctx.server.config.port == 0 {
        return ctx.server.port.to_string();
    }
    ctx.server.config.get(p.name)
}

fn get(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    // (name as reported, parameter) in match order.
    let mut matches: Vec<(String, &'static Param)> = Vec::new();
    for arg in argv.iter_from(2) {
        let has_glob = arg.iter().any(|c| matches!(c, b'[' | b'*' | b'?'));
        if !has_glob {
            let name = String::from_utf8_lossy(arg).into_owned();
            // Redis's match dict compares names ignoring case.
            if matches.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                continue;
            }
            if let Some((p, _)) = params::lookup(arg) {
                matches.push((name, p));
            }
            continue;
        }
        for p in params::PARAMS {
            if p.flags & HIDDEN != 0 {
                continue;
            }
            for name in std::iter::once(p.name).chain(p.alias) {
                if matches.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                    continue;
                }
                if glob_match(arg, name.as_bytes(), true) {
                    matches.push((name.to_string(), p));
                }
            }
        }
    }
    ctx.reply.map(matches.len());
    for (name, p) in matches {
        let v = value_of(ctx, p);
        ctx.reply.bulk(name.as_bytes());
        ctx.reply.bulk(v.as_bytes());
    }
    Ok(())
}

fn set_failed(name: &str, why: &str) -> Error {
    Error::err_owned(format!(
        "CONFIG SET failed (possibly related to argument '{name}') - {why}"
    ))
}

/// [`set_failed`] for parameter `name`, named as the client spelled it
/// (an alias stays an alias).
fn set_failed_on(found: &[(&'static Param, &'static str, &[u8])], name: &str, why: &str) -> Error {
    let registered = found
        .iter()
        .find(|(p, _, _)| p.name == name)
        .map_or(name, |f| f.1);
    set_failed(registered, why)
}

fn set(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() % 2 == 1 {
        return Err(Error::Syntax);
    }
    let n = (argv.len() - 2) / 2;
    // First pass, as configSetCommand: unknown names win over everything
    // seen after them; immutable/protected/duplicate are reported by the
    // name as the client wrote it.
    let mut found: Vec<(&'static Param, &'static str, &[u8])> = Vec::with_capacity(n);
    let mut failed: Option<Error> = None;
    // Redis gives the loading error precedence over every other.
    let deny_loading = ctx.server.loading
        && (0..n).any(|i| {
            params::lookup(argv.get(2 + i * 2)).is_some_and(|(p, _)| p.flags & DENY_LOADING != 0)
        });
    if deny_loading {
        return Err(Error::raw("LOADING Redis is loading the dataset in memory"));
    }
    for i in 0..n {
        let name = argv.get(2 + i * 2);
        let value = argv.get(3 + i * 2);
        let Some((p, registered)) = params::lookup(name) else {
            if failed.is_none() {
                return Err(Error::err_owned(format!(
                    "Unknown option or number of arguments for CONFIG SET - '{}'",
                    String::from_utf8_lossy(name)
                )));
            }
            continue;
        };
        if failed.is_some() {
            continue;
        }
        let shown = String::from_utf8_lossy(name);
        if p.flags & IMMUTABLE != 0 {
            failed = Some(set_failed(&shown, "can't set immutable config"));
            continue;
        }
        if p.flags & PROTECTED != 0 && ctx.server.config.get("enable-protected-configs") != "yes" {
            let local = ctx.client.is_local();
            if !(local && ctx.server.config.get("enable-protected-configs") == "local") {
                failed = Some(set_failed(&shown, "can't set protected config"));
                continue;
            }
        }
        // Redis compares registered entries: a name and its alias are
        // distinct entries, so only the same spelling is a duplicate.
        if found.iter().any(|(_, r, _)| *r == registered) {
            failed = Some(set_failed(&shown, "duplicate parameter"));
            continue;
        }
        found.push((p, registered, value));
    }
    if let Some(e) = failed {
        return Err(e);
    }
    // Set every value on a copy, so a failure leaves nothing changed.
    let mut next = ctx.server.config.clone();
    for (p, registered, value) in &found {
        if let Err(why) = next.set_value(p, value) {
            return Err(set_failed(registered, &why));
        }
    }
    let cur = &ctx.server.config;
    let oom_changed = ["oom-score-adj", "oom-score-adj-values"]
        .into_iter()
        .find(|name| next.get(name) != cur.get(name));
    if let Some(name) = oom_changed {
        if let Err(why) = crate::server::apply_oom_config(&next) {
            // Redis rolls back to the values it had.
            let _ = crate::server::apply_oom_config(cur);
            return Err(set_failed_on(&found, name, why));
        }
    }
    if next.port != cur.port || next.bind != cur.bind {
        // Redis applies bind before port; report the one that changed.
        let (name, why) = if next.bind != cur.bind {
            ("bind", "Failed to bind to specified addresses.")
        } else {
            ("port", "Unable to listen on this port. Check server logs.")
        };
        let old_port = if cur.port == 0 {
            ctx.server.port
        } else {
            cur.port
        };
        if let Some(net) = ctx.server.net.clone() {
            let rebound = net
                .borrow_mut()
                .rebind(&next.bind, next.port, (&cur.bind, old_port));
            match rebound {
                Ok(port) => ctx.server.port = port,
                Err(e) => {
                    tracing::warn!("Failed to listen: {e}");
                    // What was applied before is rolled back (Redis's
                    // restoreBackupConfig): the OOM score adjustment.
                    let _ = crate::server::apply_oom_config(cur);
                    return Err(set_failed_on(&found, name, why));
                }
            }
        }
    }
    // TLS (Redis's applyTlsCfg and applyTLSPort): new contexts for new
    // connections, then the TLS port.
    let tls_changed = found
        .iter()
        .find(|(p, _, _)| TLS_APPLIED.contains(&p.name) && next.get(p.name) != cur.get(p.name));
    let tls_port_changed = next.get("tls-port") != cur.get("tls-port");
    if tls_changed.is_some() || tls_port_changed {
        let net = ctx.server.net.clone();
        let configured = net.as_ref().is_some_and(|n| n.borrow().tls().is_some());
        let tls_failed = |name: &str| {
            set_failed_on(
                &found,
                name,
                "Unable to update TLS configuration. Check server logs.",
            )
        };
        let contexts = if tls_changed.is_some() || !configured {
            let contexts = if tls_changed.is_some() {
                crate::net::tls::reconfigure(&next)
            } else {
                crate::net::tls::configure(&next).map(Some)
            };
            let name = tls_changed.map_or("tls-port", |f| f.0.name);
            Some(contexts.map_err(|why| {
                tracing::warn!("{why}");
                tls_failed(name)
            })?)
        } else {
            None
        };
        if let Some(net) = net {
            let mut net = net.borrow_mut();
            if let Some(Some(c)) = contexts {
                net.set_tls(Some(c));
            }
            if tls_port_changed {
                let port = next.get("tls-port").parse().unwrap_or(0);
                if let Err(e) = net.listen_tls(&next.bind, port) {
                    tracing::warn!("Failed to listen: {e}");
                    return Err(set_failed_on(
                        &found,
                        "tls-port",
                        "Unable to listen on this port. Check server logs.",
                    ));
                }
            }
        }
    }
    if next.appendonly != ctx.server.aof.enabled() {
        if next.appendonly {
            // Redis's updateAppendonly: the AOF starts with a background
            // rewrite that writes its first base.
            let in_exec = ctx.client.multi.is_some();
            let mut p = crate::persist::Persistence {
                config: &next,
                state: &mut ctx.server.persist,
                aof: &mut ctx.server.aof,
                repl: ctx.server.repl.save_info(),
                replica_snapshot: ctx.server.repl.snapshot.is_some(),
            };
            if !crate::persist::aof::enable(ctx.store, &mut p, in_exec) {
                return Err(set_failed_on(
                    &found,
                    "appendonly",
                    "Unable to turn on AOF. Check server logs.",
                ));
            }
        } else {
            ctx.server.aof.stop();
        }
    }
    apply(ctx, next);
    ctx.reply.ok();
    Ok(())
}

/// The directives whose change rebuilds the TLS contexts (Redis's
/// applyTlsCfg); `tls-port` has its own step and `tls-auth-clients` takes
/// effect at the next connection.
const TLS_APPLIED: &[&str] = &[
    "tls-session-cache-size",
    "tls-session-cache-timeout",
    "tls-cluster",
    "tls-replication",
    "tls-prefer-server-ciphers",
    "tls-session-caching",
    "tls-cert-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-client-key-file-pass",
    "tls-dh-params-file",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-protocols",
    "tls-ciphers",
    "tls-ciphersuites",
];

/// Installs a new configuration, with the limits the network side applies.
fn apply(ctx: &mut Ctx<'_>, mut next: crate::config::Config) {
    if let Some(net) = &ctx.server.net {
        net.borrow_mut().load_config(&next);
    }
    ctx.server.aof.no_fsync_on_rewrite = next.get_bool("no-appendfsync-on-rewrite");
    ctx.server.aof.timestamps = next.get_bool("aof-timestamp-enabled");
    if next.appendfsync != ctx.server.config.appendfsync {
        ctx.server.aof.set_fsync(&next.appendfsync);
    }
    if next.get("jemalloc-bg-thread") != ctx.server.config.get("jemalloc-bg-thread") {
        crate::util::counting_alloc::set_background_thread(next.get_bool("jemalloc-bg-thread"));
    }
    crate::util::process::set_crash_handling(
        next.get_bool("crash-log-enabled"),
        next.get_bool("use-exit-on-panic"),
    );
    if next.hz != ctx.server.config.hz {
        // Redis's updateHZ: in force at once; dynamic-hz adjusts it from
        // the next cron run.
        ctx.server.hz = next.hz.clamp(1, 500);
    }
    if next.loglevel != ctx.server.config.loglevel {
        crate::config::cli::set_log_level(&next.loglevel);
    }
    let acl = &mut ctx.server.acl;
    acl.all_channels_default = next.get("acl-pubsub-default") == "allchannels";
    if next.requirepass != ctx.server.config.requirepass {
        acl.set_default_password(&ctx.server.table.universe, next.requirepass.as_deref());
    }
    // Redis's resizeReplicationBacklog: a size set below the least is
    // raised to it.
    let backlog_size = next.get_i64("repl-backlog-size").unwrap_or(0);
    if next.get("repl-backlog-size") != ctx.server.config.get("repl-backlog-size")
        && backlog_size < crate::server::repl::backlog::MIN_SIZE as i64
    {
        if let Some((p, _)) = crate::config::params::lookup(b"repl-backlog-size") {
            let least = crate::server::repl::backlog::MIN_SIZE.to_string();
            let _ = next.set_value(p, least.as_bytes());
        }
    }
    let maxmemory_lowered = next.maxmemory != 0
        && (ctx.server.config.maxmemory == 0 || next.maxmemory < ctx.server.config.maxmemory);
    ctx.server.obuf_limits =
        crate::server::obuf::Limits::from_config(&next.get("client-output-buffer-limit"));
    ctx.server.repl.load_config(&next);
    ctx.server.client_evict_limit = crate::server::client_mem::eviction_limit(&next);
    if let Some(engine) = ctx.server.scripting.get() {
        engine.run.mem_limit.set(next.lua_memory_limit);
    }
    crate::server::apply_tuning(&next);
    if next.get("watchdog-period") != ctx.server.config.get("watchdog-period") {
        crate::server::apply_watchdog(&mut next);
    }
    let gc_enabled =
        !next.get_bool("aof-disable-auto-gc") && ctx.server.config.get_bool("aof-disable-auto-gc");
    let retitle = next.get("proc-title-template") != ctx.server.config.get("proc-title-template");
    ctx.server.config = next;
    if gc_enabled {
        ctx.server.aof.delete_history(&ctx.server.config);
    }
    if retitle {
        ctx.server.apply_proc_title();
    }
    crate::server::cluster::cron::update_myself(ctx.server);
    ctx.server.acl_changed();
    ctx.server.sync_access_tracking(ctx.store);
    if ctx.server.config.maxmemory == 0 {
        crate::store::hashed::set_expand_headroom(u64::MAX);
    }
    if maxmemory_lowered {
        // Redis's updateMaxmemory: the cron evicts to the new limit from
        // its next run (startEvictionTimeProc), after this command: a
        // transaction's commands all see the data set as it was.
        ctx.server.memory.refresh();
        let used = ctx.server.memory.used();
        let max = ctx.server.config.maxmemory;
        if max < used {
            tracing::warn!(
                "WARNING: the new maxmemory value set via CONFIG SET ({max}) is smaller than the \
                 current memory usage ({used}). This will result in key eviction and/or the \
                 inability to accept new write commands depending on the maxmemory-policy."
            );
        }
        ctx.server.memory.running = true;
    }
}

fn resetstat(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let s = &mut ctx.server;
    s.stats = Default::default();
    s.repl.stats = Default::default();
    crate::store::lazyfree::reset_stats();
    use std::sync::atomic::Ordering::Relaxed;
    crate::util::process::TOTAL_FORKS.store(0, Relaxed);
    crate::util::process::LATEST_FORK_USEC.store(0, Relaxed);
    for c in &mut s.table.commands {
        c.calls = 0;
        c.usec = 0;
        c.rejected_calls = 0;
        c.failed_calls = 0;
        // Redis frees each command's latency histogram too.
        c.latency = None;
    }
    if let Some(net) = &s.net {
        net.borrow_mut().reset_stats();
    }
    let dirty = ctx.store.stats.dirty;
    ctx.store.stats = Default::default();
    // Not a statistic: the unsaved-changes counter survives RESETSTAT.
    ctx.store.stats.dirty = dirty;
    ctx.reply.ok();
    Ok(())
}

fn rewrite(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    match rewrite_file(ctx, false) {
        Ok(()) => {
            tracing::warn!("CONFIG REWRITE executed with success.");
            ctx.reply.ok();
            Ok(())
        }
        Err(RewriteError::NoFile) => Err(Error::err("The server is running without a config file")),
        Err(RewriteError::Io(e)) => {
            let reason = crate::util::process::strerror(&e);
            tracing::warn!("CONFIG REWRITE failed: {reason}");
            Err(Error::err_owned(format!("Rewriting config file: {reason}")))
        }
    }
}

/// Why the configuration file could not be rewritten.
pub enum RewriteError {
    /// The server started without one.
    NoFile,
    /// Writing it failed.
    Io(std::io::Error),
}

/// Rewrites the configuration file (Redis's rewriteConfig); with
/// `force_all`, every directive is written, defaults included (DEBUG
/// CONFIG-REWRITE-FORCE-ALL).
pub fn rewrite_file(ctx: &mut Ctx<'_>, force_all: bool) -> Result<(), RewriteError> {
    let Some(path) = ctx.server.config_file.clone() else {
        return Err(RewriteError::NoFile);
    };
    // With an ACL file the users live there; otherwise they are written
    // as `user` lines (rewriteConfigUserOption).
    let users: Vec<String> = if ctx.server.config.get("aclfile").is_empty() {
        let text = ctx.server.acl.file_text(&ctx.server.table.universe);
        text.lines().map(str::to_string).collect()
    } else {
        Vec::new()
    };
    // The master followed now, set by REPLICAOF or a failover as much as
    // by the file (rewriteConfigReplicaOfOption; none in cluster mode).
    let mut config = ctx.server.config.clone();
    if let Some((param, _)) = crate::config::params::lookup(b"replicaof") {
        let set = match &ctx.server.repl.master {
            Some(m) if ctx.server.cluster.is_none() => {
                let port = m.port.to_string();
                config.set_args(param, &[m.host.as_bytes(), port.as_bytes()], false)
            }
            _ => config.set_args(param, &[b"no", b"one"], false),
        };
        debug_assert!(set.is_ok(), "a master's address is a valid replicaof");
    }
    crate::config::rewrite::rewrite(&path, &config, &users, force_all).map_err(RewriteError::Io)
}

const HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.array(HELP.len());
    for line in HELP {
        ctx.reply.simple(line);
    }
    Ok(())
}
