//! Client-side caching (Redis's unit/tracking.tcl): CLIENT TRACKING in
//! every mode, run side by side with redis-server. Each step sends a
//! command on one connection, then PING, and compares everything that
//! connection received up to the PONG — replies and invalidation messages
//! in the order they arrived — with redis-server's.

use std::time::Duration;

use crate::support::{encode, start_with, wait_until, Pair, Raw};

/// A connection on each server, kept in step.
struct Conn {
    ours: Raw,
    theirs: Raw,
    /// (ours, theirs) CLIENT ID, for commands and replies that name it.
    ids: Ids,
    /// Between MULTI and EXEC/DISCARD.
    in_multi: bool,
}

/// A connection's CLIENT ID on (ferrokv, redis-server).
type Ids = (String, String);

/// Everything `raw` received up to the reply of a `PING sync` sent after
/// `args`: the command's reply and any pushes around it; with `single`,
/// the one reply.
fn exchange(raw: &mut Raw, args: &[&[u8]], single: bool) -> Vec<u8> {
    if single {
        return raw.cmd(args);
    }
    let mut wire = encode(args);
    wire.extend_from_slice(&encode(&[b"PING", b"sync"]));
    raw.send(&wire);
    let mut got = Vec::new();
    loop {
        let frame = raw.read_reply();
        // PING's reply, or a RESP2 subscriber's [pong, sync].
        if frame == b"$4\r\nsync\r\n" || frame == b"*2\r\n$4\r\npong\r\n$4\r\nsync\r\n" {
            return got;
        }
        got.extend_from_slice(&frame);
    }
}

impl Conn {
    fn open(p: &Pair) -> Conn {
        let (mut ours, mut theirs) = p.connect_again();
        let id = |r: &mut Raw| {
            let reply = String::from_utf8_lossy(&r.cmd_str(&["CLIENT", "ID"])).into_owned();
            reply.trim_start_matches(':').trim_end().to_string()
        };
        let ids = (id(&mut ours), id(&mut theirs));
        Conn {
            ours,
            theirs,
            ids,
            in_multi: false,
        }
    }

    /// Runs `line` (split on spaces; `$ID` stands for the client id of
    /// the connection whose `other` ids are given) on both and asserts
    /// both received the same bytes, ids aside; returns ferrokv's.
    fn same(&mut self, line: &str, other: Option<&Ids>) -> String {
        let args = |id: Option<&String>| -> Vec<Vec<u8>> {
            line.split(' ')
                .map(|a| match (a, id) {
                    ("$ID", Some(id)) => id.as_bytes().to_vec(),
                    _ => a.as_bytes().to_vec(),
                })
                .collect()
        };
        let a = args(other.map(|o| &o.0));
        let b = args(other.map(|o| &o.1));
        let first = line.split(' ').next().unwrap_or("").to_ascii_uppercase();
        let queued = self.in_multi && first != "EXEC" && first != "DISCARD";
        // MULTI would queue the PING, and CLIENT CACHING would apply to it.
        let single =
            queued || first == "MULTI" || line.to_ascii_uppercase().starts_with("CLIENT CACHING");
        let a: Vec<&[u8]> = a.iter().map(Vec::as_slice).collect();
        let b: Vec<&[u8]> = b.iter().map(Vec::as_slice).collect();
        let ours = exchange(&mut self.ours, &a, single);
        let theirs = exchange(&mut self.theirs, &b, single);
        if first == "MULTI" {
            self.in_multi = true;
        } else if !queued {
            self.in_multi = false;
        }
        // Integer replies carrying the other client's id (at the start of
        // a frame).
        let norm = |bytes: &[u8], own: &str, id: Option<&String>| {
            let s = format!("\n{}", String::from_utf8_lossy(bytes));
            // HELLO's own id.
            let s = s.replace(&format!("$2\r\nid\r\n:{own}\r\n"), "$2\r\nid\r\n:<own>\r\n");
            match id {
                Some(id) => s.replace(&format!("\n:{id}\r\n"), "\n:<id>\r\n"),
                None => s,
            }
        };
        let ours = norm(&ours, &self.ids.0, other.map(|o| &o.0));
        let theirs = norm(&theirs, &self.ids.1, other.map(|o| &o.1));
        assert_eq!(ours, theirs, "after {line:?}");
        ours
    }

    /// CLIENT INFO of this connection on (ferrokv, redis-server); its
    /// fields differ by nature, so callers check the ones they need.
    fn client_info(&mut self) -> [String; 2] {
        [&mut self.ours, &mut self.theirs]
            .map(|r| String::from_utf8_lossy(&r.cmd_str(&["CLIENT", "INFO"])).into_owned())
    }

