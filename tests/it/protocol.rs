//! Request framing against redis-server (Redis's `unit/protocol`):
//! malformed frames, limits for unauthenticated clients, inline commands,
//! huge values, many connections, redis-cli.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::*;

/// Sends `bytes` on a fresh connection to each server and asserts both
/// answer the same and close the connection.
fn same_until_close(p: &Pair, bytes: &[u8]) -> Vec<u8> {
    let (mut ours, mut theirs) = p.connect_again();
    ours.send(bytes);
    theirs.send(bytes);
    let (o, t) = (ours.read_to_close(), theirs.read_to_close());
    assert_eq!(
        String::from_utf8_lossy(&o),
        String::from_utf8_lossy(&t),
        "for {:?}",
        String::from_utf8_lossy(&bytes[..bytes.len().min(60)])
    );
    o
}

#[test]
fn malformed_frames_close_the_connection() {
    let p = Pair::new();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"*a\r\n".to_vec(), "invalid multibulk length"),
        (b"*3000000000\r\n".to_vec(), "invalid multibulk length"),
        (b"*1\r\n$-1\r\n".to_vec(), "invalid bulk length"),
        (b"*1\r\n$x\r\n".to_vec(), "invalid bulk length"),
        (b"*1\r\n:1\r\n".to_vec(), "expected '$', got ':'"),
        (
            b"*1\r\n$4\r\nPING\r\n*1\r\n+PING\r\n".to_vec(),
            "expected '$', got '+'",
        ),
        (b"*1\r\n$600000000\r\n".to_vec(), "invalid bulk length"),
        (b"set \"a b\r\n".to_vec(), "unbalanced quotes"),
        (b"set 'a\r\n".to_vec(), "unbalanced quotes"),
        (b"set \"a\"b c\r\n".to_vec(), "unbalanced quotes"),
        (vec![b'a'; 64 * 1024 + 1], "too big inline request"),
        (
            [&b"*"[..], &vec![b'1'; 64 * 1024 + 1]].concat(),
            "too big mbulk count string",
        ),
        (
            [&b"*1\r\n$"[..], &vec![b'1'; 64 * 1024 + 1]].concat(),
            "too big bulk count string",
        ),
        (b"*1\r\n*1\r\n".repeat(5000), "expected '$', got '*'"),
        (b"*1\r\n\xff\r\n".to_vec(), "expected '$', got '"),
        (b"*1\r\n\r\n\r\n".to_vec(), "expected '$', got ' '"),
        // strchr stops at the NUL, so no line end is ever found.
        (
            [&b"*1\r\n"[..], &[0u8], &vec![b'a'; 64 * 1024]].concat(),
            "too big bulk count string",
        ),
        (
            [&b"PI"[..], &[0u8], &vec![b'\n'; 64 * 1024 - 2]].concat(),
            "too big inline request",
        ),
    ];
    for (bytes, expect) in cases {
        let reply = same_until_close(&p, &bytes);
        let text = String::from_utf8_lossy(&reply);
        assert!(text.contains(expect), "{text:?} lacks {expect:?}");
        assert!(text.contains("-ERR Protocol error: "), "{text:?}");
    }
}

#[test]
fn deeply_nested_arrays_are_refused() {
    let p = Pair::new();
    let reply = same_until_close(&p, &b"*1\r\n".repeat(10_000));
    assert_eq!(reply, b"-ERR Protocol error: expected '$', got '*'\r\n");
}

#[test]
fn partial_and_abandoned_requests_cost_nothing() {
    let p = Pair::new();
    let (mut ours, _) = p.connect_again();
    for bytes in [
        &b"*2000000\r\n"[..],
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nab",
        b"PIN",
    ] {
        let (mut a, mut b) = p.connect_again();
        a.send(bytes);
        b.send(bytes);
        drop((a, b));
    }
    // A count announced but never sent: no reply, connection kept.
    let (mut a, _) = p.connect_again();
    a.send(b"*2000000\r\n$4\r\nECHO\r\n");
    assert_eq!(ours.cmd_str(&["PING"]), b"+PONG\r\n");
    assert_eq!(ours.cmd_str(&["DBSIZE"]), b":0\r\n");
    drop(a);
    assert_eq!(ours.cmd_str(&["PING"]), b"+PONG\r\n");
}

