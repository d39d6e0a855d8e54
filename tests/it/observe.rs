//! Looking inside the server as Redis users do (Redis's
//! `unit/introspection.tcl` and `unit/slowlog.tcl`): MONITOR lines and
//! SLOWLOG entries compared with redis-server's for the same workload,
//! timestamps, durations and ports aside, and `redis-cli monitor` and
//! `slowlog get` driven as a user would.

use std::time::Duration;

use crate::support::*;

fn text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).into_owned()
}

/// A workload with binary arguments, MULTI (run and aborted), a script, a
/// blocking pop that times out, AUTH and HELLO secrets, an administrative
/// command and a database switch.
const WORKLOAD: &[&[&[u8]]] = &[
    &[b"SET", b"k", b"a b\"c\n\x01\xff"],
    &[b"MULTI"],
    &[b"SET", b"a", b"1"],
    &[b"INCR", b"a"],
    &[b"EXEC"],
    &[
        b"EVAL",
        b"redis.call('set',KEYS[1],'x') return redis.call('get',KEYS[1])",
        b"1",
        b"zz",
    ],
    &[b"AUTH", b"foo", b"bar"],
    &[b"AUTH", b"a", b"b", b"c"],
    &[b"HELLO", b"2", b"AUTH", b"u", b"p", b"SETNAME", b"n"],
    &[b"CONFIG", b"GET", b"port"],
    &[b"CLIENT", b"SETNAME", b"x"],
    &[b"SELECT", b"3"],
    &[b"SET", b"q", b"12345"],
    &[b"MULTI"],
    &[b"SET", b"a"],
    &[b"EXEC"],
    &[b"BLPOP", b"nolist", b"0.01"],
    // MIGRATE's passwords are redacted (the key is missing: NOKEY).
    &[
        b"MIGRATE",
        b"127.0.0.1",
        b"1",
        b"key",
        b"9",
        b"5000",
        b"AUTH",
        b"pw",
    ],
    &[
        b"MIGRATE",
        b"127.0.0.1",
        b"1",
        b"",
        b"9",
        b"5000",
        b"COPY",
        b"AUTH2",
        b"u",
        b"p",
        b"KEYS",
        b"key",
    ],
    &[b"PING"],
];

/// Reads status lines from a monitor until `want` lines arrived; each
/// without its timestamp and the client's port.
fn monitor_lines(m: &mut Raw, want: usize) -> Vec<String> {
    (0..want)
        .map(|_| {
            let line = text(&m.read_reply()).trim_end().to_string();
            let line = line
                .split_once(' ')
                .map_or(line.clone(), |(_, rest)| rest.to_string());
            // "[0 127.0.0.1:54321]" -> "[0 127.0.0.1]"
            match (line.find(':'), line.find(']')) {
                (Some(c), Some(b)) if c < b => format!("{}{}", &line[..c], &line[b..]),
                _ => line,
            }
        })
        .collect()
}

