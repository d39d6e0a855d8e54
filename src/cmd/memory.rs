//! MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP (Redis's
//! `memoryCommand`), and the memory accounting INFO memory shares with
//! them (Redis's `getMemoryOverheadData`): what the server needs whatever
//! the data, and the dataset as the rest.

use std::sync::atomic::{AtomicU64, Ordering};

use super::args::{self, is};
use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};

/// Handlers of this family.
pub(super) const COMMANDS: &[(&str, super::Handler)] = &[
    ("memory|usage", usage),
    ("memory|stats", stats),
    ("memory|doctor", doctor),
    ("memory|malloc-stats", malloc_stats),
    ("memory|purge", purge),
    ("memory|help", help),
];

const HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];

/// The most memory in use seen (`used_memory_peak`).
static PEAK_MEMORY: AtomicU64 = AtomicU64::new(0);

/// Where the memory goes (Redis's `struct redisMemOverhead`).
pub(super) struct Overhead {
    /// `used_memory`: the allocator's bytes in use.
    pub used: u64,
    /// `used_memory_peak`.
    pub peak: u64,
    /// In use once the server was set up.
    pub startup: u64,
    /// The replication backlog's bytes.
    pub backlog: u64,
    /// The replication buffer's bytes, shared by the backlog and replicas.
    pub repl_buffers: u64,
    /// What replicas' connections hold.
    pub replicas: u64,
    /// What normal clients' buffers hold.
    pub clients: u64,
    /// The AOF buffer.
    pub aof: u64,
    /// Per database with keys: (db, its table and entry headers).
    pub dbs: Vec<(usize, u64)>,
    /// All of the above.
    pub total: u64,
    /// Keys in all databases.
    pub keys: u64,
    /// `used` less `total`.
    pub dataset: u64,
    /// jemalloc's allocated bytes.
    pub allocated: u64,
    /// jemalloc's active bytes (pages holding allocations).
    pub active: u64,
    /// jemalloc's resident bytes.
    pub resident: u64,
    /// The process's resident set size.
    pub rss: u64,
}

impl Overhead {
    /// The accounting now.
    pub fn now(ctx: &Ctx<'_>) -> Overhead {
        let (allocated, active, resident) = allocator();
        // Used memory leaves out what the threads' caches hold; the
        // allocator's figures include it, as in Redis.
        let used = crate::util::counting_alloc::allocated().clamp(1, allocated.max(1));
        let peak = PEAK_MEMORY.fetch_max(used, Ordering::Relaxed).max(used);
        let startup = ctx.server.memory.startup.min(used);
        let repl = &ctx.server.repl;
        let repl_mem = repl.memory();
        let (backlog, replicas) = (repl_mem.backlog, repl_mem.replicas);
        let clients = ctx.server.clients_mem.get() as u64;
        let aof = ctx.server.aof.buffered() as u64;
        let dbs: Vec<(usize, u64)> = (0..ctx.store.dbs.len())
            .filter(|&db| !ctx.store.dbs[db].is_empty())
            .map(|db| (db, ctx.store.db_overhead_bytes(db)))
            .collect();
        let total =
            (startup + backlog + replicas + clients + aof + dbs.iter().map(|d| d.1).sum::<u64>())
                .min(used);
        Overhead {
            used,
            peak,
            startup,
            backlog,
            replicas,
            repl_buffers: repl_mem.buffers,
            clients,
            aof,
            dbs,
            total,
            keys: ctx.store.total_keys() as u64,
            dataset: used - total,
            allocated,
            active,
            resident,
            rss: rss(),
        }
    }

    /// `dataset.percentage`: the dataset's share of what is in use beyond
    /// start-up.
    pub fn dataset_perc(&self) -> f64 {
        let net = self.used.saturating_sub(self.startup);
        if net == 0 {
            0.0
        } else {
            self.dataset as f64 * 100.0 / net as f64
        }
    }
}

