//! INFO, DBSIZE, FLUSHDB/FLUSHALL, TIME, LASTSAVE and SHUTDOWN against
//! redis-server (mirrors Redis's unit/info and unit/other tests).

use std::time::Duration;

use crate::support::*;

/// The field names of an INFO reply, section headers included, without
/// the per-command/per-error/per-db lines whose names depend on history.
fn field_names(reply: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(reply).into_owned();
    let body = text.split_once("\r\n").map_or("", |(_, b)| b);
    body.split("\r\n")
        .filter(|l| !l.is_empty())
        .map(|l| l.split(':').next().unwrap_or("").to_string())
        .filter(|n| {
            !n.starts_with("cmdstat_")
                && !n.starts_with("errorstat_")
                && !n.starts_with("latency_percentiles_usec_")
                && !n.starts_with("db")
                && n != "ferrokv_version"
        })
        .collect()
}

#[test]
fn info_field_names_match_redis() {
    let mut p = Pair::new();
    p.same(&["SET", "k", "v"]);
    let sections: &[&[&str]] = &[
        &[],
        &["server"],
        &["clients"],
        &["memory"],
        &["persistence"],
        &["stats"],
        &["replication"],
        &["cpu"],
        &["keyspace"],
        &["errorstats"],
        &["commandstats"],
        &["cluster"],
        &["modules"],
        &["all"],
        &["everything"],
        &["default"],
        &["SERVER", "keyspace"],
        &["nosuchsection"],
    ];
    for s in sections {
        let mut args = vec!["INFO"];
        args.extend_from_slice(s);
        let (ours, theirs) = p.both(&args);
        assert_eq!(field_names(&ours), field_names(&theirs), "INFO {s:?}");
    }
    let (ours, _) = p.both(&["INFO", "server"]);
    let text = String::from_utf8_lossy(&ours).into_owned();
    assert!(text.contains("\r\nredis_version:7.0.15\r\n"), "{text}");
    assert!(text.contains(&format!(
        "\r\nferrokv_version:{}\r\n",
        env!("CARGO_PKG_VERSION")
    )));
}

#[test]
fn info_keyspace_and_errorstats_lines() {
    let mut p = Pair::new();
    p.script(&[
        "SET a 1",
        "SET b 2 EX 100",
        "SELECT 2",
        "SET c 3",
        "SELECT 0",
    ]);
    // avg_ttl is 0 until the active expiry cycle has sampled the key, which
    // either server may or may not have done yet: it is compared as a field.
    let (ours, theirs) = p.both(&["INFO", "keyspace"]);
    let masked = |reply: &[u8]| {
        let text = String::from_utf8_lossy(reply).into_owned();
        let lines: Vec<String> = text
            .split("\r\n")
            .map(|line| match line.find(",avg_ttl=") {
                Some(at) => {
                    let ttl: u64 = line[at + 9..].parse().unwrap_or(u64::MAX);
                    assert!(ttl == 0 || (90_000..=100_000).contains(&ttl), "{line}");
                    line[..at].to_string()
                }
                None => line.to_string(),
            })
            .collect();
        lines[1..].join("\r\n")
    };
    assert_eq!(masked(&ours), masked(&theirs));
    p.same(&["NOSUCHCMD"]);
    p.same(&["INFO", "errorstats"]);
}

#[test]
fn info_resp3_is_verbatim() {
    let server = start();
    let mut c = server.raw();
    let r = c.cmd_str(&["INFO", "server"]);
    assert!(r.starts_with(b"$"), "RESP2 INFO is a bulk string");
    if c.cmd_str(&["HELLO", "3"]).starts_with(b"-") {
        // HELLO is served by the connection family; without it there is no
        // RESP3 to check here.
        return;
    }
    let r = c.cmd_str(&["INFO", "server"]);
    let text = String::from_utf8_lossy(&r).into_owned();
    assert!(text.starts_with('='), "{text}");
    assert!(text.contains("\r\ntxt:# Server\r\n"), "{text}");
}

