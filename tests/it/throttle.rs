//! CL.THROTTLE (redis-cell's command, built in): redis-cell's documented
//! examples, replies against a reference model of GCRA over random
//! parameters and request times (the server's clock moved by the test),
//! errors, and the command inside MULTI, Lua, notifications, statistics,
//! COMMAND and the AOF.

use std::time::Duration;

use proptest::prelude::*;

use crate::support::*;

/// `*5` of integers, as CL.THROTTLE replies.
fn ints(reply: &[u8]) -> Vec<i64> {
    let text = String::from_utf8_lossy(reply);
    let mut lines = text.split("\r\n");
    let head = lines.next().unwrap_or_default();
    assert_eq!(head, "*5", "not a 5-array: {text:?}");
    lines
        .take(5)
        .map(|l| l.strip_prefix(':').and_then(|n| n.parse().ok()))
        .collect::<Option<Vec<i64>>>()
        .unwrap_or_else(|| panic!("not integers: {text:?}"))
}

fn throttle(r: &mut Raw, args: &[&str]) -> Vec<i64> {
    let mut argv = vec!["CL.THROTTLE"];
    argv.extend_from_slice(args);
    ints(&r.cmd_str(&argv))
}

#[test]
fn redis_cells_documented_examples() {
    let (server, clock) = start_with_clock(|_| {});
    let mut r = server.raw();
    // The README: 30 tokens per 60 s, bursts of 15.
    assert_eq!(
        throttle(&mut r, &["user123", "15", "30", "60"]),
        [0, 16, 15, -1, 2]
    );
    assert_eq!(
        throttle(&mut r, &["user123", "15", "30", "60", "1"]),
        [0, 16, 14, -1, 4]
    );
    // The end-to-end test: 1 token per 2 s, no burst.
    assert_eq!(
        throttle(&mut r, &["e2e", "0", "1", "2", "1"]),
        [0, 1, 0, -1, 2]
    );
    assert_eq!(
        throttle(&mut r, &["e2e", "0", "1", "2", "1"]),
        [1, 1, 0, 2, 2]
    );
    clock.advance(Duration::from_secs(2));
    assert_eq!(
        throttle(&mut r, &["e2e", "0", "1", "2", "1"]),
        [0, 1, 0, -1, 2]
    );
    // Quantity 0 looks without consuming: nothing would be refused now.
    for _ in 0..2 {
        assert_eq!(
            throttle(&mut r, &["e2e", "0", "1", "2", "0"]),
            [0, 1, 0, -1, 2]
        );
    }
    assert_eq!(
        throttle(&mut r, &["peek", "3", "1", "1", "0"]),
        [0, 4, 4, -1, 0]
    );
    assert_eq!(r.cmd_str(&["EXISTS", "peek"]), b":0\r\n");
}

/// GCRA as redis-cell computes it (`cell/mod.rs`), written out apart from
/// ferrokv's code: nanoseconds, the TAT as the only state.
struct Model {
    tat: Option<i128>,
}

