//! Keyspace commands (Redis's `db.c` and `object.c`): DEL, UNLINK, EXISTS,
//! TYPE, TOUCH, RENAME, RENAMENX, COPY, MOVE, SWAPDB, RANDOMKEY and OBJECT.
//! KEYS and SCAN live in `scan.rs`, the TTL commands in `expire.rs`.

use rand::Rng;

use super::args::{self, is};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::store::value::{StrRef, Value};
use crate::store::Ttl;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("del", del),
    ("unlink", del),
    ("exists", exists),
    ("type", type_cmd),
    ("touch", touch),
    ("rename", rename),
    ("renamenx", renamenx),
    ("copy", copy),
    ("move", move_cmd),
    ("swapdb", swapdb),
    ("randomkey", randomkey),
    ("object|encoding", object_encoding),
    ("object|refcount", object_refcount),
    ("object|idletime", object_idletime),
    ("object|freq", object_freq),
    ("object|help", object_help),
];

/// DEL and UNLINK (delGenericCommand): UNLINK, and DEL with
/// `lazyfree-lazy-user-del`, free large values in the background.
fn del(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let lazy = is(argv.get(0), "unlink")
        || crate::store::lazyfree::LAZY_USER_DEL.load(std::sync::atomic::Ordering::Relaxed);
    let mut n = 0;
    for k in argv.iter_from(1) {
        if let Some(e) = ctx.store.remove(db, k) {
            crate::store::lazyfree::free_entry(e, lazy);
            n += 1;
            super::pubsub::notify(ctx, b'g', "del", k);
        }
    }
    ctx.reply.int(n);
    Ok(())
}

/// EXISTS counts repeated keys once per mention, as Redis does.
fn exists(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let n = argv
        .iter_from(1)
        .filter(|k| ctx.store.get_read_notouch(db, k).is_some())
        .count();
    ctx.reply.int(n as i64);
    Ok(())
}

fn type_cmd(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let name = ctx
        .store
        .get_read_notouch(db, argv.get(1))
        .map_or("none", |e| e.type_name());
    ctx.reply.simple(name);
    Ok(())
}

/// TOUCH: a read of each key that only updates its access time.
fn touch(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let n = argv
        .iter_from(1)
        .filter(|k| ctx.store.get_read(db, k).is_some())
        .count();
    ctx.reply.int(n as i64);
    Ok(())
}

/// The TTL rule that recreates an entry's expiry elsewhere.
fn ttl_of(expire_at: u64) -> Ttl {
    if expire_at == 0 {
        Ttl::None
    } else {
        Ttl::At(expire_at)
    }
}

/// Writes `value` under `key` in `db` with the given expiry and access time
/// (a moved object keeps its LRU stamp in Redis).
fn put(ctx: &mut Ctx<'_>, db: usize, key: &[u8], value: Value, expire_at: u64, lru: u32) {
    ctx.store.set(db, key, value, ttl_of(expire_at));
    if let Some(mut e) = ctx.store.get(db, key) {
        e.set_lru(lru);
    }
}

/// Redis's renameGenericCommand.
fn rename_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, nx: bool) -> CmdResult {
    let db = ctx.db();
    let (src, dst) = (argv.get(1), argv.get(2));
    if !ctx.store.exists(db, src) {
        return Err(Error::NoSuchKey);
    }
    // Same name: nothing to do, but a missing key still errs (above).
    if src == dst {
        if nx {
            ctx.reply.int(0);
        } else {
            ctx.reply.ok();
        }
        return Ok(());
    }
    if nx && ctx.store.exists(db, dst) {
        ctx.reply.int(0);
        return Ok(());
    }
    let Some(entry) = ctx.store.remove(db, src) else {
        return Err(Error::NoSuchKey);
    };
    let (expire_at, lru) = (entry.expire_at(), entry.lru());
    // The destination is deleted and created anew (Redis's dbDelete then
    // dbAdd), so a `new` event fires even when it existed.
    ctx.store.delete(db, dst);
    put(ctx, db, dst, entry.into_value(), expire_at, lru);
    super::pubsub::notify(ctx, b'g', "rename_from", src);
    super::pubsub::notify(ctx, b'g', "rename_to", dst);
    ctx.count_changes(1);
    if nx {
        ctx.reply.int(1);
    } else {
        ctx.reply.ok();
    }
    Ok(())
}