/// (allocated, active, resident) bytes from jemalloc. A sanitizer build
/// allocates through the sanitizer's allocator, counted as jemalloc's
/// `stats.allocated`; pages are not tracked there, so active is the same
/// count and resident the process's RSS.
pub(super) fn allocator() -> (u64, u64, u64) {
    #[cfg(ferrokv_sanitize)]
    {
        let allocated = crate::util::counting_alloc::allocated();
        (allocated, allocated, rss())
    }
    #[cfg(ferrokv_jemalloc)]
    {
        use tikv_jemalloc_ctl::{epoch, stats};
        let _ = epoch::advance();
        (
            stats::allocated::read().unwrap_or(0) as u64,
            stats::active::read().unwrap_or(0) as u64,
            stats::resident::read().unwrap_or(0) as u64,
        )
    }
    #[cfg(all(not(ferrokv_jemalloc), not(ferrokv_sanitize)))]
    {
        (0, 0, 0)
    }
}

/// Resident set size from /proc/self/status (VmRSS, in kB).
pub(super) fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    super::client::write_help(ctx, HELP);
    Ok(())
}

/// USAGE key [SAMPLES count]: the key's footprint in ferrokv's layout:
/// its entry, its name's and its value's heap bytes (counted in full:
/// SAMPLES is checked, not needed). An expired key not yet reclaimed still
/// counts, as in Redis, which looks in its table directly.
fn usage(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut j = 3;
    while j < argv.len() {
        if is(argv.get(j), "samples") && j + 1 < argv.len() {
            if args::int(argv.get(j + 1))? < 0 {
                return Err(Error::Syntax);
            }
            j += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    match ctx.store.key_footprint(ctx.client.db, argv.get(2)) {
        Some(bytes) => ctx.reply.int(bytes as i64),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// STATS: the accounting as a map, in Redis's order.
fn stats(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let o = Overhead::now(ctx);
    let r = &mut ctx.reply;
    r.map(27 + o.dbs.len());
    let int = |r: &mut crate::net::reply::ReplyBuf<'_>, k: &str, v: u64| {
        r.bulk(k.as_bytes());
        r.int(v as i64);
    };
    int(r, "peak.allocated", o.peak);
    int(r, "total.allocated", o.used);
    int(r, "startup.allocated", o.startup);
    int(r, "replication.backlog", o.backlog);
    int(r, "clients.slaves", o.replicas);
    int(r, "clients.normal", o.clients);
    int(r, "cluster.links", 0);
    int(r, "aof.buffer", o.aof);
    int(r, "lua.caches", 0);
    int(r, "functions.caches", 0);
    for &(db, bytes) in &o.dbs {
        r.bulk(format!("db.{db}").as_bytes());
        r.map(3);
        int(r, "overhead.hashtable.main", bytes);
        // The TTL lives in the key's entry: there is no second table.
        int(r, "overhead.hashtable.expires", 0);
        int(r, "overhead.hashtable.slot-to-keys", 0);
    }
    int(r, "overhead.total", o.total);
    int(r, "keys.count", o.keys);
    let net = o.used.saturating_sub(o.startup);
    int(
        r,
        "keys.bytes-per-key",
        net.checked_div(o.keys).unwrap_or(0),
    );
    int(r, "dataset.bytes", o.dataset);
    let dbl = |r: &mut crate::net::reply::ReplyBuf<'_>, k: &str, v: f64| {
        r.bulk(k.as_bytes());
        r.double(v);
    };
    dbl(r, "dataset.percentage", o.dataset_perc());
    dbl(r, "peak.percentage", o.used as f64 * 100.0 / o.peak as f64);
    int(r, "allocator.allocated", o.allocated);
    int(r, "allocator.active", o.active);
    int(r, "allocator.resident", o.resident);
    dbl(
        r,
        "allocator-fragmentation.ratio",
        ratio(o.active, o.allocated),
    );
    int(
        r,
        "allocator-fragmentation.bytes",
        o.active.saturating_sub(o.allocated),
    );
    dbl(r, "allocator-rss.ratio", ratio(o.resident, o.active));
    int(
        r,
        "allocator-rss.bytes",
        o.resident.saturating_sub(o.active),
    );
    dbl(r, "rss-overhead.ratio", ratio(o.rss, o.resident));
    r.bulk(b"rss-overhead.bytes");
    r.int(o.rss as i64 - o.resident as i64);
    dbl(r, "fragmentation", ratio(o.rss, o.used));
    r.bulk(b"fragmentation.bytes");
    r.int(o.rss as i64 - o.used as i64);
    Ok(())
}

/// DOCTOR: Redis's report, from the same checks.
fn doctor(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let o = Overhead::now(ctx);
    let replicas = ctx.server.repl.replicas.len() as u64;
    // The client running DOCTOR is out of the map during its batch.
    let clients = (ctx.server.clients.len() as u64 + 1).saturating_sub(replicas);
    let scripts = ctx.server.scripting.get().map_or(0, |e| e.scripts.len());
    let mut found: Vec<&str> = Vec::new();
    let empty = o.used < 5 << 20;
    if !empty {
        if o.peak as f64 / o.used as f64 > 1.5 {
            found.push(BIG_PEAK);
        }
        let frag = ratio(o.rss, o.used);
        if frag > 1.4 && o.rss.saturating_sub(o.used) > 10 << 20 {
            found.push(HIGH_FRAG);
        }
        if ratio(o.active, o.allocated) > 1.1 && o.active.saturating_sub(o.allocated) > 10 << 20 {
            found.push(HIGH_ALLOC_FRAG);
        }
        if ratio(o.resident, o.active) > 1.1 && o.resident.saturating_sub(o.active) > 10 << 20 {
            found.push(HIGH_ALLOC_RSS);
        }
        if ratio(o.rss, o.resident) > 1.1 && o.rss.saturating_sub(o.resident) > 10 << 20 {
            found.push(HIGH_PROC_RSS);
        }
        if replicas > 0 && o.replicas > 10 << 20 {
            found.push(BIG_REPLICA_BUF);
        }
        if clients > 0 && o.clients / clients > 200 * 1024 {
            found.push(BIG_CLIENT_BUF);
        }
        if scripts > 1000 {
            found.push(MANY_SCRIPTS);
        }
    }
    let report = if empty {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".to_string()
    } else if found.is_empty() {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".to_string()
    } else {
        let mut s = String::from(
            "Sam, I detected a few issues in this Redis instance memory implants:\n\n",
        );
        for f in found {
            s.push_str(f);
        }
        s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
        s
    };
    ctx.reply.verbatim(report.as_bytes());
    Ok(())
}

const BIG_PEAK: &str = " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n";
const HIGH_FRAG: &str = " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"jemalloc-5.3.0\".\n\n";
const HIGH_ALLOC_FRAG: &str = " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n";
const HIGH_ALLOC_RSS: &str = " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n";
const HIGH_PROC_RSS: &str = " * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n";
const BIG_REPLICA_BUF: &str = " * Big replica buffers: The replica output buffers in this instance are greater than 10MB for each replica (on average). This likely means that there is some replica instance that is struggling receiving data, either because it is too slow or because of networking issues. As a result, data piles on the master output buffers. Please try to identify what replica is not receiving data correctly and why. You can use the INFO output in order to check the replicas delays and the CLIENT LIST command to check the output buffers of each replica.\n\n";
const BIG_CLIENT_BUF: &str = " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n";
const MANY_SCRIPTS: &str = " * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n";

/// MALLOC-STATS: jemalloc's own statistics report.
fn malloc_stats(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    #[cfg_attr(not(ferrokv_jemalloc), allow(unused_mut))]
    let mut text = Vec::new();
    #[cfg(ferrokv_jemalloc)]
    let _ = tikv_jemalloc_ctl::stats_print::stats_print(&mut text, Default::default());
    if text.is_empty() {
        ctx.reply
            .bulk(b"Stats not supported for the current allocator");
    } else {
        ctx.reply.verbatim(&text);
    }
    Ok(())
}

/// PURGE: returns the allocator's dirty pages to the system.
fn purge(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    if crate::server::evict::purge() {
        ctx.reply.ok();
        Ok(())
    } else {
        Err(Error::err("Error purging dirty pages"))
    }
}