#[test]
fn dbsize_flushdb_flushall_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "SET a 1",
        "SET b 2",
        "SELECT 1",
        "SET c 3",
        "DBSIZE",
        "FLUSHDB",
        "DBSIZE",
        "SELECT 0",
        "DBSIZE",
        "FLUSHDB foo",
        "FLUSHDB ASYNC extra",
        "FLUSHALL foo",
        "FLUSHALL ASYNC",
        "DBSIZE",
        "SET a 1",
        "FLUSHALL SYNC",
        "DBSIZE",
        "SET a 1",
        "FLUSHDB async",
        "DBSIZE",
        "FLUSHALL",
        "DBSIZE a",
    ]);
}

#[test]
fn flushall_async_frees_a_big_keyspace() {
    let server = start();
    let mut c = server.raw();
    let mut pipeline = Vec::new();
    for i in 0..20_000 {
        pipeline.extend(encode(&[b"SET", format!("key:{i}").as_bytes(), b"value"]));
    }
    c.send(&pipeline);
    for _ in 0..20_000 {
        c.read_reply();
    }
    assert_eq!(c.cmd_str(&["DBSIZE"]), b":20000\r\n");
    assert_eq!(c.cmd_str(&["FLUSHALL", "ASYNC"]), b"+OK\r\n");
    assert_eq!(c.cmd_str(&["DBSIZE"]), b":0\r\n");
}

#[test]
fn time_and_lastsave_shape() {
    let mut p = Pair::new();
    let (ours, theirs) = p.both(&["TIME"]);
    for r in [&ours, &theirs] {
        let s = String::from_utf8_lossy(r).into_owned();
        let parts: Vec<&str> = s.split("\r\n").collect();
        assert_eq!(parts[0], "*2", "{s}");
        let secs: u64 = parts[2].parse().expect("seconds");
        let usec: u64 = parts[4].parse().expect("micros");
        assert!(usec < 1_000_000);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        assert!(secs.abs_diff(now) <= 2);
    }
    let (ours, theirs) = p.both(&["LASTSAVE"]);
    assert!(ours.starts_with(b":") && theirs.starts_with(b":"));
    p.same(&["TIME", "x"]);
    p.same(&["LASTSAVE", "x"]);
}

#[test]
fn shutdown_argument_errors_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "SHUTDOWN ABORT",
        "SHUTDOWN SAVE NOSAVE",
        "SHUTDOWN foo",
        "SHUTDOWN ABORT NOW",
        "SHUTDOWN NOSAVE ABORT",
    ]);
}

/// SHUTDOWN closes the listening sockets before any connection, as Redis
/// exits: a client that saw its link close cannot connect again (the suite's
/// shutdown unit checks for "connection refused" at once).
#[test]
fn shutdown_stops_an_in_process_server() {
    for _ in 0..5 {
        let server = start();
        let mut c = server.raw();
        assert_eq!(c.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
        let mut other = server.raw();
        // Make sure it was accepted: one still in the listen backlog is reset.
        assert_eq!(other.cmd_str(&["PING"]), b"+PONG\r\n");
        c.send(&encode(&[b"SHUTDOWN", b"NOSAVE"]));
        assert!(c.is_closed());
        let refused = std::net::TcpStream::connect(("127.0.0.1", server.port)).is_err();
        assert!(refused, "a connection after SHUTDOWN's link closed");
        assert!(other.is_closed());
    }
}

#[test]
fn info_commandstats_and_latencystats_lines() {
    let mut p = Pair::new();
    p.script(&["SET a 1", "GET a", "GET a", "DBSIZE"]);
    for section in ["commandstats", "latencystats"] {
        let (ours, theirs) = p.both(&["INFO", section]);
        let names = |r: &[u8]| {
            let text = String::from_utf8_lossy(r).into_owned();
            let mut v: Vec<String> = text
                .split("\r\n")
                .skip(1)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|l| {
                    let (name, value) = l.split_once(':').expect("field");
                    // The value's keys, without the numbers.
                    let keys: Vec<&str> = value
                        .split(',')
                        .map(|kv| kv.split('=').next().unwrap_or(""))
                        .collect();
                    format!("{name}:{}", keys.join(","))
                })
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&ours), names(&theirs), "INFO {section}");
    }
    let (ours, _) = p.both(&["INFO", "commandstats"]);
    let text = String::from_utf8_lossy(&ours).into_owned();
    assert!(text.contains("\r\ncmdstat_get:calls=2,"), "{text}");
}

