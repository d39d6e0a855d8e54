//! List commands (Redis's `t_list.c`): pushes, pops, ranges, LINDEX, LSET,
//! LINSERT, LREM, LTRIM, LPOS, LMOVE, RPOPLPUSH and LMPOP. The blocking
//! forms live in `list_blocking.rs`. Argument checks happen in the same
//! order as Redis's, so the same error wins when several apply.

use super::args::{self, is};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::store::list::{End, List};
use crate::store::value::Value;
use crate::store::Store;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("lpush", lpush),
    ("rpush", rpush),
    ("lpushx", lpushx),
    ("rpushx", rpushx),
    ("lpop", lpop),
    ("rpop", rpop),
    ("llen", llen),
    ("lrange", lrange),
    ("lindex", lindex),
    ("lset", lset),
    ("linsert", linsert),
    ("lrem", lrem),
    ("ltrim", ltrim),
    ("lpos", lpos),
    ("lmove", lmove),
    ("rpoplpush", rpoplpush),
    ("lmpop", lmpop),
];

/// The list at `key` for writing: None when missing, WRONGTYPE for other
/// types (lookupKeyWrite + checkType).
pub(super) fn list_mut<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
) -> Result<Option<&'a mut List>, Error> {
    match store.get(db, key) {
        None => Ok(None),
        Some(e) => match e.into_value_mut() {
            Value::List(l) => Ok(Some(l)),
            _ => Err(Error::WrongType),
        },
    }
}

/// As [`list_mut`] for reads (counts keyspace hits and misses).
fn list_read<'a>(store: &'a mut Store, db: usize, key: &[u8]) -> Result<Option<&'a List>, Error> {
    match store.get_read(db, key) {
        None => Ok(None),
        Some(e) => match e.into_ref().object() {
            Some(Value::List(l)) => Ok(Some(l)),
            _ => Err(Error::WrongType),
        },
    }
}

/// After removing elements: deletes the key when its list is empty, else
/// signals the change (Redis's listElementsRemoved).
pub(super) fn after_removal(store: &mut Store, db: usize, key: &[u8]) {
    let empty = matches!(store.get(db, key).and_then(|e| e.into_ref().object()), Some(Value::List(l)) if l.is_empty());
    if empty {
        store.delete(db, key);
    } else {
        store.signal_modified(db, key);
    }
}

/// Parses LEFT/RIGHT (getListPositionFromObjectOrReply).
pub(super) fn parse_end(arg: &[u8]) -> Result<End, Error> {
    if is(arg, "left") {
        Ok(End::Left)
    } else if is(arg, "right") {
        Ok(End::Right)
    } else {
        Err(Error::Syntax)
    }
}

/// Redis's getRangeLongFromObjectOrReply with a message: the message
/// answers both a non-integer and a value outside `min..=max`.
pub(super) fn range_long(arg: &[u8], min: i64, msg: &'static str) -> Result<i64, Error> {
    match crate::util::num::parse_i64(arg) {
        Some(n) if n >= min => Ok(n),
        _ => Err(Error::err(msg)),
    }
}

fn push(ctx: &mut Ctx<'_>, argv: Argv<'_>, end: End, only_existing: bool) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    let len = match list_mut(ctx.store, db, key)? {
        Some(l) => {
            for v in argv.iter_from(2) {
                l.push(end, v);
            }
            let n = l.len();
            ctx.store.signal_modified(db, key);
            n
        }
        None if only_existing => 0,
        None => {
            let mut l = List::new();
            for v in argv.iter_from(2) {
                l.push(end, v);
            }
            let n = l.len();
            ctx.store.insert_new(db, key, Value::List(Box::new(l)));
            n
        }
    };
    if len > 0 {
        let event = if end == End::Left { "lpush" } else { "rpush" };
        super::pubsub::notify(ctx, b'l', event, key);
        ctx.count_changes(argv.len() as u64 - 2);
    }
    ctx.reply.int(len as i64);
    Ok(())
}

fn lpush(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    push(ctx, argv, End::Left, false)
}

fn rpush(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    push(ctx, argv, End::Right, false)
}

fn lpushx(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    push(ctx, argv, End::Left, true)
}

fn rpushx(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    push(ctx, argv, End::Right, true)
}

