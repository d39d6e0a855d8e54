//! Pub/sub: SUBSCRIBE family replies, delivery between clients, subscribed
//! mode rules in RESP2 and RESP3, PUBSUB introspection, cleanup on RESET and
//! disconnect, and cutting off slow subscribers.

use std::time::Duration;

use crate::support::{start, wait_until, Pair, Raw};

/// Sends `args` to both sides, reads `n` frames from each and asserts they
/// are byte-identical.
fn frames(p: &mut Pair, args: &[&str], n: usize) -> Vec<u8> {
    p.ours.send(&crate::support::encode(
        &args.iter().map(|s| s.as_bytes()).collect::<Vec<_>>(),
    ));
    p.theirs.send(&crate::support::encode(
        &args.iter().map(|s| s.as_bytes()).collect::<Vec<_>>(),
    ));
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..n {
        ours.extend(p.ours.read_reply());
        theirs.extend(p.theirs.read_reply());
    }
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs),
        "replies differ for {args:?}"
    );
    ours
}

/// Reads one pushed frame from each of two subscribers and compares them.
fn same_push(a: &mut Raw, b: &mut Raw) -> Vec<u8> {
    let x = a.read_reply();
    let y = b.read_reply();
    assert_eq!(String::from_utf8_lossy(&x), String::from_utf8_lossy(&y));
    x
}

fn subscribed_mode_script(p: &mut Pair) {
    frames(p, &["SUBSCRIBE", "a", "b"], 2);
    frames(p, &["SUBSCRIBE", "a"], 1);
    frames(p, &["PSUBSCRIBE", "p*", "q?"], 2);
    frames(p, &["SSUBSCRIBE", "s1", "s2"], 2);
    frames(p, &["PING"], 1);
    frames(p, &["PING", "hello"], 1);
    frames(p, &["UNSUBSCRIBE", "a", "nope"], 2);
    frames(p, &["PUNSUBSCRIBE", "q?"], 1);
    frames(p, &["SUNSUBSCRIBE", "s2"], 1);
    frames(p, &["UNSUBSCRIBE"], 1);
    frames(p, &["PUNSUBSCRIBE"], 1);
    frames(p, &["SUNSUBSCRIBE"], 1);
    // Nothing left: one confirmation with a null name.
    frames(p, &["UNSUBSCRIBE"], 1);
    frames(p, &["PUNSUBSCRIBE"], 1);
    frames(p, &["SUNSUBSCRIBE"], 1);
    p.same(&["PING"]);
    p.same(&["SET", "k", "v"]);
}

#[test]
fn subscribe_family_replies_resp2() {
    let mut p = Pair::new();
    subscribed_mode_script(&mut p);
    p.script(&[
        "SUBSCRIBE x",
        "GET k",
        "CLIENT LIST",
        "PUBSUB NUMSUB x",
        "SUBSCRIBE",
        "PUBLISH x y",
        "MULTI",
    ]);
    // QUIT still works and closes.
    p.same(&["QUIT"]);
    assert!(p.ours.is_closed());
}

#[test]
fn subscribe_family_replies_resp3() {
    let mut p = Pair::new();
    p.both(&["HELLO", "3"]);
    subscribed_mode_script(&mut p);
    // RESP3 subscribers may run any command.
    p.same(&["SUBSCRIBE", "x"]);
    p.same(&["GET", "k"]);
    p.same(&["PING"]);
    // A publish to itself: the message comes before the reply.
    frames(&mut p, &["PUBLISH", "x", "hi"], 2);
    // A script's publish reaches its subscribed caller ahead of the reply.
    frames(
        &mut p,
        &["EVAL", "return redis.call('publish', 'x', 'from-lua')", "0"],
        2,
    );
    frames(&mut p, &["MULTI"], 1);
    frames(&mut p, &["PUBLISH", "x", "queued"], 1);
    frames(&mut p, &["EXEC"], 2);
    p.same(&["PUBSUB", "NUMSUB", "x", "y"]);
    p.same(&["PUBSUB", "SHARDNUMSUB", "x"]);
    p.same(&["RESET"]);
    p.same(&["PUBSUB", "NUMSUB", "x"]);
}

