//! Blocking list commands with several real clients (Redis's
//! `unit/type/list.tcl` blocking tests): FIFO service, timeouts, multi-key
//! waits, chains of BLMOVE, disconnects, CLIENT UNBLOCK, job queues.
//!
//! Scenarios that do not depend on timing run against both ferrokv and
//! redis-server, so the expectations are Redis's own. A client is known to
//! be blocked once the PING sent in the same write as its blocking command
//! has answered: both servers run a client's pipeline in order.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::*;

/// Runs `scenario` against ferrokv and against redis-server.
fn on_both(scenario: impl Fn(u16)) {
    let ours = start();
    scenario(ours.port);
    let redis = spawn_redis();
    scenario(redis.port);
}

/// `cmds` (each split on spaces) encoded back to back, for one write.
fn pipeline(cmds: &[&str]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for cmd in cmds {
        let args: Vec<&[u8]> = cmd.split(' ').map(str::as_bytes).collect();
        bytes.extend_from_slice(&encode(&args));
    }
    bytes
}

/// Sends `PING` and `args` in one write and waits for the PONG, so the
/// blocking command has been read and has blocked (or answered).
fn block(c: &mut Raw, args: &[&str]) {
    c.send(&pipeline(&["PING", &args.join(" ")]));
    assert_eq!(c.read_reply(), b"+PONG\r\n");
}

fn bulk_array(items: &[&str]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", items.len()).into_bytes();
    for i in items {
        v.extend_from_slice(format!("${}\r\n{}\r\n", i.len(), i).as_bytes());
    }
    v
}

#[test]
fn waiters_are_served_in_fifo_order() {
    on_both(|port| {
        let mut c1 = Raw::connect(port);
        let mut c2 = Raw::connect(port);
        let mut c3 = Raw::connect(port);
        let mut p = Raw::connect(port);
        block(&mut c1, &["BLPOP", "k", "0"]);
        block(&mut c2, &["BRPOP", "k", "0"]);
        block(&mut c3, &["BLPOP", "k", "0"]);
        assert_eq!(p.cmd_str(&["RPUSH", "k", "a", "b"]), b":2\r\n");
        assert_eq!(c1.read_reply(), bulk_array(&["k", "a"]));
        assert_eq!(c2.read_reply(), bulk_array(&["k", "b"]));
        assert_eq!(p.cmd_str(&["EXISTS", "k"]), b":0\r\n");
        assert_eq!(p.cmd_str(&["LPUSH", "k", "c"]), b":1\r\n");
        assert_eq!(c3.read_reply(), bulk_array(&["k", "c"]));
    });
}

#[test]
fn first_ready_key_wins_and_batch_continues() {
    on_both(|port| {
        let mut c = Raw::connect(port);
        let mut p = Raw::connect(port);
        // The command after the blocking one runs once it is served.
        c.send(&pipeline(&["PING", "BLPOP k1 k2 k1 0", "ECHO after"]));
        assert_eq!(c.read_reply(), b"+PONG\r\n");
        assert_eq!(p.cmd_str(&["RPUSH", "k2", "x", "y"]), b":2\r\n");
        assert_eq!(c.read_reply(), bulk_array(&["k2", "x"]));
        assert_eq!(c.read_reply(), b"$5\r\nafter\r\n");
        assert_eq!(p.cmd_str(&["LRANGE", "k2", "0", "-1"]), bulk_array(&["y"]));
        // BLMPOP takes up to COUNT elements from the key that got data.
        block(
            &mut c,
            &["BLMPOP", "0", "2", "a", "b", "RIGHT", "COUNT", "3"],
        );
        assert_eq!(p.cmd_str(&["RPUSH", "b", "1", "2"]), b":2\r\n");
        assert_eq!(
            c.read_reply(),
            b"*2\r\n$1\r\nb\r\n*2\r\n$1\r\n2\r\n$1\r\n1\r\n"
        );
        assert_eq!(p.cmd_str(&["EXISTS", "b"]), b":0\r\n");
    });
}

