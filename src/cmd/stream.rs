//! Stream commands (Redis's `t_stream.c`): XADD, XTRIM, XDEL, XLEN, XRANGE,
//! XREVRANGE and XSETID; XREAD lives in `stream_read.rs`. The stream itself
//! and its node model are in `store/stream.rs`.
//!
//! Consumer groups are in `stream_group.rs` (XGROUP, XACK, XPENDING,
//! XCLAIM, XAUTOCLAIM) and `stream_read.rs` (XREADGROUP); XINFO is in
//! `stream_info.rs`.

use super::args::{self, is};
use super::pubsub::notify;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::server::client::ClientKind;
use crate::store::stream::{NodeLimits, Stream, StreamId, Trim};
use crate::store::value::Value;
use crate::store::Store;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("xadd", xadd),
    ("xtrim", xtrim),
    ("xdel", xdel),
    ("xlen", xlen),
    ("xrange", xrange),
    ("xrevrange", xrevrange),
    ("xsetid", xsetid),
];

/// Redis's string2ull: a canonical integer that is not negative, else what
/// C's strtoull accepts in full (leading blanks, a sign, no overflow).
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(n) = crate::util::num::parse_i64(s) {
        return u64::try_from(n).ok();
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = s.get(i..)?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// A parsed ID argument; `seq_given` is false for XADD's `<ms>-*`.
pub(super) struct ParsedId {
    pub id: StreamId,
    pub seq_given: bool,
}

/// Redis's streamGenericParseIDOrReply: `-` and `+` (unless `strict`),
/// `<ms>` (sequence `missing_seq`), `<ms>-<seq>`, and `<ms>-*` when
/// `star_seq`.
pub(super) fn parse_id_generic(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    star_seq: bool,
) -> Result<ParsedId, Error> {
    if arg.len() > 127 {
        return Err(Error::InvalidStreamId);
    }
    // Redis copies the argument into a C string: a NUL ends it.
    let arg = match arg.iter().position(|&c| c == 0) {
        Some(n) => &arg[..n],
        None => arg,
    };
    if strict && (arg == b"-" || arg == b"+") {
        return Err(Error::InvalidStreamId);
    }
    let full = |id| {
        Ok(ParsedId {
            id,
            seq_given: true,
        })
    };
    match arg {
        b"-" => return full(StreamId::MIN),
        b"+" => return full(StreamId::MAX),
        _ => {}
    }
    let (ms, seq) = match arg.iter().position(|&c| c == b'-') {
        Some(d) => (&arg[..d], Some(&arg[d + 1..])),
        None => (arg, None),
    };
    let ms = parse_u64(ms).ok_or(Error::InvalidStreamId)?;
    match seq {
        Some(b"*") if star_seq => Ok(ParsedId {
            id: StreamId::new(ms, 0),
            seq_given: false,
        }),
        Some(s) => full(StreamId::new(
            ms,
            parse_u64(s).ok_or(Error::InvalidStreamId)?,
        )),
        None => full(StreamId::new(ms, missing_seq)),
    }
}

/// A strict ID (no `-`/`+`), as XDEL, XREAD and MINID take it.
pub(super) fn parse_strict_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, Error> {
    parse_id_generic(arg, missing_seq, true, false).map(|p| p.id)
}

/// XRANGE bounds: an ID, `-`/`+`, or `(ID` for an exclusive bound
/// (streamParseIntervalIDOrReply). Returns the ID and whether exclusive.
pub(super) fn parse_interval(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), Error> {
    if arg.len() > 1 && arg[0] == b'(' {
        return Ok((parse_strict_id(&arg[1..], missing_seq)?, true));
    }
    Ok((parse_id_generic(arg, missing_seq, false, false)?.id, false))
}

/// The stream at `key` for reading; None when missing.
pub(super) fn stream_read<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
) -> Result<Option<&'a Stream>, Error> {
    match store.get_read(db, key) {
        None => Ok(None),
        Some(e) => match e.into_ref().object() {
            Some(Value::Stream(s)) => Ok(Some(s)),
            _ => Err(Error::WrongType),
        },
    }
}

/// The stream at `key` looked up as a read (counted in the keyspace hits),
/// for the group state a read changes.
pub(super) fn stream_read_mut<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
) -> Result<Option<&'a mut Stream>, Error> {
    match store.get_read(db, key) {
        None => Ok(None),
        Some(e) => match e.into_value_mut() {
            Value::Stream(s) => Ok(Some(s)),
            _ => Err(Error::WrongType),
        },
    }
}