#[test]
fn subscribe_inside_multi_and_reset() {
    let mut p = Pair::new();
    p.script(&["MULTI", "SUBSCRIBE z", "EXEC", "GET k", "PUBSUB NUMSUB z"]);
    // RESET leaves every channel silently and ends subscribed mode.
    p.script(&["RESET", "GET k", "PUBSUB NUMSUB z", "PUBSUB NUMPAT"]);
}

#[test]
fn pubsub_introspection() {
    let mut p = Pair::new();
    p.script(&[
        "PUBSUB HELP",
        "PUBSUB CHANNELS",
        "PUBSUB CHANNELS a b",
        "PUBSUB SHARDCHANNELS a b",
        "PUBSUB NUMPAT x",
        "PUBSUB NUMSUB",
        "PUBSUB SHARDNUMSUB",
        "PUBSUB NOPE",
        "PUBSUB",
        "PUBLISH",
        "PUBLISH a",
        "SPUBLISH a",
        "SUBSCRIBE",
        "PSUBSCRIBE",
        "SSUBSCRIBE",
        "PUBLISH nobody x",
        "SPUBLISH nobody x",
    ]);
    // SUBSCRIBE is refused in scripts; PUBLISH and PUBSUB are allowed.
    p.same(&["EVAL", "return redis.call('subscribe', 'x')", "0"]);
    p.same(&["EVAL", "return redis.call('publish', 'x', 'y')", "0"]);
    p.same(&["EVAL", "return redis.call('pubsub', 'numsub', 'x')", "0"]);
    let (mut a, mut b) = p.connect_again();
    for r in [&mut a, &mut b] {
        r.cmd_str(&["SUBSCRIBE", "news.1"]);
        r.cmd_str(&["PSUBSCRIBE", "news.*"]);
        r.cmd_str(&["SSUBSCRIBE", "shard"]);
    }
    p.script(&[
        "PUBSUB CHANNELS",
        "PUBSUB CHANNELS news.?",
        "PUBSUB CHANNELS zzz",
        "PUBSUB SHARDCHANNELS",
        "PUBSUB SHARDCHANNELS sh*",
        "PUBSUB NUMSUB news.1 news.2 news.1",
        "PUBSUB SHARDNUMSUB shard x",
        "PUBSUB NUMPAT",
    ]);
    p.both(&["HELLO", "3"]);
    p.script(&["PUBSUB NUMSUB news.1 x", "PUBSUB SHARDNUMSUB shard"]);
}

#[test]
fn messages_reach_other_clients_in_order() {
    let mut p = Pair::new();
    let (mut sa, mut sb) = p.connect_again();
    let (mut s3a, mut s3b) = p.connect_again();
    for r in [&mut sa, &mut sb] {
        r.cmd_str(&["SUBSCRIBE", "chan"]);
        r.cmd_str(&["PSUBSCRIBE", "ch*"]);
        r.cmd_str(&["SSUBSCRIBE", "sh"]);
    }
    for r in [&mut s3a, &mut s3b] {
        r.cmd_str(&["HELLO", "3"]);
        r.cmd_str(&["SUBSCRIBE", "chan"]);
    }
    // Channel subscribers first, then pattern matches.
    p.same(&["PUBLISH", "chan", "m0"]);
    same_push(&mut sa, &mut sb);
    same_push(&mut sa, &mut sb);
    same_push(&mut s3a, &mut s3b);
    p.same(&["PUBLISH", "chx", "only-pattern"]);
    same_push(&mut sa, &mut sb);
    p.same(&["SPUBLISH", "sh", "sharded"]);
    same_push(&mut sa, &mut sb);
    // Many messages arrive in publish order.
    for i in 0..100 {
        p.same(&["PUBLISH", "chan", &format!("msg-{i}")]);
    }
    for _ in 0..100 {
        same_push(&mut s3a, &mut s3b);
        same_push(&mut sa, &mut sb);
        same_push(&mut sa, &mut sb);
    }
    // Binary payloads pass untouched.
    p.same_bytes(&[b"PUBLISH", b"chan", b"\x00\r\n\xff"]);
    same_push(&mut s3a, &mut s3b);
}

