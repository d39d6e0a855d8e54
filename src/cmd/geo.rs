//! Geo commands (Redis's `geo.c`): GEOADD, GEOPOS, GEOHASH, GEODIST,
//! GEORADIUS, GEORADIUSBYMEMBER and their _RO forms, GEOSEARCH and
//! GEOSEARCHSTORE. Points are sorted-set members scored with their 52-bit
//! geohash (`util/geohash.rs`): GEOADD is ZADD with computed scores and
//! reaches the AOF as that ZADD, and searches scan the score ranges of the
//! boxes around the centre.

use super::args;
use super::coll::zset_read;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::net::request::OwnedArgv;
use crate::store::value::Value;
use crate::store::zset::ZSet;
use crate::store::Ttl;
use crate::util::geohash::{self, Kind, Shape};
use crate::util::num;
use crate::util::pqsort::pqsort;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("geoadd", geoadd),
    ("geopos", geopos),
    ("geohash", geohash_cmd),
    ("geodist", geodist),
    ("georadius", georadius),
    ("georadius_ro", georadius_ro),
    ("georadiusbymember", georadiusbymember),
    ("georadiusbymember_ro", georadiusbymember_ro),
    ("geosearch", geosearch),
    ("geosearchstore", geosearchstore),
];

/// Redis's extractLongLatOrReply.
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<[f64; 2], Error> {
    let (x, y) = (args::float(lon)?, args::float(lat)?);
    if !(geohash::LONG_MIN..=geohash::LONG_MAX).contains(&x)
        || !(geohash::LAT_MIN..=geohash::LAT_MAX).contains(&y)
    {
        return Err(Error::err_owned(format!(
            "invalid longitude,latitude pair {x:.6},{y:.6}"
        )));
    }
    Ok([x, y])
}

/// Redis's extractUnitOrReply: metres per unit.
fn unit(arg: &[u8]) -> Result<f64, Error> {
    [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)]
        .iter()
        .find(|(name, _)| args::is(arg, name))
        .map(|(_, m)| *m)
        .ok_or(Error::err(
            "unsupported unit provided. please use M, KM, FT, MI",
        ))
}

/// A non-negative number argument with Redis's "need numeric ..." error.
fn measure(arg: &[u8], what: &'static str) -> Result<f64, Error> {
    args::float(arg).map_err(|_| Error::err(what))
}

/// Redis's extractDistanceOrReply: (radius, metres per unit).
fn radius_arg(argv: &Argv<'_>, at: usize) -> Result<(f64, f64), Error> {
    let r = measure(argv.get(at), "need numeric radius")?;
    if r < 0.0 {
        return Err(Error::err("radius cannot be negative"));
    }
    Ok((r, unit(argv.get(at + 1))?))
}

/// Redis's extractBoxOrReply: (width, height, metres per unit).
fn box_arg(argv: &Argv<'_>, at: usize) -> Result<(f64, f64, f64), Error> {
    let w = measure(argv.get(at), "need numeric width")?;
    let h = measure(argv.get(at + 1), "need numeric height")?;
    if h < 0.0 || w < 0.0 {
        return Err(Error::err("height or width cannot be negative"));
    }
    Ok((w, h, unit(argv.get(at + 2))?))
}

/// GEOADD key [NX|XX] [CH] lon lat member ...: ZADD with geohash scores.
fn geoadd(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (mut nx, mut xx) = (false, false);
    let mut first = 2;
    while first < argv.len() {
        let opt = argv.get(first);
        if args::is(opt, "nx") {
            nx = true;
        } else if args::is(opt, "xx") {
            xx = true;
        } else if !args::is(opt, "ch") {
            break;
        }
        first += 1;
    }
    if !(argv.len() - first).is_multiple_of(3) || (xx && nx) {
        return Err(Error::Syntax);
    }
    let mut zadd = OwnedArgv::from_slices([&b"zadd"[..]]);
    for i in 1..first {
        zadd.push(argv.get(i));
    }
    let mut buf = num::itoa_buf();
    for i in (first..argv.len()).step_by(3) {
        let [lon, lat] = lon_lat(argv.get(i), argv.get(i + 1))?;
        let score = geohash::score_of(lon, lat).unwrap_or(0);
        zadd.push(num::fmt_i64(score as i64, &mut buf));
        zadd.push(argv.get(i + 2));
    }
    let rewritten: Vec<&[u8]> = zadd.argv().iter_from(0).collect();
    ctx.propagate_as(&rewritten);
    super::zset::zadd(ctx, zadd.argv())
}