fn rename(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    rename_generic(ctx, argv, false)
}

fn renamenx(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    rename_generic(ctx, argv, true)
}

/// A target database (COPY DB, MOVE).
fn target_db(ctx: &Ctx<'_>, arg: &[u8]) -> Result<usize, Error> {
    args::db_index(arg, ctx.store.dbs.len())
}

/// COPY source destination [DB index] [REPLACE] (Redis's copyCommand).
fn copy(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let src_db = ctx.db();
    let mut dst_db = src_db;
    let mut replace = false;
    let mut j = 3;
    while j < argv.len() {
        let opt = argv.get(j);
        if is(opt, "replace") {
            replace = true;
        } else if let (true, Some(n)) = (is(opt, "db"), argv.try_get(j + 1)) {
            dst_db = target_db(ctx, n)?;
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    if ctx.server.cluster.is_some() && (src_db != 0 || dst_db != 0) {
        return Err(Error::err(
            "Copying to another database is not allowed in cluster mode",
        ));
    }
    let (key, newkey) = (argv.get(1), argv.get(2));
    if src_db == dst_db && key == newkey {
        return Err(Error::SameObject);
    }
    let Some(e) = ctx.store.get_read(src_db, key) else {
        ctx.reply.int(0);
        return Ok(());
    };
    let (value, expire_at) = (e.to_value(), e.expire_at());
    if ctx.store.exists(dst_db, newkey) && !replace {
        ctx.reply.int(0);
        return Ok(());
    }
    let lru = (ctx.store.now() / 1000) as u32;
    if replace {
        // Deleted and created anew, as rename_generic does.
        ctx.store.delete(dst_db, newkey);
    }
    put(ctx, dst_db, newkey, value, expire_at, lru);
    super::pubsub::notify_db(ctx, b'g', "copy_to", dst_db, newkey);
    ctx.count_changes(1);
    ctx.reply.int(1);
    Ok(())
}

/// MOVE key db (Redis's moveCommand).
fn move_cmd(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if ctx.server.cluster.is_some() {
        return Err(Error::err("MOVE is not allowed in cluster mode"));
    }
    let src_db = ctx.db();
    let dst_db = target_db(ctx, argv.get(2))?;
    if src_db == dst_db {
        return Err(Error::SameObject);
    }
    let key = argv.get(1);
    if !ctx.store.exists(src_db, key) || ctx.store.exists(dst_db, key) {
        ctx.reply.int(0);
        return Ok(());
    }
    let Some(entry) = ctx.store.remove(src_db, key) else {
        ctx.reply.int(0);
        return Ok(());
    };
    let (expire_at, lru) = (entry.expire_at(), entry.lru());
    put(ctx, dst_db, key, entry.into_value(), expire_at, lru);
    super::pubsub::notify_db(ctx, b'g', "move_from", src_db, key);
    super::pubsub::notify_db(ctx, b'g', "move_to", dst_db, key);
    ctx.count_changes(1);
    ctx.reply.int(1);
    Ok(())
}

/// SWAPDB index1 index2; swapping a database with itself is allowed.
fn swapdb(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if ctx.server.cluster.is_some() {
        return Err(Error::err("SWAPDB is not allowed in cluster mode"));
    }
    let parse = |arg: &[u8], msg: &'static str| {
        args::int(arg)
            .ok()
            .and_then(|n| i32::try_from(n).ok())
            .ok_or(Error::err(msg))
    };
    let a = parse(argv.get(1), "invalid first DB index")?;
    let b = parse(argv.get(2), "invalid second DB index")?;
    let n = ctx.store.dbs.len();
    let index = |i: i32| usize::try_from(i).ok().filter(|&i| i < n);
    let (Some(a), Some(b)) = (index(a), index(b)) else {
        return Err(Error::DbIndexOutOfRange);
    };
    ctx.store.swap_db(a, b);
    ctx.reply.ok();
    Ok(())
}

/// RANDOMKEY: a random live key. Expired keys met on the way are deleted
/// and another pick is made (Redis's dbRandomKey); a replica, which
/// deletes nothing, gives up after 100 expired picks and answers the last.
fn randomkey(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let now = ctx.store.now();
    let mut rng = rand::rng();
    let mut tries = 100;
    loop {
        let picked = ctx.store.dbs[db]
            .dict
            .random(|n| rng.random_range(0..n))
            .map(|e| (e.key().to_vec(), e.is_expired(now)));
        match picked {
            None => {
                ctx.reply.null();
                return Ok(());
            }
            Some((key, true)) if ctx.store.expiry == crate::store::Expiry::Delete || tries > 0 => {
                // A master deletes it, so each round shrinks the table.
                ctx.store.expire_if_needed(db, key.as_slice());
                tries -= 1;
            }
            Some((key, true)) => {
                ctx.reply.bulk(key.as_slice());
                return Ok(());
            }
            Some((key, false)) => {
                ctx.reply.bulk(key.as_slice());
                return Ok(());
            }
        }
    }
}

/// Looks a key up for OBJECT (counts as a read without touching the access
/// time); replies null and returns None when it is missing.
fn object_lookup<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Option<&'c crate::store::dict::Entry> {
    let db = ctx.db();
    match ctx.store.get_object(db, key) {
        Some(e) => Some(e.into_ref()),
        None => {
            ctx.reply.null();
            None
        }
    }
}

