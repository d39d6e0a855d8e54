//! client-output-buffer-limit against redis-server (Redis's
//! `unit/obuf-limits`): a client that asks for much and reads nothing is
//! closed by the hard limit, or by the soft limit after its seconds, while
//! other clients are served.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::support::*;

/// Pipelines `n` LRANGEs of a ~100 KB list without reading, then reads
/// everything that comes until the server closes the connection; returns
/// the bytes received, or None if it stayed open past the deadline.
fn slow_reader(port: u16, n: usize, deadline: Duration) -> Option<usize> {
    let mut c = Raw::connect(port);
    let cmd = b"*4\r\n$6\r\nLRANGE\r\n$3\r\nbig\r\n$1\r\n0\r\n$2\r\n-1\r\n".repeat(n);
    c.send(&cmd);
    // Let the server run the whole pipeline before anything is read.
    let mut other = Raw::connect(port);
    assert_eq!(other.cmd_str(&["PING"]), b"+PONG\r\n");
    let mut sock = c.into_stream();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let end = Instant::now() + deadline;
    let mut total = 0;
    let mut buf = vec![0u8; 1 << 16];
    while Instant::now() < end {
        match sock.read(&mut buf) {
            Ok(0) => return Some(total),
            Ok(k) => total += k,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return Some(total),
        }
    }
    None
}

fn fill_list(raw: &mut Raw) {
    let item = "v".repeat(100);
    for _ in 0..10 {
        let mut args = vec!["RPUSH", "big"];
        args.extend(std::iter::repeat_n(item.as_str(), 100));
        assert!(raw.cmd_str(&args).starts_with(b":"));
    }
}

#[test]
fn a_client_past_the_normal_hard_limit_is_closed_like_redis() {
    let limit = ["client-output-buffer-limit", "normal 1mb 0 0"];
    let server = start();
    let redis = spawn_redis();
    for port in [server.port, redis.port] {
        let mut r = Raw::connect(port);
        let mut set = vec!["CONFIG", "SET"];
        set.extend(limit);
        assert_eq!(r.cmd_str(&set), b"+OK\r\n");
        fill_list(&mut r);
        // 300 replies of ~105 KB: far more than the limit.
        let got = slow_reader(port, 300, Duration::from_secs(10));
        let got = got.unwrap_or_else(|| panic!("port {port}: the slow client was not closed"));
        assert!(got < 30 << 20, "port {port}: {got} bytes before closing");
        assert_eq!(r.cmd_str(&["PING"]), b"+PONG\r\n");
    }
}

#[test]
fn without_a_limit_every_reply_arrives() {
    let server = start();
    let mut r = server.raw();
    fill_list(&mut r);
    // The normal class has no limit by default: nothing is cut.
    let got = slow_reader(server.port, 20, Duration::from_secs(2));
    assert_eq!(got, None);
}

#[test]
fn the_soft_limit_closes_a_client_that_stays_over_it() {
    let server = start();
    let mut r = server.raw();
    assert_eq!(
        r.cmd_str(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 1mb 1"
        ]),
        b"+OK\r\n"
    );
    fill_list(&mut r);
    let mut c = Raw::connect(server.port);
    let id = String::from_utf8_lossy(&c.cmd_str(&["CLIENT", "ID"]))
        .trim_start_matches(':')
        .trim()
        .to_string();
    let one = b"*4\r\n$6\r\nLRANGE\r\n$3\r\nbig\r\n$1\r\n0\r\n$2\r\n-1\r\n";
    let mut sock = c.into_stream();
    let started = Instant::now();
    sock.write_all(&one.repeat(300)).expect("send");
    // Over the soft limit at once; closed once it has stayed over it for
    // a second and more output is queued, never before.
    let listed = |r: &mut Raw| {
        String::from_utf8_lossy(&r.cmd_str(&["CLIENT", "LIST"])).contains(&format!("id={id} "))
    };
    assert!(wait_until(Duration::from_secs(10), || {
        let _ = sock.write_all(one);
        !listed(&mut r)
    }));
    assert!(started.elapsed() >= Duration::from_secs(1));
}