    /// [`Conn::same`] for each line; returns what ferrokv sent for all.
    fn run(&mut self, lines: &[&str]) -> String {
        lines.iter().map(|l| self.same(l, None)).collect()
    }
}

#[test]
fn resp3_invalidations_of_reads() {
    let p = Pair::new();
    let mut a = Conn::open(&p);
    let mut b = Conn::open(&p);
    a.run(&["HELLO 3", "CLIENT TRACKING on", "GET k1", "MGET k2 k3 k1"]);
    a.run(&[
        "HGETALL h",
        "STRLEN k4",
        "EXISTS k5 k6",
        "SMEMBERS s",
        "ZRANGE z 0 -1",
    ]);
    b.run(&[
        "SET k1 x",
        "MSET k2 1 k3 2",
        "HSET h f v",
        "APPEND k4 a",
        "SADD s m",
    ]);
    b.run(&["SET k5 1", "DEL k6", "ZADD z 1 m", "SET k1 again"]);
    let got = a.same("PING", None);
    for k in ["k1", "k2", "k3", "h", "k4", "s", "k5", "z"] {
        assert!(
            got.contains(&format!("${}\r\n{k}\r\n", k.len())),
            "{k} in {got}"
        );
    }
    // A key is invalidated once, then forgotten until read again.
    assert_eq!(got.matches("$2\r\nk1\r\n").count(), 1, "{got}");
    // Writes by the tracking client itself: the message follows the reply.
    a.run(&[
        "GET k1",
        "SET k1 mine",
        "GET k1",
        "INCR k1",
        "GET k2",
        "DEL k2",
    ]);
    a.run(&["CLIENT TRACKING off", "GET k3", "CLIENT TRACKINGINFO"]);
    b.run(&["SET k3 after"]);
    a.run(&["PING"]);
}

/// The keys a read is remembered under are Redis's getKeysFromCommand's:
/// XREAD's own xreadGetKeys finds none when an option before STREAMS is
/// unknown or the names and IDs after it are an odd number, so such a
/// read (an error) tracks nothing; and the commands that take a count of
/// keys read it with atoi, so SINTERCARD 1.5 tracks its key. ferrokv
/// followed the key specs there, as COMMAND GETKEYS does, and its
/// invalidations differed from Redis's (found by the command fuzzer with
/// `--track`).
#[test]
fn reads_track_the_keys_redis_getkeys_finds() {
    let p = Pair::new();
    let mut a = Conn::open(&p);
    let mut b = Conn::open(&p);
    a.run(&[
        "HELLO 3",
        "CLIENT TRACKING on",
        "XREAD STREAMS x1 x2 0 0 1",
        "XREAD FOO STREAMS x3 0",
        "XREAD COUNT abc STREAMS x4 0",
        "XREAD COUNT 1 STREAMS x5 0",
        "XREADGROUP GROUP g c STREAMS x6",
        // A count of keys is read with atoi by Redis's genericGetKeys:
        // "1.5" is 1, "4294967297" is 1 once cast to an int.
        "SINTERCARD 1.5 n1",
        "ZINTERCARD 007 n2",
        "ZUNION 4294967297 n3",
        "ZDIFF 2 n4",
    ]);
    b.run(&[
        "SET x1 v", "SET x2 v", "SET x3 v", "SET x4 v", "SET x5 v", "SET x6 v", "SET n1 v",
        "SET n2 v", "SET n3 v", "SET n4 v",
    ]);
    let got = a.same("PING", None);
    assert!(got.contains("$2\r\nx5\r\n"), "{got}");
    assert!(got.contains("$2\r\nn1\r\n"), "{got}");
}

