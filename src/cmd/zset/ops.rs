//! Sorted-set pops, random members, ZSCAN, and the multi-key operations
//! ZUNION/ZINTER/ZDIFF (plus STORE forms) and ZINTERCARD (Redis's
//! zunionInterDiffGenericCommand), which also accept plain sets as inputs
//! with every score 1.

use std::collections::HashMap;

use super::super::args;
use super::super::coll::{self, finish_write, zset_read, zset_write};
use super::super::scan::parse_cursor;
use super::super::{Argv, Ctx};
use super::emit;
use crate::error::{CmdResult, Error};
use crate::store::set::Set;
use crate::store::value::Value;
use crate::store::zset::{cmp_entry, ZSet};
use crate::store::Ttl;

/// ZPOPMIN/ZPOPMAX key [count].
fn zpop(ctx: &mut Ctx<'_>, argv: Argv<'_>, max: bool) -> CmdResult {
    let count = match argv.len() {
        2 => None,
        3 => match args::int(argv.get(2)) {
            Ok(n) if n >= 0 => Some(n as usize),
            _ => return Err(Error::NotPositive),
        },
        _ => return Err(Error::Syntax),
    };
    let db = ctx.db();
    let key = argv.get(1);
    let pairs = ctx.reply.is_resp3() && count.is_some();
    let Some(z) = zset_write(ctx.store, db, key, None)? else {
        ctx.reply.array(0);
        return Ok(());
    };
    let n = count.unwrap_or(1).min(z.len());
    let popped: Vec<(Vec<u8>, f64)> = if max {
        z.iter_rev_from(z.len().saturating_sub(1))
            .take(n)
            .map(|(m, s)| (m.to_vec(), s))
            .collect()
    } else {
        z.iter_from(0)
            .take(n)
            .map(|(m, s)| (m.to_vec(), s))
            .collect()
    };
    for (m, _) in &popped {
        z.remove(m);
    }
    finish_write(ctx.store, db, key, !popped.is_empty());
    if !popped.is_empty() {
        let event = if max { "zpopmax" } else { "zpopmin" };
        super::super::pubsub::notify_removed(ctx, b'z', event, key);
    }
    ctx.count_changes(popped.len() as u64);
    ctx.reply.array(if pairs { n } else { n * 2 });
    for (m, s) in &popped {
        emit(&mut ctx.reply, m, *s, true, pairs);
    }
    Ok(())
}

pub(super) fn zpopmin(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    zpop(ctx, argv, false)
}

pub(super) fn zpopmax(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    zpop(ctx, argv, true)
}

