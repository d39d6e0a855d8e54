//! Streams, against redis-server: XADD ID rules and options, ranges,
//! trimming (exact and by whole nodes), XDEL, XSETID, XREAD with BLOCK,
//! generic key commands on streams and DUMP/RESTORE both ways.

use std::time::Duration;

use crate::support::{encode, start, wait_until, Pair, Raw};

fn commands_script(p: &mut Pair) {
    p.script(&[
        "XADD s 1-1 a 1",
        "XADD s 1-1 a 1",
        "XADD s 1-* b 2",
        "XADD s 0-0 a 1",
        "XADD s2 0-0 a 1",
        "XADD s2 0-* a 1",
        "EXISTS s2",
        "XADD s 5 a 1 b",
        "XADD s 5 a",
        "XADD s MAXLEN",
        "XADD s MAXLEN 5",
        "XADD s MAXLEN ~ 5 6-0 a 1 b 2",
        "XADD s MAXLEN -1 * a 1",
        "XADD s MAXLEN x * a 1",
        "XADD s LIMIT 5 * a 1",
        "XADD s LIMIT -1 * a 1",
        "XADD s MAXLEN 5 LIMIT 5 * a 1",
        "XADD s MAXLEN = 5 LIMIT 5 * a 1",
        "XADD s MAXLEN 5 MINID 3 * a 1",
        "XADD s MINID - * a 1",
        "XADD s NOMKSTREAM 7-0 x y",
        "XADD nos NOMKSTREAM * x y",
        "EXISTS nos",
        "XADD s 8-+3 a b",
        "XADD s -7 a b",
        "XADD s 9-x a b",
        "XADD s 18446744073709551616 a b",
        "XRANGE s - +",
        "XREVRANGE s + -",
        "XRANGE s (1-1 +",
        "XRANGE s - (5-0",
        "XREVRANGE s (6-0 (1-1",
        "XRANGE s - + COUNT 0",
        "XRANGE s - + COUNT -1",
        "XRANGE s - + COUNT 1",
        "XREVRANGE s + - COUNT 2",
        "XRANGE s - + COUNT",
        "XRANGE s - + FOO 1",
        "XRANGE s - + COUNT x",
        "XRANGE s 18446744073709551615-18446744073709551615 +",
        "XRANGE s (18446744073709551615-18446744073709551615 +",
        "XRANGE s - (0-0",
        "XRANGE s (- +",
        "XRANGE s ( +",
        "XRANGE s 5 5",
        "XRANGE s 9 1",
        "XRANGE s abc +",
        "XRANGE nokey - +",
        "XLEN s",
        "XLEN nokey",
        "SET str x",
        "XLEN str",
        "XADD str * a 1",
        "XRANGE str - +",
        "XTRIM str MAXLEN 1",
        "XREAD STREAMS str 0",
        "XDEL s 1-1 99-9",
        "XDEL s abc",
        "XDEL nokey abc",
        "XDEL str abc",
        "XLEN s",
        "XTRIM s",
        "XTRIM s MAXLEN 1 foo",
        "XTRIM s FOO 1",
        "XTRIM s MAXLEN ~ 1 LIMIT 1",
        "XTRIM s MINID = 6",
        "XTRIM nokey MAXLEN 1",
        "XRANGE s - +",
        "XTRIM s MAXLEN 0",
        "XLEN s",
        "EXISTS s",
        "XSETID s 1-0",
        "XSETID s 200-0",
        "XADD s 200-0 a b",
        "XADD s 200-* a b",
        "XSETID nokey 1-1",
        "XSETID str 1-1",
        "XSETID s 100-0",
        "XSETID s 300-0 ENTRIESADDED 0",
        "XSETID s 300-0 ENTRIESADDED -1",
        "XSETID s 300-0 MAXDELETEDID 400-0",
        "XSETID s 300-0 ENTRIESADDED 10 MAXDELETEDID 100-0",
        "XSETID s 300-0 FOO",
        "XSETID s + ",
        "XADD t 18446744073709551615-18446744073709551615 a b",
        "XADD t * a b",
        "XADD t 18446744073709551615-* a b",
        "XADD u 18446744073709551615-* a b",
        "XADD u 18446744073709551615-* a b",
        "XREAD STREAMS s 0",
        "XREAD STREAMS s",
        "XREAD COUNT 1 STREAMS s nokey 0 0",
        "XREAD STREAMS s $",
        "XREAD STREAMS s >",
        "XREAD STREAMS s +",
        "XREAD BLOCK -1 STREAMS s 0",
        "XREAD BLOCK abc STREAMS s 0",
        "XREAD GROUP a b STREAMS s 0",
        "XREAD NOACK STREAMS s 0",
        "XREAD FOO STREAMS s 0",
        "XREAD COUNT 1",
        "XREAD COUNT -5 STREAMS s t 0 0",
        "TYPE s",
        "OBJECT ENCODING s",
        "XADD e 1-1 a 1 b 2",
        "XADD e 1-2 a 1 c 2",
        "XADD e 2-1 a 1 b 2",
        "XDEL e 2-1",
        "XREAD STREAMS e 1-1",
        "XREAD STREAMS e 1-2",
        "XDEL e 1-1 1-2",
        "XLEN e",
        "EXISTS e",
        "XREAD STREAMS e 0",
        "XRANGE e - +",
        "MULTI",
        "XREAD BLOCK 0 STREAMS e $",
        "XADD e 3-0 f v",
        "EXEC",
    ]);
}

