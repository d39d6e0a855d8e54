//! DEBUG (Redis's `debug.c`), off unless `enable-debug-command` allows it
//! (checked in `server/call.rs` with Redis's error): the subcommands tools
//! and client test suites use. DIGEST and DIGEST-VALUE compute Redis's
//! dataset digest (SHA1 mixes in its order and xors where it has none), so
//! a ferrokv data set and a redis-server one compare equal when they hold
//! the same data.

use std::fmt::Write as _;

use sha1::{Digest, Sha1};

use super::args::{self, is};
use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::store::value::{StrRef, Value};
use crate::store::Ttl;

/// Handlers of this family.
pub(super) const COMMANDS: &[(&str, super::Handler)] = &[("debug", debugCommand)];

const HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "LEAK <string>",
    "    Create a memory leak of the input string.",
    "HTSTATS <dbid>",
    "    Return hash table statistics of the specified Redis database.",
    "HTSTATS-KEY <key>",
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "REPLICATE <string>",
    "    Replicates the provided string to replicas, allowing data divergence.",
    "MALLCTL <key> [<val>]",
    "    Get or set a malloc tuning integer.",
    "MALLCTL-STR <key> [<val>]",
    "    Get or set a malloc tuning string.",
    "OBJECT <key>",
    "    Show low level info about the `key` and associated value.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "SDSLEN <key>",
    "    Show low level SDS string info representing `key` and value.",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the server does it). It's also useful for testing.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "CLUSTERLINK KILL <to|from|all> <node-id>",
    "    Kills the link based on the direction to/from (both) with the provided node.",
    "CLIENT-EVICTION",
    "    Show low level client eviction pools info (maxmemory-clients).",
    "HELP",
    "    Prints this help.",
];

