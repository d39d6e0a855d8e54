//! CONFIG GET/SET/RESETSTAT/HELP against redis-server, and the binary's
//! command line and config file handling (mirrors Redis's
//! unit/introspection and the config file tests).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::Duration;

use crate::support::*;

/// The bulk strings of a flat RESP2 array (or RESP3 map) reply.
pub fn bulks(reply: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut pos = reply
        .iter()
        .position(|&c| c == b'\n')
        .map_or(reply.len(), |n| n + 1);
    while pos < reply.len() {
        let nl = pos
            + reply[pos..]
                .iter()
                .position(|&c| c == b'\n')
                .expect("line end");
        let len: usize = std::str::from_utf8(&reply[pos + 1..nl - 1])
            .expect("utf8")
            .parse()
            .expect("bulk length");
        out.push(String::from_utf8_lossy(&reply[nl + 1..nl + 1 + len]).into_owned());
        pos = nl + 1 + len + 2;
    }
    out
}

fn as_map(reply: &[u8]) -> BTreeMap<String, String> {
    let b = bulks(reply);
    b.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect()
}

/// Parameters whose defaults differ on purpose (ferrokv's documented
/// defaults, or how the test servers are started).
const DIFFERENT: &[&str] = &[
    "bind",
    "dir",
    "port",
    "save",
    "pidfile",
    "daemonize",
    "logfile",
];

#[test]
fn config_get_star_has_redis_names_and_defaults() {
    let mut p = Pair::new();
    let (ours, theirs) = p.both(&["CONFIG", "GET", "*"]);
    let (ours, theirs) = (as_map(&ours), as_map(&theirs));
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (k, v) in &theirs {
        if !DIFFERENT.contains(&k.as_str()) {
            assert_eq!(&ours[k], v, "default of {k}");
        }
    }
}

#[test]
fn config_get_patterns_and_aliases() {
    let mut p = Pair::new();
    for name in [
        "maxmemory",
        "lua-time-limit",
        "busy-reply-threshold",
        "slaveof",
        "HZ",
        "hash-max-ziplist-entries",
        "nosuch",
        "rdb-key-save-delay",
    ] {
        p.same(&["CONFIG", "GET", name]);
    }
    for pats in [
        &["*max*"][..],
        &["PO*", "port"],
        &["*-ziplist-*", "hz", "lua*"],
        &["[a-c]*"],
        &["?z"],
    ] {
        let mut args = vec!["CONFIG", "GET"];
        args.extend_from_slice(pats);
        let (ours, theirs) = p.both(&args);
        let (mut ours, mut theirs) = (as_map(&ours), as_map(&theirs));
        for k in DIFFERENT {
            ours.remove(*k);
            theirs.remove(*k);
        }
        assert_eq!(ours, theirs, "CONFIG GET {pats:?}");
    }
    p.same(&["CONFIG", "GET", "hz", "HZ"]);
    p.same(&["CONFIG", "GET", "hz", "h?"]);
    p.same(&["CONFIG", "GET"]);
    p.same(&["CONFIG"]);
}

#[test]
fn config_get_resp3_is_a_map() {
    let mut p = Pair::new();
    p.same(&["CONFIG", "GET", "maxmemory-policy"]);
    let (ours, _) = p.both(&["HELLO", "3"]);
    if ours.starts_with(b"-") {
        // HELLO is served by the connection family; without it there is no
        // RESP3 to compare.
        return;
    }
    p.same(&["CONFIG", "GET", "maxmemory-policy"]);
    p.same(&["CONFIG", "GET", "no-such-param"]);
}

