//! Keyspace iteration (Redis's `keysCommand` and `scanGenericCommand`):
//! KEYS walks the whole table; SCAN walks it a few buckets at a time with
//! the dictionary's reverse-binary cursor, so a key present for the whole
//! iteration is always returned, even when the table is resized between
//! calls.

use super::args::{self, is};
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};
use crate::store::bytes::CompactBytes;
use crate::util::glob::glob_match;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[("keys", keys), ("scan", scan)];

/// KEYS pattern. Expired keys are skipped but not deleted, as in Redis 7.0.
fn keys(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let pattern = argv.get(1);
    let all = pattern == b"*";
    let now = ctx.store.now();
    let d = &ctx.store.dbs[ctx.db()];
    let mark = ctx.reply.defer();
    let mut n = 0;
    d.dict.for_each(|e| {
        let key = e.key();
        if (all || glob_match(pattern, key, false)) && !e.is_expired(now) {
            ctx.reply.bulk(key);
            n += 1;
        }
    });
    ctx.reply.finish_deferred_array(mark, n);
    Ok(())
}

/// Parses a SCAN cursor the way Redis does with `strtoul`: an optional sign
/// (a negative number wraps around), decimal digits, nothing after them,
/// no leading space; an empty string reads as 0.
pub(super) fn parse_cursor(arg: &[u8]) -> Option<u64> {
    let (neg, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() {
        // strtoul converts nothing and leaves the end pointer at the start:
        // fine for "", not for a lone sign.
        return arg.is_empty().then_some(0);
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].
fn scan(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let cursor = parse_cursor(argv.get(1)).ok_or(Error::err("invalid cursor"))?;
    let mut count: i64 = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut type_name: Option<&[u8]> = None;
    let mut i = 2;
    while i < argv.len() {
        let opt = argv.get(i);
        let Some(arg) = argv.try_get(i + 1) else {
            return Err(Error::Syntax);
        };
        if is(opt, "count") {
            count = args::int(arg)?;
            if count < 1 {
                return Err(Error::Syntax);
            }
        } else if is(opt, "match") {
            // "*" matches everything: skip the matcher.
            pattern = (arg != b"*").then_some(arg);
        } else if is(opt, "type") {
            type_name = Some(arg);
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }

    let db = ctx.db();
    let mut found: Vec<CompactBytes> = Vec::new();
    let mut cursor = cursor;
    // At most ten buckets per requested key, so a sparse table cannot make
    // one call walk for long (Redis's maxiterations).
    let mut budget = count.saturating_mul(10);
    let dict = &ctx.store.dbs[db].dict;
    loop {
        cursor = dict.scan(cursor, |e| found.push(CompactBytes::new(e.key())));
        if cursor == 0 || budget == 0 || found.len() as u64 >= count as u64 {
            break;
        }
        budget -= 1;
    }

    // Filter after collecting, as Redis does: pattern, type, then expiry
    // (an expired key met here is deleted, on a master).
    found.retain(|k| {
        let key = k.as_slice();
        if let Some(p) = pattern {
            if !glob_match(p, key, false) {
                return false;
            }
        }
        if let Some(t) = type_name {
            let actual = ctx
                .store
                .get_read_notouch(db, key)
                .map_or("none", |e| e.type_name());
            if !t.eq_ignore_ascii_case(actual.as_bytes()) {
                return false;
            }
            if actual == "none" {
                // The lookup just deleted an expired key, so Redis's
                // expiry check that follows finds nothing to expire and
                // keeps it: `SCAN 0 TYPE none` lists expired keys.
                return true;
            }
        }
        !ctx.store.expire_if_needed(db, key)
    });

    ctx.reply.array(2);
    // A returned cursor is below the table size, so it fits an i64 (Redis
    // writes it with addReplyBulkLongLong too).
    ctx.reply.bulk_i64(cursor as i64);
    ctx.reply.array(found.len());
    for k in &found {
        ctx.reply.bulk(k.as_slice());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursor_follows_strtoul() {
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551616"), None);
        assert_eq!(parse_cursor(b"+"), None);
        assert_eq!(parse_cursor(b" 1"), None);
        assert_eq!(parse_cursor(b"1x"), None);
    }
}
