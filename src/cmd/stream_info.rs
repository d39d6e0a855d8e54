//! XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS and XINFO
//! HELP (Redis's `xinfoCommand` and `xinfoReplyWithStreamInfo`), with 7.0's
//! fields: entries-added, max-deleted-entry-id, recorded-first-entry-id,
//! and each group's entries-read and lag.

use super::args::{self, is, subcommand_syntax};
use super::client::write_help;
use super::stream::{emit_entry, emit_range, stream_read};
use super::stream_group::no_group_for_key;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::store::stream::{Group, Stream, StreamId, INVALID_ENTRIES_READ};

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("xinfo|stream", xinfo),
    ("xinfo|groups", xinfo),
    ("xinfo|consumers", xinfo),
    ("xinfo|help", xinfo_help),
];

/// XINFO HELP: Redis 7.0's lines.
const HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

fn xinfo_help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    write_help(ctx, HELP);
    Ok(())
}

/// XINFO STREAM|GROUPS|CONSUMERS key ...
fn xinfo(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let opt = argv.get(1);
    let key = argv.get(2);
    let db = ctx.db();
    let now = ctx.store.record_time() as i64;
    let Some(s) = stream_read(ctx.store, db, key)? else {
        return Err(Error::NoSuchKey);
    };
    let reply = &mut ctx.reply;
    if is(opt, "consumers") && argv.len() == 4 {
        let group = argv.get(3);
        let Some(g) = s.group(group) else {
            return Err(no_group_for_key(group, key));
        };
        reply.array(g.consumers.len());
        for (name, c) in &g.consumers {
            reply.map(3);
            reply.bulk(b"name");
            reply.bulk(name);
            reply.bulk(b"pending");
            reply.int(c.pel.len() as i64);
            reply.bulk(b"idle");
            reply.int((now - c.seen_time as i64).max(0));
        }
    } else if is(opt, "groups") && argv.len() == 3 {
        reply.array(s.groups.len());
        for (name, g) in &s.groups {
            reply.map(6);
            reply.bulk(b"name");
            reply.bulk(name);
            reply.bulk(b"consumers");
            reply.int(g.consumers.len() as i64);
            reply.bulk(b"pending");
            reply.int(g.pel.len() as i64);
            group_progress(reply, s, g);
        }
    } else if is(opt, "stream") {
        stream_info(reply, s, &argv)?;
    } else {
        return Err(subcommand_syntax(&argv));
    }
    Ok(())
}

/// A group's last-delivered-id, entries-read and lag fields.
fn group_progress(reply: &mut ReplyBuf<'_>, s: &Stream, g: &Group) {
    let mut buf = [0u8; 41];
    reply.bulk(b"last-delivered-id");
    reply.bulk(g.last_id.fmt(&mut buf));
    reply.bulk(b"entries-read");
    if g.entries_read == INVALID_ENTRIES_READ {
        reply.null();
    } else {
        reply.int(g.entries_read);
    }
    reply.bulk(b"lag");
    match s.lag(g) {
        Some(lag) => reply.int(lag),
        None => reply.null(),
    }
}

/// XINFO STREAM key [FULL [COUNT count]] (xinfoReplyWithStreamInfo).
fn stream_info(reply: &mut ReplyBuf<'_>, s: &Stream, argv: &Argv<'_>) -> CmdResult {
    let opts = argv.len() - 3;
    let mut full = false;
    let mut count: i64 = 10;
    if opts != 0 {
        if (opts != 1 && opts != 3) || !is(argv.get(3), "full") {
            return Err(subcommand_syntax(argv));
        }
        full = true;
        if opts == 3 {
            if !is(argv.get(4), "count") {
                return Err(subcommand_syntax(argv));
            }
            count = args::int(argv.get(5))?;
            if count < 0 {
                count = 10;
            }
        }
    }
    let count = count as usize;
    let mut buf = [0u8; 41];
    reply.map(if full { 9 } else { 10 });
    reply.bulk(b"length");
    reply.int(s.len() as i64);
    reply.bulk(b"radix-tree-keys");
    reply.int(s.nodes.len() as i64);
    reply.bulk(b"radix-tree-nodes");
    reply.int(s.rax_nodes() as i64);
    reply.bulk(b"last-generated-id");
    reply.bulk(s.last_id.fmt(&mut buf));
    reply.bulk(b"max-deleted-entry-id");
    reply.bulk(s.max_deleted_id.fmt(&mut buf));
    reply.bulk(b"entries-added");
    reply.int(s.entries_added as i64);
    reply.bulk(b"recorded-first-entry-id");
    reply.bulk(s.first_id().fmt(&mut buf));
    if !full {
        reply.bulk(b"groups");
        reply.int(s.groups.len() as i64);
        reply.bulk(b"first-entry");
        match s.entries.iter().next() {
            Some((id, fields)) => emit_entry(reply, id, fields),
            None => reply.null(),
        }
        reply.bulk(b"last-entry");
        match s.entries.iter().next_back() {
            Some((id, fields)) => emit_entry(reply, id, fields),
            None => reply.null(),
        }
        return Ok(());
    }
    reply.bulk(b"entries");
    emit_range(reply, s, StreamId::MIN, StreamId::MAX, count, false);
    let limit = if count == 0 { usize::MAX } else { count };
    reply.bulk(b"groups");
    reply.array(s.groups.len());
    for (name, g) in &s.groups {
        reply.map(7);
        reply.bulk(b"name");
        reply.bulk(name);
        group_progress(reply, s, g);
        reply.bulk(b"pel-count");
        reply.int(g.pel.len() as i64);
        reply.bulk(b"pending");
        reply.array(g.pel.len().min(limit));
        for (id, nack) in g.pel.iter().take(limit) {
            reply.array(4);
            reply.bulk(id.fmt(&mut buf));
            reply.bulk(&nack.consumer);
            reply.int(nack.delivery_time as i64);
            reply.int(nack.delivery_count as i64);
        }
        reply.bulk(b"consumers");
        reply.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            reply.map(4);
            reply.bulk(b"name");
            reply.bulk(cname);
            reply.bulk(b"seen-time");
            reply.int(c.seen_time as i64);
            reply.bulk(b"pel-count");
            reply.int(c.pel.len() as i64);
            reply.bulk(b"pending");
            reply.array(c.pel.len().min(limit));
            for id in c.pel.iter().take(limit) {
                let (time, delivered) = g
                    .pel
                    .get(id)
                    .map_or((0, 0), |n| (n.delivery_time, n.delivery_count));
                reply.array(3);
                reply.bulk(id.fmt(&mut buf));
                reply.int(time as i64);
                reply.int(delivered as i64);
            }
        }
    }
    Ok(())
}
