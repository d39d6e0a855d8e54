//! XREAD and XREADGROUP (Redis's `xreadCommand`), including BLOCK: a client
//! that finds nothing to read parks through `exec/blocking.rs` and its
//! command runs again when a stream it waits on is written.
//!
//! A group read delivers the entries after the group's last ID, records
//! each in the pending entries list of the group and of the consumer
//! (created on first use), and reaches the AOF as Redis writes it: one
//! XCLAIM per delivered entry, XGROUP SETID after a NOACK read, XGROUP
//! CREATECONSUMER for a consumer a NOACK read created. A group reader
//! blocked on a stream whose key or group goes is woken with Redis's
//! errors.

use super::args::{self, is};
use super::list_blocking::block;
use super::pubsub::notify;
use super::stream::{emit_entry, emit_range, parse_strict_id, stream_read_mut};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::net::request::OwnedArgv;
use crate::server::blocking::WaitKind;
use crate::server::propagate::Propagation;
use crate::store::stream::{Stream, StreamId};

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[("xread", xread), ("xreadgroup", xreadgroup)];

/// COUNT a blocked read uses when none was given
/// (XREAD_BLOCKED_DEFAULT_COUNT).
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// The ID standing for `>` (new entries of the group) once parsed.
const NEW_ENTRIES: StreamId = StreamId::MAX;

/// Parses a BLOCK timeout in milliseconds into an absolute deadline
/// (0 = forever), as getTimeoutFromObjectOrReply with UNIT_MILLISECONDS.
fn parse_block(arg: &[u8], now_ms: u64) -> Result<u64, Error> {
    let ms = crate::util::num::parse_i64(arg).ok_or(Error::TimeoutNotInteger)?;
    if ms < 0 {
        return Err(Error::err("timeout is negative"));
    }
    if ms == 0 {
        return Ok(0);
    }
    if ms > i64::MAX - now_ms as i64 {
        return Err(Error::err("timeout is out of range"));
    }
    Ok(now_ms + ms as u64)
}

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
fn xread(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    read_generic(ctx, argv, false)
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds]
/// [NOACK] STREAMS key [key ...] id [id ...]
fn xreadgroup(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    // Its effects are propagated as XCLAIM and XGROUP commands, never as
    // the read itself.
    ctx.prevent_propagation();
    read_generic(ctx, argv, true)
}

/// What XREAD/XREADGROUP were asked.
struct ReadArgs<'a> {
    deadline: Option<u64>,
    block_arg: &'a [u8],
    count: usize,
    streams_at: usize,
    nstreams: usize,
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
}

