//! Stream consumer groups and XINFO, against redis-server: XGROUP,
//! XREADGROUP (with BLOCK), XACK, XPENDING, XCLAIM, XAUTOCLAIM and XINFO,
//! their errors, random sequences, keyspace events, a worker pool on a
//! real client library, and groups moving between the two servers' RDB
//! files.
//!
//! Delivery times and idle times come from each server's clock, so replies
//! are compared with Unix-millisecond values and idle times masked.

use proptest::prelude::*;

use crate::stream::{send_both, wait_blocked};
use crate::support::{same_random_sequences_by, spawn_redis_with, start, Pair, Raw};

/// A reply as text with what depends on the clock masked: integers that
/// are Unix milliseconds, and the idle time after an `idle` field or
/// inside an XPENDING entry (the integer right before the delivery
/// count).
pub(crate) fn masked(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply);
    let lines: Vec<&str> = text.split("\r\n").collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let int = line.strip_prefix(':').and_then(|n| n.parse::<i64>().ok());
        let after_idle = i > 0 && lines[i - 1] == "idle";
        let pending_idle = int.is_some()
            && lines.get(i + 1).is_some_and(|l| l.starts_with(':'))
            && i > 0
            && !lines[i - 1].starts_with(':')
            && i + 2 < lines.len()
            && !lines[i + 2].starts_with(':');
        match int {
            Some(n) if n >= 1_000_000_000_000 => out.push(":T".to_string()),
            Some(_) if after_idle || pending_idle => out.push(":IDLE".to_string()),
            _ => out.push((*line).to_string()),
        }
    }
    out.join("\r\n")
}

/// Sends `args` to both servers and asserts the masked replies are equal.
fn same_masked(p: &mut Pair, args: &[&str]) -> String {
    let (a, b) = p.both(args);
    let (a, b) = (masked(&a), masked(&b));
    assert_eq!(a, b, "reply differs for {args:?}");
    a
}

/// Runs each line (split on spaces) through [`same_masked`].
fn script_masked(p: &mut Pair, lines: &[&str]) {
    for l in lines {
        let args: Vec<&str> = l.split(' ').collect();
        same_masked(p, &args);
    }
}

