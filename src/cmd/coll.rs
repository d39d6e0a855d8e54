//! Helpers shared by the collection families (hashes, sets): typed key
//! lookups that answer WRONGTYPE, deleting keys whose collection became
//! empty, the *SCAN option parser and the count argument of the random
//! commands.

use super::args::{self, is};
use super::Argv;
use crate::error::Error;
use crate::store::dict::Entry;
use crate::store::hash::Hash;
use crate::store::set::Set;
use crate::store::value::Value;
use crate::store::zset::ZSet;
use crate::store::Store;
use crate::util::glob::glob_match;

/// The hash at `key` for reading (a hit/miss lookup); None when missing.
/// Like Redis's dictFind, a read of a table moves one step of an
/// incremental rehash along (so do the other read helpers).
pub(super) fn hash_read<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
) -> Result<Option<&'a Hash>, Error> {
    match store.get_read(db, key).map(|e| e.into_object_mut()) {
        None => Ok(None),
        Some(Some(Value::Hash(h))) => {
            if let Hash::Table(m) = h {
                m.rehash_step();
            }
            Ok(Some(h))
        }
        Some(_) => Err(Error::WrongType),
    }
}

/// The set at `key` for reading; None when missing.
pub(super) fn set_read<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
) -> Result<Option<&'a Set>, Error> {
    match store.get_read(db, key) {
        None => Ok(None),
        Some(e) => {
            let s = e.into_set_mut().ok_or(Error::WrongType)?;
            s.rehash_step();
            Ok(Some(s))
        }
    }
}

/// The set at `key` for SRANDMEMBER: a read lookup, mutable only so each
/// random draw can move a table's rehash along as Redis's draws do.
pub(super) fn set_sample<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
) -> Result<Option<&'a mut Set>, Error> {
    match store.get_read(db, key) {
        None => Ok(None),
        Some(e) => e.into_set_mut().map(Some).ok_or(Error::WrongType),
    }
}

/// The sorted set at `key` for reading; None when missing.
pub(super) fn zset_read<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
) -> Result<Option<&'a ZSet>, Error> {
    match store.get_read(db, key).map(|e| e.into_object_mut()) {
        None => Ok(None),
        Some(Some(Value::ZSet(z))) => {
            z.rehash_step();
            Ok(Some(z))
        }
        Some(_) => Err(Error::WrongType),
    }
}

/// The sorted set at `key` for writing; when missing and `create` is
/// Some((size, member_len)), created with that size hint. The caller must
/// call [`finish_write`] afterwards.
pub(super) fn zset_write<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
    create: Option<(usize, usize)>,
) -> Result<Option<&'a mut ZSet>, Error> {
    if !check(store, db, key, |e| {
        matches!(e.object(), Some(Value::ZSet(_)))
    })? {
        let Some((size, len)) = create else {
            return Ok(None);
        };
        store.insert_new(db, key, Value::ZSet(ZSet::with_hint(size, len)));
    }
    match store.get(db, key) {
        Some(e) => match e.into_value_mut() {
            Value::ZSet(z) => Ok(Some(z)),
            _ => Err(Error::WrongType),
        },
        None => Ok(None),
    }
}

/// Checks the type of `key` for a write: Ok(true) when it holds the type
/// `is_type` accepts, Ok(false) when missing, WRONGTYPE otherwise.
fn check(
    store: &mut Store,
    db: usize,
    key: &[u8],
    is_type: fn(&Entry) -> bool,
) -> Result<bool, Error> {
    match store.get(db, key) {
        None => Ok(false),
        Some(e) if is_type(&e) => Ok(true),
        Some(_) => Err(Error::WrongType),
    }
}

/// The hash at `key` for writing, created empty when missing and `create`.
/// The caller must call [`finish_write`] afterwards.
pub(super) fn hash_write<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
    create: bool,
) -> Result<Option<&'a mut Hash>, Error> {
    if !check(store, db, key, |e| {
        matches!(e.object(), Some(Value::Hash(_)))
    })? {
        if !create {
            return Ok(None);
        }
        store.insert_new(db, key, Value::Hash(Default::default()));
    }
    match store.get(db, key) {
        Some(e) => match e.into_value_mut() {
            Value::Hash(h) => Ok(Some(h)),
            _ => Err(Error::WrongType),
        },
        None => Ok(None),
    }
}

/// The set at `key` for writing, created empty when missing and `create`.
/// The caller must call [`finish_write`] afterwards.
pub(super) fn set_write<'a>(
    store: &'a mut Store,
    db: usize,
    key: &[u8],
    create: bool,
) -> Result<Option<&'a mut Set>, Error> {
    if !check(store, db, key, |e| e.set().is_some())? {
        if !create {
            return Ok(None);
        }
        store.insert_new(db, key, Value::Set(Default::default()));
    }
    match store.get(db, key) {
        Some(e) => e.into_set_mut().map(Some).ok_or(Error::WrongType),
        None => Ok(None),
    }
}

/// After a write to the collection at `key`: signals the change when
/// `changed`, and deletes the key if the collection is now empty (Redis
/// never keeps empty collections).
pub(super) fn finish_write(store: &mut Store, db: usize, key: &[u8], changed: bool) {
    let empty = match store.get(db, key) {
        Some(mut e) => {
            e.settle_set();
            match (e.set(), e.object()) {
                (Some(s), _) => s.is_empty(),
                (_, Some(Value::Hash(h))) => h.is_empty(),
                (_, Some(Value::ZSet(z))) => z.is_empty(),
                _ => false,
            }
        }
        None => false,
    };
    if empty {
        store.delete(db, key);
    } else if changed {
        store.signal_modified(db, key);
    }
}

/// Parsed `[MATCH pattern] [COUNT count]` of HSCAN/SSCAN/ZSCAN.
pub(super) struct ScanOpts<'a> {
    /// The pattern, None for "match everything".
    pub pattern: Option<&'a [u8]>,
    /// Hash positions to visit per call.
    pub count: usize,
}

impl ScanOpts<'_> {
    /// True when `member` passes the MATCH filter.
    pub fn matches(&self, member: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, member, false))
    }
}

/// Parses the options after the cursor (from `argv[3]`), as Redis's
/// scanGenericCommand does for a key's collection (TYPE is not allowed).
pub(super) fn scan_opts<'a>(argv: &Argv<'a>) -> Result<ScanOpts<'a>, Error> {
    let mut opts = ScanOpts {
        pattern: None,
        count: 10,
    };
    let mut i = 3;
    while i < argv.len() {
        let opt = argv.get(i);
        let Some(arg) = argv.try_get(i + 1) else {
            return Err(Error::Syntax);
        };
        if is(opt, "count") {
            let n = args::int(arg)?;
            if n < 1 {
                return Err(Error::Syntax);
            }
            opts.count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if is(opt, "match") {
            opts.pattern = (arg != b"*").then_some(arg);
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }
    Ok(opts)
}

/// The count of HRANDFIELD/SRANDMEMBER/ZRANDMEMBER: an integer in
/// [-LONG_MAX, LONG_MAX] (Redis's getRangeLongFromObjectOrReply).
pub(super) fn random_count(arg: &[u8]) -> Result<i64, Error> {
    let n = args::int(arg)?;
    if n == i64::MIN {
        return Err(Error::err(
            "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    Ok(n)
}

/// Random bits for sampling.
#[inline]
pub(super) fn rnd() -> u64 {
    rand::random::<u64>()
}