#[test]
fn blmove_chains_and_wrongtype_destination() {
    on_both(|port| {
        let mut c1 = Raw::connect(port);
        let mut c2 = Raw::connect(port);
        let mut p = Raw::connect(port);
        // c1 moves from a to b; c2 waits on b and gets what c1 moved.
        block(&mut c1, &["BLMOVE", "a", "b", "LEFT", "RIGHT", "0"]);
        block(&mut c2, &["BLPOP", "b", "0"]);
        assert_eq!(p.cmd_str(&["RPUSH", "a", "x"]), b":1\r\n");
        assert_eq!(c1.read_reply(), b"$1\r\nx\r\n");
        assert_eq!(c2.read_reply(), bulk_array(&["b", "x"]));
        assert_eq!(p.cmd_str(&["EXISTS", "a", "b"]), b":0\r\n");
        // A destination that became a string answers WRONGTYPE when served
        // and the element stays in the source.
        block(&mut c1, &["BRPOPLPUSH", "src", "dst", "0"]);
        assert_eq!(p.cmd_str(&["SET", "dst", "str"]), b"+OK\r\n");
        assert_eq!(p.cmd_str(&["RPUSH", "src", "v"]), b":1\r\n");
        assert_eq!(
            c1.read_reply(),
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        );
        assert_eq!(p.cmd_str(&["LRANGE", "src", "0", "-1"]), bulk_array(&["v"]));
        // A waited-on key set to another type keeps its client blocked.
        block(&mut c2, &["BLPOP", "w", "0"]);
        assert_eq!(p.cmd_str(&["SET", "w", "str"]), b"+OK\r\n");
        assert_eq!(p.cmd_str(&["DEL", "w"]), b":1\r\n");
        assert_eq!(p.cmd_str(&["RPUSH", "w", "z"]), b":1\r\n");
        assert_eq!(c2.read_reply(), bulk_array(&["w", "z"]));
    });
}

#[test]
fn commands_sent_while_blocked_run_after_the_reply() {
    on_both(|port| {
        let mut c = Raw::connect(port);
        let mut p = Raw::connect(port);
        block(&mut c, &["BRPOP", "q", "0"]);
        // Sent in a later write while blocked: they wait their turn.
        c.send(&encode(&[b"RPUSH", b"q", b"mine"]));
        c.send(&encode(&[b"LLEN", b"q"]));
        assert_eq!(p.cmd_str(&["LPUSH", "q", "a", "b"]), b":2\r\n");
        assert_eq!(c.read_reply(), bulk_array(&["q", "a"]));
        assert_eq!(c.read_reply(), b":2\r\n");
        assert_eq!(c.read_reply(), b":2\r\n");
        assert_eq!(
            p.cmd_str(&["LRANGE", "q", "0", "-1"]),
            bulk_array(&["b", "mine"])
        );
    });
}

#[test]
fn same_client_pipeline_and_databases() {
    on_both(|port| {
        let mut c = Raw::connect(port);
        let mut p = Raw::connect(port);
        // Pushed earlier in the same pipeline: answered at once.
        c.send(&pipeline(&["RPUSH k v", "BLPOP k 0"]));
        assert_eq!(c.read_reply(), b":1\r\n");
        assert_eq!(c.read_reply(), bulk_array(&["k", "v"]));
        // A client blocked in db 1 is not woken by a push in db 0.
        assert_eq!(c.cmd_str(&["SELECT", "1"]), b"+OK\r\n");
        block(&mut c, &["BLPOP", "k", "0"]);
        assert_eq!(p.cmd_str(&["RPUSH", "k", "db0"]), b":1\r\n");
        assert_eq!(p.cmd_str(&["SELECT", "1"]), b"+OK\r\n");
        assert_eq!(p.cmd_str(&["RPUSH", "k", "db1"]), b":1\r\n");
        assert_eq!(c.read_reply(), bulk_array(&["k", "db1"]));
        assert_eq!(p.cmd_str(&["SELECT", "0"]), b"+OK\r\n");
        assert_eq!(p.cmd_str(&["LLEN", "k"]), b":1\r\n");
    });
}