#[test]
fn monitor_shows_what_redis_shows() {
    let p = Pair::new();
    let (ours, theirs) = p.ports();
    let mut out = Vec::new();
    for port in [ours, theirs] {
        let mut m = Raw::connect(port);
        assert_eq!(m.cmd_str(&["MONITOR"]), b"+OK\r\n");
        let mut c = Raw::connect(port);
        for cmd in WORKLOAD {
            c.cmd(cmd);
        }
        let mut lines = monitor_lines(&mut m, 20);
        // The monitor's own commands: refused on the keyspace, shown
        // otherwise, after their reply.
        assert_eq!(
            m.cmd_str(&["GET", "x"]),
            b"-ERR Replica can't interact with the keyspace\r\n"
        );
        assert_eq!(m.cmd_str(&["PING"]), b"+PONG\r\n");
        lines.extend(monitor_lines(&mut m, 1));
        assert_eq!(m.cmd_str(&["RESET"]), b"+RESET\r\n");
        assert_eq!(m.cmd_str(&["GET", "x"]), b"$-1\r\n");
        out.push(lines);
    }
    assert_eq!(out[0], out[1]);
    assert!(
        out[0].contains(&r#"[0 lua] "set" "zz" "x""#.to_string()),
        "{:?}",
        out[0]
    );
    assert!(out[0].contains(&r#"[0 127.0.0.1] "AUTH" "(redacted)" "(redacted)""#.to_string()));
    assert!(
        out[0]
            .iter()
            .any(|l| l.ends_with(r#""AUTH2" "(redacted)" "(redacted)" "KEYS" "key""#)),
        "{:?}",
        out[0]
    );
    // MONITOR inside MULTI is refused at EXEC, as Redis does.
    let mut p = Pair::new();
    p.script(&["MULTI", "MONITOR", "EXEC", "PING"]);
}

#[test]
fn redis_cli_monitor_prints_commands() {
    let server = start();
    let port = server.port.to_string();
    let (_child, rx) =
        spawn_lines(std::process::Command::new("redis-cli").args(["-p", &port, "monitor"]));
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10))
            .expect("redis-cli prints"),
        "OK"
    );
    let mut c = server.raw();
    c.cmd_str(&["SET", "greeting", "hello world"]);
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the SET shows");
    let (stamp, rest) = line.split_once(' ').expect("a timestamp");
    let (secs, micros) = stamp.split_once('.').expect("seconds.micros");
    assert!(secs.parse::<u64>().is_ok() && micros.len() == 6, "{line}");
    assert!(rest.starts_with("[0 127.0.0.1:"), "{line}");
    assert!(
        rest.ends_with(r#"] "SET" "greeting" "hello world""#),
        "{line}"
    );
}

/// The entries of SLOWLOG GET without the fields that differ between two
/// servers (id, time, duration, the client's port).
fn slowlog_entries(raw: &mut Raw) -> Vec<String> {
    let reply = text(&raw.cmd_str(&["SLOWLOG", "GET", "-1"]));
    let mut lines = reply.split("\r\n").peekable();
    let mut entries = Vec::new();
    lines.next();
    while let Some(l) = lines.next() {
        if l != "*6" {
            continue;
        }
        // Ids, times and durations differ between the two servers.
        let mut e = Vec::new();
        lines.next();
        lines.next();
        lines.next();
        let argc: usize = lines.next().unwrap_or("*0")[1..].parse().unwrap_or(0);
        for _ in 0..argc {
            lines.next();
            e.push(lines.next().unwrap_or_default().to_string());
        }
        lines.next();
        let peer = lines.next().unwrap_or_default();
        e.push(peer.split(':').next().unwrap_or_default().to_string());
        lines.next();
        e.push(lines.next().unwrap_or_default().to_string());
        entries.push(e.join(" "));
    }
    entries
}

#[test]
fn slowlog_matches_redis() {
    let mut p = Pair::new();
    p.script(&[
        "SLOWLOG",
        "SLOWLOG HELP",
        "SLOWLOG LEN",
        "SLOWLOG GET x",
        "SLOWLOG GET -2",
        "SLOWLOG GET 1 2",
        "SLOWLOG LEN x",
        "SLOWLOG RESET x",
        "SLOWLOG foo",
        "CONFIG SET slowlog-max-len 5",
        "CONFIG SET slowlog-log-slower-than 0",
        "SLOWLOG RESET",
        "SET a 1",
        "SLOWLOG GET 0",
        "SLOWLOG LEN",
        "CLIENT SETNAME slowpoke",
    ]);
    p.same(&["CONFIG", "SET", "requirepass", "pw", "maxmemory", "0"]);
    p.same(&["AUTH", "pw"]);
    p.same(&["MULTI"]);
    p.same(&["INCR", "n"]);
    p.same(&["EXEC"]);
    let (mut a, mut b) = p.connect_again();
    for r in [&mut a, &mut b] {
        assert_eq!(r.cmd_str(&["AUTH", "pw"]), b"+OK\r\n");
    }
    let (ours, theirs) = (slowlog_entries(&mut a), slowlog_entries(&mut b));
    assert_eq!(ours, theirs);
    assert_eq!(ours.len(), 5);
    p.script(&[
        "SLOWLOG LEN",
        "CONFIG SET slowlog-log-slower-than -1",
        "SLOWLOG RESET",
        "PING",
        "SLOWLOG LEN",
    ]);
}

#[test]
fn slowlog_keeps_args_trimmed_and_scripts_client() {
    let mut p = Pair::new();
    p.script(&["CONFIG SET slowlog-log-slower-than 0", "SLOWLOG RESET"]);
    let long: Vec<String> = (0..40).map(|i| format!("f{i}")).collect();
    let mut args = vec!["RPUSH", "many"];
    args.extend(long.iter().map(String::as_str));
    p.same(&args);
    p.same(&["SET", "big", &"x".repeat(200)]);
    p.same(&["EVAL", "return redis.call('set','b','2')", "0"]);
    p.same(&["ACL", "SETUSER", "bob", "on", ">secret"]);
    let (mut a, mut b) = p.connect_again();
    let ours = slowlog_entries(&mut a);
    assert_eq!(ours, slowlog_entries(&mut b));
    assert!(
        ours.iter().any(|e| e.contains("... (11 more arguments)")),
        "{ours:?}"
    );
    assert!(
        ours.iter().any(|e| e.contains("... (72 more bytes)")),
        "{ours:?}"
    );
    assert!(ours.iter().any(|e| e.contains("set b 2 ?")), "{ours:?}");
    assert!(
        ours.iter().any(|e| e.contains("SETUSER (redacted)")),
        "{ours:?}"
    );
}

#[test]
fn redis_cli_slowlog_get() {
    let server = start();
    let port = server.port.to_string();
    let mut c = server.raw();
    c.cmd_str(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd_str(&["SET", "k", "v"]);
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port, "slowlog", "get", "2"])
        .output()
        .expect("redis-cli runs");
    let printed = text(&out.stdout);
    let lines: Vec<&str> = printed.lines().collect();
    // Newest first: the SET's entry (id, time, duration, 3 arguments,
    // address, name), then the CONFIG SET's (4 arguments).
    assert_eq!(lines.len(), 8 + 9, "{printed}");
    assert_eq!(&lines[3..6], ["SET", "k", "v"], "{printed}");
    assert!(lines[6].starts_with("127.0.0.1:"), "{printed}");
}

#[test]
fn memory_replies_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "MEMORY",
        "MEMORY HELP",
        "MEMORY foo",
        "MEMORY USAGE",
        "MEMORY USAGE nokey",
        "SET k v",
        "MEMORY USAGE k SAMPLES -1",
        "MEMORY USAGE k SAMPLES x",
        "MEMORY USAGE k foo",
        "MEMORY USAGE k SAMPLES",
        "MEMORY STATS x",
        "MEMORY DOCTOR x",
        "MEMORY PURGE",
        "MEMORY PURGE x",
        "MEMORY MALLOC-STATS x",
    ]);
    // MEMORY STATS names the same fields, in the same order.
    let names = |reply: Vec<u8>| -> Vec<String> {
        let t = text(&reply);
        let lines: Vec<&str> = t.split("\r\n").collect();
        let mut out = Vec::new();
        let mut i = 1;
        while i + 1 < lines.len() {
            if lines[i].starts_with('$') {
                let name = lines[i + 1].to_string();
                if !name.starts_with("db.") {
                    out.push(name);
                }
                i += 2;
                // Skip the value: a number, a bulk double, or a nested map.
                if lines.get(i).is_some_and(|l| l.starts_with('*')) {
                    i += 1 + 2 * 3;
                } else if lines.get(i).is_some_and(|l| l.starts_with('$')) {
                    i += 2;
                } else {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        out
    };
    let (ours, theirs) = p.both(&["MEMORY", "STATS"]);
    let ours = names(ours);
    assert_eq!(ours, names(theirs));
    assert!(ours.len() >= 27 && ours[0] == "peak.allocated", "{ours:?}");
}

#[test]
fn memory_usage_follows_the_value() {
    let server = start();
    let mut c = server.raw();
    let value = "x".repeat(1000);
    c.cmd_str(&["SET", "big", &value]);
    let usage = |c: &mut Raw, k: &str| -> i64 {
        text(&c.cmd_str(&["MEMORY", "USAGE", k]))[1..]
            .trim()
            .parse()
            .expect("an integer")
    };
    let n = usage(&mut c, "big");
    assert!((1000..1200).contains(&n), "{n}");
    for i in 0..1000 {
        c.cmd_str(&["RPUSH", "list", &format!("element-{i}")]);
    }
    let n = usage(&mut c, "list");
    assert!((14_000..40_000).contains(&n), "{n}");
    // SAMPLES is accepted and the answer does not depend on it.
    assert_eq!(
        c.cmd_str(&["MEMORY", "USAGE", "list", "SAMPLES", "0"]),
        c.cmd_str(&["MEMORY", "USAGE", "list"])
    );
}

#[test]
fn redis_cli_memkeys_and_bigkeys() {
    let server = start();
    let mut c = server.raw();
    c.cmd_str(&["SET", "s", &"x".repeat(500)]);
    c.cmd_str(&["RPUSH", "l", "a", "b", "c"]);
    c.cmd_str(&["HSET", "h", "f", "v"]);
    let port = server.port.to_string();
    for (flag, want) in [
        ("--memkeys", "Biggest string found '\"s\"' has "),
        ("--bigkeys", "Biggest string found '\"s\"' has 500 bytes"),
    ] {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &port, flag])
            .output()
            .expect("redis-cli runs");
        let printed = text(&out.stdout);
        assert!(printed.contains(want), "{flag}: {printed}");
        assert!(printed.contains("1 lists with"), "{flag}: {printed}");
        assert!(!printed.contains("Warning"), "{flag}: {printed}");
    }
}

