//! XREAD (Redis's `xreadCommand` without consumer groups), including BLOCK:
//! a client that finds nothing newer than its IDs parks through
//! `exec/blocking.rs` and is served when an XADD moves a stream's last ID
//! past the one it waits after.

use super::args::{self, is};
use super::list_blocking::block;
use super::stream::{emit_range, parse_strict_id, stream_read};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::server::blocking::BlockOp;
use crate::store::stream::StreamId;
use crate::store::value::Value;
use crate::store::Store;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[("xread", xread)];

/// COUNT a blocked XREAD uses when none was given
/// (XREAD_BLOCKED_DEFAULT_COUNT).
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// Parses XREAD's BLOCK timeout in milliseconds into an absolute deadline
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
    let mut deadline: Option<u64> = None;
    let mut count: usize = 0;
    let mut streams_at = 0;
    let mut nstreams = 0;
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let opt = argv.get(i);
        if is(opt, "block") && more > 0 {
            if ctx.client.id == 0 {
                let name = String::from_utf8_lossy(argv.get(0)).into_owned();
                return Err(Error::err_owned(format!(
                    "{name} command is not allowed with BLOCK option from scripts"
                )));
            }
            i += 1;
            deadline = Some(parse_block(argv.get(i), ctx.store.now())?);
        } else if is(opt, "count") && more > 0 {
            i += 1;
            count = args::int(argv.get(i))?.max(0) as usize;
        } else if is(opt, "streams") && more > 0 {
            streams_at = i + 1;
            let n = argv.len() - streams_at;
            if !n.is_multiple_of(2) {
                return Err(Error::err(
                    "Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            nstreams = n / 2;
            break;
        } else if is(opt, "group") && more >= 2 {
            return Err(Error::err(
                "The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
            ));
        } else if is(opt, "noack") {
            return Err(Error::err(
                "The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
            ));
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if streams_at == 0 {
        return Err(Error::Syntax);
    }
    let db = ctx.db();
    let mut ids = Vec::with_capacity(nstreams);
    for k in 0..nstreams {
        let key = argv.get(streams_at + k);
        let arg = argv.get(streams_at + nstreams + k);
        // Looked up twice, as Redis does (hits and misses count both).
        let s = stream_read(ctx.store, db, key)?;
        if arg == b"$" {
            ids.push(s.map_or(StreamId::MIN, |s| s.last_id));
            continue;
        }
        if arg == b">" {
            return Err(Error::err(
                "The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
            ));
        }
        ids.push(parse_strict_id(arg, 0)?);
    }
    let mark = ctx.reply.defer();
    let mut served = 0;
    for (k, gt) in ids.iter().enumerate() {
        let key = argv.get(streams_at + k);
        let Some(s) = stream_read(ctx.store, db, key)? else {
            continue;
        };
        if s.last_valid_id() <= *gt {
            continue;
        }
        served += 1;
        if !ctx.reply.is_resp3() {
            ctx.reply.array(2);
        }
        ctx.reply.bulk(key);
        let start = gt.incr().unwrap_or(StreamId::MAX);
        emit_range(&mut ctx.reply, s, start, StreamId::MAX, count, false);
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
    let Some(deadline) = deadline else {
        ctx.reply.null_array();
        return Ok(());
    };
    if ctx.client.deny_blocking {
        ctx.reply.null_array();
        return Ok(());
    }
    let keys: Vec<Vec<u8>> = (0..nstreams)
        .map(|k| argv.get(streams_at + k).to_vec())
        .collect();
    let op = BlockOp::XRead {
        keys: keys.iter().cloned().zip(ids.iter().copied()).collect(),
        count: if count == 0 {
            BLOCKED_DEFAULT_COUNT
        } else {
            count
        },
    };
    block(ctx, keys.into_iter(), deadline, op);
    Ok(())
}

/// Serves a client blocked by XREAD on `key` when the stream there has an
/// ID past the one it waits after; false (nothing written) otherwise
/// (serveClientsBlockedOnStreamKey).
pub fn serve_blocked(
    store: &mut Store,
    db: usize,
    key: &[u8],
    op: &BlockOp,
    reply: &mut ReplyBuf<'_>,
) -> bool {
    let BlockOp::XRead { keys, count } = op else {
        return false;
    };
    let Some(gt) = keys.iter().find(|(k, _)| k == key).map(|(_, id)| *id) else {
        return false;
    };
    let Some(Value::Stream(s)) = store.get(db, key).map(|e| &e.value) else {
        return false;
    };
    if s.last_id <= gt {
        return false;
    }
    if reply.is_resp3() {
        reply.map(1);
    } else {
        reply.array(1);
        reply.array(2);
    }
    reply.bulk(key);
    let start = gt.incr().unwrap_or(StreamId::MAX);
    emit_range(reply, s, start, StreamId::MAX, *count, false);
    true
}
