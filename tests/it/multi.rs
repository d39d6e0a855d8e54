//! Transactions (Redis's `tests/unit/multi.tcl`): MULTI/EXEC/DISCARD,
//! queue-time and run-time errors, compared byte for byte with
//! redis-server over two connections per server. WATCH cases are in
//! `watch.rs`, load and client-library checks in `multi_load.rs`.

use std::time::{Duration, Instant};

use crate::support::*;

/// Two connections (A and B) to ferrokv and to redis-server each.
pub(crate) struct Tx {
    a: (Raw, Raw),
    b: (Raw, Raw),
    _ours: Ferrokv,
    _theirs: RedisServer,
}

impl Tx {
    pub(crate) fn new() -> Tx {
        Tx::with(start(), spawn_redis())
    }

    pub(crate) fn with(ours: Ferrokv, theirs: RedisServer) -> Tx {
        Tx {
            a: (ours.raw(), Raw::connect(theirs.port)),
            b: (ours.raw(), Raw::connect(theirs.port)),
            _ours: ours,
            _theirs: theirs,
        }
    }

    /// Both servers with both connections speaking RESP3.
    pub(crate) fn resp3() -> Tx {
        let mut t = Tx::new();
        for (o, r) in [&mut t.a, &mut t.b] {
            for c in [o, r] {
                let reply = c.cmd_str(&["HELLO", "3"]);
                assert_eq!(reply.first(), Some(&b'%'), "HELLO 3 answers a map");
            }
        }
        t
    }

    /// Runs lines such as `"A SET k v"` (connection, then the command split
    /// on spaces) on both servers and asserts identical replies.
    pub(crate) fn run(&mut self, lines: &[&str]) {
        for line in lines {
            let mut parts = line.split(' ');
            let conn = parts.next().unwrap_or_default();
            let args: Vec<&str> = parts.collect();
            let (ours, theirs) = match conn {
                "A" => (&mut self.a.0, &mut self.a.1),
                "B" => (&mut self.b.0, &mut self.b.1),
                other => panic!("unknown connection {other}"),
            };
            let o = ours.cmd_str(&args);
            let t = theirs.cmd_str(&args);
            assert_eq!(
                String::from_utf8_lossy(&o),
                String::from_utf8_lossy(&t),
                "reply differs for {line:?}"
            );
        }
    }
}

/// Lets the servers' clocks pass `ms` milliseconds: TTL cases need a key to
/// become logically expired without any command observing it (observing
/// would delete it and test a different path), so there is no condition to
/// poll for.
pub(crate) fn let_time_pass(ms: u64) {
    let start = Instant::now();
    let done = wait_until(Duration::from_millis(ms + 1000), || {
        start.elapsed() >= Duration::from_millis(ms)
    });
    assert!(done);
}

#[test]
fn errors_outside_multi() {
    let mut t = Tx::new();
    t.run(&[
        "A EXEC",
        "A DISCARD",
        "A EXEC x",
        "A DISCARD x",
        "A MULTI x",
        "A WATCH",
        "A UNWATCH x",
        "A UNWATCH",
        // A rejected EXEC discards, so it also drops the watched keys.
        "A WATCH k",
        "A EXEC x",
        "B SET k 1",
        "A MULTI",
        "A GET k",
        "A EXEC",
    ]);
}

#[test]
fn queue_and_exec_with_run_time_errors() {
    let mut t = Tx::new();
    t.run(&[
        "A MULTI",
        "A EXEC",
        "A MULTI",
        "A SET a b",
        "A INCR a",
        "A GET a",
        "A SET n 10",
        "A INCRBY n 5",
        "A DECR n",
        "A PING",
        "A ECHO hi",
        "A EXISTS a n missing",
        "A DBSIZE",
        // Nothing ran yet: another client sees no key.
        "B GET a",
        "A EXEC",
        "B GET a",
        "B GET n",
        "A EXEC",
    ]);
}

#[test]
fn discard_drops_the_queue() {
    let mut t = Tx::new();
    t.run(&[
        "A MULTI",
        "A SET k v",
        "A INCR c",
        "A DISCARD",
        "A GET k",
        "A GET c",
        "A DISCARD",
        "A EXEC",
    ]);
}

#[test]
fn queue_time_errors_abort_exec() {
    let mut t = Tx::new();
    t.run(&[
        // Unknown command.
        "A MULTI",
        "A SET k 1",
        "A NOSUCH a b",
        "A SET k 2",
        "A EXEC",
        "A GET k",
        // Unknown subcommand.
        "A MULTI",
        "A COMMAND NOSUCH",
        "A SET k 2",
        "A EXEC",
        // Wrong arity.
        "A MULTI",
        "A SET k",
        "A GET k",
        "A EXEC",
        // Unknown and wrong-arity transaction commands themselves.
        "A MULTI",
        "A MULTI x",
        "A DISCARD x",
        "A WATCH",
        "A EXEC",
        "A MULTI",
        "A UNWATCH x",
        "A EXEC",
        // EXEC with arguments inside MULTI aborts at once.
        "A MULTI",
        "A SET k 3",
        "A EXEC x",
        "A EXEC",
        "A GET k",
        "B DBSIZE",
    ]);
}

#[test]
fn plain_errors_inside_multi_do_not_flag() {
    let mut t = Tx::new();
    t.run(&[
        "A MULTI",
        "A MULTI",
        "A WATCH k",
        "A SET k v",
        "A EXEC",
        "A GET k",
    ]);
}

#[test]
fn no_multi_commands_are_rejected_in_multi() {
    let mut t = Tx::new();
    t.run(&["A MULTI", "A SAVE", "A SET k v", "A EXEC", "A GET k"]);
}

