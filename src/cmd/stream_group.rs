//! Consumer groups (Redis's `t_stream.c`, `xgroupCommand` to
//! `xautoclaimCommand`): XGROUP, XACK, XPENDING, XCLAIM and XAUTOCLAIM.
//! Reading through a group is XREADGROUP in `stream_read.rs`; the group
//! state itself lives in `store/stream.rs`.
//!
//! XCLAIM and XAUTOCLAIM reach the AOF as one idempotent XCLAIM per entry
//! they moved (or dropped from the PEL because the entry is gone), as
//! Redis propagates them.

use super::args::{self, is, subcommand_syntax};
use super::client::write_help;
use super::pubsub::notify;
use super::stream::{
    emit_entry, parse_id_generic, parse_interval, parse_strict_id, stream_read, stream_write,
};
use super::stream_read::{propagate_claim, propagate_group_id};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::store::stream::{Group, Stream, StreamId, INVALID_ENTRIES_READ};
use crate::store::value::Value;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("xgroup|create", xgroup),
    ("xgroup|setid", xgroup),
    ("xgroup|destroy", xgroup),
    ("xgroup|createconsumer", xgroup),
    ("xgroup|delconsumer", xgroup),
    ("xgroup|help", xgroup_help),
    ("xack", xack),
    ("xpending", xpending),
    ("xclaim", xclaim),
    ("xautoclaim", xautoclaim),
];

/// XGROUP HELP: Redis 7.0's lines.
const HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

fn xgroup_help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

/// `-NOGROUP No such key '<key>' or consumer group '<group>'`.
fn no_key_or_group(key: &[u8], group: &[u8], suffix: &str) -> Error {
    Error::raw_owned(format!(
        "NOGROUP No such key '{}' or consumer group '{}'{suffix}",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

/// `-NOGROUP No such consumer group '<group>' for key name '<key>'`.
pub(super) fn no_group_for_key(group: &[u8], key: &[u8]) -> Error {
    Error::raw_owned(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    ))
}

/// XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER (xgroupCommand:
/// options, then the key and group checks, then the subcommand).
fn xgroup(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let opt = argv.get(1);
    let create = is(opt, "create");
    let setid = is(opt, "setid");
    let mut mkstream = false;
    let mut entries_read = INVALID_ENTRIES_READ;
    let mut i = 5;
    while i < argv.len() {
        let arg = argv.get(i);
        if create && is(arg, "mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && is(arg, "entriesread") && i + 1 < argv.len() {
            entries_read = args::int(argv.get(i + 1))?;
            if entries_read < 0 && entries_read != INVALID_ENTRIES_READ {
                return Err(Error::err("value for ENTRIESREAD must be positive or -1"));
            }
            i += 2;
        } else {
            return Err(subcommand_syntax(&argv));
        }
    }
    let db = ctx.db();
    let (key, group) = (argv.get(2), argv.get(3));
    let has_group = stream_write(ctx.store, db, key, false)?.map(|s| s.group(group).is_some());
    if !mkstream {
        let Some(has_group) = has_group else {
            return Err(Error::err(
                "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
            ));
        };
        if !has_group && !create && !is(opt, "destroy") {
            return Err(no_group_for_key(group, key));
        }
    }
    let n = argv.len();
    let now = ctx.store.record_time();
    if create && (5..=8).contains(&n) {
        let id = if argv.get(4) == b"$" {
            match stream_write(ctx.store, db, key, false)? {
                Some(s) => s.last_id,
                None => StreamId::MIN,
            }
        } else {
            parse_strict_id(argv.get(4), 0)?
        };
        let Some(s) = stream_write(ctx.store, db, key, true)? else {
            return Err(Error::NoSuchKey);
        };
        if s.group(group).is_some() {
            return Err(Error::raw("BUSYGROUP Consumer Group name already exists"));
        }
        s.groups
            .insert(group.to_vec(), Group::new(id, entries_read));
        // One change, the stream MKSTREAM created included.
        ctx.count_changes(1);
        ctx.reply.ok();
        notify(ctx, b't', "xgroup-create", key);
    } else if setid && (n == 5 || n == 7) {
        let Some(s) = stream_write(ctx.store, db, key, false)? else {
            return Err(Error::NoSuchKey);
        };
        let id = if argv.get(4) == b"$" {
            s.last_id
        } else {
            parse_id_generic(argv.get(4), 0, false, false)?.id
        };
        if let Some(g) = s.group_mut(group) {
            g.last_id = id;
            g.entries_read = entries_read;
        }
        ctx.store.stats.dirty += 1;
        ctx.reply.ok();
        notify(ctx, b't', "xgroup-setid", key);
    } else if is(opt, "destroy") && n == 4 {
        let removed = match stream_write(ctx.store, db, key, false)? {
            Some(s) => s.groups.remove(group).is_some(),
            None => false,
        };
        ctx.reply.int(i64::from(removed));
        if removed {
            ctx.store.stats.dirty += 1;
            notify(ctx, b't', "xgroup-destroy", key);
            // Readers blocked on the group learn that it is gone.
            ctx.store.signal_ready(db, key);
        }
    } else if is(opt, "createconsumer") && n == 5 {
        let created = match stream_write(ctx.store, db, key, false)? {
            Some(s) => s
                .group_mut(group)
                .is_some_and(|g| g.create_consumer(argv.get(4), now)),
            None => false,
        };
        ctx.reply.int(i64::from(created));
        if created {
            ctx.store.stats.dirty += 1;
            notify(ctx, b't', "xgroup-createconsumer", key);
        }
    } else if is(opt, "delconsumer") && n == 5 {
        let pending = match stream_write(ctx.store, db, key, false)? {
            Some(s) => s.group_mut(group).and_then(|g| g.del_consumer(argv.get(4))),
            None => None,
        };
        ctx.reply.int(pending.unwrap_or(0) as i64);
        if pending.is_some() {
            ctx.store.stats.dirty += 1;
            notify(ctx, b't', "xgroup-delconsumer", key);
        }
    } else {
        return Err(subcommand_syntax(&argv));
    }
    Ok(())
}

/// The stream at `key` and whether it has group `group`, looked up as a
/// read: None when either is missing.
fn stream_with_group<'a>(
    ctx: &'a mut Ctx<'_>,
    key: &[u8],
    group: &[u8],
) -> Result<Option<&'a mut Stream>, Error> {
    let db = ctx.db();
    match super::stream::stream_read_mut(ctx.store, db, key)? {
        Some(s) if s.group(group).is_some() => Ok(Some(s)),
        _ => Ok(None),
    }
}