impl Model {
    /// The five replies for a request at `now` (ns), and the TAT stored.
    fn request(&mut self, burst: i64, count: i64, period: i64, qty: i64, now: i128) -> [i64; 5] {
        let interval = i128::from(period) * 1_000_000_000 / i128::from(count);
        let tolerance = interval * i128::from(burst + 1);
        let increment = interval * i128::from(qty);
        // The key lives until its TAT: past it, no state.
        let tat = self.tat.filter(|&t| t > now).unwrap_or(now);
        let new_tat = if now > tat {
            now + increment
        } else {
            tat + increment
        };
        let diff = now - (new_tat - tolerance);
        let (limited, ttl, retry) = if diff < 0 {
            let retry = if increment <= tolerance {
                -diff
            } else {
                -1_000_000_000
            };
            (1, tat - now, retry)
        } else {
            if qty > 0 {
                self.tat = Some(new_tat);
            }
            (0, new_tat - now, -1_000_000_000)
        };
        let next = tolerance - ttl;
        let remaining = if next > -interval { next / interval } else { 0 };
        // Whole seconds, one more for a leftover millisecond or more.
        let secs =
            |ns: i128| (ns / 1_000_000_000 + i128::from(ns % 1_000_000_000 >= 1_000_000)) as i64;
        [limited, burst + 1, remaining as i64, secs(retry), secs(ttl)]
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn replies_match_a_reference_gcra_model(
        burst in 0i64..12,
        count in 1i64..50,
        period in 1i64..120,
        steps in prop::collection::vec((0u64..20_000, 0i64..4), 1..40),
    ) {
        let (server, clock) = start_with_clock(|_| {});
        let mut r = server.raw();
        let mut model = Model { tat: None };
        let (b, c, p) = (burst.to_string(), count.to_string(), period.to_string());
        for (wait_ms, qty) in steps {
            clock.advance(Duration::from_millis(wait_ms));
            let now = i128::from(clock.now_us()) * 1000;
            let want = model.request(burst, count, period, qty, now);
            let got = throttle(&mut r, &["k", &b, &c, &p, &qty.to_string()]);
            prop_assert_eq!(got, want.to_vec(), "at {} ns", now);
            // The state is the TAT in nanoseconds, expiring when it passes:
            // at its millisecond rounded up, which a key outlives as any
            // key does (expired once the clock is past it).
            let at_ms = |tat: i128| (tat + 999_999) / 1_000_000;
            if let Some(tat) = model.tat.filter(|&t| now / 1_000_000 <= at_ms(t)) {
                prop_assert_eq!(r.cmd_str(&["GET", "k"]), format!("${}\r\n{tat}\r\n", tat.to_string().len()).into_bytes());
                let at = at_ms(tat);
                prop_assert_eq!(r.cmd_str(&["PEXPIRETIME", "k"]), format!(":{at}\r\n").into_bytes());
            } else {
                prop_assert_eq!(r.cmd_str(&["EXISTS", "k"]), b":0\r\n".to_vec());
            }
        }
    }
}

#[test]
fn a_limiter_test_runs_in_milliseconds_by_moving_the_clock() {
    // 100 requests a minute, no burst: one every 600 ms, over half an hour
    // of server time, without waiting for any of it.
    let started = std::time::Instant::now();
    let (server, clock) = start_with_clock(|_| {});
    let mut r = server.raw();
    let (mut allowed, mut refused) = (0, 0);
    for _ in 0..6000 {
        clock.advance(Duration::from_millis(300));
        match throttle(&mut r, &["api", "0", "100", "60"])[0] {
            0 => allowed += 1,
            _ => refused += 1,
        }
    }
    assert_eq!((allowed, refused), (3000, 3000));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn errors_are_worded_as_redis_cell_words_them() {
    let server = start();
    let mut r = server.raw();
    let cases: &[(&[&str], &[u8])] = &[
        (
            &["k", "x", "1", "1"],
            b"-Cell error: Store error: Couldn't parse as integer: x\r\n",
        ),
        (
            &["k", "1", "1", "1.5"],
            b"-Cell error: Store error: Couldn't parse as integer: 1.5\r\n",
        ),
        (
            &["k", "1", "1", "1", " 1"],
            b"-Cell error: Store error: Couldn't parse as integer:  1\r\n",
        ),
        (
            &["k", "-1", "1", "1"],
            b"-Cell error: Store error: Negative values are not supported: -1\r\n",
        ),
        (
            &["k", "1", "-3", "1"],
            b"-Cell error: Store error: Negative values are not supported: -3\r\n",
        ),
        (
            &["k", "1", "1", "1", "-2"],
            b"-Cell error: Store error: Negative values are not supported: -2\r\n",
        ),
        (
            &["k", "1", "0", "1"],
            b"-Cell error: Store error: Zero rates are not supported\r\n",
        ),
        (
            &["k", "1", "1", "0"],
            b"-Cell error: Store error: Zero rates are not supported\r\n",
        ),
        (
            &["k", "1", "1", "1", "1", "1"],
            b"-ERR wrong number of arguments for 'cl.throttle' command\r\n",
        ),
        (
            &["k", "1", "1"],
            b"-ERR wrong number of arguments for 'cl.throttle' command\r\n",
        ),
    ];
    for (args, want) in cases {
        let mut argv = vec!["CL.THROTTLE"];
        argv.extend_from_slice(args);
        assert_eq!(r.cmd_str(&argv), *want, "{args:?}");
    }
    // Leading '+' and zeros parse, as Rust's integer parsing reads them.
    assert_eq!(throttle(&mut r, &["k", "+01", "1", "1"]), [0, 2, 1, -1, 1]);
    r.cmd_str(&["RPUSH", "list", "a"]);
    assert_eq!(
        r.cmd_str(&["CL.THROTTLE", "list", "1", "1", "1"]),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    r.cmd_str(&["SET", "text", "abc"]);
    assert_eq!(
        r.cmd_str(&["CL.THROTTLE", "text", "1", "1", "1"]),
        b"-ERR value is not an integer or out of range\r\n"
    );
    // Past the year 2262 the TAT no longer fits: an error, nothing stored.
    assert_eq!(
        r.cmd_str(&["CL.THROTTLE", "far", "0", "1", "9000000000000"]),
        b"-ERR increment or decrement would overflow\r\n"
    );
    assert_eq!(r.cmd_str(&["EXISTS", "far"]), b":0\r\n");
    let info = String::from_utf8_lossy(&r.cmd_str(&["INFO", "errorstats"])).into_owned();
    assert!(info.contains("errorstat_Cell:count=8"), "{info}");
}

#[test]
fn in_multi_lua_notifications_statistics_and_command() {
    let (server, _clock) = start_with_clock(|c| c.notify_keyspace_events = "KEA".into());
    let mut sub = server.raw();
    sub.cmd_str(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    let mut r = server.raw();
    r.cmd_str(&["MULTI"]);
    assert_eq!(
        r.cmd_str(&["CL.THROTTLE", "m", "1", "1", "10"]),
        b"+QUEUED\r\n"
    );
    assert_eq!(
        r.cmd_str(&["CL.THROTTLE", "m", "1", "1", "10"]),
        b"+QUEUED\r\n"
    );
    assert_eq!(
        r.cmd_str(&["CL.THROTTLE", "m", "1", "1", "10"]),
        b"+QUEUED\r\n"
    );
    assert_eq!(
        r.cmd_str(&["EXEC"]),
        b"*3\r\n*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:10\r\n*5\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:20\r\n*5\r\n:1\r\n:2\r\n:0\r\n:10\r\n:20\r\n"
    );
    // From Lua, the reply is a table of five numbers.
    assert_eq!(
        r.cmd_str(&[
            "EVAL",
            "local t = redis.call('cl.throttle', KEYS[1], 4, 1, 1) return {t[1], t[3], #t}",
            "1",
            "lua"
        ]),
        b"*3\r\n:0\r\n:4\r\n:5\r\n"
    );
    // Read-only scripts may not call it: it writes.
    let ro = r.cmd_str(&[
        "EVAL_RO",
        "return redis.call('cl.throttle', KEYS[1], 4, 1, 1)",
        "1",
        "lua",
    ]);
    assert!(
        ro.starts_with(b"-ERR Write commands are not allowed from read-only scripts."),
        "{}",
        String::from_utf8_lossy(&ro)
    );
    // Each stored state fires set and expire, as SET ... PXAT does.
    for want in ["set", "expire", "set", "expire", "set", "expire"] {
        let msg = String::from_utf8_lossy(&sub.read_reply()).into_owned();
        assert!(msg.contains(&format!("__keyevent@0__:{want}\r\n")), "{msg}");
    }
    let stats = String::from_utf8_lossy(&r.cmd_str(&["INFO", "commandstats"])).into_owned();
    assert!(stats.contains("cmdstat_cl.throttle:calls=4,"), "{stats}");
    assert_eq!(r.cmd_str(&["TYPE", "m"]), b"+string\r\n");
    assert_eq!(
        r.cmd_str(&["COMMAND", "GETKEYS", "CL.THROTTLE", "k1", "1", "2", "3"]),
        b"*1\r\n$2\r\nk1\r\n"
    );
    let info = r.cmd_str(&["COMMAND", "INFO", "cl.throttle"]);
    assert!(info.starts_with(b"*1\r\n*10\r\n$11\r\ncl.throttle\r\n:-5\r\n*3\r\n+write\r\n+denyoom\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"), "{}", String::from_utf8_lossy(&info));
    let docs =
        String::from_utf8_lossy(&r.cmd_str(&["COMMAND", "DOCS", "cl.throttle"])).into_owned();
    assert!(
        docs.contains("count_per_period") && docs.contains("optional"),
        "{docs}"
    );
}

#[test]
fn the_state_reaches_the_aof_as_a_set_with_an_absolute_expiry() {
    let dir = unique_temp_path("ferrokv-throttle-aof");
    std::fs::create_dir_all(&dir).expect("dir");
    let clock = ferrokv::util::clock::ManualClock::at_ms(1_700_000_000_000);
    let start = || {
        ferrokv::Server::builder()
            .directive("dir", &dir.display().to_string())
            .directive("appendonly", "yes")
            .directive("appendfsync", "always")
            .clock(clock.clone())
            .start()
            .expect("ferrokv starts")
    };
    let server = start();
    let mut r = Raw::connect(server.port());
    assert_eq!(throttle(&mut r, &["rl", "2", "1", "60"]), [0, 3, 2, -1, 60]);
    // A refused request changes nothing and writes nothing.
    assert_eq!(
        throttle(&mut r, &["rl", "2", "1", "60", "9"]),
        [1, 3, 2, -1, 60]
    );
    drop(server);
    let incr = std::fs::read(dir.join("appendonlydir/appendonly.aof.1.incr.aof")).expect("incr");
    let want = b"*5\r\n$3\r\nSET\r\n$2\r\nrl\r\n$19\r\n1700000060000000000\r\n$4\r\nPXAT\r\n$13\r\n1700000060000\r\n";
    assert!(incr.ends_with(want), "{}", String::from_utf8_lossy(&incr));
    // After a restart the limit goes on where it was.
    clock.advance(Duration::from_secs(30));
    let server = start();
    let mut r = Raw::connect(server.port());
    assert_eq!(throttle(&mut r, &["rl", "2", "1", "60"]), [0, 3, 1, -1, 90]);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_allowed_request_touches_watchers_and_a_refused_one_does_not() {
    let (server, _clock) = start_with_clock(|_| {});
    let (mut watcher, mut other) = (server.raw(), server.raw());
    let exec_after = |watcher: &mut Raw, other: &mut Raw, args: &[&str]| {
        watcher.cmd_str(&["WATCH", "w"]);
        throttle(other, args);
        watcher.cmd_str(&["MULTI"]);
        watcher.cmd_str(&["PING"]);
        watcher.cmd_str(&["EXEC"])
    };
    // Allowed: the state changes, so the transaction aborts.
    assert_eq!(
        exec_after(&mut watcher, &mut other, &["w", "0", "1", "60"]),
        b"*-1\r\n"
    );
    // Refused, and a quantity-0 look: nothing changes, EXEC runs.
    assert_eq!(
        exec_after(&mut watcher, &mut other, &["w", "0", "1", "60"]),
        b"*1\r\n+PONG\r\n"
    );
    assert_eq!(
        exec_after(&mut watcher, &mut other, &["w", "0", "1", "60", "0"]),
        b"*1\r\n+PONG\r\n"
    );
    // A write's lookup, as INCR's: no keyspace hit or miss is counted.
    let stats = String::from_utf8_lossy(&other.cmd_str(&["INFO", "stats"])).into_owned();
    assert!(
        stats.contains("keyspace_hits:0\r\n") && stats.contains("keyspace_misses:0\r\n"),
        "{stats}"
    );
}