#[test]
fn inline_commands_match_redis() {
    let p = Pair::new();
    let (mut ours, mut theirs) = p.connect_again();
    let input = b"PING\r\nset a b\r\nget a\n\r\n   \r\necho \"hello world\\x21\\n\"\r\necho 'it\\'s'\r\n*1\r\n$4\r\nPING\r\nping\r\n";
    ours.send(input);
    theirs.send(input);
    for _ in 0..7 {
        let (o, t) = (ours.read_reply(), theirs.read_reply());
        assert_eq!(String::from_utf8_lossy(&o), String::from_utf8_lossy(&t));
    }
}

#[test]
fn long_complete_inline_lines_are_refused_as_redis_refuses_them() {
    let p = Pair::new();
    // Within the limit the command runs; far past it the line is refused
    // even though its newline arrived with it.
    let ok = [&b"SET k "[..], &vec![b'x'; 60_000], b"\r\nGET k\r\n"].concat();
    let (mut ours, mut theirs) = p.connect_again();
    ours.send(&ok);
    theirs.send(&ok);
    for _ in 0..2 {
        assert_eq!(ours.read_reply(), theirs.read_reply());
    }
    for n in [100_000, 300_000] {
        let line = [&b"SET k "[..], &vec![b'y'; n], b"\r\nPING\r\n"].concat();
        let reply = same_until_close(&p, &line);
        assert_eq!(reply, b"-ERR Protocol error: too big inline request\r\n");
    }
    assert_eq!(ours.cmd_str(&["STRLEN", "k"]), b":60000\r\n");
}

#[test]
fn unauthenticated_clients_get_small_limits() {
    let p = Pair::new_with(
        |c| c.requirepass = Some(b"pw".to_vec()),
        &["--requirepass", "pw"],
    );
    let r = same_until_close(&p, b"*11\r\n");
    assert_eq!(
        r,
        b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    );
    let r = same_until_close(&p, b"*1\r\n$16385\r\n");
    assert_eq!(r, b"-ERR Protocol error: unauthenticated bulk length\r\n");
    // At the limits themselves, and inline, nothing is refused.
    let (mut ours, mut theirs) = p.connect_again();
    let mut replies = Vec::new();
    for r in [&mut ours, &mut theirs] {
        let big = vec![b'x'; 16384];
        let args: Vec<&[u8]> = vec![
            b"ECHO", &big, b"3", b"4", b"5", b"6", b"7", b"8", b"9", b"10",
        ];
        let mut got = r.cmd(&args);
        r.send(b"ping a b c d e f g h i j k l\r\n");
        got.extend(r.read_reply());
        got.extend(r.cmd(&[b"GET", &big]));
        replies.push(String::from_utf8_lossy(&got).into_owned());
    }
    assert_eq!(replies[0], replies[1]);
    assert!(replies[0].contains("-NOAUTH"), "{}", replies[0]);
    // AUTH lifts the limits for what follows it in the same packet.
    let mut after_auth = encode(&[b"AUTH", b"pw"]);
    let many: Vec<&[u8]> = vec![&b"ECHO"[..]; 1]
        .into_iter()
        .chain((0..20).map(|_| &b"k"[..]))
        .collect();
    after_auth.extend_from_slice(&encode(&many));
    let big = vec![b'y'; 20000];
    after_auth.extend_from_slice(&encode(&[b"ECHO", &big]));
    for r in [&mut ours, &mut theirs] {
        r.send(&after_auth);
        assert_eq!(r.read_reply(), b"+OK\r\n");
        let _ = r.read_reply();
        let echo = r.read_reply();
        assert!(echo.starts_with(b"$20000\r\n"));
    }
}

#[test]
fn hundred_megabyte_value_round_trip() {
    let server = start();
    let mut r = server.raw();
    let value: Vec<u8> = (0..100 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    assert_eq!(r.cmd(&[b"SET", b"big", &value]), b"+OK\r\n");
    let reply = r.cmd(&[b"GET", b"big"]);
    let header = format!("${}\r\n", value.len());
    assert!(reply.starts_with(header.as_bytes()));
    assert!(reply[header.len()..reply.len() - 2] == value[..]);
}

/// Raises this process's open-file limit to its hard limit.
fn raise_nofile() -> libc::rlim_t {
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        lim.rlim_cur
    }
}

/// Run as a child process by `ten_thousand_idle_connections`: opens the
/// connections, reports, and holds them until its stdin closes.
#[test]
#[ignore = "helper process for ten_thousand_idle_connections"]
fn hold_idle_connections() {
    let (Ok(port), Ok(n)) = (
        std::env::var("FERROKV_HOLD_PORT"),
        std::env::var("FERROKV_HOLD_N"),
    ) else {
        return;
    };
    let port: u16 = port.parse().expect("port");
    let n: usize = n.parse().expect("count");
    raise_nofile();
    let mut socks = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        // Now and then wait for the server to catch up, so the accept
        // queue never overflows (a dropped SYN costs a second).
        if i % 200 == 199 {
            s.write_all(b"PING\r\n").expect("ping");
            let mut buf = [0u8; 7];
            std::io::Read::read_exact(&mut s, &mut buf).expect("pong");
        }
        socks.push(s);
    }
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