/// XACK key group id [id ...]
fn xack(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (key, group) = (argv.get(1), argv.get(2));
    if stream_with_group(ctx, key, group)?.is_none() {
        ctx.reply.int(0);
        return Ok(());
    }
    // All IDs are checked first: the reply cannot be an error once some
    // were acknowledged.
    let ids = (3..argv.len())
        .map(|j| parse_strict_id(argv.get(j), 0))
        .collect::<Result<Vec<_>, _>>()?;
    let db = ctx.db();
    let mut acked = 0;
    if let Some(g) = stream_write(ctx.store, db, key, false)?.and_then(|s| s.group_mut(group)) {
        for id in ids {
            if g.ack(id) {
                acked += 1;
            }
        }
    }
    ctx.store.stats.dirty += acked;
    ctx.reply.int(acked as i64);
    Ok(())
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
fn xpending(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let n = argv.len();
    if n != 3 && !(6..=9).contains(&n) {
        return Err(Error::Syntax);
    }
    let (key, group) = (argv.get(1), argv.get(2));
    let mut range = None;
    let mut min_idle = 0i64;
    let mut consumer = None;
    if n >= 6 {
        let mut at = 3;
        if is(argv.get(3), "idle") {
            min_idle = args::int(argv.get(4))?;
            if n < 8 {
                return Err(Error::Syntax);
            }
            at += 2;
        }
        let count = args::int(argv.get(at + 2))?.max(0);
        let (mut start, start_ex) = parse_interval(argv.get(at), 0)?;
        if start_ex {
            start = start
                .incr()
                .ok_or(Error::err("invalid start ID for the interval"))?;
        }
        let (mut end, end_ex) = parse_interval(argv.get(at + 1), u64::MAX)?;
        if end_ex {
            end = end
                .decr()
                .ok_or(Error::err("invalid end ID for the interval"))?;
        }
        if at + 3 < n {
            consumer = Some(argv.get(at + 3));
        }
        range = Some((start, end, count as u64));
    }
    let db = ctx.db();
    let now = ctx.store.record_time() as i64;
    let Some(s) = stream_read(ctx.store, db, key)? else {
        return Err(no_key_or_group(key, group, ""));
    };
    let Some(g) = s.group(group) else {
        return Err(no_key_or_group(key, group, ""));
    };
    let reply = &mut ctx.reply;
    let Some((start, end, mut count)) = range else {
        reply.array(4);
        reply.int(g.pel.len() as i64);
        let (Some(first), Some(last)) = (g.pel.keys().next(), g.pel.keys().next_back()) else {
            reply.null();
            reply.null();
            reply.null_array();
            return Ok(());
        };
        let mut buf = [0u8; 41];
        reply.bulk(first.fmt(&mut buf));
        reply.bulk(last.fmt(&mut buf));
        let owners: Vec<_> = g
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .collect();
        reply.array(owners.len());
        for (name, c) in owners {
            reply.array(2);
            reply.bulk(name);
            reply.bulk(c.pel.len().to_string().as_bytes());
        }
        return Ok(());
    };
    let ids: Box<dyn Iterator<Item = &StreamId>> = match consumer {
        Some(name) => match g.consumers.get(name) {
            Some(c) if start <= end => Box::new(c.pel.range(start..=end)),
            Some(_) => Box::new(std::iter::empty()),
            None => {
                reply.array(0);
                return Ok(());
            }
        },
        None if start <= end => Box::new(g.pel.range(start..=end).map(|(id, _)| id)),
        None => Box::new(std::iter::empty()),
    };
    let mark = reply.defer();
    let mut emitted = 0;
    for id in ids {
        if count == 0 {
            break;
        }
        let Some(nack) = g.pel.get(id) else {
            continue;
        };
        let idle = now - nack.delivery_time as i64;
        if min_idle != 0 && idle < min_idle {
            continue;
        }
        count -= 1;
        emitted += 1;
        reply.array(4);
        let mut buf = [0u8; 41];
        reply.bulk(id.fmt(&mut buf));
        reply.bulk(&nack.consumer);
        reply.int(idle.max(0));
        reply.int(nack.delivery_count as i64);
    }
    reply.finish_deferred_array(mark, emitted);
    Ok(())
}

/// Where XCLAIM/XAUTOCLAIM move entries: the stream, group and consumer.
struct Claim<'a> {
    key: &'a [u8],
    group: &'a [u8],
    consumer: &'a [u8],
}

