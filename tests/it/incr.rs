//! Counters (Redis's `unit/type/incr.tcl`): INCR/DECR/INCRBY/DECRBY and
//! INCRBYFLOAT compared byte for byte with redis-server, plus the classic
//! counter and lock patterns through the `redis` crate.

use std::time::Duration;

use crate::support::*;

#[test]
fn integer_counters_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "INCR novar",
        "INCR novar",
        "GET novar",
        "INCRBY novar 2",
        "INCRBY novar -5",
        "DECR novar",
        "DECRBY novar 3",
        "DECRBY novar -3",
        "SET novar 17179869184",
        "INCR novar",
        "INCRBY novar 17179869184",
        "SET novar -1",
        "DECR novar",
        "SET k 9223372036854775807",
        "INCR k",
        "INCRBY k 0",
        "DECRBY k -1",
        "SET k -9223372036854775808",
        "DECR k",
        "INCRBY k -1",
        "DECRBY k 1",
        "INCRBY k 9223372036854775807",
        "DECRBY k -9223372036854775807",
        "DECRBY k -9223372036854775808",
        "DECRBY x -9223372036854775808",
        "DECRBY x 9223372036854775807",
        "INCRBY x -9223372036854775808",
        "GET x",
        "INCRBY x 9223372036854775808",
        "INCRBY x 1.0",
        "INCRBY x abc",
        "INCRBY x",
        "INCR",
        "INCR a b",
        "SET s foo",
        "INCR s",
        "SET s 1.5",
        "INCR s",
        "SET s 012",
        "INCR s",
        "SET s -0",
        "DECR s",
        "SET s 99999999999999999999",
        "INCR s",
        "SET s +1",
        "INCR s",
        "APPEND r 1",
        "APPEND r 0",
        "INCR r",
        "GET r",
    ]);
    for v in [&b" 11"[..], b"11 ", b"1\x00", b"\x00", b"", b"1\r\n"] {
        p.same_bytes(&[b"SET", b"sp", v]);
        p.same_bytes(&[b"INCR", b"sp"]);
        p.same_bytes(&[b"INCRBYFLOAT", b"sp", b"1"]);
        p.same_bytes(&[b"INCRBY", b"sp2", v]);
        p.same_bytes(&[b"INCRBYFLOAT", b"sp2", v]);
    }
}

#[test]
fn incrbyfloat_matches_redis() {
    let mut p = Pair::new();
    p.script(&[
        "INCRBYFLOAT novar 1",
        "INCRBYFLOAT novar 0.25",
        "INCRBYFLOAT novar -1.1",
        "GET novar",
        "SET novar 1.5",
        "INCRBYFLOAT novar 1.5",
        "SET novar 5.0e3",
        "INCRBYFLOAT novar 2.0e2",
        "INCRBYFLOAT novar 1e-5",
        "SET novar 17179869184",
        "INCRBYFLOAT novar 1.5",
        "SET f 10.5",
        "INCRBYFLOAT f 0.1",
        "INCRBYFLOAT f -5.0e3",
        "INCRBYFLOAT f 3.0e3",
        "SET f 1",
        "INCRBYFLOAT f -1",
        "INCRBYFLOAT f 0.1",
        "INCRBYFLOAT f 0.2",
        "INCRBYFLOAT f 1e20",
        "INCRBYFLOAT f 1e-20",
        "INCRBYFLOAT f 123456789123456789",
        "SET f 1.7976931348623157e308",
        "INCRBYFLOAT f 1.7976931348623157e308",
        "INCRBYFLOAT f 1e308",
        "INCRBYFLOAT f -1e308",
        "INCRBYFLOAT g 1e4000",
        "INCRBYFLOAT g inf",
        "INCRBYFLOAT g -inf",
        "INCRBYFLOAT g nan",
        "INCRBYFLOAT g NaN",
        "INCRBYFLOAT g 1x",
        "INCRBYFLOAT g abc",
        "INCRBYFLOAT g 0x10",
        "INCRBYFLOAT g +5",
        "INCRBYFLOAT g .5",
        "INCRBYFLOAT g 5.",
        "INCRBYFLOAT g -0",
        "GET g",
        "SET h inf",
        "INCRBYFLOAT h 1",
        "SET h foo",
        "INCRBYFLOAT h 1",
        "SET h 1",
        "INCRBYFLOAT h",
        "INCRBYFLOAT h 1 2",
        "SET n 5",
        "INCRBYFLOAT n 1",
        "INCR n",
        "INCRBYFLOAT n 0.5",
        "INCR n",
        "SET tiny 0.0000001",
        "INCRBYFLOAT tiny 0.0000001",
        "SET big 1e17",
        "INCRBYFLOAT big 1",
    ]);
}

/// Today's date as YYYY-MM-DD (UTC), for the page-view key.
fn day_key(days_back: u64) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs();
    let days = secs / 86400 - days_back;
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("page:views:{y:04}-{m:02}-{d:02}")
}