/// DEBUG. Named as Redis's handler and never inlined, so a stack trace
/// taken during DEBUG SLEEP (the watchdog's, a crash report's) reads as
/// Redis's does: tools and Redis's own logging test look for
/// `debugCommand`.
#[allow(non_snake_case)]
#[inline(never)]
fn debugCommand(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let sub = argv.get(1);
    let n = argv.len();
    if is(sub, "help") && n == 2 {
        super::client::write_help(ctx, HELP);
    } else if is(sub, "sleep") && n == 3 {
        let secs = crate::util::num::parse_f64(argv.get(2)).unwrap_or(0.0);
        if secs > 0.0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
        }
        ctx.reply.ok();
    } else if is(sub, "config-rewrite-force-all") && n == 2 {
        let reason = match super::config::rewrite_file(ctx, true) {
            Ok(()) => {
                ctx.reply.ok();
                return Ok(());
            }
            // Redis's rewriteConfig opens a NULL path: EFAULT.
            Err(super::config::RewriteError::NoFile) => {
                std::io::Error::from_raw_os_error(libc::EFAULT)
            }
            Err(super::config::RewriteError::Io(e)) => e,
        };
        return Err(Error::err_owned(format!(
            "CONFIG-REWRITE-FORCE-ALL failed: {}",
            crate::util::process::strerror(&reason)
        )));
    } else if is(sub, "assert") {
        // The crash DEBUG ASSERT asks for: the assertion report, then the
        // crash report (Redis's serverAssertWithInfo).
        // invariant: a deliberate panic.
        std::panic::panic_any(crate::util::process::AssertionFailed {
            context: assertion_context(ctx, &argv),
            expr: "1 == 2",
        });
    } else if is(sub, "oom") {
        // The crash DEBUG OOM asks for, as Redis's out-of-memory handler
        // reports a failed allocation of SIZE_MAX/2 bytes.
        // invariant: a deliberate panic.
        panic!(
            "ferrokv aborting for OUT OF MEMORY. Allocating {} bytes!",
            usize::MAX / 2
        );
    } else if is(sub, "leak") && n == 3 {
        // A deliberate leak, for testing leak detectors.
        std::mem::forget(argv.get(2).to_vec());
        ctx.reply.ok();
    } else if is(sub, "sdslen") && n == 3 {
        sdslen(ctx, argv.get(2))?;
    } else if is(sub, "client-eviction") && n == 2 {
        client_eviction(ctx)?;
    } else if is(sub, "htstats") && n == 3 {
        htstats(ctx, argv.get(2))?;
    } else if is(sub, "htstats-key") && n == 3 {
        htstats_key(ctx, argv.get(2))?;
    } else if is(sub, "mallctl") && (3..=4).contains(&n) {
        mallctl_int(ctx, argv)?;
    } else if is(sub, "mallctl-str") && (3..=4).contains(&n) {
        mallctl_str(ctx, argv)?;
    } else if is(sub, "pause-cron") && n == 3 {
        // atoi, as SET-ACTIVE-EXPIRE.
        ctx.server.pause_cron = args::int(argv.get(2)).unwrap_or(0) != 0;
        ctx.reply.ok();
    } else if is(sub, "set-disable-deny-scripts") && n == 3 {
        // atoi, as SET-ACTIVE-EXPIRE.
        ctx.server.script_allow_noscript = args::int(argv.get(2)).unwrap_or(0) != 0;
        ctx.reply.ok();
    } else if is(sub, "drop-cluster-packet-filter") && n == 3 {
        ctx.server.cluster_drop_packet_filter = args::int(argv.get(2))?;
        ctx.reply.ok();
    } else if is(sub, "replicate") && n >= 3 {
        // To the replicas only, in the stream's database
        // (replicationFeedSlaves with server.slaveseldb).
        let repl = &mut ctx.server.repl;
        if repl.feeding() {
            let args: Vec<&[u8]> = argv.iter_from(2).collect();
            let db = repl.log.db.unwrap_or(0);
            repl.log.feed_args(db, &args);
        }
        ctx.reply.ok();
    } else if is(sub, "aof-flush-sleep") && n == 3 {
        // atoi: anything but a number reads as 0.
        ctx.server.aof.flush_sleep_us = args::int(argv.get(2)).unwrap_or(0).max(0) as u64;
        ctx.reply.ok();
    } else if is(sub, "set-skip-checksum-validation") && n == 3 {
        // atoi, as SET-ACTIVE-EXPIRE.
        ctx.server.config.skip_checksum_validation = args::int(argv.get(2)).unwrap_or(0) != 0;
        ctx.reply.ok();
    } else if is(sub, "set-active-expire") && n == 3 {
        // atoi: anything but a number reads as 0.
        ctx.server.active_expire = args::int(argv.get(2)).unwrap_or(0) != 0;
        ctx.reply.ok();
    } else if is(sub, "log") && n == 3 {
        tracing::warn!("DEBUG LOG: {}", args::lossy(argv.get(2)));
        ctx.reply.ok();
    } else if is(sub, "populate") && (3..=5).contains(&n) {
        populate(ctx, argv)?;
    } else if is(sub, "digest") && n == 2 {
        let mut total = [0u8; 20];
        for db in 0..ctx.store.dbs.len() {
            if ctx.store.dbs[db].is_empty() {
                continue;
            }
            mix(&mut total, &(db as u32).to_be_bytes());
            ctx.store.dbs[db].dict.for_each(|e| {
                let mut d = [0u8; 20];
                mix(&mut d, e.key());
                value_digest(&mut d, &e.value(), e.expire_at() != 0);
                xor(&mut total, &d);
            });
        }
        ctx.reply.simple(&hex(&total));
    } else if is(sub, "digest-value") {
        ctx.reply.array(n - 2);
        let db = ctx.client.db;
        for key in argv.iter_from(2) {
            let mut d = [0u8; 20];
            // A logically expired key still counts, as in Redis.
            let dict = &ctx.store.dbs[db].dict;
            if let Some(e) = dict.get(dict.hash(key), key) {
                value_digest(&mut d, &e.value(), e.expire_at() != 0);
            }
            ctx.reply.simple(&hex(&d));
        }
    } else if is(sub, "protocol") && n == 3 {
        protocol(ctx, argv.get(2))?;
    } else if is(sub, "object") && n == 3 {
        object(ctx, argv.get(2))?;
    } else if is(sub, "reload") {
        reload(ctx, argv)?;
    } else if is(sub, "loadaof") {
        loadaof(ctx)?;
    } else if is(sub, "listpack") && n == 3 {
        listpack(ctx, argv.get(2))?;
    } else if is(sub, "quicklist") && (n == 3 || n == 4) {
        let full = argv
            .try_get(3)
            .is_some_and(|a| args::int(a).unwrap_or(0) != 0);
        quicklist(ctx, argv.get(2), full)?;
    } else if is(sub, "quicklist-packed-threshold") && n == 3 {
        let ok = crate::util::num::parse_memory(argv.get(2))
            .is_some_and(crate::store::list::set_plain_threshold);
        if !ok {
            return Err(Error::err(
                "argument must be a memory value bigger than 1 and smaller than 4gb",
            ));
        }
        ctx.reply.ok();
    } else if is(sub, "stringmatch-test") && n == 2 {
        stringmatch_test();
        ctx.reply
            .simple("Apparently Redis did not crash: test passed");
    } else if is(sub, "replybuffer") && n == 4 {
        replybuffer(ctx, argv)?;
    } else if is(sub, "clusterlink") && n == 5 && is(argv.get(2), "kill") {
        clusterlink_kill(ctx, argv)?;
    } else if is(sub, "error") && n == 3 {
        // The message as an error reply, newlines made spaces.
        let msg: Vec<u8> = argv
            .get(2)
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        let out = ctx.reply.raw();
        out.push(b'-');
        out.extend_from_slice(&msg);
        out.extend_from_slice(b"\r\n");
    } else if is(sub, "segfault") && n == 2 {
        // SAFETY: none; this is the crash DEBUG SEGFAULT asks for. A
        // read-only page is written, as Redis does, so the fatal-signal
        // handler reports it.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            std::ptr::write_volatile(p.cast::<u8>(), b'x');
        }
    } else if is(sub, "panic") && n == 2 {
        let now = crate::util::clock::real_now_ms() / 1000;
        // DEBUG PANIC asks for this panic (the crash report path), and
        // only where enable-debug-command allows it.
        // invariant: a deliberate panic.
        panic!("DEBUG PANIC called at Unix time {now}");
    } else if is(sub, "change-repl-id") && n == 2 {
        let repl = &mut ctx.server.repl;
        repl.replid2 = std::mem::replace(&mut repl.replid, crate::server::repl::new_replid());
        repl.clear_replid2();
        repl.replid = crate::server::repl::new_replid();
        tracing::warn!("Changing replication IDs after receiving DEBUG change-repl-id");
        ctx.reply.ok();
    } else {
        return Err(unknown_subcommand(sub));
    }
    Ok(())
}