#[test]
fn latency_replies_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "LATENCY",
        "LATENCY HELP",
        "LATENCY foo",
        "LATENCY HISTORY",
        "LATENCY HISTORY nope",
        "LATENCY GRAPH nope",
        "LATENCY RESET",
        "LATENCY RESET a b",
        "LATENCY LATEST x",
        "LATENCY DOCTOR x",
        "LATENCY DOCTOR",
        "LATENCY HISTOGRAM nosuchcommand",
        "CONFIG SET latency-monitor-threshold -1",
        "CONFIG GET latency-tracking",
        "CONFIG GET latency-monitor-threshold",
        "CONFIG SET latency-tracking-info-percentiles 101",
        "CONFIG SET latency-tracking no",
        "INFO latencystats",
        "CONFIG SET latency-tracking yes",
    ]);
    // A 30 ms script with the monitor at 1 ms: one `command` spike.
    p.script(&["CONFIG SET latency-monitor-threshold 1"]);
    let busy = "local t=redis.call('time') local s=t[1]*1000000+t[2] \
                while true do local n=redis.call('time') \
                if n[1]*1000000+n[2]-s > 30000 then break end end return 1";
    p.same(&["EVAL", busy, "0"]);
    let (mut a, mut b) = p.connect_again();
    for r in [&mut a, &mut b] {
        // Under load other commands may pass 1 ms too: look for this one.
        let latest = text(&r.cmd_str(&["LATENCY", "LATEST"]));
        assert!(latest.contains("*4\r\n$7\r\ncommand\r\n:"), "{latest}");
        let history = text(&r.cmd_str(&["LATENCY", "HISTORY", "command"]));
        assert!(
            history.starts_with('*') && history.contains("*2\r\n:"),
            "{history}"
        );
        let graph = text(&r.cmd_str(&["LATENCY", "GRAPH", "command"]));
        assert!(
            graph.contains("command - high ") && graph.contains(&"-".repeat(80)),
            "{graph}"
        );
        let doctor = text(&r.cmd_str(&["LATENCY", "DOCTOR"]));
        assert!(
            doctor.contains(". command: ") && doctor.contains(" latency spikes (average "),
            "{doctor}"
        );
        assert!(
            doctor.contains("- Check your Slow Log to understand"),
            "{doctor}"
        );
        let histogram = text(&r.cmd_str(&["LATENCY", "HISTOGRAM", "eval"]));
        assert!(
            histogram.starts_with(
                "*2\r\n$4\r\neval\r\n*4\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n*2\r\n"
            ),
            "{histogram}"
        );
        let info = text(&r.cmd_str(&["INFO", "latencystats"]));
        assert!(
            info.contains("latency_percentiles_usec_eval:p50="),
            "{info}"
        );
        assert_eq!(r.cmd_str(&["LATENCY", "RESET", "COMMAND"]), b":1\r\n");
    }
}