#[test]
fn client_list_shows_subscriptions() {
    let s = start();
    let mut a = s.raw();
    let mut b = s.raw();
    a.cmd_str(&["SUBSCRIBE", "c1"]);
    a.cmd_str(&["SUBSCRIBE", "c2"]);
    a.cmd_str(&["PSUBSCRIBE", "p*"]);
    a.cmd_str(&["SSUBSCRIBE", "s"]);
    let list = String::from_utf8(b.cmd_str(&["CLIENT", "LIST"])).expect("utf8");
    let line = list
        .lines()
        .find(|l| l.contains("cmd=ssubscribe"))
        .expect("subscriber line");
    assert!(line.contains("flags=P "), "{line}");
    assert!(line.contains("sub=2 psub=1 ssub=1 "), "{line}");
    let killed = b.cmd_str(&["CLIENT", "KILL", "TYPE", "pubsub"]);
    assert_eq!(killed, b":1\r\n");
    assert!(wait_until(Duration::from_secs(5), || {
        b.cmd_str(&["PUBSUB", "NUMSUB", "c1"]) == b"*2\r\n$2\r\nc1\r\n:0\r\n"
    }));
    let info = String::from_utf8(b.cmd_str(&["INFO", "stats"])).expect("utf8");
    assert!(info.contains("pubsub_channels:0\r\n"), "{info}");
}

#[test]
fn disconnect_unsubscribes() {
    let s = start();
    let mut pubr = s.raw();
    {
        let mut sub = s.raw();
        sub.cmd_str(&["SUBSCRIBE", "gone"]);
        sub.cmd_str(&["PSUBSCRIBE", "g*"]);
        assert_eq!(pubr.cmd_str(&["PUBLISH", "gone", "x"]), b":2\r\n");
        let info = String::from_utf8(pubr.cmd_str(&["INFO", "stats"])).expect("utf8");
        assert!(info.contains("pubsub_channels:1\r\n"), "{info}");
        assert!(info.contains("pubsub_patterns:1\r\n"), "{info}");
    }
    assert!(wait_until(Duration::from_secs(5), || {
        pubr.cmd_str(&["PUBLISH", "gone", "x"]) == b":0\r\n"
    }));
    assert_eq!(pubr.cmd_str(&["PUBSUB", "NUMPAT"]), b":0\r\n");
}

#[test]
fn slow_subscriber_is_disconnected() {
    let s = start();
    let mut pubr = s.raw();
    assert_eq!(
        pubr.cmd_str(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 1mb 0 0"
        ]),
        b"+OK\r\n"
    );
    let mut sub = s.raw();
    sub.cmd_str(&["SUBSCRIBE", "flood"]);
    // The subscriber never reads: kernel buffers fill, then the queue
    // grows until the hard limit closes it. At most 64 MB is published.
    let payload = "x".repeat(256 * 1024);
    let mut closed = false;
    for _ in 0..256 {
        if pubr.cmd_str(&["PUBLISH", "flood", &payload]) == b":0\r\n" {
            closed = true;
            break;
        }
    }
    assert!(closed, "the slow subscriber was never cut off");
    assert_eq!(
        pubr.cmd_str(&["PUBSUB", "NUMSUB", "flood"]),
        b"*2\r\n$5\r\nflood\r\n:0\r\n"
    );
    // The server still serves others.
    assert_eq!(pubr.cmd_str(&["PING"]), b"+PONG\r\n");
}