/// ZRANDMEMBER key [count [WITHSCORES]].
pub(super) fn zrandmember(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    if argv.len() == 2 {
        let z = zset_read(ctx.store, db, argv.get(1))?;
        match z.filter(|z| !z.is_empty()) {
            Some(z) => {
                let r = (coll::rnd() % z.len() as u64) as usize;
                match z.iter_from(r).next() {
                    Some((m, _)) => ctx.reply.bulk(m),
                    None => ctx.reply.null(),
                }
            }
            None => ctx.reply.null(),
        }
        return Ok(());
    }
    let count = coll::random_count(argv.get(2))?;
    let withscores = match argv.len() {
        3 => false,
        4 if args::is(argv.get(3), "withscores") => true,
        _ => return Err(Error::Syntax),
    };
    if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(Error::err("value is out of range"));
    }
    let Some(z) = zset_read(ctx.store, db, argv.get(1))? else {
        ctx.reply.array(0);
        return Ok(());
    };
    let len = z.len();
    let pairs = ctx.reply.is_resp3();
    let width = if withscores && !pairs { 2 } else { 1 };
    let ranks: Vec<usize> = if count < 0 {
        let n = count.unsigned_abs() as usize;
        (0..n)
            .map(|_| (coll::rnd() % len as u64) as usize)
            .collect()
    } else if count as usize >= len {
        (0..len).collect()
    } else {
        // Distinct ranks: a partial shuffle, or rejection sampling when
        // the count is a small share of the set.
        let count = count as usize;
        if count * 3 > len {
            let mut all: Vec<usize> = (0..len).collect();
            for i in 0..count {
                let j = i + (coll::rnd() % (len - i) as u64) as usize;
                all.swap(i, j);
            }
            all.truncate(count);
            all
        } else {
            let mut seen = std::collections::HashSet::with_capacity(count);
            let mut out = Vec::with_capacity(count);
            while out.len() < count {
                let r = (coll::rnd() % len as u64) as usize;
                if seen.insert(r) {
                    out.push(r);
                }
            }
            out
        }
    };
    ctx.reply.array(ranks.len() * width);
    for r in ranks {
        if let Some((m, s)) = z.iter_from(r).next() {
            emit(&mut ctx.reply, m, s, withscores, pairs);
        }
    }
    Ok(())
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]. Small sets come back
/// whole in one call, as Redis's listpack does; scores are bulk strings.
pub(super) fn zscan(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let cursor = parse_cursor(argv.get(2)).ok_or(Error::err("invalid cursor"))?;
    let db = ctx.db();
    let Some(z) = zset_read(ctx.store, db, argv.get(1))? else {
        ctx.reply.array(2);
        ctx.reply.bulk(b"0");
        ctx.reply.array(0);
        return Ok(());
    };
    let opts = coll::scan_opts(&argv)?;
    let mut found: Vec<(&[u8], f64)> = Vec::new();
    let next = if z.encoding() == "listpack" {
        found.extend(z.iter_from(0));
        0
    } else {
        z.scan(cursor, opts.count, |m, s| found.push((m, s)))
    };
    found.retain(|(m, _)| opts.matches(m));
    ctx.reply.array(2);
    ctx.reply.bulk_i64(next as i64);
    ctx.reply.array(found.len() * 2);
    let mut buf = Vec::with_capacity(32);
    for (m, s) in found {
        ctx.reply.bulk(m);
        buf.clear();
        if s.is_infinite() {
            buf.extend_from_slice(if s > 0.0 { b"inf" } else { b"-inf" });
        } else {
            crate::util::num::write_g17(s, &mut buf);
        }
        ctx.reply.bulk(&buf);
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// One input of a multi-key operation.
enum Src<'a> {
    Missing,
    Set(&'a Set),
    ZSet(&'a ZSet),
}

impl Src<'_> {
    fn len(&self) -> usize {
        match self {
            Src::Missing => 0,
            Src::Set(s) => s.len(),
            Src::ZSet(z) => z.len(),
        }
    }

    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::Missing => None,
            Src::Set(s) => s.contains(m).then_some(1.0),
            Src::ZSet(z) => z.score(m),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Src::Missing => {}
            Src::Set(s) => s.iter().for_each(|m| m.with(|b| f(b, 1.0))),
            Src::ZSet(z) => z.iter_from(0).for_each(|(m, s)| f(m, s)),
        }
    }
}

fn aggregate(agg: Aggregate, acc: &mut f64, v: f64) {
    match agg {
        Aggregate::Sum => {
            *acc += v;
            // inf + -inf: Redis stores 0 rather than NaN.
            if acc.is_nan() {
                *acc = 0.0;
            }
        }
        Aggregate::Min => *acc = acc.min(v),
        Aggregate::Max => *acc = acc.max(v),
    }
}

