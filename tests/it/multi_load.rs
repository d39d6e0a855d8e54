//! Transactions under load and through a client library: the queue bound,
//! optimistic concurrency with WATCH, a rate limiter built on MULTI, and
//! the `redis` crate's atomic pipeline and transaction helper.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::support::*;

/// A client cannot grow without bound by queueing: past
/// client-query-buffer-limit it is closed, and the server goes on.
#[test]
fn queue_is_bounded() {
    let server = start_with(|c| c.client_query_buffer_limit = 256 * 1024);
    let mut sock = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    assert_eq!(
        raw_cmd(&mut sock, &[b"MULTI"]).as_deref(),
        Some(&b"+OK\r\n"[..])
    );
    let value = vec![b'x'; 4096];
    let mut queued = 0;
    while let Some(reply) = raw_cmd(&mut sock, &[b"SET", b"k", &value]) {
        assert_eq!(reply, b"+QUEUED\r\n");
        queued += 1;
        assert!(queued < 200, "still queueing past the limit");
    }
    assert!(queued >= 50, "closed too early, after {queued} commands");
    let mut b = server.raw();
    assert_eq!(b.cmd_str(&["GET", "k"]), b"$-1\r\n");
    assert_eq!(b.cmd_str(&["MULTI"]), b"+OK\r\n");
    assert_eq!(b.cmd_str(&["SET", "k", "v"]), b"+QUEUED\r\n");
    assert_eq!(b.cmd_str(&["EXEC"]), b"*1\r\n+OK\r\n");
}

/// Sends one command and reads its reply; None once the server has closed
/// the connection.
fn raw_cmd(sock: &mut TcpStream, args: &[&[u8]]) -> Option<Vec<u8>> {
    sock.write_all(&encode(args)).ok()?;
    let mut buf = Vec::new();
    loop {
        if let Some(n) = frame_len(&buf) {
            buf.truncate(n);
            return Some(buf);
        }
        let mut chunk = [0u8; 4096];
        match sock.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Eight clients each add 1 to one counter 500 times with WATCH/GET/
/// MULTI/SET/EXEC and retry on a null EXEC: no update is lost.
#[test]
fn optimistic_counter_under_contention() {
    let server = start();
    let port = server.port;
    let workers: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let mut retries = 0u64;
                for _ in 0..500 {
                    loop {
                        // WATCH and GET in one write, then MULTI, SET and
                        // EXEC in another: two round trips per attempt.
                        c.send(&encode(&[b"WATCH", b"counter"]));
                        c.send(&encode(&[b"GET", b"counter"]));
                        assert_eq!(c.read_reply(), b"+OK\r\n");
                        let n = bulk_int(&c.read_reply()).unwrap_or(0);
                        let next = (n + 1).to_string();
                        let mut tx = encode(&[b"MULTI"]);
                        tx.extend(encode(&[b"SET", b"counter", next.as_bytes()]));
                        tx.extend(encode(&[b"EXEC"]));
                        c.send(&tx);
                        assert_eq!(c.read_reply(), b"+OK\r\n");
                        assert_eq!(c.read_reply(), b"+QUEUED\r\n");
                        match c.read_reply().as_slice() {
                            b"*1\r\n+OK\r\n" => break,
                            b"*-1\r\n" => retries += 1,
                            other => panic!("EXEC: {}", String::from_utf8_lossy(other)),
                        }
                    }
                }
                retries
            })
        })
        .collect();
    let retries: u64 = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    let mut c = server.raw();
    assert_eq!(
        c.cmd_str(&["GET", "counter"]),
        b"$4\r\n4000\r\n",
        "after {retries} retries"
    );
}