fn object_encoding(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if let Some(e) = object_lookup(ctx, argv.get(2)) {
        let enc = e.encoding();
        ctx.reply.bulk(enc.as_bytes());
    }
    Ok(())
}

/// Redis shares the objects of integers 0..9999 and reports INT_MAX as
/// their reference count, except under maxmemory with an LRU or LFU
/// policy, whose keys each need their own access stamp
/// (MAXMEMORY_FLAG_NO_SHARED_INTEGERS; Redis decides when the value is
/// written, ferrokv by the settings in force now); every other value is
/// referenced once.
fn object_refcount(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let config = &ctx.server.config;
    let sharing = config.maxmemory == 0
        || !(config.maxmemory_policy.contains("lru") || config.maxmemory_policy.contains("lfu"));
    if let Some(e) = object_lookup(ctx, argv.get(2)) {
        let shared =
            sharing && matches!(e.as_str(), Some(StrRef::Int(n)) if (0..10_000).contains(&n));
        let n = if shared { i64::from(i32::MAX) } else { 1 };
        ctx.reply.int(n);
    }
    Ok(())
}

/// Whether the eviction policy tracks access frequency (LFU) rather than
/// access time.
fn lfu_policy(ctx: &Ctx<'_>) -> bool {
    ctx.store.lfu().is_some()
}

fn object_idletime(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let now_s = (ctx.store.now() / 1000) as u32;
    let Some(lru) = object_lookup(ctx, argv.get(2)).map(|e| e.lru()) else {
        return Ok(());
    };
    if lfu_policy(ctx) {
        return Err(Error::err(
            "An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    ctx.reply.int(i64::from(now_s.saturating_sub(lru)));
    Ok(())
}

fn object_freq(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let Some(stamp) = object_lookup(ctx, argv.get(2)).map(|e| e.lru()) else {
        return Ok(());
    };
    let Some(lfu) = ctx.store.lfu() else {
        return Err(Error::err(
            "An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    };
    let now = ctx.store.now();
    ctx.reply
        .int(i64::from(crate::store::evict::lfu_counter(stamp, lfu, now)));
    Ok(())
}

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

fn object_help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.array(OBJECT_HELP.len());
    for line in OBJECT_HELP {
        ctx.reply.simple(line);
    }
    Ok(())
}
