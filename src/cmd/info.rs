//! INFO: Redis 7.0's sections and field names, in Redis's order, with the
//! values ferrokv has (memory from jemalloc and /proc, CPU from getrusage)
//! and Redis's idle values for features it does not have.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::Ctx;

/// Sections in output order, and whether `INFO` without arguments
/// (`default`) includes each.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

/// Which sections the arguments select (genInfoSectionDict).
fn selected(args: &[Vec<u8>]) -> Vec<&'static str> {
    if args.is_empty() {
        return SECTIONS.iter().filter(|s| s.1).map(|s| s.0).collect();
    }
    let mut want = Vec::new();
    for a in args {
        let a = a.to_ascii_lowercase();
        match a.as_slice() {
            b"all" | b"everything" => want.extend(SECTIONS.iter().map(|s| s.0)),
            b"default" => want.extend(SECTIONS.iter().filter(|s| s.1).map(|s| s.0)),
            _ => {
                if let Some(s) = SECTIONS.iter().find(|s| s.0.as_bytes() == a.as_slice()) {
                    want.push(s.0);
                }
            }
        }
    }
    SECTIONS
        .iter()
        .map(|s| s.0)
        .filter(|s| want.contains(s))
        .collect()
}

fn title(name: &str) -> &'static str {
    match name {
        "server" => "Server",
        "clients" => "Clients",
        "memory" => "Memory",
        "persistence" => "Persistence",
        "stats" => "Stats",
        "replication" => "Replication",
        "cpu" => "CPU",
        "modules" => "Modules",
        "commandstats" => "Commandstats",
        "errorstats" => "Errorstats",
        "latencystats" => "Latencystats",
        "cluster" => "Cluster",
        _ => "Keyspace",
    }
}

