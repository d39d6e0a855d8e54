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
