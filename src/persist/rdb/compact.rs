//! Loading the compact RDB encodings of hashes, sets and sorted sets that
//! Redis writes for small values: the intset (type 11), the ziplist pairs
//! of Redis before 7.0 (12, 13), the listpack pairs of 7.0 (16, 17) and the
//! zipmap of Redis 2.x (9). They are checked as Redis's deep integrity
//! validation checks them (sizes, terminators, element counts, duplicate
//! fields), then given the encoding Redis 7.0 gives them after loading
//! (`rdbLoadObject`): compact unless the element count passes the
//! `*-max-listpack-entries` / `set-max-intset-entries` threshold.

use std::collections::HashSet;

use super::listpack;
use crate::store::bytes::CompactBytes;
use crate::store::hash::Hash;
use crate::store::hashed::HashedMap;
use crate::store::intset::IntSet;
use crate::store::packed::Packed;
use crate::store::set::Set;
use crate::store::tuning;
use crate::store::value::Value;
use crate::store::zset::{self, ZSet};
use crate::store::zset_tree::Tree;
use crate::util::num;

/// The elements of a listpack or ziplist blob; a listpack's checked only
/// shallowly unless `deep` ([`listpack::decode_with`]; Redis checks a
/// ziplist fully whatever `sanitize-dump-payload` says, as it converts it).
pub fn elements(blob: &[u8], ziplist: bool, deep: bool) -> Result<Vec<Vec<u8>>, &'static str> {
    let mut out = Vec::new();
    let push = |e: &[u8]| out.push(e.to_vec());
    if ziplist {
        listpack::decode_ziplist(blob, push)?;
    } else {
        listpack::decode_with(blob, deep, push)?;
    }
    Ok(out)
}

/// A set from an intset blob (`intsetValidateIntegrity`): a 2, 4 or
/// 8-byte encoding, a length matching the blob, at least one member, and
/// (when `deep`) members strictly ascending; unchecked, they are sorted
/// and made unique here.
pub fn intset(blob: &[u8], deep: bool) -> Result<Value, &'static str> {
    let header = blob.get(..8).ok_or("intset too short")?;
    let width = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    if !matches!(width, 2 | 4 | 8) {
        return Err("bad intset encoding");
    }
    let count = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if count.checked_mul(width).and_then(|n| n.checked_add(8)) != Some(blob.len()) {
        return Err("intset length does not match its size");
    }
    if count == 0 {
        return Err("empty intset");
    }
    let values = blob[8..].chunks_exact(width).map(|c| match width {
        2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
        4 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        _ => i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
    });
    let mut prev: Option<i64> = None;
    let mut ints = IntSet::default();
    let mut table: Option<HashedMap<()>> =
        (count > tuning::set_max_intset_entries()).then(HashedMap::default);
    let mut buf = num::itoa_buf();
    for v in values {
        if deep && prev.is_some_and(|p| p >= v) {
            return Err("intset members out of order or duplicated");
        }
        prev = Some(v);
        match table.as_mut() {
            // Redis converts an intset loaded past set-max-intset-entries.
            Some(t) => {
                t.insert(num::fmt_i64(v, &mut buf), ());
            }
            None => {
                ints.insert(v);
            }
        }
    }
    Ok(Value::Set(match table {
        Some(t) => Set::Table(Box::new(t)),
        None => Set::Intset(ints),
    }))
}

/// Field/value (or member/score) pairs borrowed from decoded elements.
type Pairs<'a> = Vec<(&'a [u8], &'a [u8])>;

/// Splits elements into pairs, refusing an odd count and (when `deep`) a
/// repeated first element (`lpPairsValidateIntegrityAndDups`); unchecked,
/// a repeated one is dropped (the first is what Redis's lookups find), as
/// is a last element without its pair (a listpack cut short).
fn pairs(items: &[Vec<u8>], deep: bool) -> Result<Pairs<'_>, &'static str> {
    if deep && !items.len().is_multiple_of(2) {
        return Err("odd number of elements in a pairs encoding");
    }
    let mut seen = HashSet::with_capacity(items.len() / 2);
    let mut out: Pairs<'_> = Vec::with_capacity(items.len() / 2);
    for p in items.chunks_exact(2) {
        if seen.insert(p[0].as_slice()) {
            out.push((p[0].as_slice(), p[1].as_slice()));
        } else if deep {
            return Err("duplicate field in a pairs encoding");
        }
    }
    Ok(out)
}