#[test]
fn ten_thousand_idle_connections() {
    const N: usize = 10_000;
    let limit = raise_nofile();
    assert!(
        limit >= N as libc::rlim_t + 1000,
        "open-file limit {limit} too low"
    );
    let server = start_with(|c| c.maxclients = N + 100);
    // The client ends live in a child process, so this one holds only the
    // server's sockets.
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "protocol::hold_idle_connections",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FERROKV_HOLD_PORT", server.port.to_string())
        .env("FERROKV_HOLD_N", N.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn holder");
    let mut r = server.raw();
    let count_clients = |r: &mut Raw| {
        let list = r.cmd_str(&["CLIENT", "LIST"]);
        String::from_utf8_lossy(&list).matches("id=").count()
    };
    let all_there = wait_until(Duration::from_secs(30), || count_clients(&mut r) == N + 1);
    if !all_there {
        let _ = child.kill();
    }
    assert!(all_there, "the holder's connections did not all arrive");
    assert_eq!(r.cmd_str(&["PING"]), b"+PONG\r\n");
    drop(child.stdin.take());
    let _ = child.wait();
    assert!(wait_until(Duration::from_secs(5), || count_clients(&mut r) == 1));
}

#[test]
fn redis_cli_inline_and_pipe() {
    let server = start();
    let port = server.port.to_string();
    let out = Command::new("redis-cli")
        .args(["-p", &port, "ping"])
        .output()
        .expect("redis-cli");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "PONG");
    let out = output_with_input(
        Command::new("redis-cli").args(["-p", &port]),
        b"set a b\nget a\n",
    );
    assert_eq!(out, "OK\nb\n");
    // Mass insertion.
    let mut data = Vec::new();
    for i in 0..10_000 {
        data.extend_from_slice(&encode(&[
            b"SET",
            format!("key:{i}").as_bytes(),
            format!("v{i}").as_bytes(),
        ]));
    }
    let text = output_with_input(
        Command::new("redis-cli").args(["-p", &port, "--pipe"]),
        &data,
    );
    assert!(text.contains("errors: 0, replies: 10000"), "{text}");
    let mut r = server.raw();
    assert_eq!(r.cmd_str(&["DBSIZE"]), b":10001\r\n");
    assert_eq!(r.cmd_str(&["GET", "key:9999"]), b"$5\r\nv9999\r\n");
}