/// The stream at `key` for writing, created when missing and `create`.
pub(super) fn stream_write<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
    create: bool,
) -> Result<Option<&'a mut Stream>, Error> {
    let exists = match store.get(db, key) {
        None => false,
        Some(e) if matches!(e.object(), Some(Value::Stream(_))) => true,
        Some(_) => return Err(Error::WrongType),
    };
    if !exists {
        if !create {
            return Ok(None);
        }
        store.insert_new(db, key, Value::Stream(Box::default()));
    }
    match store.get(db, key) {
        Some(e) => match e.into_value_mut() {
            Value::Stream(s) => Ok(Some(s)),
            _ => Err(Error::WrongType),
        },
        None => Ok(None),
    }
}

/// Writes one entry: `[id, [field, value, ...]]`.
pub(super) fn emit_entry(reply: &mut ReplyBuf<'_>, id: &StreamId, fields: &[Vec<u8>]) {
    reply.array(2);
    let mut buf = [0u8; 41];
    reply.bulk(id.fmt(&mut buf));
    reply.array(fields.len());
    for f in fields {
        reply.bulk(f);
    }
}

/// Writes the entries of `s` in `start..=end` (at most `count`, 0 = all)
/// as an array (streamReplyWithRange).
pub(super) fn emit_range(
    reply: &mut ReplyBuf<'_>,
    s: &Stream,
    start: StreamId,
    end: StreamId,
    count: usize,
    rev: bool,
) {
    let mark = reply.defer();
    let mut n = 0;
    for (id, fields) in s.range(start, end, rev) {
        if count != 0 && n == count {
            break;
        }
        emit_entry(reply, id, fields);
        n += 1;
    }
    reply.finish_deferred_array(mark, n);
}

/// Options XADD and XTRIM share (streamAddTrimArgs).
struct TrimArgs {
    id: Option<ParsedId>,
    nomkstream: bool,
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    /// Index of the MAXLEN/MINID threshold argument.
    threshold_at: usize,
    /// Index of the ID argument (XADD).
    id_at: usize,
}