/// A standalone server's answers to Redis Cluster's commands: the same
/// error for every CLUSTER subcommand, READONLY, READWRITE and ASKING,
/// from clients, MULTI and scripts alike.
#[test]
fn cluster_commands_in_standalone_mode_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "CLUSTER INFO",
        "CLUSTER NODES",
        "CLUSTER SLOTS",
        "CLUSTER SHARDS",
        "CLUSTER MYID",
        "CLUSTER KEYSLOT foo",
        "CLUSTER COUNTKEYSINSLOT 1",
        "CLUSTER GETKEYSINSLOT 1 1",
        "CLUSTER ADDSLOTS 1",
        "CLUSTER RESET",
        "CLUSTER HELP",
        "CLUSTER",
        "CLUSTER NOSUCH",
        "CLUSTER INFO extra",
        "READONLY",
        "READWRITE",
        "ASKING",
        "READONLY x",
        "MULTI",
        "CLUSTER INFO",
        "READONLY",
        "EXEC",
    ]);
    p.same(&["EVAL", "return redis.call('cluster','info')", "0"]);
    p.same(&["EVAL", "return redis.pcall('readonly')", "0"]);
    p.same(&["COMMAND", "INFO", "readonly", "readwrite", "asking"]);
}

/// Clients held by CLIENT PAUSE WRITE count as blocked (INFO and CLIENT
/// LIST `b` with the held command), as Redis counts them; an EXEC whose
/// transaction writes and an EVAL are held, EVAL_RO and reads are not.
#[test]
fn clients_held_by_client_pause_match_redis() {
    let mut p = Pair::new();
    let blocked = |p: &mut Pair, n: usize| {
        let want = format!("blocked_clients:{n}\r\n");
        assert!(
            wait_until(Duration::from_secs(5), || {
                let (a, b) = p.both(&["INFO", "clients"]);
                String::from_utf8_lossy(&a).contains(&want)
                    && String::from_utf8_lossy(&b).contains(&want)
            }),
            "{want}"
        );
    };
    let (mut tx_a, mut tx_b) = p.connect_again();
    for t in [&mut tx_a, &mut tx_b] {
        t.cmd_str(&["MULTI"]);
        t.cmd_str(&["SET", "y", "1"]);
    }
    p.same(&["CLIENT", "PAUSE", "60000", "WRITE"]);
    let (mut set_a, mut set_b) = p.connect_again();
    let (mut eval_a, mut eval_b) = p.connect_again();
    for (c, args) in [
        (&mut set_a, &["SET", "x", "1"][..]),
        (&mut set_b, &["SET", "x", "1"]),
        (&mut tx_a, &["EXEC"]),
        (&mut tx_b, &["EXEC"]),
        (&mut eval_a, &["EVAL", "return 1", "0"]),
        (&mut eval_b, &["EVAL", "return 1", "0"]),
    ] {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        c.send(&encode(&a));
    }
    blocked(&mut p, 3);
    p.same(&["EVAL_RO", "return 2", "0"]);
    p.same(&["GET", "x"]);
    // The held clients: flags and command, as CLIENT LIST shows them.
    let held = |r: &[u8]| -> Vec<String> {
        let mut v: Vec<String> = String::from_utf8_lossy(r)
            .lines()
            .filter(|l| {
                l.split(' ')
                    .any(|f| f.strip_prefix("flags=").is_some_and(|fl| fl.contains('b')))
            })
            .map(|l| {
                l.split(' ')
                    .filter(|f| f.starts_with("flags=") || f.starts_with("cmd="))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        v.sort();
        v
    };
    let (a, b) = p.both(&["CLIENT", "LIST"]);
    assert_eq!(held(&a), held(&b));
    assert_eq!(held(&a).len(), 3, "{:?}", held(&a));
    p.same(&["CLIENT", "UNPAUSE"]);
    for (x, y) in [
        (&mut set_a, &mut set_b),
        (&mut tx_a, &mut tx_b),
        (&mut eval_a, &mut eval_b),
    ] {
        assert_eq!(x.read_reply(), y.read_reply());
    }
    blocked(&mut p, 0);
}

/// Under CLIENT PAUSE WRITE, scripts declared `no-writes` (EVAL with a
/// shebang, EVALSHA of one, FCALL of such a function, and a MULTI that
/// queues only them) run at once, as in Redis, whose getCommandFlags
/// takes a script's declared flags for the command's.
#[test]
fn no_writes_scripts_are_not_held_by_client_pause_write_like_redis() {
    let mut p = Pair::new();
    p.same(&["SET", "x", "y"]);
    p.same(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=f1\nredis.register_function{function_name='f1', callback=function() return 'hello' end, flags={'no-writes'}}",
    ]);
    p.same(&["CLIENT", "PAUSE", "60000", "WRITE"]);
    let (mut a, mut b) = p.connect_again();
    let ro = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])";
    let mut run = |args: &[&str]| {
        let x = a.cmd_str(args);
        assert_eq!(x, b.cmd_str(args), "{args:?}");
        x
    };
    assert_eq!(run(&["EVAL", ro, "1", "x"]), b"$1\r\ny\r\n");
    let sha = String::from_utf8(run(&["SCRIPT", "LOAD", ro])).expect("text");
    let sha = sha.lines().nth(1).expect("a sha").to_string();
    run(&["EVALSHA", &sha, "1", "x"]);
    assert_eq!(run(&["FCALL", "f1", "0"]), b"$5\r\nhello\r\n");
    run(&["MULTI"]);
    run(&["EVAL", ro, "1", "x"]);
    assert_eq!(run(&["EXEC"]), b"*1\r\n$1\r\ny\r\n");
    p.same(&["CLIENT", "UNPAUSE"]);
}