fn weighted(score: f64, weight: f64) -> f64 {
    let v = score * weight;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

/// Redis's zunionInterDiffGenericCommand. `dst` is the STORE destination
/// index; `card` makes it ZINTERCARD.
fn combine(
    ctx: &mut Ctx<'_>,
    argv: &Argv<'_>,
    numkeys_idx: usize,
    dst: Option<usize>,
    op: Op,
    card: bool,
) -> CmdResult {
    let name = String::from_utf8_lossy(argv.get(0)).to_ascii_lowercase();
    let setnum = args::int(argv.get(numkeys_idx))?;
    if setnum < 1 {
        return Err(Error::err_owned(format!(
            "at least 1 input key is needed for '{name}' command"
        )));
    }
    if setnum as u64 > (argv.len() - numkeys_idx - 1) as u64 {
        return Err(Error::Syntax);
    }
    let setnum = setnum as usize;
    let keys: Vec<&[u8]> = (0..setnum).map(|i| argv.get(numkeys_idx + 1 + i)).collect();
    let db = ctx.db();
    for k in &keys {
        if let Some(e) = ctx.store.get_read(db, k) {
            if e.set().is_none() && !matches!(e.object(), Some(Value::ZSet(_))) {
                return Err(Error::WrongType);
            }
        }
    }
    let mut weights = vec![1.0f64; setnum];
    let mut agg = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    let mut j = numkeys_idx + 1 + setnum;
    while j < argv.len() {
        let remaining = argv.len() - j;
        let a = argv.get(j);
        if op != Op::Diff && !card && remaining > setnum && args::is(a, "weights") {
            for (i, w) in weights.iter_mut().enumerate() {
                *w = crate::util::num::parse_f64(argv.get(j + 1 + i))
                    .ok_or(Error::err("weight value is not a float"))?;
            }
            j += 1 + setnum;
        } else if op != Op::Diff && !card && remaining >= 2 && args::is(a, "aggregate") {
            let v = argv.get(j + 1);
            agg = if args::is(v, "sum") {
                Aggregate::Sum
            } else if args::is(v, "min") {
                Aggregate::Min
            } else if args::is(v, "max") {
                Aggregate::Max
            } else {
                return Err(Error::Syntax);
            };
            j += 2;
        } else if dst.is_none() && !card && args::is(a, "withscores") {
            withscores = true;
            j += 1;
        } else if card && remaining >= 2 && args::is(a, "limit") {
            limit = match args::int(argv.get(j + 1)) {
                Ok(n) if n >= 0 => n as usize,
                _ => return Err(Error::err("LIMIT can't be negative")),
            };
            j += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let store: &crate::store::Store = ctx.store;
    let srcs: Vec<Src<'_>> = keys
        .iter()
        .map(|k| match store.peek(db, k).map(|e| (e.set(), e.object())) {
            Some((Some(s), _)) => Src::Set(s),
            Some((_, Some(Value::ZSet(z)))) => Src::ZSet(z),
            _ => Src::Missing,
        })
        .collect();
    let mut result: HashMap<Vec<u8>, f64> = HashMap::new();
    match op {
        Op::Union => {
            for (src, &w) in srcs.iter().zip(&weights) {
                src.for_each(|m, s| {
                    let v = weighted(s, w);
                    match result.get_mut(m) {
                        Some(acc) => aggregate(agg, acc, v),
                        None => {
                            result.insert(m.to_vec(), v);
                        }
                    }
                });
            }
        }
        Op::Inter => {
            let mut order: Vec<usize> = (0..setnum).collect();
            order.sort_by_key(|&i| srcs[i].len());
            let first = order[0];
            let mut done = false;
            srcs[first].for_each(|m, s| {
                if done {
                    return;
                }
                let mut acc = weighted(s, weights[first]);
                for &i in &order[1..] {
                    match srcs[i].score(m) {
                        Some(o) => aggregate(agg, &mut acc, weighted(o, weights[i])),
                        None => return,
                    }
                }
                result.insert(m.to_vec(), acc);
                if card && limit != 0 && result.len() >= limit {
                    done = true;
                }
            });
        }
        Op::Diff => {
            srcs[0].for_each(|m, s| {
                if srcs[1..].iter().all(|o| o.score(m).is_none()) {
                    result.insert(m.to_vec(), s);
                }
            });
        }
    }
    if card {
        ctx.reply.int(result.len() as i64);
        return Ok(());
    }
    let mut sorted: Vec<(Vec<u8>, f64)> = result.into_iter().collect();
    sorted.sort_by(|a, b| cmp_entry(a.1, &a.0, b.1, &b.0));
    if let Some(d) = dst {
        let dst = argv.get(d);
        if sorted.is_empty() {
            ctx.reply.int(0);
            if ctx.store.delete_destination(db, dst) {
                super::super::pubsub::notify(ctx, b'g', "del", dst);
            }
        } else {
            let mut z = ZSet::with_hint(usize::MAX, 0);
            for (m, s) in &sorted {
                z.insert(m, *s);
            }
            z.shrink_encoding();
            let n = z.len();
            ctx.store.set(db, dst, Value::ZSet(z), Ttl::None);
            ctx.reply.int(n as i64);
            let event = match op {
                Op::Union => "zunionstore",
                Op::Inter => "zinterstore",
                Op::Diff => "zdiffstore",
            };
            super::super::pubsub::notify(ctx, b'z', event, dst);
        }
        return Ok(());
    }
    let pairs = ctx.reply.is_resp3();
    ctx.reply.array(if withscores && !pairs {
        sorted.len() * 2
    } else {
        sorted.len()
    });
    for (m, s) in &sorted {
        emit(&mut ctx.reply, m, *s, withscores, pairs);
    }
    Ok(())
}

pub(super) fn zunion(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    combine(ctx, &argv, 1, None, Op::Union, false)
}

pub(super) fn zunionstore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    combine(ctx, &argv, 2, Some(1), Op::Union, false)
}

pub(super) fn zinter(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    combine(ctx, &argv, 1, None, Op::Inter, false)
}

pub(super) fn zinterstore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    combine(ctx, &argv, 2, Some(1), Op::Inter, false)
}

pub(super) fn zdiff(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    combine(ctx, &argv, 1, None, Op::Diff, false)
}

pub(super) fn zdiffstore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    combine(ctx, &argv, 2, Some(1), Op::Diff, false)
}