/// The output a subscriber that reads nothing holds, side by side with
/// redis-server (obuf-limits' "hard limit is enforced"): CLIENT LIST's
/// `omem` follows its pending messages up to the pub/sub hard limit of
/// 100000 bytes, where it is closed; never the size of everything the
/// socket took before it filled.
#[test]
fn omem_follows_a_slow_subscribers_pending_output_as_redis() {
    on_both_processes(|port, who| {
        let mut m = Raw::connect(port);
        assert_eq!(
            m.cmd_str(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 100000 0 0"
            ]),
            b"+OK\r\n"
        );
        let mut sub = Raw::connect(port);
        assert!(sub.cmd_str(&["SUBSCRIBE", "foo"]).starts_with(b"*3\r\n"));
        let mut last = 0u64;
        for _ in 0..1_000_000 {
            m.cmd_str(&["PUBLISH", "foo", "bar"]);
            let list = String::from_utf8_lossy(&m.cmd_str(&["CLIENT", "LIST", "TYPE", "pubsub"]))
                .into_owned();
            let Some(omem) = list
                .split(' ')
                .find_map(|f| f.strip_prefix("omem="))
                .and_then(|v| v.parse::<u64>().ok())
            else {
                break;
            };
            last = omem;
            if omem > 200_000 {
                break;
            }
        }
        assert!((70_000..200_000).contains(&last), "{who}: omem {last}");
    });
}

/// Output that fits in the client's reply buffer does not count against
/// the limits (Redis counts its reply list only): with a 1-byte hard
/// limit, small replies still arrive, and a reply larger than the buffer
/// closes the client.
#[test]
fn replies_that_fit_the_reply_buffer_pass_a_tiny_limit_as_in_redis() {
    let server = start();
    let redis = spawn_redis();
    for port in [server.port, redis.port] {
        let mut r = Raw::connect(port);
        assert_eq!(
            r.cmd_str(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 1 1 1"
            ]),
            b"+OK\r\n"
        );
        assert_eq!(r.cmd_str(&["PING"]), b"+PONG\r\n");
        assert_eq!(r.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
        let mut other = Raw::connect(port);
        assert_eq!(other.cmd_str(&["GET", "k"]), b"$1\r\nv\r\n");
        let big = "x".repeat(64 * 1024);
        assert_eq!(r.cmd_str(&["SET", "big", &big]), b"+OK\r\n");
        // 64 KB does not fit in the 16 KB reply buffer: the reply passes
        // the limit and the client is closed instead of answered.
        r.send(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n");
        let got = r.read_to_close();
        assert!(
            got.len() < big.len(),
            "port {port}: got {} bytes",
            got.len()
        );
    }
}

/// About 110 KB of KEYS output passes a 100,000-byte hard limit in both
/// (Redis counts its reply list nodes beyond the reply buffer).
#[test]
fn keys_output_past_the_hard_limit_closes_the_client_as_in_redis() {
    let server = start();
    let redis = spawn_redis();
    let prefix = "k".repeat(100);
    for port in [server.port, redis.port] {
        let mut r = Raw::connect(port);
        for chunk in 0..10 {
            let mut args = vec!["MSET".to_string()];
            for i in 0..100 {
                args.push(format!("{prefix}{}", chunk * 100 + i));
                args.push("v".into());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            assert_eq!(r.cmd_str(&args), b"+OK\r\n");
        }
        assert_eq!(
            r.cmd_str(&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 100000 0 0"
            ]),
            b"+OK\r\n"
        );
        r.send(b"*2\r\n$4\r\nKEYS\r\n$1\r\n*\r\n");
        let got = r.read_to_close();
        assert!(got.len() < 100_000, "port {port}: got {} bytes", got.len());
    }
}
