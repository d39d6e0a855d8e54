//! Streams in RDB (`RDB_TYPE_STREAM_LISTPACKS_2`, Redis 7.0's `rdbSaveObject`
//! and `rdbLoadObject` stream branches): the nodes as (master ID, listpack)
//! pairs, then length, last ID, first ID, largest deleted ID, entries added
//! and the consumer groups.
//!
//! A node is saved as Redis holds it, deleted entries included, so the same
//! stream gives the same bytes (DUMP payloads compare equal). Each group
//! follows: name, last ID, entries read, its PEL with delivery times and
//! counts, then its consumers with their seen times and pending IDs.

use super::listpack;
use super::load::{Dec, LoadError};
use super::save::Enc;
use crate::store::stream::{id_bytes, Group, Nack, Stream, StreamId};
use crate::util::num;
use std::sync::Arc;

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;

fn push_int(out: &mut Vec<u8>, v: i64) {
    let mut b = num::itoa_buf();
    listpack::push_entry(out, num::fmt_i64(v, &mut b));
}

/// An ID from the 16 big-endian bytes of a tree key.
fn id_of(k: &[u8; 16]) -> StreamId {
    let mut ms = [0u8; 8];
    let mut seq = [0u8; 8];
    ms.copy_from_slice(&k[..8]);
    seq.copy_from_slice(&k[8..]);
    StreamId::new(u64::from_be_bytes(ms), u64::from_be_bytes(seq))
}

