//! In-process checks of what the wire cannot show on its own: OBJECT
//! ENCODING of every write path, TTL preservation and RESP3 reply shapes
//! (expected bytes captured from redis-server 7.0.15).

use std::sync::Arc;

use crate::config::Config;
use crate::net::link::Shared;
use crate::net::request::OwnedArgv;
use crate::server::call::{call, Caller};
use crate::server::client::Client;
use crate::server::ServerState;
use crate::store::Store;

/// A server model and keyspace driven through the one command path.
struct Harness {
    server: ServerState,
    store: Store,
    client: Client,
}

impl Harness {
    fn new() -> Self {
        let config = Config::default();
        let store = Store::new(config.databases);
        let server = ServerState::new(config, Arc::new(Shared::default()), 0, crate::cmd::FAMILIES);
        Harness {
            server,
            store,
            client: Client::internal(),
        }
    }

    fn run(&mut self, line: &str) -> String {
        let argv = OwnedArgv::from_slices(line.split(' ').map(str::as_bytes));
        let mut out = Vec::new();
        let (server, store) = (&mut self.server, &mut self.store);
        call(
            server,
            store,
            &mut self.client,
            argv.argv(),
            &mut out,
            Caller::Client,
        );
        String::from_utf8_lossy(&out).into_owned()
    }

    fn encoding(&self, key: &str) -> &'static str {
        self.store
            .peek(0, key.as_bytes())
            .map_or("none", |e| e.encoding())
    }

    fn expire_at(&self, key: &str) -> u64 {
        self.store
            .peek(0, key.as_bytes())
            .map_or(0, |e| e.expire_at())
    }
}

#[test]
fn encodings_follow_redis() {
    let mut h = Harness::new();
    let long = "x".repeat(45);
    let cases: Vec<(String, &str, &str)> = vec![
        ("SET k 123".into(), "k", "int"),
        ("SET k -9223372036854775808".into(), "k", "int"),
        ("SET k 0123".into(), "k", "embstr"),
        ("SET k abc".into(), "k", "embstr"),
        (format!("SET k {}", &long[..44]), "k", "embstr"),
        (format!("SET k {long}"), "k", "raw"),
        ("APPEND k x".into(), "k", "raw"),
        ("SET a 12".into(), "a", "int"),
        ("APPEND a 3".into(), "a", "raw"),
        ("INCR a".into(), "a", "int"),
        ("APPEND new 12".into(), "new", "int"),
        ("APPEND new2 hello".into(), "new2", "embstr"),
        ("SETRANGE r 2 ab".into(), "r", "raw"),
        ("SET s 10".into(), "s", "int"),
        ("SETRANGE s 0 2".into(), "s", "raw"),
        ("INCRBYFLOAT f 3".into(), "f", "embstr"),
        ("INCRBYFLOAT s 1.5".into(), "s", "embstr"),
        ("MSET m1 5 m2 five".into(), "m1", "int"),
        ("GETSET m2 77".into(), "m2", "int"),
        ("SETNX n 1".into(), "n", "int"),
        ("SETEX e 100 1".into(), "e", "int"),
    ];
    for (cmd, key, enc) in cases {
        let reply = h.run(&cmd);
        assert!(!reply.starts_with('-'), "{cmd}: {reply}");
        assert_eq!(h.encoding(key), enc, "after {cmd}");
    }
}

#[test]
fn ttl_kept_or_cleared() {
    let mut h = Harness::new();
    h.run("SET k 1 EX 100");
    let at = h.expire_at("k");
    assert!(at > 0);
    for cmd in [
        "INCR k",
        "INCRBYFLOAT k 1",
        "APPEND k 0",
        "SETRANGE k 0 9",
        "SET k 5 KEEPTTL",
        "DECRBY k 2",
    ] {
        h.run(cmd);
        assert_eq!(h.expire_at("k"), at, "after {cmd}");
    }
    h.run("SET k 5");
    assert_eq!(h.expire_at("k"), 0);
    h.run("SET k 1 PX 100000");
    h.run("GETSET k 2");
    assert_eq!(h.expire_at("k"), 0);
    h.run("SET k 1 PX 100000");
    h.run("MSET k 2");
    assert_eq!(h.expire_at("k"), 0);
    h.run("SET k 1 PX 100000");
    assert_eq!(h.run("GETEX k PERSIST"), "$1\r\n1\r\n");
    assert_eq!(h.expire_at("k"), 0);
}