/// Makes sure the claiming consumer exists, seen now; returns whether it
/// was created (streamLookupConsumer, else streamCreateConsumer).
fn claiming_consumer(g: &mut Group, name: &[u8], now: u64) -> bool {
    if g.touch_consumer(name, Some(now)) {
        return false;
    }
    g.create_consumer(name, now)
}

/// Propagates the state of the pending `id` (or its removal, when it is no
/// longer pending and the XCLAIM replays as a no-op that drops it) as
/// XCLAIM.
fn propagate_pending(
    ctx: &mut Ctx<'_>,
    c: &Claim<'_>,
    id_arg: &[u8],
    nack: (&[u8], u64, u64),
    last_id: StreamId,
) {
    if !ctx.propagating() {
        return;
    }
    let (owner, time, count) = nack;
    let (time, count) = (time.to_string(), count.to_string());
    let mut last = [0u8; 41];
    let db = ctx.db();
    propagate_claim(
        &mut ctx.server.propagation,
        db,
        &[
            c.key,
            c.group,
            owner,
            id_arg,
            time.as_bytes(),
            count.as_bytes(),
            last_id.fmt(&mut last),
        ],
    );
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms]
/// [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID]
/// [LASTID lastid]
fn xclaim(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (key, group) = (argv.get(1), argv.get(2));
    if stream_with_group(ctx, key, group)?.is_none() {
        return Err(no_key_or_group(key, group, ""));
    }
    let min_idle = crate::util::num::parse_i64(argv.get(4))
        .ok_or(Error::err("Invalid min-idle-time argument for XCLAIM"))?
        .max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argv.len() {
        match parse_strict_id(argv.get(j), 0) {
            Ok(id) => ids.push((id, j)),
            Err(_) => break,
        }
        j += 1;
    }
    let now = ctx.store.record_time();
    let (mut force, mut justid) = (false, false);
    let mut retry_count: Option<u64> = None;
    let mut delivery: Option<i64> = None;
    let mut last_id = StreamId::MIN;
    let int_opt = |arg: &[u8], what: &str| {
        crate::util::num::parse_i64(arg)
            .ok_or_else(|| Error::err_owned(format!("Invalid {what} option argument for XCLAIM")))
    };
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = argv.get(j);
        if is(opt, "force") {
            force = true;
        } else if is(opt, "justid") {
            justid = true;
        } else if is(opt, "idle") && more > 0 {
            j += 1;
            delivery = Some((now as i64).wrapping_sub(int_opt(argv.get(j), "IDLE")?));
        } else if is(opt, "time") && more > 0 {
            j += 1;
            delivery = Some(int_opt(argv.get(j), "TIME")?);
        } else if is(opt, "retrycount") && more > 0 {
            j += 1;
            let n = int_opt(argv.get(j), "RETRYCOUNT")?;
            retry_count = u64::try_from(n).ok();
        } else if is(opt, "lastid") && more > 0 {
            j += 1;
            last_id = parse_strict_id(argv.get(j), 0)?;
        } else {
            return Err(Error::err_owned(format!(
                "Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(opt)
            )));
        }
        j += 1;
    }
    // A delivery time in the future or before 1970 is taken as now.
    let delivery_time = match delivery {
        Some(t) if t >= 0 && t <= now as i64 => t as u64,
        _ => now,
    };
    ctx.prevent_propagation();
    let c = Claim {
        key,
        group,
        consumer: argv.get(3),
    };
    let db = ctx.db();
    let mut propagate_last_id = false;
    if let Some(g) = stream_write(ctx.store, db, key, false)?.and_then(|s| s.group_mut(group)) {
        if last_id > g.last_id {
            g.last_id = last_id;
            propagate_last_id = true;
        }
    }
    let mark = ctx.reply.defer();
    let mut claimed = 0;
    let mut created = false;
    for (id, at) in ids {
        let Some(s) = stream_write(ctx.store, db, key, false)? else {
            break;
        };
        let exists = s.entry_exists(id);
        let Some(g) = s.group_mut(group) else {
            break;
        };
        let group_last = g.last_id;
        if !exists {
            // The entry is gone: its NACK goes too.
            if let Some(nack) = g.pel.get(&id) {
                let state = (
                    nack.consumer.clone(),
                    nack.delivery_time,
                    nack.delivery_count,
                );
                g.ack(id);
                ctx.store.stats.dirty += 1;
                propagate_last_id = false;
                propagate_pending(
                    ctx,
                    &c,
                    argv.get(at),
                    (&state.0, state.1, state.2),
                    group_last,
                );
            }
            continue;
        }
        match g.pel.get(&id) {
            None if !force => continue,
            Some(nack) if min_idle != 0 && (now as i64 - nack.delivery_time as i64) < min_idle => {
                continue
            }
            _ => {}
        }
        created |= claiming_consumer(g, c.consumer, now);
        let Some(nack) = g.claim(id, c.consumer) else {
            continue;
        };
        nack.delivery_time = delivery_time;
        match retry_count {
            Some(n) => nack.delivery_count = n,
            None if !justid => nack.delivery_count += 1,
            None => {}
        }
        let state = (
            nack.consumer.clone(),
            nack.delivery_time,
            nack.delivery_count,
        );
        let fields = s.entries.get(&id);
        if justid {
            let mut buf = [0u8; 41];
            ctx.reply.bulk(id.fmt(&mut buf));
        } else if let Some(fields) = fields {
            emit_entry(&mut ctx.reply, &id, fields);
        }
        claimed += 1;
        ctx.store.stats.dirty += 1;
        propagate_last_id = false;
        propagate_pending(
            ctx,
            &c,
            argv.get(at),
            (&state.0, state.1, state.2),
            group_last,
        );
    }
    if propagate_last_id {
        if let Some(g) = stream_write(ctx.store, db, key, false)?.and_then(|s| s.group(group)) {
            let (last, read) = (g.last_id, g.entries_read);
            propagate_group_id(&mut ctx.server.propagation, db, key, group, last, read);
        }
        ctx.store.stats.dirty += 1;
    }
    ctx.reply.finish_deferred_array(mark, claimed);
    if created {
        ctx.store.stats.dirty += 1;
        notify(ctx, b't', "xgroup-createconsumer", key);
    }
    Ok(())
}