#[test]
fn config_set_errors_match_redis() {
    let mut p = Pair::new();
    let cases: &[&[&str]] = &[
        &["CONFIG", "SET", "port"],
        &["CONFIG", "SET", "foo", "bar"],
        &["CONFIG", "SET", "daemonize", "yes"],
        &["CONFIG", "SET", "hz", "abc"],
        &["CONFIG", "SET", "hz", "-1"],
        &["CONFIG", "SET", "maxclients", "0"],
        &["CONFIG", "SET", "loglevel", "foo"],
        &["CONFIG", "SET", "protected-mode", "maybe"],
        &["CONFIG", "SET", "proto-max-bulk-len", "10"],
        &["CONFIG", "SET", "maxmemory", "1xb"],
        &["CONFIG", "SET", "maxmemory", "-1"],
        &["CONFIG", "SET", "hz", "10", "hz", "11"],
        &["CONFIG", "SET", "hz", "10", "foo", "1", "daemonize", "no"],
        &["CONFIG", "SET", "daemonize", "no", "foo", "1"],
        &["CONFIG", "SET", "save", "abc"],
        &["CONFIG", "SET", "save", "10"],
        &["CONFIG", "SET", "save", "0 1"],
        &["CONFIG", "SET", "dir", "/nonexistent"],
        &["CONFIG", "SET", "dbfilename", "a/b"],
        &["CONFIG", "SET", "maxmemory-clients", "200%"],
        &["CONFIG", "SET", "maxmemory-clients", "-5"],
        &["CONFIG", "SET", "unixsocketperm", "8"],
        &["CONFIG", "SET", "notify-keyspace-events", "q"],
        &["CONFIG", "SET", "client-output-buffer-limit", "normal 1 2"],
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "master 1 2 3",
        ],
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal x 2 3",
        ],
        &[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "50 abc",
        ],
        &[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "50 101",
        ],
        &["CONFIG", "SET", "oom-score-adj-values", "1 2"],
        &["CONFIG", "SET", "oom-score-adj-values", "1 2 3000"],
        &["CONFIG", "SET", "shutdown-on-sigint", "save nosave"],
        &["CONFIG", "SET", "shutdown-on-sigterm", "bogus"],
        &["CONFIG", "SET", "appendfsync", "sometimes"],
        &["CONFIG", "SET", "maxmemory-policy", "lru"],
        &["CONFIG", "SET", "list-max-listpack-size", "1.5"],
        &["CONFIG", "SET", "slowlog-log-slower-than", "-2"],
        &["CONFIG", "SET", "replicaof", "no one"],
        &["CONFIG", "SET", "lua-time-limit", "abc"],
        &["CONFIG", "SET", "Port", "99999"],
        &["CONFIG", "SET", "cluster-announce-hostname", "a_b"],
        &["CONFIG", "SET", "proc-title-template", "{foo}"],
        &["CONFIG", "SET", "proc-title-template", "{title"],
        &["CONFIG", "SET", "activedefrag", "yes"],
        &["CONFIG", "SET", "dbfilename", "x", "hz", "abc"],
        &["CONFIG", "SET", "a", "b", "c"],
    ];
    for c in cases {
        let r = p.same(c);
        assert!(r.starts_with(b"-ERR"), "{c:?} should fail");
    }
}

#[test]
fn config_set_values_read_back_like_redis() {
    let mut p = Pair::new();
    let cases: &[(&str, &str)] = &[
        ("maxmemory", "1gb"),
        ("maxmemory", "100mb"),
        ("notify-keyspace-events", "KEA"),
        ("notify-keyspace-events", "Kgxe"),
        ("notify-keyspace-events", "AKEmn"),
        ("proc-title-template", "{{x}} {title} }"),
        ("notify-keyspace-events", ""),
        ("save", "100 10 200 20"),
        ("save", ""),
        (
            "client-output-buffer-limit",
            "normal 1mb 2kb 3 pubsub 1 2 3",
        ),
        ("loglevel", "WARNING"),
        ("hz", "1000"),
        ("lua-time-limit", "1234"),
        ("timeout", "30"),
        ("appendfsync", "always"),
        ("slave-read-only", "no"),
        ("proto-max-bulk-len", "2mb"),
        ("active-defrag-ignore-bytes", "200mb"),
        ("maxmemory-policy", "ALLKEYS-LRU"),
        ("requirepass", ""),
    ];
    for (name, value) in cases {
        p.same(&["CONFIG", "SET", name, value]);
        p.same(&["CONFIG", "GET", name]);
    }
    p.same(&["CONFIG", "GET", "busy-reply-threshold"]);
    p.same(&["CONFIG", "GET", "replica-read-only"]);
    // Several pairs at once, atomically: a bad value leaves all unchanged.
    p.same(&["CONFIG", "SET", "maxmemory", "10mb", "timeout", "5"]);
    p.same(&["CONFIG", "SET", "maxmemory", "20mb", "timeout", "abc"]);
    p.same(&["CONFIG", "GET", "maxmemory"]);
    p.same(&["CONFIG", "GET", "timeout"]);
    p.same(&[
        "CONFIG",
        "SET",
        "lua-time-limit",
        "1",
        "busy-reply-threshold",
        "2",
    ]);
}

