//! HyperLogLog commands (Redis's `hyperloglog.c`): PFADD, PFCOUNT,
//! PFMERGE, PFDEBUG and PFSELFTEST. The value is a plain string in Redis's
//! `HYLL` layout (`store/hll.rs`), so GET, DUMP, the RDB and the AOF carry
//! the same bytes as Redis's.

use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::store::hll::{self, Corrupt, REGISTERS};
use crate::store::value::Value;
use crate::store::Store;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("pfadd", pfadd),
    ("pfcount", pfcount),
    ("pfmerge", pfmerge),
    ("pfdebug", pfdebug),
    ("pfselftest", pfselftest),
];

impl From<Corrupt> for Error {
    fn from(_: Corrupt) -> Self {
        Error::raw("INVALIDOBJ Corrupted HLL object detected")
    }
}

/// Redis's isHLLObjectOrReply: WRONGTYPE for other types, and its own
/// WRONGTYPE text for a string that is not an HLL.
fn hll_bytes(value: &Value) -> Result<&[u8], Error> {
    let bytes = match value {
        Value::Str(s) => s.as_slice(),
        Value::Raw(v) => v.as_slice(),
        Value::Large(v) => v,
        // An int-encoded string is never an HLL.
        Value::Int(_) => &[],
        _ => return Err(Error::WrongType),
    };
    if hll::is_hll(bytes) {
        Ok(bytes)
    } else {
        Err(Error::raw(
            "WRONGTYPE Key is not a valid HyperLogLog string value.",
        ))
    }
}

/// The checked HLL bytes of `value`, made raw for writing in place
/// (Redis's dbUnshareStringValue).
fn writable(value: &mut Value) -> Result<&mut Vec<u8>, Error> {
    hll_bytes(value)?;
    super::string::make_raw(value)
}

/// The HLL at `key` for writing; None when missing.
fn hll_for_write<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
) -> Result<Option<&'a mut Vec<u8>>, Error> {
    match store.get(db, key) {
        None => Ok(None),
        Some(e) => writable(e.into_value_mut()).map(Some),
    }
}

/// The HLL at `key` for writing, created empty (Redis's createHLLObject)
/// when missing; true when it was created.
fn hll_or_new<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
) -> Result<(&'a mut Vec<u8>, bool), Error> {
    if store.get(db, key).is_none() {
        let e = store.insert_new(db, key, Value::Raw(Box::new(hll::new_sparse())));
        return writable(e.into_value_mut()).map(|v| (v, true));
    }
    let v = hll_for_write(store, db, key)?.ok_or(Error::WrongType)?;
    Ok((v, false))
}

fn pfadd(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (db, key) = (ctx.db(), argv.get(1));
    let max_bytes = ctx.server.config.hll_sparse_max_bytes;
    let (v, created) = hll_or_new(ctx.store, db, key)?;
    let mut updated = usize::from(created);
    for ele in argv.iter_from(2) {
        updated += usize::from(hll::add(v, ele, max_bytes)?);
    }
    if updated > 0 {
        hll::invalidate_cache(v);
        if !created {
            ctx.store.signal_modified(db, key);
        }
        super::pubsub::notify(ctx, b'$', "pfadd", key);
    }
    // Each register changed counts, and the creation (pfaddCommand).
    ctx.count_changes(updated as u64);
    ctx.reply.int(i64::from(updated > 0));
    Ok(())
}

/// Merges the HLLs at `keys` (missing ones count as empty) into one
/// register per byte; also tells whether any was dense.
fn merge_keys<'k>(
    store: &mut Store,
    db: usize,
    keys: impl Iterator<Item = &'k [u8]>,
) -> Result<(Box<[u8; REGISTERS]>, bool), Error> {
    let mut max = Box::new([0u8; REGISTERS]);
    let mut dense = false;
    for key in keys {
        if let Some(e) = store.get_read(db, key) {
            let value = e.value();
            let bytes = hll_bytes(&value)?;
            dense |= hll::encoding(bytes) == hll::Encoding::Dense;
            hll::merge_into(&mut max, bytes)?;
        }
    }
    Ok((max, dense))
}