#[test]
fn options_and_errors() {
    let p = Pair::new();
    let mut a = Conn::open(&p);
    let b = Conn::open(&p);
    a.run(&[
        "CLIENT TRACKING",
        "CLIENT TRACKING maybe",
        "CLIENT TRACKING on foo",
        "CLIENT TRACKING on redirect",
        "CLIENT TRACKING on redirect x",
        "CLIENT TRACKING on redirect 999999",
        "CLIENT TRACKING on redirect 0",
        "CLIENT TRACKING on prefix a",
        "CLIENT TRACKING on bcast optin",
        "CLIENT TRACKING on bcast optout",
        "CLIENT TRACKING on optin optout",
        "CLIENT TRACKING on bcast prefix a prefix ab",
        "CLIENT TRACKING on bcast prefix ab prefix a",
        "CLIENT TRACKING off redirect x",
        "CLIENT TRACKING off",
        "CLIENT CACHING yes",
        "CLIENT CACHING",
        "CLIENT GETREDIR",
        "CLIENT GETREDIR x",
        "CLIENT TRACKINGINFO",
        "CLIENT TRACKINGINFO x",
        "CLIENT TRACKING on optin",
        "CLIENT CACHING no",
        "CLIENT CACHING maybe",
        "CLIENT CACHING yes",
        "CLIENT TRACKINGINFO",
        "CLIENT TRACKING on optout",
        "CLIENT TRACKING on bcast",
        "CLIENT TRACKING off",
        "CLIENT TRACKING on optout noloop",
        "CLIENT CACHING yes",
        "CLIENT CACHING no",
        "CLIENT TRACKINGINFO",
        "CLIENT GETREDIR",
        "CLIENT TRACKING off",
        "CLIENT TRACKING on bcast prefix a prefix b noloop",
        "CLIENT TRACKING on bcast prefix ab",
        "CLIENT TRACKING on bcast prefix c",
        "CLIENT TRACKINGINFO",
        "CLIENT TRACKING on",
        "CLIENT TRACKING off",
        "CLIENT TRACKINGINFO",
        "CLIENT TRACKING on bcast",
        "CLIENT TRACKINGINFO",
        "CLIENT TRACKING off",
        "HELLO 3",
        "CLIENT TRACKINGINFO",
        "CLIENT HELP",
    ]);
    a.same("CLIENT TRACKING on redirect $ID", Some(&b.ids));
    a.same("CLIENT GETREDIR", Some(&b.ids));
    a.same("CLIENT TRACKINGINFO", Some(&b.ids));
    a.same("CLIENT TRACKING on redirect $ID redirect $ID", Some(&b.ids));
}

#[test]
fn optin_optout_and_noloop() {
    let p = Pair::new();
    let mut a = Conn::open(&p);
    let mut b = Conn::open(&p);
    a.run(&["HELLO 3", "CLIENT TRACKING on optin", "GET k1"]);
    a.run(&["CLIENT CACHING yes", "GET k2", "GET k3"]);
    b.run(&["MSET k1 1 k2 2 k3 3"]);
    a.run(&["PING"]);
    // CACHING holds through a transaction.
    a.run(&["CLIENT CACHING yes", "MULTI", "GET k1", "GET k3", "EXEC"]);
    b.run(&["MSET k1 1 k2 2 k3 3"]);
    a.run(&["PING", "CLIENT TRACKING off"]);
    a.run(&[
        "CLIENT TRACKING on optout",
        "CLIENT CACHING no",
        "GET k1",
        "GET k2",
    ]);
    b.run(&["MSET k1 1 k2 2"]);
    a.run(&["PING", "CLIENT TRACKING off"]);
    a.run(&[
        "CLIENT TRACKING on noloop",
        "GET k1",
        "GET k2",
        "SET k1 own",
    ]);
    b.run(&["SET k2 other"]);
    a.run(&["PING"]);
}

#[test]
fn redirect_to_a_resp2_subscriber_and_broken_redirect() {
    let p = Pair::new();
    let mut a = Conn::open(&p);
    let mut b = Conn::open(&p);
    let mut r = Conn::open(&p);
    r.run(&["SUBSCRIBE __redis__:invalidate"]);
    a.same("CLIENT TRACKING on redirect $ID", Some(&r.ids));
    a.run(&["GET k1", "MGET k2 k3"]);
    b.run(&["SET k1 1", "DEL k2", "FLUSHDB"]);
    r.run(&["PING"]);
    // A RESP2 redirect target that is not subscribed gets nothing.
    let mut q = Conn::open(&p);
    a.same("CLIENT TRACKING on redirect $ID", Some(&q.ids));
    a.run(&["GET k1"]);
    b.run(&["SET k1 2"]);
    q.run(&["PING"]);
    // The redirect target goes away: a RESP3 client hears of it.
    a.run(&["HELLO 3", "GET k1"]);
    let gone = q.ids.clone();
    drop(q);
    let mut x = Conn::open(&p);
    x.run(&["PING"]);
    // Both servers have seen the redirect target go before the write.
    let (ours_id, theirs_id) = (gone.0.clone(), gone.1.clone());
    for (raw, id) in [(&mut x.ours, ours_id), (&mut x.theirs, theirs_id)] {
        assert!(wait_until(Duration::from_secs(10), || raw
            .cmd_str(&["CLIENT", "LIST", "ID", &id])
            == b"$0\r\n\r\n"));
    }
    b.run(&["SET k1 3"]);
    a.same("PING", Some(&gone));
    a.same("CLIENT TRACKINGINFO", Some(&gone));
    for info in a.client_info() {
        assert!(info.contains("flags=tR "), "{info}");
    }
}

