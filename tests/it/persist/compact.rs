//! Hashes, sets and sorted sets small and large through RDB files, both
//! ways between ferrokv and redis-server 7.0: every key's type, value, TTL
//! and OBJECT ENCODING must match.

use std::collections::BTreeMap;

use super::data::*;
use crate::support::*;

/// Small and large hashes, sets (intset and not) and sorted sets, plus
/// strings and lists, over three databases with TTLs.
pub(crate) fn populate_collections(r: &mut Raw) {
    let field = |i: usize| format!("field:{i}").into_bytes();
    // Hashes: listpack (ints, strings, a 64-byte value), hashtable by count
    // and by a long value.
    cmd(
        r,
        &[b"HSET", b"h_small", b"a", b"1", b"b", b"-300", b"c", b"x"],
    );
    cmd(r, &[b"HSET", b"h_small", b"d", &[b'v'; 64], b"e", b""]);
    let big: Vec<Vec<u8>> = (0..600)
        .flat_map(|i| [field(i), i.to_string().into_bytes()])
        .collect();
    let mut args: Vec<&[u8]> = vec![b"HSET", b"h_big"];
    args.extend(big.iter().map(|v| v.as_slice()));
    cmd(r, &args);
    cmd(r, &[b"HSET", b"h_long", b"f", &[b'w'; 65]]);
    // Sets: intset (16/32/64-bit), intset past 512 members, strings.
    cmd(r, &[b"SADD", b"s_int", b"3", b"1", b"2", b"-7"]);
    cmd(r, &[b"SADD", b"s_int32", b"100000", b"-5"]);
    cmd(r, &[b"SADD", b"s_int64", b"9223372036854775807", b"0"]);
    let many: Vec<Vec<u8>> = (0..700).map(|i| (i * 3).to_string().into_bytes()).collect();
    let mut args: Vec<&[u8]> = vec![b"SADD", b"s_many"];
    args.extend(many.iter().map(|v| v.as_slice()));
    cmd(r, &args);
    cmd(r, &[b"SADD", b"s_str", b"a", b"b", b"1"]);
    // Sorted sets: listpack (int, fractional, inf scores, ties), skiplist
    // by count and by a long member.
    cmd(
        r,
        &[
            b"ZADD",
            b"z_small",
            b"1",
            b"a",
            b"2.5",
            b"b",
            b"-3",
            b"c",
            b"inf",
            b"top",
            b"2.5",
            b"aa",
            b"0",
            b"zero",
            b"-inf",
            b"bottom",
            b"1e300",
            b"huge",
            b"3000000000",
            b"int",
        ],
    );
    let zbig: Vec<Vec<u8>> = (0..300)
        .flat_map(|i| [format!("{}.25", i % 50).into_bytes(), field(i)])
        .collect();
    let mut args: Vec<&[u8]> = vec![b"ZADD", b"z_big"];
    args.extend(zbig.iter().map(|v| v.as_slice()));
    cmd(r, &args);
    cmd(r, &[b"ZADD", b"z_long", b"1", &[b'm'; 70]]);
    // TTLs on collections.
    cmd(r, &[b"HSET", b"h_ttl", b"f", b"v"]);
    cmd(r, &[b"EXPIRE", b"h_ttl", b"1000"]);
    cmd(r, &[b"SADD", b"s_ttl", b"1"]);
    cmd(r, &[b"PEXPIRE", b"s_ttl", b"2000000"]);
    cmd(r, &[b"ZADD", b"z_ttl", b"1", b"m"]);
    cmd(r, &[b"EXPIRE", b"z_ttl", b"3000"]);
    cmd(r, &[b"SELECT", b"5"]);
    cmd(r, &[b"HSET", b"h5", b"k", b"v"]);
    cmd(r, &[b"SADD", b"s5", b"x"]);
    cmd(r, &[b"ZADD", b"z5", b"5", b"five"]);
    cmd(r, &[b"SELECT", b"0"]);
}

/// One key as seen through commands: TYPE, value, PEXPIRETIME, encoding.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Row {
    ty: Vec<u8>,
    value: Vec<Vec<u8>>,
    expire: i64,
    encoding: Vec<u8>,
}