/// LPOP/RPOP key [count] (popGenericCommand).
fn pop(ctx: &mut Ctx<'_>, argv: Argv<'_>, end: End) -> CmdResult {
    if argv.len() > 3 {
        return Err(Error::WrongArity(
            String::from_utf8_lossy(argv.get(0)).to_lowercase(),
        ));
    }
    let count = match argv.try_get(2) {
        Some(a) => Some(range_long(a, 0, "value is out of range, must be positive")? as usize),
        None => None,
    };
    let db = ctx.db();
    let key = argv.get(1);
    let Some(l) = list_mut(ctx.store, db, key)? else {
        if count.is_some() {
            ctx.reply.null_array();
        } else {
            ctx.reply.null();
        }
        return Ok(());
    };
    match count {
        None => {
            match l.peek(end) {
                Some(v) => ctx.reply.bulk(v),
                None => ctx.reply.null(),
            }
            l.drop_end(end);
        }
        Some(0) => {
            ctx.reply.array(0);
            return Ok(());
        }
        Some(n) => {
            let popped = n.min(l.len());
            pop_range_reply(l, end, n, &mut ctx.reply);
            ctx.count_changes(popped as u64);
        }
    }
    after_removal(ctx.store, db, key);
    let event = if end == End::Left { "lpop" } else { "rpop" };
    super::pubsub::notify(ctx, b'l', event, key);
    if !ctx.store.exists(db, key) {
        super::pubsub::notify(ctx, b'g', "del", key);
    }
    Ok(())
}

/// Pops up to `n` elements from `end`, replying with an array of them.
fn pop_range_reply(l: &mut List, end: End, n: usize, reply: &mut ReplyBuf<'_>) {
    let n = n.min(l.len());
    reply.array(n);
    for _ in 0..n {
        if let Some(v) = l.peek(end) {
            reply.bulk(v);
        }
        l.drop_end(end);
    }
}

fn lpop(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    pop(ctx, argv, End::Left)
}

fn rpop(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    pop(ctx, argv, End::Right)
}

fn llen(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let n = list_read(ctx.store, db, argv.get(1))?.map_or(0, List::len);
    ctx.reply.int(n as i64);
    Ok(())
}

fn lrange(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let start = args::int(argv.get(2))?;
    let end = args::int(argv.get(3))?;
    let db = ctx.db();
    let Some(l) = list_read(ctx.store, db, argv.get(1))? else {
        ctx.reply.array(0);
        return Ok(());
    };
    // addListRangeReply's clamping.
    let len = l.len() as i64;
    let mut start = if start < 0 { len + start } else { start };
    let mut end = if end < 0 { len + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        ctx.reply.array(0);
        return Ok(());
    }
    if end >= len {
        end = len - 1;
    }
    let n = (end - start + 1) as usize;
    ctx.reply.array(n);
    for v in l.iter_from(start as usize).take(n) {
        ctx.reply.bulk(v);
    }
    Ok(())
}

fn lindex(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let Some(l) = list_read(ctx.store, db, argv.get(1))? else {
        ctx.reply.null();
        return Ok(());
    };
    let index = args::int(argv.get(2))?;
    match l.resolve(index).and_then(|i| l.get(i)) {
        Some(v) => ctx.reply.bulk(v),
        None => ctx.reply.null(),
    }
    Ok(())
}

fn lset(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    let Some(l) = list_mut(ctx.store, db, key)? else {
        return Err(Error::NoSuchKey);
    };
    let index = args::int(argv.get(2))?;
    let Some(i) = l.resolve(index) else {
        return Err(Error::err("index out of range"));
    };
    l.set(i, argv.get(3));
    ctx.store.signal_modified(db, key);
    super::pubsub::notify(ctx, b'l', "lset", key);
    ctx.reply.ok();
    Ok(())
}

fn linsert(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let after = if is(argv.get(2), "after") {
        true
    } else if is(argv.get(2), "before") {
        false
    } else {
        return Err(Error::Syntax);
    };
    let db = ctx.db();
    let key = argv.get(1);
    let Some(l) = list_mut(ctx.store, db, key)? else {
        ctx.reply.int(0);
        return Ok(());
    };
    let pivot = argv.get(3);
    let Some(pos) = l.iter().position(|v| v == pivot) else {
        ctx.reply.int(-1);
        return Ok(());
    };
    l.insert(pos + usize::from(after), argv.get(4));
    let n = l.len();
    ctx.store.signal_modified(db, key);
    super::pubsub::notify(ctx, b'l', "linsert", key);
    ctx.reply.int(n as i64);
    Ok(())
}