/// Commands carrying large arguments, sent in random pieces that the
/// server reads apart (a round trip on another connection between
/// pieces), answer as redis-server answers: large values stored, appended
/// to, read back, used as keys and fields, in a pipeline with small ones.
#[test]
fn large_arguments_in_pieces_match_redis() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    const SIZES: &[usize] = &[0, 5, 32 * 1024 - 1, 32 * 1024, 70_000, 200_000];
    let value = (proptest::sample::select(SIZES), 0u8..26).prop_map(|(n, c)| {
        (0..n)
            .map(|i| char::from(b'a' + ((i + c as usize) % 26) as u8))
            .collect::<String>()
    });
    let key = proptest::sample::select(&["k1", "k2", "h"][..]).prop_map(String::from);
    let cmd = prop_oneof![
        (key.clone(), value.clone()).prop_map(|(k, v)| vec!["SET".into(), k, v]),
        (value.clone(), value.clone()).prop_map(|(a, b)| vec![
            "MSET".into(),
            "k1".into(),
            a,
            "k2".into(),
            b
        ]),
        (key.clone(), value.clone()).prop_map(|(k, v)| vec!["APPEND".into(), k, v]),
        (key.clone(), value.clone()).prop_map(|(k, v)| vec!["GETSET".into(), k, v]),
        (key.clone(), value.clone()).prop_map(|(k, v)| vec!["SETEX".into(), k, "100".into(), v]),
        (key.clone(), value.clone()).prop_map(|(k, v)| vec![
            "SETRANGE".into(),
            k,
            "40000".into(),
            v
        ]),
        (value.clone(), value.clone()).prop_map(|(f, v)| vec!["HSET".into(), "h".into(), f, v]),
        value.clone().prop_map(|v| vec!["SET".into(), v.clone(), v]),
        value.clone().prop_map(|v| vec!["ECHO".into(), v]),
        key.clone().prop_map(|k| vec!["GET".into(), k]),
        key.clone().prop_map(|k| vec!["STRLEN".into(), k]),
        key.clone()
            .prop_map(|k| vec!["GETRANGE".into(), k, "-40".into(), "-1".into()]),
        key.clone()
            .prop_map(|k| vec!["OBJECT".into(), "ENCODING".into(), k]),
        Just(vec!["HGETALL".to_string(), "h".into()]),
        key.clone().prop_map(|k| vec!["DUMP".into(), k]),
        Just(vec!["DBSIZE".to_string()]),
    ];
    let case = (
        proptest::collection::vec(cmd, 1..6),
        proptest::collection::vec(0.0f64..1.0, 0..6),
    );
    let server = start();
    let redis = spawn_redis();
    let conns = std::cell::RefCell::new([
        server.raw(),
        Raw::connect(redis.port),
        server.raw(),
        Raw::connect(redis.port),
    ]);
    let config = Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let result = runner.run(&case, |(cmds, cuts)| {
        let mut conns = conns.borrow_mut();
        let [ours, theirs, ours_sync, theirs_sync] = &mut *conns;
        ours.cmd_str(&["FLUSHALL"]);
        theirs.cmd_str(&["FLUSHALL"]);
        let mut wire = Vec::new();
        for cmd in &cmds {
            let args: Vec<&[u8]> = cmd.iter().map(|s| s.as_bytes()).collect();
            wire.extend_from_slice(&encode(&args));
        }
        let mut cuts: Vec<usize> = cuts
            .iter()
            .map(|f| (f * wire.len() as f64) as usize)
            .collect();
        cuts.push(wire.len());
        cuts.sort_unstable();
        let mut from = 0;
        for cut in cuts {
            ours.send(&wire[from..cut]);
            theirs.send(&wire[from..cut]);
            from = cut;
            // Each server has read the piece before the next is sent.
            ours_sync.cmd_str(&["PING"]);
            theirs_sync.cmd_str(&["PING"]);
        }
        let replies: Vec<(Vec<u8>, Vec<u8>)> = cmds
            .iter()
            .map(|_| (ours.read_reply(), theirs.read_reply()))
            .collect();
        for (cmd, (o, t)) in cmds.iter().zip(&replies) {
            let name = &cmd[0];
            prop_assert!(
                o == t,
                "{name}: {:?} vs {:?}",
                String::from_utf8_lossy(&o[..o.len().min(80)]),
                String::from_utf8_lossy(&t[..t.len().min(80)])
            );
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A large SET or MSET is read into the value's own buffer once: the
/// server's peak RSS grows by little more than the values' size, and what
/// it holds afterwards is the values.
#[test]
fn a_large_set_peaks_at_its_size() {
    const MB: usize = 1024 * 1024;
    let server = spawn_ferrokv_process();
    let status = |field: &str| -> usize {
        let text =
            std::fs::read_to_string(format!("/proc/{}/status", server.pid())).expect("status");
        let line = text.lines().find(|l| l.starts_with(field)).expect("field");
        let kb: usize = line
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .expect("kB");
        kb * 1024
    };
    let mut r = Raw::connect(server.port);
    assert_eq!(r.cmd_str(&["PING"]), b"+PONG\r\n");
    let base = status("VmHWM:");
    let value = vec![b'v'; 100 * MB];
    r.send(b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n");
    r.send(format!("${}\r\n", value.len()).as_bytes());
    for piece in value.chunks(MB) {
        r.send(piece);
    }
    r.send(b"\r\n");
    assert_eq!(r.read_reply(), b"+OK\r\n");
    let peak = status("VmHWM:") - base;
    assert!(
        peak <= 110 * MB,
        "a 100 MB SET peaked {} MB over the start",
        peak / MB
    );
    assert_eq!(r.cmd_str(&["STRLEN", "big"]), b":104857600\r\n");
    assert_eq!(r.cmd_str(&["DEL", "big"]), b":1\r\n");
    // Two 50 MB values in one MSET.
    let base = status("VmRSS:");
    let half = &value[..50 * MB];
    assert_eq!(r.cmd(&[b"MSET", b"a", half, b"b", half]), b"+OK\r\n");
    let held = status("VmRSS:").saturating_sub(base);
    assert!(held <= 110 * MB, "a 100 MB MSET holds {} MB", held / MB);
    assert_eq!(r.cmd_str(&["STRLEN", "b"]), b":52428800\r\n");
}