/// A hash from field/value elements (types 13 and 16); None when empty,
/// which Redis skips. `zipmap`: also converted when a field or value is
/// longer than `hash-max-listpack-value`, as Redis converts zipmaps.
pub fn hash(items: &[Vec<u8>], zipmap: bool, deep: bool) -> Result<Option<Value>, &'static str> {
    let pairs = pairs(items, deep)?;
    if pairs.is_empty() {
        return Ok(None);
    }
    let long = zipmap
        && pairs
            .iter()
            .any(|(f, v)| f.len().max(v.len()) > tuning::hash_max_value());
    let h = if pairs.len() > tuning::hash_max_entries() || long {
        let mut m = HashedMap::default();
        for (f, v) in pairs {
            m.insert(f, CompactBytes::new(v));
        }
        Hash::Table(Box::new(m))
    } else {
        // Kept compact whatever the element sizes, as Redis keeps a loaded
        // listpack; the order is the file's, which HGETALL shows.
        let mut p = Packed::default();
        for (f, v) in pairs {
            p.push(f);
            p.push(v);
        }
        Hash::Listpack(p)
    };
    Ok(Some(Value::Hash(h)))
}

/// A sorted set from member/score elements (types 12 and 17); None when
/// empty. Scores are text or listpack integers, read as `zzlGetScore`
/// does: strtod's reading of the text, so a score that is not a number
/// reads as its numeric prefix or 0, as Redis accepts it. A NaN score is
/// refused (Redis would keep it, with a sorted set out of order).
pub fn zset(items: &[Vec<u8>], deep: bool) -> Result<Option<Value>, &'static str> {
    let pairs = pairs(items, deep)?;
    if pairs.is_empty() {
        return Ok(None);
    }
    let mut entries = Vec::with_capacity(pairs.len());
    for (m, s) in pairs {
        let score = num::zzl_strtod(s);
        if score.is_nan() {
            return Err("invalid sorted set score");
        }
        // Listpack scores are text, where -0 reads back as 0.
        entries.push((m, if score == 0.0 { 0.0 } else { score }));
    }
    let z = if entries.len() > tuning::zset_max_entries() {
        let mut t = Tree::default();
        for (m, s) in entries {
            t.insert(m, s);
        }
        ZSet::Skiplist(Box::new(t))
    } else {
        // Redis trusts the file's order; sorting gives the same order for
        // any file Redis wrote and keeps ranks right for any other.
        entries.sort_by(|a, b| zset::cmp_entry(a.1, a.0, b.1, b.0));
        let mut p = Packed::default();
        for (m, s) in entries {
            p.push(m);
            p.push(zset::PackedScore::new(s).as_bytes());
        }
        ZSet::Listpack(p)
    };
    Ok(Some(Value::ZSet(z)))
}