#[test]
fn timeouts_are_accurate() {
    let server = start();
    let mut c = server.raw();
    for cmd in [
        &["BLPOP", "k", "0.2"][..],
        &["BRPOP", "a", "b", "0.2"],
        &["BLMPOP", "0.2", "1", "k", "LEFT"],
        &["BRPOPLPUSH", "k", "d", "0.2"],
        &["BLMOVE", "k", "d", "LEFT", "LEFT", "0.2"],
    ] {
        let t = Instant::now();
        // Redis 7.0 answers every blocking list timeout with a null array.
        assert_eq!(c.cmd_str(cmd), b"*-1\r\n", "{cmd:?}");
        let ms = t.elapsed().as_millis();
        assert!((150..600).contains(&ms), "{cmd:?} took {ms} ms");
    }
    // Two clients with different timeouts each get theirs.
    let mut c2 = server.raw();
    let t = Instant::now();
    c.send(&encode(&[b"BLPOP", b"x", b"0.3"]));
    c2.send(&encode(&[b"BLPOP", b"x", b"0.1"]));
    assert_eq!(c2.read_reply(), b"*-1\r\n");
    let first = t.elapsed().as_millis();
    assert_eq!(c.read_reply(), b"*-1\r\n");
    let second = t.elapsed().as_millis();
    assert!((50..300).contains(&first), "{first}");
    assert!((250..700).contains(&second), "{second}");
}

#[test]
fn disconnected_waiter_is_forgotten() {
    on_both(|port| {
        let mut p = Raw::connect(port);
        let mut c2 = Raw::connect(port);
        {
            let mut c1 = Raw::connect(port);
            block(&mut c1, &["BLPOP", "k", "probe", "0"]);
        }
        // Barrier: once a push to `probe` stays, the server has seen the
        // disconnect (before that, the old client would take it).
        assert!(wait_until(Duration::from_secs(5), || {
            p.cmd_str(&["RPUSH", "probe", "p"]);
            p.cmd_str(&["LLEN", "probe"]) != b":0\r\n"
        }));
        assert_eq!(p.cmd_str(&["RPUSH", "k", "kept"]), b":1\r\n");
        assert_eq!(
            p.cmd_str(&["LRANGE", "k", "0", "-1"]),
            bulk_array(&["kept"])
        );
        // A live waiter still gets the next element.
        block(&mut c2, &["BLPOP", "k2", "0"]);
        assert_eq!(p.cmd_str(&["RPUSH", "k2", "x"]), b":1\r\n");
        assert_eq!(c2.read_reply(), bulk_array(&["k2", "x"]));
    });
}

#[test]
fn client_unblock_timeout_and_error() {
    let server = start();
    // A fresh server numbers its two clients 3 and 4 (as Redis 7.0), in
    // either order.
    let mut c = server.raw();
    let mut p = server.raw();
    block(&mut c, &["BLPOP", "k", "0"]);
    let hits: Vec<Vec<u8>> = ["3", "4"]
        .iter()
        .map(|id| p.cmd_str(&["CLIENT", "UNBLOCK", id, "TIMEOUT"]))
        .collect();
    let id = match (hits[0].as_slice(), hits[1].as_slice()) {
        (b":1\r\n", b":0\r\n") => "3",
        (b":0\r\n", b":1\r\n") => "4",
        other => panic!("unexpected CLIENT UNBLOCK replies {other:?}"),
    };
    assert_eq!(c.read_reply(), b"*-1\r\n");
    assert_eq!(p.cmd_str(&["CLIENT", "UNBLOCK", id]), b":0\r\n");
    block(&mut c, &["BLMOVE", "k", "d", "LEFT", "LEFT", "0"]);
    assert_eq!(p.cmd_str(&["CLIENT", "UNBLOCK", id, "ERROR"]), b":1\r\n");
    assert_eq!(
        c.read_reply(),
        b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    );
    assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
    // Errors as Redis words them.
    let mut pair = Pair::new();
    pair.same(&["CLIENT", "UNBLOCK", "x"]);
    pair.same(&["CLIENT", "UNBLOCK", "999", "MAYBE"]);
    pair.same(&["CLIENT", "UNBLOCK", "999", "error"]);
    pair.same(&["CLIENT", "UNBLOCK", "999", "timeout", "extra"]);
    pair.same(&["CLIENT", "UNBLOCK"]);
}

#[test]
fn job_queue_delivers_every_job_exactly_once() {
    let server = start();
    let port = server.port;
    let got = Arc::new(Mutex::new(Vec::new()));
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let got = got.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                loop {
                    let r = c.cmd_str(&["BLPOP", "jobs", "5"]);
                    let text = String::from_utf8_lossy(&r).into_owned();
                    let job = text.rsplit("\r\n").nth(1).unwrap_or_default().to_string();
                    assert!(text.starts_with("*2\r\n"), "{text}");
                    if job == "stop" {
                        break;
                    }
                    got.lock().expect("lock").push(job);
                }
            })
        })
        .collect();
    let mut p = Raw::connect(port);
    for i in 0..1000 {
        let job = format!("job{i}");
        p.cmd_str(&["RPUSH", "jobs", &job]);
    }
    for _ in 0..4 {
        p.cmd_str(&["RPUSH", "jobs", "stop"]);
    }
    for t in consumers {
        t.join().expect("consumer");
    }
    let got = got.lock().expect("lock");
    assert_eq!(got.len(), 1000);
    let uniq: HashSet<&String> = got.iter().collect();
    assert_eq!(uniq.len(), 1000);
    assert_eq!(p.cmd_str(&["EXISTS", "jobs"]), b":0\r\n");
}