fn lrem(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let count = args::int(argv.get(2))?;
    let db = ctx.db();
    let key = argv.get(1);
    let Some(l) = list_mut(ctx.store, db, key)? else {
        ctx.reply.int(0);
        return Ok(());
    };
    let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    let removed = l.remove_matching(argv.get(3), limit, count < 0);
    if removed > 0 {
        after_removal(ctx.store, db, key);
        super::pubsub::notify_removed(ctx, b'l', "lrem", key);
        ctx.count_changes(removed as u64);
    }
    ctx.reply.int(removed as i64);
    Ok(())
}

fn ltrim(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let start = args::int(argv.get(2))?;
    let end = args::int(argv.get(3))?;
    let db = ctx.db();
    let key = argv.get(1);
    let Some(l) = list_mut(ctx.store, db, key)? else {
        ctx.reply.ok();
        return Ok(());
    };
    let len = l.len() as i64;
    let mut start = if start < 0 { len + start } else { start };
    let end = if end < 0 { len + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        l.retain_range(1, 0);
    } else {
        l.retain_range(start as usize, end.min(len - 1) as usize);
    }
    let removed = len - l.len() as i64;
    if removed == 0 {
        ctx.store.signal_uncounted(db, key);
    } else {
        after_removal(ctx.store, db, key);
        ctx.count_changes(removed as u64);
    }
    super::pubsub::notify_removed(ctx, b'l', "ltrim", key);
    ctx.reply.ok();
    Ok(())
}