pub(super) fn zintercard(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    combine(ctx, &argv, 1, None, Op::Inter, true)
}

/// Parses `numkeys key... MIN|MAX [COUNT count]` starting with numkeys at
/// `argv[first]` (ZMPOP and BZMPOP): the key count, whether to pop the
/// highest scores, and the count.
pub(in crate::cmd) fn parse_mpop(
    argv: Argv<'_>,
    first: usize,
) -> Result<(usize, bool, usize), Error> {
    let numkeys = match args::int(argv.get(first)) {
        Ok(n) if n > 0 => n as usize,
        _ => return Err(Error::err("numkeys should be greater than 0")),
    };
    // numkeys, keys, MIN|MAX at least.
    if numkeys as u64 + first as u64 + 2 > argv.len() as u64 {
        return Err(Error::Syntax);
    }
    let where_idx = first + 1 + numkeys;
    let max = match argv.get(where_idx) {
        w if args::is(w, "min") => false,
        w if args::is(w, "max") => true,
        _ => return Err(Error::Syntax),
    };
    let mut count = 1usize;
    let mut j = where_idx + 1;
    let mut seen_count = false;
    while j < argv.len() {
        if !seen_count && args::is(argv.get(j), "count") && j + 1 < argv.len() {
            count = match args::int(argv.get(j + 1)) {
                Ok(n) if n > 0 => n as usize,
                _ => return Err(Error::err("count should be greater than 0")),
            };
            seen_count = true;
            j += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    Ok((numkeys, max, count))
}

/// ZMPOP numkeys key... MIN|MAX [COUNT count]: pops from the first key
/// that holds a sorted set; replies [key, [[member, score]...]] or a null
/// array when every key is missing.
pub(super) fn zmpop(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (numkeys, max, count) = parse_mpop(argv, 1)?;
    let db = ctx.db();
    for i in 0..numkeys {
        let key = argv.get(2 + i);
        let Some(z) = zset_write(ctx.store, db, key, None)? else {
            continue;
        };
        let n = count.min(z.len());
        let popped: Vec<(Vec<u8>, f64)> = if max {
            z.iter_rev_from(z.len().saturating_sub(1))
                .take(n)
                .map(|(m, s)| (m.to_vec(), s))
                .collect()
        } else {
            z.iter_from(0)
                .take(n)
                .map(|(m, s)| (m.to_vec(), s))
                .collect()
        };
        for (m, _) in &popped {
            z.remove(m);
        }
        finish_write(ctx.store, db, key, true);
        if !popped.is_empty() {
            let event = if max { "zpopmax" } else { "zpopmin" };
            super::super::pubsub::notify_removed(ctx, b'z', event, key);
            let pop = super::super::zset_blocking::pop_name(max);
            super::super::list::propagate_counted(ctx, pop, key, popped.len());
        }
        ctx.count_changes(popped.len() as u64);
        ctx.reply.array(2);
        ctx.reply.bulk(key);
        ctx.reply.array(popped.len());
        for (m, s) in &popped {
            emit(&mut ctx.reply, m, *s, true, true);
        }
        return Ok(());
    }
    ctx.reply.null_array();
    Ok(())
}