/// A fixed-window rate limiter (MULTI, create the window key with a TTL if
/// absent, INCR, EXEC) admits exactly the limit under concurrent clients.
#[test]
fn fixed_window_rate_limiter() {
    let server = start();
    let port = server.port;
    const LIMIT: i64 = 100;
    let workers: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let mut allowed = 0;
                for _ in 0..40 {
                    assert_eq!(c.cmd_str(&["MULTI"]), b"+OK\r\n");
                    assert_eq!(
                        c.cmd_str(&["SET", "rl:window", "0", "PX", "60000", "NX"]),
                        b"+QUEUED\r\n"
                    );
                    assert_eq!(c.cmd_str(&["INCR", "rl:window"]), b"+QUEUED\r\n");
                    let reply = c.cmd_str(&["EXEC"]);
                    let text = String::from_utf8_lossy(&reply).into_owned();
                    let count: i64 = text
                        .rsplit(':')
                        .next()
                        .and_then(|s| s.trim().parse().ok())
                        .unwrap_or_else(|| panic!("EXEC: {text}"));
                    if count <= LIMIT {
                        allowed += 1;
                    }
                }
                allowed
            })
        })
        .collect();
    let allowed: i64 = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    assert_eq!(allowed, LIMIT);
    let mut c = server.raw();
    assert_eq!(c.cmd_str(&["GET", "rl:window"]), b"$3\r\n320\r\n");
}

#[test]
fn fixed_window_rate_limiter_with_expire() {
    let server = start();
    let port = server.port;
    const LIMIT: i64 = 50;
    let workers: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                let mut allowed = 0;
                for _ in 0..20 {
                    assert_eq!(c.cmd_str(&["MULTI"]), b"+OK\r\n");
                    assert_eq!(c.cmd_str(&["INCR", "rl"]), b"+QUEUED\r\n");
                    assert_eq!(c.cmd_str(&["EXPIRE", "rl", "60"]), b"+QUEUED\r\n");
                    let reply = c.cmd_str(&["EXEC"]);
                    let text = String::from_utf8_lossy(&reply).into_owned();
                    let count: i64 = text
                        .split("\r\n")
                        .nth(1)
                        .and_then(|s| s.trim_start_matches(':').parse().ok())
                        .unwrap_or_else(|| panic!("EXEC: {text}"));
                    if count <= LIMIT {
                        allowed += 1;
                    }
                }
                allowed
            })
        })
        .collect();
    let allowed: i64 = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    assert_eq!(allowed, LIMIT);
}

#[test]
fn redis_crate_atomic_pipeline_and_transaction() {
    let server = start();
    let mut con = server.client();
    let (a, b): (i64, i64) = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("p")
        .arg(1)
        .ignore()
        .cmd("INCR")
        .arg("p")
        .cmd("INCRBY")
        .arg("p")
        .arg(10)
        .query(&mut con)
        .expect("atomic pipeline");
    assert_eq!((a, b), (2, 12));

    // redis::transaction retries until the watched key is untouched.
    let mut other = server.client();
    let mut attempts = 0;
    let (result,): (i64,) = redis::transaction(&mut con, &["p"], |con, pipe| {
        attempts += 1;
        let v: i64 = redis::cmd("GET").arg("p").query(con)?;
        if attempts == 1 {
            // Touch the key between WATCH and EXEC once.
            let _: () = redis::cmd("SET").arg("p").arg(100).query(&mut other)?;
        }
        pipe.cmd("SET")
            .arg("p")
            .arg(v + 1)
            .ignore()
            .cmd("GET")
            .arg("p")
            .query(con)
    })
    .expect("transaction");
    assert_eq!(attempts, 2);
    assert_eq!(result, 101);

    // An error inside the transaction comes back as an error of the call.
    let r: redis::RedisResult<(i64,)> = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("s")
        .arg("text")
        .ignore()
        .cmd("INCR")
        .arg("s")
        .query(&mut con);
    assert!(r.is_err());
    let v: String = redis::cmd("GET").arg("s").query(&mut con).expect("get");
    assert_eq!(v, "text");
}

/// The value of a bulk reply holding an integer.
fn bulk_int(reply: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(reply).ok()?;
    text.split("\r\n").nth(1)?.parse().ok()
}
