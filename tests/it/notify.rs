//! Keyspace notifications for every value type, against redis-server: one
//! subscriber per server on `__keyspace@0__:*` and `__keyevent@0__:*`, the
//! same commands on both, and the pushed messages compared in order.

use std::time::Duration;

use crate::support::{wait_until, Pair, Raw};

/// Every message pushed to `sub` up to the keyevent of `SET <marker>`, as
/// "channel payload" lines.
fn collect_until(sub: &mut Raw, marker: &str) -> Vec<String> {
    let mut got = Vec::new();
    loop {
        let m = String::from_utf8_lossy(&sub.read_reply()).into_owned();
        let end = m.contains("__keyevent@0__:set") && m.contains(marker);
        // *4 pmessage pattern channel payload: keep the last two bulks.
        let parts: Vec<&str> = m.split("\r\n").collect();
        got.push(match parts.as_slice() {
            [_, _, _, _, _, _, ch, _, payload, ..] => format!("{ch} {payload}"),
            _ => m.clone(),
        });
        if end {
            return got;
        }
    }
}

/// Runs `lines` on both servers with notify-keyspace-events `flags`, and
/// compares what the two subscribers received.
fn same_events(flags: &str, lines: &[&str]) {
    let mut p = Pair::new();
    let (mut sa, mut sb) = p.connect_again();
    for r in [&mut sa, &mut sb] {
        r.cmd_str(&["PSUBSCRIBE", "__keyspace@0__:*", "__keyevent@0__:*"]);
        r.read_reply();
    }
    p.same(&["CONFIG", "SET", "notify-keyspace-events", flags]);
    p.script(lines);
    p.same(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    p.same(&["SET", "__end__", "1"]);
    let ours = collect_until(&mut sa, "__end__");
    let theirs = collect_until(&mut sb, "__end__");
    assert!(ours.len() > 2, "no events seen");
    assert_eq!(ours, theirs, "events differ (left ferrokv, right redis)");
}

const STRINGS_AND_KEYS: &[&str] = &[
    "SET s v",
    "SET s v NX",
    "SET s w XX GET",
    "SETNX s2 v",
    "SETEX s3 100 v",
    "PSETEX s4 100000 v",
    "MSET m1 a m2 b",
    "MSETNX m3 a m4 b",
    "MSETNX m3 a m5 b",
    "GETSET s x",
    "GETDEL s2",
    "GETEX s3 PERSIST",
    "GETEX s4 EX 100",
    "GETEX s4",
    "INCR n",
    "INCRBY n 5",
    "DECR n",
    "DECRBY n 2",
    "INCRBYFLOAT f 1.5",
    "APPEND s y",
    "SETRANGE s 10 z",
    "SETRANGE s 0 ",
    "EXPIRE s 100",
    "PEXPIRE s 100000",
    "EXPIREAT s 99999999999",
    "PEXPIREAT s 99999999999999",
    "EXPIRE s 100 NX",
    "PERSIST s",
    "EXPIRE m1 0",
    "PEXPIRE m2 -5",
    "RENAME s s5",
    "RENAMENX s5 s6",
    "RENAMENX m3 m4",
    "COPY s6 s7",
    "COPY s6 s7 REPLACE",
    "MOVE s7 1",
    "DEL s6 nokey",
    "UNLINK m3 m4",
    "TOUCH n",
    "SET e 1 EX 100",
    "SET e 2 KEEPTTL",
    "SET e 3",
];

#[test]
fn strings_and_generic_keys() {
    same_events("KEA", STRINGS_AND_KEYS);
}

#[test]
fn restore() {
    let mut p = Pair::new();
    let (mut sa, mut sb) = p.connect_again();
    for r in [&mut sa, &mut sb] {
        r.cmd_str(&["PSUBSCRIBE", "__keyspace@0__:*", "__keyevent@0__:*"]);
        r.read_reply();
    }
    // With `new`: RESTORE REPLACE creates the key anew.
    p.same(&["CONFIG", "SET", "notify-keyspace-events", "KEAn"]);
    // A DUMP of "value" from Redis, loaded by both.
    let dump = p.theirs.cmd_str(&["DUMP", "__end__"]);
    assert_eq!(dump, b"$-1\r\n");
    p.theirs.cmd_str(&["SET", "src", "value"]);
    p.ours.cmd_str(&["SET", "src", "value"]);
    let dump = p.theirs.cmd_str(&["DUMP", "src"]);
    let start = dump.iter().position(|&c| c == b'\n').map_or(0, |n| n + 1);
    let payload = &dump[start..dump.len() - 2];
    for args in [
        &[&b"RESTORE"[..], b"r", b"0", payload][..],
        &[b"RESTORE", b"r", b"0", payload, b"REPLACE"],
        &[b"RESTORE", b"r2", b"100000", payload],
        &[b"RESTORE", b"r", b"1", payload, b"REPLACE", b"ABSTTL"],
    ] {
        p.same_bytes(args);
    }
    p.same(&["SET", "__end__", "1"]);
    assert_eq!(
        collect_until(&mut sa, "__end__"),
        collect_until(&mut sb, "__end__")
    );
}

#[test]
fn lists() {
    same_events(
        "KEA",
        &[
            "LPUSH l a b c",
            "RPUSH l d",
            "LPUSHX l e",
            "RPUSHX l f",
            "LPUSHX nol e",
            "LINSERT l BEFORE a x",
            "LSET l 0 y",
            "LPOP l",
            "RPOP l 2",
            "LMOVE l l2 LEFT RIGHT",
            "RPOPLPUSH l l2",
            "LMPOP 2 nol l LEFT COUNT 1",
            "BLPOP l 0",
            "BRPOP l2 0",
            "BLMOVE l2 l3 LEFT LEFT 0",
            "LREM l3 0 c",
            "RPUSH t a b c d e",
            "LTRIM t 1 2",
            "LTRIM t 5 6",
            "RPUSH u 3 1 2",
            "SORT u STORE u2",
            "LPOP u 3",
            "BLMPOP 0 1 u2 RIGHT COUNT 10",
        ],
    );
}

#[test]
fn hashes() {
    same_events(
        "KEA",
        &[
            "HSET h a 1 b 2",
            "HSET h a 1",
            "HSETNX h a 2",
            "HSETNX h c 3",
            "HMSET h d 4",
            "HINCRBY h a 5",
            "HINCRBYFLOAT h b 1.5",
            "HDEL h a nope",
            "HDEL h b c d",
            "HDEL h nope",
        ],
    );
}

#[test]
fn sets() {
    same_events(
        "KEA",
        &[
            "SADD s a b c",
            "SADD s a",
            "SREM s a nope",
            "SMOVE s s2 b",
            "SMOVE s s2 nope",
            "SADD x 1 2 3",
            "SADD y 2 3 4",
            "SINTERSTORE i x y",
            "SUNIONSTORE u x y",
            "SDIFFSTORE d x y",
            "SDIFFSTORE d x x",
            "SINTERSTORE i nokey x",
            "SPOP s2",
            "SPOP s 5",
            "SADD one a",
            "SPOP one 1",
            "SREM x 1 2 3",
        ],
    );
}

#[test]
fn sorted_sets() {
    same_events(
        "KEA",
        &[
            "ZADD z 1 a 2 b 3 c 4 d 5 e",
            "ZADD z XX 9 a",
            "ZADD z NX 1 a",
            "ZINCRBY z 1 b",
            "ZREM z a nope",
            "ZREMRANGEBYSCORE z 0 2",
            "ZREMRANGEBYRANK z 0 0",
            "ZADD lex 0 a 0 b 0 c",
            "ZREMRANGEBYLEX lex [a [b",
            "ZREMRANGEBYLEX lex - +",
            "ZADD p 1 a 2 b 3 c 4 d",
            "ZPOPMIN p",
            "ZPOPMAX p 2",
            "BZPOPMIN p 0",
            "ZADD x 1 a 2 b",
            "ZADD y 2 b 3 c",
            "ZUNIONSTORE u 2 x y",
            "ZINTERSTORE i 2 x y",
            "ZDIFFSTORE d 2 x y",
            "ZDIFFSTORE d 2 x x",
            "ZRANGESTORE r x 0 -1",
            "ZRANGESTORE r x 5 6",
            "ZMPOP 1 x MIN COUNT 5",
        ],
    );
}

#[test]
fn streams() {
    same_events(
        "KEA",
        &[
            "XADD s 1-1 a 1",
            "XADD s 2-1 a 1",
            "XADD s 3-1 a 1",
            "XADD s MAXLEN 1 4-1 a 1",
            "XADD s MAXLEN ~ 1 5-1 a 1",
            "XADD s 1-1 a 1",
            "XADD nos NOMKSTREAM 1-1 a 1",
            "XTRIM s MAXLEN 1",
            "XTRIM s MAXLEN 1",
            "XDEL s 5-1",
            "XDEL s 5-1",
            "XSETID s 10-0",
            "EXPIRE s 100",
            "DEL s",
        ],
    );
}

#[test]
fn class_filters() {
    // Only some classes, keyspace or keyevent only.
    same_events(
        "Kt",
        &["XADD s 1-1 a 1", "SET k v", "LPUSH l a", "XDEL s 1-1"],
    );
    same_events("Elh", &["HSET h a 1", "LPUSH l a", "SADD s a", "DEL h l s"]);
    same_events(
        "Kgx",
        &["SET k v PX 100000", "DEL k", "SET k2 v", "EXPIRE k2 100"],
    );
}

#[test]
fn new_key_events() {
    // Class `n` is not part of `A`: asked for on its own and with others.
    let creating = &[
        "SET k v",
        "SET k w",
        "LPUSH l a",
        "LPUSH l b",
        "HSET h f v",
        "SADD s m",
        "ZADD z 1 m",
        "XADD x 1-1 f v",
        "RENAME k k2",
        "COPY k2 k3",
        "INCR n",
        "SET e v PX 100000",
        "SUNIONSTORE s2 s",
        "LMOVE l l2 LEFT LEFT",
        "MSET a 1 b 2 a 3",
        // Created anew over an existing key (dbDelete then dbAdd).
        "RENAME a k3",
        "COPY b k3 REPLACE",
        "INCRBYFLOAT f 1.5",
    ];
    same_events("KEn", creating);
    same_events("KEAn", creating);
    let mut p = Pair::new();
    for flags in ["KEn", "nA", "Elzn", "AKEmn", "n"] {
        p.same(&["CONFIG", "SET", "notify-keyspace-events", flags]);
        p.same(&["CONFIG", "GET", "notify-keyspace-events"]);
    }
}

/// Reads that miss are `keymiss` events (class `m`, not part of `A`), as
/// Redis's lookupKey fires them: not for writes, OBJECT or DEBUG, and
/// ahead of the events of the command that missed.
#[test]
fn key_misses_are_announced() {
    let misses = &[
        "GET nokey",
        "SET a 1",
        "MGET a b c",
        "EXISTS nokey a",
        "TYPE nokey",
        "TTL nokey",
        "OBJECT ENCODING nokey",
        "DUMP nokey",
        "HGETALL nokey",
        "LRANGE nokey 0 -1",
        "BLPOP nokey 0.01",
        "LMOVE nokey dst LEFT LEFT",
        "SINTER nokey a",
        "ZRANGESTORE d nokey 0 -1",
        "SUNIONSTORE d nokey",
        "SDIFFSTORE d2 a nokey",
        "SADD s 1",
        "SDIFFSTORE d2 s nokey",
        "XREAD COUNT 1 STREAMS nokey 0",
        "PFMERGE hl2 nohl",
        "BITOP OR b2 a nokey",
        "SORT nokey BY x GET y",
        "SORT nokey STORE st",
        "GETDEL nokey",
        "INCR n",
        "EVAL redis.call('get','m1');return(redis.call('set','m1',1)) 0",
        "GEOPOS nokey a",
        // Looked up before its arguments are read, as in Redis.
        "XAUTOCLAIM nokey g c 0 0 COUNT 0",
        "XAUTOCLAIM nokey g c 0 0",
    ];
    same_events("KEm", misses);
    same_events("KEAm", misses);
    same_events("KEA", misses);
}

/// A RESP3 client subscribed to its own misses gets the event ahead of
/// the reply, as in Redis.
#[test]
fn a_resp3_subscriber_gets_its_own_keymiss_before_the_reply() {
    let mut p = Pair::new();
    p.same(&["CONFIG", "SET", "notify-keyspace-events", "Em"]);
    let (mut a, mut b) = p.connect_again();
    for r in [&mut a, &mut b] {
        r.cmd_str(&["HELLO", "3"]);
        r.cmd_str(&["SUBSCRIBE", "__keyevent@0__:keymiss"]);
    }
    for r in [&mut a, &mut b] {
        r.send(b"*2\r\n$3\r\nGET\r\n$6\r\nnokey1\r\n");
    }
    let ours = (a.read_reply(), a.read_reply());
    let theirs = (b.read_reply(), b.read_reply());
    assert_eq!(ours, theirs);
    assert_eq!(ours.1, b"_\r\n");
}

#[test]
fn expired_keys_are_announced() {
    let mut p = Pair::new();
    let (mut sa, mut sb) = p.connect_again();
    for r in [&mut sa, &mut sb] {
        r.cmd_str(&["PSUBSCRIBE", "__keyevent@0__:expired"]);
    }
    p.same(&["CONFIG", "SET", "notify-keyspace-events", "Ex"]);
    p.same(&["XADD", "st", "1-1", "a", "b"]);
    p.same(&["PEXPIRE", "st", "20"]);
    p.same(&["HSET", "h", "a", "b"]);
    p.same(&["PEXPIRE", "h", "20"]);
    let mut gone = (false, false);
    assert!(wait_until(Duration::from_secs(5), || {
        let (a, b) = p.both(&["EXISTS", "st", "h"]);
        gone.0 |= a == b":0\r\n";
        gone.1 |= b == b":0\r\n";
        gone.0 && gone.1
    }));
    let mut ours = vec![
        String::from_utf8_lossy(&sa.read_reply()).into_owned(),
        String::from_utf8_lossy(&sa.read_reply()).into_owned(),
    ];
    let mut theirs = vec![
        String::from_utf8_lossy(&sb.read_reply()).into_owned(),
        String::from_utf8_lossy(&sb.read_reply()).into_owned(),
    ];
    // Which of the two expires first is up to each server's timing.
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs);
}

