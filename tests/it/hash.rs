//! Hash commands (Redis's `unit/type/hash.tcl`), compared with redis-server:
//! byte for byte while the hash is listpack-encoded (insertion order is
//! deterministic), order-insensitively once it is a hashtable, and by
//! invariants for HRANDFIELD.

use crate::support::*;
use crate::unordered::*;

#[test]
fn hash_basics_errors_and_deletion() {
    let mut p = Pair::new();
    p.script(&[
        "HSET h a 1 b 2",
        "HSET h a 3 c 4",
        "HSET h a",
        "HSET h a 1 b",
        "HSET h",
        "HMSET h x y",
        "HMSET h x",
        "HGETALL h",
        "HKEYS h",
        "HVALS h",
        "HLEN h",
        "HSETNX h a 5",
        "HSETNX h q 5",
        "HSETNX h q",
        "HGET h a",
        "HGET h zz",
        "HGET nokey a",
        "HMGET h a zz q",
        "HMGET nokey a b",
        "HMGET h",
        "HSTRLEN h a",
        "HSTRLEN h zz",
        "HSTRLEN nokey a",
        "HEXISTS h a",
        "HEXISTS h zz",
        "HEXISTS nokey a",
        "HLEN nokey",
        "HGETALL nokey",
        "HKEYS nokey",
        "HVALS nokey",
        "HDEL h a zz a",
        "HDEL nokey a",
        "HDEL h",
        "HGETALL h",
        "TYPE h",
        "OBJECT ENCODING h",
        "HDEL h b c x q",
        "EXISTS h",
        "HGETALL h",
        "HSET h f v",
        "HSET h f v2",
        "HGET h f",
        "HSET h  empty",
        "HGET h ",
        "HSTRLEN h ",
    ]);
    // Every command against another type.
    p.script(&["SET str x"]);
    for line in [
        "HSET str a b",
        "HMSET str a b",
        "HSETNX str a b",
        "HGET str a",
        "HMGET str a",
        "HGETALL str",
        "HKEYS str",
        "HVALS str",
        "HDEL str a",
        "HEXISTS str a",
        "HLEN str",
        "HSTRLEN str a",
        "HINCRBY str a 1",
        "HINCRBYFLOAT str a 1",
        "HRANDFIELD str",
        "HRANDFIELD str 0",
        "HRANDFIELD str -3 WITHVALUES",
        "HSCAN str 0",
    ] {
        p.script(&[line]);
    }
    p.script(&["GET str"]);
}

#[test]
fn hash_binary_fields_and_values() {
    let mut p = Pair::new();
    let fields: [&[u8]; 4] = [b"", b"\0", b"a\r\nb", &[0xff, 0xfe]];
    for (i, f) in fields.iter().enumerate() {
        let v = format!("v{i}\0x");
        p.same_bytes(&[b"HSET", b"h", f, v.as_bytes()]);
        p.same_bytes(&[b"HGET", b"h", f]);
        p.same_bytes(&[b"HSTRLEN", b"h", f]);
    }
    p.same(&["HGETALL", "h"]);
    p.same_bytes(&[b"HDEL", b"h", b"\0", b""]);
    p.same(&["HGETALL", "h"]);
}

#[test]
fn hash_encoding_conversions() {
    let mut p = Pair::new();
    let long = "x".repeat(64);
    let longer = "x".repeat(65);
    p.same(&["HSET", "a", "f", &long]);
    p.same(&["OBJECT", "ENCODING", "a"]);
    p.same(&["HSET", "a", "g", &longer]);
    p.same(&["OBJECT", "ENCODING", "a"]);
    // A long field converts too.
    p.same(&["HSET", "b", &longer, "1"]);
    p.same(&["OBJECT", "ENCODING", "b"]);
    // HSETNX of an existing field converts nothing.
    p.same(&["HSET", "c", "f", "1"]);
    p.same(&["HSETNX", "c", "f", &longer]);
    p.same(&["OBJECT", "ENCODING", "c"]);
    p.same(&["HSETNX", "c", "g", &longer]);
    p.same(&["OBJECT", "ENCODING", "c"]);
    // HINCRBYFLOAT producing a long value.
    p.same(&["HSET", "d", "f", "1"]);
    p.same(&["HINCRBYFLOAT", "d", "f", "1e100"]);
    p.same(&["OBJECT", "ENCODING", "d"]);
    // 512 fields stay listpack; the 513th converts, and deleting back
    // does not convert back.
    for i in 0..512 {
        p.same(&["HSET", "big", &format!("f{i}"), &i.to_string()]);
    }
    p.same(&["OBJECT", "ENCODING", "big"]);
    p.same(&["HGETALL", "big"]);
    p.same(&["HSET", "big", "f512", "512"]);
    p.same(&["OBJECT", "ENCODING", "big"]);
    p.same(&["HDEL", "big", "f512", "f511"]);
    p.same(&["OBJECT", "ENCODING", "big"]);
    p.same(&["HLEN", "big"]);
    same_unordered(&mut p, &["HGETALL", "big"], 2);
    same_unordered(&mut p, &["HKEYS", "big"], 1);
    same_unordered(&mut p, &["HVALS", "big"], 1);
    p.same(&["HMGET", "big", "f1", "f511", "f300"]);
    p.same(&["HGET", "big", "f7"]);
    for i in 0..510 {
        p.same(&["HDEL", "big", &format!("f{i}")]);
    }
    p.same(&["EXISTS", "big"]);
    p.same(&["HMSET", "big", "a", "1"]);
    p.same(&["OBJECT", "ENCODING", "big"]);
}

