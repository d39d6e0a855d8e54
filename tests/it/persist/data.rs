//! Shared data and helpers of the persistence tests: temp dirs, reply
//! parsing, a dataset covering every RDB string and list encoding, key by
//! key snapshots of a server, DUMP/RESTORE migration.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ferrokv::store::value::Value;

use crate::support::*;

/// A temp directory removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> TempDir {
        let p = unique_temp_path(name);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    pub(crate) fn s(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(super) fn bulk(r: &[u8]) -> Option<Vec<u8>> {
    let nl = r.iter().position(|&c| c == b'\n')?;
    if r.first() != Some(&b'$') {
        return None;
    }
    let n: i64 = std::str::from_utf8(&r[1..nl - 1]).ok()?.parse().ok()?;
    if n < 0 {
        return None;
    }
    Some(r[nl + 1..nl + 1 + n as usize].to_vec())
}

pub(super) fn int(r: &[u8]) -> i64 {
    assert_eq!(r.first(), Some(&b':'), "{:?}", String::from_utf8_lossy(r));
    std::str::from_utf8(&r[1..r.len() - 2])
        .expect("utf8")
        .parse()
        .expect("integer")
}

/// The bulk strings of a flat array reply.
pub(super) fn bulks(r: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let nl = r.iter().position(|&c| c == b'\n').expect("header");
    assert_eq!(r[0], b'*', "{:?}", String::from_utf8_lossy(r));
    let mut pos = nl + 1;
    while pos < r.len() {
        let n = frame_len(&r[pos..]).expect("complete element");
        out.push(bulk(&r[pos..pos + n]).expect("bulk element"));
        pos += n;
    }
    out
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Val {
    Str(Vec<u8>),
    List(Vec<Vec<u8>>),
}

/// Every key of databases 0..16 with its value and PEXPIRETIME. Lists are
/// read with LRANGE on Redis, and through DUMP on ferrokv (which has no
/// list commands of its own in this module's scope).
pub(super) fn contents(port: u16, is_redis: bool) -> BTreeMap<(usize, Vec<u8>), (Val, i64)> {
    let mut r = Raw::connect(port);
    let mut all = BTreeMap::new();
    for db in 0..16 {
        assert_eq!(r.cmd_str(&["SELECT", &db.to_string()]), b"+OK\r\n");
        for key in bulks(&r.cmd_str(&["KEYS", "*"])) {
            let t = r.cmd(&[b"TYPE", &key]);
            let v = match t.as_slice() {
                b"+string\r\n" => Val::Str(bulk(&r.cmd(&[b"GET", &key])).expect("string")),
                b"+list\r\n" if is_redis => {
                    Val::List(bulks(&r.cmd(&[b"LRANGE", &key, b"0", b"-1"])))
                }
                b"+list\r\n" => {
                    let p = bulk(&r.cmd(&[b"DUMP", &key])).expect("dump");
                    assert!(ferrokv::persist::rdb::load::verify_payload(&p, false));
                    match ferrokv::persist::rdb::load::payload_value(&p) {
                        Some(Value::List(l)) => Val::List(l.iter().map(|e| e.to_vec()).collect()),
                        other => panic!("not a list: {other:?}"),
                    }
                }
                other => panic!("unexpected type {:?}", String::from_utf8_lossy(other)),
            };
            let exp = int(&r.cmd(&[b"PEXPIRETIME", &key]));
            all.insert((db, key), (v, exp));
        }
    }
    all
}

pub(super) fn cmd(r: &mut Raw, args: &[&[u8]]) {
    let reply = r.cmd(args);
    assert!(
        reply[0] != b'-',
        "{:?} failed: {}",
        String::from_utf8_lossy(args[0]),
        String::from_utf8_lossy(&reply)
    );
}

/// Pseudo-random bytes (no compressible runs).
pub(super) fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Strings of every RDB encoding over three databases, with TTLs.
pub(super) fn populate_strings(r: &mut Raw) {
    let far = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis()
        + 3_600_000)
        .to_string();
    for (k, v) in [
        ("i8", "100"),
        ("i16", "-30000"),
        ("i32", "2147483647"),
        ("i64", "9223372036854775807"),
        ("neg", "-7"),
        ("padded", "0012"),
        ("empty", ""),
        ("short", "hello"),
        ("float", "3.14"),
    ] {
        cmd(r, &[b"SET", k.as_bytes(), v.as_bytes()]);
    }
    cmd(r, &[b"SET", b"compressible", &[b'a'; 100]]);
    cmd(r, &[b"SET", b"big", &b"0123456789".repeat(30_000)]);
    cmd(r, &[b"SET", b"noise", &noise(5000, 7)]);
    cmd(r, &[b"SET", b"\x00\xffbin", b"\r\n\x00"]);
    cmd(r, &[b"SET", b"ttl_s", b"v", b"EX", b"1000"]);
    cmd(r, &[b"SET", b"ttl_ms", b"w", b"PXAT", far.as_bytes()]);
    cmd(r, &[b"SELECT", b"3"]);
    cmd(r, &[b"SET", b"in3", b"three"]);
    cmd(r, &[b"SET", b"n3", b"33"]);
    cmd(r, &[b"SELECT", b"15"]);
    cmd(r, &[b"SET", b"in15", b"fifteen", b"EX", b"500"]);
    cmd(r, &[b"SELECT", b"0"]);
}

/// Lists small and large (several listpack nodes, big elements), on Redis.
pub(super) fn populate_lists(r: &mut Raw) {
    cmd(
        r,
        &[
            b"RPUSH",
            b"l_small",
            b"a",
            b"b",
            b"1",
            b"2",
            b"-5000",
            b"3000000000",
            b"",
        ],
    );
    let items: Vec<Vec<u8>> = (0..20_000)
        .map(|i| {
            if i % 3 == 0 {
                (i * 7919 - 50_000).to_string().into_bytes()
            } else {
                format!("item-{i}").into_bytes()
            }
        })
        .collect();
    for chunk in items.chunks(1000) {
        let mut args: Vec<&[u8]> = vec![b"RPUSH", b"l_big"];
        args.extend(chunk.iter().map(|i| i.as_slice()));
        cmd(r, &args);
    }
    let big = noise(10_000, 3);
    cmd(r, &[b"RPUSH", b"l_wide", &big, b"x", &big, &[b'z'; 70_000]]);
    cmd(r, &[b"RPUSH", b"l_ttl", b"1", b"2"]);
    cmd(r, &[b"EXPIRE", b"l_ttl", b"900"]);
    cmd(r, &[b"SELECT", b"3"]);
    cmd(r, &[b"LPUSH", b"l3", b"c", b"b", b"a"]);
    cmd(r, &[b"SELECT", b"0"]);
}

/// Copies every key (value and TTL) from one server to another with DUMP
/// and RESTORE ... ABSTTL.
pub(super) fn migrate(from: u16, to: u16) {
    let mut a = Raw::connect(from);
    let mut b = Raw::connect(to);
    for db in 0..16 {
        let d = db.to_string();
        cmd(&mut a, &[b"SELECT", d.as_bytes()]);
        cmd(&mut b, &[b"SELECT", d.as_bytes()]);
        for key in bulks(&a.cmd_str(&["KEYS", "*"])) {
            let payload = bulk(&a.cmd(&[b"DUMP", &key])).expect("dump");
            let exp = int(&a.cmd(&[b"PEXPIRETIME", &key])).max(0).to_string();
            let r = b.cmd(&[b"RESTORE", &key, exp.as_bytes(), &payload, b"ABSTTL"]);
            assert_eq!(r, b"+OK\r\n", "{}", String::from_utf8_lossy(&r));
        }
    }
}

pub(crate) fn ferrokv_on(dir: &TempDir, file: &str) -> Ferrokv {
    let (d, f) = (dir.s(), file.to_string());
    start_with(move |c| {
        c.dir = d;
        c.dbfilename = f;
    })
}

pub(super) fn check_rdb(path: &Path) {
    let out = std::process::Command::new("redis-check-rdb")
        .arg(path)
        .output()
        .expect("redis-check-rdb runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && text.contains("RDB looks OK"),
        "{text}"
    );
}