/// Parses XADD/XTRIM options from argv[2] (streamParseAddOrTrimArgsOrReply).
fn parse_trim_args(ctx: &Ctx<'_>, argv: &Argv<'_>, xadd: bool) -> Result<TrimArgs, Error> {
    let mut a = TrimArgs {
        id: None,
        nomkstream: false,
        trim: None,
        approx: false,
        limit: 0,
        threshold_at: 0,
        id_at: 0,
    };
    let mut limit_given = false;
    let mut limit: i64 = 0;
    let mut i = 2;
    let n = argv.len();
    while i < n {
        let more = n - 1 - i;
        let opt = argv.get(i);
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if a.trim.is_some() {
                return Err(Error::err(
                    "syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            a.approx = false;
            let next = argv.get(i + 1);
            if more >= 2 && next == b"~" {
                a.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let v = argv.get(i + 1);
            if is(opt, "maxlen") {
                let max = args::int(v)?;
                if max < 0 {
                    return Err(Error::err("The MAXLEN argument must be >= 0."));
                }
                a.trim = Some(Trim::MaxLen(max as u64));
            } else {
                a.trim = Some(Trim::MinId(parse_strict_id(v, 0)?));
            }
            i += 1;
            a.threshold_at = i;
        } else if is(opt, "limit") && more > 0 {
            limit = args::int(argv.get(i + 1))?;
            if limit < 0 {
                return Err(Error::err("The LIMIT argument must be >= 0."));
            }
            limit_given = true;
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            a.nomkstream = true;
        } else if xadd {
            a.id = Some(parse_id_generic(opt, 0, true, true)?);
            break;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    a.id_at = i;
    if limit != 0 && a.trim.is_none() {
        return Err(Error::err(
            "syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && a.trim.is_none() {
        return Err(Error::err(
            "syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    let must_obey = ctx.client.kind == ClientKind::Master || ctx.server.loading;
    if must_obey {
        // The master or the AOF already made the trim exact, but may keep
        // the LIMIT it was given (as Redis propagates it): no limit.
        a.limit = 0;
    } else if limit_given {
        if !a.approx {
            return Err(Error::err(
                "syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
        a.limit = limit as u64;
    } else if a.approx {
        // At most 100 nodes' worth of work per call, within Redis's bounds.
        let per_node = node_limits(ctx).max_entries;
        a.limit = match 100u64.saturating_mul(per_node) {
            0 => 10_000,
            n => n.min(1_000_000),
        };
    }
    Ok(a)
}

/// The node size limits from the configuration.
pub(super) fn node_limits(ctx: &Ctx<'_>) -> NodeLimits {
    // Read in place (no copy of the text) as XADD runs often.
    let get = |name: &str, default: u64| {
        ctx.server
            .config
            .other
            .get(name)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(default)
    };
    NodeLimits {
        max_bytes: get("stream-node-max-bytes", 4096),
        max_entries: get("stream-node-max-entries", 100),
    }
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]]
/// *|id field value [field value ...]
fn xadd(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let a = parse_trim_args(ctx, &argv, true)?;
    let fields_at = a.id_at + 1;
    let nf = argv.len().saturating_sub(fields_at);
    if argv.len() < fields_at + 2 || nf % 2 == 1 {
        return Err(Error::WrongArity("xadd".into()));
    }
    if let Some(p) = &a.id {
        if p.seq_given && p.id == StreamId::MIN {
            return Err(Error::err(
                "The ID specified in XADD must be greater than 0-0",
            ));
        }
    }
    let limits = node_limits(ctx);
    let now = ctx.store.now();
    let db = ctx.db();
    let key = argv.get(1);
    let Some(s) = stream_write(ctx.store, db, key, !a.nomkstream)? else {
        ctx.reply.null();
        return Ok(());
    };
    if s.last_id == StreamId::MAX {
        return Err(Error::err(
            "The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let too_small =
        Error::err("The ID specified in XADD is equal or smaller than the target stream top item");
    let id = match &a.id {
        None => s.next_id(now).ok_or_else(|| too_small.clone())?,
        Some(p) if p.seq_given => p.id,
        Some(p) if p.id.ms == s.last_id.ms => {
            if s.last_id.seq == u64::MAX {
                return Err(too_small);
            }
            StreamId::new(s.last_id.ms, s.last_id.seq + 1)
        }
        Some(p) => p.id,
    };
    if id <= s.last_id {
        return Err(too_small);
    }
    let total: usize = (fields_at..argv.len()).map(|i| argv.get(i).len()).sum();
    if total > crate::store::stream::LISTPACK_MAX_SIZE {
        return Err(Error::err("Elements are too large to be stored"));
    }
    let fields: Vec<Vec<u8>> = (fields_at..argv.len())
        .map(|i| argv.get(i).to_vec())
        .collect();
    s.append(id, fields, limits);
    let trimmed = match a.trim {
        Some(how) => s.trim(how, a.approx, a.limit),
        None => 0,
    };
    let mut buf = [0u8; 41];
    ctx.reply.bulk(id.fmt(&mut buf));
    let generated = !a.id.as_ref().is_some_and(|p| p.seq_given);
    propagate_stream_write(ctx, argv, &a, generated.then_some(id));
    ctx.store.signal_modified(db, key);
    notify(ctx, b't', "xadd", key);
    if trimmed > 0 {
        notify(ctx, b't', "xtrim", key);
    }
    ctx.count_changes(1);
    Ok(())
}

/// XADD/XTRIM as they reach the AOF (Redis's streamRewrite*): `id`, the
/// ID XADD generated, in place of `*` or `<ms>-*`, and an approximate trim
/// (`~`, which depends on the node layout) as the exact trim it amounted
/// to, its LIMIT kept as Redis keeps it (a master's or the AOF's command
/// ignores it).
fn propagate_stream_write(ctx: &mut Ctx<'_>, argv: Argv<'_>, a: &TrimArgs, id: Option<StreamId>) {
    if !ctx.propagating() || (id.is_none() && !a.approx) {
        return;
    }
    let mut args: Vec<Vec<u8>> = argv.iter_from(0).map(<[u8]>::to_vec).collect();
    if let Some(id) = id {
        let mut buf = [0u8; 41];
        args[a.id_at] = id.fmt(&mut buf).to_vec();
    }
    if a.approx {
        let exact = match ctx
            .store
            .peek(ctx.db(), argv.get(1))
            .and_then(|e| e.object())
        {
            Some(Value::Stream(s)) => match a.trim {
                Some(Trim::MaxLen(_)) => s.len().to_string().into_bytes(),
                _ => {
                    let mut buf = [0u8; 41];
                    s.first_id().fmt(&mut buf).to_vec()
                }
            },
            _ => args[a.threshold_at].clone(),
        };
        args[a.threshold_at - 1] = b"=".to_vec();
        args[a.threshold_at] = exact;
    }
    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    ctx.propagate_as(&refs);
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
fn xtrim(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let a = parse_trim_args(ctx, &argv, false)?;
    let db = ctx.db();
    let key = argv.get(1);
    let Some(s) = stream_write(ctx.store, db, key, false)? else {
        ctx.reply.int(0);
        return Ok(());
    };
    let Some(how) = a.trim else {
        return Err(Error::Syntax);
    };
    let deleted = s.trim(how, a.approx, a.limit);
    propagate_stream_write(ctx, argv, &a, None);
    if deleted > 0 {
        notify(ctx, b't', "xtrim", key);
        ctx.store.signal_modified(db, key);
    }
    ctx.count_changes(deleted);
    ctx.reply.int(deleted as i64);
    Ok(())
}

/// XDEL key id [id ...]
fn xdel(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    if stream_write(ctx.store, db, key, false)?.is_none() {
        ctx.reply.int(0);
        return Ok(());
    }
    let ids = (2..argv.len())
        .map(|i| parse_strict_id(argv.get(i), 0))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(s) = stream_write(ctx.store, db, key, false)? else {
        ctx.reply.int(0);
        return Ok(());
    };
    let deleted = ids.into_iter().filter(|&id| s.delete(id)).count();
    if deleted > 0 {
        ctx.store.signal_modified(db, key);
        notify(ctx, b't', "xdel", key);
    }
    ctx.count_changes(deleted as u64);
    ctx.reply.int(deleted as i64);
    Ok(())
}

/// XLEN key
fn xlen(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let n = stream_read(ctx.store, db, argv.get(1))?.map_or(0, |s| s.len());
    ctx.reply.int(n as i64);
    Ok(())
}

/// XRANGE/XREVRANGE (xrangeGenericCommand).
fn range_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev {
        (argv.get(3), argv.get(2))
    } else {
        (argv.get(2), argv.get(3))
    };
    let (mut start, start_ex) = parse_interval(start_arg, 0)?;
    if start_ex {
        start = start
            .incr()
            .ok_or(Error::err("invalid start ID for the interval"))?;
    }
    let (mut end, end_ex) = parse_interval(end_arg, u64::MAX)?;
    if end_ex {
        end = end
            .decr()
            .ok_or(Error::err("invalid end ID for the interval"))?;
    }
    let mut count: i64 = -1;
    let mut j = 4;
    while j < argv.len() {
        if is(argv.get(j), "count") && j + 1 < argv.len() {
            count = args::int(argv.get(j + 1))?.max(0);
            j += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let db = ctx.db();
    let Some(s) = stream_read(ctx.store, db, argv.get(1))? else {
        ctx.reply.array(0);
        return Ok(());
    };
    if count == 0 {
        ctx.reply.null_array();
        return Ok(());
    }
    let count = if count < 0 { 0 } else { count as usize };
    emit_range(&mut ctx.reply, s, start, end, count, rev);
    Ok(())
}

/// XRANGE key start end [COUNT count]
fn xrange(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    range_generic(ctx, argv, false)
}

/// XREVRANGE key end start [COUNT count]
fn xrevrange(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    range_generic(ctx, argv, true)
}

/// XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id]
fn xsetid(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let id = parse_strict_id(argv.get(2), 0)?;
    let mut entries_added: Option<u64> = None;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let opt = argv.get(i);
        if is(opt, "entriesadded") && more > 0 {
            let n = args::int(argv.get(i + 1))?;
            if n < 0 {
                return Err(Error::err("entries_added must be positive"));
            }
            entries_added = Some(n as u64);
        } else if is(opt, "maxdeletedid") && more > 0 {
            max_deleted = parse_strict_id(argv.get(i + 1), 0)?;
            if id < max_deleted {
                return Err(Error::err(
                    "The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }
    let db = ctx.db();
    let key = argv.get(1);
    let Some(s) = stream_write(ctx.store, db, key, false)? else {
        return Err(Error::NoSuchKey);
    };
    if !s.is_empty() {
        if id < s.last_valid_id() {
            return Err(Error::err(
                "The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added.is_some_and(|n| s.len() > n) {
            return Err(Error::err(
                "The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    s.last_id = id;
    if let Some(n) = entries_added {
        s.entries_added = n;
    }
    if max_deleted != StreamId::MIN {
        s.max_deleted_id = max_deleted;
    }
    // Redis's xsetidCommand neither touches watchers nor invalidates
    // trackers: EXEC after WATCH and XSETID still runs.
    ctx.count_changes(1);
    notify(ctx, b't', "xsetid", key);
    ctx.reply.ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis() {
        let p = |s: &str| parse_id_generic(s.as_bytes(), 7, false, true).map(|p| p.id);
        assert_eq!(p("5"), Ok(StreamId::new(5, 7)));
        assert_eq!(p("5-3"), Ok(StreamId::new(5, 3)));
        assert_eq!(p("+"), Ok(StreamId::MAX));
        assert_eq!(p(" 5"), Ok(StreamId::new(5, 7)));
        assert_eq!(p("18446744073709551615-1"), Ok(StreamId::new(u64::MAX, 1)));
        assert_eq!(p("18446744073709551616"), Err(Error::InvalidStreamId));
        assert_eq!(p("-1"), Err(Error::InvalidStreamId));
        assert_eq!(p("1-x"), Err(Error::InvalidStreamId));
        assert!(parse_strict_id(b"-", 0).is_err());
        assert!(!parse_id_generic(b"3-*", 0, true, true)
            .map(|p| p.seq_given)
            .unwrap_or(true));
    }
}