/// The field/value elements of a zipmap (Redis 2.x small hashes):
/// `<count><len>field<len><free>value<free bytes>...<0xFF>`, where a
/// length is one byte below 254 or 254 and four little-endian bytes.
pub fn zipmap(zm: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
    let declared = *zm.first().ok_or("zipmap too short")?;
    let mut pos = 1;
    let mut out = Vec::new();
    let len = |pos: &mut usize| -> Result<Option<usize>, &'static str> {
        let b = *zm.get(*pos).ok_or("zipmap has no terminator")?;
        *pos += 1;
        Ok(match b {
            0xFF => None,
            254 => {
                let l = zm
                    .get(*pos..*pos + 4)
                    .ok_or("zipmap entry runs past the end")?;
                *pos += 4;
                Some(u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
            }
            253 => return Err("bad zipmap length"),
            n => Some(usize::from(n)),
        })
    };
    while let Some(flen) = len(&mut pos)? {
        let field = zm
            .get(pos..pos.saturating_add(flen))
            .ok_or("zipmap entry runs past the end")?;
        pos += flen;
        let vlen = len(&mut pos)?.ok_or("zipmap field without a value")?;
        let free = usize::from(*zm.get(pos).ok_or("zipmap entry runs past the end")?);
        pos += 1;
        let value = zm
            .get(pos..pos.saturating_add(vlen))
            .ok_or("zipmap entry runs past the end")?;
        pos = pos.saturating_add(vlen).saturating_add(free);
        out.push(field.to_vec());
        out.push(value.to_vec());
    }
    if pos != zm.len() {
        return Err("zipmap terminator before its end");
    }
    if out.is_empty() {
        return Err("empty zipmap");
    }
    if declared < 254 && usize::from(declared) * 2 != out.len() {
        return Err("zipmap element count does not match its header");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lp(items: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        listpack::build_nodes(
            items.iter().copied(),
            listpack::NodeRule::DEFAULT,
            |_, b| {
                out = b.to_vec();
                Ok::<(), ()>(())
            },
        )
        .unwrap_or(());
        out
    }

    #[test]
    fn intsets_are_checked() {
        // SADD s 1 2 3 in Redis 7.0: 16-bit encoding, three members.
        let good = [2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 2, 0, 3, 0];
        match intset(&good, true) {
            Ok(Value::Set(s)) => {
                assert_eq!(s.encoding(), "intset");
                assert_eq!(s.len(), 3);
            }
            other => panic!("{other:?}"),
        }
        let mut unsorted = good;
        unsorted[10] = 5;
        assert!(intset(&unsorted, true).is_err());
        assert!(intset(&good[..12], true).is_err());
        assert!(intset(&[2, 0, 0, 0, 0, 0, 0, 0], true).is_err());
        assert!(intset(&[3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0], true).is_err());
    }

    #[test]
    fn pairs_refuse_odd_counts_and_duplicates() {
        let items = |v: &[&[u8]]| v.iter().map(|e| e.to_vec()).collect::<Vec<_>>();
        assert!(hash(&items(&[b"f", b"v", b"g"]), false, true).is_err());
        assert!(hash(&items(&[b"f", b"v", b"f", b"w"]), false, true).is_err());
        assert!(zset(&items(&[b"m", b"1", b"m", b"2"]), true).is_err());
        // A score that is not a number reads as strtod reads it (Redis's
        // zzlStrtod); NaN is refused.
        match zset(&items(&[b"m", b"x"]), true) {
            Ok(Some(Value::ZSet(z))) => {
                let all: Vec<_> = z.iter_from(0).map(|(m, s)| (m.to_vec(), s)).collect();
                assert_eq!(all, vec![(b"m".to_vec(), 0.0)]);
            }
            other => panic!("{other:?}"),
        }
        assert!(zset(&items(&[b"m", b"nan"]), true).is_err());
        assert!(matches!(hash(&[], false, true), Ok(None)));
        match zset(&items(&[b"b", b"2", b"a", b"2", b"c", b"-1.5"]), true) {
            Ok(Some(Value::ZSet(z))) => {
                let order: Vec<_> = z.iter_from(0).map(|(m, s)| (m.to_vec(), s)).collect();
                assert_eq!(
                    order,
                    vec![
                        (b"c".to_vec(), -1.5),
                        (b"a".to_vec(), 2.0),
                        (b"b".to_vec(), 2.0)
                    ]
                );
            }
            other => panic!("{other:?}"),
        }
        let blob = lp(&[b"f", b"1", b"g", b"abc"]);
        let els = elements(&blob, false, true).expect("valid");
        match hash(&els, false, true) {
            Ok(Some(Value::Hash(h))) => {
                assert_eq!(h.encoding(), "listpack");
                assert_eq!(h.get(b"f"), Some(&b"1"[..]));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn zipmaps_decode() {
        // {"a": "1", "bb": "xyz"} with one free byte after "1".
        let zm = [
            2, 1, b'a', 1, 1, b'1', 0, 2, b'b', b'b', 3, 0, b'x', b'y', b'z', 0xFF,
        ];
        let els = zipmap(&zm).expect("valid");
        assert_eq!(
            els,
            vec![
                b"a".to_vec(),
                b"1".to_vec(),
                b"bb".to_vec(),
                b"xyz".to_vec()
            ]
        );
        assert!(zipmap(&zm[..15]).is_err());
        let mut bad = zm;
        bad[0] = 3;
        assert!(zipmap(&bad).is_err());
    }

    #[test]
    fn unchecked_payloads_keep_what_reads() {
        // sanitize-dump-payload no: out-of-order intset members are sorted,
        // a repeated field keeps its first value, an unpaired last element
        // is dropped; the same inputs are refused by the deep checks.
        let unsorted = [2, 0, 0, 0, 3, 0, 0, 0, 3, 0, 1, 0, 2, 0];
        assert!(intset(&unsorted, true).is_err());
        match intset(&unsorted, false) {
            Ok(Value::Set(s)) => assert_eq!(s.len(), 3),
            other => panic!("{other:?}"),
        }
        let items = |v: &[&[u8]]| v.iter().map(|e| e.to_vec()).collect::<Vec<_>>();
        let dup = items(&[b"f", b"v", b"f", b"w", b"g"]);
        assert!(hash(&dup, false, true).is_err());
        match hash(&dup, false, false) {
            Ok(Some(Value::Hash(h))) => {
                assert_eq!(h.len(), 1);
                assert_eq!(h.get(b"f"), Some(&b"v"[..]));
            }
            other => panic!("{other:?}"),
        }
        match zset(&items(&[b"m", b"1", b"m", b"2"]), false) {
            Ok(Some(Value::ZSet(z))) => assert_eq!(z.len(), 1),
            other => panic!("{other:?}"),
        }
    }
}