#[test]
fn keyspace_notifications() {
    let mut p = Pair::new();
    let (mut sa, mut sb) = p.connect_again();
    for r in [&mut sa, &mut sb] {
        r.cmd_str(&["PSUBSCRIBE", "__key*__:*"]);
    }
    p.same(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let cmds: &[(&[&str], usize)] = &[
        (&["SET", "k", "v"], 2),
        (&["SET", "k2", "v", "EX", "100"], 4),
        (&["EXPIRE", "k", "100"], 2),
        (&["DEL", "k", "k2", "nokey"], 4),
        (&["LPUSH", "l", "a", "b"], 2),
        (&["RPUSH", "l", "c"], 2),
        (&["LPOP", "l"], 2),
        (&["RPOP", "l", "5"], 4),
        (&["HSET", "h", "f", "v"], 2),
        (&["SADD", "s", "m"], 2),
        (&["SADD", "s", "m"], 0),
        (&["INCR", "n"], 2),
        (&["ZADD", "zs", "1", "a"], 2),
        (&["ZADD", "zs", "1", "a"], 0),
        (&["ZADD", "zs", "INCR", "2", "a"], 2),
        (&["ZADD", "zs", "1", "b"], 2),
        (&["ZREM", "zs", "a", "nope"], 2),
        (&["ZREM", "zs", "b"], 4),
        (&["HSET", "h2", "a", "1", "b", "2"], 2),
        (&["HDEL", "h2", "a", "b"], 4),
        (&["HDEL", "h2", "a"], 0),
        (&["SADD", "s2", "x", "y"], 2),
        (&["SREM", "s2", "x"], 2),
        (&["EXPIRE", "s2", "100"], 2),
        (&["PERSIST", "s2"], 2),
        (&["PERSIST", "s2"], 0),
        (&["APPEND", "ap", "x"], 2),
        (&["APPEND", "ap", "y"], 2),
        (&["SETRANGE", "ap", "5", "z"], 2),
        (&["RENAME", "ap", "ap2"], 4),
        (&["RENAMENX", "ap2", "ap3"], 4),
        (&["RPUSH", "li", "a", "b", "a", "c"], 2),
        (&["LSET", "li", "0", "z"], 2),
        (&["LINSERT", "li", "BEFORE", "z", "y"], 2),
        (&["LINSERT", "li", "BEFORE", "nope", "y"], 0),
        (&["LREM", "li", "0", "a"], 2),
        (&["LREM", "li", "0", "nope"], 0),
        (&["SORT", "li", "ALPHA", "STORE", "sorted"], 2),
        (&["LTRIM", "li", "0", "0"], 2),
        (&["LTRIM", "li", "5", "1"], 4),
        (&["SORT", "nolist", "STORE", "sorted"], 2),
        (&["SORT", "nolist", "STORE", "sorted"], 0),
        (&["ZADD", "zp", "1", "a", "2", "b", "3", "c", "4", "d"], 2),
        (&["ZPOPMIN", "zp"], 2),
        (&["ZPOPMAX", "zp", "0"], 0),
        (&["BZPOPMAX", "zp", "0"], 2),
        (&["ZMPOP", "1", "zp", "MIN"], 2),
        (&["BZMPOP", "0", "1", "zp", "MAX", "COUNT", "5"], 4),
        (&["EXPIRE", "s", "-1"], 2),
        (&["SET", "gone", "v", "PX", "1"], 4),
    ];
    for (cmd, n) in cmds {
        p.same(cmd);
        for _ in 0..*n {
            same_push(&mut sa, &mut sb);
        }
    }
    // The expired key is reaped (here by a lookup) and announced.
    let mut gone = (false, false);
    assert!(wait_until(Duration::from_secs(5), || {
        let (a, b) = p.both(&["EXISTS", "gone"]);
        gone.0 |= a == b":0\r\n";
        gone.1 |= b == b":0\r\n";
        gone.0 && gone.1
    }));
    same_push(&mut sa, &mut sb);
    same_push(&mut sa, &mut sb);
    // Only keyevent, only the string class.
    p.same(&["CONFIG", "SET", "notify-keyspace-events", "E$"]);
    p.same(&["DEL", "h"]);
    p.same(&["SET", "k", "v"]);
    let x = same_push(&mut sa, &mut sb);
    assert!(String::from_utf8_lossy(&x).contains("__keyevent@0__:set"));
}

#[test]
fn subscriber_over_soft_limit_too_long_is_disconnected() {
    let s = start();
    let mut pubr = s.raw();
    assert_eq!(
        pubr.cmd_str(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 0 256kb 1"
        ]),
        b"+OK\r\n"
    );
    let mut sub = s.raw();
    sub.cmd_str(&["SUBSCRIBE", "trickle"]);
    // No hard limit: only staying over the soft limit for a second closes
    // it. At most 1000 publishes of 64 KB happen.
    let payload = "y".repeat(64 * 1024);
    let started = std::time::Instant::now();
    assert!(wait_until(Duration::from_secs(5), || {
        pubr.cmd_str(&["PUBLISH", "trickle", &payload]) == b":0\r\n"
    }));
    assert!(started.elapsed() >= Duration::from_secs(1));
}