/// While clients are paused, keys whose TTL passed read as gone but are not
/// deleted (neither on access nor by the active cycle); once unpaused,
/// access deletes them: `expired_keys` as redis-server counts it.
#[test]
fn expired_keys_stay_while_clients_are_paused_like_redis() {
    let mut p = Pair::new();
    let expired = |p: &mut Pair| -> (String, String) {
        let (a, b) = p.both(&["INFO", "stats"]);
        let field = |r: &[u8]| {
            String::from_utf8_lossy(r)
                .lines()
                .find(|l| l.starts_with("expired_keys:"))
                .unwrap_or("")
                .to_string()
        };
        (field(&a), field(&b))
    };
    let before = expired(&mut p);
    p.same(&["MULTI"]);
    p.same(&["SET", "foo", "bar", "PX", "10"]);
    p.same(&["SET", "bar", "foo", "PX", "10"]);
    p.same(&["CLIENT", "PAUSE", "50000", "WRITE"]);
    p.same(&["EXEC"]);
    assert!(wait_until(Duration::from_secs(5), || {
        p.both(&["MGET", "foo", "bar"])
            == (
                b"*2\r\n$-1\r\n$-1\r\n".to_vec(),
                b"*2\r\n$-1\r\n$-1\r\n".to_vec(),
            )
    }));
    // Let a few active expiry cycles pass, by the server's clock.
    let server_ms = |p: &mut Pair| -> u64 {
        let t = String::from_utf8_lossy(&p.ours.cmd_str(&["TIME"])).to_string();
        let v: Vec<u64> = t.lines().filter_map(|l| l.parse().ok()).collect();
        v[0] * 1000 + v[1] / 1000
    };
    let t0 = server_ms(&mut p);
    assert!(wait_until(Duration::from_secs(5), || server_ms(&mut p) >= t0 + 350));
    assert_eq!(expired(&mut p), before);
    p.same(&["DBSIZE"]);
    p.same(&["CLIENT", "UNPAUSE"]);
    p.same(&["GET", "foo"]);
    p.same(&["GET", "bar"]);
    let (a, b) = expired(&mut p);
    assert_eq!(a, b);
    assert_ne!(a, before.0);
}

