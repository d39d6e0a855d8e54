//! DEBUG (Redis's `debug.c`), off unless `enable-debug-command` allows it
//! (checked in `server/call.rs` with Redis's error): the subcommands tools
//! and client test suites use. DIGEST and DIGEST-VALUE compute Redis's
//! dataset digest (SHA1 mixes in its order and xors where it has none), so
//! a ferrokv data set and a redis-server one compare equal when they hold
//! the same data.

use sha1::{Digest, Sha1};

use super::args::{self, is};
use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::store::value::Value;
use crate::store::Ttl;

/// Handlers of this family.
pub(super) const COMMANDS: &[(&str, super::Handler)] = &[("debug", debug)];

const HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "OBJECT <key>",
    "    Show low level info about the `key` and associated value.",
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
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the server does it). It's also useful for testing.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "HELP",
    "    Prints this help.",
];

fn debug(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
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
                mix(&mut d, e.key.as_slice());
                value_digest(&mut d, &e.value, e.expire_at() != 0);
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
                value_digest(&mut d, &e.value, e.expire_at() != 0);
            }
            ctx.reply.simple(&hex(&d));
        }
    } else if is(sub, "protocol") && n == 3 {
        protocol(ctx, argv.get(2))?;
    } else if is(sub, "object") && n == 3 {
        object(ctx, argv.get(2))?;
    } else if is(sub, "reload") {
        reload(ctx, argv)?;
    } else if is(sub, "change-repl-id") && n == 2 {
        let repl = &mut ctx.server.repl;
        repl.replid2 = std::mem::replace(&mut repl.replid, crate::server::repl::new_replid());
        repl.clear_replid2();
        repl.replid = crate::server::repl::new_replid();
        tracing::warn!("Changing replication IDs after receiving DEBUG change-repl-id");
        ctx.reply.ok();
    } else {
        return Err(Error::err_owned(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            args::lossy(sub)
        )));
    }
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
/// `lru:`, `lru_seconds_idle:`), of the key in ferrokv.
fn object(ctx: &mut Ctx<'_>, key: &[u8]) -> CmdResult {
    let db = ctx.client.db;
    let dict = &ctx.store.dbs[db].dict;
    let Some(e) = dict.get(dict.hash(key), key) else {
        return Err(Error::NoSuchKey);
    };
    // The RDB body alone: a DUMP payload less its type byte and footer.
    let serialized = crate::persist::rdb::save::dump_payload(&e.value, false)
        .len()
        .saturating_sub(11);
    let now_s = ctx.store.now() / 1000;
    let idle = now_s.saturating_sub(u64::from(e.lru));
    let refcount = match e.value {
        Value::Int(n) if (0..10_000).contains(&n) => i32::MAX,
        _ => 1,
    };
    let line = format!(
        "Value at:{:p} refcount:{refcount} encoding:{} serializedlength:{serialized} lru:{} lru_seconds_idle:{idle}",
        &e.value,
        e.value.encoding(),
        e.lru & 0xff_ffff,
    );
    ctx.reply.simple(&line);
    Ok(())
}

/// RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save the RDB file, empty the data
/// set and load the file back.
fn reload(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (mut save, mut flush) = (true, true);
    for opt in argv.iter_from(2) {
        if is(opt, "merge") {
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
        drop(ctx.store.flush_all());
    }
    let path = crate::persist::rdb_path(&ctx.server.config);
    let loaded = std::fs::read(&path)
        .ok()
        .and_then(|data| crate::persist::load_file(&data, ctx.store, &ctx.server.config).ok());
    if loaded.is_none() {
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