#[test]
fn debug_digest_equals_redis_for_the_same_data() {
    let mut p = debug_pair();
    p.script(&[
        "DEBUG DIGEST",
        "SET s hello",
        "SET n 12345",
        "SET big:str aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "APPEND s world",
        "RPUSH l a b c 1 2 3",
        "SADD si 1 2 3 100",
        "SADD ss x y z",
        "ZADD zs 1 a 2.5 b -3 c 10 7",
        "HSET h f1 v1 f2 v2 3 4",
        "XADD x 1-1 f v g w",
        "XADD x 2-5 a 1",
        "SET t v EX 1000",
        "SELECT 2",
        "SET other 1",
        "SELECT 0",
        "DEBUG DIGEST",
        "DEBUG DIGEST-VALUE s n l si ss zs h x t nokey",
        "DEBUG DIGEST-VALUE",
    ]);
    // Large encodings too: a hash table set, a skiplist, a big hash, a
    // long list.
    for i in 0..300 {
        let i = i.to_string();
        p.same(&["SADD", "bigset", &format!("m{i}")]);
        p.same(&["ZADD", "bigz", &i, &format!("m{i}")]);
        p.same(&["HSET", "bigh", &format!("f{i}"), &i]);
        p.same(&["RPUSH", "bigl", &format!("e{i}")]);
    }
    p.script(&[
        "DEBUG DIGEST",
        "DEBUG DIGEST-VALUE bigset bigz bigh bigl",
        "DEBUG POPULATE 100",
        "DEBUG POPULATE 10 pre 20",
        "DEBUG POPULATE 5 pre",
        "DEBUG POPULATE -1",
        "DEBUG POPULATE x",
        "DEBUG DIGEST",
        "DBSIZE",
        "GET pre:3",
    ]);
}