/// `used_memory` of INFO memory.
fn used_memory(r: &[u8]) -> i64 {
    String::from_utf8_lossy(r)
        .split("\r\n")
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.parse().ok())
        .expect("used_memory")
}

/// After UNLINK of a large value, and after FLUSHALL ASYNC, used_memory
/// comes back to where it was on both servers (lazy freeing finishes
/// within moments). ferrokv runs as its own process: the allocator whose
/// statistics INFO reports is the binary's.
#[test]
fn memory_returns_after_unlink_and_flushall_async_like_redis() {
    let ours = spawn_ferrokv_process();
    let redis = spawn_redis();
    let big = vec![b'x'; 8 << 20];
    let mut members: Vec<Vec<u8>> = vec![b"SADD".to_vec(), b"set".to_vec()];
    members.extend((0..100_000).map(|i| format!("member:{i}").into_bytes()));
    let sadd: Vec<&[u8]> = members.iter().map(Vec::as_slice).collect();
    for port in [ours.port, redis.port] {
        let mut r = Raw::connect(port);
        for flush in [false, true] {
            let base = used_memory(&r.cmd_str(&["INFO", "memory"]));
            assert_eq!(r.cmd(&[b"SET", b"str", &big]), b"+OK\r\n");
            assert_eq!(r.cmd(&sadd), b":100000\r\n");
            let grown = used_memory(&r.cmd_str(&["INFO", "memory"]));
            assert!(grown > base + (8 << 20), "port {port}: {base} -> {grown}");
            if flush {
                assert_eq!(r.cmd_str(&["FLUSHALL", "ASYNC"]), b"+OK\r\n");
            } else {
                assert_eq!(r.cmd_str(&["UNLINK", "str", "set"]), b":2\r\n");
            }
            let mut now = grown;
            let back = wait_until(Duration::from_secs(5), || {
                now = used_memory(&r.cmd_str(&["INFO", "memory"]));
                now < base + (2 << 20)
            });
            assert!(
                back,
                "port {port} flush {flush}: {base} -> {grown} -> {now}"
            );
        }
    }
}

/// LOLWUT: the version line, and the drawings of versions 5 and 6. Their
/// random parts differ from run to run in Redis too, so the deterministic
/// ones (Schotter's first two rows, errors, the version line) are compared
/// byte for byte, and the random ones by shape.
#[test]
fn lolwut_as_redis() {
    let mut p = Pair::new();
    for line in [
        "LOLWUT",
        "LOLWUT 10 20",
        "LOLWUT VERSION",
        "LOLWUT VERSION 7",
        "LOLWUT VERSION 4",
        "LOLWUT VERSION -1",
        "LOLWUT VERSION x",
        "LOLWUT VERSION 5 x",
        "LOLWUT VERSION 6 10 x",
        "LOLWUT VERSION 5 66 8 2",
        "LOLWUT VERSION 5 20 3 1",
        "LOLWUT VERSION 5 0 0 0",
    ] {
        p.same(&line.split(' ').collect::<Vec<_>>());
    }
    // RESP3: verbatim text.
    p.both(&["HELLO", "3"]);
    p.same(&["LOLWUT", "VERSION", "5", "30", "4", "2"]);
    for line in ["LOLWUT VERSION 5 40 5 9", "LOLWUT VERSION 6 30 12"] {
        let (ours, theirs) = p.both(&line.split(' ').collect::<Vec<_>>());
        // Characters per line; for version 6, cells (one reset each).
        let shape = |r: &[u8]| {
            let text = String::from_utf8_lossy(r).into_owned();
            let cells = |l: &str| match l.matches("\x1b[0m").count() {
                0 => l.chars().count(),
                n => n,
            };
            text.lines().map(cells).collect::<Vec<usize>>()
        };
        assert_eq!(shape(&ours), shape(&theirs), "{line}");
    }
}