#[test]
fn config_help_resetstat_rewrite_match_redis() {
    let mut p = Pair::new();
    p.same(&["CONFIG", "HELP"]);
    p.same(&["CONFIG", "RESETSTAT"]);
    p.same(&["CONFIG", "REWRITE"]);
    p.same(&["CONFIG", "NOSUCH"]);
    p.same(&["SET", "k", "v"]);
    p.same(&["CONFIG", "RESETSTAT"]);
    let (ours, theirs) = p.both(&["INFO", "stats"]);
    for r in [ours, theirs] {
        let s = String::from_utf8_lossy(&r).into_owned();
        assert!(s.contains("total_commands_processed:1\r\n"), "{s}");
    }
}

#[test]
fn config_set_takes_effect() {
    let server = start();
    let mut c = server.raw();
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "requirepass", "s3cret"]),
        b"+OK\r\n"
    );
    let mut other = server.raw();
    assert!(other.cmd_str(&["GET", "k"]).starts_with(b"-NOAUTH"));
    // Clients connected before the password was set stay authenticated.
    assert_eq!(c.cmd_str(&["CONFIG", "SET", "requirepass", ""]), b"+OK\r\n");
    let mut third = server.raw();
    assert_eq!(third.cmd_str(&["GET", "k"]), b"$-1\r\n");
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "proto-max-bulk-len", "1mb"]),
        b"+OK\r\n"
    );
    // The server answers and closes as soon as it reads the bulk length, so
    // only the header is sent (a payload could meet a reset connection).
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n");
    let r = c.read_to_close();
    assert!(
        r.starts_with(b"-ERR Protocol error: invalid bulk length"),
        "{}",
        String::from_utf8_lossy(&r)
    );
    let mut d = server.raw();
    assert_eq!(
        d.cmd_str(&["CONFIG", "SET", "databases", "4"])[..5],
        b"-ERR "[..]
    );
    assert_eq!(
        d.cmd_str(&["CONFIG", "GET", "port"]),
        encode_map(&["port", &server.port.to_string()])
    );
}

pub fn encode_map(kv: &[&str]) -> Vec<u8> {
    let a: Vec<&[u8]> = kv.iter().map(|s| s.as_bytes()).collect();
    encode(&a)
}

#[test]
fn timeout_closes_idle_clients() {
    let server = start_with(|c| {
        c.timeout = 1;
        c.hz = 100;
    });
    let mut idle = server.raw();
    assert_eq!(idle.cmd_str(&["PING"]), b"+PONG\r\n");
    assert!(
        idle.is_closed(),
        "idle client closed after `timeout` seconds"
    );
    let mut c = server.raw();
    assert_eq!(c.cmd_str(&["CONFIG", "SET", "timeout", "0"]), b"+OK\r\n");
    assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
}

/// A non-loopback address of this host, if it has one.
fn external_ip() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // No packet is sent: connecting a UDP socket only picks the route.
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

fn first_reply(ip: std::net::IpAddr, port: u16) -> Vec<u8> {
    let s = std::net::TcpStream::connect((ip, port)).expect("connect");
    send_and_read_to_close(s, b"PING\r\n")
}

/// Sends `bytes` and reads until the server closes (or 5 s pass).
fn send_and_read_to_close(mut s: std::net::TcpStream, bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

#[test]
fn protected_mode_denies_non_loopback_clients_like_redis() {
    let server = start_with(|c| c.bind = vec!["0.0.0.0".into()]);
    let mut local = server.raw();
    assert_eq!(local.cmd_str(&["PING"]), b"+PONG\r\n");
    let Some(ip) = external_ip() else {
        return;
    };
    let redis = spawn_redis_with(&["--bind", "0.0.0.0", "--protected-mode", "yes"]);
    let ours = first_reply(ip, server.port);
    assert!(ours.starts_with(b"-DENIED Redis is running in protected mode"));
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&first_reply(ip, redis.port))
    );
    assert_eq!(
        local.cmd_str(&["CONFIG", "SET", "protected-mode", "no"]),
        b"+OK\r\n"
    );
    use std::io::Read;
    let mut remote = std::net::TcpStream::connect((ip, server.port)).expect("connect");
    remote
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    remote.write_all(b"PING\r\n").expect("write");
    let mut buf = [0u8; 7];
    remote.read_exact(&mut buf).expect("read");
    assert_eq!(&buf, b"+PONG\r\n");
}

/// The first reply to PING on a connection from `source` (a loopback
/// address other than 127.0.0.1) to `port` on 127.0.0.1.
fn first_reply_from(source: &str, port: u16) -> Vec<u8> {
    let s =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    let from: std::net::SocketAddr = format!("{source}:0").parse().expect("addr");
    s.bind(&from.into()).expect("bind the source address");
    let to: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    s.connect(&to.into()).expect("connect");
    // QUIT needs no authentication: the connection ends either way.
    send_and_read_to_close(s.into(), b"PING\r\nQUIT\r\n")
}