/// The entries of one node, live and deleted, in ID order.
fn node_entries<'a>(
    s: &'a Stream,
    master: StreamId,
    last: StreamId,
) -> impl Iterator<Item = (StreamId, bool, &'a Vec<Vec<u8>>)> + 'a {
    let mut live = s.entries.range(master..=last).peekable();
    let mut dead = s.tombstones.range(master..=last).peekable();
    std::iter::from_fn(move || {
        let take_live = match (live.peek(), dead.peek()) {
            (Some((a, _)), Some((b, _))) => a < b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let (id, fields) = if take_live {
            live.next()?
        } else {
            dead.next()?
        };
        Some((*id, !take_live, fields))
    })
}

/// Writes a stream's body (after the type byte).
pub fn save(e: &mut Enc, s: &Stream) {
    e.len(s.nodes.len() as u64);
    for (master, node) in &s.nodes {
        let mut items = Vec::new();
        let mut count = 0usize;
        let int = |items: &mut Vec<u8>, v: i64, count: &mut usize| {
            push_int(items, v);
            *count += 1;
        };
        int(&mut items, node.live as i64, &mut count);
        int(&mut items, node.deleted as i64, &mut count);
        int(&mut items, node.master_fields.len() as i64, &mut count);
        for f in &node.master_fields {
            listpack::push_entry(&mut items, f);
            count += 1;
        }
        int(&mut items, 0, &mut count);
        for (id, deleted, fields) in node_entries(s, *master, node.last) {
            let n = fields.len() / 2;
            let same = n == node.master_fields.len()
                && node
                    .master_fields
                    .iter()
                    .zip(fields.iter().step_by(2))
                    .all(|(a, b)| a == b);
            let flags =
                if same { FLAG_SAMEFIELDS } else { 0 } | if deleted { FLAG_DELETED } else { 0 };
            int(&mut items, flags, &mut count);
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
        e.string(&id_bytes(*master));
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
    e.len(s.groups.len() as u64);
    for (name, g) in &s.groups {
        e.string(name);
        e.len(g.last_id.ms);
        e.len(g.last_id.seq);
        // -1 (unknown) as the 64-bit length Redis writes for it.
        e.len(g.entries_read as u64);
        e.len(g.pel.len() as u64);
        for (id, nack) in &g.pel {
            e.buf.extend_from_slice(&id_bytes(*id));
            e.buf.extend_from_slice(&nack.delivery_time.to_le_bytes());
            e.len(nack.delivery_count);
        }
        e.len(g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            e.string(cname);
            e.buf.extend_from_slice(&c.seen_time.to_le_bytes());
            e.len(c.pel.len() as u64);
            for id in &c.pel {
                e.buf.extend_from_slice(&id_bytes(*id));
            }
        }
    }
}

/// Reads a stream's body of type 15 (`STREAM_LISTPACKS`) or 19
/// (`STREAM_LISTPACKS_2`).
pub fn load(d: &mut Dec<'_>, v2: bool) -> Result<Stream, LoadError> {
    let mut s = Stream::default();
    let nodes = d.length()?;
    // The last entry ID read: IDs ascend through the nodes.
    let mut prev = None;
    let mut keys = std::collections::HashSet::new();
    for _ in 0..nodes {
        let at = d.pos;
        let key = d.string()?;
        let Ok(key): Result<[u8; 16], _> = key.as_ref().try_into() else {
            return Err(LoadError {
                offset: at,
                reason: "Stream node key entry is not the size of a stream ID".into(),
                ..LoadError::default()
            });
        };
        if !keys.insert(key) {
            return Err(LoadError {
                offset: at,
                reason: "Listpack re-added with existing key".into(),
                ..LoadError::default()
            });
        }
        let master = id_of(&key);
        let at = d.pos;
        let lp = d.string()?;
        let bad =
            |detail| super::load::blob_err(at, "Stream listpack integrity check failed.", detail);
        let mut elems: Vec<Vec<u8>> = Vec::new();
        d.sanitizations += u64::from(d.deep);
        listpack::decode_with(&lp, d.deep, |e| elems.push(e.to_vec())).map_err(bad)?;
        parse_node(&mut s, master, lp.len(), elems, &mut prev, d.deep).map_err(bad)?;
    }
    let at = d.pos;
    if d.length()? != 0 && nodes == 0 {
        return Err(LoadError {
            offset: at,
            reason: "Stream length inconsistent with rax entries".into(),
            ..LoadError::default()
        });
    }
    let at = d.pos;
    s.last_id = StreamId::new(d.length()?, d.length()?);
    // As Redis's loader: entries past the last ID would break XADD.
    if s.last_valid_id() > s.last_id {
        return Err(LoadError {
            offset: at,
            reason: "stream last ID is smaller than an entry's".into(),
            ..LoadError::default()
        });
    }
    if v2 {
        let _first = StreamId::new(d.length()?, d.length()?);
        s.max_deleted_id = StreamId::new(d.length()?, d.length()?);
        s.entries_added = d.length()?;
    } else {
        s.entries_added = s.len();
    }
    let groups = d.length()?;
    for _ in 0..groups {
        load_group(d, &mut s, v2)?;
    }
    Ok(s)
}

/// Reads one consumer group with its PEL and consumers, refusing what
/// Redis's loader refuses.
fn load_group(d: &mut Dec<'_>, s: &mut Stream, v2: bool) -> Result<(), LoadError> {
    let at = d.pos;
    let corrupt = |reason: String| LoadError {
        offset: at,
        reason,
        ..LoadError::default()
    };
    let name = d.string()?.to_vec();
    let last_id = StreamId::new(d.length()?, d.length()?);
    let entries_read = if v2 {
        d.length()? as i64
    } else {
        s.estimate_distance(last_id)
    };
    if s.groups.contains_key(&name) {
        return Err(corrupt(format!(
            "Duplicated consumer group name {}",
            String::from_utf8_lossy(&name)
        )));
    }
    let mut g = Group::new(last_id, entries_read);
    let mut owners: std::collections::BTreeMap<StreamId, Option<Arc<[u8]>>> = Default::default();
    let pel = d.length()?;
    let mut times = Vec::new();
    for _ in 0..pel {
        let id = id_of(&raw16(d)?);
        let time = u64::from_le_bytes(raw8(d)?);
        let count = d.length()?;
        if owners.insert(id, None).is_some() {
            return Err(corrupt(
                "Duplicated global PEL entry loading stream consumer group".into(),
            ));
        }
        times.push((id, time, count));
    }
    let consumers = d.length()?;
    for _ in 0..consumers {
        let cname: Arc<[u8]> = Arc::from(&d.string()?[..]);
        let seen = u64::from_le_bytes(raw8(d)?);
        if !g.create_consumer(&cname, seen) {
            return Err(corrupt("Duplicate stream consumer detected.".into()));
        }
        let owned = d.length()?;
        for _ in 0..owned {
            let id = id_of(&raw16(d)?);
            match owners.get_mut(&id) {
                None => {
                    return Err(corrupt(
                        "Consumer entry not found in group global PEL".into(),
                    ))
                }
                Some(slot @ None) => *slot = Some(cname.clone()),
                Some(Some(_)) => {
                    return Err(corrupt(
                        "Duplicated consumer PEL entry  loading a stream consumer group".into(),
                    ))
                }
            }
            if let Some(c) = g.consumers.get_mut(&cname) {
                c.pel.insert(id);
            }
        }
    }
    for (id, time, count) in times {
        let Some(Some(consumer)) = owners.remove(&id) else {
            if !d.deep {
                // Unchecked (sanitize-dump-payload no), an entry no
                // consumer owns is dropped: ferrokv's PEL entries each
                // name their consumer.
                continue;
            }
            return Err(corrupt("Stream CG PEL entry without consumer".into()));
        };
        let nack = Nack {
            delivery_time: time,
            delivery_count: count,
            consumer,
        };
        g.pel.insert(id, nack);
    }
    s.groups.insert(name, g);
    Ok(())
}

fn raw16(d: &mut Dec<'_>) -> Result<[u8; 16], LoadError> {
    let mut k = [0u8; 16];
    k.copy_from_slice(&d.raw(16)?[..16]);
    Ok(k)
}

fn raw8(d: &mut Dec<'_>) -> Result<[u8; 8], LoadError> {
    let mut k = [0u8; 8];
    k.copy_from_slice(&d.raw(8)?[..8]);
    Ok(k)
}

/// Rebuilds one node from its listpack elements. Entry IDs must ascend
/// strictly from `prev`, the last one read before: ferrokv keys entries by
/// ID, so a repeated or misplaced ID would lose entries or leave a node
/// holding IDs outside its range. (Redis 7.0's deep check does not look
/// at the order and keeps such a stream, in node order.)
///
/// Unless `deep` (a RESTORE under `sanitize-dump-payload no`, which Redis
/// does not check past the listpack's header), the counts are not held to
/// the entries found, and the node keeps the entries before the first one
/// that cannot be read.
fn parse_node(
    s: &mut Stream,
    master: StreamId,
    lp_bytes: usize,
    elems: Vec<Vec<u8>>,
    prev: &mut Option<StreamId>,
    deep: bool,
) -> Result<(), &'static str> {
    let mut it = elems.into_iter();
    // As Redis's deep check (streamValidateListpackIntegrity): exactly
    // live + deleted entries follow the master entry.
    let live = next_int(&mut it)?;
    let deleted = next_int(&mut it)?;
    let count = live
        .checked_add(deleted)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or("bad entry count")?;
    let nfields = usize::try_from(next_int(&mut it)?).map_err(|_| "negative field count")?;
    let mut master_fields = Vec::with_capacity(nfields.min(1024));
    for _ in 0..nfields {
        master_fields.push(it.next().ok_or("truncated")?);
    }
    if next_int(&mut it)? != 0 {
        return Err("master entry not terminated");
    }
    let mut entries = Vec::new();
    while it.len() > 0 {
        match next_entry(&mut it, master, &master_fields, prev) {
            Ok(e) => entries.push(e),
            Err(e) if deep => return Err(e),
            Err(_) => break,
        }
        if deep && entries.len() > count {
            return Err("more entries than counted");
        }
    }
    if deep && entries.len() != count {
        return Err("fewer entries than counted");
    }
    if entries.is_empty() && !deep {
        // Nothing readable is left of it: no node.
        return Ok(());
    }
    s.load_node(master, master_fields, lp_bytes, entries);
    Ok(())
}

/// The next element of a node, as an integer.
fn next_int(it: &mut std::vec::IntoIter<Vec<u8>>) -> Result<i64, &'static str> {
    let e = it.next().ok_or("truncated")?;
    num::parse_i64(&e).ok_or("integer expected")
}

/// A stream entry: its ID, whether deleted, its fields and values.
type NodeEntry = (StreamId, bool, Vec<Vec<u8>>);

/// Reads the next entry of a node after its master entry.
fn next_entry(
    it: &mut std::vec::IntoIter<Vec<u8>>,
    master: StreamId,
    master_fields: &[Vec<u8>],
    prev: &mut Option<StreamId>,
) -> Result<NodeEntry, &'static str> {
    let flags = next_int(it)?;
    let ms = master.ms.wrapping_add(next_int(it)? as u64);
    let seq = master.seq.wrapping_add(next_int(it)? as u64);
    let mut fields = Vec::new();
    // What the entry's closing lp-count must say: flags, the ID's two
    // parts and the values, plus the field count and names when the
    // entry has its own fields.
    let elements;
    if flags & FLAG_SAMEFIELDS != 0 {
        for f in master_fields {
            fields.push(f.clone());
            fields.push(it.next().ok_or("truncated")?);
        }
        elements = master_fields.len() as i64 + 3;
    } else {
        let n = usize::try_from(next_int(it)?).map_err(|_| "negative field count")?;
        for _ in 0..n.saturating_mul(2) {
            fields.push(it.next().ok_or("truncated")?);
        }
        // n fields were read, so 2n + 4 fits.
        elements = (n as i64).saturating_mul(2).saturating_add(4);
    }
    if next_int(it)? != elements {
        return Err("entry element count mismatch");
    }
    let id = StreamId::new(ms, seq);
    if prev.is_some_and(|p| id <= p) || id < master {
        return Err("entry IDs out of order");
    }
    *prev = Some(id);
    Ok((id, flags & FLAG_DELETED != 0, fields))
}