/// Lazy freeing counts as Redis's: UNLINK of a set past the effort
/// threshold is freed in the background (one object), a small one in
/// place; FLUSHALL ASYNC counts its keys; CONFIG RESETSTAT clears the
/// freed count. Both servers end with the same INFO fields.
#[test]
fn lazyfree_counters_match_redis() {
    let ours_srv = spawn_ferrokv_process();
    let theirs_srv = spawn_redis();
    let info_field = |raw: &mut Raw, name: &str| -> u64 {
        let text = String::from_utf8_lossy(&raw.cmd_str(&["INFO", "memory"])).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(u64::MAX)
    };
    for port in [ours_srv.port, theirs_srv.port] {
        let mut c = Raw::connect(port);
        let members: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
        let mut args = vec!["SADD", "big"];
        args.extend(members.iter().map(String::as_str));
        assert_eq!(c.cmd_str(&args), b":200\r\n");
        assert_eq!(c.cmd_str(&["SADD", "small", "a", "b"]), b":2\r\n");
        assert_eq!(c.cmd_str(&["CONFIG", "RESETSTAT"]), b"+OK\r\n");
        assert_eq!(c.cmd_str(&["UNLINK", "big", "small", "none"]), b":2\r\n");
        assert!(wait_until(Duration::from_secs(10), || {
            info_field(&mut c, "lazyfree_pending_objects") == 0
        }));
        assert_eq!(info_field(&mut c, "lazyfreed_objects"), 1, "port {port}");
        // DEL frees in place unless lazyfree-lazy-user-del says otherwise.
        assert_eq!(c.cmd_str(&args), b":200\r\n");
        assert_eq!(c.cmd_str(&["DEL", "big"]), b":1\r\n");
        assert_eq!(info_field(&mut c, "lazyfreed_objects"), 1, "port {port}");
        assert_eq!(
            c.cmd_str(&["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"]),
            b"+OK\r\n"
        );
        assert_eq!(c.cmd_str(&args), b":200\r\n");
        // Inside MULTI the same rule holds.
        assert_eq!(c.cmd_str(&["MULTI"]), b"+OK\r\n");
        assert_eq!(c.cmd_str(&["DEL", "big"]), b"+QUEUED\r\n");
        assert_eq!(c.cmd_str(&["EXEC"]), b"*1\r\n:1\r\n");
        assert!(wait_until(Duration::from_secs(10), || {
            info_field(&mut c, "lazyfreed_objects") == 2
        }));
        for i in 0..10 {
            c.cmd_str(&["SET", &format!("k{i}"), "v"]);
        }
        assert_eq!(c.cmd_str(&["FLUSHALL", "ASYNC"]), b"+OK\r\n");
        assert!(
            wait_until(Duration::from_secs(10), || {
                info_field(&mut c, "lazyfreed_objects") == 12
            }),
            "port {port}: {}",
            info_field(&mut c, "lazyfreed_objects")
        );
        assert_eq!(c.cmd_str(&["CONFIG", "RESETSTAT"]), b"+OK\r\n");
        assert_eq!(info_field(&mut c, "lazyfreed_objects"), 0);
    }
}