#[test]
fn protected_mode_admits_only_127_0_0_1_and_follows_nopass() {
    let server = start_with(|c| c.bind = vec!["0.0.0.0".into()]);
    let redis = spawn_redis_with(&["--bind", "0.0.0.0", "--protected-mode", "yes"]);
    let ours = first_reply_from("127.0.0.2", server.port);
    assert!(ours.starts_with(b"-DENIED Redis is running in protected mode"));
    assert_eq!(ours, first_reply_from("127.0.0.2", redis.port));
    // A default user switched off keeps `nopass`: still protected. With a
    // password, remote clients may connect (and must authenticate).
    let mut theirs = Raw::connect(redis.port);
    let mut local = server.raw();
    for rules in [&["off"][..], &["on", ">pw"]] {
        let mut args = vec!["ACL", "SETUSER", "default"];
        args.extend_from_slice(rules);
        assert_eq!(local.cmd_str(&args), theirs.cmd_str(&args));
        let (o, t) = (
            first_reply_from("127.0.0.2", server.port),
            first_reply_from("127.0.0.2", redis.port),
        );
        assert_eq!(String::from_utf8_lossy(&o), String::from_utf8_lossy(&t));
    }
}

#[test]
fn config_set_port_and_bind_move_the_listener() {
    let mut p = Pair::new();
    // A port someone else holds: both refuse and keep listening.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken_port = taken.local_addr().expect("addr").port().to_string();
    p.same(&["CONFIG", "SET", "port", &taken_port]);
    p.same(&["PING"]);
    drop(taken);

    let server = start();
    let mut c = server.raw();
    // A free port may be taken by another test before the server binds
    // it: then another is tried.
    let mut new_port = free_port();
    for _ in 0..5 {
        if c.cmd_str(&["CONFIG", "SET", "port", &new_port.to_string()]) == b"+OK\r\n" {
            break;
        }
        new_port = free_port();
    }
    // The existing connection stays; new clients use the new port.
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "port"]),
        encode_map(&["port", &new_port.to_string()])
    );
    let mut moved = Raw::connect(new_port);
    assert_eq!(moved.cmd_str(&["PING"]), b"+PONG\r\n");
    assert!(wait_until(Duration::from_secs(5), || {
        std::net::TcpStream::connect(("127.0.0.1", server.port)).is_err()
    }));
    let r = c.cmd_str(&["CONFIG", "SET", "bind", "192.0.2.254"]);
    assert!(
        r.starts_with(
            b"-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind"
        ),
        "{}",
        String::from_utf8_lossy(&r)
    );
    assert_eq!(Raw::connect(new_port).cmd_str(&["PING"]), b"+PONG\r\n");
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "bind"]),
        encode_map(&["bind", "127.0.0.1"])
    );
    // An optional address ("-::1") binds when it can. Another process may
    // hold 127.0.0.1 or ::1 on the port by then (a client's ephemeral port
    // comes from the same range as free ports): then bind and port move
    // together to a fresh port.
    let mut bound = false;
    for _ in 0..5 {
        let r = c.cmd_str(&[
            "CONFIG",
            "SET",
            "bind",
            "127.0.0.1 -::1",
            "port",
            &new_port.to_string(),
        ]);
        if r == b"+OK\r\n" {
            bound = true;
            break;
        }
        new_port = free_port();
    }
    assert!(
        bound,
        "CONFIG SET bind \"127.0.0.1 -::1\" failed on 5 ports"
    );
    assert_eq!(Raw::connect(new_port).cmd_str(&["PING"]), b"+PONG\r\n");
}

/// Sends a 3 MB bulk string in pieces; true when the server closed the
/// connection on the way.
fn closed_by_big_query(port: u16) -> bool {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    if s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n")
        .is_err()
    {
        return true;
    }
    let chunk = vec![b'x'; 100_000];
    for _ in 0..30 {
        if s.write_all(&chunk).is_err() {
            return true;
        }
    }
    let _ = s.write_all(b"\r\n");
    let mut buf = [0u8; 64];
    matches!(s.read(&mut buf), Ok(0) | Err(_))
}

#[test]
fn client_query_buffer_limit_closes_like_redis() {
    let mut p = Pair::new();
    p.same(&["CONFIG", "SET", "client-query-buffer-limit", "1mb"]);
    let server_port = {
        let (ours, _) = p.both(&["CONFIG", "GET", "port"]);
        bulks(&ours)[1].parse::<u16>().expect("port")
    };
    let redis_port = {
        let (_, theirs) = p.both(&["CONFIG", "GET", "port"]);
        bulks(&theirs)[1].parse::<u16>().expect("port")
    };
    assert!(closed_by_big_query(redis_port));
    assert!(closed_by_big_query(server_port));
    p.same(&["CONFIG", "SET", "client-query-buffer-limit", "1gb"]);
    assert!(!closed_by_big_query(server_port));
}

