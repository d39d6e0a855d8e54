//! Damaged input never panics the loader: every truncation of a valid file
//! is refused, and random byte flips either load or are refused.

use super::load::{load_rdb, payload_value, LoadOptions};
use super::save::{dump_payload, write_rdb, SaveOptions};
use crate::store::list::List;
use crate::store::value::Value;
use crate::store::{Store, Ttl};

fn sample_store() -> Store {
    let mut s = Store::new(16);
    s.set_now(1_000);
    for i in 0..50u32 {
        let k = format!("k{i}");
        let v = match i % 5 {
            0 => Value::string(i.to_string().as_bytes()),
            1 => Value::string(&vec![b'a' + (i % 26) as u8; 30 + i as usize]),
            2 => Value::string(format!("v{i}").as_bytes()),
            _ => {
                let mut l = List::default();
                for j in 0..(i * 4 + u32::from(i % 10 == 3) * 1200) {
                    let e = if j % 2 == 0 {
                        j.to_string()
                    } else {
                        format!("e{j}")
                    };
                    l.push_back(e.as_bytes());
                }
                Value::List(Box::new(l))
            }
        };
        let ttl = if i % 7 == 0 {
            Ttl::At(u64::from(i) * 1_000_000)
        } else {
            Ttl::None
        };
        s.set((i % 3) as usize, k.as_bytes(), v, ttl);
    }
    s
}

fn image(checksum: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let opts = SaveOptions {
        compress: true,
        checksum,
        used_mem: 0,
    };
    write_rdb(&mut out, &sample_store(), opts, None).expect("writes to memory");
    out
}

fn load(data: &[u8], verify: bool) -> Result<u64, String> {
    let mut s = Store::new(16);
    load_rdb(
        data,
        &mut s,
        LoadOptions {
            verify_checksum: verify,
            now_ms: 1_000,
        },
    )
    .map(|r| r.keys_loaded)
    .map_err(|e| e.to_string())
}

#[test]
fn round_trip_and_truncations() {
    let img = image(true);
    assert_eq!(load(&img, true), Ok(50));
    // Every cut in the header and first keys, then a spread over the rest.
    let step = (img.len() / 500).max(1);
    for cut in (0..img.len().min(3000)).chain((3000..img.len()).step_by(step)) {
        assert!(
            load(&img[..cut], true).is_err(),
            "prefix of {cut} bytes loaded"
        );
    }
}

#[test]
fn random_flips_never_panic() {
    let img = image(false);
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..600 {
        let mut d = img.clone();
        for _ in 0..(1 + next() % 4) {
            let at = (next() % d.len() as u64) as usize;
            d[at] = next() as u8;
        }
        let _ = load(&d, false);
        let _ = load(&d, true);
    }
    // DUMP payload bodies too.
    let s = sample_store();
    let d = &s.dbs[0].dict;
    let e = d.get(d.hash(b"k3"), b"k3").expect("present");
    let p = dump_payload(&e.value, true);
    for _ in 0..3000 {
        let mut q = p.clone();
        let at = (next() % q.len() as u64) as usize;
        q[at] = next() as u8;
        let _ = payload_value(&q);
    }
}

/// A file image from raw records, with its EOF and CRC64.
fn file(version: &[u8; 4], records: &[&[u8]]) -> Vec<u8> {
    let mut d = b"REDIS".to_vec();
    d.extend_from_slice(version);
    for r in records {
        d.extend_from_slice(r);
    }
    d.push(super::op::EOF);
    let crc = super::CRC64.checksum(&d);
    d.extend_from_slice(&crc.to_le_bytes());
    d
}

#[test]
fn legacy_records_and_duplicates() {
    let zl: &[u8] = &[
        20, 0, 0, 0, 15, 0, 0, 0, 3, 0, 0x00, 0x01, b'a', 0x03, 0xF2, 0x02, 0xC0, 0x2C, 0x01, 0xFF,
    ];
    let mut ziplist_rec = vec![10u8, 1, b'z', zl.len() as u8];
    ziplist_rec.extend_from_slice(zl);
    let mut quicklist_rec = vec![14u8, 1, b'q', 1, zl.len() as u8];
    quicklist_rec.extend_from_slice(zl);
    let img = file(
        b"0009",
        &[
            &[0xFE, 2],
            // A plain LIST of two strings, one int-encoded.
            &[1, 1, b'l', 2, 1, b'x', 0xC0, 7],
            &ziplist_rec,
            &quicklist_rec,
            // EXPIRETIME in seconds (far future), then IDLE 100 s.
            &[
                0xFD, 0xFF, 0xFF, 0xFF, 0x7F, 0xF8, 0x40, 100, 0, 1, b's', 1, b'v',
            ],
            // Expired long ago: skipped.
            &[0xFD, 1, 0, 0, 0, 0, 1, b'e', 1, b'v'],
        ],
    );
    let mut s = Store::new(16);
    let now = 1_800_000_000_000;
    let r = load_rdb(
        &img,
        &mut s,
        LoadOptions {
            verify_checksum: true,
            now_ms: now,
        },
    )
    .expect("loads");
    assert_eq!((r.keys_loaded, r.keys_expired), (4, 1));
    let get = |k: &[u8]| {
        let d = &s.dbs[2].dict;
        d.get(d.hash(k), k)
            .map(|e| (e.value.clone(), e.expire_at(), e.lru))
    };
    let list = |k: &[u8]| match get(k) {
        Some((Value::List(l), _, _)) => l.iter().map(|e| e.to_vec()).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(list(b"l"), vec![b"x".to_vec(), b"7".to_vec()]);
    let abc = vec![b"a".to_vec(), b"1".to_vec(), b"300".to_vec()];
    assert_eq!(list(b"z"), abc);
    assert_eq!(list(b"q"), abc);
    let (v, at, lru) = get(b"s").expect("loaded");
    assert!(matches!(v, Value::Str(_)));
    assert_eq!(at, 0x7FFF_FFFF * 1000);
    assert_eq!(lru, (now / 1000) as u32 - 100);
    let dup = file(b"0010", &[&[0, 1, b'k', 1, b'v'], &[0, 1, b'k', 1, b'w']]);
    let e = load(&dup, true).expect_err("duplicate refused");
    assert!(e.contains("duplicate key 'k' in database 0"), "{e}");
    // A listpack-encoded hash (type 16) is not read yet.
    let hash = file(b"0010", &[&[16, 1, b'h', 0]]);
    let e = load(&hash, true).expect_err("listpack hash refused");
    assert!(e.contains("at offset 9: unsupported value type 16"), "{e}");
}
