//! Range queries over sorted sets (Redis's zrangeGenericCommand and
//! friends): by rank, by score (`(` for exclusive bounds, `-inf`/`+inf`)
//! and by lex (`[a`, `(a`, `-`, `+`), forwards or reversed, with LIMIT;
//! ZRANGESTORE; ZCOUNT/ZLEXCOUNT; ZREMRANGEBY*. Ranges are located with
//! the tree's rank descent, so each costs O(log n) plus the output.

use super::super::args;
use super::super::coll::{finish_write, zset_read, zset_write};
use super::super::{Argv, Ctx};
use super::emit;
use crate::error::{CmdResult, Error};
use crate::store::value::Value;
use crate::store::zset::ZSet;
use crate::store::Ttl;

/// A score interval.
#[derive(Clone, Copy)]
pub(super) struct ScoreRange {
    min: f64,
    max: f64,
    minex: bool,
    maxex: bool,
}

impl ScoreRange {
    fn gte_min(&self, s: f64) -> bool {
        if self.minex {
            s > self.min
        } else {
            s >= self.min
        }
    }

    fn lte_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }
}

/// Redis's zslParseRange: each bound read by C strtod, so an empty bound
/// is 0 and `(` alone an exclusive 0, as in Redis.
fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Error> {
    let bad = || Error::err("min or max is not a float");
    let one = |a: &[u8]| -> Result<(f64, bool), Error> {
        let (text, exclusive) = match a.strip_prefix(b"(") {
            Some(rest) => (rest, true),
            None => (a, false),
        };
        match crate::util::num::strtod_whole(text) {
            Some((v, _)) if !v.is_nan() => Ok((v, exclusive)),
            _ => Err(bad()),
        }
    };
    let (min, minex) = one(min)?;
    let (max, maxex) = one(max)?;
    Ok(ScoreRange {
        min,
        max,
        minex,
        maxex,
    })
}

/// A lex bound.
#[derive(Clone, Copy)]
enum Lex<'a> {
    NegInf,
    PosInf,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

/// A lex interval.
#[derive(Clone, Copy)]
pub(super) struct LexRange<'a> {
    min: Lex<'a>,
    max: Lex<'a>,
}

impl LexRange<'_> {
    fn gte_min(&self, m: &[u8]) -> bool {
        match self.min {
            Lex::NegInf => true,
            Lex::PosInf => false,
            Lex::Incl(b) => m >= b,
            Lex::Excl(b) => m > b,
        }
    }

    fn lte_max(&self, m: &[u8]) -> bool {
        match self.max {
            Lex::NegInf => false,
            Lex::PosInf => true,
            Lex::Incl(b) => m <= b,
            Lex::Excl(b) => m < b,
        }
    }
}

/// Redis's zslParseLexRange.
fn parse_lex_range<'a>(min: &'a [u8], max: &'a [u8]) -> Result<LexRange<'a>, Error> {
    let one = |a: &'a [u8]| -> Result<Lex<'a>, Error> {
        match a.first() {
            Some(b'+') if a.len() == 1 => Ok(Lex::PosInf),
            Some(b'-') if a.len() == 1 => Ok(Lex::NegInf),
            Some(b'(') => Ok(Lex::Excl(&a[1..])),
            Some(b'[') => Ok(Lex::Incl(&a[1..])),
            _ => Err(Error::err("min or max not valid string range item")),
        }
    };
    Ok(LexRange {
        min: one(min)?,
        max: one(max)?,
    })
}

/// The range kinds of ZRANGE.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Auto,
    Rank,
    Score,
    Lex,
}

/// Ranks [start, end) of the entries in a score range.
fn score_span(z: &ZSet, r: &ScoreRange) -> (usize, usize) {
    let start = z.count_prefix(|s, _| !r.gte_min(s));
    let end = z.count_prefix(|s, _| r.lte_max(s));
    (start, end.max(start))
}

/// Ranks [start, end) of the entries in a lex range.
fn lex_span(z: &ZSet, r: &LexRange<'_>) -> (usize, usize) {
    // Redis first checks the range against the first and last members
    // (zslIsInLexRange), which decides what a set whose scores differ, and
    // so is out of lex order, answers.
    let first = z.iter_from(0).next().map(|(m, _)| m);
    let last = z
        .iter_rev_from(z.len().saturating_sub(1))
        .next()
        .map(|(m, _)| m);
    match (first, last) {
        (Some(first), Some(last)) if r.gte_min(last) && r.lte_max(first) => {}
        _ => return (0, 0),
    }
    let start = z.count_prefix(|_, m| !r.gte_min(m));
    let end = z.count_prefix(|_, m| r.lte_max(m));
    (start, end.max(start))
}