#[test]
fn commands_and_errors_resp2() {
    let mut p = Pair::new();
    commands_script(&mut p);
}

#[test]
fn commands_and_errors_resp3() {
    let mut p = Pair::new();
    p.both(&["HELLO", "3"]);
    commands_script(&mut p);
}

#[test]
fn automatic_ids_grow() {
    let server = start();
    let mut r = server.raw();
    let first = r.cmd_str(&["XADD", "s", "*", "a", "1"]);
    let second = r.cmd_str(&["XADD", "s", "*", "a", "2"]);
    let id = |reply: &[u8]| -> (u64, u64) {
        let s = String::from_utf8_lossy(reply);
        let body = s.lines().nth(1).unwrap_or_default().to_string();
        let (ms, seq) = body.split_once('-').unwrap_or(("0", "0"));
        (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
    };
    let (a, b) = (id(&first), id(&second));
    assert!(a.0 > 1_600_000_000_000, "{first:?}");
    assert!(b > a, "{a:?} then {b:?}");
    // A future explicit ms pins later automatic IDs to it.
    r.cmd_str(&["XADD", "s", "99999999999999-5", "a", "3"]);
    assert_eq!(
        r.cmd_str(&["XADD", "s", "*", "a", "4"]),
        b"$16\r\n99999999999999-6\r\n"
    );
    assert_eq!(r.cmd_str(&["XLEN", "s"]), b":4\r\n");
}

/// Fills `s` with `n` entries whose field names rotate (so some entries
/// share the node's master fields and some do not) and values grow.
fn fill(p: &mut Pair, key: &str, n: usize, value_len: impl Fn(usize) -> usize) {
    let (mut ours, mut theirs) = p.connect_again();
    let mut batch = Vec::new();
    for i in 1..=n {
        let id = format!("{i}-0");
        let field = format!("field{}", i % 3);
        let value = "x".repeat(value_len(i));
        batch.extend(encode(&[
            b"XADD",
            key.as_bytes(),
            id.as_bytes(),
            field.as_bytes(),
            value.as_bytes(),
        ]));
    }
    for r in [&mut ours, &mut theirs] {
        r.send(&batch);
        for _ in 0..n {
            r.read_reply();
        }
    }
}

#[test]
fn trims_follow_redis_nodes() {
    let mut p = Pair::new();
    fill(&mut p, "big", 350, |i| i % 5);
    fill(&mut p, "wide", 60, |i| i * 7);
    p.script(&[
        "XTRIM big MAXLEN ~ 260",
        "XLEN big",
        "XTRIM big MAXLEN ~ 120",
        "XLEN big",
        "XDEL big 160-0 161-0 250-0",
        "XTRIM big MINID ~ 205",
        "XLEN big",
        "XTRIM big MINID ~ 300-1",
        "XLEN big",
        "XADD big MAXLEN ~ 10 400-0 a b",
        "XLEN big",
        "XTRIM big MAXLEN ~ 0 LIMIT 10",
        "XTRIM big MAXLEN ~ 0 LIMIT 100",
        "XLEN big",
        "XRANGE big - + COUNT 3",
        "XLEN wide",
        "XTRIM wide MAXLEN ~ 30",
        "XLEN wide",
        "XTRIM wide MAXLEN ~ 5",
        "XLEN wide",
        "XTRIM wide MINID 58",
        "XRANGE wide - + COUNT 1",
        "CONFIG SET stream-node-max-entries 7",
        "CONFIG SET stream-node-max-bytes 300",
    ]);
    fill(&mut p, "small", 80, |i| i % 40);
    p.script(&[
        "XTRIM small MAXLEN ~ 50",
        "XLEN small",
        "XDEL small 40-0 41-0 42-0 43-0 44-0 45-0 46-0",
        "XTRIM small MINID ~ 48",
        "XLEN small",
        "XADD small MAXLEN ~ 5 100-0 a b",
        "XLEN small",
        "XRANGE small - + COUNT 2",
        "CONFIG SET stream-node-max-entries 0",
        "CONFIG SET stream-node-max-bytes 0",
    ]);
    fill(&mut p, "unbounded", 50, |_| 3);
    p.script(&["XTRIM unbounded MAXLEN ~ 1", "XLEN unbounded"]);
}

#[test]
fn generic_key_commands_on_streams() {
    let mut p = Pair::new();
    p.script(&[
        "XADD s 1-1 a 1 b 2",
        "XADD s 2-0 a 3 b 4",
        "XADD s 3-0 c 5",
        "TYPE s",
        "OBJECT ENCODING s",
        "SCAN 0 TYPE stream",
        "SCAN 0 TYPE string",
        "EXPIRE s 100",
        "TTL s",
        "PERSIST s",
        "RENAME s t",
        "XRANGE t - +",
        "COPY t u",
        "XADD u 4-0 d 6",
        "XLEN t",
        "XLEN u",
        "DUMP t",
        "DEL t u",
        "EXISTS t u",
        "SET k v",
        "XADD k * a b",
        "LPUSH s x",
        "XADD l 1-0 a b",
        "LPUSH l x",
        "GET l",
        "SORT l",
    ]);
}

#[test]
fn dump_and_restore_both_ways() {
    let mut p = Pair::new();
    fill(&mut p, "s", 230, |i| i % 70);
    p.script(&["XADD s 231-5 other fields here too", "XSETID s 500-0"]);
    // Same nodes, so byte-identical payloads.
    let dump = p.same(&["DUMP", "s"]);
    let payload = &dump[dump.iter().position(|&c| c == b'\n').map_or(0, |n| n + 1)..];
    let payload = &payload[..payload.len().saturating_sub(2)];
    for r in [&mut p.ours, &mut p.theirs] {
        let reply = r.cmd(&[b"RESTORE", b"copy", b"0", payload]);
        assert_eq!(reply, b"+OK\r\n");
    }
    p.script(&[
        "XRANGE copy - + COUNT 5",
        "XREVRANGE copy + - COUNT 5",
        "XLEN copy",
        // An explicit millisecond: `*` would read each server's clock.
        "XADD copy 501-* a b",
        "XTRIM copy MAXLEN ~ 100",
        "XLEN copy",
    ]);
    // ferrokv's payload of a stream with deleted entries loads in Redis.
    p.script(&["XDEL s 5-0 6-0 7-0"]);
    let ours = p.ours.cmd_str(&["DUMP", "s"]);
    let body = &ours[ours.iter().position(|&c| c == b'\n').map_or(0, |n| n + 1)..];
    let body = &body[..body.len().saturating_sub(2)];
    assert_eq!(
        p.theirs.cmd(&[b"RESTORE", b"fromours", b"0", body]),
        b"+OK\r\n"
    );
    let (a, b) = (
        p.ours.cmd_str(&["XRANGE", "s", "-", "+"]),
        p.theirs.cmd_str(&["XRANGE", "fromours", "-", "+"]),
    );
    assert_eq!(a, b);
}

pub(crate) fn send_both(a: &mut Raw, b: &mut Raw, args: &[&str]) {
    let v: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    a.send(&encode(&v));
    b.send(&encode(&v));
}

fn same_reply(a: &mut Raw, b: &mut Raw) -> Vec<u8> {
    let x = a.read_reply();
    let y = b.read_reply();
    assert_eq!(String::from_utf8_lossy(&x), String::from_utf8_lossy(&y));
    x
}

#[track_caller]
pub(crate) fn wait_blocked(p: &mut Pair, n: usize) {
    let want = format!("blocked_clients:{n}\r\n");
    assert!(wait_until(Duration::from_secs(5), || {
        let (a, b) = p.both(&["INFO", "clients"]);
        String::from_utf8_lossy(&a).contains(&want) && String::from_utf8_lossy(&b).contains(&want)
    }));
}

#[test]
fn xread_block_is_served_by_xadd() {
    let mut p = Pair::new();
    let (mut a1, mut a2) = p.connect_again();
    let (mut b1, mut b2) = p.connect_again();
    let (mut c1, mut c2) = p.connect_again();
    for r in [&mut b1, &mut b2] {
        r.cmd_str(&["HELLO", "3"]);
    }
    p.same(&["XADD", "s1", "5-0", "old", "x"]);
    send_both(
        &mut a1,
        &mut a2,
        &["XREAD", "BLOCK", "0", "STREAMS", "s1", "s2", "$", "$"],
    );
    send_both(
        &mut b1,
        &mut b2,
        &[
            "XREAD", "COUNT", "1", "BLOCK", "5000", "STREAMS", "s2", "0-0",
        ],
    );
    send_both(
        &mut c1,
        &mut c2,
        &["XREAD", "BLOCK", "0", "STREAMS", "s1", "9-0"],
    );
    wait_blocked(&mut p, 3);
    // Two waiters on s2 are both served by one XADD; the one on s1 past
    // 9-0 keeps waiting.
    p.same(&["XADD", "s2", "1-0", "k", "v", "k2", "v2"]);
    same_reply(&mut a1, &mut a2);
    same_reply(&mut b1, &mut b2);
    wait_blocked(&mut p, 1);
    p.same(&["XADD", "s1", "8-0", "k", "v"]);
    wait_blocked(&mut p, 1);
    p.same(&["XADD", "s1", "10-0", "k", "v"]);
    same_reply(&mut c1, &mut c2);
    // A write of another type on the key does not wake a stream reader.
    send_both(
        &mut a1,
        &mut a2,
        &["XREAD", "BLOCK", "0", "STREAMS", "k", "$"],
    );
    wait_blocked(&mut p, 1);
    p.same(&["RPUSH", "k", "a"]);
    p.same(&["DEL", "k"]);
    p.same(&["XADD", "k", "1-1", "f", "v"]);
    same_reply(&mut a1, &mut a2);
    // Timeouts answer a null array, in RESP3 too.
    send_both(
        &mut a1,
        &mut a2,
        &["XREAD", "BLOCK", "50", "STREAMS", "none", "$"],
    );
    same_reply(&mut a1, &mut a2);
    send_both(
        &mut b1,
        &mut b2,
        &["XREAD", "BLOCK", "50", "STREAMS", "none", "$"],
    );
    same_reply(&mut b1, &mut b2);
    // Scripts may not block.
    p.same(&[
        "EVAL",
        "return redis.pcall('xread','BLOCK',0,'STREAMS','s1','$')",
        "0",
    ]);
    p.same(&["EVAL", "return redis.call('XREAD','STREAMS','s1','0')", "0"]);
}

#[test]
fn aof_replays_generated_ids_and_approximate_trims() {
    let dir = crate::support::unique_temp_path("ferrokv-stream-aof");
    let d = dir.display().to_string();
    let server = crate::support::start_with(|c| {
        c.appendonly = true;
        c.appendfsync = "always".into();
        c.dir = d.clone();
    });
    let mut r = server.raw();
    let mut batch = Vec::new();
    for i in 0..250 {
        let v = i.to_string();
        batch.extend(encode(&[b"XADD", b"s", b"*", b"f", v.as_bytes()]));
    }
    r.send(&batch);
    for _ in 0..250 {
        r.read_reply();
    }
    // The new base holds the stream as RDB, entries 1 and 2 deleted (the
    // first node keeps 98 live entries, so the trim below still drops
    // it whole).
    let ids = r.cmd_str(&["XRANGE", "s", "-", "+", "COUNT", "3"]);
    let ids: Vec<String> = String::from_utf8_lossy(&ids)
        .lines()
        .filter(|l| l.contains('-') && !l.starts_with('$'))
        .map(str::to_string)
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    r.cmd_str(&["XDEL", "s", &ids[1], &ids[2]]);
    assert!(r.cmd_str(&["BGREWRITEAOF"]).starts_with(b"+"));
    assert!(wait_until(Duration::from_secs(5), || {
        String::from_utf8_lossy(&r.cmd_str(&["INFO", "persistence"]))
            .contains("aof_rewrite_in_progress:0")
    }));
    // The new base holds the stream as RDB, entries 1 and 2 deleted (the
    // first node keeps 98 live entries, so the trim below still drops
    // it whole).
    let ids = r.cmd_str(&["XRANGE", "s", "-", "+", "COUNT", "3"]);
    let ids: Vec<String> = String::from_utf8_lossy(&ids)
        .lines()
        .filter(|l| l.contains('-') && !l.starts_with('$') && !l.starts_with('*'))
        .map(str::to_string)
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    r.cmd_str(&["XDEL", "s", &ids[1], &ids[2]]);
    assert!(r.cmd_str(&["BGREWRITEAOF"]).starts_with(b"+"));
    assert!(wait_until(Duration::from_secs(5), || {
        String::from_utf8_lossy(&r.cmd_str(&["INFO", "persistence"]))
            .contains("aof_rewrite_in_progress:0")
    }));
    r.cmd_str(&[
        "XADD", "s", "MAXLEN", "~", "120", "LIMIT", "500", "*", "f", "last",
    ]);
    r.cmd_str(&["XADD", "s", "99999999999999-*", "g", "h"]);
    r.cmd_str(&["XTRIM", "s", "MINID", "~", "0-1"]);
    r.cmd_str(&["XDEL", "s", "99999999999999-0"]);
    r.cmd_str(&["XADD", "m", "MINID", "~", "5", "1-1", "a", "b"]);
    let want = r.cmd_str(&["XRANGE", "s", "-", "+"]);
    let len = r.cmd_str(&["XLEN", "s"]);
    assert_eq!(len, b":151\r\n");
    // redis-server replays ferrokv's AOF (RDB base + commands) to the same
    // entries.
    let redis = crate::support::spawn_redis_with(&["--dir", &d, "--appendonly", "yes"]);
    let mut theirs = Raw::connect(redis.port);
    assert!(wait_until(Duration::from_secs(5), || theirs
        .cmd_str(&["XLEN", "s"])
        == len));
    assert_eq!(theirs.cmd_str(&["XRANGE", "s", "-", "+"]), want);
    assert_eq!(theirs.cmd_str(&["XLEN", "m"]), b":1\r\n");
    drop(redis);
    // And so does ferrokv.
    let again = crate::support::start_with(|c| {
        c.appendonly = true;
        c.dir = d.clone();
    });
    assert_eq!(again.raw().cmd_str(&["XRANGE", "s", "-", "+"]), want);
    let _ = std::fs::remove_dir_all(&dir);
}