/// oom-score-adj writes /proc/<pid>/oom_score_adj as Redis's
/// setOOMScoreAdj: absolute values, relative ones on the score the process
/// started with, the replica class after REPLICAOF, and the old score back
/// when turned off.
#[test]
fn oom_score_adj_sets_the_process_score() {
    let base: i32 = std::fs::read_to_string("/proc/self/oom_score_adj")
        .map(|s| s.trim().parse().unwrap_or(0))
        .unwrap_or(0);
    let ours = spawn_ferrokv_process_with(&[
        "--oom-score-adj",
        "absolute",
        "--oom-score-adj-values",
        "10 20 30",
    ]);
    let score = || -> i32 {
        std::fs::read_to_string(format!("/proc/{}/oom_score_adj", ours.pid()))
            .map(|s| s.trim().parse().unwrap_or(i32::MIN))
            .unwrap_or(i32::MIN)
    };
    // The score is set once the server is up, as Redis sets it after
    // initServer: the port may answer a moment before.
    assert!(
        wait_until(Duration::from_secs(5), || score() == 10),
        "{}",
        score()
    );
    let mut c = Raw::connect(ours.port);
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "oom-score-adj-values", "15 20 30"]),
        b"+OK\r\n"
    );
    assert_eq!(score(), 15);
    assert_eq!(c.cmd_str(&["REPLICAOF", "127.0.0.1", "1"]), b"+OK\r\n");
    assert_eq!(score(), 20);
    assert_eq!(c.cmd_str(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    assert_eq!(score(), 15);
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "oom-score-adj", "relative"]),
        b"+OK\r\n"
    );
    assert_eq!(score(), (base + 15).clamp(-1000, 1000));
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "oom-score-adj", "no"]),
        b"+OK\r\n"
    );
    assert_eq!(score(), base);
    assert!(String::from_utf8_lossy(&c.cmd_str(&[
        "CONFIG",
        "SET",
        "oom-score-adj-values",
        "1 2 3000"
    ]))
    .contains("must be between -2000 and 2000"));
}

/// A CONFIG SET whose port cannot be bound rolls back what it applied
/// before: the OOM score adjustment the same call set (Redis's
/// restoreBackupConfig), and answers Redis's error.
#[test]
fn config_set_rolls_back_oom_score_adj_when_the_port_fails() {
    let server = spawn_ferrokv_process();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let used = taken.local_addr().expect("addr").port().to_string();
    let score = || {
        std::fs::read_to_string(format!("/proc/{}/oom_score_adj", server.pid()))
            .expect("oom_score_adj")
            .trim()
            .to_string()
    };
    let before = score();
    let mut c = Raw::connect(server.port);
    let reply = c.cmd_str(&[
        "CONFIG",
        "SET",
        "oom-score-adj",
        "yes",
        "oom-score-adj-values",
        "1 1 1",
        "port",
        &used,
    ]);
    assert!(
        reply.starts_with(
            b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port"
        ),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    assert_eq!(score(), before);
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "oom-score-adj"]),
        b"*2\r\n$13\r\noom-score-adj\r\n$2\r\nno\r\n"
    );
}

/// `rename-command` as Redis's config loader applies it: the old name is
/// unknown everywhere (MULTI, scripts, COMMAND INFO), the new one runs the
/// command, and an empty one removes it.
#[test]
fn rename_command_renames_or_removes_like_redis() {
    let renames = [("flushdb", "badger"), ("get", "")];
    let mut redis_args = Vec::new();
    for (from, to) in renames {
        redis_args.extend(["--rename-command", from, to]);
    }
    let mut pair = Pair::new_with(
        |c| {
            for (from, to) in renames {
                c.renamed_commands.push(ferrokv::config::RenameCommand {
                    from: from.into(),
                    to: to.into(),
                    line: None,
                });
            }
        },
        &redis_args,
    );
    pair.same(&["SET", "k", "v"]);
    pair.same(&["FLUSHDB"]);
    pair.same(&["GET", "k"]);
    pair.same(&["DBSIZE"]);
    pair.same(&["EVAL", "return redis.call('flushdb')", "0"]);
    pair.same(&["COMMAND", "INFO", "flushdb", "get"]);
    pair.same(&["MULTI"]);
    pair.same(&["flushdb"]);
    pair.same(&["EXEC"]);
    pair.same(&["BADGER"]);
    pair.same(&["DBSIZE"]);
    // COMMAND COUNT drops by the removed command only.
    let (ours, theirs) = pair.both(&["COMMAND", "COUNT"]);
    let count = |r: &[u8]| -> i64 {
        std::str::from_utf8(&r[1..r.len() - 2])
            .expect("integer")
            .parse()
            .expect("integer")
    };
    let plain = spawn_redis();
    let base = count(&Raw::connect(plain.port).cmd_str(&["COMMAND", "COUNT"]));
    assert_eq!(count(&theirs), base - 1);
    let ours_base = count(&start().raw().cmd_str(&["COMMAND", "COUNT"]));
    assert_eq!(count(&ours), ours_base - 1);
}