#[test]
fn reliable_queue_with_blmove() {
    let server = start();
    let port = server.port;
    let done = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..3)
        .map(|w| {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let processing = format!("processing:{w}");
                loop {
                    let r = c.cmd_str(&["BLMOVE", "queue", &processing, "RIGHT", "LEFT", "5"]);
                    assert!(r.starts_with(b"$"), "{:?}", String::from_utf8_lossy(&r));
                    let text = String::from_utf8_lossy(&r).into_owned();
                    let job = text.split("\r\n").nth(1).unwrap_or_default().to_string();
                    // Done: remove from this worker's processing list.
                    assert_eq!(c.cmd_str(&["LREM", &processing, "1", &job]), b":1\r\n");
                    if job == "stop" {
                        break;
                    }
                    done.lock().expect("lock").push(job);
                }
                assert_eq!(c.cmd_str(&["LLEN", &processing]), b":0\r\n");
            })
        })
        .collect();
    let mut p = Raw::connect(port);
    for i in 0..300 {
        p.cmd_str(&["LPUSH", "queue", &format!("j{i}")]);
    }
    for _ in 0..3 {
        p.cmd_str(&["LPUSH", "queue", "stop"]);
    }
    for w in workers {
        w.join().expect("worker");
    }
    let done = done.lock().expect("lock");
    let uniq: HashSet<&String> = done.iter().collect();
    assert_eq!((done.len(), uniq.len()), (300, 300));
    assert_eq!(p.cmd_str(&["EXISTS", "queue"]), b":0\r\n");
}

/// The list-based rate limiter from Redis's INCR documentation, driven by
/// several clients at once: exactly `LIMIT` calls per window are allowed.
/// Needs MULTI/EXEC, which lands separately.
fn rate_limiter_scenario(port: u16) {
    const LIMIT: usize = 10;
    let allowed = Arc::new(Mutex::new(0usize));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let allowed = allowed.clone();
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                for _ in 0..10 {
                    // current = LLEN(ip); if current > LIMIT: deny
                    // else if EXISTS(ip) == 0: MULTI RPUSH EXPIRE EXEC
                    // else RPUSHX(ip, ip)
                    let len = c.cmd_str(&["LLEN", "rate:ip"]);
                    let n: usize = String::from_utf8_lossy(&len[1..len.len() - 2])
                        .parse()
                        .unwrap_or(0);
                    if n >= LIMIT {
                        continue;
                    }
                    if c.cmd_str(&["EXISTS", "rate:ip"]) == b":0\r\n" {
                        assert_eq!(c.cmd_str(&["MULTI"]), b"+OK\r\n");
                        assert_eq!(c.cmd_str(&["RPUSH", "rate:ip", "rate:ip"]), b"+QUEUED\r\n");
                        assert_eq!(c.cmd_str(&["EXPIRE", "rate:ip", "10"]), b"+QUEUED\r\n");
                        let r = c.cmd_str(&["EXEC"]);
                        assert!(r.starts_with(b"*2\r\n"), "{r:?}");
                    } else {
                        c.cmd_str(&["RPUSHX", "rate:ip", "rate:ip"]);
                    }
                    *allowed.lock().expect("lock") += 1;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client");
    }
    let mut p = Raw::connect(port);
    let len = p.cmd_str(&["LLEN", "rate:ip"]);
    let n: usize = String::from_utf8_lossy(&len[1..len.len() - 2])
        .parse()
        .unwrap_or(0);
    // The check-then-act race of the pattern can let a few extra calls in;
    // every allowed call left one element, none was lost.
    assert_eq!(n, *allowed.lock().expect("lock"));
    assert!((LIMIT..LIMIT + 4).contains(&n), "{n}");
}

#[test]
fn rate_limiter_pattern_allows_exactly_the_limit() {
    let server = start();
    rate_limiter_scenario(server.port);
}