/// Every key of databases 0..16. Compact encodings keep their order
/// (listpack and intset order is part of what a file carries); hash
/// tables are compared sorted.
pub(crate) fn rows(port: u16) -> BTreeMap<(usize, Vec<u8>), Row> {
    let mut r = Raw::connect(port);
    let mut all = BTreeMap::new();
    for db in 0..16 {
        assert_eq!(r.cmd_str(&["SELECT", &db.to_string()]), b"+OK\r\n");
        for key in bulks(&r.cmd_str(&["KEYS", "*"])) {
            let ty = r.cmd(&[b"TYPE", &key]);
            let encoding = bulk(&r.cmd(&[b"OBJECT", b"ENCODING", &key])).expect("encoding");
            let mut value = match ty.as_slice() {
                b"+string\r\n" => vec![bulk(&r.cmd(&[b"GET", &key])).expect("string")],
                b"+list\r\n" => bulks(&r.cmd(&[b"LRANGE", &key, b"0", b"-1"])),
                b"+hash\r\n" => bulks(&r.cmd(&[b"HGETALL", &key])),
                b"+set\r\n" => bulks(&r.cmd(&[b"SMEMBERS", &key])),
                b"+zset\r\n" => bulks(&r.cmd(&[b"ZRANGE", &key, b"0", b"-1", b"WITHSCORES"])),
                other => panic!("type {:?}", String::from_utf8_lossy(other)),
            };
            if encoding == b"hashtable" {
                if ty == b"+hash\r\n" {
                    let mut pairs: Vec<Vec<Vec<u8>>> =
                        value.chunks(2).map(<[Vec<u8>]>::to_vec).collect();
                    pairs.sort();
                    value = pairs.concat();
                } else {
                    value.sort();
                }
            }
            let expire = int(&r.cmd(&[b"PEXPIRETIME", &key]));
            all.insert(
                (db, key),
                Row {
                    ty,
                    value,
                    expire,
                    encoding,
                },
            );
        }
    }
    all
}

/// Asserts two snapshots are equal key by key (readable failures).
fn same_rows(got: &BTreeMap<(usize, Vec<u8>), Row>, want: &BTreeMap<(usize, Vec<u8>), Row>) {
    for (k, w) in want {
        assert_eq!(got.get(k), Some(w), "key {k:?}");
    }
    assert_eq!(got.len(), want.len());
}

#[test]
fn redis_compact_encodings_load_into_ferrokv() {
    let dir = TempDir::new("ferrokv-compact-in");
    let d = dir.s();
    let redis = spawn_redis_with(&["--dir", &d, "--dbfilename", "r.rdb"]);
    let mut r = Raw::connect(redis.port);
    populate_collections(&mut r);
    populate_strings(&mut r);
    populate_lists(&mut r);
    assert_eq!(r.cmd_str(&["SAVE"]), b"+OK\r\n");
    let want = rows(redis.port);
    assert_eq!(want.len(), 40);
    let ours = ferrokv_on(&dir, "r.rdb");
    same_rows(&rows(ours.port), &want);
    // And DUMP payloads of Redis's compact types RESTORE into ferrokv.
    let other = start();
    migrate(redis.port, other.port);
    same_rows(&rows(other.port), &want);
}

#[test]
fn ferrokv_collections_load_into_redis() {
    let dir = TempDir::new("ferrokv-compact-out");
    let source = spawn_redis();
    let mut r = Raw::connect(source.port);
    populate_collections(&mut r);
    populate_strings(&mut r);
    let want = rows(source.port);
    let ours = ferrokv_on(&dir, "ours.rdb");
    let mut o = ours.raw();
    populate_collections(&mut o);
    populate_strings(&mut o);
    // TTLs set by the two populations differ by a few ms: copy Redis's.
    migrate_ttls(source.port, ours.port);
    assert_eq!(o.cmd_str(&["SAVE"]), b"+OK\r\n");
    let path = dir.path().join("ours.rdb");
    check_rdb(&path);
    let loaded = spawn_redis_with(&["--dir", &dir.s(), "--dbfilename", "ours.rdb"]);
    same_rows(&rows(loaded.port), &want);
    // ferrokv restarted on its own file has the same data too.
    let again = ferrokv_on(&dir, "ours.rdb");
    same_rows(&rows(again.port), &want);
}

/// Sets on `to` every TTL `from` has (PEXPIREAT with Redis's times).
fn migrate_ttls(from: u16, to: u16) {
    let mut a = Raw::connect(from);
    let mut b = Raw::connect(to);
    for db in 0..16 {
        let d = db.to_string();
        cmd(&mut a, &[b"SELECT", d.as_bytes()]);
        cmd(&mut b, &[b"SELECT", d.as_bytes()]);
        for key in bulks(&a.cmd_str(&["KEYS", "*"])) {
            let at = int(&a.cmd(&[b"PEXPIRETIME", &key]));
            if at > 0 {
                let at = at.to_string();
                assert_eq!(b.cmd(&[b"PEXPIREAT", &key, at.as_bytes()]), b":1\r\n");
            }
        }
    }
}

#[test]
fn dump_payloads_of_compact_values_match_redis() {
    let mut p = Pair::new();
    let (mut a, mut b) = p.connect_again();
    populate_collections(&mut a);
    populate_collections(&mut b);
    // Hash tables with several entries iterate in table order, which
    // differs; everything else serializes byte for byte as Redis does.
    for key in [
        "h_small", "h_long", "h_ttl", "s_int", "s_int32", "s_int64", "s_ttl", "z_small", "z_big",
        "z_long", "z_ttl",
    ] {
        p.same(&["DUMP", key]);
    }
}
