//! LCS: the longest common subsequence of two strings, with Redis 7.0's
//! dynamic-programming table, its LEN / IDX / MINMATCHLEN / WITHMATCHLEN
//! options and reply shapes.

use crate::cmd::args;
use crate::cmd::string::keyword;
use crate::cmd::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::net::reply::ReplyBuf;
use crate::store::value::StrRef;

/// Options of LCS.
#[derive(Default)]
struct LcsOptions {
    len: bool,
    idx: bool,
    withmatchlen: bool,
    minmatchlen: u64,
}

pub(super) fn lcs(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let (ka, kb) = (argv.get(1), argv.get(2));
    // Both lookups count as reads (hits/misses) before any option check.
    let a_string = ctx.store.get_read(db, ka).map(|e| e.is_string());
    let b_string = ctx.store.get_read(db, kb).map(|e| e.is_string());
    if a_string == Some(false) || b_string == Some(false) {
        return Err(Error::err("The specified keys must contain string values"));
    }
    let mut o = LcsOptions::default();
    let mut j = 3;
    while j < argv.len() {
        let opt = keyword(argv.get(j));
        if args::is(opt, "idx") {
            o.idx = true;
        } else if args::is(opt, "len") {
            o.len = true;
        } else if args::is(opt, "withmatchlen") {
            o.withmatchlen = true;
        } else if args::is(opt, "minmatchlen") && j + 1 < argv.len() {
            o.minmatchlen = args::int(argv.get(j + 1))?.max(0) as u64;
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    if o.idx && o.len {
        return Err(Error::err(
            "If you want both the length and indexes, please just use IDX.",
        ));
    }
    let max_table = ctx.server.config.proto_max_bulk_len as u64;
    let empty = StrRef::Bytes(b"");
    let store = &*ctx.store;
    let a = store.peek(db, ka).and_then(|e| e.as_str());
    let b = store.peek(db, kb).and_then(|e| e.as_str());
    let reply = &mut ctx.reply;
    a.as_ref().unwrap_or(&empty).with(|a| {
        b.as_ref()
            .unwrap_or(&empty)
            .with(|b| compute(reply, a, b, &o, max_table))
    })
}

/// Builds the table and writes the reply.
fn compute(
    reply: &mut ReplyBuf<'_>,
    a: &[u8],
    b: &[u8],
    o: &LcsOptions,
    max_table: u64,
) -> CmdResult {
    if a.len() as u64 >= u64::from(u32::MAX - 1) || b.len() as u64 >= u64::from(u32::MAX - 1) {
        return Err(Error::err("String too long for LCS"));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    if cells.saturating_mul(4) > max_table {
        return Err(Error::err(
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let alloc_failed =
        || Error::err("Insufficient memory, failed allocating transient memory for LCS");
    let cells = usize::try_from(cells).map_err(|_| alloc_failed())?;
    let mut table: Vec<u32> = Vec::new();
    table.try_reserve_exact(cells).map_err(|_| alloc_failed())?;
    table.resize(cells, 0);
    let w = blen + 1;
    // LCS(i, j) = length of the LCS of a[..i] and b[..j].
    for i in 1..=alen {
        for j in 1..=blen {
            table[i * w + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * w + j - 1] + 1
            } else {
                table[(i - 1) * w + j].max(table[i * w + j - 1])
            };
        }
    }
    let total = table[alen * w + blen];
    if o.len && !o.idx {
        reply.int(i64::from(total));
        return Ok(());
    }
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut deferred = None;
    if o.idx {
        reply.map(2);
        reply.bulk(b"matches");
        deferred = Some(reply.defer());
    }
    let mut ranges = 0usize;
    // Walk back from the end, emitting each contiguous matching run as
    // Redis does (alen in arange_start means "no run open").
    let (mut i, mut j) = (alen, blen);
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0usize, 0usize, 0usize);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            if let Some(slot) = idx.checked_sub(1).and_then(|k| result.get_mut(k)) {
                *slot = a[i - 1];
            }
            if a_start == alen {
                (a_start, a_end, b_start, b_end) = (i - 1, i - 1, j - 1, j - 1);
            } else if a_start == i && b_start == j {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx = idx.saturating_sub(1);
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * w + j] > table[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        if emit {
            let match_len = (a_end - a_start + 1) as u64;
            if deferred.is_some() && (o.minmatchlen == 0 || match_len >= o.minmatchlen) {
                reply.array(2 + usize::from(o.withmatchlen));
                reply.array(2);
                reply.int(a_start as i64);
                reply.int(a_end as i64);
                reply.array(2);
                reply.int(b_start as i64);
                reply.int(b_end as i64);
                if o.withmatchlen {
                    reply.int(match_len as i64);
                }
                ranges += 1;
            }
            a_start = alen;
        }
    }
    match deferred {
        Some(mark) => {
            reply.bulk(b"len");
            reply.int(i64::from(total));
            reply.finish_deferred_array(mark, ranges);
        }
        None => reply.bulk(&result),
    }
    Ok(())
}