/// Under CLIENT REPLY OFF or SKIP a RESP3 client still gets push data
/// (subscribe confirmations, messages), byte for byte as from Redis; only
/// replies are dropped.
#[test]
fn resp3_pushes_survive_client_reply_off_and_skip() {
    let mut p = crate::support::Pair::new();
    let transcript = |r: &mut Raw| -> Vec<u8> {
        r.cmd_str(&["HELLO", "3"]);
        let mut bytes = Vec::new();
        for args in [
            &["CLIENT", "REPLY", "OFF"][..],
            &["SUBSCRIBE", "c1"],
            &["PING"],
            &["UNSUBSCRIBE", "c1"],
            &["CLIENT", "REPLY", "ON"],
            &["CLIENT", "REPLY", "SKIP"],
            &["SUBSCRIBE", "c2"],
            &["PUBLISH", "c2", "m"],
            &["PING"],
        ] {
            let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
            bytes.extend(crate::support::encode(&a));
        }
        r.send(&bytes);
        // Two confirmations, +OK, a confirmation, the message, :1, +PONG.
        (0..7).flat_map(|_| r.read_reply()).collect()
    };
    let ours = transcript(&mut p.ours);
    let theirs = transcript(&mut p.theirs);
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs)
    );
}

#[test]
fn subscription_confirmations_ignore_client_reply_off_and_skip() {
    let p = Pair::new();
    let (mut a, mut b) = p.connect_again();
    for c in [&mut a, &mut b] {
        c.send(b"CLIENT REPLY OFF\r\nPSUBSCRIBE *\r\nPUNSUBSCRIBE *\r\nSUBSCRIBE a\r\nPING\r\n");
    }
    for _ in 0..3 {
        assert_eq!(a.read_reply(), b.read_reply());
    }
    let (mut a, mut b) = p.connect_again();
    for c in [&mut a, &mut b] {
        c.send(b"CLIENT REPLY SKIP\r\nSUBSCRIBE x\r\n");
    }
    let (ra, rb) = (a.read_reply(), b.read_reply());
    assert_eq!(ra, rb);
    assert_eq!(ra, b"*3\r\n$9\r\nsubscribe\r\n$1\r\nx\r\n:1\r\n");
}

#[test]
fn client_unblock_error_counts_as_a_failed_call_and_resetstat_clears_latency() {
    let mut p = Pair::new();
    let (mut a, mut b) = p.connect_again();
    p.same(&["CONFIG", "RESETSTAT"]);
    let ids: Vec<String> = [&mut a, &mut b]
        .into_iter()
        .map(|c| {
            let r = c.cmd_str(&["CLIENT", "ID"]);
            String::from_utf8_lossy(&r[1..r.len() - 2]).into_owned()
        })
        .collect();
    for c in [&mut a, &mut b] {
        c.send(&crate::support::encode(&[b"BLPOP", b"list1", b"0"]));
    }
    let (ours, theirs) = p.ports();
    for (port, id) in [(ours, &ids[0]), (theirs, &ids[1])] {
        let mut admin = Raw::connect(port);
        assert!(wait_until(Duration::from_secs(5), || {
            String::from_utf8_lossy(&admin.cmd_str(&["INFO", "clients"]))
                .contains("blocked_clients:1")
        }));
        assert_eq!(
            admin.cmd_str(&["CLIENT", "UNBLOCK", id, "ERROR"]),
            b":1\r\n"
        );
    }
    assert_eq!(a.read_reply(), b.read_reply());
    let stats = |c: &mut Raw, section: &str, prefix: &str| -> Vec<String> {
        String::from_utf8_lossy(&c.cmd_str(&["INFO", section]))
            .lines()
            .filter(|l| l.starts_with(prefix))
            .map(|l| {
                l.split("usec=").next().unwrap_or(l).to_string()
                    + &l.split("rejected").nth(1).unwrap_or("").to_string()
            })
            .collect()
    };
    for (section, prefix) in [
        ("errorstats", "errorstat_"),
        ("commandstats", "cmdstat_blpop"),
        ("stats", "total_error_replies"),
    ] {
        assert_eq!(
            stats(&mut a, section, prefix),
            stats(&mut b, section, prefix),
            "{section}"
        );
    }
    assert_eq!(
        stats(&mut a, "errorstats", "errorstat_"),
        vec!["errorstat_UNBLOCKED:count=1".to_string()]
    );
    // CONFIG RESETSTAT drops the per-command latency histograms.
    p.same(&["SET", "a", "b"]);
    p.same(&["CONFIG", "RESETSTAT"]);
    for c in [&mut a, &mut b] {
        let info = String::from_utf8_lossy(&c.cmd_str(&["INFO", "latencystats"])).into_owned();
        assert!(!info.contains("latency_percentiles_usec_set"), "{info}");
    }
}