fn unknown_subcommand(sub: &[u8]) -> Error {
    Error::err_owned(format!(
        "unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
        args::lossy(sub)
    ))
}

/// LOADAOF: the AOF written out, the data set emptied and loaded again
/// from the AOF files. A load that fails ends the server, as in Redis.
fn loadaof(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.server.config.appendonly {
        ctx.server.flush_stream();
    }
    // Redis's emptyData: the functions go with the keys (the AOF loads
    // them again).
    drop(ctx.store.flush_all());
    ctx.store.functions.clear();
    ctx.server.aof.delete_history(&ctx.server.config);
    if let Err(e) = crate::server::aof_replay::reload_aof(ctx.server, ctx.store) {
        tracing::warn!("{e}");
        std::process::exit(1);
    }
    ctx.store.stats.dirty = 0;
    tracing::warn!("Append Only File loaded by DEBUG LOADAOF");
    ctx.reply.ok();
    Ok(())
}

/// LISTPACK key: prints a small hash or sorted set's entries on stdout.
fn listpack(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let db = ctx.client.db;
    let dict = &ctx.store.dbs[db].dict;
    let Some(e) = dict.get(dict.hash(key), key) else {
        return Err(Error::NoSuchKey);
    };
    if e.encoding() != "listpack" {
        return Err(Error::err("Not a listpack encoded object."));
    }
    let mut entries: Vec<Vec<u8>> = Vec::new();
    match &*e.value() {
        Value::Hash(h) => {
            for (f, v) in h.iter() {
                entries.push(f.to_vec());
                entries.push(v.to_vec());
            }
        }
        Value::ZSet(z) => {
            for (m, score) in z.iter_from(0) {
                entries.push(m.to_vec());
                let mut b = Vec::new();
                crate::util::num::write_g17(score, &mut b);
                entries.push(b);
            }
        }
        _ => {}
    }
    let mut text = format!("{{num entries {}}}\n", entries.len());
    for (index, v) in entries.iter().enumerate() {
        let shown = &v[..v.len().min(40)];
        let more = if v.len() > 40 { "..." } else { "" };
        text.push_str(&format!(
            "{{\n\tindex: {index:2},\n\t[str]{}{more}\n}}\n",
            String::from_utf8_lossy(shown)
        ));
    }
    text.push_str("{end}\n\n");
    print_stdout(&text);
    ctx.reply.simple("Listpack structure printed on stdout");
    Ok(())
}

/// QUICKLIST key [0|1]: prints a list's chunks on stdout.
fn quicklist(ctx: &mut Ctx<'_>, key: &[u8], full: bool) -> CmdResult {
    let db = ctx.client.db;
    let dict = &ctx.store.dbs[db].dict;
    let Some(e) = dict.get(dict.hash(key), key) else {
        return Err(Error::NoSuchKey);
    };
    let Some(Value::List(l)) = e.object() else {
        return Err(Error::err("Not a quicklist encoded object."));
    };
    let chunks: Vec<_> = l.chunks().collect();
    let mut text = format!("{{count : {}}}\n{{len : {}}}\n", l.len(), chunks.len());
    let mut items = l.iter();
    for (i, (bytes, count, plain)) in chunks.into_iter().enumerate() {
        text.push_str(&format!(
            "{{quicklist node({i})\n{{container : {}, encoding: RAW, size: {bytes}, count: {count}}}\n",
            if plain { "PLAIN" } else { "PACKED" }
        ));
        if full {
            for item in items.by_ref().take(count) {
                text.push_str(&format!("\t[str]{}\n", String::from_utf8_lossy(&item)));
            }
            text.push_str("}\n");
        }
    }
    print_stdout(&text);
    ctx.reply.simple("Quicklist structure printed on stdout");
    Ok(())
}

fn print_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// STRINGMATCH-TEST: random patterns against random strings through the
/// glob matcher, which must neither crash nor hang.
fn stringmatch_test() {
    use rand::Rng;
    let mut rng = rand::rng();
    let alphabet = b"ab*?[]^-\\";
    let random = |rng: &mut rand::rngs::ThreadRng| -> Vec<u8> {
        let len = rng.random_range(0..32);
        (0..len)
            .map(|_| alphabet[rng.random_range(0..alphabet.len())])
            .collect()
    };
    for _ in 0..100_000 {
        let pattern = random(&mut rng);
        let s = random(&mut rng);
        std::hint::black_box(crate::util::glob::glob_match(&pattern, &s, false));
    }
}

/// REPLYBUFFER PEAK-RESET-TIME never|reset|ms, or RESIZING 0|1. Idle
/// output buffers are released right after each batch unless resizing is
/// off or the peak is never reset (then they keep their size).
fn replybuffer(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (what, value) = (argv.get(2), argv.get(3));
    let rs = &mut ctx.server.reply_resize;
    if is(what, "peak-reset-time") {
        rs.peak_reset_ms = if is(value, "never") {
            None
        } else if is(value, "reset") {
            crate::net::conn::ReplyResize::default().peak_reset_ms
        } else {
            // A negative time means never, as in Redis.
            let ms = args::int(value)?;
            u64::try_from(ms).ok()
        };
    } else if is(what, "resizing") {
        rs.resizing = args::int(value).unwrap_or(0) != 0;
    } else {
        return Err(unknown_subcommand(argv.get(1)));
    }
    let rs = *rs;
    if let Some(net) = &ctx.server.net {
        net.borrow_mut().set_reply_resize(rs);
    }
    ctx.reply.ok();
    Ok(())
}