/// A `rename-command` that cannot be done, and a `loadmodule`, stop the
/// server at start-up with Redis's messages and exit status.
#[test]
fn rename_command_and_loadmodule_refusals_match_redis() {
    let run = |program: &str, args: &[&str]| -> (Option<i32>, String) {
        let mut child = std::process::Command::new(program)
            .args(["--port", &free_port().to_string(), "--save", ""])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let status = wait_exit(&mut child, Duration::from_secs(10));
        let mut text = String::new();
        use std::io::Read as _;
        let _ = child.stdout.take().map(|mut o| o.read_to_string(&mut text));
        let _ = child.stderr.take().map(|mut o| o.read_to_string(&mut text));
        (status.and_then(|s| s.code()), text)
    };
    let ours = env!("CARGO_BIN_EXE_ferrokv");
    for args in [
        &["--rename-command", "nosuch", "x"][..],
        &["--rename-command", "get", "set"],
        &[
            "--rename-command",
            "get",
            "g",
            "--rename-command",
            "get",
            "h",
        ],
    ] {
        let (code, text) = run(ours, args);
        let (redis_code, redis_text) = run("redis-server", args);
        assert_eq!(code, Some(1), "{text}");
        assert_eq!(redis_code, Some(1), "{redis_text}");
        assert_eq!(text.trim(), redis_text.trim());
    }
    let args = ["--loadmodule", "/nonexistent/module.so"];
    let (code, text) = run(ours, &args);
    let (redis_code, redis_text) = run("redis-server", &args);
    assert_eq!((code, redis_code), (Some(1), Some(1)));
    for line in [
        "Module /nonexistent/module.so failed to load: /nonexistent/module.so: cannot open shared object file: No such file or directory",
        "Can't load module from /nonexistent/module.so: server aborting",
    ] {
        assert!(text.contains(line), "{text}");
        assert!(redis_text.contains(line), "{redis_text}");
    }
}

/// What `ss` shows for the sockets listening on `port`: the Send-Q (the
/// accept queue's length limit) and the fwmark, if any.
fn listen_backlog(port: u16) -> Vec<String> {
    let out = std::process::Command::new("ss")
        .args(["-ltneH", &format!("sport = :{port}")])
        .output()
        .expect("ss (iproute2)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let queue = l.split_whitespace().nth(2).unwrap_or("");
            let mark = l
                .split_whitespace()
                .find(|f| f.starts_with("fwmark:"))
                .unwrap_or("");
            format!("{queue} {mark}")
        })
        .collect()
}