/// `lazyfree-lazy-server-del` frees what commands delete or overwrite in
/// the background (SET over a large set, a STORE command's destination,
/// RENAME's target), and `lazyfree-lazy-expire` what EXPIRE in the past
/// deletes, counted as Redis counts them step by step.
#[test]
fn lazy_server_del_and_expire_count_as_redis() {
    let ours_srv = spawn_ferrokv_process();
    let theirs_srv = spawn_redis();
    let freed = |raw: &mut Raw| -> u64 {
        let text = String::from_utf8_lossy(&raw.cmd_str(&["INFO", "memory"])).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix("lazyfreed_objects:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(u64::MAX)
    };
    let mut counts = Vec::new();
    for port in [ours_srv.port, theirs_srv.port] {
        let mut c = Raw::connect(port);
        let members: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
        let fill = |c: &mut Raw, key: &str| {
            c.cmd_str(&["DEL", key]);
            let mut args = vec!["SADD", key];
            args.extend(members.iter().map(String::as_str));
            assert_eq!(c.cmd_str(&args), b":200\r\n");
        };
        let mut seen = Vec::new();
        let mut step = |c: &mut Raw, cmd: &[&str]| {
            c.cmd_str(cmd);
            let mut last = u64::MAX;
            // The background thread may still be freeing: wait until the
            // count stops moving.
            wait_until(Duration::from_secs(10), || {
                let now = freed(c);
                let settled = now == last;
                last = now;
                settled
            });
            seen.push((cmd.join(" "), last));
        };
        // Off (the default): everything in place.
        fill(&mut c, "big");
        step(&mut c, &["SET", "big", "x"]);
        for (name, value) in [
            ("lazyfree-lazy-server-del", "yes"),
            ("lazyfree-lazy-expire", "yes"),
        ] {
            assert_eq!(c.cmd_str(&["CONFIG", "SET", name, value]), b"+OK\r\n");
        }
        fill(&mut c, "big");
        step(&mut c, &["SET", "big", "x"]);
        fill(&mut c, "big");
        fill(&mut c, "other");
        step(&mut c, &["RENAME", "other", "big"]);
        step(&mut c, &["SUNIONSTORE", "big", "none"]);
        fill(&mut c, "big");
        step(&mut c, &["SINTERSTORE", "big", "big", "none"]);
        fill(&mut c, "big");
        step(&mut c, &["EXPIRE", "big", "-1"]);
        fill(&mut c, "big");
        step(&mut c, &["SET", "small", "1"]);
        step(&mut c, &["SET", "small", "2"]);
        counts.push(seen);
    }
    assert_eq!(counts[0], counts[1]);
    assert_eq!(counts[0][0].1, 0, "{:?}", counts[0]);
    assert!(
        counts[0].last().is_some_and(|s| s.1 >= 4),
        "{:?}",
        counts[0]
    );
}

/// `activedefrag yes` is refused as redis-server built without its own
/// jemalloc refuses it: at CONFIG SET, and at start with exit status 1.
#[test]
fn activedefrag_is_refused_as_debians_redis_refuses_it() {
    let ours_srv = spawn_ferrokv_process();
    let theirs_srv = spawn_redis();
    let (mut o, mut t) = (Raw::connect(ours_srv.port), Raw::connect(theirs_srv.port));
    for args in [
        &["CONFIG", "SET", "activedefrag", "yes"][..],
        &["CONFIG", "SET", "activedefrag", "no"],
        &["CONFIG", "GET", "activedefrag"],
        &["CONFIG", "SET", "activedefrag", "maybe"],
    ] {
        assert_eq!(
            String::from_utf8_lossy(&o.cmd_str(args)),
            String::from_utf8_lossy(&t.cmd_str(args)),
            "{args:?}"
        );
    }
    let ours = std::process::Command::new(env!("CARGO_BIN_EXE_ferrokv"))
        .args(["--port", "0", "--activedefrag", "yes"])
        .output()
        .expect("runs");
    assert_eq!(ours.status.code(), Some(1));
    let text =
        String::from_utf8_lossy(&ours.stderr).into_owned() + &String::from_utf8_lossy(&ours.stdout);
    assert!(
        text.contains("Active defragmentation cannot be enabled"),
        "{text}"
    );
}

/// DEBUG HTSTATS, HTSTATS-KEY, MALLCTL and MALLCTL-STR answer as Redis's:
/// the keyspace table's size and element count for the same keys, the
/// refusals, jemalloc's page size, a write-only mallctl.
#[test]
#[cfg_attr(
    ferrokv_sanitize,
    ignore = "DEBUG MALLCTL reads jemalloc, which the sanitizer build does not link"
)]
fn debug_table_and_allocator_subcommands_answer_as_redis() {
    // A process of its own: it sets `set-max-intset-entries`, process-wide.
    let mut p = Pair::of_processes(&["--enable-debug-command", "yes"]);
    p.same(&["DEBUG", "POPULATE", "1000"]);
    let (a, b) = p.both(&["DEBUG", "HTSTATS", "0"]);
    let head = |r: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(r)
            .lines()
            .filter(|l| {
                l.contains("table size") || l.contains("number of elements") || l.starts_with("[D")
            })
            .take(3)
            .map(str::to_string)
            .collect()
    };
    assert_eq!(head(&a), head(&b));
    assert_eq!(head(&a).len(), 3, "{}", String::from_utf8_lossy(&a));
    p.same(&["DEBUG", "HTSTATS", "99"]);
    p.same(&["DEBUG", "HTSTATS", "x"]);
    p.same(&["DEBUG", "HTSTATS-KEY", "nosuchkey"]);
    p.same(&["RPUSH", "l", "a"]);
    p.same(&["DEBUG", "HTSTATS-KEY", "l"]);
    p.same(&["CONFIG", "SET", "set-max-intset-entries", "0"]);
    p.same(&["SADD", "s", "1", "2", "3", "4"]);
    // A table of the same size and count; how members share buckets
    // follows each process's random hash key.
    let (a, b) = p.both(&["DEBUG", "HTSTATS-KEY", "s"]);
    let first = |r: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(r)
            .lines()
            .skip(1)
            .take(2)
            .map(str::to_string)
            .collect()
    };
    assert_eq!(first(&a), first(&b));
    p.same(&["DEBUG", "MALLCTL", "arenas.page"]);
    p.same(&["DEBUG", "MALLCTL", "no.such.key"]);
    p.same(&["DEBUG", "MALLCTL", "arenas.page", "x"]);
    p.same(&["DEBUG", "MALLCTL-STR", "thread.tcache.flush", "VOID"]);
    p.same(&["DEBUG", "PAUSE-CRON", "1"]);
    p.same(&["DEBUG", "PAUSE-CRON", "0"]);
}