/// Parses the options before the stream list.
fn parse_read_args<'a>(
    ctx: &Ctx<'_>,
    argv: &Argv<'a>,
    xreadgroup: bool,
) -> Result<ReadArgs<'a>, Error> {
    let mut a = ReadArgs {
        deadline: None,
        block_arg: b"0",
        count: 0,
        streams_at: 0,
        nstreams: 0,
        group: None,
        noack: false,
    };
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let opt = argv.get(i);
        if is(opt, "block") && more > 0 {
            if ctx.client.script {
                let name = String::from_utf8_lossy(argv.get(0)).into_owned();
                return Err(Error::err_owned(format!(
                    "{name} command is not allowed with BLOCK option from scripts"
                )));
            }
            i += 1;
            a.block_arg = argv.get(i);
            a.deadline = Some(parse_block(a.block_arg, ctx.store.now())?);
        } else if is(opt, "count") && more > 0 {
            i += 1;
            a.count = args::int(argv.get(i))?.max(0) as usize;
        } else if is(opt, "streams") && more > 0 {
            a.streams_at = i + 1;
            let n = argv.len() - a.streams_at;
            if !n.is_multiple_of(2) {
                return Err(Error::err(
                    "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            a.nstreams = n / 2;
            break;
        } else if is(opt, "group") && more >= 2 {
            if !xreadgroup {
                return Err(Error::err(
                    "The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            a.group = Some((argv.get(i + 1), argv.get(i + 2)));
            i += 2;
        } else if is(opt, "noack") {
            if !xreadgroup {
                return Err(Error::err(
                    "The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            a.noack = true;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if a.streams_at == 0 {
        return Err(Error::Syntax);
    }
    if xreadgroup && a.group.is_none() {
        return Err(Error::err("Missing GROUP option for XREADGROUP"));
    }
    Ok(a)
}

/// The stream at `key`, looked up as a read; served after blocking, without
/// counting a keyspace hit or miss or raising `keymiss`, as Redis looks a
/// ready key up for its waiters (LOOKUP_NONOTIFY | LOOKUP_NOSTATS).
fn lookup<'a>(
    store: &'a mut crate::store::Store,
    db: usize,
    key: &[u8],
    served: bool,
) -> Result<Option<&'a mut Stream>, Error> {
    if !served {
        return stream_read_mut(store, db, key);
    }
    match store.get(db, key) {
        None => Ok(None),
        // Not `into_value_mut`, which would rebuild an embedded string.
        Some(e) => match e.into_object_mut() {
            Some(crate::store::value::Value::Stream(s)) => Ok(Some(s)),
            _ => Err(Error::WrongType),
        },
    }
}

/// The IDs to read after, one per stream, checking the keys and groups in
/// argument order as Redis does.
fn parse_ids(ctx: &mut Ctx<'_>, argv: &Argv<'_>, a: &ReadArgs<'_>) -> Result<Vec<StreamId>, Error> {
    let db = ctx.db();
    let mut ids = Vec::with_capacity(a.nstreams);
    for k in 0..a.nstreams {
        let key = argv.get(a.streams_at + k);
        let arg = argv.get(a.streams_at + a.nstreams + k);
        if !ctx
            .server
            .blocking
            .may_serve_from(ctx.client.reprocessing, key)
        {
            // Served after blocking, only the ready stream is read.
            ids.push(StreamId::MAX);
            continue;
        }
        // Looked up here and again below, as Redis's xreadCommand does (at
        // once, hits and misses count both).
        let served = ctx.client.reprocessing;
        let s = match lookup(ctx.store, db, key, served).map(|s| s.map(|s| &*s)) {
            Err(_) if ctx.client.reprocessing && a.group.is_some() => None,
            r => r?,
        };
        if let Some((group, _)) = a.group {
            if ctx.client.reprocessing {
                // A blocked group reader learns that what it waited on went.
                let Some(s) = s else {
                    return Err(Error::raw("UNBLOCKED the stream key no longer exists"));
                };
                if s.group(group).is_none() {
                    return Err(Error::raw(
                        "NOGROUP the consumer group this client was blocked on no longer exists",
                    ));
                }
            } else if s.is_none_or(|s| s.group(group).is_none()) {
                return Err(Error::raw_owned(format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(group)
                )));
            }
        }
        if arg == b"$" {
            if a.group.is_some() {
                return Err(Error::err(
                    "The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                ));
            }
            ids.push(s.map_or(StreamId::MIN, |s| s.last_id));
            continue;
        }
        if arg == b">" {
            if a.group.is_none() {
                return Err(Error::err(
                    "The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ));
            }
            ids.push(NEW_ENTRIES);
            continue;
        }
        ids.push(parse_strict_id(arg, 0)?);
    }
    Ok(ids)
}

/// XREAD and XREADGROUP (xreadCommand).
fn read_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, xreadgroup: bool) -> CmdResult {
    let a = parse_read_args(ctx, &argv, xreadgroup)?;
    let ids = parse_ids(ctx, &argv, &a)?;
    let db = ctx.db();
    let now = ctx.store.record_time();
    let mark = ctx.reply.defer();
    let mut served = 0;
    let mut created = Vec::new();
    for (k, gt) in ids.iter().enumerate() {
        let key = argv.get(a.streams_at + k);
        if !ctx
            .server
            .blocking
            .may_serve_from(ctx.client.reprocessing, key)
        {
            continue;
        }
        let Some(s) = lookup(ctx.store, db, key, ctx.client.reprocessing)? else {
            continue;
        };
        let Some((group, consumer)) = a.group else {
            if s.last_valid_id() <= *gt {
                continue;
            }
            served += 1;
            if !ctx.reply.is_resp3() {
                ctx.reply.array(2);
            }
            ctx.reply.bulk(key);
            let start = gt.incr().unwrap_or(StreamId::MAX);
            emit_range(&mut ctx.reply, s, start, StreamId::MAX, a.count, false);
            continue;
        };
        let Some(g) = s.group(group) else {
            continue;
        };
        let history = *gt != NEW_ENTRIES;
        let after = if history {
            *gt
        } else {
            // Served after blocking, Redis compares with the last ID ever
            // added; at once, with the last entry present.
            let top = if ctx.client.reprocessing {
                s.last_id
            } else {
                s.last_valid_id()
            };
            if top <= g.last_id {
                continue;
            }
            g.last_id
        };
        served += 1;
        if !ctx.reply.is_resp3() {
            ctx.reply.array(2);
        }
        ctx.reply.bulk(key);
        let Some(g) = s.group_mut(group) else {
            continue;
        };
        let new_consumer = !g.touch_consumer(consumer, Some(now));
        if new_consumer {
            g.create_consumer(consumer, now);
            created.push(key);
            if a.noack {
                ctx.server
                    .propagation
                    .also(db, &[b"XGROUP", b"CREATECONSUMER", key, group, consumer]);
            }
        }
        let start = after.incr().unwrap_or(StreamId::MAX);
        let read = GroupRead {
            key,
            group,
            consumer,
            noack: a.noack,
            now,
        };
        if history {
            reply_from_pel(&mut ctx.reply, s, &read, start, a.count);
        } else {
            deliver_range(
                &mut ctx.reply,
                &mut ctx.server.propagation,
                db,
                s,
                &read,
                start,
                a.count,
            );
        }
        // The read, and the consumer it created; served after blocking,
        // only the consumer (Redis 7.0's serveClientsBlockedOnStreamKey).
        ctx.store.stats.dirty += u64::from(!ctx.client.reprocessing) + u64::from(new_consumer);
    }
    for key in created {
        notify(ctx, b't', "xgroup-createconsumer", key);
    }
    if served > 0 {
        if ctx.reply.is_resp3() {
            ctx.reply.finish_deferred_map(mark, served);
        } else {
            ctx.reply.finish_deferred_array(mark, served);
        }
        return Ok(());
    }
    ctx.reply.truncate(mark);
    let Some(deadline) = a.deadline else {
        ctx.reply.null_array();
        return Ok(());
    };
    if ctx.client.deny_blocking {
        ctx.reply.null_array();
        return Ok(());
    }
    park(ctx, &argv, &a, &ids, deadline);
    Ok(())
}

/// Blocks the reader: its command runs again when a stream is written, as
/// `XREAD[GROUP] ... COUNT n BLOCK ms ... STREAMS keys ids` with `$`
/// resolved to the IDs waited after now, so entries added meanwhile are
/// what it finds (a blocked read returns at most 1000 by default).
fn park(ctx: &mut Ctx<'_>, argv: &Argv<'_>, a: &ReadArgs<'_>, ids: &[StreamId], deadline: u64) {
    let keys: Vec<Vec<u8>> = (0..a.nstreams)
        .map(|k| argv.get(a.streams_at + k).to_vec())
        .collect();
    let count = if a.count == 0 {
        BLOCKED_DEFAULT_COUNT
    } else {
        a.count
    };
    let mut bufs: Vec<Vec<u8>> = Vec::with_capacity(10 + 2 * keys.len());
    match a.group {
        Some((group, consumer)) => bufs.extend([
            b"XREADGROUP".to_vec(),
            b"GROUP".to_vec(),
            group.to_vec(),
            consumer.to_vec(),
        ]),
        None => bufs.push(b"XREAD".to_vec()),
    }
    bufs.extend([
        b"COUNT".to_vec(),
        count.to_string().into_bytes(),
        b"BLOCK".to_vec(),
        a.block_arg.to_vec(),
    ]);
    if a.noack {
        bufs.push(b"NOACK".to_vec());
    }
    bufs.push(b"STREAMS".to_vec());
    bufs.extend(keys.iter().cloned());
    bufs.extend(ids.iter().map(|id| {
        if *id == NEW_ENTRIES && a.group.is_some() {
            return b">".to_vec();
        }
        let mut buf = [0u8; 41];
        id.fmt(&mut buf).to_vec()
    }));
    let rerun = OwnedArgv::from_slices(bufs.iter().map(Vec::as_slice));
    let kind = if a.group.is_some() {
        WaitKind::StreamGroup
    } else {
        WaitKind::Stream
    };
    block(ctx, keys.into_iter(), deadline, kind, Some(rerun));
}

/// Who reads, for the helpers that serve a group read.
struct GroupRead<'a> {
    key: &'a [u8],
    group: &'a [u8],
    consumer: &'a [u8],
    noack: bool,
    now: u64,
}

/// Delivers the entries from `start` on to the reader's group
/// (streamReplyWithRange with a group): the group's last ID and read
/// counter advance, each entry enters the PEL (unless NOACK) and is
/// propagated as XCLAIM; a NOACK read propagates the new last ID as
/// XGROUP SETID.
fn deliver_range(
    reply: &mut ReplyBuf<'_>,
    prop: &mut Propagation,
    db: usize,
    s: &mut Stream,
    r: &GroupRead<'_>,
    start: StreamId,
    count: usize,
) {
    let ids: Vec<StreamId> = s
        .range(start, StreamId::MAX, false)
        .map(|(id, _)| *id)
        .take(if count == 0 { usize::MAX } else { count })
        .collect();
    reply.array(ids.len());
    let mut moved_last_id = false;
    for id in ids {
        if s.group(r.group).is_some_and(|g| id > g.last_id) {
            s.advance_group(r.group, id);
            moved_last_id = true;
        }
        if let Some(fields) = s.entries.get(&id) {
            emit_entry(reply, &id, fields);
        }
        let Some(g) = s.group_mut(r.group) else {
            continue;
        };
        if r.noack {
            continue;
        }
        g.deliver(id, r.consumer, r.now);
        if prop.on {
            let (mut idb, mut lastb) = ([0u8; 41], [0u8; 41]);
            let time = r.now.to_string();
            propagate_claim(
                prop,
                db,
                &[
                    r.key,
                    r.group,
                    r.consumer,
                    id.fmt(&mut idb),
                    time.as_bytes(),
                    b"1",
                    g.last_id.fmt(&mut lastb),
                ],
            );
        }
    }
    if r.noack && moved_last_id {
        if let Some(g) = s.group(r.group) {
            propagate_group_id(prop, db, r.key, r.group, g.last_id, g.entries_read);
        }
    }
}

/// Replays the reader's own pending entries from `start` on
/// (streamReplyWithRangeFromConsumerPEL): each counts as delivered again;
/// an entry since deleted shows as its ID with a null body.
fn reply_from_pel(
    reply: &mut ReplyBuf<'_>,
    s: &mut Stream,
    r: &GroupRead<'_>,
    start: StreamId,
    count: usize,
) {
    let Some(c) = s.group(r.group).and_then(|g| g.consumers.get(r.consumer)) else {
        reply.array(0);
        return;
    };
    let ids: Vec<StreamId> = c
        .pel
        .range(start..)
        .copied()
        .take(if count == 0 { usize::MAX } else { count })
        .collect();
    reply.array(ids.len());
    for id in ids {
        match s.entries.get(&id) {
            Some(fields) => {
                emit_entry(reply, &id, fields);
                if let Some(n) = s.group_mut(r.group).and_then(|g| g.pel.get_mut(&id)) {
                    n.delivery_time = r.now;
                    n.delivery_count += 1;
                }
            }
            None => {
                reply.array(2);
                let mut buf = [0u8; 41];
                reply.bulk(id.fmt(&mut buf));
                reply.null_array();
            }
        }
    }
}

/// Propagates a delivery or claim as Redis's idempotent XCLAIM
/// (streamPropagateXCLAIM): `args` are key, group, consumer, ID, delivery
/// time, delivery count and the group's last ID.
pub(super) fn propagate_claim(prop: &mut Propagation, db: usize, args: &[&[u8]; 7]) {
    let [key, group, consumer, id, time, count, last] = *args;
    prop.also(
        db,
        &[
            b"XCLAIM",
            key,
            group,
            consumer,
            b"0",
            id,
            b"TIME",
            time,
            b"RETRYCOUNT",
            count,
            b"FORCE",
            b"JUSTID",
            b"LASTID",
            last,
        ],
    );
}

/// Propagates a group's last ID and read counter as XGROUP SETID
/// (streamPropagateGroupID).
pub(super) fn propagate_group_id(
    prop: &mut Propagation,
    db: usize,
    key: &[u8],
    group: &[u8],
    last_id: StreamId,
    entries_read: i64,
) {
    if !prop.on {
        return;
    }
    let mut buf = [0u8; 41];
    let read = entries_read.to_string();
    prop.also(
        db,
        &[
            b"XGROUP",
            b"SETID",
            key,
            group,
            last_id.fmt(&mut buf),
            b"ENTRIESREAD",
            read.as_bytes(),
        ],
    );
}