fn pfcount(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    if argv.len() > 2 {
        let (max, _) = merge_keys(ctx.store, db, argv.iter_from(1))?;
        ctx.reply.int(hll::count_registers(&max) as i64);
        return Ok(());
    }
    let key = argv.get(1);
    let Some(e) = ctx.store.get_read(db, key) else {
        ctx.reply.int(0);
        return Ok(());
    };
    let v = writable(e.into_value_mut())?;
    if let Some(card) = hll::cached_card(v) {
        ctx.reply.int(card as i64);
        return Ok(());
    }
    let card = hll::count(v)?;
    hll::set_cached_card(v, card);
    // A read-only command that rewrote the value: Redis propagates it as
    // it does any command that moved the dirty counter.
    ctx.store.signal_modified(db, key);
    ctx.also_propagate(&[b"PFCOUNT", key]);
    ctx.reply.int(card as i64);
    Ok(())
}

fn pfmerge(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (db, dest) = (ctx.db(), argv.get(1));
    let max_bytes = ctx.server.config.hll_sparse_max_bytes;
    // The destination is a source too, so its type was checked here.
    let (max, dense) = merge_keys(ctx.store, db, argv.iter_from(1))?;
    let (v, _) = hll_or_new(ctx.store, db, dest)?;
    if dense {
        hll::to_dense(v)?;
    }
    for (i, &count) in max.iter().enumerate() {
        if count > 0 {
            // As Redis, a corrupt destination is not reported here.
            let _ = hll::set_register(v, i, count, max_bytes);
        }
    }
    hll::invalidate_cache(v);
    ctx.store.signal_modified(db, dest);
    super::pubsub::notify(ctx, b'$', "pfadd", dest);
    ctx.count_changes(1);
    ctx.reply.ok();
    Ok(())
}

fn pfdebug(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let (db, sub, key) = (ctx.db(), argv.get(1), argv.get(2));
    let Some(v) = hll_for_write(ctx.store, db, key)? else {
        return Err(Error::err("The specified key does not exist"));
    };
    let is = |name| super::args::is(sub, name);
    if is("getreg") {
        let converted = hll::to_dense(v)?;
        let regs: Vec<u8> = (0..REGISTERS)
            .map(|i| hll::dense_get(&v[hll::HDR..], i))
            .collect();
        if converted {
            // Redis only moves the dirty counter, so the change reaches
            // the AOF while WATCH does not see it.
            ctx.store.stats.dirty += 1;
        }
        ctx.reply.array(REGISTERS);
        for r in regs {
            ctx.reply.int(i64::from(r));
        }
    } else if is("decode") {
        if hll::encoding(v) != hll::Encoding::Sparse {
            return Err(Error::err("HLL encoding is not sparse"));
        }
        let text = hll::decode(v);
        ctx.reply.bulk(text.as_bytes());
    } else if is("encoding") {
        let name = match hll::encoding(v) {
            hll::Encoding::Dense => "dense",
            hll::Encoding::Sparse => "sparse",
        };
        ctx.reply.simple(name);
    } else if is("todense") {
        let converted = hll::to_dense(v)?;
        if converted {
            // Redis only moves the dirty counter, so the change reaches
            // the AOF while WATCH does not see it.
            ctx.store.stats.dirty += 1;
        }
        ctx.reply.int(i64::from(converted));
    } else {
        return Err(Error::err_owned(format!(
            "Unknown PFDEBUG subcommand '{}'",
            super::args::lossy(sub)
        )));
    }
    Ok(())
}

fn pfselftest(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let seed = rand::random::<u64>();
    hll::self_test(ctx.server.config.hll_sparse_max_bytes, seed).map_err(Error::err_owned)?;
    ctx.reply.ok();
    Ok(())
}