/// While a child saves, the keyspace's table does not grow at one key per
/// bucket (the child's pages stay shared), as Redis's dict_can_resize.
#[test]
fn the_keyspace_does_not_grow_while_a_child_saves_as_redis() {
    // The binary: a fork of the test process would take its threads' state.
    let ours = spawn_ferrokv_process_with(&["--enable-debug-command", "yes"]);
    let theirs = spawn_redis_with(&["--enable-debug-command", "yes"]);
    let mut p = [Raw::connect(ours.port), Raw::connect(theirs.port)];
    let sizes = |r: &mut Raw| -> Vec<String> {
        String::from_utf8_lossy(&r.cmd_str(&["DEBUG", "HTSTATS", "0"]))
            .lines()
            .filter(|l| l.contains("table size") || l.contains("number of elements"))
            .take(2)
            .map(str::to_string)
            .collect()
    };
    for args in [
        &["DEBUG", "POPULATE", "4096"][..],
        &["CONFIG", "SET", "rdb-key-save-delay", "1000000"],
        &["BGSAVE"],
        &["MSET", "k1", "v1", "k2", "v2"],
    ] {
        let (a, b) = (p[0].cmd_str(args), p[1].cmd_str(args));
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{args:?}"
        );
    }
    for r in p.iter_mut() {
        assert_eq!(sizes(r), [" table size: 4096", " number of elements: 4098"]);
    }
}