#[test]
fn hash_incr() {
    let mut p = Pair::new();
    p.script(&[
        "HINCRBY h n 5",
        "HINCRBY h n -7",
        "HINCRBY h n x",
        "HINCRBY h n 1.5",
        "HINCRBY h n 9223372036854775808",
        "HSET h s abc big 9223372036854775807 small -9223372036854775808 f 1.5",
        "HSET h sp  1 z 0",
        "HINCRBY h s 1",
        "HINCRBY h sp 1",
        "HINCRBY h f 1",
        "HINCRBY h big 1",
        "HINCRBY h big 0",
        "HINCRBY h small -1",
        "HINCRBY h small 1",
        "HINCRBY nokey n x",
        "EXISTS nokey",
        "HINCRBYFLOAT h x 1.5",
        "HINCRBYFLOAT h x -0.25",
        "HINCRBYFLOAT h x 1e3",
        "HINCRBYFLOAT h x abc",
        "HINCRBYFLOAT h x nan",
        "HINCRBYFLOAT h x inf",
        "HINCRBYFLOAT h x -infinity",
        "HINCRBYFLOAT h x 0x10",
        "HINCRBYFLOAT h s 1",
        "HINCRBYFLOAT h n 0.1",
        "HINCRBYFLOAT h big 1",
        "HINCRBYFLOAT h y 1.0e1",
        "HINCRBYFLOAT h y 5.0e3",
        "HINCRBYFLOAT h z 1e308",
        "HINCRBYFLOAT h z 1e308",
        "HINCRBYFLOAT nokey x inf",
        "EXISTS nokey",
        "OBJECT ENCODING h",
    ]);
    same_unordered(&mut p, &["HGETALL", "h"], 2);
}

#[test]
fn hrandfield_errors_and_invariants() {
    let mut p = Pair::new();
    p.script(&[
        "HRANDFIELD nokey",
        "HRANDFIELD nokey 5",
        "HRANDFIELD nokey -5 WITHVALUES",
        "HSET h a 1 b 2 c 3",
        "HRANDFIELD h 0",
        "HRANDFIELD h 0 WITHVALUES",
        "HRANDFIELD h x",
        "HRANDFIELD h 1 foo",
        "HRANDFIELD h 1 WITHVALUES x",
        "HRANDFIELD h -9223372036854775808",
        "HRANDFIELD h 9223372036854775807 WITHVALUES",
        "HRANDFIELD h -9223372036854775807 WITHVALUES",
        "HRANDFIELD h 4611686018427387904 WITHVALUES",
    ]);
    // Count at least the size: the whole hash, in listpack order.
    p.same(&["HRANDFIELD", "h", "3"]);
    p.same(&["HRANDFIELD", "h", "100", "WITHVALUES"]);
    check_hrandfield(&mut p.ours, "h", 3);

    for i in 0..600 {
        p.same(&["HSET", "big", &format!("f{i}"), &format!("v{i}")]);
    }
    check_hrandfield(&mut p.ours, "big", 600);
    same_unordered(&mut p, &["HRANDFIELD", "big", "600"], 1);
    same_unordered(&mut p, &["HRANDFIELD", "big", "1000", "WITHVALUES"], 2);
}

/// Shapes and membership of HRANDFIELD replies on ferrokv for a hash whose
/// fields are `f<i>` or `a`..., with values of the hash.
fn check_hrandfield(conn: &mut Raw, key: &str, len: usize) {
    let all = Resp::parse(&conn.cmd_str(&["HGETALL", key]));
    let pairs: std::collections::HashMap<Vec<u8>, Vec<u8>> = all
        .items()
        .chunks(2)
        .map(|c| (c[0].bulk().expect("field"), c[1].bulk().expect("value")))
        .collect();
    assert_eq!(pairs.len(), len);
    let one = Resp::parse(&conn.cmd_str(&["HRANDFIELD", key]));
    assert!(pairs.contains_key(&one.bulk().expect("bulk")));
    for count in [
        1i64,
        2,
        3,
        5,
        -1,
        -5,
        -20,
        (len as i64) - 1,
        (len as i64) + 1,
    ] {
        let c = count.to_string();
        let r = Resp::parse(&conn.cmd_str(&["HRANDFIELD", key, &c]));
        let fields: Vec<Vec<u8>> = r.items().iter().map(|e| e.bulk().expect("bulk")).collect();
        let want = if count < 0 {
            count.unsigned_abs() as usize
        } else {
            (count as usize).min(len)
        };
        assert_eq!(fields.len(), want, "HRANDFIELD {key} {count}");
        assert!(fields.iter().all(|f| pairs.contains_key(f)));
        if count >= 0 {
            let distinct: std::collections::HashSet<_> = fields.iter().collect();
            assert_eq!(distinct.len(), fields.len(), "distinct for positive count");
        }
        let r = Resp::parse(&conn.cmd_str(&["HRANDFIELD", key, &c, "WITHVALUES"]));
        assert_eq!(
            r.items().len(),
            want * 2,
            "HRANDFIELD {key} {count} WITHVALUES"
        );
        for pair in r.items().chunks(2) {
            let f = pair[0].bulk().expect("field");
            assert_eq!(pairs.get(&f), Some(&pair[1].bulk().expect("value")));
        }
    }
}