/// CLUSTERLINK KILL to|from|all node-id: closes this node's outbound
/// link to the node, its inbound link from it, or both; the cron links
/// again.
fn clusterlink_kill(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let Some(c) = ctx.server.cluster.as_deref() else {
        return Err(Error::err(
            "Debug option only available for cluster mode enabled setup!",
        ));
    };
    let Some(k) = c.lookup(argv.get(4)) else {
        return Err(Error::err_owned(format!(
            "Unknown node {}",
            args::lossy(argv.get(4))
        )));
    };
    let node = c.node(k);
    let direction = argv.get(3);
    let links = if is(direction, "from") {
        [node.inbound_link, None]
    } else if is(direction, "to") {
        [node.link, None]
    } else if is(direction, "all") {
        [node.link, node.inbound_link]
    } else {
        // Redis sends this error and then +OK as well, a second reply the
        // client never asked for: the error alone here.
        return Err(Error::err_owned(format!(
            "Unknown direction {}",
            args::lossy(direction)
        )));
    };
    for link in links.into_iter().flatten() {
        crate::server::cluster::bus::free_link(ctx.server, link);
    }
    ctx.reply.ok();
    Ok(())
}

/// POPULATE count [prefix] [size]: `prefix:N` keys (default `key`) with
/// `value:N` values, padded with zero bytes or cut to `size`; keys that
/// exist are left alone.
fn populate(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let positive = |a: &[u8]| match args::int(a) {
        Ok(v) if v >= 0 => Ok(v as u64),
        _ => Err(Error::err("value is out of range, must be positive")),
    };
    let count = positive(argv.get(2))?;
    let size = match argv.try_get(4) {
        Some(a) => positive(a)? as usize,
        None => 0,
    };
    let prefix = argv.try_get(3).unwrap_or(b"key");
    let db = ctx.client.db;
    let mut key = Vec::new();
    for j in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        key.extend_from_slice(format!(":{j}").as_bytes());
        if ctx.store.get(db, &key).is_some() {
            continue;
        }
        let mut val = format!("value:{j}").into_bytes();
        if size > 0 {
            val.resize(size, 0);
        }
        ctx.store.set(db, &key, Value::string(&val), Ttl::None);
    }
    ctx.reply.ok();
    Ok(())
}