fn geopos(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let z = zset_read(ctx.store, db, argv.get(1))?;
    ctx.reply.array(argv.len() - 2);
    for m in argv.iter_from(2) {
        match z.and_then(|z| z.score(m)) {
            Some(score) => {
                let [lon, lat] = geohash::decode_score(score);
                ctx.reply.array(2);
                ctx.reply.human_double(lon);
                ctx.reply.human_double(lat);
            }
            None => ctx.reply.null_array(),
        }
    }
    Ok(())
}

fn geohash_cmd(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let z = zset_read(ctx.store, db, argv.get(1))?;
    ctx.reply.array(argv.len() - 2);
    for m in argv.iter_from(2) {
        match z.and_then(|z| z.score(m)).and_then(geohash::standard_hash) {
            Some(text) => ctx.reply.bulk(&text),
            None => ctx.reply.null(),
        }
    }
    Ok(())
}

fn geodist(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let to_meter = match argv.len() {
        5 => unit(argv.get(4))?,
        n if n > 5 => return Err(Error::Syntax),
        _ => 1.0,
    };
    let db = ctx.db();
    let Some(z) = zset_read(ctx.store, db, argv.get(1))? else {
        ctx.reply.null();
        return Ok(());
    };
    match (z.score(argv.get(2)), z.score(argv.get(3))) {
        (Some(a), Some(b)) => {
            let [x1, y1] = geohash::decode_score(a);
            let [x2, y2] = geohash::decode_score(b);
            let d = geohash::distance(x1, y1, x2, y2) / to_meter;
            ctx.reply.bulk(num::fmt_fixed(d, 4).as_bytes());
        }
        _ => ctx.reply.null(),
    }
    Ok(())
}

/// The variants of Redis's georadiusGeneric.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS[_RO]: centre and radius as arguments.
    Radius,
    /// GEORADIUSBYMEMBER[_RO]: centre at a member.
    ByMember,
    /// GEOSEARCH.
    Search,
    /// GEOSEARCHSTORE.
    SearchStore,
}

fn georadius(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    search(ctx, argv, Form::Radius, true)
}

fn georadius_ro(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    search(ctx, argv, Form::Radius, false)
}

fn georadiusbymember(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    search(ctx, argv, Form::ByMember, true)
}

fn georadiusbymember_ro(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    search(ctx, argv, Form::ByMember, false)
}

fn geosearch(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    search(ctx, argv, Form::Search, false)
}

fn geosearchstore(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    search(ctx, argv, Form::SearchStore, false)
}

/// The options of a search, parsed.
#[derive(Default)]
struct Options<'a> {
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    any: bool,
    /// Ascending (Some(true)), descending (Some(false)) or unsorted.
    sort: Option<bool>,
    /// COUNT; 0 for none.
    count: usize,
    store: Option<&'a [u8]>,
    storedist: bool,
    from_member: bool,
    from_lonlat: bool,
    by_radius: bool,
    by_box: bool,
}

/// One point found.
struct Point<'a> {
    member: &'a [u8],
    score: f64,
    xy: [f64; 2],
    dist: f64,
}

/// The member's position in `z`, or Redis's error.
fn member_xy(z: &ZSet, member: &[u8]) -> Result<[f64; 2], Error> {
    z.score(member)
        .map(geohash::decode_score)
        .ok_or(Error::err("could not decode requested zset member"))
}