#[test]
fn bcast_prefixes_and_noloop() {
    let p = Pair::new();
    let mut a = Conn::open(&p);
    let mut b = Conn::open(&p);
    let mut c = Conn::open(&p);
    a.run(&[
        "HELLO 3",
        "CLIENT TRACKING on bcast prefix user: prefix obj:",
    ]);
    c.run(&["HELLO 3", "CLIENT TRACKING on bcast noloop"]);
    b.run(&["MSET user:1 a user:2 b other c obj:9 d", "SET user:1 again"]);
    a.run(&["PING"]);
    c.run(&["PING", "SET mine 1", "SET user:3 x"]);
    b.run(&["SET user:3 y"]);
    c.run(&["PING"]);
    a.run(&["PING", "CLIENT TRACKINGINFO", "SET obj:1 own"]);
    a.run(&["PING"]);
    for info in a.client_info() {
        assert!(
            info.contains("flags=tB ") && info.contains(" redir=0 "),
            "{info}"
        );
    }
}

#[test]
fn flush_multi_and_scripts() {
    let p = Pair::new();
    let mut a = Conn::open(&p);
    let mut b = Conn::open(&p);
    let mut c = Conn::open(&p);
    a.run(&["HELLO 3", "CLIENT TRACKING on", "GET k1"]);
    c.run(&["CLIENT TRACKING on"]);
    b.run(&["FLUSHALL"]);
    // A flush is a null to every tracking client; RESP2 without a redirect
    // gets nothing.
    assert!(a
        .run(&["PING"])
        .contains(">2\r\n$10\r\ninvalidate\r\n_\r\n"));
    assert!(!c.run(&["PING"]).contains("invalidate"));
    let own = a.run(&["GET k1", "FLUSHDB"]);
    assert!(
        own.ends_with("+OK\r\n>2\r\n$10\r\ninvalidate\r\n_\r\n"),
        "{own}"
    );
    // Writes inside MULTI, by others and by the client itself.
    a.run(&["GET k1", "GET k2"]);
    b.run(&["MULTI", "SET k1 1", "SET k2 2", "EXEC"]);
    a.run(&[
        "PING",
        "MGET k1 k2",
        "MULTI",
        "SET k1 3",
        "GET k2",
        "DEL k2",
        "EXEC",
    ]);
    // A script's reads remember its declared keys; its writes invalidate.
    a.run(&[
        "EVAL return(1) 1 k3",
        "EVAL return(redis.call('get',KEYS[1])) 2 k3 k4",
    ]);
    b.run(&["MSET k3 1 k4 2"]);
    let got = a.run(&["PING"]);
    assert!(got.contains("k3") && got.contains("k4"), "{got}");
    a.run(&[
        "EVAL redis.call('get',KEYS[1]);redis.call('set',KEYS[1],'x') 1 k5",
        "EVAL_RO return(redis.call('get',KEYS[1])) 1 k6",
    ]);
    b.run(&["MSET k5 1 k6 2"]);
    a.run(&["PING"]);
    b.run(&["EVAL redis.call('set',KEYS[1],'y') 1 k6", "FUNCTION FLUSH"]);
    a.run(&["PING"]);
}