#[test]
fn noauth_in_and_around_multi() {
    let ours = start_with(|c| c.requirepass = Some(b"pw".to_vec()));
    let theirs = spawn_redis_with(&["--requirepass", "pw"]);
    let mut t = Tx::with(ours, theirs);
    t.run(&[
        "A MULTI",
        "A EXEC",
        "A DISCARD",
        "A WATCH k",
        "A UNWATCH",
        "A EXEC x",
        "A QUIT",
    ]);
}

#[test]
fn select_and_quit_inside_multi() {
    let mut t = Tx::new();
    t.run(&[
        "A MULTI",
        "A SELECT 1",
        "A SET k in1",
        "A EXEC",
        // The transaction's SELECT stays in effect.
        "A GET k",
        "A SELECT 0",
        "A GET k",
        "A MULTI",
        "A SET q v",
    ]);
    // QUIT is not queued: it answers +OK and closes.
    t.run(&["A QUIT"]);
    assert!(t.a.0.is_closed() && t.a.1.is_closed());
    t.run(&["B GET q"]);
}

#[test]
fn pipelined_transaction_in_one_write() {
    let mut t = Tx::new();
    let mut bytes = Vec::new();
    for cmd in [
        &["MULTI"][..],
        &["SET", "k", "1"],
        &["INCR", "k"],
        &["NOSUCH"],
        &["EXEC"],
        &["MULTI"],
        &["INCR", "k"],
        &["INCR", "k"],
        &["EXEC"],
    ] {
        let args: Vec<&[u8]> = cmd.iter().map(|s| s.as_bytes()).collect();
        bytes.extend(encode(&args));
    }
    t.a.0.send(&bytes);
    t.a.1.send(&bytes);
    for _ in 0..9 {
        let o = t.a.0.read_reply();
        let r = t.a.1.read_reply();
        assert_eq!(String::from_utf8_lossy(&o), String::from_utf8_lossy(&r));
    }
    t.run(&["A GET k"]);
}

#[test]
fn reset_discards_the_transaction_and_the_watches() {
    let mut t = Tx::new();
    t.run(&[
        "A MULTI",
        "A SET k v",
        "A RESET",
        "A EXEC",
        "A GET k",
        "A WATCH k",
        "A RESET",
        "B SET k 1",
        "A MULTI",
        "A GET k",
        "A EXEC",
    ]);
}

/// Inside EXEC a blocking command does not block: it answers as if its
/// timeout had passed.
#[test]
fn blocking_commands_do_not_block_in_exec() {
    let mut t = Tx::new();
    t.run(&[
        "A MULTI",
        "A BLPOP nolist 0",
        "A SET k v",
        "A EXEC",
        "A RPUSH l a",
        "A MULTI",
        "A BLPOP l 0",
        "A EXEC",
    ]);
}

/// On a replica whose link is down with `replica-serve-stale-data no`, an
/// EXEC whose queue holds a command not allowed stale (GET, PING) is
/// refused with EXECABORT ... MASTERDOWN, even when the replica went
/// stale after the command was queued (Redis's cmd_inv_flags).
#[test]
fn exec_on_a_replica_gone_stale_is_refused_like_redis() {
    let mut p = Pair::new();
    let (mut admin_a, mut admin_b) = p.connect_again();
    p.same(&["CONFIG", "SET", "replica-serve-stale-data", "no"]);
    p.same(&["SET", "xx", "1"]);
    for queued in ["GET xx", "PING"] {
        p.same(&["MULTI"]);
        p.same(&queued.split(' ').collect::<Vec<_>>());
        for a in [&mut admin_a, &mut admin_b] {
            assert_eq!(a.cmd_str(&["REPLICAOF", "localhsot", "0"]), b"+OK\r\n");
        }
        p.same(&["EXEC"]);
        for a in [&mut admin_a, &mut admin_b] {
            assert_eq!(a.cmd_str(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
        }
    }
    p.same(&["MULTI"]);
    p.same(&["GET", "xx"]);
    p.same(&["EXEC"]);
}

/// BGREWRITEAOF inside EXEC is only scheduled, as in Redis; the rewrite
/// then starts from the cron, and INFO's total_forks counts it.
#[test]
fn bgrewriteaof_in_exec_is_scheduled_and_counted_like_redis() {
    // Processes of their own: the fork counters belong to the process.
    let dir = unique_temp_path("ferrokv-multi-aofrw");
    std::fs::create_dir_all(&dir).expect("a directory");
    let ours = spawn_ferrokv_process_with(&["--dir", dir.to_str().expect("a path")]);
    let theirs = spawn_redis();
    for port in [ours.port, theirs.port] {
        let mut c = Raw::connect(port);
        let forks = |c: &mut Raw| -> u64 {
            String::from_utf8_lossy(&c.cmd_str(&["INFO", "stats"]))
                .lines()
                .find_map(|l| l.strip_prefix("total_forks:"))
                .and_then(|v| v.trim().parse().ok())
                .expect("total_forks")
        };
        let before = forks(&mut c);
        c.cmd_str(&["MULTI"]);
        c.cmd_str(&["SET", "foo", "bar"]);
        c.cmd_str(&["BGREWRITEAOF"]);
        assert_eq!(
            c.cmd_str(&["EXEC"]),
            b"*2\r\n+OK\r\n+Background append only file rewriting scheduled\r\n",
            "port {port}"
        );
        assert!(
            wait_until(Duration::from_secs(10), || forks(&mut c) > before),
            "port {port}: the rewrite never forked"
        );
    }
    drop(ours);
    let _ = std::fs::remove_dir_all(&dir);
}