/// PROTOCOL type: a sample reply of each RESP type.
// Redis's sample double is 3.141, not pi.
#[allow(clippy::approx_constant)]
fn protocol(ctx: &mut Ctx<'_>, name: &[u8]) -> CmdResult {
    let r = &mut ctx.reply;
    let resp3 = r.is_resp3();
    match name.to_ascii_lowercase().as_slice() {
        b"string" => r.bulk(b"Hello World"),
        b"integer" => r.int(12345),
        b"double" => r.double(3.141),
        b"bignum" => {
            let n = b"1234567999999999999999999999999999999";
            if resp3 {
                r.raw().extend_from_slice(b"(");
                r.raw().extend_from_slice(n);
                r.raw().extend_from_slice(b"\r\n");
            } else {
                r.bulk(n);
            }
        }
        b"null" => r.null(),
        b"array" | b"set" => {
            if name.eq_ignore_ascii_case(b"set") {
                r.set(3);
            } else {
                r.array(3);
            }
            for j in 0..3 {
                r.int(j);
            }
        }
        b"map" => {
            r.map(3);
            for j in 0..3 {
                r.int(j);
                r.boolean(j == 1);
            }
        }
        b"attrib" => {
            if resp3 {
                r.raw().extend_from_slice(b"|1\r\n");
                r.bulk(b"key-popularity");
                r.array(2);
                r.bulk(b"key:123");
                r.int(90);
            }
            r.bulk(b"Some real reply following the attribute");
        }
        b"push" => {
            if !resp3 {
                return Err(Error::err("RESP2 is not supported by this command"));
            }
            r.push(2);
            r.bulk(b"server-cpu-usage");
            r.int(42);
            r.bulk(b"Some real reply following the push reply");
        }
        b"true" => r.boolean(true),
        b"false" => r.boolean(false),
        b"verbatim" => r.verbatim(b"This is a verbatim\nstring"),
        _ => {
            return Err(Error::err(
                "Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ))
        }
    }
    Ok(())
}

/// OBJECT key: the fields tools read (`encoding:`, `serializedlength:`,
/// `lru:`, `lru_seconds_idle:`, and a list's `ql_` figures), of the key in
/// ferrokv.
fn object(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let db = ctx.client.db;
    let dict = &ctx.store.dbs[db].dict;
    let Some(e) = dict.get(dict.hash(key), key) else {
        return Err(Error::NoSuchKey);
    };
    // The RDB body alone, compressed as an RDB file would have it: a DUMP
    // payload less its type byte and footer.
    let compress = ctx.server.config.rdbcompression;
    let serialized = crate::persist::rdb::save::dump_payload(&e.value(), compress)
        .len()
        .saturating_sub(11);
    let now_s = ctx.store.now() / 1000;
    let idle = now_s.saturating_sub(u64::from(e.lru()));
    let refcount = match e.as_str() {
        Some(StrRef::Int(n)) if (0..10_000).contains(&n) => i32::MAX,
        _ => 1,
    };
    let mut line = format!(
        "Value at:{:p} refcount:{refcount} encoding:{} serializedlength:{serialized} lru:{} lru_seconds_idle:{idle}",
        (e as *const crate::store::dict::Entry).cast::<u8>(),
        e.encoding(),
        e.lru() & 0xff_ffff,
    );
    if let Value::List(l) = &*e.value() {
        // The quicklist's figures, its chunks standing for Redis's nodes.
        let nodes = l.chunk_count();
        let _ = write!(
            line,
            " ql_nodes:{nodes} ql_avg_node:{:.2} ql_listpack_max:{} ql_compressed:{} ql_uncompressed_size:{}",
            l.len() as f64 / nodes as f64,
            l.fill(),
            u8::from(l.compress_depth() != 0),
            l.listpack_bytes(),
        );
    }
    ctx.reply.simple(&line);
    Ok(())
}

/// The client and object context Redis logs ahead of a failed assertion
/// (`_serverAssertPrintClientInfo`, `_serverAssertPrintObject`), about the
/// client running DEBUG ASSERT and the command's name.
fn assertion_context(ctx: &Ctx<'_>, argv: &Argv<'_>) -> Vec<String> {
    // CLIENT_MULTI and CLIENT_PUBSUB, the flags a client running DEBUG may
    // have.
    let mut flags = 0u64;
    if ctx.client.multi.is_some() {
        flags |= 1 << 3;
    }
    if ctx.client.kind == crate::server::client::ClientKind::PubSub {
        flags |= 1 << 18;
    }
    let mut out = vec![
        "=== ASSERTION FAILED CLIENT CONTEXT ===".to_string(),
        format!("client->flags = {flags}"),
        format!("client->conn = fd={}", ctx.client.fd),
        format!("client->argc = {}", argv.len()),
    ];
    for (i, a) in argv.iter_from(0).enumerate() {
        out.push(format!(
            "client->argv[{i}] = \"{}\" (refcount: 1)",
            args::lossy(a)
        ));
    }
    // argv[0], a string of up to 44 bytes: embstr (encoding 8).
    out.push("=== ASSERTION FAILED OBJECT CONTEXT ===".to_string());
    out.push("Object type: 0".to_string());
    let encoding = if argv.get(0).len() <= crate::store::value::EMBSTR_MAX {
        8
    } else {
        0
    };
    out.push(format!("Object encoding: {encoding}"));
    out.push("Object refcount: 1".to_string());
    out
}

/// SDSLEN key: the string's length, spare room and allocation, in the
/// figures of Redis's sds strings (a header sized for the length, the
/// bytes, a terminator, in the allocator's size class).
fn sdslen(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let db = ctx.client.db;
    let dict = &ctx.store.dbs[db].dict;
    let Some(e) = dict.get(dict.hash(key), key) else {
        return Err(Error::NoSuchKey);
    };
    let (len, alloc, embedded) = match &*e.value() {
        Value::Str(v) => (v.len(), v.len(), v.len() <= crate::store::value::EMBSTR_MAX),
        Value::Raw(v) => (v.len(), v.capacity(), false),
        Value::Large(v) => (v.len(), v.len(), false),
        _ => return Err(Error::err("Not an sds encoded string.")),
    };
    let size = crate::util::counting_alloc::usable_size;
    let (val_alloc, val_mem) = if embedded {
        // An embstr shares one allocation with its 16-byte object header,
        // sized to fit.
        (len, size(16 + sds_header(len) + len + 1) - 16)
    } else {
        let alloc = sds_alloc(alloc);
        (alloc, size(sds_header(alloc) + alloc + 1))
    };
    let line = format!(
        "key_sds_len:{}, key_sds_avail:{}, key_zmalloc: {}, val_sds_len:{len}, val_sds_avail:{}, val_zmalloc: {val_mem}",
        key.len(),
        sds_alloc(key.len()) - key.len(),
        size(sds_header(key.len()) + key.len() + 1),
        val_alloc - len,
    );
    ctx.reply.simple(&line);
    Ok(())
}

/// The room an sds string made for `len` bytes has: the allocator's size
/// class less header and terminator, up to its type's most (sdsnewlen);
/// the smallest type keeps no room.
fn sds_alloc(len: usize) -> usize {
    let hdr = sds_header(len);
    let most = match hdr {
        1 => return len,
        3 => 255,
        5 => 65535,
        9 => u32::MAX as usize,
        _ => usize::MAX,
    };
    (crate::util::counting_alloc::usable_size(hdr + len + 1) - hdr - 1).min(most)
}

/// The header of an sds string of `len` bytes (sdsReqType's sizes).
fn sds_header(len: usize) -> usize {
    match len {
        1..=31 => 1,
        0 | 32..=255 => 3,
        256..=65535 => 5,
        _ if len as u64 <= u64::from(u32::MAX) => 9,
        _ => 17,
    }
}

/// CLIENT-EVICTION: the clients client eviction may close, grouped by
/// memory in Redis's buckets (under 32 KB, then one per power of two up
/// to 4 GB and over), with each bucket's total.
fn client_eviction(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.server.client_evict_limit == 0 {
        return Err(Error::err("maxmemory-clients is disabled."));
    }
    const MIN_LOG: usize = 15;
    const BUCKETS: usize = 33 - MIN_LOG + 1;
    let mut buckets = [(0usize, 0usize); BUCKETS];
    let clients = ctx
        .server
        .clients
        .values()
        .chain(std::iter::once(&*ctx.client));
    for c in clients.filter(|c| crate::server::client_mem::evictable(c)) {
        let mem = c.bufs.memory();
        let bits = (usize::BITS - mem.leading_zeros()) as usize;
        let i = bits.clamp(MIN_LOG, 33) - MIN_LOG;
        buckets[i].0 += mem;
        buckets[i].1 += 1;
    }
    let mut text = String::new();
    for (j, (mem, count)) in buckets.iter().enumerate() {
        if j == 0 {
            text.push_str("bucket          0");
        } else {
            let _ = write!(text, "bucket {:10}", 1usize << (j - 1 + MIN_LOG));
        }
        if j == BUCKETS - 1 {
            text.push_str("+            : ");
        } else {
            let _ = write!(text, " - {:10}: ", (1usize << (j + MIN_LOG)) - 1);
        }
        let _ = writeln!(text, "tot-mem: {mem:10}, clients: {count}");
    }
    ctx.reply.verbatim(text.as_bytes());
    Ok(())
}

/// RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save the RDB file, empty the data
/// set and load the file back.
fn reload(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (mut save, mut flush, mut merge) = (true, true, false);
    for opt in argv.iter_from(2) {
        if is(opt, "merge") {
            merge = true;
        } else if is(opt, "noflush") {
            flush = false;
        } else if is(opt, "nosave") {
            save = false;
        } else {
            return Err(Error::err(
                "DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    if save && crate::persist::save_now(ctx.store, &mut ctx.server.persistence()).is_err() {
        // Redis answers its bare shared `-ERR`.
        return Err(Error::raw("ERR"));
    }
    if flush {
        // Redis's emptyData: the functions go with the keys.
        drop(ctx.store.flush_all());
        ctx.store.functions.clear();
    }
    let path = crate::persist::rdb_path(&ctx.server.config);
    let kept = ctx.store.functions.len();
    let loaded = std::fs::read(&path).ok().and_then(|data| {
        let config = &ctx.server.config;
        if merge {
            crate::persist::load_file_merging(&data, ctx.store, config).ok()
        } else {
            crate::persist::load_file(&data, ctx.store, config).ok()
        }
    });
    // A library loaded under the name of one kept (NOFLUSH) fails the load,
    // as Redis's rdbFunctionLoad; MERGE lets the file's replace it.
    let name = |code: &Vec<u8>| {
        crate::script::function::parse_metadata(code)
            .ok()
            .map(|m| m.0)
    };
    let loaded_names: Vec<Option<String>> = ctx.store.functions[kept..].iter().map(name).collect();
    let clash = |code: &Vec<u8>| loaded_names.contains(&name(code));
    let duplicate = ctx.store.functions[..kept].iter().any(clash);
    let failed = loaded.is_none() || (duplicate && !merge);
    if duplicate {
        if merge {
            let mut i = 0;
            ctx.store.functions.retain(|code| {
                i += 1;
                i > kept || !clash(code)
            });
        } else {
            ctx.store.functions.truncate(kept);
        }
    }
    ctx.server.install_functions(ctx.store);
    if failed {
        return Err(Error::err("Error trying to load the RDB dump"));
    }
    tracing::warn!("DB reloaded by DEBUG RELOAD");
    ctx.reply.ok();
    Ok(())
}

/// digest ^= SHA1(data) (xorDigest).
fn xor(digest: &mut [u8; 20], data: &[u8]) {
    let h = Sha1::digest(data);
    for (d, b) in digest.iter_mut().zip(h.iter()) {
        *d ^= b;
    }
}

/// digest = SHA1(digest ^ SHA1(data)) (mixDigest): order matters.
fn mix(digest: &mut [u8; 20], data: &[u8]) {
    xor(digest, data);
    let h = Sha1::digest(&digest[..]);
    digest.copy_from_slice(&h);
}

/// One value's DEBUG DIGEST-VALUE: the same for equal contents whatever
/// order a set or hash table holds them in (the fuzz target `restore`
/// compares values with it).
pub fn digest_value(v: &Value) -> [u8; 20] {
    let mut d = [0u8; 20];
    value_digest(&mut d, v, false);
    d
}

/// Mixes in one value as Redis's xorObjectDigest does: its type, its
/// contents, and whether it has a TTL.
fn value_digest(d: &mut [u8; 20], v: &Value, volatile: bool) {
    let kind: u32 = match v {
        Value::Int(_) | Value::Str(_) | Value::Raw(_) | Value::Large(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
    };
    mix(d, &kind.to_be_bytes());
    let mut buf = Vec::new();
    match v {
        Value::Int(n) => mix(d, n.to_string().as_bytes()),
        Value::Str(s) => mix(d, s.as_slice()),
        Value::Raw(s) => mix(d, s),
        Value::Large(s) => mix(d, s),
        Value::List(l) => {
            for item in l.iter() {
                mix(d, &item);
            }
        }
        Value::Set(s) => {
            for m in s.iter() {
                m.with(|b| xor(d, b));
            }
        }
        Value::ZSet(z) => {
            for (member, score) in z.iter_from(0) {
                let mut e = [0u8; 20];
                mix(&mut e, member);
                buf.clear();
                crate::util::num::write_g17(score, &mut buf);
                mix(&mut e, &buf);
                xor(d, &e);
            }
        }
        Value::Hash(h) => {
            for (field, value) in h.iter() {
                let mut e = [0u8; 20];
                mix(&mut e, field);
                mix(&mut e, value);
                xor(d, &e);
            }
        }
        Value::Stream(s) => {
            let all = crate::store::stream::StreamId { ms: 0, seq: 0 }
                ..=crate::store::stream::StreamId {
                    ms: u64::MAX,
                    seq: u64::MAX,
                };
            for (id, fields) in s.range(*all.start(), *all.end(), false) {
                mix(d, format!("{}.{}", id.ms, id.seq).as_bytes());
                for f in fields {
                    mix(d, f);
                }
            }
        }
    }
    if volatile {
        xor(d, b"!!expire!!");
    }
}

fn hex(d: &[u8; 20]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The error reply for a jemalloc error number.
fn mallctl_error(errno: i32) -> Error {
    Error::err_owned(crate::util::process::strerror(
        &std::io::Error::from_raw_os_error(errno),
    ))
}

/// jemalloc's mallctl; without jemalloc (a sanitizer build) every key is
/// unknown (ENOENT).
///
/// # Safety
/// As jemalloc's mallctl: `name` is NUL-terminated, and each non-null
/// pointer points to as many bytes as its length says.
unsafe fn mallctl(
    name: *const std::ffi::c_char,
    oldp: *mut std::ffi::c_void,
    oldlenp: *mut usize,
    newp: *mut std::ffi::c_void,
    newlen: usize,
) -> std::ffi::c_int {
    #[cfg(ferrokv_jemalloc)]
    {
        // SAFETY: the caller's contract is mallctl's.
        unsafe { tikv_jemalloc_sys::mallctl(name, oldp, oldlenp, newp, newlen) }
    }
    #[cfg(not(ferrokv_jemalloc))]
    {
        let _ = (name, oldp, oldlenp, newp, newlen);
        libc::ENOENT
    }
}

/// MALLCTL key [val]: reads (and with `val` sets, answering the old
/// value) a jemalloc integer, trying 8-, 4-, 2- and 1-byte sizes as Redis's
/// mallctl_int; a write-only key is written and answered +OK.
fn mallctl_int(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    use std::ffi::c_void;
    let name = std::ffi::CString::new(argv.get(2)).map_err(|_| mallctl_error(libc::ENOENT))?;
    let val = match argv.len() {
        4 => Some(args::int(argv.get(3)).map_err(|_| Error::NotInteger)?),
        _ => None,
    };
    let mut sz = std::mem::size_of::<i64>();
    while sz > 0 {
        let mut old: i64 = 0;
        let mut new = val.unwrap_or(0);
        let mut old_len = sz;
        let newp = match val {
            Some(_) => &mut new as *mut i64 as *mut c_void,
            None => std::ptr::null_mut(),
        };
        let new_len = if val.is_some() { sz } else { 0 };
        // SAFETY: `old` and `new` are 8 bytes, at least the `sz` bytes
        // given as their lengths; the name is NUL-terminated.
        let mut ret = unsafe {
            mallctl(
                name.as_ptr(),
                &mut old as *mut i64 as *mut c_void,
                &mut old_len,
                newp,
                new_len,
            )
        };
        if ret == 0 {
            ctx.reply.int(old);
            return Ok(());
        }
        if ret == libc::EPERM && val.is_some() {
            // A write-only key: just write it.
            // SAFETY: as above, with no old value asked for.
            ret = unsafe {
                mallctl(
                    name.as_ptr(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    newp,
                    sz,
                )
            };
            if ret == 0 {
                ctx.reply.ok();
                return Ok(());
            }
        }
        if ret != libc::EINVAL {
            return Err(mallctl_error(ret));
        }
        // The size may be wrong: try a smaller one.
        sz /= 2;
    }
    Err(mallctl_error(libc::EINVAL))
}

/// MALLCTL-STR key [val]: reads a jemalloc string and optionally writes
/// one ("VOID" writes nothing, for keys that only act, such as
/// thread.tcache.flush), as Redis's mallctl_string. As in Redis, the key
/// must name a string setting (DEBUG trusts its caller).
fn mallctl_str(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    use std::ffi::{c_char, c_void};
    let name = std::ffi::CString::new(argv.get(2)).map_err(|_| mallctl_error(libc::ENOENT))?;
    let mut old: *const c_char = std::ptr::null();
    let mut sz = std::mem::size_of::<*const c_char>();
    // SAFETY: `old` receives a pointer-sized value; the name is
    // NUL-terminated.
    let rret = unsafe {
        mallctl(
            name.as_ptr(),
            &mut old as *mut *const c_char as *mut c_void,
            &mut sz,
            std::ptr::null_mut(),
            0,
        )
    };
    let write = argv.len() == 4;
    if rret != 0 && !(rret == libc::EPERM && write) {
        return Err(mallctl_error(rret));
    }
    let mut wret = 0;
    if write {
        let val = std::ffi::CString::new(argv.get(3)).map_err(|_| mallctl_error(libc::EINVAL))?;
        let mut ptr = val.as_ptr();
        let (newp, len) = if argv.get(3) == b"VOID" {
            (std::ptr::null_mut(), 0)
        } else {
            (
                &mut ptr as *mut *const c_char as *mut c_void,
                std::mem::size_of::<*const c_char>(),
            )
        };
        // SAFETY: `ptr` is a NUL-terminated string alive for the call.
        wret = unsafe {
            mallctl(
                name.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                newp,
                len,
            )
        };
    }
    if rret == 0 {
        if old.is_null() {
            ctx.reply.null();
        } else {
            // SAFETY: jemalloc answered a string setting with a pointer to
            // its NUL-terminated, static value.
            let text = unsafe { std::ffi::CStr::from_ptr(old) };
            ctx.reply.bulk(text.to_bytes());
        }
    } else if wret != 0 {
        return Err(mallctl_error(wret));
    } else {
        ctx.reply.ok();
    }
    Ok(())
}

/// Chain lengths past this are counted together (DICT_STATS_VECTLEN).
const STATS_VECTLEN: usize = 50;

/// One table's statistics in Redis's _dictGetStatsHt text, from the
/// length of each of its `size` buckets' chains.
fn table_stats(out: &mut String, idx: usize, chains: &[usize]) {
    use std::fmt::Write as _;
    let what = if idx == 0 {
        "main hash table"
    } else {
        "rehashing target"
    };
    let used: usize = chains.iter().sum();
    if used == 0 {
        let _ = write!(
            out,
            "Hash table {idx} stats ({what}):\nNo stats available for empty dictionaries\n"
        );
        return;
    }
    let mut vector = [0usize; STATS_VECTLEN];
    for &c in chains {
        vector[c.min(STATS_VECTLEN - 1)] += 1;
    }
    let slots = chains.iter().filter(|&&c| c > 0).count();
    let max = chains.iter().copied().max().unwrap_or(0);
    let _ = write!(
        out,
        "Hash table {idx} stats ({what}):\n table size: {}\n number of elements: {used}\n \
         different slots: {slots}\n max chain length: {max}\n avg chain length (counted): \
         {:.2}\n avg chain length (computed): {:.2}\n Chain length distribution:\n",
        chains.len(),
        used as f32 / slots as f32,
        used as f32 / slots as f32,
    );
    for (i, &n) in vector.iter().enumerate().take(STATS_VECTLEN - 1) {
        if n != 0 {
            let pct = n as f32 / chains.len() as f32 * 100.0;
            let _ = writeln!(out, "   {i}: {n} ({pct:.2}%)");
        }
    }
}

/// HTSTATS dbid: the keyspace table's statistics (both arrays while it
/// rehashes). Expiry times live in the keys' own entries, not in a second
/// table, so the expires section counts the keys with one.
fn htstats(ctx: &mut Ctx<'_>, arg: &[u8]) -> CmdResult {
    let db = args::int(arg).map_err(|_| Error::NotInteger)?;
    let Some(d) = usize::try_from(db).ok().and_then(|i| ctx.store.dbs.get(i)) else {
        return Err(Error::err("Out of range database"));
    };
    let mut out = String::from("[Dictionary HT]\n");
    table_stats(&mut out, 0, &d.dict.chain_lengths(0));
    if d.dict.is_rehashing() {
        table_stats(&mut out, 1, &d.dict.chain_lengths(1));
    }
    out.push_str("[Expires HT]\n");
    let volatile = d.volatile();
    if volatile == 0 {
        out.push_str(
            "Hash table 0 stats (main hash table):\nNo stats available for empty dictionaries\n",
        );
    } else {
        out.push_str(&format!(
            "Hash table 0 stats (main hash table):\n number of elements: {volatile}\n \
             (expiry times are kept in the keys' entries of the table above)\n"
        ));
    }
    ctx.reply.verbatim(out.as_bytes());
    Ok(())
}

/// HTSTATS-KEY key: the statistics of a hash, set or sorted set kept as a
/// table (both arrays while it rehashes); Redis's refusal for other
/// encodings.
fn htstats_key(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    use crate::store::{hash::Hash, zset::ZSet};
    let db = ctx.db();
    let Some(e) = ctx.store.get_object(db, key) else {
        return Err(Error::NoSuchKey);
    };
    let e = e.into_ref();
    let mut out = String::new();
    let mut stats = |lengths: &dyn Fn(usize) -> Vec<usize>, rehashing: bool| {
        table_stats(&mut out, 0, &lengths(0));
        if rehashing {
            table_stats(&mut out, 1, &lengths(1));
        }
    };
    match (e.object(), e.set().and_then(|s| s.table())) {
        (Some(Value::Hash(Hash::Table(m))), _) => stats(&|t| m.chain_lengths(t), m.is_rehashing()),
        (_, Some(m)) => stats(&|t| m.chain_lengths(t), m.is_rehashing()),
        (Some(Value::ZSet(ZSet::Skiplist(z))), _) => {
            let m = z.table();
            stats(&|t| m.chain_lengths(t), m.is_rehashing())
        }
        _ => {
            return Err(Error::err(
                "The value stored at the specified key is not represented using an hash table",
            ))
        }
    }
    ctx.reply.verbatim(out.as_bytes());
    Ok(())
}
