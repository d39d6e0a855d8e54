//! Persistence commands: SAVE, BGSAVE, LASTSAVE (Redis's `rdb.c`), and DUMP
//! and RESTORE (`cluster.c`), whose payload is one RDB-encoded value
//! followed by the RDB version and a CRC64, so values move between
//! ferrokv and Redis.

use super::args::{int, is};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::persist::aof::BgStart;
use crate::persist::{self, rdb};
use crate::store::Ttl;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("save", save),
    ("bgsave", bgsave),
    ("bgrewriteaof", bgrewriteaof),
    ("dump", dump),
    ("restore", restore),
    ("restore-asking", restore),
    ("migrate", super::migrate::migrate),
];

const BGSAVE_RUNNING: Error = Error::err("Background save already in progress");

fn save(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    if ctx.server.persistence().rdb_child_running() {
        return Err(BGSAVE_RUNNING);
    }
    match persist::save_now(ctx.store, &mut ctx.server.persistence()) {
        Ok(_) => {
            ctx.reply.ok();
            Ok(())
        }
        // Redis answers a failed SAVE with a bare `-ERR`.
        Err(_) => Err(Error::raw("ERR")),
    }
}

fn bgsave(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let schedule = argv.len() == 2 && is(argv.get(1), "schedule");
    if argv.len() > 1 && !schedule {
        return Err(Error::Syntax);
    }
    if ctx.server.persistence().rdb_child_running() {
        return Err(BGSAVE_RUNNING);
    }
    if ctx.server.aof.rewrite.is_some() {
        // One child at a time, as in Redis.
        if !schedule {
            return Err(Error::err(
                "Another child process is active (AOF?): can't BGSAVE right now. \
                 Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.",
            ));
        }
        ctx.server.persist.bgsave_scheduled = true;
        ctx.reply.simple("Background saving scheduled");
        return Ok(());
    }
    match persist::bgsave_start(ctx.store, &mut ctx.server.persistence()) {
        Ok(()) => {
            ctx.reply.simple("Background saving started");
            Ok(())
        }
        Err(_) => Err(Error::raw("ERR")),
    }
}

/// BGREWRITEAOF: a forked child writes a new base while writes go to a
/// new incremental file; scheduled when a background save runs.
fn bgrewriteaof(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    // Inside EXEC the rewrite is only scheduled (Redis's server.in_exec):
    // the transaction's writes come first. A client runs a command with
    // its MULTI state set only from EXEC.
    let in_exec = ctx.client.multi.is_some();
    match persist::aof::bgrewriteaof(ctx.store, &mut ctx.server.persistence(), in_exec) {
        BgStart::Started => ctx
            .reply
            .simple("Background append only file rewriting started"),
        BgStart::Scheduled => ctx
            .reply
            .simple("Background append only file rewriting scheduled"),
        BgStart::InProgress => {
            return Err(Error::err(
                "Background append only file rewriting already in progress",
            ))
        }
        BgStart::Failed => {
            return Err(Error::err(
                "Can't execute an AOF background rewriting. Please check the server logs for \
                 more information.",
            ))
        }
    }
    Ok(())
}

fn dump(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let compress = ctx.server.config.rdbcompression;
    match ctx.store.get_read(ctx.db(), argv.get(1)) {
        None => ctx.reply.null(),
        Some(e) => {
            let payload = rdb::save::dump_payload(&e.value(), compress);
            ctx.reply.bulk(&payload);
        }
    }
    Ok(())
}