/// The same scenario against redis-server, so the expectations above are
/// known to be Redis's.
#[test]
fn rate_limiter_pattern_on_redis() {
    let redis = spawn_redis();
    rate_limiter_scenario(redis.port);
}

/// Inside MULTI/EXEC a blocking pop on an empty list answers at once, and
/// a push inside a transaction wakes waiters only after EXEC.
fn multi_exec_scenario(port: u16) {
    let mut c = Raw::connect(port);
    let mut p = Raw::connect(port);
    assert_eq!(c.cmd_str(&["MULTI"]), b"+OK\r\n");
    assert_eq!(c.cmd_str(&["BLPOP", "e", "0"]), b"+QUEUED\r\n");
    assert_eq!(
        c.cmd_str(&["BLMOVE", "e", "d", "LEFT", "LEFT", "0"]),
        b"+QUEUED\r\n"
    );
    assert_eq!(c.cmd_str(&["EXEC"]), b"*2\r\n*-1\r\n$-1\r\n");
    block(&mut c, &["BLPOP", "k", "0"]);
    assert_eq!(p.cmd_str(&["MULTI"]), b"+OK\r\n");
    assert_eq!(p.cmd_str(&["RPUSH", "k", "a", "b"]), b"+QUEUED\r\n");
    assert_eq!(p.cmd_str(&["LPOP", "k"]), b"+QUEUED\r\n");
    assert_eq!(p.cmd_str(&["EXEC"]), b"*2\r\n:2\r\n$1\r\na\r\n");
    assert_eq!(c.read_reply(), bulk_array(&["k", "b"]));
}

#[test]
fn multi_exec_does_not_block_and_wakes_after_exec() {
    let server = start();
    multi_exec_scenario(server.port);
}

#[test]
fn multi_exec_scenario_on_redis() {
    let redis = spawn_redis();
    multi_exec_scenario(redis.port);
}

