//! XREAD (Redis's `xreadCommand` without consumer groups), including BLOCK:
//! a client that finds nothing newer than its IDs parks through
//! `exec/blocking.rs` and is served when an XADD moves a stream's last ID
//! past the one it waits after.

use super::args::{self, is};
use super::list_blocking::block;
use super::stream::{emit_range, parse_strict_id, stream_read};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::request::OwnedArgv;
use crate::server::blocking::WaitKind;
use crate::store::stream::StreamId;

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
    let mut block_arg: &[u8] = b"0";
    let mut count: usize = 0;
    let mut streams_at = 0;
    let mut nstreams = 0;
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
            block_arg = argv.get(i);
            deadline = Some(parse_block(block_arg, ctx.store.now())?);
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
    // Run again as XREAD COUNT n BLOCK ms STREAMS keys ids, with `$`
    // resolved to the IDs waited after now, so entries added meanwhile
    // are what it finds (a blocked read returns at most 1000 by default).
    let count = if count == 0 {
        BLOCKED_DEFAULT_COUNT
    } else {
        count
    };
    let mut bufs: Vec<Vec<u8>> = vec![
        b"XREAD".to_vec(),
        b"COUNT".to_vec(),
        count.to_string().into_bytes(),
        b"BLOCK".to_vec(),
        block_arg.to_vec(),
        b"STREAMS".to_vec(),
    ];
    bufs.extend(keys.iter().cloned());
    bufs.extend(ids.iter().map(|id| {
        let mut buf = [0u8; 41];
        id.fmt(&mut buf).to_vec()
    }));
    let rerun = OwnedArgv::from_slices(bufs.iter().map(Vec::as_slice));
    block(
        ctx,
        keys.into_iter(),
        deadline,
        WaitKind::Stream,
        Some(rerun),
    );
    Ok(())
}