fn lpos(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut rank: i64 = 1;
    let mut count: i64 = -1;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < argv.len() {
        let opt = argv.get(j);
        let more = j + 1 < argv.len();
        if is(opt, "rank") && more {
            j += 1;
            rank = args::int(argv.get(j))?;
            if rank == 0 {
                return Err(Error::err(
                    "RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if is(opt, "count") && more {
            j += 1;
            count = range_long(argv.get(j), 0, "COUNT can't be negative")?;
        } else if is(opt, "maxlen") && more {
            j += 1;
            maxlen = range_long(argv.get(j), 0, "MAXLEN can't be negative")?;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    // A negative rank searches from the tail; Redis negates with C's
    // wrap-around, so LLONG_MIN stays negative (and matches at once).
    let from_tail = rank < 0;
    if from_tail {
        rank = rank.wrapping_neg();
    }
    let db = ctx.db();
    let ele = argv.get(2);
    let Some(l) = list_read(ctx.store, db, argv.get(1))? else {
        if count != -1 {
            ctx.reply.array(0);
        } else {
            ctx.reply.null();
        }
        return Ok(());
    };
    let len = l.len() as i64;
    let mark = (count != -1).then(|| ctx.reply.defer());
    let mut matches: i64 = 0;
    let mut found: Option<i64> = None;
    let mut emitted = 0usize;
    let iter: Box<dyn Iterator<Item = &[u8]>> = if from_tail {
        Box::new(l.iter_rev_from(l.len().saturating_sub(1)))
    } else {
        Box::new(l.iter())
    };
    for (index, v) in (0_i64..).zip(iter) {
        if maxlen != 0 && index >= maxlen {
            break;
        }
        if v != ele {
            continue;
        }
        matches += 1;
        let at = if from_tail { len - index - 1 } else { index };
        if matches >= rank {
            if mark.is_some() {
                emitted += 1;
                ctx.reply.int(at);
                if count != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= count {
                    break;
                }
            } else {
                found = Some(at);
                break;
            }
        }
    }
    match mark {
        Some(m) => ctx.reply.finish_deferred_array(m, emitted),
        None => match found {
            Some(i) => ctx.reply.int(i),
            None => ctx.reply.null(),
        },
    }
    Ok(())
}

/// Moves the element at `from` of `src` to `to` of `dst` and replies with
/// it; the source must be a non-empty list. WRONGTYPE when `dst` holds
/// another type (the element then stays). Redis's lmoveGenericCommand.
pub(super) fn move_element(
    store: &mut Store,
    db: usize,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
    reply: &mut ReplyBuf<'_>,
) -> CmdResult {
    if src != dst {
        list_mut(store, db, dst)?;
    }
    let Some(v) = list_mut(store, db, src)?.and_then(|l| l.pop(from)) else {
        reply.null();
        return Ok(());
    };
    match list_mut(store, db, dst)? {
        Some(l) => {
            l.push(to, &v);
            store.signal_modified(db, dst);
        }
        None => {
            let mut l = List::new();
            l.push(to, &v);
            store.insert_new(db, dst, Value::List(Box::new(l)));
        }
    }
    after_removal(store, db, src);
    reply.bulk(&v);
    Ok(())
}

/// LMOVE/RPOPLPUSH once the ends are parsed.
pub(super) fn lmove_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, from: End, to: End) -> CmdResult {
    let db = ctx.db();
    let (src, dst) = (argv.get(1), argv.get(2));
    match list_mut(ctx.store, db, src)? {
        Some(l) if !l.is_empty() => {}
        _ => {
            ctx.reply.null();
            return Ok(());
        }
    }
    move_element(ctx.store, db, src, dst, from, to, &mut ctx.reply)?;
    super::list_blocking::notify_move(ctx, src, dst, from, to);
    ctx.count_changes(1);
    Ok(())
}

fn lmove(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let from = parse_end(argv.get(3))?;
    let to = parse_end(argv.get(4))?;
    lmove_generic(ctx, argv, from, to)
}

fn rpoplpush(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    lmove_generic(ctx, argv, End::Right, End::Left)
}

/// Parsed `numkeys key... LEFT|RIGHT [COUNT n]` of LMPOP and BLMPOP.
pub(super) struct MPopArgs {
    /// Index of the first key.
    pub first_key: usize,
    /// Number of keys.
    pub numkeys: usize,
    /// Which end.
    pub end: End,
    /// Elements to pop at most.
    pub count: usize,
}

/// Parses LMPOP's arguments from `numkeys_idx` (lmpopGenericCommand).
pub(super) fn parse_mpop(argv: Argv<'_>, numkeys_idx: usize) -> Result<MPopArgs, Error> {
    let numkeys = range_long(argv.get(numkeys_idx), 1, "numkeys should be greater than 0")?;
    let where_idx = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(numkeys_idx + 1))
        .filter(|&w| w < argv.len())
        .ok_or(Error::Syntax)?;
    let end = parse_end(argv.get(where_idx))?;
    let mut count: i64 = -1;
    let mut j = where_idx + 1;
    while j < argv.len() {
        if count == -1 && is(argv.get(j), "count") && j + 1 < argv.len() {
            j += 1;
            count = range_long(argv.get(j), 1, "count should be greater than 0")?;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok(MPopArgs {
        first_key: numkeys_idx + 1,
        numkeys: numkeys as usize,
        end,
        count: if count == -1 { 1 } else { count as usize },
    })
}

/// Pops from the first non-empty list among the keys, replying
/// `[key, [elements]]`; Ok(false) when every list is empty or missing
/// (mpopGenericCommand; WRONGTYPE stops the scan).
pub(super) fn mpop_first(ctx: &mut Ctx<'_>, argv: Argv<'_>, a: &MPopArgs) -> Result<bool, Error> {
    let db = ctx.db();
    for i in a.first_key..a.first_key + a.numkeys {
        let key = argv.get(i);
        if !ctx
            .server
            .blocking
            .may_serve_from(ctx.client.reprocessing, key)
        {
            continue;
        }
        match list_mut(ctx.store, db, key)? {
            Some(l) if !l.is_empty() => {
                let n = a.count.min(l.len());
                ctx.reply.array(2);
                ctx.reply.bulk(key);
                pop_range_reply(l, a.end, a.count, &mut ctx.reply);
                // (B)LMPOP reaches the AOF as the pop it made.
                let pop: &[u8] = if a.end == End::Left { b"LPOP" } else { b"RPOP" };
                propagate_counted(ctx, pop, key, n);
                after_removal(ctx.store, db, key);
                ctx.count_changes(n as u64);
                super::pubsub::notify_removed(
                    ctx,
                    b'l',
                    super::list_blocking::pop_event(a.end),
                    key,
                );
                return Ok(true);
            }
            _ => {}
        }
    }
    Ok(false)
}

/// Propagates `<cmd> key n`: a multi-pop as the plain pop of the `n`
/// elements it took.
pub(super) fn propagate_counted(ctx: &mut Ctx<'_>, cmd: &[u8], key: &[u8], n: usize) {
    let mut buf = crate::util::num::itoa_buf();
    let n = crate::util::num::fmt_i64(n as i64, &mut buf);
    ctx.propagate_as(&[cmd, key, n]);
}

fn lmpop(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let a = parse_mpop(argv, 1)?;
    if !mpop_first(ctx, argv, &a)? {
        ctx.reply.null_array();
    }
    Ok(())
}
