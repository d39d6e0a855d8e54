//! Streams in RDB (`RDB_TYPE_STREAM_LISTPACKS_2`, Redis 7.0's `rdbSaveObject`
//! and `rdbLoadObject` stream branches): the nodes as (master ID, listpack)
//! pairs, then length, last ID, first ID, largest deleted ID, entries added
//! and the consumer groups.
//!
//! ferrokv keeps no consumer groups, so it writes none; groups in a file
//! written by Redis are read and dropped. Entries marked deleted are not
//! kept in memory, so a saved node holds only its live entries (Redis reads
//! such nodes like any other).

use super::listpack;
use super::load::{Dec, LoadError};
use super::save::Enc;
use crate::store::stream::{Stream, StreamId};
use crate::util::num;

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;

fn push_int(out: &mut Vec<u8>, v: i64) {
    let mut b = num::itoa_buf();
    listpack::push_entry(out, num::fmt_i64(v, &mut b));
}

fn id_key(id: StreamId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.ms.to_be_bytes());
    k[8..].copy_from_slice(&id.seq.to_be_bytes());
    k
}

/// Writes a stream's body (after the type byte).
pub fn save(e: &mut Enc, s: &Stream) {
    let nodes: Vec<_> = s.nodes.iter().filter(|(_, n)| n.live > 0).collect();
    e.len(nodes.len() as u64);
    for (master, node) in nodes {
        let mut items = Vec::new();
        let mut count = 0usize;
        let int = |items: &mut Vec<u8>, v: i64, count: &mut usize| {
            push_int(items, v);
            *count += 1;
        };
        int(&mut items, node.live as i64, &mut count);
        int(&mut items, 0, &mut count);
        int(&mut items, node.master_fields.len() as i64, &mut count);
        for f in &node.master_fields {
            listpack::push_entry(&mut items, f);
            count += 1;
        }
        int(&mut items, 0, &mut count);
        for (id, fields) in s.entries.range(*master..=node.last) {
            let n = fields.len() / 2;
            let same = n == node.master_fields.len()
                && node
                    .master_fields
                    .iter()
                    .zip(fields.iter().step_by(2))
                    .all(|(a, b)| a == b);
            int(
                &mut items,
                if same { FLAG_SAMEFIELDS } else { 0 },
                &mut count,
            );
            int(&mut items, id.ms.wrapping_sub(master.ms) as i64, &mut count);
            int(
                &mut items,
                id.seq.wrapping_sub(master.seq) as i64,
                &mut count,
            );
            if !same {
                int(&mut items, n as i64, &mut count);
            }
            for (i, f) in fields.iter().enumerate() {
                if i % 2 == 1 || !same {
                    listpack::push_entry(&mut items, f);
                    count += 1;
                }
            }
            let lp_count = if same { n + 3 } else { 2 * n + 4 };
            int(&mut items, lp_count as i64, &mut count);
        }
        e.string(&id_key(*master));
        e.string(&listpack::finish(&mut items, count));
    }
    e.len(s.len());
    e.len(s.last_id.ms);
    e.len(s.last_id.seq);
    let first = s.first_id();
    e.len(first.ms);
    e.len(first.seq);
    e.len(s.max_deleted_id.ms);
    e.len(s.max_deleted_id.seq);
    e.len(s.entries_added);
    e.len(0);
}

/// Reads a stream's body of type 15 (`STREAM_LISTPACKS`) or 19
/// (`STREAM_LISTPACKS_2`).
pub fn load(d: &mut Dec<'_>, v2: bool) -> Result<Stream, LoadError> {
    let mut s = Stream::default();
    let nodes = d.length()?;
    for _ in 0..nodes {
        let at = d.pos;
        let key = d.string()?;
        let Ok(key): Result<[u8; 16], _> = key.as_ref().try_into() else {
            return Err(LoadError {
                offset: at,
                reason: "stream node key is not 128 bits".into(),
            });
        };
        let master = StreamId::new(
            u64::from_be_bytes(key[..8].try_into().unwrap_or_default()),
            u64::from_be_bytes(key[8..].try_into().unwrap_or_default()),
        );
        let at = d.pos;
        let lp = d.string()?;
        let bad = |reason: &str| LoadError {
            offset: at,
            reason: format!("invalid stream listpack: {reason}"),
        };
        let mut elems: Vec<Vec<u8>> = Vec::new();
        listpack::decode(&lp, |e| elems.push(e.to_vec())).map_err(bad)?;
        parse_node(&mut s, master, lp.len(), elems).map_err(bad)?;
    }
    let _length = d.length()?;
    let at = d.pos;
    s.last_id = StreamId::new(d.length()?, d.length()?);
    // As Redis's loader: entries past the last ID would break XADD.
    if s.last_valid_id() > s.last_id {
        return Err(LoadError {
            offset: at,
            reason: "stream last ID is smaller than an entry's".into(),
        });
    }
    if v2 {
        let _first = StreamId::new(d.length()?, d.length()?);
        s.max_deleted_id = StreamId::new(d.length()?, d.length()?);
        s.entries_added = d.length()?;
    } else {
        s.entries_added = s.len();
    }
    // Consumer groups are read and dropped.
    let groups = d.length()?;
    for _ in 0..groups {
        d.string()?;
        d.length()?;
        d.length()?;
        if v2 {
            d.length()?;
        }
        let pel = d.length()?;
        for _ in 0..pel {
            d.raw(16)?;
            d.raw(8)?;
            d.length()?;
        }
        let consumers = d.length()?;
        for _ in 0..consumers {
            d.string()?;
            d.raw(8)?;
            let owned = d.length()?;
            for _ in 0..owned {
                d.raw(16)?;
            }
        }
    }
    Ok(s)
}

/// Rebuilds one node from its listpack elements.
fn parse_node(
    s: &mut Stream,
    master: StreamId,
    lp_bytes: usize,
    elems: Vec<Vec<u8>>,
) -> Result<(), &'static str> {
    let mut it = elems.into_iter();
    let int = |it: &mut std::vec::IntoIter<Vec<u8>>| -> Result<i64, &'static str> {
        let e = it.next().ok_or("truncated")?;
        num::parse_i64(&e).ok_or("integer expected")
    };
    let _live = int(&mut it)?;
    let _deleted = int(&mut it)?;
    let nfields = usize::try_from(int(&mut it)?).map_err(|_| "negative field count")?;
    let mut master_fields = Vec::with_capacity(nfields.min(1024));
    for _ in 0..nfields {
        master_fields.push(it.next().ok_or("truncated")?);
    }
    if int(&mut it)? != 0 {
        return Err("master entry not terminated");
    }
    let mut entries = Vec::new();
    while it.len() > 0 {
        let flags = int(&mut it)?;
        let ms = master.ms.wrapping_add(int(&mut it)? as u64);
        let seq = master.seq.wrapping_add(int(&mut it)? as u64);
        let mut fields = Vec::new();
        if flags & FLAG_SAMEFIELDS != 0 {
            for f in &master_fields {
                fields.push(f.clone());
                fields.push(it.next().ok_or("truncated")?);
            }
        } else {
            let n = usize::try_from(int(&mut it)?).map_err(|_| "negative field count")?;
            for _ in 0..n.saturating_mul(2) {
                fields.push(it.next().ok_or("truncated")?);
            }
        }
        int(&mut it)?;
        entries.push((StreamId::new(ms, seq), flags & FLAG_DELETED != 0, fields));
    }
    s.load_node(master, master_fields, lp_bytes, entries);
    Ok(())
}