fn commands_script(p: &mut Pair) {
    script_masked(
        p,
        &[
            "XADD s 1-1 a 1",
            "XADD s 2-1 b 2",
            "XADD s 3-1 a 3",
            "XADD s 4-1 a 4 b 5",
            "SET str x",
            // XGROUP and its errors.
            "XGROUP CREATE s g 0",
            "XGROUP CREATE s g 0",
            "XGROUP CREATE s g2 $",
            "XGROUP CREATE s g3 2-1 ENTRIESREAD 2",
            "XGROUP CREATE s g4 0 ENTRIESREAD -2",
            "XGROUP CREATE s g4 0 ENTRIESREAD x",
            "XGROUP CREATE s g4 0 ENTRIESREAD",
            "XGROUP CREATE s g4 0 FOO",
            "XGROUP CREATE s g4 bad",
            "XGROUP CREATE s g4 -",
            "XGROUP CREATE s g4 0 MKSTREAM MKSTREAM MKSTREAM MKSTREAM",
            "XGROUP CREATE nokey g 0",
            "XGROUP CREATE str g 0",
            "XGROUP CREATE str g 0 MKSTREAM",
            "XGROUP CREATE mk g $ MKSTREAM",
            "XGROUP CREATE mk g $ MKSTREAM",
            "TYPE mk",
            "XLEN mk",
            "XGROUP SETID s nog 0",
            "XGROUP SETID nokey g 0",
            "XGROUP SETID s g2 +",
            "XGROUP SETID s g2 0 ENTRIESREAD 3",
            "XGROUP SETID s g2 0 MKSTREAM",
            "XGROUP SETID s g2 0 ENTRIESREAD",
            "XGROUP SETID s g2 $ ENTRIESREAD 4 FOO",
            "XGROUP SETID s g2 (1",
            "XGROUP CREATECONSUMER s g c0",
            "XGROUP CREATECONSUMER s g c0",
            "XGROUP CREATECONSUMER s nog c0",
            "XGROUP CREATECONSUMER s g c0 extra",
            "XGROUP DELCONSUMER s g nobody",
            "XGROUP DELCONSUMER s nog c0",
            "XGROUP DESTROY s nog",
            "XGROUP DESTROY nokey g",
            "XGROUP FOO s g",
            "XGROUP HELP",
            "XGROUP HELP extra",
            "XGROUP",
            "XINFO GROUPS s",
            // XREADGROUP.
            "XREADGROUP GROUP g c1 COUNT 2 STREAMS s >",
            "XREADGROUP GROUP g c2 STREAMS s >",
            "XREADGROUP GROUP g c2 STREAMS s >",
            "XREADGROUP GROUP g c1 STREAMS s 0",
            "XREADGROUP GROUP g c1 COUNT 1 STREAMS s 1-1",
            "XREADGROUP GROUP g c9 STREAMS s 0",
            "XREADGROUP GROUP g3 c1 NOACK STREAMS s mk > >",
            "XREADGROUP GROUP g c1 STREAMS s $",
            "XREADGROUP GROUP nog c1 STREAMS s >",
            "XREADGROUP GROUP g c1 STREAMS nokey >",
            "XREADGROUP GROUP g c1 STREAMS str >",
            "XREADGROUP GROUP g c1 STREAMS s bad",
            "XREADGROUP GROUP g c1 STREAMS s",
            "XREADGROUP GROUP g c1 STREAMS s s >",
            "XREADGROUP STREAMS s >",
            "XREADGROUP GROUP g c1 COUNT x STREAMS s >",
            "XREADGROUP GROUP g c1 BLOCK x STREAMS s >",
            "XREADGROUP GROUP g c1 BLOCK -1 STREAMS s >",
            "XREADGROUP GROUP g c1 FOO STREAMS s >",
            "XREADGROUP GROUP g c1 BLOCK 10 STREAMS s >",
            "XREADGROUP GROUP g c1 COUNT 0 STREAMS s 0",
            "XREADGROUP GROUP g c1 COUNT -5 STREAMS s 0",
            "XREAD GROUP g c1 STREAMS s >",
            "XREAD NOACK STREAMS s 0",
            "XREAD STREAMS s >",
            // XPENDING.
            "XPENDING s g",
            "XPENDING s g3",
            "XPENDING s g - + 10",
            "XPENDING s g - + 10 c1",
            "XPENDING s g - + 10 nobody",
            "XPENDING s g - + 2",
            "XPENDING s g - + 0",
            "XPENDING s g - + -1",
            "XPENDING s g (1-1 (4-1 10",
            "XPENDING s g 3 2 10",
            "XPENDING s g IDLE 0 - + 10 c2",
            "XPENDING s g IDLE 100000000 - + 10",
            "XPENDING s g IDLE x - + 10",
            "XPENDING s g IDLE 1 - + 10 c1 extra",
            "XPENDING s g IDLE 0 - + ",
            "XPENDING s g - + 10 c1 extra more",
            "XPENDING s g - +",
            "XPENDING s g - + x",
            "XPENDING s g x + 10",
            "XPENDING s g (18446744073709551615-18446744073709551615 + 10",
            "XPENDING s g - (0-0 10",
            "XPENDING s nog",
            "XPENDING nokey g",
            "XPENDING str g",
            // XACK.
            "XACK s g 1-1 9-9",
            "XACK s g 1-1",
            "XACK s g bad",
            "XACK s nog bad",
            "XACK nokey g bad",
            "XACK str g 1-1",
            // Deleted entries in a consumer's history.
            "XDEL s 2-1",
            "XREADGROUP GROUP g c1 STREAMS s 0",
            "XINFO GROUPS s",
            "XINFO CONSUMERS s g",
            "XINFO CONSUMERS s nog",
            "XINFO CONSUMERS nokey g",
            "XINFO CONSUMERS str g",
            // XCLAIM.
            "XCLAIM s g c3 0 3-1",
            "XCLAIM s g c3 0 3-1 JUSTID",
            "XCLAIM s g c3 100000000 4-1",
            "XCLAIM s g c4 0 4-1 IDLE 500000000 RETRYCOUNT 7 JUSTID",
            "XPENDING s g IDLE 400000000 - + 10",
            "XCLAIM s g c5 400000000 4-1",
            "XCLAIM s g c5 0 1-1 FORCE",
            "XCLAIM s g c5 0 9-9 FORCE",
            "XCLAIM s g c5 0 2-1",
            "XCLAIM s g c5 0 3-1 TIME 1000 LASTID 5-0",
            "XINFO GROUPS s",
            "XCLAIM s g c5 0 3-1 FOO",
            "XCLAIM s g c5 0 3-1 IDLE x",
            "XCLAIM s g c5 0 3-1 TIME x",
            "XCLAIM s g c5 0 3-1 RETRYCOUNT x",
            "XCLAIM s g c5 0 3-1 LASTID x",
            "XCLAIM s g c5 0 3-1 IDLE",
            "XCLAIM s g c5 x 3-1",
            "XCLAIM s g c5 0 - 3-1",
            "XCLAIM s g c5 0 3-1 JUSTID 4-1",
            "XCLAIM s nog c5 0 3-1",
            "XCLAIM nokey g c5 0 3-1",
            "XCLAIM str g c5 0 3-1",
            "XPENDING s g - + 10",
            // XAUTOCLAIM.
            "XADD s 5-1 x 1",
            "XADD s 6-1 x 2",
            "XREADGROUP GROUP g c6 STREAMS s >",
            "XDEL s 5-1",
            "XAUTOCLAIM s g c7 0 0 COUNT 1",
            "XAUTOCLAIM s g c7 0 0 COUNT 2 JUSTID",
            "XAUTOCLAIM s g c7 0 (3-1",
            "XAUTOCLAIM s g c7 0 0",
            "XAUTOCLAIM s g c7 100000000 0",
            "XAUTOCLAIM s g c7 0 0 COUNT 0",
            "XAUTOCLAIM s g c7 0 0 COUNT x",
            "XAUTOCLAIM s g c7 0 0 COUNT 576460752303423488",
            "XAUTOCLAIM s g c7 0 0 COUNT 576460752303423487",
            "XAUTOCLAIM s g c7 0 0 FOO",
            "XAUTOCLAIM s g c7 x 0",
            "XAUTOCLAIM s g c7 0 x",
            "XAUTOCLAIM s g c7 0 (18446744073709551615-18446744073709551615",
            "XAUTOCLAIM s nog c7 0 0",
            "XAUTOCLAIM nokey g c7 0 0",
            "XAUTOCLAIM str g c7 0 0",
            "XPENDING s g",
            // XINFO.
            "XINFO STREAM s",
            "XINFO STREAM s FULL",
            "XINFO STREAM s FULL COUNT 1",
            "XINFO STREAM s FULL COUNT 0",
            "XINFO STREAM s FULL COUNT -1",
            "XINFO STREAM s FULL COUNT x",
            "XINFO STREAM s FULL COUNT",
            "XINFO STREAM s FOO",
            "XINFO STREAM s FULL FOO 1",
            "XINFO STREAM mk",
            "XINFO STREAM mk FULL",
            "XINFO STREAM nokey",
            "XINFO STREAM str",
            "XINFO GROUPS mk",
            "XINFO GROUPS str",
            "XINFO FOO s",
            "XINFO HELP",
            "XINFO HELP extra",
            "XINFO",
            // Lag and read counters across trims, deletions and XSETID.
            "XGROUP DELCONSUMER s g c1",
            "XGROUP DELCONSUMER s g c5",
            "XINFO GROUPS s",
            "XTRIM s MAXLEN 1",
            "XINFO GROUPS s",
            "XSETID s 10-0 ENTRIESADDED 20 MAXDELETEDID 9-0",
            "XINFO GROUPS s",
            "XADD s 11-0 f v",
            "XINFO GROUPS s",
            "XGROUP DESTROY s g",
            "XGROUP DESTROY s g",
            "XINFO STREAM s",
            // Group commands in MULTI and in scripts.
            "MULTI",
            "XGROUP CREATE s m 0",
            "XREADGROUP GROUP m c BLOCK 0 STREAMS s >",
            "XREADGROUP GROUP m c BLOCK 0 STREAMS s >",
            "XACK s m 11-0",
            "EXEC",
            "EVAL return(redis.call('XREADGROUP','GROUP','m','c','STREAMS','s','0')) 0",
            "EVAL return(redis.pcall('XREADGROUP','GROUP','m','c','BLOCK','0','STREAMS','s','>')) 0",
            "EVAL_RO return(redis.pcall('XREADGROUP','GROUP','m','c','STREAMS','s','>')) 0",
            "EVAL_RO return(redis.call('XPENDING','s','m')) 0",
            "EVAL return(redis.call('XAUTOCLAIM','s','m','c2',0,0)) 0",
            // Group state is not the key's data: WATCH ignores it, as in
            // Redis, while creating the stream counts.
            "XADD s 12-0 f v",
            "WATCH s",
            "XREADGROUP GROUP m w STREAMS s >",
            "XACK s m 12-0",
            "XCLAIM s m w2 0 11-0",
            "XGROUP SETID s m 0",
            "XGROUP CREATECONSUMER s m w3",
            "XGROUP DELCONSUMER s m w3",
            "XGROUP CREATE s m2 $",
            "XGROUP DESTROY s m2",
            "MULTI",
            "PING",
            "EXEC",
            "WATCH nos",
            "XGROUP CREATE nos g $ MKSTREAM",
            "MULTI",
            "PING",
            "EXEC",
        ],
    );
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

/// The radix tree's node count (XINFO STREAM's radix-tree-nodes) follows
/// Redis's for nodes added, trimmed and emptied by XDEL.
#[test]
fn radix_tree_counts_follow_redis() {
    let mut p = Pair::new();
    p.same(&["CONFIG", "SET", "stream-node-max-entries", "3"]);
    for i in 0..200u64 {
        // IDs spread over bytes of both halves of the 128-bit key.
        let id = format!("{}-{}", (i * 7919) % 100_000 + i * 100_000, i % 5);
        p.same(&["XADD", "s", &id, "f", "v"]);
        if i % 17 == 0 {
            p.same(&["XINFO", "STREAM", "s"]);
        }
    }
    let ids = p.same(&["XRANGE", "s", "-", "+"]);
    let ids: Vec<String> = String::from_utf8_lossy(&ids)
        .split("\r\n")
        .filter(|l| l.contains('-') && !l.starts_with('$'))
        .map(str::to_string)
        .collect();
    for (n, id) in ids.iter().enumerate() {
        if n % 3 != 1 {
            p.same(&["XDEL", "s", id]);
        }
        if n % 11 == 0 {
            p.same(&["XINFO", "STREAM", "s"]);
        }
    }
    p.same(&["XTRIM", "s", "MAXLEN", "~", "20"]);
    p.same(&["XINFO", "STREAM", "s"]);
    p.same(&["XTRIM", "s", "MAXLEN", "0"]);
    p.same(&["XINFO", "STREAM", "s"]);
}

/// A random command over two streams and two groups.
fn group_command() -> impl Strategy<Value = Vec<String>> {
    let key = prop::sample::select(vec!["s", "t"]);
    let group = prop::sample::select(vec!["g", "h"]);
    let consumer = prop::sample::select(vec!["c1", "c2", "c3"]);
    let id = (0u64..12, 0u64..3).prop_map(|(ms, seq)| format!("{ms}-{seq}"));
    (key, group, consumer, id.clone(), id, 0usize..17, 0usize..4).prop_map(
        |(k, g, c, id, id2, op, n)| {
            let v: Vec<&str> = match op {
                0 | 1 => vec!["XADD", k, &id, "f", "v"],
                2 => vec![
                    "XGROUP",
                    "CREATE",
                    k,
                    g,
                    if n % 2 == 0 { "0" } else { "$" },
                    "MKSTREAM",
                ],
                3 => vec![
                    "XREADGROUP",
                    "GROUP",
                    g,
                    c,
                    "COUNT",
                    ["0", "1", "2", "5"][n],
                    "STREAMS",
                    k,
                    ">",
                ],
                4 => vec!["XREADGROUP", "GROUP", g, c, "STREAMS", k, ["0", &id][n % 2]],
                5 => vec!["XREADGROUP", "GROUP", g, c, "NOACK", "STREAMS", k, ">"],
                6 => vec!["XACK", k, g, &id, &id2],
                7 => vec!["XPENDING", k, g],
                8 => vec!["XPENDING", k, g, "-", "+", "10", c],
                9 => vec![
                    "XCLAIM",
                    k,
                    g,
                    c,
                    "0",
                    &id,
                    &id2,
                    ["JUSTID", "FORCE", "RETRYCOUNT", "LASTID"][n],
                    "5-0",
                ],
                10 => vec![
                    "XAUTOCLAIM",
                    k,
                    g,
                    c,
                    "0",
                    &id,
                    "COUNT",
                    ["1", "2", "3", "9"][n],
                ],
                11 => vec!["XDEL", k, &id],
                12 => vec!["XTRIM", k, ["MAXLEN", "MINID"][n % 2], ["2", &id][n % 2]],
                13 => vec!["XINFO", "GROUPS", k],
                14 => vec!["XINFO", "STREAM", k, "FULL"],
                15 => vec![
                    "XGROUP",
                    ["SETID", "DESTROY", "DELCONSUMER", "CREATECONSUMER"][n],
                    k,
                    g,
                    if n < 2 { &id } else { c },
                ],
                _ => vec!["XINFO", "CONSUMERS", k, g],
            };
            let mut v: Vec<String> = v.into_iter().map(str::to_string).collect();
            // SETID and DESTROY take one argument fewer or other kinds.
            if v[0] == "XGROUP" && v[1] == "DESTROY" {
                v.truncate(4);
            }
            v
        },
    )
}

#[test]
fn random_group_sequences_match_redis() {
    same_random_sequences_by(
        Pair::new(),
        60,
        prop::collection::vec(group_command(), 1..40),
        |_, reply| masked(reply),
    );
}

/// Creating, moving and deleting groups and consumers announce the same
/// keyspace events as Redis.
#[test]
fn group_keyspace_events_match_redis() {
    let mut p = Pair::new();
    p.both(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let events = p.same_keyevents(&[
        &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"],
        &["XADD", "s", "1-1", "a", "1"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "c0"],
        &["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">"],
        &["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0"],
        &["XCLAIM", "s", "g", "c2", "0", "1-1"],
        &["XAUTOCLAIM", "s", "g", "c3", "0", "0"],
        &["XACK", "s", "g", "1-1"],
        &["XGROUP", "SETID", "s", "g", "0"],
        &["XGROUP", "DELCONSUMER", "s", "g", "c0"],
        &["XGROUP", "DESTROY", "s", "g"],
    ]);
    assert!(events.contains(&"xgroup-createconsumer:s".to_string()));
    assert!(events.contains(&"xgroup-destroy:s".to_string()));
}

/// [`send_both`] of a command line split on spaces.
fn send_line(a: &mut Raw, b: &mut Raw, line: &str) {
    let args: Vec<&str> = line.split(' ').collect();
    send_both(a, b, &args);
}

fn same_reply(a: &mut Raw, b: &mut Raw) -> String {
    let (x, y) = (masked(&a.read_reply()), masked(&b.read_reply()));
    assert_eq!(x, y);
    x
}

/// Blocked group readers are served first come, first served, each with
/// entries no one else in the group got; they learn with Redis's errors
/// that their group or stream went.
#[test]
fn xreadgroup_block_serves_in_arrival_order() {
    let mut p = Pair::new();
    p.same(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    p.same(&["XGROUP", "CREATE", "s", "h", "$"]);
    let (mut a1, mut a2) = p.connect_again();
    let (mut b1, mut b2) = p.connect_again();
    let (mut c1, mut c2) = p.connect_again();
    for r in [&mut b1, &mut b2] {
        r.cmd_str(&["HELLO", "3"]);
    }
    let read = |c: &str, g: &str| format!("XREADGROUP GROUP {g} {c} COUNT 1 BLOCK 0 STREAMS s >");
    send_line(&mut a1, &mut a2, &read("a", "g"));
    wait_blocked(&mut p, 1);
    send_line(&mut b1, &mut b2, &read("b", "g"));
    wait_blocked(&mut p, 2);
    send_line(&mut c1, &mut c2, &read("c", "h"));
    wait_blocked(&mut p, 3);
    // One entry: the first reader of g and the reader of h get it.
    p.same(&["XADD", "s", "1-1", "f", "1"]);
    assert!(same_reply(&mut a1, &mut a2).contains("1-1"));
    same_reply(&mut c1, &mut c2);
    wait_blocked(&mut p, 1);
    // Several in one transaction: b gets the first it did not see.
    p.same(&["MULTI"]);
    p.same(&["XADD", "s", "2-1", "f", "2"]);
    p.same(&["XADD", "s", "3-1", "f", "3"]);
    p.same(&["EXEC"]);
    assert!(same_reply(&mut b1, &mut b2).contains("2-1"));
    same_masked(&mut p, &["XPENDING", "s", "g", "-", "+", "10"]);
    same_masked(&mut p, &["XINFO", "GROUPS", "s"]);
    // Destroying the group wakes its reader with an error.
    p.same(&["XGROUP", "SETID", "s", "h", "$"]);
    send_line(&mut a1, &mut a2, &read("a", "h"));
    wait_blocked(&mut p, 1);
    p.same(&["XGROUP", "DESTROY", "s", "h"]);
    assert!(same_reply(&mut a1, &mut a2).starts_with("-NOGROUP"));
    // Deleting or replacing the stream wakes group readers, not XREAD.
    p.same(&["XGROUP", "SETID", "s", "g", "$"]);
    send_line(&mut a1, &mut a2, &read("a", "g"));
    send_line(&mut b1, &mut b2, "XREAD BLOCK 0 STREAMS s $");
    wait_blocked(&mut p, 2);
    p.same(&["DEL", "s"]);
    assert!(same_reply(&mut a1, &mut a2).starts_with("-UNBLOCKED"));
    wait_blocked(&mut p, 1);
    p.same(&["XADD", "s", "9-1", "f", "9"]);
    same_reply(&mut b1, &mut b2);
    p.same(&["XGROUP", "CREATE", "s", "g", "$"]);
    send_line(&mut a1, &mut a2, &read("a", "g"));
    wait_blocked(&mut p, 1);
    p.same(&["SET", "s", "string now"]);
    assert!(same_reply(&mut a1, &mut a2).starts_with("-UNBLOCKED"));
    p.same(&["DEL", "s"]);
    p.same(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    send_line(&mut a1, &mut a2, &read("a", "g"));
    wait_blocked(&mut p, 1);
    p.same(&["FLUSHALL"]);
    assert!(same_reply(&mut a1, &mut a2).starts_with("-UNBLOCKED"));
    // So does the stream's expiry, found by the active cycle.
    p.same(&["XGROUP", "CREATE", "x", "g", "$", "MKSTREAM"]);
    p.same(&["PEXPIRE", "x", "100"]);
    send_line(&mut a1, &mut a2, "XREADGROUP GROUP g a BLOCK 0 STREAMS x >");
    assert!(same_reply(&mut a1, &mut a2).starts_with("-UNBLOCKED"));
    // Timeouts answer a null array; NOACK reads leave nothing pending.
    p.same(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    send_line(
        &mut a1,
        &mut a2,
        "XREADGROUP GROUP g a BLOCK 50 STREAMS s >",
    );
    same_reply(&mut a1, &mut a2);
    send_line(
        &mut a1,
        &mut a2,
        "XREADGROUP GROUP g n NOACK BLOCK 0 STREAMS s >",
    );
    wait_blocked(&mut p, 1);
    p.same(&["XADD", "s", "10-1", "f", "10"]);
    same_reply(&mut a1, &mut a2);
    same_masked(&mut p, &["XPENDING", "s", "g"]);
    same_masked(&mut p, &["XINFO", "CONSUMERS", "s", "g"]);
}

/// The worker-pool pattern on the `redis` crate: three consumers of one
/// group take 3,000 messages with XREADGROUP BLOCK and XACK; one dies
/// holding unacknowledged messages, and the others reclaim them with
/// XAUTOCLAIM. Every message is processed, none lost.
#[test]
fn worker_pool_reclaims_a_dead_workers_messages() {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    const TOTAL: usize = 3000;
    let server = start();
    let mut admin = server.client();
    let _: () = redis::cmd("XGROUP")
        .arg(&["CREATE", "jobs", "workers", "$", "MKSTREAM"])
        .query(&mut admin)
        .expect("group");
    let done = Arc::new(Mutex::new(BTreeSet::<usize>::new()));
    let processed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    type Reply = Option<Vec<(String, Vec<(String, Vec<(String, String)>)>)>>;
    let worker = |name: &'static str, die_after: Option<usize>| {
        let mut con = server.client();
        let done = done.clone();
        let processed = processed.clone();
        std::thread::spawn(move || {
            let mut taken = 0;
            loop {
                let reply: Reply = redis::cmd("XREADGROUP")
                    .arg(&["GROUP", "workers", name, "COUNT", "10", "BLOCK", "200"])
                    .arg(&["STREAMS", "jobs", ">"])
                    .query(&mut con)
                    .expect("read");
                let Some(streams) = reply else {
                    if done.lock().expect("lock").len() + 10 >= TOTAL
                        || processed.load(std::sync::atomic::Ordering::SeqCst) >= TOTAL
                    {
                        return taken;
                    }
                    continue;
                };
                for (_, entries) in streams {
                    for (id, fields) in entries {
                        taken += 1;
                        if die_after.is_some_and(|n| taken > n) {
                            // Dies holding what it read, unacknowledged.
                            return taken;
                        }
                        let n: usize = fields[0].1.parse().expect("job number");
                        done.lock().expect("lock").insert(n);
                        processed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let _: i64 = redis::cmd("XACK")
                            .arg(&["jobs", "workers", &id])
                            .query(&mut con)
                            .expect("ack");
                    }
                }
            }
        })
    };
    let workers = [
        worker("w1", None),
        worker("w2", Some(150)),
        worker("w3", None),
    ];
    let mut producer = server.client();
    for chunk in (0..TOTAL).collect::<Vec<_>>().chunks(100) {
        let mut pipe = redis::pipe();
        for n in chunk {
            pipe.cmd("XADD")
                .arg(&["jobs", "*", "job"])
                .arg(n.to_string())
                .ignore();
        }
        let _: () = pipe.query(&mut producer).expect("produce");
    }
    for w in workers {
        w.join().expect("worker");
    }
    // What the dead worker held is still pending; a survivor reclaims it.
    let pending = pending_count(&mut admin);
    assert!(pending > 0, "the dead worker left pending messages");
    let mut cursor = "0-0".to_string();
    loop {
        type Claimed = (String, Vec<(String, Vec<(String, String)>)>, Vec<String>);
        let (next, entries, deleted): Claimed = redis::cmd("XAUTOCLAIM")
            .arg(&["jobs", "workers", "w1", "0", &cursor, "COUNT", "25"])
            .query(&mut admin)
            .expect("autoclaim");
        assert!(deleted.is_empty());
        for (id, fields) in entries {
            let n: usize = fields[0].1.parse().expect("job number");
            done.lock().expect("lock").insert(n);
            let _: i64 = redis::cmd("XACK")
                .arg(&["jobs", "workers", &id])
                .query(&mut admin)
                .expect("ack");
        }
        if next == "0-0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(
        done.lock().expect("lock").len(),
        TOTAL,
        "every job processed"
    );
    let pending = pending_count(&mut admin);
    assert_eq!(pending, 0, "nothing left pending");
}

/// How many messages group `workers` of `jobs` has pending (XPENDING's
/// summary).
fn pending_count(con: &mut redis::Connection) -> usize {
    type Summary = (
        usize,
        Option<String>,
        Option<String>,
        Option<Vec<(String, String)>>,
    );
    let summary: Summary = redis::cmd("XPENDING")
        .arg(&["jobs", "workers"])
        .query(con)
        .expect("pending");
    summary.0
}

/// A stream with groups, pending entries, consumers and deleted entries,
/// saved by redis-server, loads into ferrokv with the same answers and
/// the same DUMP bytes, and ferrokv's file loads back into redis-server.
#[test]
fn groups_move_between_redis_and_ferrokv_rdb() {
    use crate::persist::data::{ferrokv_on, TempDir};
    let dir = TempDir::new("ferrokv-groups-from-redis");
    let d = dir.s();
    let redis = spawn_redis_with(&["--dir", d.as_str(), "--dbfilename", "x.rdb"]);
    let mut r = Raw::connect(redis.port);
    for i in 1..=250 {
        let id = format!("{i}-0");
        let (f, v) = if i % 3 == 0 {
            ("other", "x")
        } else {
            ("f", "v")
        };
        r.cmd_str(&["XADD", "s", &id, f, v, "n", &i.to_string()]);
    }
    for args in [
        &["XGROUP", "CREATE", "s", "g", "0"][..],
        &["XGROUP", "CREATE", "s", "h", "100-0", "ENTRIESREAD", "-1"],
        &["XGROUP", "CREATE", "s", "empty", "$"],
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "COUNT",
            "30",
            "STREAMS",
            "s",
            ">",
        ],
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "COUNT",
            "5",
            "STREAMS",
            "s",
            ">",
        ],
        &[
            "XREADGROUP",
            "GROUP",
            "h",
            "carol",
            "COUNT",
            "3",
            "STREAMS",
            "s",
            ">",
        ],
        &["XGROUP", "CREATECONSUMER", "s", "g", "idle"],
        &[
            "XCLAIM",
            "s",
            "g",
            "bob",
            "0",
            "3-0",
            "TIME",
            "123456",
            "RETRYCOUNT",
            "9",
        ],
        &["XACK", "s", "g", "1-0", "2-0"],
        &["XDEL", "s", "4-0", "5-0", "120-0"],
        &["XTRIM", "s", "MINID", "2-0"],
        &["XGROUP", "CREATE", "mk", "g", "$", "MKSTREAM"],
    ] {
        r.cmd_str(args);
    }
    assert_eq!(r.cmd_str(&["SAVE"]), b"+OK\r\n");
    let questions: [&[&str]; 8] = [
        &["DUMP", "s"],
        &["DUMP", "mk"],
        &["XINFO", "STREAM", "s", "FULL", "COUNT", "0"],
        &["XINFO", "STREAM", "s"],
        &["XINFO", "GROUPS", "s"],
        &["XPENDING", "s", "g"],
        &["XINFO", "STREAM", "mk", "FULL"],
        &["XRANGE", "s", "-", "+", "COUNT", "10"],
    ];
    let answers = |port: u16| {
        let mut c = Raw::connect(port);
        questions
            .iter()
            .map(|q| String::from_utf8_lossy(&c.cmd_str(q)).into_owned())
            .collect::<Vec<_>>()
    };
    let want = answers(redis.port);
    assert!(want[0].len() > 1000, "stream dumped");
    let ours = ferrokv_on(&dir, "x.rdb");
    assert_eq!(answers(ours.port), want, "redis's file in ferrokv");
    // And back: ferrokv's file in redis-server.
    assert_eq!(ours.raw().cmd_str(&["SAVE"]), b"+OK\r\n");
    let loaded = spawn_redis_with(&["--dir", d.as_str(), "--dbfilename", "x.rdb"]);
    assert_eq!(answers(loaded.port), want, "ferrokv's file in redis");
}