/// The largest COUNT XAUTOCLAIM takes (LONG_MAX / sizeof(streamID)).
const AUTOCLAIM_MAX_COUNT: i64 = i64::MAX / 16;

/// The largest COUNT whose scratch array of deleted IDs ferrokv allocates
/// (Redis refuses what its allocator cannot give it).
const AUTOCLAIM_ALLOC_COUNT: i64 = 1 << 32;

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
fn xautoclaim(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (key, group) = (argv.get(1), argv.get(2));
    // Redis looks the key up before it reads the arguments: the lookup
    // counts (a hit, or a miss and its keymiss) even when they are wrong.
    // A wrong type is reported after them.
    let db = ctx.db();
    let has_group = super::stream::stream_read(ctx.store, db, key)
        .map(|s| s.is_some_and(|s| s.group(group).is_some()));
    let min_idle = crate::util::num::parse_i64(argv.get(4))
        .ok_or(Error::err("Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0);
    let (mut start, start_ex) = parse_interval(argv.get(5), 0)?;
    if start_ex {
        start = start
            .incr()
            .ok_or(Error::err("invalid start ID for the interval"))?;
    }
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = argv.get(j);
        if is(opt, "count") && more > 0 {
            count = crate::util::num::parse_i64(argv.get(j + 1))
                .filter(|n| (1..=AUTOCLAIM_MAX_COUNT).contains(n))
                .ok_or(Error::err("COUNT must be > 0"))?;
            j += 1;
        } else if is(opt, "justid") {
            justid = true;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    if !has_group? {
        return Err(no_key_or_group(key, group, ""));
    }
    if count > AUTOCLAIM_ALLOC_COUNT {
        return Err(Error::err(
            "Insufficient memory, failed allocating transient memory, COUNT too high.",
        ));
    }
    ctx.prevent_propagation();
    let c = Claim {
        key,
        group,
        consumer: argv.get(3),
    };
    let now = ctx.store.record_time();
    let mut attempts = count.saturating_mul(10);
    let mut count = count as u64;
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut created = false;
    let mut next = start;
    // The next pending ID after the last one looked at, 0-0 at the end.
    let mut cursor = StreamId::MIN;
    while let Some(s) = stream_write(ctx.store, db, key, false)? {
        let Some(g) = s.group(group) else {
            break;
        };
        let Some(id) = g.pel.range(next..).next().map(|(id, _)| *id) else {
            break;
        };
        if attempts == 0 || count == 0 {
            cursor = id;
            break;
        }
        attempts -= 1;
        let exists = s.entry_exists(id);
        let Some(g) = s.group_mut(group) else {
            break;
        };
        let group_last = g.last_id;
        let Some(nack) = g.pel.get(&id) else {
            break;
        };
        let mut idb = [0u8; 41];
        let id_arg = id.fmt(&mut idb).to_vec();
        let stale = min_idle != 0 && (now as i64 - nack.delivery_time as i64) < min_idle;
        if !exists {
            let state = (
                nack.consumer.clone(),
                nack.delivery_time,
                nack.delivery_count,
            );
            g.ack(id);
            ctx.store.stats.dirty += 1;
            propagate_pending(ctx, &c, &id_arg, (&state.0, state.1, state.2), group_last);
            deleted.push(id);
            count -= 1;
        } else if !stale {
            created |= claiming_consumer(g, c.consumer, now);
            if let Some(nack) = g.claim(id, c.consumer) {
                nack.delivery_time = now;
                if !justid {
                    nack.delivery_count += 1;
                }
                let state = (
                    nack.consumer.clone(),
                    nack.delivery_time,
                    nack.delivery_count,
                );
                claimed.push(id);
                count -= 1;
                ctx.store.stats.dirty += 1;
                propagate_pending(ctx, &c, &id_arg, (&state.0, state.1, state.2), group_last);
            }
        }
        match id.incr() {
            Some(n) => next = n,
            None => break,
        }
    }
    let mut buf = [0u8; 41];
    ctx.reply.array(3);
    ctx.reply.bulk(cursor.fmt(&mut buf));
    ctx.reply.array(claimed.len());
    let s = match ctx.store.peek(db, key).and_then(|e| e.object()) {
        Some(Value::Stream(s)) => Some(&**s),
        _ => None,
    };
    for id in &claimed {
        if justid {
            ctx.reply.bulk(id.fmt(&mut buf));
        } else if let Some(fields) = s.and_then(|s| s.entries.get(id)) {
            emit_entry(&mut ctx.reply, id, fields);
        }
    }
    ctx.reply.array(deleted.len());
    for id in deleted {
        ctx.reply.bulk(id.fmt(&mut buf));
    }
    if created {
        ctx.store.stats.dirty += 1;
        notify(ctx, b't', "xgroup-createconsumer", key);
    }
    Ok(())
}