/// `tcp-backlog`, `socket-mark-id`, `jemalloc-bg-thread` and `dynamic-hz`
/// act as in Redis: the listening sockets' accept queue and mark,
/// jemalloc's purging thread, and the cron's frequency raised with many
/// clients (INFO `hz`).
#[test]
fn tcp_backlog_jemalloc_bg_thread_and_dynamic_hz_act_like_redis() {
    let ours = spawn_ferrokv_process_with(&[
        "--tcp-backlog",
        "77",
        "--socket-mark-id",
        "7",
        "--jemalloc-bg-thread",
        "no",
    ]);
    let redis = spawn_redis_with(&["--tcp-backlog", "77", "--socket-mark-id", "7"]);
    assert_eq!(listen_backlog(ours.port), listen_backlog(redis.port));
    assert!(listen_backlog(ours.port)
        .iter()
        .all(|q| q.starts_with("77 ")));
    // jemalloc's background threads come and go with the directive.
    let bg_threads = || {
        std::fs::read_dir(format!("/proc/{}/task", ours.pid()))
            .map(|d| {
                d.filter_map(|t| t.ok())
                    .filter(|t| {
                        std::fs::read_to_string(t.path().join("comm"))
                            .is_ok_and(|c| c.starts_with("jemalloc_bg"))
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(bg_threads(), 0);
    let mut r = Raw::connect(ours.port);
    assert_eq!(
        r.cmd_str(&["CONFIG", "SET", "jemalloc-bg-thread", "yes"]),
        b"+OK\r\n"
    );
    assert!(wait_until(Duration::from_secs(5), || bg_threads() > 0));
    // dynamic-hz: 450 clients at hz 1 make the cron run at 4 Hz.
    let mut hz = Vec::new();
    for port in [ours.port, redis.port] {
        let mut c = Raw::connect(port);
        c.cmd_str(&["CONFIG", "SET", "hz", "1"]);
        let clients: Vec<Raw> = (0..450)
            .map(|_| {
                let mut x = Raw::connect(port);
                assert_eq!(x.cmd_str(&["PING"]), b"+PONG\r\n");
                x
            })
            .collect();
        let field = |c: &mut Raw, name: &str| -> String {
            String::from_utf8_lossy(&c.cmd_str(&["INFO", "server"]))
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::to_string))
                .unwrap_or_default()
        };
        assert!(wait_until(Duration::from_secs(5), || field(&mut c, "hz") == "4"));
        c.cmd_str(&["CONFIG", "SET", "dynamic-hz", "no"]);
        assert!(wait_until(Duration::from_secs(5), || field(&mut c, "hz") == "1"));
        hz.push((field(&mut c, "hz"), field(&mut c, "configured_hz")));
        drop(clients);
    }
    assert_eq!(hz[0], hz[1]);
}

/// `CONFIG SET bind ""` listens on no TCP socket (new connections are
/// refused, open ones stay), as in Redis; binding again restores it.
#[test]
fn config_set_empty_bind_listens_nowhere_like_redis() {
    let ours = spawn_ferrokv_process();
    let redis = spawn_redis();
    for port in [ours.port, redis.port] {
        let mut c = Raw::connect(port);
        assert_eq!(c.cmd_str(&["CONFIG", "SET", "bind", ""]), b"+OK\r\n");
        assert_eq!(
            c.cmd_str(&["CONFIG", "GET", "bind"]),
            b"*2\r\n$4\r\nbind\r\n$0\r\n\r\n"
        );
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
        assert_eq!(
            c.cmd_str(&["CONFIG", "SET", "bind", "127.0.0.1"]),
            b"+OK\r\n"
        );
        assert_eq!(Raw::connect(port).cmd_str(&["PING"]), b"+PONG\r\n");
    }
}

/// ferrokv and redis-server, each started in `dir` from its own config
/// file (`conf(i)`, written with `text(port)`), answering on a connection.
struct BothFromFiles {
    conns: Vec<(Raw, u16)>,
    files: Vec<std::path::PathBuf>,
    _children: Vec<ChildGuard>,
}

fn start_both_from_files(
    dir: &std::path::Path,
    conf: impl Fn(usize) -> std::path::PathBuf,
    text: impl Fn(u16) -> String,
) -> BothFromFiles {
    let mut both = BothFromFiles {
        conns: Vec::new(),
        files: Vec::new(),
        _children: Vec::new(),
    };
    for (i, program) in [env!("CARGO_BIN_EXE_ferrokv"), "redis-server"]
        .into_iter()
        .enumerate()
    {
        let path = conf(i);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("dir");
        }
        let (child, port) = spawn_on_free_port(|port| {
            std::fs::write(&path, text(port)).expect("write config");
            let mut c = std::process::Command::new(program);
            c.arg(&path).current_dir(dir);
            c
        });
        both._children.push(ChildGuard(child));
        both.conns.push((Raw::connect(port), port));
        both.files.push(path);
    }
    both
}

/// CONFIG REWRITE writes the master followed now (set by REPLICAOF, not
/// only by the file), and no `replicaof` line once it follows none, as
/// Redis's rewriteConfigReplicaOfOption.
#[test]
fn config_rewrite_writes_the_master_followed_now_as_redis() {
    let dir = unique_temp_path("ferrokv-rewrite-replicaof");
    std::fs::create_dir_all(&dir).expect("dir");
    let replicaof_lines = |path: &std::path::Path| -> Vec<String> {
        std::fs::read_to_string(path)
            .expect("config file")
            .lines()
            .filter(|l| l.starts_with("replicaof"))
            .map(str::to_string)
            .collect()
    };
    let mut both = start_both_from_files(
        &dir,
        |i| dir.join(format!("{i}.conf")),
        |port| format!("port {port}\nbind 127.0.0.1\nsave \"\"\n"),
    );
    let files = both.files.clone();
    for step in [&["REPLICAOF", "127.0.0.1", "1"][..], &["CONFIG", "REWRITE"]] {
        for (c, _) in both.conns.iter_mut() {
            assert_eq!(c.cmd_str(step), b"+OK\r\n", "{step:?}");
        }
    }
    assert_eq!(replicaof_lines(&files[0]), replicaof_lines(&files[1]));
    assert_eq!(replicaof_lines(&files[0]), ["replicaof 127.0.0.1 1"]);
    for step in [&["REPLICAOF", "NO", "ONE"][..], &["CONFIG", "REWRITE"]] {
        for (c, _) in both.conns.iter_mut() {
            assert_eq!(c.cmd_str(step), b"+OK\r\n", "{step:?}");
        }
    }
    assert_eq!(replicaof_lines(&files[0]), replicaof_lines(&files[1]));
    assert!(replicaof_lines(&files[0]).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A child process killed on drop.
struct ChildGuard(std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// CONFIG REWRITE makes the file Redis makes: lines in place with Redis's
/// formats (sizes in units, quoted strings, per-class output limits,
/// unused lines blanked, unknown directives commented out), and the same
/// appended lines after the signature (Redis appends them in its hash
/// table's order, so those are compared as a set).
#[test]
fn config_rewrite_writes_the_file_redis_writes() {
    let dir = unique_temp_path("ferrokv-rewrite-formats");
    let mut both = start_both_from_files(
        &dir,
        |i| dir.join(format!("{i}.conf")),
        |port| {
            format!(
                "# kept\nport {port}\nbind 127.0.0.1\nsave 900 1\nsave 300 10\n\
                 maxmemory 100mb\n\n\nclient-output-buffer-limit pubsub 32mb 8mb 60\n\
                 notify-keyspace-events Ex\nrename-command FLUSHALL \"\"\n\
                 hash-max-ziplist-entries 256\nlogfile \"\"\n"
            )
        },
    );
    let (files, conns) = (both.files.clone(), &mut both.conns);
    let steps: &[&[&str]] = &[
        &["CONFIG", "SET", "maxmemory", "200mb"],
        &["CONFIG", "SET", "save", "60 5"],
        &["CONFIG", "SET", "notify-keyspace-events", "KEA"],
        &["CONFIG", "SET", "list-max-ziplist-size", "64"],
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 0 0 slave 1mb 1mb 10",
        ],
        &["CONFIG", "SET", "maxmemory-clients", "10%"],
        &["CONFIG", "SET", "masteruser", "a b"],
        &["CONFIG", "SET", "appendfsync", "always"],
        &["CONFIG", "SET", "proto-max-bulk-len", "2000001"],
        &["CONFIG", "REWRITE"],
    ];
    for step in steps {
        for (c, _) in conns.iter_mut() {
            assert_eq!(c.cmd_str(step), b"+OK\r\n", "{step:?}");
        }
    }
    let split = |i: usize| {
        let text = std::fs::read_to_string(&files[i]).expect("config file");
        let port = conns[i].1;
        let text = text.replace(&format!("port {port}\n"), "port <port>\n");
        let (kept, appended) = text
            .split_once("# Generated by CONFIG REWRITE\n")
            .expect("a signature line");
        let mut appended: Vec<String> = appended.lines().map(str::to_string).collect();
        appended.sort();
        (kept.to_string(), appended)
    };
    let (ours, theirs) = (split(0), split(1));
    assert_eq!(ours.0, theirs.0, "lines in place");
    assert_eq!(ours.1, theirs.1, "appended lines");
    assert!(ours.0.contains("maxmemory 200mb\n"), "{}", ours.0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A rewrite that cannot write its file answers with strerror's text, as
/// Redis does: here the file's folder is gone.
#[test]
fn config_rewrite_failure_reads_as_redis() {
    let dir = unique_temp_path("ferrokv-rewrite-fails");
    let mut both = start_both_from_files(
        &dir,
        |i| dir.join(format!("conf{i}")).join("redis.conf"),
        |port| format!("port {port}\nbind 127.0.0.1\nsave \"\"\n"),
    );
    for path in &both.files {
        let folder = path.parent().expect("a folder");
        std::fs::remove_dir_all(folder).expect("remove the config folder");
    }
    for (c, _) in both.conns.iter_mut() {
        assert_eq!(
            c.cmd_str(&["CONFIG", "REWRITE"]),
            b"-ERR Rewriting config file: No such file or directory\r\n"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