/// Redis's georadiusGeneric.
fn search(ctx: &mut Ctx<'_>, argv: Argv<'_>, how: Form, may_store: bool) -> CmdResult {
    let src = if how == Form::SearchStore { 2 } else { 1 };
    let db = ctx.db();
    let z = zset_read(ctx.store, db, argv.get(src))?;
    let mut shape = Shape {
        xy: [0.0; 2],
        conversion: 1.0,
        kind: Kind::Circle(0.0),
    };
    let mut o = Options::default();
    let base = match how {
        Form::Radius => {
            shape.xy = lon_lat(argv.get(2), argv.get(3))?;
            let (r, conv) = radius_arg(&argv, 4)?;
            (shape.kind, shape.conversion) = (Kind::Circle(r), conv);
            6
        }
        Form::ByMember => {
            // Without the key the arguments are still parsed, to pick the
            // reply (Redis's order).
            if let Some(z) = z {
                shape.xy = member_xy(z, argv.get(2))?;
                let (r, conv) = radius_arg(&argv, 3)?;
                (shape.kind, shape.conversion) = (Kind::Circle(r), conv);
            }
            5
        }
        Form::Search => 2,
        Form::SearchStore => {
            o.store = Some(argv.get(1));
            3
        }
    };
    let geosearch = matches!(how, Form::Search | Form::SearchStore);
    let mut i = base;
    while i < argv.len() {
        let arg = argv.get(i);
        let left = argv.len() - i - 1;
        let is = |name| args::is(arg, name);
        if is("withdist") {
            o.withdist = true;
        } else if is("withhash") {
            o.withhash = true;
        } else if is("withcoord") {
            o.withcoord = true;
        } else if is("any") {
            o.any = true;
        } else if is("asc") {
            o.sort = Some(true);
        } else if is("desc") {
            o.sort = Some(false);
        } else if is("count") && left >= 1 {
            let n = args::int(argv.get(i + 1))?;
            if n <= 0 {
                return Err(Error::err("COUNT must be > 0"));
            }
            o.count = n as usize;
            i += 1;
        } else if (is("store") || is("storedist")) && left >= 1 && may_store && !geosearch {
            o.store = Some(argv.get(i + 1));
            o.storedist = is("storedist");
            i += 1;
        } else if is("storedist") && how == Form::SearchStore {
            o.storedist = true;
        } else if is("frommember") && left >= 1 && geosearch && !o.from_lonlat {
            if let Some(z) = z {
                shape.xy = member_xy(z, argv.get(i + 1))?;
            }
            o.from_member = true;
            i += 1;
        } else if is("fromlonlat") && left >= 2 && geosearch && !o.from_member {
            shape.xy = lon_lat(argv.get(i + 1), argv.get(i + 2))?;
            o.from_lonlat = true;
            i += 2;
        } else if is("byradius") && left >= 2 && geosearch && !o.by_box {
            let (r, conv) = radius_arg(&argv, i + 1)?;
            (shape.kind, shape.conversion) = (Kind::Circle(r), conv);
            o.by_radius = true;
            i += 2;
        } else if is("bybox") && left >= 3 && geosearch && !o.by_radius {
            let (w, h, conv) = box_arg(&argv, i + 1)?;
            (shape.kind, shape.conversion) = (Kind::Rect(w, h), conv);
            o.by_box = true;
            i += 3;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if o.store.is_some() && (o.withdist || o.withhash || o.withcoord) {
        let what = if how == Form::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(Error::err_owned(format!(
            "{what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    let name = || args::lossy(argv.get(0));
    if geosearch && !(o.from_member || o.from_lonlat) {
        return Err(Error::err_owned(format!(
            "exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            name()
        )));
    }
    if geosearch && !(o.by_radius || o.by_box) {
        return Err(Error::err_owned(format!(
            "exactly one of BYRADIUS and BYBOX can be specified for {}",
            name()
        )));
    }
    if o.any && o.count == 0 {
        return Err(Error::err("the ANY argument requires COUNT argument"));
    }
    let Some(z) = z else {
        match o.store {
            Some(dst) => store_points(ctx, dst, Vec::new(), how),
            None => ctx.reply.array(0),
        }
        return Ok(());
    };
    // COUNT without an order means the nearest ones (not with ANY).
    if o.count != 0 && o.sort.is_none() && !o.any {
        o.sort = Some(true);
    }
    let limit = if o.any { o.count } else { 0 };
    let mut points = find_points(z, &shape, limit);
    if points.is_empty() && o.store.is_none() {
        ctx.reply.array(0);
        return Ok(());
    }
    let returned = if o.count == 0 {
        points.len()
    } else {
        points.len().min(o.count)
    };
    if let Some(asc) = o.sort {
        let by_dist = |a: &Point<'_>, b: &Point<'_>| {
            let ord = a
                .dist
                .partial_cmp(&b.dist)
                .unwrap_or(std::cmp::Ordering::Equal);
            if asc {
                ord
            } else {
                ord.reverse()
            }
        };
        if returned == points.len() {
            // Redis's qsort is glibc's merge sort: stable.
            points.sort_by(by_dist);
        } else {
            pqsort(&mut points, by_dist, 0, returned - 1);
        }
    }
    points.truncate(returned);
    for p in &mut points {
        p.dist /= shape.conversion;
    }
    if let Some(dst) = o.store {
        let scored: Vec<(Vec<u8>, f64)> = points
            .iter()
            .map(|p| {
                (
                    p.member.to_vec(),
                    if o.storedist { p.dist } else { p.score },
                )
            })
            .collect();
        store_points(ctx, dst, scored, how);
        return Ok(());
    }
    let extras = usize::from(o.withdist) + usize::from(o.withhash) + usize::from(o.withcoord);
    let replies = &mut ctx.reply;
    replies.array(points.len());
    for p in &points {
        if extras > 0 {
            replies.array(extras + 1);
        }
        replies.bulk(p.member);
        if o.withdist {
            replies.bulk(num::fmt_fixed(p.dist, 4).as_bytes());
        }
        if o.withhash {
            replies.int(p.score as i64);
        }
        if o.withcoord {
            replies.array(2);
            replies.human_double(p.xy[0]);
            replies.human_double(p.xy[1]);
        }
    }
    Ok(())
}

/// Redis's membersOfAllNeighbors: the points of `z` inside the shape, box
/// by box in Redis's order; with `limit` > 0 (ANY) stops once that many
/// were found.
fn find_points<'a>(z: &'a ZSet, shape: &Shape, limit: usize) -> Vec<Point<'a>> {
    let boxes = geohash::search_boxes(shape);
    let mut found = Vec::new();
    let full = |found: &Vec<Point<'_>>| limit > 0 && found.len() >= limit;
    for (min, max) in geohash::score_ranges(&boxes) {
        if full(&found) {
            break;
        }
        let (min, max) = (min as f64, max as f64);
        let start = z.count_prefix(|s, _| s < min);
        for (member, score) in z.iter_from(start) {
            if score >= max {
                break;
            }
            if let Some((xy, dist)) = geohash::within(shape, score) {
                found.push(Point {
                    member,
                    score,
                    xy,
                    dist,
                });
            }
            if full(&found) {
                break;
            }
        }
    }
    found
}

/// STORE/STOREDIST and GEOSEARCHSTORE: writes the points (deleting the
/// destination when there are none) and replies their number.
fn store_points(ctx: &mut Ctx<'_>, dst: &[u8], points: Vec<(Vec<u8>, f64)>, how: Form) {
    let db = ctx.db();
    let n = points.len();
    if n == 0 {
        if ctx.store.delete_destination(db, dst) {
            super::pubsub::notify(ctx, b'g', "del", dst);
        }
    } else {
        // Built as a skiplist, then made compact if small, as Redis does.
        let mut z = ZSet::with_hint(usize::MAX, 0);
        for (m, s) in &points {
            z.insert(m, *s);
        }
        z.shrink_encoding();
        ctx.store.set(db, dst, Value::ZSet(z), Ttl::None);
        let event = if matches!(how, Form::Search | Form::SearchStore) {
            "geosearchstore"
        } else {
            "georadiusstore"
        };
        super::pubsub::notify(ctx, b'z', event, dst);
        ctx.count_changes(n as u64);
    }
    ctx.reply.int(n as i64);
}