/// A push made by a script wakes a blocked client once the script has
/// finished, and the script itself never sees the element taken away.
fn eval_scenario(port: u16) {
    let mut c = Raw::connect(port);
    let mut p = Raw::connect(port);
    block(&mut c, &["BLPOP", "jobs", "0"]);
    let script = "redis.call('rpush', KEYS[1], 'a', 'b') \
                  return redis.call('llen', KEYS[1])";
    assert_eq!(p.cmd_str(&["EVAL", script, "1", "jobs"]), b":2\r\n");
    assert_eq!(c.read_reply(), bulk_array(&["jobs", "a"]));
    assert_eq!(
        p.cmd_str(&["LRANGE", "jobs", "0", "-1"]),
        bulk_array(&["b"])
    );
    // Blocking pops are flagged noscript in Redis 7.0: scripts may not call
    // them at all.
    let script = "return redis.call('blpop', 'empty', 0)";
    let reply = p.cmd_str(&["EVAL", script, "0"]);
    assert!(
        reply.starts_with(b"-ERR This Redis command is not allowed from script"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
}

#[test]
fn eval_wakes_blocked_clients_after_the_script() {
    let server = start();
    eval_scenario(server.port);
}

#[test]
fn eval_scenario_on_redis() {
    let redis = spawn_redis();
    eval_scenario(redis.port);
}

/// A blocking pop's timeout follows the server's clock: a 10-second BLPOP
/// times out as soon as a manual clock moves past it, and not before.
#[test]
fn blocking_timeouts_follow_a_manual_clock() {
    let (server, clock) = start_with_clock(|_| {});
    let mut waiter = server.raw();
    let mut probe = server.raw();
    block(&mut waiter, &["BLPOP", "k", "10"]);
    assert!(wait_until(Duration::from_secs(5), || {
        String::from_utf8_lossy(&probe.cmd_str(&["INFO", "clients"]))
            .contains("blocked_clients:1\r\n")
    }));
    clock.advance(Duration::from_millis(9_999));
    // Still blocked: the next command on another connection sees it so.
    assert!(
        String::from_utf8_lossy(&probe.cmd_str(&["INFO", "clients"]))
            .contains("blocked_clients:1\r\n")
    );
    let started = Instant::now();
    clock.advance(Duration::from_millis(1));
    assert_eq!(waiter.read_reply(), b"*-1\r\n");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

/// Redis 7.0's accounting of blocking commands: a call is counted in
/// commandstats and total_commands_processed when the command first runs,
/// blocked or not, and not again when it is served; a timeout adds
/// nothing; CLIENT UNBLOCK counts a failed call whichever its reason, and
/// an UNBLOCKED error only for ERROR; latency samples and slow log entries
/// are taken when served or unblocked. The same steps on both servers must
/// leave the same counts.
#[test]
fn blocked_commands_are_counted_as_redis() {
    fn counts(port: u16) -> Vec<String> {
        let mut c = Raw::connect(port);
        let mut admin = Raw::connect(port);
        let id = String::from_utf8_lossy(&c.cmd_str(&["CLIENT", "ID"]))
            .trim_start_matches(':')
            .trim()
            .to_string();
        admin.cmd_str(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        admin.cmd_str(&["CONFIG", "RESETSTAT"]);
        let mut seen = Vec::new();
        let mut look = |admin: &mut Raw, step: &str| {
            let processed = info_u64(admin, "total_commands_processed");
            let info = String::from_utf8_lossy(&admin.cmd_str(&["INFO", "all"])).into_owned();
            // Sorted: Redis lists commands in its table's hash order.
            let mut lines: Vec<String> = info
                .lines()
                .filter(|l| l.starts_with("cmdstat_b") || l.starts_with("errorstat_"))
                .map(|l| {
                    // Without the times.
                    l.split(',')
                        .filter(|f| !f.starts_with("usec"))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect();
            lines.sort();
            // The samples each latency histogram holds.
            let histograms = admin.cmd_str(&[
                "LATENCY",
                "HISTOGRAM",
                "blpop",
                "brpop",
                "blmove",
                "bzpopmin",
            ]);
            let mut samples: Vec<String> = String::from_utf8_lossy(&histograms)
                .split("calls\r\n")
                .skip(1)
                .map(|rest| rest.lines().next().unwrap_or_default().to_string())
                .collect();
            samples.sort();
            let slowlog = String::from_utf8_lossy(&admin.cmd_str(&["SLOWLOG", "LEN"])).into_owned();
            seen.push(format!(
                "{step}: {processed} {lines:?} {samples:?} {slowlog:?}"
            ));
        };
        block(&mut c, &["BLPOP", "l", "0"]);
        look(&mut admin, "blocked");
        admin.cmd_str(&["RPUSH", "l", "a"]);
        assert_eq!(c.read_reply(), bulk_array(&["l", "a"]));
        look(&mut admin, "served");
        block(&mut c, &["BRPOP", "l", "0"]);
        admin.cmd_str(&["CLIENT", "UNBLOCK", &id, "TIMEOUT"]);
        assert_eq!(c.read_reply(), b"*-1\r\n");
        look(&mut admin, "unblocked with a timeout");
        block(&mut c, &["BLMOVE", "l", "d", "LEFT", "LEFT", "0"]);
        admin.cmd_str(&["CLIENT", "UNBLOCK", &id, "ERROR"]);
        c.read_reply();
        look(&mut admin, "unblocked with an error");
        block(&mut c, &["BZPOPMIN", "z", "0.01"]);
        assert_eq!(c.read_reply(), b"*-1\r\n");
        look(&mut admin, "timed out");
        seen
    }
    let ours = start();
    let redis = spawn_redis();
    let seen = counts(ours.port);
    assert_eq!(seen, counts(redis.port));
}

/// A served client's next pipelined commands run after the whole request
/// of the client whose write served it, as Redis 7.0 continues unblocked
/// clients before it sleeps (processUnblockedClients), not between that
/// client's commands.
#[test]
fn a_served_client_continues_after_the_serving_request() {
    on_both(|port| {
        let mut waiter = Raw::connect(port);
        let mut writer = Raw::connect(port);
        waiter.send(&pipeline(&["PING", "BLPOP l 0", "RPUSH l x"]));
        assert_eq!(waiter.read_reply(), b"+PONG\r\n");
        writer.send(&pipeline(&["RPUSH l a", "LLEN l"]));
        assert_eq!(writer.read_reply(), b":1\r\n");
        assert_eq!(
            writer.read_reply(),
            b":0\r\n",
            "the waiter's RPUSH ran first"
        );
        assert_eq!(waiter.read_reply(), bulk_array(&["l", "a"]));
        assert_eq!(waiter.read_reply(), b":1\r\n");
        assert_eq!(
            writer.cmd_str(&["LRANGE", "l", "0", "-1"]),
            bulk_array(&["x"])
        );
    });
}