#[test]
fn hscan_small_and_large() {
    let mut p = Pair::new();
    p.script(&[
        "HSCAN nokey 0",
        "HSCAN nokey 0 COUNT 0",
        "HSCAN nokey x",
        "HSET h a 1 b 2 ab 3",
        "HSCAN h 0",
        "HSCAN h 0 MATCH a*",
        "HSCAN h 0 MATCH a* COUNT 1",
        "HSCAN h 0 COUNT 0",
        "HSCAN h 0 COUNT -1",
        "HSCAN h 0 COUNT x",
        "HSCAN h 0 MATCH",
        "HSCAN h 0 TYPE string",
        "HSCAN h 0 NOVALUES",
        "HSCAN h x",
        "HSCAN h -1",
        "HSCAN h 18446744073709551616",
    ]);
    for i in 0..1000 {
        p.same(&["HSET", "big", &format!("f{i}"), &i.to_string()]);
    }
    let ours = full_scan(&mut p.ours, "HSCAN", "big", &[], 2);
    let theirs = full_scan(&mut p.theirs, "HSCAN", "big", &[], 2);
    assert_eq!(ours.len(), 1000);
    assert_eq!(ours, theirs);
    let ours = full_scan(
        &mut p.ours,
        "HSCAN",
        "big",
        &["MATCH", "f1*", "COUNT", "7"],
        2,
    );
    let theirs = full_scan(
        &mut p.theirs,
        "HSCAN",
        "big",
        &["MATCH", "f1*", "COUNT", "7"],
        2,
    );
    assert_eq!(ours.len(), 111);
    assert_eq!(ours, theirs);
}

#[test]
fn hash_scan_guarantee_under_writes() {
    // Fields present for the whole iteration are returned even while other
    // fields come and go between calls.
    let s = start();
    let mut c = s.raw();
    for i in 0..2000 {
        c.cmd_str(&["HSET", "h", &format!("keep{i}"), "1"]);
    }
    let mut cursor = "0".to_string();
    let mut seen = std::collections::HashSet::new();
    let mut round = 0;
    loop {
        let r = Resp::parse(&c.cmd_str(&["HSCAN", "h", &cursor, "COUNT", "50"]));
        for pair in r.items()[1].items().chunks(2) {
            seen.insert(pair[0].text());
        }
        for j in 0..20 {
            c.cmd_str(&["HSET", "h", &format!("tmp{round}_{j}"), "1"]);
            c.cmd_str(&["HDEL", "h", &format!("tmp{}_{j}", round.max(1) - 1)]);
        }
        round += 1;
        cursor = r.items()[0].text();
        if cursor == "0" {
            break;
        }
    }
    assert!((0..2000).all(|i| seen.contains(&format!("keep{i}"))));
}

#[test]
fn hash_with_generic_key_commands() {
    let mut p = Pair::new();
    p.script(&[
        "HSET h a 1 b 2",
        "TYPE h",
        "COPY h h2",
        "HSET h2 c 3",
        "HGETALL h",
        "HGETALL h2",
        "RENAME h h3",
        "HGETALL h3",
        "EXISTS h",
        "DEL h3",
        "HGETALL h3",
        "EXPIRE h2 100",
        "HSET h2 d 4",
        "TTL h2",
        "HDEL h2 a b c d",
        "TTL h2",
    ]);
    // SCAN TYPE finds hashes of both encodings.
    let long = "y".repeat(100);
    p.same(&["HSET", "t", "f", &long]);
    same_scan_unordered(&mut p, &["SCAN", "0", "TYPE", "hash"]);
}

#[test]
fn hash_resp3() {
    let mut p = Pair::new();
    if !try_resp3(&mut p) {
        return;
    }
    p.script(&[
        "HSET h a 1 b 2",
        "HGETALL h",
        "HGETALL nokey",
        "HKEYS h",
        "HGET h zz",
        "HMGET h a zz",
        "HRANDFIELD nokey",
        "HRANDFIELD h 5 WITHVALUES",
        "HRANDFIELD h 0 WITHVALUES",
        "HSCAN h 0",
        "HINCRBYFLOAT h a 1.5",
    ]);
    let r = Resp::parse(&p.ours.cmd_str(&["HRANDFIELD", "h", "-3", "WITHVALUES"]));
    assert_eq!(r.items().len(), 3);
    assert!(r.items().iter().all(|e| e.items().len() == 2));
}