#[test]
fn debug_replies_match_redis() {
    // A process of its own: it sets list thresholds, which are process-wide.
    let mut p = Pair::of_processes(&["--enable-debug-command", "yes"]);
    p.script(&[
        "DEBUG",
        "DEBUG foo",
        "DEBUG OBJECT nokey",
        "DEBUG RELOAD FOO",
        "DEBUG SET-ACTIVE-EXPIRE x",
        "DEBUG SET-ACTIVE-EXPIRE 0",
        "DEBUG SET-ACTIVE-EXPIRE 1",
        "DEBUG SLEEP 0",
        "DEBUG LOG hello",
        "DEBUG PROTOCOL nope",
    ]);
    for t in [
        "string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push",
        "verbatim", "true", "false",
    ] {
        p.same(&["DEBUG", "PROTOCOL", t]);
    }
    p.both(&["HELLO", "3"]);
    for t in [
        "string", "integer", "double", "bignum", "null", "array", "set", "map", "verbatim", "true",
        "false",
    ] {
        p.same(&["DEBUG", "PROTOCOL", t]);
    }
    p.both(&["HELLO", "2"]);
    // A push or an attribute and the reply after it, in RESP3.
    let (mut a, mut b) = p.connect_again();
    let mut two = Vec::new();
    for r in [&mut a, &mut b] {
        r.cmd_str(&["HELLO", "3"]);
        let mut got = Vec::new();
        for t in ["push", "attrib"] {
            got.extend(r.cmd_str(&["DEBUG", "PROTOCOL", t]));
            got.extend(r.read_reply());
        }
        two.push(got);
    }
    assert_eq!(text(&two[0]), text(&two[1]));
    // OBJECT's fields are Redis's but for the address and the clock: the
    // address is a plain pointer, the serialized length is compressed as
    // in an RDB file, and a list has its quicklist's figures.
    let long = "a".repeat(100);
    p.script(&[
        "SET a 1",
        "SET b hello",
        &format!("SET big {long}"),
        "RPUSH l x 1 -1 1000 100000 helloworld",
        "SADD s 1",
        "CONFIG SET list-max-listpack-size 2",
        "CONFIG SET list-compress-depth 1",
        "RPUSH l2 a b c d e f g",
        "SETRANGE r 0 abc",
        "APPEND r2 hello",
    ]);
    let (mut a, mut b) = p.connect_again();
    for k in ["a", "b", "big", "l", "s", "l2"] {
        let fields = |r: &mut Raw| {
            let t = text(&r.cmd_str(&["DEBUG", "OBJECT", k]));
            let at = t.split(' ').nth(1).unwrap_or_default().to_string();
            assert!(t.starts_with("+Value at:0x"), "{t}");
            assert!(at[5..].bytes().all(|c| c.is_ascii_hexdigit()), "{t}");
            t.split(' ')
                .skip(2)
                .filter(|w| !w.starts_with("lru"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(fields(&mut a), fields(&mut b), "{k}");
    }
    for cmd in [
        "DEBUG SDSLEN a",
        "DEBUG SDSLEN b",
        "DEBUG SDSLEN big",
        "DEBUG SDSLEN r",
        "DEBUG SDSLEN r2",
        "DEBUG SDSLEN l",
        "DEBUG SDSLEN nokey",
        "DEBUG LEAK abc",
        "DEBUG CLIENT-EVICTION",
        "DEBUG CONFIG-REWRITE-FORCE-ALL",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(text(&a.cmd_str(&args)), text(&b.cmd_str(&args)), "{cmd}");
    }
    // The client eviction buckets: one client per connection, in the
    // bucket of its memory (each server's own figure).
    for r in [&mut a, &mut b] {
        r.cmd_str(&["CONFIG", "SET", "maxmemory-clients", "100mb"]);
        let t = text(&r.cmd_str(&["DEBUG", "CLIENT-EVICTION"]));
        assert!(
            t.contains("\r\nbucket          0 -      32767: tot-mem:"),
            "{t}"
        );
        assert!(
            t.contains("\nbucket 4294967296+            : tot-mem:"),
            "{t}"
        );
        let clients: usize = t
            .split("clients: ")
            .skip(1)
            .map(|c| {
                c.split('\n')
                    .next()
                    .unwrap_or_default()
                    .parse::<usize>()
                    .unwrap_or(0)
            })
            .sum();
        assert_eq!(clients, 3, "{t}");
        r.cmd_str(&["CONFIG", "SET", "maxmemory-clients", "0"]);
    }
    // RELOAD keeps the data set (saved into the server's directory).
    let dir = text(&a.cmd_str(&["CONFIG", "GET", "dir"]));
    let dir = dir.split("\r\n").nth(4).unwrap_or_default().to_string();
    std::fs::create_dir_all(&dir).expect("the server's directory");
    let before = a.cmd_str(&["DEBUG", "DIGEST"]);
    assert_eq!(a.cmd_str(&["DEBUG", "RELOAD"]), b"+OK\r\n");
    assert_eq!(a.cmd_str(&["DEBUG", "DIGEST"]), before);
    assert_eq!(b.cmd_str(&["DEBUG", "RELOAD"]), b"+OK\r\n");
    assert_eq!(b.cmd_str(&["DEBUG", "DIGEST"]), before);
    // Off by default, with Redis's words.
    let mut p = Pair::new();
    p.script(&["DEBUG DIGEST", "DEBUG HELP"]);
}

#[test]
fn module_replies_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "MODULE",
        "MODULE LIST",
        "MODULE LIST x",
        "MODULE HELP",
        "MODULE foo",
        "MODULE LOAD /nonexistent.so",
        "MODULE LOADEX /nonexistent.so",
        "MODULE UNLOAD foo",
    ]);
    let mut p = Pair::new_with(
        |c| {
            let (param, _) =
                ferrokv::config::params::lookup(b"enable-module-command").expect("a parameter");
            c.set_value(param, b"yes").expect("a valid value");
        },
        &["--enable-module-command", "yes"],
    );
    p.script(&[
        "MODULE LOAD /nonexistent.so",
        "MODULE UNLOAD foo",
        "MODULE LIST",
    ]);
}