/// Invalidations for keys that expire, lazily and in the active cycle,
/// and for keys dropped to keep tracking-table-max-keys.
#[test]
fn expiry_and_table_limit() {
    let p = Pair::new();
    let mut a = Conn::open(&p);
    let mut b = Conn::open(&p);
    a.run(&["HELLO 3", "CLIENT TRACKING on"]);
    b.run(&["SET lazy 1 PX 30", "SET active 1 PX 30"]);
    a.run(&["GET lazy", "GET active"]);
    // Each side expires `lazy` on access and `active` in its cycle.
    for raw in [&mut b.ours, &mut b.theirs] {
        assert!(wait_until(Duration::from_secs(5), || {
            raw.cmd_str(&["EXISTS", "lazy"]) == b":0\r\n"
        }));
        assert!(wait_until(Duration::from_secs(5), || {
            raw.cmd_str(&["DBSIZE"]) == b":0\r\n"
        }));
    }
    // Which key expires first depends on when each server's cycle runs:
    // the messages are compared in any order.
    let frames = |raw: &mut Raw| {
        let got = String::from_utf8_lossy(&exchange(raw, &[b"PING"], false)).into_owned();
        let got = got.strip_suffix("+PONG\r\n").unwrap_or(&got).to_string();
        let mut frames: Vec<String> = got.split(">2\r\n").map(str::to_string).collect();
        frames.sort();
        frames
    };
    let ours = frames(&mut a.ours);
    assert_eq!(ours, frames(&mut a.theirs));
    let got = ours.concat();
    assert!(
        got.contains("$4\r\nlazy") && got.contains("$6\r\nactive"),
        "{got}"
    );
    a.run(&["CONFIG SET tracking-table-max-keys 2"]);
    // The next command (the PING after MGET) trims the table to 2 keys,
    // telling the client of the keys dropped (chosen at random: only the
    // count is compared).
    let count = |raw: &mut Raw| {
        let got = exchange(raw, &[b"MGET", b"t1", b"t2", b"t3", b"t4"], false);
        String::from_utf8_lossy(&got).matches("invalidate").count()
    };
    assert_eq!(count(&mut a.ours), 2);
    assert_eq!(count(&mut a.theirs), 2);
    for raw in [&mut a.ours, &mut a.theirs] {
        let info = String::from_utf8_lossy(&raw.cmd_str(&["INFO", "stats"])).into_owned();
        assert!(info.contains("tracking_total_keys:2\r\n"), "{info}");
    }
}