/// Builds the INFO text for the given section arguments.
pub fn generate(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> String {
    // Grown as it is written, as Redis's: used_memory, read midway,
    // counts only the text written so far.
    let mut out = String::new();
    for (i, s) in selected(args).into_iter().enumerate() {
        if i > 0 {
            out.push_str("\r\n");
        }
        let _ = write!(out, "# {}\r\n", title(s));
        let mut f = Fields(&mut out);
        match s {
            "server" => server(ctx, &mut f),
            "clients" => clients(ctx, &mut f),
            "memory" => memory(ctx, &mut f),
            "persistence" => persistence(ctx, &mut f),
            "stats" => stats(ctx, &mut f),
            "replication" => replication(ctx, &mut f),
            "cpu" => cpu(&mut f),
            "commandstats" => commandstats(ctx, &mut f),
            "latencystats" => latencystats(ctx, &mut f),
            "errorstats" => {
                for (prefix, n) in &ctx.server.stats.errors {
                    f.kv(&format!("errorstat_{prefix}"), format!("count={n}"));
                }
            }
            "cluster" => f.kv("cluster_enabled", u8::from(ctx.server.cluster.is_some())),
            "keyspace" => {
                for (i, db) in ctx.store.dbs.iter().enumerate() {
                    if !db.is_empty() {
                        f.kv(
                            &format!("db{i}"),
                            format!(
                                "keys={},expires={},avg_ttl={}",
                                db.len(),
                                db.volatile(),
                                db.avg_ttl()
                            ),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    out
}

struct Fields<'a>(&'a mut String);

impl Fields<'_> {
    fn kv(&mut self, k: &str, v: impl std::fmt::Display) {
        let _ = write!(self.0, "{k}:{v}\r\n");
    }
}

/// Redis's bytesToHuman.
fn human(n: u64) -> String {
    let d = n as f64;
    const K: f64 = 1024.0;
    if d < K {
        format!("{n}B")
    } else if d < K * K {
        format!("{:.2}K", d / K)
    } else if d < K * K * K {
        format!("{:.2}M", d / (K * K))
    } else if d < K * K * K * K {
        format!("{:.2}G", d / (K * K * K))
    } else if d < K * K * K * K * K {
        format!("{:.2}T", d / (K * K * K * K))
    } else {
        format!("{:.2}P", d / (K * K * K * K * K))
    }
}

fn uname() -> String {
    // SAFETY: utsname is plain old data; uname fills it and returns 0 on
    // success, and the fields are NUL-terminated C strings.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return String::new();
        }
        let f = |s: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(s.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        format!("{} {} {}", f(&u.sysname), f(&u.release), f(&u.machine))
    }
}

fn server(ctx: &Ctx<'_>, f: &mut Fields<'_>) {
    let s = &*ctx.server;
    let now_us = crate::util::clock::now_us();
    let uptime = s.started.elapsed().as_secs();
    f.kv("redis_version", crate::REDIS_VERSION);
    f.kv("redis_git_sha1", "00000000");
    f.kv("redis_git_dirty", 0);
    f.kv("redis_build_id", "0000000000000000");
    f.kv(
        "redis_mode",
        if s.cluster.is_some() {
            "cluster"
        } else {
            "standalone"
        },
    );
    f.kv("os", uname());
    f.kv("arch_bits", usize::BITS);
    f.kv("monotonic_clock", "POSIX clock_gettime");
    f.kv("multiplexing_api", "epoll");
    f.kv("atomicvar_api", "c11-builtin");
    f.kv("gcc_version", "0.0.0");
    f.kv("process_id", std::process::id());
    f.kv("process_supervised", "no");
    f.kv("run_id", &s.run_id);
    f.kv("tcp_port", s.port);
    f.kv("server_time_usec", now_us);
    f.kv("uptime_in_seconds", uptime);
    f.kv("uptime_in_days", uptime / 86400);
    f.kv("hz", s.hz);
    f.kv("configured_hz", s.config.hz);
    f.kv("lru_clock", (now_us / 1_000_000) & ((1 << 24) - 1));
    f.kv("executable", &s.executable);
    f.kv("config_file", s.config_file.as_deref().unwrap_or(""));
    f.kv("io_threads_active", u8::from(s.io_thread_stats().0));
    if let Some(w) = &s.shutdown_wait {
        f.kv(
            "shutdown_in_milliseconds",
            w.deadline_ms as i64 - crate::util::clock::real_now_ms() as i64,
        );
    }
    f.kv("ferrokv_version", crate::VERSION);
}

fn clients(ctx: &Ctx<'_>, f: &mut Fields<'_>) {
    let s = &*ctx.server;
    // The client running INFO is out of the map during its batch;
    // replicas are not counted (Redis's clients less slaves).
    f.kv(
        "connected_clients",
        (s.clients.len() + 1).saturating_sub(s.repl.replicas.len()),
    );
    f.kv("cluster_connections", 0);
    f.kv("maxclients", s.config.maxclients);
    // The largest buffers now (Redis keeps the largest of the last few
    // seconds): query buffer allocation, output queued.
    let max_in = s.clients.values().map(|c| c.bufs.query_alloc.get()).max();
    let max_out = s.clients.values().map(|c| c.bufs.pending.get()).max();
    f.kv("client_recent_max_input_buffer", max_in.unwrap_or(0));
    f.kv("client_recent_max_output_buffer", max_out.unwrap_or(0));
    f.kv("blocked_clients", s.blocked_clients());
    f.kv("tracking_clients", s.tracking.num_clients());
    f.kv(
        "clients_in_timeout_table",
        s.blocking.clients_with_timeout(),
    );
}

fn total_system_memory() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages < 0 || size < 0 {
        0
    } else {
        pages as u64 * size as u64
    }
}

fn ratio(a: u64, b: u64) -> String {
    if b == 0 {
        "0.00".into()
    } else {
        format!("{:.2}", a as f64 / b as f64)
    }
}

fn memory(ctx: &Ctx<'_>, f: &mut Fields<'_>) {
    let o = super::memory::Overhead::now(ctx);
    let (used, peak, rss) = (o.used, o.peak, o.rss);
    let (allocated, active, resident) = (o.allocated, o.active, o.resident);
    let (startup, overhead, dataset) = (o.startup, o.total, o.dataset);
    let (backlog, replicas) = (o.backlog, o.replicas);
    let cfg = &ctx.server.config;
    f.kv("used_memory", used);
    f.kv("used_memory_human", human(used));
    f.kv("used_memory_rss", rss);
    f.kv("used_memory_rss_human", human(rss));
    f.kv("used_memory_peak", peak);
    f.kv("used_memory_peak_human", human(peak));
    f.kv(
        "used_memory_peak_perc",
        format!("{:.2}%", used as f64 * 100.0 / peak as f64),
    );
    f.kv("used_memory_overhead", overhead);
    f.kv("used_memory_startup", startup);
    f.kv("used_memory_dataset", dataset);
    f.kv(
        "used_memory_dataset_perc",
        format!("{:.2}%", o.dataset_perc()),
    );
    f.kv("allocator_allocated", allocated);
    f.kv("allocator_active", active);
    f.kv("allocator_resident", resident);
    let total = total_system_memory();
    f.kv("total_system_memory", total);
    f.kv("total_system_memory_human", human(total));
    // One Lua state serves EVAL and functions (absent while a script runs):
    // its memory is the eval VM's, and the functions VM reads 0. Whole KiB,
    // as Redis's luaMemory reads Lua's LUA_GCCOUNT.
    let engine = ctx.server.scripting.get();
    let lua = engine.map_or(0, |e| e.lua.used_memory() as u64 / 1024 * 1024);
    let scripts = engine.map_or(0, |e| e.scripts.len());
    let (libs, funcs) = ctx.server.function_counts();
    f.kv("used_memory_lua", lua);
    f.kv("used_memory_vm_eval", lua);
    f.kv("used_memory_lua_human", human(lua));
    let scripts_mem = engine.map_or(0, |e| e.scripts_memory());
    let functions_mem = engine.map_or(0, |e| e.libraries.memory());
    f.kv("used_memory_scripts_eval", scripts_mem);
    f.kv("number_of_cached_scripts", scripts);
    f.kv("number_of_functions", funcs);
    f.kv("number_of_libraries", libs);
    f.kv("used_memory_vm_functions", 0);
    f.kv("used_memory_vm_total", lua);
    f.kv("used_memory_vm_total_human", human(lua));
    f.kv("used_memory_functions", functions_mem);
    f.kv("used_memory_scripts", scripts_mem + functions_mem);
    f.kv(
        "used_memory_scripts_human",
        human((scripts_mem + functions_mem) as u64),
    );
    f.kv("maxmemory", cfg.maxmemory);
    f.kv("maxmemory_human", human(cfg.maxmemory));
    f.kv("maxmemory_policy", &cfg.maxmemory_policy);
    f.kv("allocator_frag_ratio", ratio(active, allocated));
    f.kv("allocator_frag_bytes", active.saturating_sub(allocated));
    f.kv("allocator_rss_ratio", ratio(resident, active));
    f.kv("allocator_rss_bytes", resident.saturating_sub(active));
    f.kv("rss_overhead_ratio", ratio(rss, resident));
    f.kv("rss_overhead_bytes", rss as i64 - resident as i64);
    f.kv("mem_fragmentation_ratio", ratio(rss, used));
    f.kv("mem_fragmentation_bytes", rss as i64 - used as i64);
    f.kv("mem_not_counted_for_evict", ctx.server.not_counted_memory());
    f.kv("mem_replication_backlog", backlog);
    f.kv("mem_total_replication_buffers", o.repl_buffers);
    f.kv("mem_clients_slaves", replicas);
    f.kv("mem_clients_normal", ctx.server.clients_mem.get());
    f.kv("mem_cluster_links", 0);
    f.kv("mem_aof_buffer", ctx.server.aof.buffered());
    f.kv("mem_allocator", "jemalloc-5.3.0");
    f.kv("active_defrag_running", 0);
    f.kv(
        "lazyfree_pending_objects",
        crate::store::lazyfree::pending(),
    );
    f.kv("lazyfreed_objects", crate::store::lazyfree::freed());
}

fn persistence(ctx: &Ctx<'_>, f: &mut Fields<'_>) {
    let p = &ctx.server.persist;
    let (in_progress, current_secs) = match &p.bgsave {
        Some(bg) => (1, bg.started.elapsed().as_secs() as i64),
        // A snapshot for replicas is Redis's RDB child too.
        None => match &ctx.server.repl.snapshot {
            Some(s) => (1, s.started.elapsed().as_secs() as i64),
            None => (0, -1),
        },
    };
    // What the running child reported (Redis's child info): a background
    // save's, a snapshot for replicas', or an AOF rewrite's.
    let aof = &ctx.server.aof;
    let (child, processed, total) = if let Some(bg) = &p.bgsave {
        let processed = match &bg.child_info {
            Some(info) => info.keys(),
            None => bg.keys_processed.load(Ordering::Relaxed),
        };
        (bg.child_info.as_ref(), processed, bg.keys_total)
    } else if let Some(s) = &ctx.server.repl.snapshot {
        let info = s.child_info.as_ref();
        (info, info.map_or(0, |i| i.keys()), s.keys_total)
    } else if let Some(rw) = &aof.rewrite {
        let info = rw.child_info.as_ref();
        (info, info.map_or(0, |i| i.keys()), rw.keys_total)
    } else {
        (None, 0, 0)
    };
    let running = in_progress == 1 || aof.rewrite.is_some();
    f.kv(
        "loading",
        u8::from(ctx.server.loading && !ctx.server.async_loading),
    );
    f.kv("async_loading", u8::from(ctx.server.async_loading));
    let (cow, peak, at_ms) = child.map_or((0, 0, 0), |info| info.cow());
    f.kv("current_cow_peak", peak);
    f.kv("current_cow_size", cow);
    let age = if at_ms == 0 {
        0
    } else {
        crate::util::clock::real_now_ms().saturating_sub(at_ms) / 1000
    };
    f.kv("current_cow_size_age", age);
    let perc = if running && total > 0 {
        processed as f64 * 100.0 / total as f64
    } else {
        0.0
    };
    f.kv("current_fork_perc", format!("{perc:.2}"));
    f.kv("current_save_keys_processed", processed);
    f.kv("current_save_keys_total", total);
    f.kv("rdb_changes_since_last_save", ctx.store.stats.dirty);
    f.kv("rdb_bgsave_in_progress", in_progress);
    f.kv("rdb_last_save_time", ctx.server.persist.last_save);
    f.kv(
        "rdb_last_bgsave_status",
        if p.last_bgsave_ok { "ok" } else { "err" },
    );
    f.kv("rdb_last_bgsave_time_sec", p.last_bgsave_time_sec);
    f.kv("rdb_current_bgsave_time_sec", current_secs);
    f.kv("rdb_saves", p.saves);
    f.kv("rdb_last_cow_size", p.last_cow_size);
    f.kv("rdb_last_load_keys_expired", p.last_load_keys_expired);
    f.kv("rdb_last_load_keys_loaded", p.last_load_keys_loaded);
    f.kv("aof_enabled", u8::from(aof.enabled()));
    f.kv("aof_rewrite_in_progress", u8::from(aof.rewrite.is_some()));
    f.kv("aof_rewrite_scheduled", u8::from(aof.rewrite_scheduled));
    f.kv("aof_last_rewrite_time_sec", aof.last_rewrite_sec);
    f.kv(
        "aof_current_rewrite_time_sec",
        aof.rewrite
            .as_ref()
            .map_or(-1, |r| r.started.elapsed().as_secs() as i64),
    );
    f.kv(
        "aof_last_bgrewrite_status",
        if aof.last_rewrite_ok { "ok" } else { "err" },
    );
    f.kv("aof_rewrites", aof.rewrites);
    f.kv("aof_rewrites_consecutive_failures", aof.rewrite_failures);
    f.kv(
        "aof_last_write_status",
        if aof.write_ok() { "ok" } else { "err" },
    );
    f.kv("aof_last_cow_size", aof.last_cow_size);
    f.kv("module_fork_in_progress", 0);
    f.kv("module_fork_last_cow_size", 0);
    if aof.enabled() {
        f.kv("aof_current_size", aof.base_size + aof.incr_size);
        f.kv("aof_base_size", aof.base_size);
        f.kv("aof_pending_rewrite", u8::from(aof.rewrite_scheduled));
        f.kv("aof_buffer_length", 0);
        f.kv("aof_pending_bio_fsync", 0);
        f.kv("aof_delayed_fsync", 0);
    }
    if ctx.server.loading {
        loading_figures(&ctx.server.load_progress, f);
    }
}

/// INFO's figures of a load in progress, as Redis computes them.
fn loading_figures(l: &crate::server::LoadProgress, f: &mut Fields<'_>) {
    let (mut perc, mut remaining) = (0.0, 1);
    if l.total_bytes != 0 {
        perc = l.loaded_bytes as f64 / l.total_bytes as f64 * 100.0;
        remaining = l.total_bytes.saturating_sub(l.loaded_bytes);
    }
    let elapsed = (crate::util::clock::real_now_ms() / 1000).saturating_sub(l.start_time);
    // A fake one second before there is enough to go on.
    let eta = if elapsed == 0 {
        1
    } else {
        elapsed * remaining / (l.loaded_bytes + 1)
    };
    f.kv("loading_start_time", l.start_time);
    f.kv("loading_total_bytes", l.total_bytes);
    f.kv("loading_rdb_used_mem", 0);
    f.kv("loading_loaded_bytes", l.loaded_bytes);
    f.kv("loading_loaded_perc", format!("{perc:.2}"));
    f.kv("loading_eta_seconds", eta);
}

fn stats(ctx: &Ctx<'_>, f: &mut Fields<'_>) {
    let sh = ctx.server.net_stats();
    let st = &ctx.server.stats;
    let ks = &ctx.store.stats;
    f.kv("total_connections_received", sh.total_connections);
    f.kv("total_commands_processed", st.total_commands_processed);
    f.kv("instantaneous_ops_per_sec", 0);
    f.kv("total_net_input_bytes", sh.net_input_bytes);
    f.kv("total_net_output_bytes", sh.net_output_bytes);
    f.kv("total_net_repl_input_bytes", 0);
    f.kv("total_net_repl_output_bytes", 0);
    for k in [
        "instantaneous_input_kbps",
        "instantaneous_output_kbps",
        "instantaneous_input_repl_kbps",
        "instantaneous_output_repl_kbps",
    ] {
        f.kv(k, "0.00");
    }
    f.kv("rejected_connections", sh.rejected_connections);
    let sync = ctx.server.repl.stats;
    f.kv("sync_full", sync.full);
    f.kv("sync_partial_ok", sync.partial_ok);
    f.kv("sync_partial_err", sync.partial_err);
    f.kv("expired_keys", ks.expired_keys);
    f.kv("expired_stale_perc", "0.00");
    f.kv("expired_time_cap_reached_count", 0);
    f.kv(
        "expire_cycle_cpu_milliseconds",
        ks.expire_cycle_cpu_us / 1000,
    );
    f.kv("evicted_keys", ctx.store.stats.evicted_keys);
    f.kv("evicted_clients", ctx.server.stats.evicted_clients);
    f.kv("total_eviction_exceeded_time", 0);
    f.kv("current_eviction_exceeded_time", 0);
    f.kv("keyspace_hits", ks.keyspace_hits);
    f.kv("keyspace_misses", ks.keyspace_misses);
    f.kv("pubsub_channels", ctx.server.pubsub.num_channels());
    f.kv("pubsub_patterns", ctx.server.pubsub.num_patterns());
    f.kv(
        "pubsubshard_channels",
        ctx.server.pubsub.num_shard_channels(),
    );
    use std::sync::atomic::Ordering::Relaxed;
    f.kv(
        "latest_fork_usec",
        crate::util::process::LATEST_FORK_USEC.load(Relaxed),
    );
    f.kv(
        "total_forks",
        crate::util::process::TOTAL_FORKS.load(Relaxed),
    );
    f.kv("migrate_cached_sockets", ctx.server.migrate_sockets.len());
    f.kv(
        "slave_expires_tracked_keys",
        ctx.store.replica_volatile.len(),
    );
    for k in [
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
    ] {
        f.kv(k, 0);
    }
    let tr = &ctx.server.tracking;
    f.kv("tracking_total_keys", tr.total_keys());
    f.kv("tracking_total_items", tr.total_items());
    f.kv("tracking_total_prefixes", tr.total_prefixes());
    f.kv(
        "unexpected_error_replies",
        ctx.server.stats.unexpected_error_replies,
    );
    let errors: u64 = st.errors.values().sum();
    f.kv("total_error_replies", errors);
    let net = ctx.server.net_stats();
    f.kv(
        "dump_payload_sanitizations",
        ctx.server.stats.dump_payload_sanitizations,
    );
    f.kv("total_reads_processed", net.total_reads);
    f.kv("total_writes_processed", net.total_writes);
    let (_, io_reads, io_writes) = ctx.server.io_thread_stats();
    f.kv("io_threaded_reads_processed", io_reads);
    f.kv("io_threaded_writes_processed", io_writes);
    f.kv("reply_buffer_shrinks", net.reply_buffer_shrinks);
    f.kv("reply_buffer_expands", net.reply_buffer_expands);
}

fn replication(ctx: &Ctx<'_>, f: &mut Fields<'_>) {
    use crate::server::repl::{LinkState, ReplicaState};
    let repl = &ctx.server.repl;
    let config = &ctx.server.config;
    let now_s = crate::util::clock::real_now_ms() / 1000;
    match &repl.master {
        None => f.kv("role", "master"),
        Some(m) => {
            f.kv("role", "slave");
            f.kv("master_host", &m.host);
            f.kv("master_port", m.port);
            let up = m.state == LinkState::Connected;
            f.kv("master_link_status", if up { "up" } else { "down" });
            let io = if m.client_id.is_some() {
                now_s.saturating_sub(m.last_io_ms / 1000) as i64
            } else {
                -1
            };
            f.kv("master_last_io_seconds_ago", io);
            f.kv(
                "master_sync_in_progress",
                u8::from(m.state == LinkState::Transfer),
            );
            let applied = repl.offset + repl.log.buf.len() as u64;
            // Read but not applied yet: bytes of the master's stream in
            // its client's buffers (held by CLIENT PAUSE, say).
            let read = m
                .client_id
                .and_then(|id| ctx.server.clients.get(&id))
                .map_or(applied, |c| m.read_base + c.bufs.read_total.get());
            f.kv("slave_read_repl_offset", read.max(applied));
            f.kv("slave_repl_offset", applied);
            if !up {
                let down = if m.down_since_ms == 0 {
                    -1
                } else {
                    now_s.saturating_sub(m.down_since_ms / 1000) as i64
                };
                f.kv("master_link_down_since_seconds", down);
            }
            f.kv("slave_priority", config.get("replica-priority"));
            f.kv(
                "slave_read_only",
                u8::from(config.get_bool("replica-read-only")),
            );
            f.kv(
                "replica_announced",
                u8::from(config.get_bool("replica-announced")),
            );
        }
    }
    f.kv("connected_slaves", repl.replicas.len());
    if repl.min_replicas.0 > 0 && repl.min_replicas.1 > 0 {
        f.kv("min_slaves_good_slaves", repl.good_replicas);
    }
    for (i, r) in repl.replicas.iter().enumerate() {
        let lag = if r.state == ReplicaState::Online {
            now_s.saturating_sub(r.ack_ms / 1000)
        } else {
            0
        };
        f.kv(
            &format!("slave{i}"),
            format!(
                "ip={},port={},state={},offset={},lag={lag}",
                r.ip(),
                r.conf.listening_port,
                r.state.name(),
                r.ack_offset
            ),
        );
    }
    f.kv(
        "master_failover_state",
        crate::server::repl::Failover::state_name(repl.failover.as_ref()),
    );
    f.kv("master_replid", &repl.replid);
    f.kv("master_replid2", &repl.replid2);
    f.kv(
        "master_repl_offset",
        repl.offset + repl.log.buf.len() as u64,
    );
    f.kv("second_repl_offset", repl.second_replid_offset);
    f.kv("repl_backlog_active", u8::from(repl.backlog.is_some()));
    f.kv("repl_backlog_size", config.get("repl-backlog-size"));
    f.kv(
        "repl_backlog_first_byte_offset",
        repl.backlog_first_offset(),
    );
    f.kv(
        "repl_backlog_histlen",
        repl.backlog.as_ref().map_or(0, |b| b.histlen()),
    );
}

fn rusage(who: libc::c_int) -> (String, String) {
    // SAFETY: getrusage fills a plain struct; zeroed is a valid initial value.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| format!("{}.{:06}", t.tv_sec, t.tv_usec);
    (tv(ru.ru_stime), tv(ru.ru_utime))
}

fn cpu(f: &mut Fields<'_>) {
    let (sys, user) = rusage(libc::RUSAGE_SELF);
    let (csys, cuser) = rusage(libc::RUSAGE_CHILDREN);
    // INFO runs on the executor thread, ferrokv's "main thread".
    let (tsys, tuser) = rusage(libc::RUSAGE_THREAD);
    f.kv("used_cpu_sys", sys);
    f.kv("used_cpu_user", user);
    f.kv("used_cpu_sys_children", csys);
    f.kv("used_cpu_user_children", cuser);
    f.kv("used_cpu_sys_main_thread", tsys);
    f.kv("used_cpu_user_main_thread", tuser);
}

fn commandstats(ctx: &Ctx<'_>, f: &mut Fields<'_>) {
    let mut cmds: Vec<_> = ctx
        .server
        .table
        .commands
        .iter()
        .filter(|c| c.calls > 0 || c.rejected_calls > 0 || c.failed_calls > 0)
        .collect();
    cmds.sort_by(|a, b| a.name.cmp(&b.name));
    for c in cmds {
        let per = if c.calls == 0 {
            0.0
        } else {
            c.usec as f64 / c.calls as f64
        };
        f.kv(
            &format!("cmdstat_{}", c.name),
            format!(
                "calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}",
                c.calls, c.usec, per, c.rejected_calls, c.failed_calls
            ),
        );
    }
}

/// Per-command latency percentiles from each command's histogram
/// (fillPercentileDistributionLatencies), at the percentiles of
/// `latency-tracking-info-percentiles`.
fn latencystats(ctx: &Ctx<'_>, f: &mut Fields<'_>) {
    let cfg = &ctx.server.config;
    if !cfg.latency_tracking {
        return;
    }
    let percentiles: Vec<(String, f64)> = cfg
        .get("latency-tracking-info-percentiles")
        .split(' ')
        .filter_map(|p| Some((p.to_string(), p.parse::<f64>().ok()?)))
        .collect();
    let mut cmds: Vec<_> = ctx
        .server
        .table
        .commands
        .iter()
        .filter_map(|c| Some((c.name.as_str(), c.latency.as_deref()?)))
        .collect();
    cmds.sort_by(|a, b| a.0.cmp(b.0));
    for (name, h) in cmds {
        let v: Vec<String> = percentiles
            .iter()
            .map(|(p, q)| format!("p{p}={:.3}", h.percentile(*q) as f64))
            .collect();
        f.kv(&format!("latency_percentiles_usec_{name}"), v.join(","));
    }
}