/// The introspection commands inside MULTI and from scripts, as Redis
/// rules them (SLOWLOG and LATENCY are not for scripts; MEMORY USAGE is).
#[test]
fn introspection_in_multi_and_scripts_matches_redis() {
    let mut p = Pair::new();
    p.script(&[
        "SET k v",
        "MULTI",
        "SLOWLOG LEN",
        "MEMORY USAGE nokey",
        "LATENCY RESET",
        "MODULE LIST",
        "EXEC",
    ]);
    for script in [
        "return redis.call('slowlog','len')",
        "return redis.call('latency','latest')",
        "return redis.call('memory','usage','nokey')",
        "return redis.call('monitor')",
        "return redis.call('debug','digest')",
        "return redis.call('module','list')",
    ] {
        p.same(&["EVAL", script, "0"]);
    }
}

/// DEBUG SEGFAULT and DEBUG PANIC end the process of the matching signal
/// after writing the crash report to the log, with the sections Redis's
/// has, on both servers.
#[test]
fn debug_segfault_and_panic_write_the_crash_report() {
    use std::os::unix::process::ExitStatusExt;
    for (sub, signal, head) in [
        ("segfault", 11, "crashed by signal: 11"),
        (
            "panic",
            6,
            "Guru Meditation: DEBUG PANIC called at Unix time",
        ),
        ("assert", 6, "'1 == 2' is not true"),
        (
            "oom",
            6,
            "aborting for OUT OF MEMORY. Allocating 9223372036854775807 bytes!",
        ),
    ] {
        for program in [env!("CARGO_BIN_EXE_ferrokv"), "redis-server"] {
            let log = unique_temp_path("crash");
            let log_arg = log.to_str().expect("path").to_string();
            // A directory of its own, so no stray dump.rdb is loaded.
            let dir = crate::persist::data::TempDir::new("crash-dir");
            let (child, port) = spawn_on_free_port(|port| {
                let mut cmd = server_command(program, port);
                cmd.args(["--enable-debug-command", "yes", "--logfile", &log_arg]);
                cmd.args(["--dir", &dir.s()]);
                // redis-server's fast memory test after the report reads
                // regions other threads may unmap: under load it died of
                // SIGSEGV instead of SIGABRT (1 in 60 asserts).
                cmd.args(["--crash-memcheck-enabled", "no"]);
                cmd
            });
            let mut child = ChildGuard(child);
            let mut r = Raw::connect(port);
            assert_eq!(r.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
            r.send(&encode(&[b"DEBUG", sub.as_bytes()]));
            assert!(
                r.is_closed(),
                "{program}: DEBUG {sub} left the connection open"
            );
            let mut status = None;
            assert!(
                wait_until(Duration::from_secs(10), || {
                    status = child.0.try_wait().ok().flatten();
                    status.is_some()
                }),
                "{program} did not exit"
            );
            assert_eq!(
                status.and_then(|s| s.signal()),
                Some(signal),
                "{program} {sub}"
            );
            let text = std::fs::read_to_string(&log).expect("the log");
            for want in [
                "=== REDIS BUG REPORT START: Cut & paste starting from here ===",
                head,
                "------ STACK TRACE ------",
                "------ INFO OUTPUT ------",
                "redis_version:7.0.15",
                "keys=1,expires=0",
                "------ CLIENT LIST OUTPUT ------",
                "------ CURRENT CLIENT INFO ------",
                "cmd=debug",
                "argv[0]: '\"DEBUG\"'",
                &format!("argv[1]: '\"{sub}\"'"),
                "=== REDIS BUG REPORT END. Make sure to include from START to END. ===",
            ] {
                assert!(
                    text.contains(want),
                    "{program} {sub}: no {want:?} in\n{text}"
                );
            }
            if program != "redis-server" {
                assert!(text.contains("ferrokv::cmd::debug::debug"), "{text}");
            }
            if sub == "assert" {
                for want in [
                    "=== ASSERTION FAILED CLIENT CONTEXT ===",
                    "client->argv[1] = \"assert\" (refcount: 1)",
                    "=== ASSERTION FAILED OBJECT CONTEXT ===",
                    "=== ASSERTION FAILED ===",
                ] {
                    assert!(text.contains(want), "{program}: no {want:?} in\n{text}");
                }
            }
            let _ = std::fs::remove_file(&log);
        }
    }
}

/// The DEBUG subcommands of the encodings, the AOF and the reply buffers,
/// as redis-server answers them.
#[test]
fn debug_encoding_and_buffer_subcommands_match_redis() {
    // A process of its own: the list packing threshold is process-wide.
    let mut p = Pair::of_processes(&["--enable-debug-command", "yes", "--appendonly", "yes"]);
    p.script(&[
        "HSET h a 1 b 2",
        "ZADD z 1 a 2 b",
        "RPUSH l a b c",
        "SET s v",
        "DEBUG LISTPACK h",
        "DEBUG LISTPACK z",
        "DEBUG LISTPACK l",
        "DEBUG LISTPACK s",
        "DEBUG LISTPACK nokey",
        "DEBUG LISTPACK",
        "DEBUG QUICKLIST l",
        "DEBUG QUICKLIST l 1",
        "DEBUG QUICKLIST h",
        "DEBUG QUICKLIST nokey",
        "DEBUG QUICKLIST-PACKED-THRESHOLD 0",
        "DEBUG QUICKLIST-PACKED-THRESHOLD 1b",
        "DEBUG QUICKLIST-PACKED-THRESHOLD 5gb",
        "DEBUG QUICKLIST-PACKED-THRESHOLD x",
        "DEBUG QUICKLIST-PACKED-THRESHOLD -1",
        "RPUSH big aaaa bbbb cccc",
        "LPUSH big zzzz",
        "LRANGE big 0 -1",
        "LINSERT big BEFORE bbbb mmmm",
        "LRANGE big 0 -1",
        "LPOP big 2",
        "DEBUG QUICKLIST-PACKED-THRESHOLD 1gb",
        "DEBUG STRINGMATCH-TEST",
        "DEBUG REPLYBUFFER PEAK-RESET-TIME never",
        "DEBUG REPLYBUFFER PEAK-RESET-TIME reset",
        "DEBUG REPLYBUFFER PEAK-RESET-TIME 100",
        "DEBUG REPLYBUFFER PEAK-RESET-TIME x",
        "DEBUG REPLYBUFFER RESIZING 0",
        "DEBUG REPLYBUFFER RESIZING 1",
        "DEBUG REPLYBUFFER FOO 1",
        "DEBUG REPLYBUFFER RESIZING",
        "DEBUG ERROR oops",
        "DEBUG ERROR WRONGTYPE custom",
        "DEBUG DIGEST",
        "DEBUG LOADAOF",
        "DEBUG DIGEST",
        "DBSIZE",
        "LRANGE l 0 -1",
    ]);
}