/// A tracked key evicted under maxmemory is invalidated.
#[test]
fn eviction_invalidates() {
    let server = start_with(|c| {
        c.maxmemory_policy = "allkeys-random".into();
    });
    let mut a = server.raw();
    let mut b = server.raw();
    a.cmd_str(&["HELLO", "3"]);
    a.cmd_str(&["CLIENT", "TRACKING", "on"]);
    b.cmd_str(&["SET", "k", "v"]);
    a.cmd_str(&["GET", "k"]);
    b.cmd_str(&["CONFIG", "SET", "maxmemory", "1"]);
    // Any write now evicts every key.
    b.cmd_str(&["SET", "other", "v"]);
    let got = String::from_utf8_lossy(&exchange(&mut a, &[b"PING"], false)).into_owned();
    assert_eq!(got, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n+PONG\r\n");
}

/// A key evicted before a client's own command runs is invalidated ahead
/// of that command's reply (Redis's performEvictions in processCommand),
/// unlike keys the command itself changes.
#[test]
fn eviction_before_a_command_is_announced_before_its_reply_like_redis() {
    // A process of its own: its allocator's figures are its own.
    let server = crate::support::spawn_ferrokv_process();
    let redis = crate::support::spawn_redis();
    let mut ours = Raw::connect(server.port);
    let mut theirs = Raw::connect(redis.port);
    let mut got = Vec::new();
    for r in [&mut ours, &mut theirs] {
        r.cmd_str(&["HELLO", "3"]);
        r.cmd_str(&["CLIENT", "TRACKING", "on"]);
        r.cmd_str(&["CONFIG", "SET", "maxmemory-policy", "volatile-random"]);
        let info = String::from_utf8_lossy(&r.cmd_str(&["INFO", "memory"])).into_owned();
        let field = |name: &str| -> u64 {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        let limit = field("used_memory") - field("mem_not_counted_for_evict") + 100 * 1024;
        r.cmd_str(&["CONFIG", "SET", "maxmemory", &limit.to_string()]);
        r.cmd_str(&["SETEX", "volatile-key", "10000", "x"]);
        r.cmd_str(&["GET", "volatile-key"]);
        // 200 KB: over the limit once written.
        r.cmd_str(&["SETBIT", "big-key", "1600000", "0"]);
        got.push(exchange(r, &[b"GETBIT", b"big-key", b"0"], false));
        r.cmd_str(&["CONFIG", "SET", "maxmemory", "0"]);
    }
    assert_eq!(got[0], got[1]);
    assert_eq!(
        String::from_utf8_lossy(&got[0]),
        ">2\r\n$10\r\ninvalidate\r\n*1\r\n$12\r\nvolatile-key\r\n:0\r\n"
    );
}

/// Random reads and writes from a tracking client and another client, in
/// a mode drawn at random: everything each connection receives is the
/// same as redis-server's, step by step.
#[test]
fn random_sequences_against_redis() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let p = Pair::new();
    let mut a = Conn::open(&p);
    let mut b = Conn::open(&p);
    a.run(&["HELLO 3"]);
    let keys = prop::sample::select(vec!["k1", "k2", "p:1", "p:2", "h"]);
    let step = (any::<bool>(), 0..9u8, keys.clone(), keys).prop_map(|(own, op, k, j)| {
        let line = match op {
            0 => format!("GET {k}"),
            1 => format!("MGET {k} {j}"),
            2 => format!("SET {k} v"),
            3 => format!("DEL {k} {j}"),
            4 => format!("EXISTS {k}"),
            5 => format!("MSET {k} 1 {j} 2"),
            6 => format!("RENAME {k} {j}"),
            7 => "FLUSHDB".to_string(),
            _ => format!("EVAL return(redis.call('get',KEYS[1])) 1 {k}"),
        };
        (own, line)
    });
    let mode = prop::sample::select(vec![
        "CLIENT TRACKING on",
        "CLIENT TRACKING on noloop",
        "CLIENT TRACKING on bcast",
        "CLIENT TRACKING on bcast prefix p: noloop",
        "CLIENT TRACKING on optin",
        "CLIENT TRACKING on optout",
    ]);
    let config = Config {
        cases: 60,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let conns = std::cell::RefCell::new((&mut a, &mut b));
    let result = runner.run(
        &(mode, prop::collection::vec(step, 1..25)),
        |(mode, steps)| {
            let (a, b) = &mut *conns.borrow_mut();
            a.run(&["CLIENT TRACKING off", "FLUSHALL", mode]);
            for (own, line) in &steps {
                if *own {
                    a.same(line, None);
                } else {
                    b.same(line, None);
                }
            }
            a.run(&["PING"]);
            Ok(())
        },
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// INFO's tracking counts on (ferrokv, redis-server).
fn tracking_counts(c: &mut Conn) -> [String; 2] {
    [&mut c.ours, &mut c.theirs].map(|r| {
        let info = String::from_utf8_lossy(&r.cmd_str(&["INFO", "everything"])).into_owned();
        info.split("\r\n")
            .filter(|l| l.starts_with("tracking_"))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// Clients come and go in numbers (past 64, and reusing the places of
/// those gone): the keys they read are counted as Redis counts its ids,
/// the clients still there are told of writes, those gone and those new
/// are not; tracking switched off and on again, or after RESET, still
/// invalidates what was read before.
#[test]
fn clients_that_come_and_go() {
    let p = Pair::new();
    let mut w = Conn::open(&p);
    let connected = |w: &mut Conn, n: usize| {
        wait_until(Duration::from_secs(10), || {
            let info = String::from_utf8_lossy(&w.ours.cmd_str(&["INFO", "clients"])).into_owned();
            info.contains(&format!("\r\nconnected_clients:{n}\r\n"))
        })
    };
    let mut kept: Vec<Conn> = Vec::new();
    for round in 0..3 {
        let mut open: Vec<Conn> = (0..70).map(|_| Conn::open(&p)).collect();
        for (i, c) in open.iter_mut().enumerate() {
            c.run(&["HELLO 3", "CLIENT TRACKING on"]);
            c.same(&format!("MGET k{} k{} r{round}", i % 10, i % 7), None);
        }
        // Every other one goes away, the rest stay to the end.
        for (i, c) in open.into_iter().enumerate() {
            if i % 2 == 0 {
                kept.push(c);
            }
        }
        // The pair's own connection, `w` and the kept ones.
        assert!(connected(&mut w, 2 + kept.len()), "disconnections seen");
        let [ours, theirs] = tracking_counts(&mut w);
        assert_eq!(ours, theirs, "round {round}");
        w.run(&[&format!("SET k{round} x"), &format!("DEL r{round}")]);
        for c in &mut kept {
            c.same("PING", None);
        }
        let [ours, theirs] = tracking_counts(&mut w);
        assert_eq!(ours, theirs, "round {round} after writes");
    }
    let c = &mut kept[0];
    c.run(&[
        "GET k8",
        "CLIENT TRACKING off",
        "CLIENT TRACKING on",
        "GET k9",
    ]);
    c.run(&["RESET", "HELLO 3", "CLIENT TRACKING on"]);
    w.run(&["MSET k8 1 k9 2", "FLUSHALL"]);
    for c in &mut kept {
        c.same("PING", None);
    }
    let [ours, theirs] = tracking_counts(&mut w);
    assert_eq!(ours, theirs, "at the end");
}