#[test]
fn resp3_shapes() {
    let mut h = Harness::new();
    h.client.resp3 = true;
    assert_eq!(h.run("MSET a ohmytext b mynewtext"), "+OK\r\n");
    assert_eq!(
        h.run("LCS a b IDX MINMATCHLEN 2 WITHMATCHLEN"),
        "%2\r\n$7\r\nmatches\r\n*2\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n*3\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n:2\r\n$3\r\nlen\r\n:6\r\n"
    );
    assert_eq!(
        h.run("LCS a b IDX"),
        "%2\r\n$7\r\nmatches\r\n*2\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n*2\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n$3\r\nlen\r\n:6\r\n"
    );
    assert_eq!(h.run("GET zz"), "_\r\n");
    assert_eq!(h.run("SET zz v XX"), "_\r\n");
    assert_eq!(h.run("MGET a zz"), "*2\r\n$8\r\nohmytext\r\n_\r\n");
    assert_eq!(h.run("GETEX zz"), "_\r\n");
    assert_eq!(h.run("INCRBYFLOAT f 1.5"), "$3\r\n1.5\r\n");
}

#[test]
fn wrong_type_replies() {
    const WT: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
    const LCS_ERR: &str = "-ERR The specified keys must contain string values\r\n";
    // (command, reply, whether the list survives) as redis-server 7.0.15
    // answers them against a list key `l`.
    let cases: &[(&str, &str, bool)] = &[
        ("GET l", WT, true),
        ("SET l v GET", WT, true),
        ("SET l v NX GET", WT, true),
        ("SET l v XX", "+OK\r\n", false),
        ("SET l v", "+OK\r\n", false),
        ("GETSET l v", WT, true),
        ("GETDEL l", WT, true),
        ("GETEX l", WT, true),
        ("GETEX l EX 0", WT, true),
        ("GETEX l FOO", "-ERR syntax error\r\n", true),
        ("MGET l", "*1\r\n$-1\r\n", true),
        ("MSETNX l 1 x 2", ":0\r\n", true),
        ("SETNX l 1", ":0\r\n", true),
        ("APPEND l x", WT, true),
        ("STRLEN l", WT, true),
        ("GETRANGE l 0 1", WT, true),
        ("GETRANGE l a 1", NOT_INT, true),
        ("SUBSTR l 0 1", WT, true),
        ("SETRANGE l 0 x", WT, true),
        ("SETRANGE l -1 x", "-ERR offset is out of range\r\n", true),
        ("INCR l", WT, true),
        ("INCRBY l x", NOT_INT, true),
        ("DECRBY l 1", WT, true),
        ("INCRBYFLOAT l 1", WT, true),
        ("INCRBYFLOAT l x", WT, true),
        ("LCS l x", LCS_ERR, true),
        ("LCS x l", LCS_ERR, true),
        ("LCS l x FOO", LCS_ERR, true),
    ];
    for &(cmd, want, survives) in cases {
        let mut h = Harness::new();
        h.store.set(
            0,
            b"l",
            crate::store::value::Value::List(Box::default()),
            crate::store::Ttl::None,
        );
        assert_eq!(h.run(cmd), want, "{cmd}");
        let kind = h.store.peek(0, b"l").map(|e| e.type_name());
        let want_kind = if survives { "list" } else { "string" };
        assert_eq!(kind, Some(want_kind), "{cmd}");
    }
}