/// Whether a RESTORE's payload gets the deep integrity checks
/// (`sanitize-dump-payload`, as rdbLoadObject decides): `yes` always;
/// `clients` unless loading, from the master, or by a user with
/// `skip-sanitize-payload`; `no` never (the shallow checks only).
fn restore_sanitizes(ctx: &Ctx<'_>) -> bool {
    match ctx.server.config.get("sanitize-dump-payload").as_str() {
        "yes" => true,
        "clients" => {
            let skip = ctx.server.loading
                || ctx.client.kind == crate::server::client::ClientKind::Master
                || ctx
                    .client
                    .user
                    .as_ref()
                    .is_some_and(|u| u.borrow().skip_sanitize == Some(true));
            !skip
        }
        _ => false,
    }
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f],
/// checking in Redis's order: options, existing key, TTL, payload.
fn restore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (mut replace, mut absttl) = (false, false);
    let mut idle: Option<i64> = None;
    let mut freq: Option<i64> = None;
    let mut j = 4;
    while j < argv.len() {
        let a = argv.get(j);
        let more = argv.len() - j > 1;
        if is(a, "replace") {
            replace = true;
        } else if is(a, "absttl") {
            absttl = true;
        } else if is(a, "idletime") && more && freq.is_none() {
            let v = int(argv.get(j + 1))?;
            if v < 0 {
                return Err(Error::err("Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(v);
            j += 1;
        } else if is(a, "freq") && more && idle.is_none() {
            let v = int(argv.get(j + 1))?;
            if !(0..=255).contains(&v) {
                return Err(Error::err("Invalid FREQ value, must be >= 0 and <= 255"));
            }
            freq = Some(v);
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let db = ctx.db();
    let key = argv.get(1);
    if !replace && ctx.store.exists(db, key) {
        return Err(Error::raw("BUSYKEY Target key name already exists."));
    }
    let mut ttl = int(argv.get(2))?;
    if ttl < 0 {
        return Err(Error::err("Invalid TTL value, must be >= 0"));
    }
    let payload = argv.get(3);
    if !rdb::load::verify_payload(payload, ctx.server.config.skip_checksum_validation) {
        return Err(Error::err("DUMP payload version or checksum are wrong"));
    }
    let deep = restore_sanitizes(ctx);
    let checks = &mut ctx.server.stats.dump_payload_sanitizations;
    let value = match rdb::load::payload_value_or_error(payload, deep, checks) {
        Ok(Some(value)) => value,
        Ok(None) => return Err(Error::err("Bad data format")),
        Err(e) => {
            // Redis logs it at verbose level and only answers the client.
            tracing::debug!("{}", e.internal_error_line());
            return Err(Error::err("Bad data format"));
        }
    };
    let now = ctx.store.now();
    if ttl > 0 && !absttl {
        ttl = ttl.saturating_add(now as i64);
    }
    // REPLACE deletes the old key and creates a new one (Redis's dbDelete
    // then dbAdd), so a `new` event fires even when it existed.
    let deleted = replace && ctx.store.delete(db, key);
    if ttl > 0 && ttl as u64 <= now {
        // Already expired: the key is only deleted (when REPLACE found one).
        if deleted {
            ctx.propagate_as(&[b"DEL", key]);
            super::pubsub::notify(ctx, b'g', "del", key);
        }
        ctx.reply.ok();
        return Ok(());
    }
    let at = if ttl > 0 {
        Ttl::At(ttl as u64)
    } else {
        Ttl::None
    };
    ctx.store.set(db, key, value, at);
    if ttl > 0 && !absttl && ctx.propagating() {
        // The TTL reaches the AOF as the absolute time it became.
        let mut args: Vec<&[u8]> = argv.iter_from(0).collect();
        let mut buf = crate::util::num::itoa_buf();
        args[2] = crate::util::num::fmt_i64(ttl, &mut buf);
        args.push(b"ABSTTL");
        ctx.propagate_as(&args);
    }
    let freq = freq.map(|f| f.clamp(0, 255) as u8);
    // A new object: REPLACE does not keep the old key's access stamp.
    let stamp = ctx
        .store
        .restored_stamp(freq, idle.map(|i| i.max(0) as u64));
    if let Some(mut e) = ctx.store.get(db, key) {
        e.set_lru(stamp);
    }
    super::pubsub::notify(ctx, b'g', "restore", key);
    ctx.reply.ok();
    Ok(())
}