/// Ranks [start, end) of a rank range (negative ranks count from the end).
fn rank_span(len: usize, start: i64, end: i64) -> (usize, usize) {
    let len_i = len as i64;
    let mut start = if start < 0 { len_i + start } else { start };
    let mut end = if end < 0 { len_i + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len_i {
        return (0, 0);
    }
    if end >= len_i {
        end = len_i - 1;
    }
    (start as usize, end as usize + 1)
}

/// Applies LIMIT offset count to a span of `n` entries: (skip, take).
fn limit_span(n: usize, offset: i64, count: i64) -> (usize, usize) {
    if offset < 0 {
        return (0, 0);
    }
    let skip = (offset as u64).min(n as u64) as usize;
    let left = n - skip;
    let take = if count < 0 {
        left
    } else {
        (count as u64).min(left as u64) as usize
    };
    (skip, take)
}

/// How a ZRANGE-family command was called.
struct Call {
    key_idx: usize,
    store: Option<usize>,
    kind: Kind,
    rev: Option<bool>,
}

/// Redis's zrangeGenericCommand.
fn zrange_generic(ctx: &mut Ctx<'_>, argv: &Argv<'_>, call: Call) -> CmdResult {
    let (mut kind, mut rev) = (call.kind, call.rev);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut j = call.key_idx + 3;
    while j < argv.len() {
        let a = argv.get(j);
        let left = argv.len() - j - 1;
        if call.store.is_none() && args::is(a, "withscores") {
            withscores = true;
        } else if args::is(a, "limit") && left >= 2 {
            offset = args::int(argv.get(j + 1))?;
            limit = args::int(argv.get(j + 2))?;
            j += 2;
        } else if rev.is_none() && args::is(a, "rev") {
            rev = Some(true);
        } else if kind == Kind::Auto && args::is(a, "bylex") {
            kind = Kind::Lex;
        } else if kind == Kind::Auto && args::is(a, "byscore") {
            kind = Kind::Score;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if kind == Kind::Auto {
        kind = Kind::Rank;
    }
    if limit != -1 && kind == Kind::Rank {
        return Err(Error::err(
            "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && kind == Kind::Lex {
        return Err(Error::err(
            "syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut lo, mut hi) = (argv.get(call.key_idx + 1), argv.get(call.key_idx + 2));
    if rev && kind != Kind::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    enum Spec<'a> {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexRange<'a>),
    }
    let spec = match kind {
        Kind::Score => Spec::Score(parse_score_range(lo, hi)?),
        Kind::Lex => Spec::Lex(parse_lex_range(lo, hi)?),
        _ => Spec::Rank(args::int(lo)?, args::int(hi)?),
    };
    let db = ctx.db();
    let key = argv.get(call.key_idx);
    let z = zset_read(ctx.store, db, key)?;
    let Some(z) = z else {
        match call.store {
            Some(d) => store_range(ctx, argv.get(d), None),
            None => ctx.reply.array(0),
        }
        return Ok(());
    };
    let len = z.len();
    // The span in forward ranks, then LIMIT applied in the walk direction.
    let (start, end) = match spec {
        Spec::Rank(a, b) => {
            let (s, e) = rank_span(len, a, b);
            if rev {
                (len - e.max(s), len - s)
            } else {
                (s, e)
            }
        }
        Spec::Score(r) => score_span(z, &r),
        Spec::Lex(r) => lex_span(z, &r),
    };
    let (skip, take) = if kind == Kind::Rank {
        (0, end - start)
    } else {
        limit_span(end - start, offset, limit)
    };
    let items: Box<dyn Iterator<Item = (&[u8], f64)>> = if take == 0 {
        Box::new(std::iter::empty())
    } else if rev {
        Box::new(z.iter_rev_from(end - 1 - skip).take(take))
    } else {
        Box::new(z.iter_from(start + skip).take(take))
    };
    if let Some(d) = call.store {
        let mut out = ZSet::with_hint(take, 0);
        for (m, s) in items {
            out.insert(m, s);
        }
        store_range(ctx, argv.get(d), Some(out));
        return Ok(());
    }
    let pairs = ctx.reply.is_resp3();
    ctx.reply
        .array(if withscores && !pairs { take * 2 } else { take });
    for (m, s) in items {
        emit(&mut ctx.reply, m, s, withscores, pairs);
    }
    Ok(())
}

/// Stores a range result at `dst` (deleting it when empty); replies the
/// number of members stored.
fn store_range(ctx: &mut Ctx<'_>, dst: &[u8], z: Option<ZSet>) {
    let db = ctx.db();
    match z.filter(|z| !z.is_empty()) {
        Some(z) => {
            let n = z.len();
            ctx.store.set(db, dst, Value::ZSet(z), Ttl::None);
            ctx.reply.int(n as i64);
            crate::cmd::pubsub::notify(ctx, b'z', "zrangestore", dst);
        }
        None => {
            ctx.reply.int(0);
            if ctx.store.delete_destination(db, dst) {
                crate::cmd::pubsub::notify(ctx, b'g', "del", dst);
            }
        }
    }
}

pub(super) fn zrange(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let call = Call {
        key_idx: 1,
        store: None,
        kind: Kind::Auto,
        rev: None,
    };
    zrange_generic(ctx, &argv, call)
}

pub(super) fn zrangestore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let call = Call {
        key_idx: 2,
        store: Some(1),
        kind: Kind::Auto,
        rev: None,
    };
    zrange_generic(ctx, &argv, call)
}

pub(super) fn zrevrange(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let call = Call {
        key_idx: 1,
        store: None,
        kind: Kind::Rank,
        rev: Some(true),
    };
    zrange_generic(ctx, &argv, call)
}

pub(super) fn zrangebyscore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let call = Call {
        key_idx: 1,
        store: None,
        kind: Kind::Score,
        rev: Some(false),
    };
    zrange_generic(ctx, &argv, call)
}

pub(super) fn zrevrangebyscore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let call = Call {
        key_idx: 1,
        store: None,
        kind: Kind::Score,
        rev: Some(true),
    };
    zrange_generic(ctx, &argv, call)
}

pub(super) fn zrangebylex(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let call = Call {
        key_idx: 1,
        store: None,
        kind: Kind::Lex,
        rev: Some(false),
    };
    zrange_generic(ctx, &argv, call)
}

pub(super) fn zrevrangebylex(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let call = Call {
        key_idx: 1,
        store: None,
        kind: Kind::Lex,
        rev: Some(true),
    };
    zrange_generic(ctx, &argv, call)
}

pub(super) fn zcount(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let r = parse_score_range(argv.get(2), argv.get(3))?;
    let db = ctx.db();
    let n = zset_read(ctx.store, db, argv.get(1))?.map_or(0, |z| {
        let (s, e) = score_span(z, &r);
        e - s
    });
    ctx.reply.int(n as i64);
    Ok(())
}

pub(super) fn zlexcount(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let r = parse_lex_range(argv.get(2), argv.get(3))?;
    let db = ctx.db();
    let n = zset_read(ctx.store, db, argv.get(1))?.map_or(0, |z| {
        let (s, e) = lex_span(z, &r);
        e - s
    });
    ctx.reply.int(n as i64);
    Ok(())
}

/// ZREMRANGEBY{RANK,SCORE,LEX}: removes the span `span` computes.
fn zremrange(
    ctx: &mut Ctx<'_>,
    argv: &Argv<'_>,
    event: &str,
    span: impl Fn(&ZSet) -> (usize, usize),
) -> CmdResult {
    let db = ctx.db();
    let key = argv.get(1);
    let mut removed = 0;
    if let Some(z) = zset_write(ctx.store, db, key, None)? {
        let (s, e) = span(z);
        let victims: Vec<Vec<u8>> = if e > s {
            z.iter_from(s)
                .take(e - s)
                .map(|(m, _)| m.to_vec())
                .collect()
        } else {
            Vec::new()
        };
        for m in &victims {
            z.remove(m);
        }
        removed = victims.len();
        finish_write(ctx.store, db, key, removed > 0);
    }
    if removed > 0 {
        crate::cmd::pubsub::notify_removed(ctx, b'z', event, key);
    }
    ctx.count_changes(removed as u64);
    ctx.reply.int(removed as i64);
    Ok(())
}

pub(super) fn zremrangebyrank(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (a, b) = (args::int(argv.get(2))?, args::int(argv.get(3))?);
    zremrange(ctx, &argv, "zremrangebyrank", |z| rank_span(z.len(), a, b))
}

pub(super) fn zremrangebyscore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let r = parse_score_range(argv.get(2), argv.get(3))?;
    zremrange(ctx, &argv, "zremrangebyscore", |z| score_span(z, &r))
}

pub(super) fn zremrangebylex(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let r = parse_lex_range(argv.get(2), argv.get(3))?;
    zremrange(ctx, &argv, "zremrangebylex", |z| lex_span(z, &r))
}
