//! SORT and SORT_RO (Redis's `sort.c`): sort a list, set or sorted set by
//! its elements or by external keys (BY), fetch other keys per element
//! (GET), with LIMIT, ASC/DESC, ALPHA and STORE.

use std::cmp::Ordering;

use super::args::{self, is};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::store::list::{End, List};
use crate::store::value::{StrRef, Value};
use crate::store::{Store, Ttl};
use crate::util::num;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[("sort", sort), ("sort_ro", sort_ro)];

fn sort(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    sort_generic(ctx, argv, false)
}

fn sort_ro(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    sort_generic(ctx, argv, true)
}

fn str_bytes(s: StrRef<'_>) -> Vec<u8> {
    match s {
        StrRef::Bytes(b) => b.to_vec(),
        StrRef::Int(n) => n.to_string().into_bytes(),
    }
}

/// What a BY/GET pattern found (Redis's lookupKeyByPattern): a string
/// value, an integer-encoded one, or nothing.
enum Found {
    Bytes(Vec<u8>),
    Int(i64),
}

impl Found {
    fn into_bytes(self) -> Vec<u8> {
        match self {
            Found::Bytes(b) => b,
            Found::Int(n) => n.to_string().into_bytes(),
        }
    }
}

/// Substitutes the first `*` of `pattern` with `subst` and reads that key,
/// or the hash field after `->`. `#` alone stands for the element itself.
fn lookup(store: &mut Store, db: usize, pattern: &[u8], subst: &[u8]) -> Option<Found> {
    if pattern == b"#" {
        return Some(Found::Bytes(subst.to_vec()));
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    let rest = &pattern[star + 1..];
    let arrow = rest
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&i| i + 2 < rest.len());
    let (tail, field) = match arrow {
        Some(i) => (&rest[..i], Some(&rest[i + 2..])),
        None => (rest, None),
    };
    let mut key = Vec::with_capacity(pattern.len() + subst.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(subst);
    key.extend_from_slice(tail);
    let e = store.get_read(db, &key)?;
    match (field, &*e.value()) {
        (Some(f), Value::Hash(h)) => h.get(f).map(|v| Found::Bytes(v.to_vec())),
        (Some(_), _) => None,
        (None, Value::Int(n)) => Some(Found::Int(*n)),
        (None, v) => v.as_str().map(|s| Found::Bytes(str_bytes(s))),
    }
}

/// The client's user may run this SORT and read any key (BY and GET
/// patterns name keys the ACL check never saw).
fn can_read_any_key(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> bool {
    let Some(user) = ctx.client.user.clone() else {
        return true;
    };
    let user = user.borrow();
    let server = &mut *ctx.server;
    let Some(id) = server.table.lookup(argv.get(0)) else {
        return true;
    };
    server
        .acl
        .can_read_any_key(&user, &server.table.commands[id], &argv)
}

/// One element being sorted with its sort weight.
struct Item {
    elem: Vec<u8>,
    score: f64,
    cmp: Option<Vec<u8>>,
}

fn sort_generic(ctx: &mut Ctx<'_>, argv: Argv<'_>, read_only: bool) -> CmdResult {
    let mut desc = false;
    let mut alpha = false;
    let mut limit: Option<(i64, i64)> = None;
    let mut store_key: Option<&[u8]> = None;
    let mut by: Option<&[u8]> = None;
    let mut dontsort = false;
    let mut gets: Vec<&[u8]> = Vec::new();
    // Computed at the first BY or GET pattern.
    let mut full_key_access: Option<bool> = None;
    let mut j = 2;
    while j < argv.len() {
        let a = argv.get(j);
        let left = argv.len() - j - 1;
        if is(a, "asc") {
            desc = false;
        } else if is(a, "desc") {
            desc = true;
        } else if is(a, "alpha") {
            alpha = true;
        } else if is(a, "limit") && left >= 2 {
            let start = args::int(argv.get(j + 1))?;
            let count = args::int(argv.get(j + 2))?;
            limit = Some((start, count));
            j += 2;
        } else if is(a, "store") && left >= 1 && !read_only {
            store_key = Some(argv.get(j + 1));
            j += 1;
        } else if is(a, "by") && left >= 1 {
            let p = argv.get(j + 1);
            // A pattern without '*' means "do not sort" (Redis's trick
            // for fetching GET keys in the set's natural order).
            dontsort = !p.contains(&b'*');
            // A real pattern reads keys no argument names: refused in a
            // cluster and to users who may not read every key.
            if !dontsort && ctx.server.cluster.is_some() {
                return Err(Error::err("BY option of SORT denied in Cluster mode."));
            }
            if !dontsort && !*full_key_access.get_or_insert_with(|| can_read_any_key(ctx, argv)) {
                return Err(Error::err(
                    "BY option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            by = Some(p);
            j += 1;
        } else if is(a, "get") && left >= 1 {
            if ctx.server.cluster.is_some() {
                return Err(Error::err("GET option of SORT denied in Cluster mode."));
            }
            if !*full_key_access.get_or_insert_with(|| can_read_any_key(ctx, argv)) {
                return Err(Error::err(
                    "GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            gets.push(argv.get(j + 1));
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let db = ctx.db();
    let key = argv.get(1);
    // The elements in their natural order.
    let mut is_set = false;
    let mut is_zset = false;
    let elems: Vec<Vec<u8>> = match ctx
        .store
        .get_read(db, key)
        .map(|e| e.into_ref().value())
        .as_deref()
    {
        None => Vec::new(),
        Some(Value::List(l)) => l.iter().map(<[u8]>::to_vec).collect(),
        Some(Value::Set(s)) => {
            is_set = true;
            s.iter().map(|m| m.to_vec()).collect()
        }
        Some(Value::ZSet(z)) => {
            is_zset = true;
            z.iter_from(0).map(|(m, _)| m.to_vec()).collect()
        }
        Some(_) => return Err(Error::WrongType),
    };
    // Redis's sortCommandGeneric converts a sorted set it sorts to a
    // skiplist for good, which OBJECT ENCODING and snapshots show.
    if is_zset {
        if let Some(Value::ZSet(z)) = ctx.store.get(db, key).and_then(|e| e.into_object_mut()) {
            z.convert_to_skiplist();
        }
    }
    // Sets have no defined order: STORE and scripts sort them so results
    // are deterministic, as Redis does.
    if dontsort && is_set && (store_key.is_some() || ctx.client.script) {
        dontsort = false;
        alpha = true;
        by = None;
    }
    let len = elems.len() as i64;
    let (mut start, mut end) = match limit {
        Some((s, c)) => {
            let s = s.max(0);
            (
                s,
                if c < 0 {
                    len - 1
                } else {
                    s.saturating_add(c) - 1
                },
            )
        }
        None => (0, len - 1),
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    let mut items: Vec<Item> = elems
        .into_iter()
        .map(|elem| Item {
            elem,
            score: 0.0,
            cmp: None,
        })
        .collect();
    // Lists and sorted sets in natural order honour DESC by reading
    // backwards (Redis reverses the range for them).
    if dontsort && desc && !is_set {
        items.reverse();
    }
    if !dontsort {
        let mut bad = false;
        for it in items.iter_mut() {
            let byval = match by {
                Some(p) => match lookup(ctx.store, db, p, &it.elem) {
                    Some(v) => Some(v),
                    None => continue,
                },
                None => None,
            };
            if alpha {
                if by.is_some() {
                    it.cmp = byval.map(Found::into_bytes);
                }
            } else {
                let score = match byval {
                    Some(Found::Int(n)) => Some(n as f64),
                    Some(Found::Bytes(b)) => parse_score(&b),
                    None => parse_score(&it.elem),
                };
                match score {
                    Some(s) => it.score = s,
                    None => bad = true,
                }
            }
        }
        if bad {
            return Err(Error::err(
                "One or more scores can't be converted into double",
            ));
        }
        let by_pattern = by.is_some();
        items.sort_by(|a, b| {
            let c = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.elem.cmp(&b.elem))
            } else if by_pattern {
                match (&a.cmp, &b.cmp) {
                    (Some(x), Some(y)) => x.cmp(y),
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                }
            } else {
                a.elem.cmp(&b.elem)
            };
            if desc {
                c.reverse()
            } else {
                c
            }
        });
    }
    let range: &[Item] = if end >= start && start >= 0 {
        &items[start as usize..=end as usize]
    } else {
        &[]
    };
    let per = gets.len().max(1);
    let outlen = range.len() * per;
    match store_key {
        None => {
            ctx.reply.array(outlen);
            for it in range {
                if gets.is_empty() {
                    ctx.reply.bulk(&it.elem);
                }
                for g in &gets {
                    match lookup(ctx.store, db, g, &it.elem) {
                        Some(v) => ctx.reply.bulk(&v.into_bytes()),
                        None => ctx.reply.null(),
                    }
                }
            }
        }
        Some(dst) => {
            let mut out = List::new();
            for it in range {
                if gets.is_empty() {
                    out.push(End::Right, &it.elem);
                }
                for g in &gets {
                    let v = lookup(ctx.store, db, g, &it.elem).map(Found::into_bytes);
                    out.push(End::Right, &v.unwrap_or_default());
                }
            }
            if outlen > 0 {
                ctx.store
                    .set(db, dst, Value::List(Box::new(out)), Ttl::None);
                super::pubsub::notify(ctx, b'g', "sortstore", dst);
                ctx.count_changes(outlen as u64);
            } else if ctx.store.delete_destination(db, dst) {
                super::pubsub::notify(ctx, b'g', "del", dst);
            }
            ctx.reply.int(outlen as i64);
        }
    }
    Ok(())
}

/// A sort weight as Redis's sortCommand reads it: C strtod over the whole
/// C string (so "" is 0, and leading spaces and hex are taken), refused
/// out of range or NaN.
fn parse_score(b: &[u8]) -> Option<f64> {
    match num::strtod_whole(b) {
        Some((v, false)) if !v.is_nan() => Some(v),
        _ => None,
    }
}