#[test]
fn pattern_daily_page_view_counter() {
    let server = start();
    let mut con = server.client();
    let today = day_key(0);
    let yesterday = day_key(1);
    for i in 1..=25i64 {
        let n: i64 = redis::cmd("INCR")
            .arg(&today)
            .query(&mut con)
            .expect("incr");
        assert_eq!(n, i);
    }
    let n: i64 = redis::cmd("INCRBY")
        .arg(&yesterday)
        .arg(7)
        .query(&mut con)
        .expect("incrby");
    assert_eq!(n, 7);
    let views: Vec<Option<i64>> = redis::cmd("MGET")
        .arg(&today)
        .arg(&yesterday)
        .arg(day_key(2))
        .query(&mut con)
        .expect("mget");
    assert_eq!(views, vec![Some(25), Some(7), None]);
    // A counter that expires: created with a TTL by SET NX PX, then INCR
    // keeps that TTL, so the counter disappears on its own.
    let key = format!("{today}:short");
    let ok: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg(0)
        .arg("NX")
        .arg("PX")
        .arg(150)
        .query(&mut con)
        .expect("set nx px");
    assert_eq!(ok.as_deref(), Some("OK"));
    for i in 1..=3i64 {
        let n: i64 = redis::cmd("INCR").arg(&key).query(&mut con).expect("incr");
        assert_eq!(n, i);
    }
    let gone = wait_until(Duration::from_secs(3), || {
        let v: Option<i64> = redis::cmd("GET").arg(&key).query(&mut con).expect("get");
        v.is_none()
    });
    assert!(gone, "the counter kept its TTL through INCR");
    let v: Option<i64> = redis::cmd("GET").arg(&today).query(&mut con).expect("get");
    assert_eq!(v, Some(25), "the daily counter has no TTL");
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}

/// The SETNX lock whose value is its expiry time: a client finding an
/// expired lock takes it over with GETSET, and only the client whose GETSET
/// returned the expired value wins.
fn try_lock(con: &mut redis::Connection, timeout_ms: u64) -> bool {
    let expires = now_ms() + timeout_ms;
    let got: i64 = redis::cmd("SETNX")
        .arg("lock.foo")
        .arg(expires)
        .query(con)
        .expect("setnx");
    if got == 1 {
        return true;
    }
    let current: Option<u64> = redis::cmd("GET").arg("lock.foo").query(con).expect("get");
    match current {
        Some(t) if t < now_ms() => {
            let old: Option<u64> = redis::cmd("GETSET")
                .arg("lock.foo")
                .arg(expires)
                .query(con)
                .expect("getset");
            old == Some(t)
        }
        _ => false,
    }
}

#[test]
fn pattern_setnx_lock_with_getset_takeover() {
    let server = start();
    let mut c1 = server.client();
    let mut c2 = server.client();
    let mut c3 = server.client();
    assert!(try_lock(&mut c1, 10_000), "free lock is taken");
    assert!(!try_lock(&mut c2, 10_000), "held lock is refused");
    // The holder crashed: its lock carries a past expiry time.
    let past = now_ms() - 1000;
    let _: () = redis::cmd("SET")
        .arg("lock.foo")
        .arg(past)
        .query(&mut c1)
        .expect("set");
    // c2 and c3 both see the expired lock; c2's GETSET goes first and wins,
    // c3's GETSET then returns c2's (fresh) time and it backs off.
    let seen: u64 = redis::cmd("GET")
        .arg("lock.foo")
        .query(&mut c2)
        .expect("get");
    assert_eq!(seen, past);
    let mine = now_ms() + 10_000;
    let old2: u64 = redis::cmd("GETSET")
        .arg("lock.foo")
        .arg(mine)
        .query(&mut c2)
        .expect("getset");
    assert_eq!(old2, past, "c2 takes over");
    let old3: u64 = redis::cmd("GETSET")
        .arg("lock.foo")
        .arg(now_ms() + 10_000)
        .query(&mut c3)
        .expect("getset");
    assert_ne!(old3, seen, "c3 sees it lost the race");
    assert!(!try_lock(&mut c3, 10_000));
    // Release by the holder.
    let n: i64 = redis::cmd("DEL")
        .arg("lock.foo")
        .query(&mut c2)
        .expect("del");
    assert_eq!(n, 1);
    assert!(try_lock(&mut c3, 10_000), "released lock is free again");
}

#[test]
fn pattern_set_nx_px_lock() {
    let server = start();
    let mut a = server.client();
    let mut b = server.client();
    let acquire = |con: &mut redis::Connection, token: &str, ms: u64| -> bool {
        let r: Option<String> = redis::cmd("SET")
            .arg("resource")
            .arg(token)
            .arg("NX")
            .arg("PX")
            .arg(ms)
            .query(con)
            .expect("set nx px");
        r.as_deref() == Some("OK")
    };
    // Safe release: delete only while holding the lock.
    let release = |con: &mut redis::Connection, token: &str| -> bool {
        let cur: Option<String> = redis::cmd("GET").arg("resource").query(con).expect("get");
        if cur.as_deref() == Some(token) {
            let n: i64 = redis::cmd("DEL").arg("resource").query(con).expect("del");
            n == 1
        } else {
            false
        }
    };
    assert!(acquire(&mut a, "token-a", 100));
    assert!(!acquire(&mut b, "token-b", 100));
    // The lock frees itself when its holder never releases it.
    assert!(wait_until(Duration::from_secs(3), || acquire(
        &mut b, "token-b", 10_000
    )));
    assert!(!release(&mut a, "token-a"), "a no longer holds the lock");
    let cur: Option<String> = redis::cmd("GET")
        .arg("resource")
        .query(&mut b)
        .expect("get");
    assert_eq!(cur.as_deref(), Some("token-b"));
    assert!(release(&mut b, "token-b"));
    assert!(acquire(&mut a, "token-a2", 10_000));
}