/// Waits until both servers report `n` blocked clients.
fn wait_blocked(p: &mut Pair, n: usize) {
    let want = format!("blocked_clients:{n}\r\n");
    assert!(wait_until(Duration::from_secs(5), || {
        let (a, b) = p.both(&["INFO", "clients"]);
        String::from_utf8_lossy(&a).contains(&want) && String::from_utf8_lossy(&b).contains(&want)
    }));
}

#[test]
fn blocked_clients_served_by_writes() {
    let mut p = Pair::new();
    let (mut sa, mut sb) = p.connect_again();
    for r in [&mut sa, &mut sb] {
        r.cmd_str(&["PSUBSCRIBE", "__keyspace@0__:*", "__keyevent@0__:*"]);
        r.read_reply();
    }
    p.same(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let blocking: &[&[&str]] = &[
        &["BLPOP", "l1", "0"],
        &["BRPOP", "l2", "0"],
        &["BLMOVE", "l3", "d3", "RIGHT", "LEFT", "0"],
        &["BLMPOP", "0", "1", "l4", "LEFT", "COUNT", "5"],
        &["BZPOPMIN", "z1", "0"],
        &["BZMPOP", "0", "1", "z2", "MAX", "COUNT", "1"],
        &["XREAD", "BLOCK", "0", "STREAMS", "x1", "$"],
    ];
    let mut conns = Vec::new();
    for args in blocking {
        let (mut a, mut b) = p.connect_again();
        let v: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        a.send(&crate::support::encode(&v));
        b.send(&crate::support::encode(&v));
        conns.push((a, b));
    }
    wait_blocked(&mut p, blocking.len());
    p.script(&[
        "RPUSH l1 a",
        "RPUSH l2 a b",
        "RPUSH l3 a",
        "RPUSH l4 a b",
        "ZADD z1 1 a",
        "ZADD z2 1 a 2 b",
        "XADD x1 1-1 f v",
    ]);
    for (a, b) in &mut conns {
        assert_eq!(a.read_reply(), b.read_reply());
    }
    p.same(&["SET", "__end__", "1"]);
    assert_eq!(
        collect_until(&mut sa, "__end__"),
        collect_until(&mut sb, "__end__")
    );
}
