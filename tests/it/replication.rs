//! Replication with real redis-server processes in both directions
//! (Redis's `integration/replication*.tcl`, `psync2*.tcl`): a redis-server
//! replica of ferrokv and a ferrokv replica of redis-server end with the
//! same data set, key by key (DUMP payloads), after a mixed write load of
//! every type with scripts, transactions and expiries; partial
//! resynchronization after the master link is killed; WAIT; chains; the
//! replies of the replication commands compared with redis-server's.

use std::time::Duration;

use ferrokv::config::Config;

use crate::support::*;

/// Sets parameter `name` of `c` as a config file line would.
fn conf(c: &mut Config, name: &str, value: &str) {
    let (param, _) = ferrokv::config::params::lookup(name.as_bytes()).expect("a parameter");
    c.set_value(param, value.as_bytes()).expect("a valid value");
}

/// A master that starts a snapshot as soon as a replica asks.
fn ferrokv_master() -> Ferrokv {
    start_with(|c| conf(c, "repl-diskless-sync-delay", "0"))
}

fn text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).into_owned()
}

/// One INFO field of a server.
pub(crate) fn info_field(raw: &mut Raw, section: &str, field: &str) -> String {
    let reply = text(&raw.cmd_str(&["INFO", section]));
    reply
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_default()
        .to_string()
}

/// CONFIG SETs each of `pairs`, each answered +OK.
fn config_set_all(raw: &mut Raw, who: &str, pairs: &[(&str, &str)]) {
    for (k, v) in pairs {
        assert_eq!(
            raw.cmd_str(&["CONFIG", "SET", k, v]),
            b"+OK\r\n",
            "{who} {k}"
        );
    }
}

/// Waits until `replica` says its link to the master is up.
fn wait_link_up(replica: &mut Raw) {
    assert!(
        wait_until(Duration::from_secs(20), || info_field(
            replica,
            "replication",
            "master_link_status"
        ) == "up"),
        "the replica's link never came up"
    );
}

/// A ferrokv replica of the server on `port` (snapshotting at once for its
/// own replicas), once its link is up.
fn ferrokv_replica_of(port: u16) -> (Ferrokv, Raw) {
    let replica = start_with(|c| {
        conf(c, "replicaof", &format!("127.0.0.1 {port}"));
        conf(c, "repl-diskless-sync-delay", "0");
    });
    let mut r = replica.raw();
    wait_link_up(&mut r);
    (replica, r)
}

/// The keys of database `db` on a server, sorted.
fn keys_of(raw: &mut Raw, db: usize) -> Vec<Vec<u8>> {
    raw.cmd_str(&["SELECT", &db.to_string()]);
    let reply = raw.cmd_str(&["KEYS", "*"]);
    let mut keys = parse_bulks(&reply);
    keys.sort();
    keys
}

/// The bulk strings of a flat RESP array reply.
fn parse_bulks(reply: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = reply.iter().position(|&b| b == b'\n').map_or(0, |p| p + 1);
    while i < reply.len() {
        let end = i + reply[i..].iter().position(|&b| b == b'\n').unwrap_or(0);
        let len: usize = text(&reply[i + 1..end - 1]).parse().unwrap_or(0);
        out.push(reply[end + 1..end + 1 + len].to_vec());
        i = end + 1 + len + 2;
    }
    out
}

/// Asserts both servers hold the same keys with the same DUMP payloads
/// and the same TTL presence in databases 0..4.
fn assert_same_data(a: &mut Raw, b: &mut Raw) {
    // The load's `gone:` keys live 30 ms: one expiring between the two
    // servers' PTTL would differ by timing alone. Compare once they went.
    let gone_left =
        |r: &mut Raw| (0..4).any(|db| keys_of(r, db).iter().any(|k| k.starts_with(b"gone:")));
    assert!(
        wait_until(Duration::from_secs(5), || !gone_left(a) && !gone_left(b)),
        "short-lived keys did not expire"
    );
    for db in 0..4 {
        let mut keys = keys_of(a, db);
        keys.extend(keys_of(b, db));
        keys.sort();
        keys.dedup();
        for k in &keys {
            let da = a.cmd(&[b"DUMP", k]);
            let db_ = b.cmd(&[b"DUMP", k]);
            if da != db_ {
                // A hash table's order is the server's own: compare such
                // values by content.
                assert_eq!(
                    content(a, k),
                    content(b, k),
                    "{} in db {db} differs",
                    text(k)
                );
            }
            let ta = text(&a.cmd(&[b"PTTL", k])).starts_with(":-");
            let tb = text(&b.cmd(&[b"PTTL", k])).starts_with(":-");
            assert_eq!(ta, tb, "TTL presence of {} differs", text(k));
        }
    }
    a.cmd_str(&["SELECT", "0"]);
    b.cmd_str(&["SELECT", "0"]);
}

/// The content of an unordered value (set, hash, sorted set), sorted.
fn content(raw: &mut Raw, key: &[u8]) -> Vec<Vec<u8>> {
    let kind = text(&raw.cmd(&[b"TYPE", key]));
    let reply = match kind.as_str() {
        "+set\r\n" => raw.cmd(&[b"SMEMBERS", key]),
        "+hash\r\n" => raw.cmd(&[b"HGETALL", key]),
        "+zset\r\n" => raw.cmd(&[b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]),
        _ => panic!("DUMP of {} ({kind}) differs", text(key)),
    };
    let mut items = parse_bulks(&reply);
    if kind == "+hash\r\n" {
        let mut pairs: Vec<Vec<u8>> = items.chunks(2).map(|p| p.concat()).collect();
        pairs.sort();
        return pairs;
    }
    if kind == "+set\r\n" {
        items.sort();
    }
    items
}

/// A mixed write load of every type on `m`: scripts, transactions,
/// several databases, relative and absolute TTLs, keys that expire
/// during the load, random pops and float increments.
fn write_load(m: &mut Raw, rounds: u64) {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for i in 0..rounds {
        let k = next(20).to_string();
        let v = format!("v{i}");
        let cmds: Vec<Vec<String>> = match next(16) {
            0 => vec![vec!["SET".into(), format!("s:{k}"), v.clone()]],
            1 => vec![vec![
                "SET".into(),
                format!("t:{k}"),
                v.clone(),
                "EX".into(),
                "1000".into(),
            ]],
            2 => vec![vec![
                "SET".into(),
                format!("gone:{i}"),
                v.clone(),
                "PX".into(),
                "30".into(),
            ]],
            3 => vec![vec!["INCRBYFLOAT".into(), format!("f:{k}"), "0.1".into()]],
            4 => vec![vec![
                "RPUSH".into(),
                format!("l:{k}"),
                v.clone(),
                "x".into(),
            ]],
            5 => vec![vec!["LPOP".into(), format!("l:{k}")]],
            6 => vec![vec![
                "HSET".into(),
                format!("h:{k}"),
                format!("f{}", next(50)),
                v.clone(),
            ]],
            7 => vec![vec![
                "SADD".into(),
                format!("set:{k}"),
                v.clone(),
                format!("{}", next(100)),
            ]],
            8 => vec![vec!["SPOP".into(), format!("set:{k}")]],
            9 => vec![vec![
                "ZADD".into(),
                format!("z:{k}"),
                format!("{}", next(1000)),
                v.clone(),
            ]],
            10 => vec![vec![
                "XADD".into(),
                format!("x:{k}"),
                "*".into(),
                "f".into(),
                v.clone(),
            ]],
            11 => vec![vec![
                "EVAL".into(),
                "redis.call('incr', KEYS[1]) redis.call('rpush', KEYS[2], ARGV[1]) return 1".into(),
                "2".into(),
                format!("n:{k}"),
                format!("l:{k}"),
                v.clone(),
            ]],
            12 => vec![
                vec!["MULTI".into()],
                vec!["INCR".into(), format!("n:{k}")],
                vec!["EXPIRE".into(), format!("s:{k}"), "500".into()],
                vec![
                    "HINCRBY".into(),
                    format!("h:{k}"),
                    "count".into(),
                    "1".into(),
                ],
                vec!["EXEC".into()],
            ],
            13 => vec![
                vec!["SELECT".into(), format!("{}", 1 + next(3))],
                vec!["SET".into(), format!("db:{k}"), v.clone()],
                vec!["SELECT".into(), "0".into()],
            ],
            14 => vec![vec!["DEL".into(), format!("s:{k}"), format!("z:{k}")]],
            _ => vec![vec![
                "PEXPIREAT".into(),
                format!("h:{k}"),
                "99999999999999".into(),
            ]],
        };
        for c in cmds {
            let args: Vec<&str> = c.iter().map(String::as_str).collect();
            m.cmd_str(&args);
        }
    }
}

/// WAIT until `n` replicas acknowledged everything written on `m`.
fn wait_replicas(m: &mut Raw, n: usize) {
    let want = format!(":{n}\r\n");
    assert!(
        wait_until(Duration::from_secs(20), || text(&m.cmd_str(&[
            "WAIT",
            &n.to_string(),
            "1000"
        ])) == want),
        "replicas did not acknowledge"
    );
}

#[test]
fn redis_replicates_from_ferrokv() {
    let master = ferrokv_master();
    let mut m = master.raw();
    write_load(&mut m, 300);
    let port = master.port.to_string();
    let redis = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    let mut r = Raw::connect(redis.port);
    wait_link_up(&mut r);
    write_load(&mut m, 1500);
    wait_replicas(&mut m, 1);
    // Keys that expired on the master reach the replica as DEL.
    assert!(wait_until(Duration::from_secs(10), || {
        text(&r.cmd_str(&["KEYS", "gone:*"])) == "*0\r\n"
    }));
    assert_same_data(&mut m, &mut r);
    assert_eq!(info_field(&mut m, "stats", "sync_full"), "1");
    let role = text(&m.cmd_str(&["ROLE"]));
    assert!(role.starts_with("*3\r\n$6\r\nmaster\r\n:"), "{role}");
    assert!(
        role.contains(&format!("$5\r\n{}\r\n", redis.port)),
        "{role}"
    );
    assert_eq!(
        text(&r.cmd_str(&["SET", "k", "v"])),
        "-READONLY You can't write against a read only replica.\r\n"
    );
}

#[test]
fn ferrokv_replicates_from_redis() {
    let redis = spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
    let mut m = Raw::connect(redis.port);
    write_load(&mut m, 300);
    let (_replica, mut r) = ferrokv_replica_of(redis.port);
    // An approximate trim reaches the replica as the exact trim with its
    // LIMIT kept, which a master's command may carry.
    m.cmd_str(&[
        "XADD", "s", "MAXLEN", "~", "1", "LIMIT", "10", "1-1", "f", "v",
    ]);
    write_load(&mut m, 1500);
    wait_replicas(&mut m, 1);
    assert!(wait_until(Duration::from_secs(10), || {
        text(&r.cmd_str(&["KEYS", "gone:*"])) == "*0\r\n"
    }));
    assert_eq!(r.cmd_str(&["XLEN", "s"]), b":1\r\n");
    assert_same_data(&mut m, &mut r);
    assert_eq!(
        text(&r.cmd_str(&["SET", "k", "v"])),
        "-READONLY You can't write against a read only replica.\r\n"
    );
    let role = text(&r.cmd_str(&["ROLE"]));
    let expected = format!(
        "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:{}\r\n$9\r\nconnected\r\n:",
        redis.port
    );
    assert!(role.starts_with(&expected), "{role}");
    // Both report the same offset once everything is acknowledged (the
    // master's PINGs and GETACKs move it meanwhile).
    let (mut ro, mut mo) = (String::new(), String::new());
    assert!(
        wait_until(Duration::from_secs(5), || {
            ro = info_field(&mut r, "replication", "master_repl_offset");
            mo = info_field(&mut m, "replication", "master_repl_offset");
            ro == mo
        }),
        "replica at {ro}, master at {mo}"
    );
    assert_eq!(
        info_field(&mut r, "replication", "master_replid"),
        info_field(&mut m, "replication", "master_replid")
    );
    let list = text(&r.cmd_str(&["CLIENT", "LIST"]));
    assert!(
        list.contains("flags=M") && list.contains("user=(superuser)"),
        "{list}"
    );
    // REPLICAOF NO ONE promotes it with its data, keeping the old history
    // as replid2.
    let old = info_field(&mut r, "replication", "master_replid");
    assert_eq!(r.cmd_str(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    assert_eq!(info_field(&mut r, "replication", "role"), "master");
    assert_eq!(info_field(&mut r, "replication", "master_replid2"), old);
    assert_eq!(r.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
}

/// Killing the master link makes the replica continue from the backlog:
/// sync_partial_ok grows and no new full sync happens, both ways.
/// Kills replica `r`'s link to master `m` while `m` is written to: the
/// replica continues partially (one full sync ever, one partial) and ends
/// with `m`'s data.
fn continue_after_a_killed_link(m: &mut Raw, r: &mut Raw) {
    assert_eq!(r.cmd_str(&["CLIENT", "KILL", "TYPE", "master"]), b":1\r\n");
    write_load(m, 200);
    assert!(wait_until(Duration::from_secs(20), || info_field(
        m,
        "stats",
        "sync_partial_ok"
    ) == "1"));
    wait_link_up(r);
    wait_replicas(m, 1);
    assert_eq!(info_field(m, "stats", "sync_full"), "1");
    assert_same_data(m, r);
}

#[test]
fn partial_resync_after_the_master_link_is_killed() {
    // redis-server replica of ferrokv.
    let master = ferrokv_master();
    let mut m = master.raw();
    let port = master.port.to_string();
    let redis = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    let mut r = Raw::connect(redis.port);
    wait_link_up(&mut r);
    write_load(&mut m, 200);
    wait_replicas(&mut m, 1);
    continue_after_a_killed_link(&mut m, &mut r);
    drop(redis);

    // ferrokv replica of redis-server, with a disk-based transfer.
    let redis = spawn_redis_with(&["--repl-diskless-sync", "no"]);
    let mut m = Raw::connect(redis.port);
    write_load(&mut m, 200);
    let (_replica, mut r) = ferrokv_replica_of(redis.port);
    wait_replicas(&mut m, 1);
    continue_after_a_killed_link(&mut m, &mut r);
}

/// A chain: redis-server → ferrokv → redis-server. The middle replica
/// passes its master's stream on verbatim.
#[test]
fn a_ferrokv_replica_feeds_its_own_replicas() {
    let top = spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
    let mut t = Raw::connect(top.port);
    write_load(&mut t, 200);
    let (middle, _mid) = ferrokv_replica_of(top.port);
    let port = middle.port.to_string();
    let bottom = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    let mut b = Raw::connect(bottom.port);
    wait_link_up(&mut b);
    write_load(&mut t, 600);
    assert!(wait_until(Duration::from_secs(10), || {
        text(&b.cmd_str(&["KEYS", "gone:*"])) == "*0\r\n"
    }));
    wait_replicas(&mut t, 1);
    let offset = info_field(&mut t, "replication", "master_repl_offset");
    assert!(wait_until(Duration::from_secs(20), || {
        info_field(&mut b, "replication", "master_repl_offset") == offset
    }));
    assert_same_data(&mut t, &mut b);
    // The bottom replica sees the top master's history ID.
    assert_eq!(
        info_field(&mut b, "replication", "master_replid"),
        info_field(&mut t, "replication", "master_replid")
    );
}

#[test]
fn wait_counts_acknowledging_replicas() {
    let master = ferrokv_master();
    let mut m = master.raw();
    // No replica: at once.
    assert_eq!(m.cmd_str(&["SET", "a", "1"]), b"+OK\r\n");
    assert_eq!(m.cmd_str(&["WAIT", "0", "0"]), b":0\r\n");
    assert_eq!(m.cmd_str(&["WAIT", "1", "50"]), b":0\r\n");
    let port = master.port.to_string();
    let redis = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    let mut r = Raw::connect(redis.port);
    wait_link_up(&mut r);
    assert_eq!(m.cmd_str(&["SET", "b", "2"]), b"+OK\r\n");
    assert_eq!(m.cmd_str(&["WAIT", "1", "5000"]), b":1\r\n");
    // More replicas than there are: the timeout answers with the count.
    assert_eq!(m.cmd_str(&["WAIT", "2", "200"]), b":1\r\n");
}

/// The replication commands' replies and errors, against redis-server.
#[test]
fn replication_command_replies_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "ROLE",
        "REPLICAOF",
        "REPLICAOF localhost x",
        "REPLICAOF localhost 99999999999999999999",
        "REPLICAOF NO ONE",
        "SLAVEOF no one",
        "REPLCONF",
        "REPLCONF foo bar",
        "REPLCONF listening-port x",
        "REPLCONF listening-port 1234",
        "REPLCONF capa eof capa psync2",
        "REPLCONF listening-port",
        "WAIT",
        "WAIT 0 0",
        "WAIT x 0",
        "WAIT 0 x",
        "WAIT 1 -1",
        "MULTI",
        "WAIT 1 100",
        "EXEC",
        "PSYNC",
        "PSYNC a",
        "REPLCONF rdb-only 2",
        "REPLCONF rdb-only x",
        "REPLCONF rdb-filter-only x",
        "REPLCONF ip-address 10.0.0.1 listening-port 7 capa eof",
        "FAILOVER",
        "FAILOVER ABORT",
        "FAILOVER ABORT x",
        "FAILOVER TIMEOUT 0",
        "FAILOVER TIMEOUT -5",
        "FAILOVER TIMEOUT x",
        "FAILOVER TIMEOUT 10 TIMEOUT 20",
        "FAILOVER FORCE",
        "FAILOVER TO",
        "FAILOVER TO 127.0.0.1 x",
        "FAILOVER TO 127.0.0.1 1 TIMEOUT 100 FORCE",
        "FAILOVER foo",
        "PSYNC ? -1 FAILOVER",
    ]);
    let fields = |raw: &mut Raw| {
        let reply = text(&raw.cmd_str(&["INFO", "replication"]));
        reply
            .lines()
            .map(|l| l.split(':').next().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };
    let (mut a, mut b) = p.connect_again();
    assert_eq!(fields(&mut a), fields(&mut b));
}

/// min-replicas-to-write refuses writes with -NOREPLICAS until enough
/// replicas are in touch, as redis-server does.
#[test]
fn min_replicas_to_write_refuses_writes_without_replicas() {
    let mut p = Pair::new_with(
        |c| {
            conf(c, "min-replicas-to-write", "1");
            conf(c, "repl-diskless-sync-delay", "0");
        },
        &[
            "--min-replicas-to-write",
            "1",
            "--repl-diskless-sync-delay",
            "0",
        ],
    );
    p.script(&[
        "SET k v",
        "GET k",
        "MULTI",
        "SET k v",
        "EXEC",
        "EVAL return 1 0",
        "CONFIG SET min-replicas-to-write 0",
        "SET k v",
        "CONFIG SET min-replicas-to-write 1",
    ]);
    let (ours, _) = p.ports();
    let port = ours.to_string();
    let redis = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    let mut r = Raw::connect(redis.port);
    wait_link_up(&mut r);
    let (mut m, _) = p.connect_again();
    assert!(wait_until(Duration::from_secs(5), || m
        .cmd_str(&["SET", "k", "v2"])
        == b"+OK\r\n"));
    assert_eq!(
        info_field(&mut m, "replication", "min_slaves_good_slaves"),
        "1"
    );
}

/// A replica that does not read its stream is closed by the replica
/// class of client-output-buffer-limit, then resynchronizes.
#[test]
fn a_replica_over_its_output_limit_is_dropped_and_resyncs() {
    let master = start_with(|c| {
        conf(c, "repl-diskless-sync-delay", "0");
        conf(c, "client-output-buffer-limit", "replica 1mb 0 0");
    });
    let mut m = master.raw();
    let port = master.port.to_string();
    let redis = spawn_redis_with(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--enable-debug-command",
        "yes",
    ]);
    let mut r = Raw::connect(redis.port);
    wait_link_up(&mut r);
    // The replica stops reading for a while; the master writes far more
    // than the socket buffers and the limit hold.
    r.send(&encode(&[b"DEBUG", b"SLEEP", b"2"]));
    let value = "x".repeat(100_000);
    for i in 0..300 {
        m.cmd_str(&["SET", &format!("big:{}", i % 50), &value]);
    }
    assert_eq!(text(&r.read_reply()), "+OK\r\n");
    assert!(wait_until(Duration::from_secs(20), || info_field(
        &mut m,
        "stats",
        "sync_full"
    ) == "2"));
    wait_link_up(&mut r);
    wait_replicas(&mut m, 1);
    assert_same_data(&mut m, &mut r);
}

/// PSYNC2: after a replica is promoted, the other replicas of the old
/// master continue partially from it (its old history is its replid2).
#[test]
fn replicas_continue_partially_with_a_promoted_replica() {
    let master = ferrokv_master();
    let mut m = master.raw();
    write_load(&mut m, 200);
    let (promoted, mut a) = ferrokv_replica_of(master.port);
    let port = master.port.to_string();
    let redis = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    let mut b = Raw::connect(redis.port);
    wait_link_up(&mut b);
    write_load(&mut m, 200);
    wait_replicas(&mut m, 2);
    drop(master);
    assert_eq!(a.cmd_str(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    let port = promoted.port.to_string();
    assert_eq!(b.cmd_str(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
    wait_link_up(&mut b);
    write_load(&mut a, 200);
    wait_replicas(&mut a, 1);
    assert_eq!(info_field(&mut a, "stats", "sync_partial_ok"), "1");
    assert_eq!(info_field(&mut a, "stats", "sync_full"), "0");
    assert_same_data(&mut a, &mut b);
}

/// A replica that goes away during its full sync leaves the master
/// serving and able to sync the next one.
#[test]
fn a_replica_killed_during_its_full_sync_leaves_the_master_consistent() {
    let master = ferrokv_master();
    let mut m = master.raw();
    let value = "v".repeat(1000);
    for i in 0..20_000 {
        m.send(&encode(&[
            b"SET",
            format!("k:{i}").as_bytes(),
            value.as_bytes(),
        ]));
    }
    for _ in 0..20_000 {
        m.read_reply();
    }
    let port = master.port.to_string();
    let first = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    assert!(wait_until(Duration::from_secs(10), || info_field(
        &mut m,
        "replication",
        "connected_slaves"
    ) == "1"));
    drop(first);
    assert_eq!(m.cmd_str(&["PING"]), b"+PONG\r\n");
    assert!(wait_until(Duration::from_secs(20), || info_field(
        &mut m,
        "replication",
        "connected_slaves"
    ) == "0"));
    let second = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    let mut r = Raw::connect(second.port);
    wait_link_up(&mut r);
    write_load(&mut m, 100);
    wait_replicas(&mut m, 1);
    assert_eq!(r.cmd_str(&["DBSIZE"]), m.cmd_str(&["DBSIZE"]));
    assert_same_data(&mut m, &mut r);
}

/// The master goes away while a ferrokv replica loads from it: the
/// replica keeps what it had, reconnects when the master is back and ends
/// with the master's data.
#[test]
fn a_master_killed_during_the_transfer_leaves_the_replica_consistent() {
    let redis = spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
    let port = redis.port;
    let mut m = Raw::connect(port);
    let value = "v".repeat(1000);
    for i in 0..20_000 {
        m.send(&encode(&[
            b"SET",
            format!("k:{i}").as_bytes(),
            value.as_bytes(),
        ]));
    }
    for _ in 0..20_000 {
        m.read_reply();
    }
    let replica = start_with(|c| conf(c, "replicaof", &format!("127.0.0.1 {port}")));
    let mut r = replica.raw();
    assert!(wait_until(Duration::from_secs(10), || info_field(
        &mut m,
        "replication",
        "connected_slaves"
    ) == "1"));
    drop(redis);
    // Still answering, with a consistent (empty or complete) data set.
    let size = text(&r.cmd_str(&["DBSIZE"]));
    assert!(size == ":0\r\n" || size == ":20000\r\n", "{size}");
    let dir = unique_temp_path("redis-back");
    std::fs::create_dir_all(&dir).expect("a directory");
    let back = server_command("redis-server", port)
        .args([
            "--repl-diskless-sync-delay",
            "0",
            "--dir",
            &dir.display().to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-server runs");
    let back = ChildGuard(back);
    assert!(wait_until(Duration::from_secs(10), || listens_on(
        back.0.id(),
        port
    )));
    let mut m = Raw::connect(port);
    write_load(&mut m, 100);
    wait_link_up(&mut r);
    wait_replicas(&mut m, 1);
    assert_same_data(&mut m, &mut r);
}

/// A replica that says it listens on `port`, syncs the old way (no
/// `capa eof`) and never acknowledges: online at the master, never caught up.
fn silent_replica(master: u16, port: &str) -> Raw {
    let mut r = Raw::connect(master);
    assert_eq!(r.cmd_str(&["REPLCONF", "listening-port", port]), b"+OK\r\n");
    r.send(&encode(&[b"PSYNC", b"?", b"-1"]));
    r
}

/// A ferrokv and redis-server pair whose snapshots for replicas start at
/// once (no repl-diskless-sync-delay).
fn pair_syncing_at_once() -> Pair {
    Pair::new_with(
        |c| conf(c, "repl-diskless-sync-delay", "0"),
        &["--repl-diskless-sync-delay", "0"],
    )
}

/// Waits until INFO `section`'s `field` passes `ok` on both servers of
/// `p`; returns a connection to each.
fn wait_both(p: &Pair, section: &str, field: &str, ok: impl Fn(&str) -> bool) -> (Raw, Raw) {
    let (mut a, mut b) = p.connect_again();
    for raw in [&mut a, &mut b] {
        let reached = wait_until(Duration::from_secs(10), || {
            ok(&info_field(raw, section, field))
        });
        assert!(reached, "INFO {section} {field}");
    }
    (a, b)
}

/// A snapshot for replicas is the one child, as Redis's RDB child: BGSAVE
/// and SAVE are refused while it runs, BGREWRITEAOF is scheduled.
#[test]
fn a_snapshot_for_replicas_holds_off_other_saves_as_redis() {
    let mut p = pair_syncing_at_once();
    p.same(&["CONFIG", "SET", "rdb-key-save-delay", "100000"]);
    for i in 0..40 {
        p.same(&["SET", &format!("k{i}"), "v"]);
    }
    let (ours, theirs) = p.ports();
    let _silent = (silent_replica(ours, "1234"), silent_replica(theirs, "1234"));
    let (mut a, mut b) = wait_both(&p, "persistence", "rdb_bgsave_in_progress", |v| v == "1");
    p.script(&[
        "BGSAVE",
        "BGSAVE SCHEDULE",
        "SAVE",
        "BGREWRITEAOF",
        "BGREWRITEAOF",
    ]);
    for raw in [&mut a, &mut b] {
        assert_eq!(
            info_field(raw, "persistence", "aof_rewrite_in_progress"),
            "0"
        );
        assert_eq!(info_field(raw, "persistence", "aof_rewrite_scheduled"), "1");
    }
    // The replicas' snapshot given up ends the test at once.
    p.same(&["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    p.same(&["FLUSHALL"]);
}

/// FAILOVER's waiting, timeout and ABORT against redis-server: writes are
/// held while it waits and run when it is given up; errors on the way.
#[test]
fn failover_waits_times_out_and_aborts_as_redis() {
    let mut p = pair_syncing_at_once();
    let (ours, theirs) = p.ports();
    let _silent = (silent_replica(ours, "1234"), silent_replica(theirs, "1234"));
    let (mut a, mut b) = wait_both(&p, "replication", "slave0", |v| v.contains("state=online"));
    p.script(&[
        "SET k v",
        "FAILOVER TO 127.0.0.1 9",
        "FAILOVER TO 127.0.0.1 1234 FORCE",
        "FAILOVER TIMEOUT 300",
        "FAILOVER",
        "REPLICAOF NO ONE",
        "REPLICAOF 127.0.0.1 1",
        "GET k",
    ]);
    for raw in [&mut a, &mut b] {
        assert_eq!(
            info_field(raw, "replication", "master_failover_state"),
            "waiting-for-sync"
        );
        // A write waits for the failover to be given up, then runs.
        raw.send(&encode(&[b"SET", b"k", b"after-timeout"]));
    }
    assert_eq!(a.read_reply(), b"+OK\r\n");
    assert_eq!(b.read_reply(), b"+OK\r\n");
    p.script(&["GET k", "FAILOVER"]);
    let (mut a2, mut b2) = p.connect_again();
    for raw in [&mut a2, &mut b2] {
        raw.send(&encode(&[b"SET", b"k", b"after-abort"]));
    }
    p.script(&["FAILOVER ABORT", "FAILOVER ABORT", "GET k"]);
    assert_eq!(a2.read_reply(), b"+OK\r\n");
    assert_eq!(b2.read_reply(), b"+OK\r\n");
    assert_eq!(
        info_field(&mut a, "replication", "master_failover_state"),
        "no-failover"
    );
}

/// Waits until `raw` reports `role`.
fn wait_role(raw: &mut Raw, role: &str) {
    assert!(
        wait_until(Duration::from_secs(20), || info_field(
            raw,
            "replication",
            "role"
        ) == role),
        "never became {role}"
    );
}

/// FAILOVER on a ferrokv master hands over to a ferrokv replica (TO) and
/// to a redis-server replica (any): the target takes over with PSYNC
/// FAILOVER, the old master follows it with a partial resynchronization,
/// and a write held during the handover is refused as READONLY.
#[test]
fn failover_from_ferrokv_to_ferrokv_and_to_redis() {
    let master = ferrokv_master();
    let mut m = master.raw();
    write_load(&mut m, 300);
    let (replica, mut r) = ferrokv_replica_of(master.port);
    wait_replicas(&mut m, 1);
    let port = replica.port.to_string();
    assert_eq!(
        m.cmd_str(&["FAILOVER", "TO", "127.0.0.1", &port]),
        b"+OK\r\n"
    );
    let mut w = master.raw();
    w.send(&encode(&[b"SET", b"held", b"1"]));
    wait_role(&mut r, "master");
    wait_role(&mut m, "slave");
    wait_link_up(&mut m);
    assert_eq!(
        w.read_reply(),
        b"-READONLY You can't write against a read only replica.\r\n"
    );
    assert_eq!(
        info_field(&mut m, "replication", "master_failover_state"),
        "no-failover"
    );
    assert_eq!(info_field(&mut r, "stats", "sync_partial_ok"), "1");
    assert_eq!(info_field(&mut r, "stats", "sync_full"), "0");
    write_load(&mut r, 300);
    wait_replicas(&mut r, 1);
    assert_same_data(&mut r, &mut m);

    // Now to a redis-server replica of the new master.
    let redis = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    let mut x = Raw::connect(redis.port);
    wait_link_up(&mut x);
    // Both replicas caught up: an untargeted FAILOVER picks either.
    wait_replicas(&mut r, 2);
    assert_eq!(r.cmd_str(&["FAILOVER"]), b"+OK\r\n");
    wait_role(&mut r, "slave");
    wait_link_up(&mut r);
    let new_master = if info_field(&mut x, "replication", "role") == "master" {
        &mut x
    } else {
        &mut m
    };
    write_load(new_master, 100);
    wait_replicas(new_master, 1);
    assert_same_data(new_master, &mut r);
}

/// FAILOVER on a redis-server master hands over to its ferrokv replica:
/// ferrokv answers PSYNC FAILOVER as Redis does and becomes the master,
/// with Redis following it partially.
#[test]
fn failover_from_redis_to_a_ferrokv_replica() {
    let redis = spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
    let mut m = Raw::connect(redis.port);
    write_load(&mut m, 300);
    let (_replica, mut r) = ferrokv_replica_of(redis.port);
    wait_replicas(&mut m, 1);
    assert_eq!(m.cmd_str(&["FAILOVER"]), b"+OK\r\n");
    wait_role(&mut r, "master");
    wait_role(&mut m, "slave");
    wait_link_up(&mut m);
    assert_eq!(info_field(&mut r, "stats", "sync_partial_ok"), "1");
    assert_eq!(info_field(&mut r, "stats", "sync_full"), "0");
    write_load(&mut r, 300);
    wait_replicas(&mut r, 1);
    assert_same_data(&mut r, &mut m);
}

/// A replica hides keys whose TTL passed by its clock but deletes none:
/// its master decides, and the master's commands still find them (Redis's
/// expireIfNeeded on replicas).
#[test]
fn a_replica_hides_expired_keys_and_leaves_them_to_its_master() {
    let redis = spawn_redis_with(&[]);
    let mut m = Raw::connect(redis.port);
    m.cmd_str(&["SET", "k", "v", "EX", "100"]);
    m.cmd_str(&["SET", "n", "5", "EX", "100"]);
    m.cmd_str(&["RPUSH", "l", "a"]);
    let (replica, clock) =
        start_with_clock(|c| conf(c, "replicaof", &format!("127.0.0.1 {}", redis.port)));
    clock.resume();
    let mut r = replica.raw();
    wait_link_up(&mut r);
    wait_replicas(&mut m, 1);
    let real = clock.now_ms();
    clock.advance(Duration::from_secs(200));
    assert_eq!(r.cmd_str(&["GET", "k"]), b"$-1\r\n");
    assert_eq!(r.cmd_str(&["EXISTS", "k", "n"]), b":0\r\n");
    assert_eq!(r.cmd_str(&["TTL", "k"]), b":-2\r\n");
    assert_eq!(r.cmd_str(&["KEYS", "*"]), b"*1\r\n$1\r\nl\r\n");
    assert_eq!(
        r.cmd_str(&["SCAN", "0"]),
        b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nl\r\n"
    );
    assert!(text(&r.cmd_str(&["RANDOMKEY"])).starts_with('$'));
    // Still there: nothing was deleted.
    assert_eq!(r.cmd_str(&["DBSIZE"]), b":3\r\n");
    // The master's commands find them as the master does.
    m.cmd_str(&["APPEND", "k", "x"]);
    m.cmd_str(&["INCR", "n"]);
    wait_replicas(&mut m, 1);
    clock.set_ms(real);
    assert_eq!(r.cmd_str(&["GET", "k"]), b"$2\r\nvx\r\n");
    assert_eq!(r.cmd_str(&["GET", "n"]), b"$1\r\n6\r\n");
    assert!(text(&r.cmd_str(&["TTL", "n"])).starts_with(":9"));
    assert_same_data(&mut m, &mut r);
}

/// A continued stream goes on in the database it was in, and a replica
/// restarted from its own snapshot (repl-id, repl-offset, repl-stream-db
/// AUX fields) continues partially.
#[test]
fn a_restarted_replica_continues_partially_in_the_right_database() {
    let redis = spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
    let mut m = Raw::connect(redis.port);
    let dir = unique_temp_path("ferrokv-restart");
    std::fs::create_dir_all(&dir).expect("a directory");
    let follow = |c: &mut Config| {
        conf(c, "replicaof", &format!("127.0.0.1 {}", redis.port));
        c.dir = dir.display().to_string();
    };
    let replica = start_with(follow);
    let mut r = replica.raw();
    wait_link_up(&mut r);
    m.cmd_str(&["SELECT", "3"]);
    m.cmd_str(&["SET", "a", "1"]);
    wait_replicas(&mut m, 1);
    // The link drops; the master's stream stays in database 3.
    assert_eq!(
        text(&r.cmd_str(&["CLIENT", "KILL", "TYPE", "master"])),
        ":1\r\n"
    );
    m.cmd_str(&["SET", "b", "2"]);
    wait_link_up(&mut r);
    wait_replicas(&mut m, 1);
    assert_eq!(info_field(&mut m, "stats", "sync_partial_ok"), "1");
    r.cmd_str(&["SELECT", "3"]);
    assert_eq!(r.cmd_str(&["GET", "b"]), b"$1\r\n2\r\n");
    // Saved, stopped, written to meanwhile, started again.
    assert_eq!(r.cmd_str(&["SAVE"]), b"+OK\r\n");
    drop(r);
    drop(replica);
    m.cmd_str(&["SET", "c", "3"]);
    restarted_replica_agrees(&mut m, follow, "2");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts a replica of `m` with `follow` again and checks that it continued
/// partially (the master's `sync_partial_ok` reads `partial`, after a
/// single full sync) and holds the master's data.
fn restarted_replica_agrees(m: &mut Raw, follow: impl FnOnce(&mut Config), partial: &str) {
    let replica = start_with(follow);
    let mut r = replica.raw();
    wait_link_up(&mut r);
    wait_replicas(m, 1);
    assert_eq!(info_field(m, "stats", "sync_partial_ok"), partial);
    assert_eq!(info_field(m, "stats", "sync_full"), "1");
    assert_same_data(m, &mut r);
}

/// WAIT waits for the stream's end as of the client's last command of any
/// kind, not its last write (7.0's processCommand sets `c->woff` after
/// every call): a client that only read counts no replica that has not
/// acknowledged the writes before its read.
#[test]
fn wait_counts_replicas_up_to_the_clients_last_command() {
    use std::io::Write;
    let redis = spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
    let ours = ferrokv_master();
    for port in [ours.port, redis.port] {
        // A replica that acknowledges nothing past the snapshot.
        let (mut replica, _) = stream_reader(port);
        replica
            .write_all(&encode(&[b"REPLCONF", b"ACK", b"0"]))
            .expect("ack");
        let mut writer = Raw::connect(port);
        assert_eq!(writer.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
        let mut reader = Raw::connect(port);
        assert_eq!(
            reader.cmd_str(&["WAIT", "0", "0"]),
            b":1\r\n",
            "port {port}: before any command of its own"
        );
        assert_eq!(reader.cmd_str(&["GET", "k"]), b"$1\r\nv\r\n");
        assert_eq!(
            reader.cmd_str(&["WAIT", "0", "0"]),
            b":0\r\n",
            "port {port}: after reading"
        );
    }
}

/// A full resynchronization leaves `dbfilename` where Redis does: a master
/// snapshotting to disk for its replica saves it (a save that resets the
/// change count), a replica loading from disk keeps the file it received,
/// and with rdb-del-sync-files a server without persistence removes both.
#[test]
fn full_resyncs_leave_the_rdb_file_as_redis() {
    for delete in ["no", "yes"] {
        let master_args = ["--repl-diskless-sync", "no", "--rdb-del-sync-files", delete];
        let ours = start_with(|c| {
            conf(c, "repl-diskless-sync", "no");
            conf(c, "rdb-del-sync-files", delete);
        });
        let theirs = spawn_redis_with(&master_args);
        let masters = [(ours.port, ours.dir()), (theirs.port, theirs.dir())];
        for (port, dir) in masters {
            let mut m = Raw::connect(port);
            m.cmd_str(&["SET", "k", "v"]);
            let replica = spawn_redis_with(&["--replicaof", "127.0.0.1", &port.to_string()]);
            wait_link_up(&mut Raw::connect(replica.port));
            sync_file_as_configured(dir, delete, &format!("master on port {port}"));
            assert_eq!(info_field(&mut m, "persistence", "rdb_saves"), "1");
            assert_eq!(
                info_field(&mut m, "persistence", "rdb_changes_since_last_save"),
                "0"
            );
        }
        // Replicas of a master streaming its snapshot, loading from disk.
        let master = spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
        Raw::connect(master.port).cmd_str(&["SET", "k", "v"]);
        let of = format!("127.0.0.1 {}", master.port);
        let ours = start_with(|c| {
            conf(c, "replicaof", &of);
            conf(c, "rdb-del-sync-files", delete);
        });
        let port = master.port.to_string();
        let theirs = spawn_redis_with(&[
            "--replicaof",
            "127.0.0.1",
            &port,
            "--rdb-del-sync-files",
            delete,
        ]);
        for (port, dir) in [(ours.port, ours.dir()), (theirs.port, theirs.dir())] {
            wait_link_up(&mut Raw::connect(port));
            sync_file_as_configured(dir, delete, &format!("replica on port {port}"));
        }
    }
}

/// `dir` keeps the dump.rdb a full sync wrote, or (rdb-del-sync-files
/// `delete` yes) loses it within a few seconds.
fn sync_file_as_configured(dir: &std::path::Path, delete: &str, who: &str) {
    let has_file = || dir.join("dump.rdb").exists();
    if delete == "yes" {
        assert!(
            wait_until(Duration::from_secs(5), || !has_file()),
            "{who} kept the file"
        );
    } else {
        assert!(has_file(), "{who}: no file");
    }
}

/// A replica without persistence keeps the file of its last full
/// resynchronization, so once restarted it has the data set and continues
/// from where that snapshot stood, as a Redis replica does.
#[test]
fn a_restarted_replica_without_persistence_continues_from_its_synced_file() {
    let redis = spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
    let mut m = Raw::connect(redis.port);
    m.cmd_str(&["SET", "a", "1"]);
    let dir = unique_temp_path("ferrokv-synced-file");
    std::fs::create_dir_all(&dir).expect("a directory");
    let follow = |c: &mut Config| {
        conf(c, "replicaof", &format!("127.0.0.1 {}", redis.port));
        c.dir = dir.display().to_string();
    };
    let replica = start_with(follow);
    wait_link_up(&mut replica.raw());
    drop(replica);
    m.cmd_str(&["SET", "b", "2"]);
    restarted_replica_agrees(&mut m, follow, "1");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The aux fields' names of an RDB image, in order.
fn rdb_aux_names(rdb: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    let mut at = 9; // "REDIS0010"
                    // A string: 6-bit length, or an int encoding (0xC0..0xC2).
    let string_end = |at: usize| match rdb[at] {
        0xC0 => at + 2,
        0xC1 => at + 3,
        0xC2 => at + 5,
        n if n < 0x40 => at + 1 + n as usize,
        n => panic!("an encoding these tests do not write: {n:#x}"),
    };
    while rdb[at] == 0xFA {
        let name_end = string_end(at + 1);
        names.push(text(&rdb[at + 2..name_end]));
        at = string_end(name_end);
    }
    names
}

/// `redis-cli --functions-rdb` (REPLCONF rdb-filter-only functions) gets
/// the functions with the replication aux fields a snapshot for replicas
/// carries, as from redis-server, EOF-marked as Redis's socket target even
/// with repl-diskless-sync off.
#[test]
fn a_filtered_snapshot_carries_the_replication_aux_fields() {
    let p = Pair::new();
    let (mut a, mut b) = p.connect_again();
    let lib = "#!lua name=lib\nredis.register_function('f', function() return 1 end)";
    for c in [&mut a, &mut b] {
        c.cmd_str(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
        c.cmd_str(&["SET", "k", "v"]);
        c.cmd_str(&["FUNCTION", "LOAD", lib]);
    }
    let dir = unique_temp_path("functions-rdb");
    std::fs::create_dir_all(&dir).expect("a directory");
    let (ours, theirs) = p.ports();
    for diskless in ["yes", "no"] {
        let mut images = Vec::new();
        let mut said = Vec::new();
        for (port, c) in [(ours, &mut a), (theirs, &mut b)] {
            c.cmd_str(&["CONFIG", "SET", "repl-diskless-sync", diskless]);
            let file = dir.join(format!("functions-{port}.rdb"));
            let out = std::process::Command::new("redis-cli")
                .args(["-p", &port.to_string(), "--functions-rdb"])
                .arg(&file)
                .output()
                .expect("redis-cli runs");
            assert!(out.status.success(), "{}", text(&out.stderr));
            images.push(std::fs::read(&file).expect("the file"));
            let all = text(&out.stdout) + &text(&out.stderr);
            said.push(all.lines().last().unwrap_or_default().to_string());
        }
        let names = rdb_aux_names(&images[0]);
        assert_eq!(names, rdb_aux_names(&images[1]));
        assert!(names.iter().any(|n| n == "repl-id"), "{names:?}");
        assert_eq!(said[0], said[1], "repl-diskless-sync {diskless}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `redis-cli --rdb` saves ferrokv's snapshot, which redis-check-rdb
/// accepts; `redis-cli --replica` shows the stream as it does for Redis.
#[test]
fn redis_cli_rdb_and_replica_against_ferrokv() {
    let server = ferrokv_master();
    let mut c = server.raw();
    c.cmd_str(&["SET", "a", "1"]);
    c.cmd_str(&["RPUSH", "l", "x", "y"]);
    let dir = unique_temp_path("cli-rdb");
    std::fs::create_dir_all(&dir).expect("a directory");
    let file = dir.join("dump.rdb");
    let port = server.port.to_string();
    let status = std::process::Command::new("redis-cli")
        .args(["-p", &port, "--rdb", &file.display().to_string()])
        .output()
        .expect("redis-cli runs");
    assert!(status.status.success(), "{}", text(&status.stderr));
    let check = std::process::Command::new("redis-check-rdb")
        .arg(&file)
        .output()
        .expect("redis-check-rdb runs");
    let report = text(&check.stdout);
    assert!(
        check.status.success() && report.contains("2 keys read"),
        "{report}"
    );

    let (_child, rx) =
        spawn_lines(std::process::Command::new("redis-cli").args(["-p", &port, "--replica"]));
    let mut lines = Vec::new();
    let until = |want: &str, lines: &mut Vec<String>| loop {
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("redis-cli prints");
        lines.push(line.clone());
        if line.contains(want) {
            break;
        }
    };
    // Its progress goes to stderr; the stream's commands to stdout.
    assert!(wait_until(Duration::from_secs(10), || info_field(
        &mut c,
        "replication",
        "slave0"
    )
    .contains("state=online")));
    // As with Redis, the first command shows without its SELECT.
    c.cmd_str(&["SET", "b", "2"]);
    until("\"SET\",\"b\",\"2\"", &mut lines);
    c.cmd_str(&["SELECT", "2"]);
    c.cmd_str(&["INCR", "z"]);
    until("\"INCR\",\"z\"", &mut lines);
    assert!(lines.iter().any(|l| l == "\"SELECT\",\"2\""), "{lines:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What is queued for a replica is reported as `mem_clients_slaves` and
/// left out of maxmemory, as in Redis: a replica that does not read makes
/// the master evict nothing.
#[test]
#[cfg_attr(
    ferrokv_sanitize,
    ignore = "used_memory of a server inside the test process counts every test's allocations there"
)]
fn replica_buffers_are_not_counted_against_maxmemory() {
    let master = start_with(|c| {
        conf(c, "repl-diskless-sync-delay", "0");
        conf(c, "maxmemory-policy", "allkeys-random");
    });
    let mut m = master.raw();
    for i in 0..100 {
        m.cmd_str(&["SET", &format!("small:{i}"), "v"]);
    }
    let used: u64 = info_field(&mut m, "memory", "used_memory")
        .parse()
        .expect("a number");
    let limit = (used + (8 << 20)).to_string();
    assert_eq!(
        m.cmd_str(&["CONFIG", "SET", "maxmemory", &limit]),
        b"+OK\r\n"
    );
    let _silent = silent_replica(master.port, "1234");
    assert!(wait_until(Duration::from_secs(10), || info_field(
        &mut m,
        "replication",
        "slave0"
    )
    .contains("state=online")));
    let value = "x".repeat(100_000);
    for _ in 0..300 {
        assert_eq!(m.cmd_str(&["SET", "big", &value]), b"+OK\r\n");
    }
    let queued: u64 = info_field(&mut m, "memory", "mem_clients_slaves")
        .parse()
        .expect("a number");
    assert!(queued > 10 << 20, "{queued}");
    let not_counted: u64 = info_field(&mut m, "memory", "mem_not_counted_for_evict")
        .parse()
        .expect("a number");
    // Less what Redis's freeMemoryGetNotCountedMemory takes as the
    // backlog's block headers (65 blocks of the default 1 MB backlog).
    assert!(not_counted + 65 * 64 >= queued, "{not_counted} {queued}");
    assert_eq!(info_field(&mut m, "stats", "evicted_keys"), "0");
    assert_eq!(m.cmd_str(&["DBSIZE"]), b":101\r\n");
}

/// Scripts on a read-only replica, side by side with a redis-server
/// replica of the same master: a function or shebang script without
/// `no-writes` is refused up front, a flagless EVAL's write is refused
/// from inside, and the master's own scripts still write.
#[test]
fn scripts_on_a_read_only_replica_as_redis() {
    let master = spawn_redis();
    let port = master.port.to_string();
    let theirs = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    let ours = spawn_ferrokv_process_with(&["--replicaof", "127.0.0.1", &port]);
    let mut m = Raw::connect(master.port);
    let lib = "#!lua name=t\nredis.register_function{function_name='ro', callback=function() return 'hello' end, flags={'no-writes'}}\nredis.register_function{function_name='rw', callback=function() return redis.call('set','x','1') end}";
    m.cmd_str(&["FUNCTION", "LOAD", lib]);
    m.cmd_str(&["EVAL", "return redis.call('set','y','2')", "0"]);
    let mut replicas = [Raw::connect(theirs.port), Raw::connect(ours.port)];
    for r in &mut replicas {
        assert!(wait_until(Duration::from_secs(20), || r
            .cmd_str(&["GET", "y"])
            == b"$1\r\n2\r\n"));
    }
    for cmd in [
        vec!["FCALL", "ro", "0"],
        vec!["FCALL", "rw", "0"],
        vec!["EVAL", "return redis.call('set','x','1')", "0"],
        vec!["EVAL", "#!lua\nreturn 1", "0"],
        vec!["EVAL", "#!lua flags=no-writes\nreturn 1", "0"],
        vec!["GET", "x"],
    ] {
        let a = replicas[0].cmd_str(&cmd);
        let b = replicas[1].cmd_str(&cmd);
        assert_eq!(
            String::from_utf8_lossy(&b),
            String::from_utf8_lossy(&a),
            "{cmd:?}"
        );
    }
    // A stale replica (link down, replica-serve-stale-data no): only
    // `allow-stale` scripts run, and inside them only stale-safe commands.
    let stale = "#!lua name=s\nredis.register_function{function_name='f1', callback=function() return 'hello' end, flags={'no-writes'}}\nredis.register_function{function_name='f2', callback=function() return 'hello' end, flags={'allow-stale', 'no-writes'}}\nredis.register_function{function_name='f3', callback=function() return redis.call('get', 'x') end, flags={'allow-stale', 'no-writes'}}";
    m.cmd_str(&["FUNCTION", "LOAD", stale]);
    for r in &mut replicas {
        assert!(wait_until(Duration::from_secs(10), || r
            .cmd_str(&["FCALL", "f2", "0"])
            == b"$5\r\nhello\r\n"));
        r.cmd_str(&["CONFIG", "SET", "replica-serve-stale-data", "no"]);
        r.cmd_str(&["REPLICAOF", "127.0.0.1", "1"]);
    }
    assert!(replicas[1]
        .cmd_str(&["FCALL", "f1", "0"])
        .starts_with(b"-MASTERDOWN"));
    assert!(replicas[1]
        .cmd_str(&["FCALL", "f3", "0"])
        .starts_with(b"-ERR Can not execute the command on a stale replica"));
    for cmd in [
        vec!["FCALL", "f1", "0"],
        vec!["FCALL", "f2", "0"],
        vec!["FCALL", "f3", "0"],
        vec![
            "EVAL",
            "#!lua flags=no-writes,allow-stale\nreturn redis.call('get','y')",
            "0",
        ],
    ] {
        let a = replicas[0].cmd_str(&cmd);
        let b = replicas[1].cmd_str(&cmd);
        assert_eq!(
            String::from_utf8_lossy(&b),
            String::from_utf8_lossy(&a),
            "{cmd:?}"
        );
    }
}

/// A raw replica of the server on `port`: it syncs the old way (`$len`
/// snapshot), skips the snapshot, and hands back the socket positioned
/// at the stream and the stream bytes already read.
fn stream_reader(port: u16) -> (std::net::TcpStream, Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(&encode(&[b"PSYNC", b"?", b"-1"]))
        .expect("write");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let mut fill = |s: &mut std::net::TcpStream, buf: &mut Vec<u8>| {
        let n = s.read(&mut chunk).expect("read");
        assert!(n > 0, "the master closed the link");
        buf.extend_from_slice(&chunk[..n]);
    };
    // +FULLRESYNC, keepalive newlines, then `$<len>` and the snapshot.
    let mut lines = 0;
    loop {
        let Some(i) = buf.iter().position(|&b| b == b'\n') else {
            fill(&mut s, &mut buf);
            continue;
        };
        let line: Vec<u8> = buf.drain(..=i).collect();
        let line = String::from_utf8_lossy(&line).trim().to_string();
        if line.is_empty() {
            continue;
        }
        lines += 1;
        if lines == 1 {
            assert!(line.starts_with("+FULLRESYNC"), "{line}");
            continue;
        }
        let len: usize = line
            .strip_prefix('$')
            .and_then(|l| l.parse().ok())
            .unwrap_or_else(|| panic!("a snapshot header, got {line}"));
        while buf.len() < len {
            fill(&mut s, &mut buf);
        }
        buf.drain(..len);
        return (s, buf);
    }
}

/// The next `n` commands of a replication stream, PINGs left out.
fn stream_commands(s: &mut std::net::TcpStream, buf: &mut Vec<u8>, n: usize) -> Vec<String> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut chunk = [0u8; 65536];
    while out.len() < n {
        if let Some(len) = frame_len(buf) {
            let frame: Vec<u8> = buf.drain(..len).collect();
            let words: Vec<String> = parse_bulks(&frame)
                .iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            if words
                .first()
                .is_some_and(|w| w.eq_ignore_ascii_case("ping"))
            {
                continue;
            }
            out.push(words.join(" "));
            continue;
        }
        let got = s.read(&mut chunk).expect("read the stream");
        assert!(got > 0, "the master closed the link");
        buf.extend_from_slice(&chunk[..got]);
    }
    out
}

/// A stream's commands up to `SET __end__ 1`, PINGs left out; SET ... PX
/// reaches it as PXAT of each server's own clock, masked.
fn stream_to_end(s: &mut std::net::TcpStream, b: &mut Vec<u8>) -> Vec<String> {
    let mut out = Vec::new();
    while out.last().map(String::as_str) != Some("SET __end__ 1") {
        let c = stream_commands(s, b, 1).remove(0);
        let words: Vec<&str> = c.split(' ').collect();
        out.push(match words.as_slice() {
            ["SET", k, v, "PXAT", _] => format!("SET {k} {v} PXAT <at>"),
            _ => c,
        });
    }
    out
}

/// Both servers (DEBUG enabled, snapshots sent at once from disk), each
/// with a raw replica's replication stream read from past the snapshot.
type Stream = (std::net::TcpStream, Vec<u8>);
fn streamed_pair() -> (Pair, Stream, Stream) {
    streamed(Pair::new_with(
        |c| {
            conf(c, "repl-diskless-sync", "no");
            conf(c, "repl-diskless-sync-delay", "0");
            conf(c, "enable-debug-command", "yes");
        },
        &STREAMED_ARGS,
    ))
}

/// What [`streamed_pair`] starts both servers with.
const STREAMED_ARGS: [&str; 6] = [
    "--repl-diskless-sync",
    "no",
    "--repl-diskless-sync-delay",
    "0",
    "--enable-debug-command",
    "yes",
];

/// As [`streamed_pair`], with ferrokv as a process of its own: for tests
/// that set process-wide directives (`lazyfree-lazy-*`), which another
/// test's in-process server would reset at its start.
fn streamed_processes() -> (Pair, Stream, Stream) {
    streamed(Pair::of_processes(&STREAMED_ARGS))
}

/// Each master's replication stream, read as a fresh replica reads it.
fn streamed(p: Pair) -> (Pair, Stream, Stream) {
    let (ours, theirs) = p.ports();
    (p, stream_reader(ours), stream_reader(theirs))
}

/// Commands reach replicas in the form redis-server propagates them:
/// GETSET as SET, GETDEL as DEL, INCRBYFLOAT as SET KEEPTTL, HINCRBYFLOAT
/// as HSET (Redis's rewriteClientCommandVector), and SPUBLISH as itself,
/// read from each master's stream.
#[test]
fn commands_are_propagated_in_redis_form() {
    let (mut p, (mut s1, mut b1), (mut s2, mut b2)) = streamed_pair();
    let cmds: &[&[&str]] = &[
        &["SET", "test", "foo"],
        &["GETSET", "test", "bar"],
        &["SET", "test", "vaz", "GET"],
        &["GETDEL", "test"],
        &["SET", "f", "1.5"],
        &["INCRBYFLOAT", "f", "1"],
        &["HSET", "h", "a", "1"],
        &["HINCRBYFLOAT", "h", "a", "1.50"],
        &["SPUBLISH", "ch", "m"],
        // An approximate trim goes as the exact one, its LIMIT kept.
        &[
            "XADD", "x", "MAXLEN", "~", "1", "LIMIT", "10", "1-1", "f", "v",
        ],
    ];
    for c in cmds {
        p.same(c);
    }
    let n = cmds.len() + 1; // the SELECT first
    assert_eq!(
        stream_commands(&mut s1, &mut b1, n),
        stream_commands(&mut s2, &mut b2, n)
    );
}

/// Keys a command finds expired go out as DEL ahead of it, in its unit:
/// with the command's own effects they are wrapped in MULTI/EXEC, inside
/// EXEC and scripts too (Redis 7.0's propagateDeletion through
/// alsoPropagate); a lone read sends a lone DEL, SCAN never wraps, and
/// under `lazyfree-lazy-expire` the deletion is an UNLINK (EXPIRE and
/// GETEX to a past time too), as an evicted key's is under
/// `lazyfree-lazy-eviction` and GETDEL's under `lazyfree-lazy-user-del`.
/// Both masters' streams, read as a replica reads them, compared.
#[test]
fn expired_keys_propagate_with_what_ran_into_them() {
    let (mut p, (mut s1, mut b1), (mut s2, mut b2)) = streamed_processes();
    p.same(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let script = "redis.call('rpush', KEYS[1], 'a') return redis.call('rpush', KEYS[2], 'a')";
    let steps: &[(&[&str], &[&[&str]])] = &[
        (&["m"], &[&["RPUSH", "m", "a"]]),
        (&["k", "j"], &[&["MGET", "k", "j"]]),
        (&["k"], &[&["GET", "k"]]),
        (&["k", "j"], &[&["EVAL", script, "2", "k", "j"]]),
        (
            &["k"],
            &[&["MULTI"], &["GET", "k"], &["RPUSH", "k", "a"], &["EXEC"]],
        ),
        (&["k"], &[&["DEL", "m", "j"], &["SCAN", "0"]]),
        (
            &["k"],
            &[
                &["CONFIG", "SET", "lazyfree-lazy-expire", "yes"],
                &["INCR", "k"],
            ],
        ),
    ];
    for (keys, cmds) in steps {
        let_expire(&mut p, keys);
        for c in *cmds {
            p.same(c);
        }
    }
    // EXPIRE and GETEX to a past time delete as an expiry does, GETDEL as
    // DEL does: UNLINK under their lazyfree directives.
    p.script(&[
        "SET p v",
        "EXPIRE p -1",
        "SET q v",
        "GETEX q PXAT 1",
        "CONFIG SET lazyfree-lazy-user-del yes",
        "SET r v",
        "GETDEL r",
    ]);
    // An evicted key goes as UNLINK under `lazyfree-lazy-eviction`.
    p.script(&[
        "FLUSHALL",
        "SET big v",
        "CONFIG SET lazyfree-lazy-eviction yes",
        "CONFIG SET maxmemory-policy allkeys-lru",
        "CONFIG SET maxmemory 1",
        "SET a b",
        "CONFIG SET maxmemory 0",
        "SET __end__ 1",
    ]);
    let got = stream_to_end(&mut s1, &mut b1);
    assert!(got.iter().any(|c| c == "UNLINK k"), "{got:?}");
    for unlinked in ["UNLINK big", "UNLINK p", "UNLINK q", "UNLINK r"] {
        assert!(got.iter().any(|c| c == unlinked), "{unlinked}: {got:?}");
    }
    assert_eq!(got, stream_to_end(&mut s2, &mut b2));
}

/// Writes over keys whose TTL has passed, as Redis 7.0's setKey and
/// dbDelete make them: MSET, a STORE command with a result and SORT ...
/// STORE reap the old key first (its `expired` event, and a DEL in the
/// command's MULTI/EXEC); a STORE command whose result is empty deletes
/// an expired destination as a live one (`del`, a counted change, the
/// command itself propagated). Found by the command fuzzer's `--expired`
/// mode: ferrokv overwrote the key silently, and took the emptied
/// destination for an expiry. The events, the change counts and both
/// masters' streams are compared with redis-server's.
#[test]
fn writes_over_expired_keys_propagate_and_notify_as_redis() {
    let (mut p, (mut s1, mut b1), (mut s2, mut b2)) = streamed_pair();
    let (mut sa, mut sb) = p.connect_again();
    for r in [&mut sa, &mut sb] {
        r.cmd_str(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    }
    p.same(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    p.same(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    p.script(&[
        "SADD S a b",
        "ZADD z 1 a 2 b",
        "GEOADD g 0 0 p",
        "RPUSH l 3 1",
    ]);
    let steps: &[(&[&str], &str)] = &[
        (&["d"], "MSET d 1 f 2"),
        (&["d", "f"], "MSETNX d 1 f 2"),
        (&["d"], "SINTERSTORE d S nosuch"),
        (&["d"], "SUNIONSTORE d S"),
        (&["d"], "SDIFFSTORE d nosuch"),
        (&["d"], "ZINTERSTORE d 1 z"),
        (&["d"], "ZUNIONSTORE d 1 nosuch"),
        (&["d"], "ZRANGESTORE d z 0 -1"),
        (&["d"], "ZRANGESTORE d nosuch 0 -1"),
        (&["d"], "GEOSEARCHSTORE d g FROMLONLAT 0 0 BYRADIUS 1 km"),
        (&["d"], "GEOSEARCHSTORE d g FROMLONLAT 50 50 BYRADIUS 1 km"),
        (&["d"], "GEORADIUS nosuch 0 0 1 km STORE d"),
        (&["d"], "SORT l STORE d"),
        (&["d"], "SORT nosuch STORE d"),
        (&["d", "e"], "BITOP OR d e"),
        (&["d"], "BITOP OR d f"),
    ];
    let changes = |r: &mut Raw| info_u64(r, "rdb_changes_since_last_save");
    for (keys, cmd) in steps {
        let_expire(&mut p, keys);
        let before = [changes(&mut p.ours), changes(&mut p.theirs)];
        p.same(&cmd.split(' ').collect::<Vec<_>>());
        let after = [changes(&mut p.ours), changes(&mut p.theirs)];
        assert_eq!(
            after[0] - before[0],
            after[1] - before[1],
            "{cmd}: changes counted (left ferrokv)"
        );
    }
    p.same(&["SET", "__end__", "1"]);
    let events = |sub: &mut Raw| {
        let mut got = Vec::new();
        loop {
            let m = String::from_utf8_lossy(&sub.read_reply()).into_owned();
            let parts: Vec<&str> = m.split("\r\n").collect();
            if let [_, _, _, _, _, _, channel, _, key, ..] = parts.as_slice() {
                got.push(format!("{channel} {key}"));
                if *channel == "__keyevent@0__:set" && *key == "__end__" {
                    return got;
                }
            }
        }
    };
    let ours = events(&mut sa);
    assert!(ours.iter().any(|e| e == "__keyevent@0__:del d"), "{ours:?}");
    assert_eq!(ours, events(&mut sb), "events (left ferrokv)");
    let got = stream_to_end(&mut s1, &mut b1);
    assert!(got.iter().any(|c| c == "MULTI"), "{got:?}");
    assert_eq!(
        got,
        stream_to_end(&mut s2, &mut b2),
        "streams (left ferrokv)"
    );
}

/// Clients served after blocking, as Redis 7.0 serves them
/// (handleClientsBlockedOnKeys): each takes from the key that became
/// ready, not the first of its keys that holds something; a served BLPOP,
/// BRPOP or BLMOVE is propagated but counts no change, and a served
/// XREADGROUP counts only the consumer it created; the served lookup
/// counts no keyspace hit or miss. Compared with redis-server: the
/// blocked clients' replies, what each step adds to the change count and
/// the hits and misses, and both masters' replication streams.
#[test]
fn served_waiters_take_from_the_ready_key_as_redis() {
    let (mut p, (mut s1, mut b1), (mut s2, mut b2)) = streamed_pair();
    let steps: &[(&[&str], &[&str], &[&str])] = &[
        (&[], &["BLPOP l 0"], &["RPUSH l a b"]),
        (&[], &["BLMOVE l d RIGHT LEFT 0"], &["RPUSH l a"]),
        (
            &[],
            &["BLMPOP 0 2 l1 l2 LEFT COUNT 3"],
            &["RPUSH l2 a b c d"],
        ),
        (&[], &["BZMPOP 0 1 z MAX COUNT 2"], &["ZADD z 1 a 2 b 3 c"]),
        (
            &[],
            &["BLPOP a b c 0"],
            &["MULTI", "RPUSH c 1", "RPUSH b 2", "EXEC"],
        ),
        (
            &[],
            &["BZMPOP 0 2 a b MIN COUNT 2", "BZPOPMAX b a 0"],
            &["MULTI", "ZADD b 1 x", "ZADD a 1 y 2 z 3 w", "EXEC"],
        ),
        (
            &["XADD x 1-1 f v", "XADD y 1-1 f v"],
            &["XREAD BLOCK 0 STREAMS x y $ $"],
            &["MULTI", "XADD y 2-1 f v", "XADD x 2-1 f v", "EXEC"],
        ),
        (
            &["XGROUP CREATE x g $ MKSTREAM"],
            &[
                "XREADGROUP GROUP g c BLOCK 0 COUNT 1 STREAMS x >",
                "XREADGROUP GROUP g c2 BLOCK 0 NOACK STREAMS x >",
            ],
            &["XADD x 1-1 f v", "XADD x 2-1 f v"],
        ),
        (
            &["XGROUP CREATE x g $ MKSTREAM"],
            &["XREADGROUP GROUP g c BLOCK 0 STREAMS x >"],
            &["DEL x"],
        ),
    ];
    let counters = [
        "rdb_changes_since_last_save",
        "keyspace_hits",
        "keyspace_misses",
    ];
    let read = |r: &mut Raw| counters.map(|c| info_u64(r, c));
    for (setup, blocking, trigger) in steps {
        p.same(&["FLUSHALL"]);
        p.script(setup);
        let before = (read(&mut p.ours), read(&mut p.theirs));
        let mut waiting = Vec::new();
        for cmd in *blocking {
            let (mut a, mut b) = p.connect_again();
            let args: Vec<&[u8]> = cmd.split(' ').map(str::as_bytes).collect();
            a.send(&encode(&args));
            b.send(&encode(&args));
            waiting.push((a, b));
            let n = waiting.len() as u64;
            assert!(wait_until(Duration::from_secs(5), || {
                info_u64(&mut p.ours, "blocked_clients") == n
                    && info_u64(&mut p.theirs, "blocked_clients") == n
            }));
        }
        p.script(trigger);
        for (a, b) in &mut waiting {
            assert_eq!(
                String::from_utf8_lossy(&a.read_reply()),
                String::from_utf8_lossy(&b.read_reply()),
                "{blocking:?} after {trigger:?}"
            );
        }
        let after = (read(&mut p.ours), read(&mut p.theirs));
        let grew = |a: [u64; 3], b: [u64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
        assert_eq!(
            grew(after.0, before.0),
            grew(after.1, before.1),
            "{counters:?} of {blocking:?} after {trigger:?}"
        );
    }
    p.same(&["SET", "__end__", "1"]);
    // XCLAIM carries each server's own clock.
    let read = |s: &mut std::net::TcpStream, b: &mut Vec<u8>| {
        let mut out = Vec::new();
        while out.last().map(String::as_str) != Some("SET __end__ 1") {
            let c = stream_commands(s, b, 1).remove(0);
            let words: Vec<&str> = c
                .split(' ')
                .map(|w| {
                    if w.len() == 13 && w.bytes().all(|b| b.is_ascii_digit()) {
                        "<ms>"
                    } else {
                        w
                    }
                })
                .collect();
            out.push(words.join(" "));
        }
        out
    };
    let got = read(&mut s1, &mut b1);
    assert!(got.iter().any(|c| c == "LPOP c"), "{got:?}");
    assert_eq!(got, read(&mut s2, &mut b2));
}

/// A diskless transfer whose every replica went away kills its child
/// (Redis's "Diskless rdb transfer, last replica dropped, killing fork
/// child"): the RDB child is gone at once, not after the whole save.
#[test]
fn a_streamed_snapshot_without_replicas_is_stopped() {
    let master = start_with(|c| {
        conf(c, "repl-diskless-sync", "yes");
        conf(c, "repl-diskless-sync-delay", "0");
        // 2,000 keys at 5 ms each: ten seconds of saving.
        conf(c, "rdb-key-save-delay", "5000");
        conf(c, "enable-debug-command", "yes");
    });
    let mut m = master.raw();
    assert_eq!(m.cmd_str(&["DEBUG", "POPULATE", "2000"]), b"+OK\r\n");
    let port = master.port.to_string();
    let replica = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    assert!(
        wait_until(Duration::from_secs(10), || info_field(
            &mut m,
            "persistence",
            "rdb_bgsave_in_progress"
        ) == "1"),
        "the transfer never started"
    );
    drop(replica);
    assert!(
        wait_until(Duration::from_secs(5), || info_field(
            &mut m,
            "persistence",
            "rdb_bgsave_in_progress"
        ) == "0"),
        "the child outlived its last replica"
    );
    assert_eq!(m.cmd_str(&["PING"]), b"+PONG\r\n");
}

/// `repl-diskless-load swapdb`: the replica loads the snapshot as it
/// arrives, answering -LOADING meanwhile (and refusing CONFIG SET of the
/// directives Redis refuses while loading), then holds the master's data.
#[test]
fn a_diskless_load_reports_loading_and_ends_with_the_masters_data() {
    let master = start_with(|c| {
        conf(c, "repl-diskless-sync", "yes");
        conf(c, "repl-diskless-sync-delay", "0");
        // 500 keys at 4 ms each: two seconds of transfer.
        conf(c, "rdb-key-save-delay", "4000");
        conf(c, "enable-debug-command", "yes");
    });
    let mut m = master.raw();
    assert_eq!(m.cmd_str(&["DEBUG", "POPULATE", "500"]), b"+OK\r\n");
    let replica = start_with(|c| conf(c, "repl-diskless-load", "swapdb"));
    let mut r = replica.raw();
    assert_eq!(r.cmd_str(&["SET", "mine", "1"]), b"+OK\r\n");
    let port = master.port.to_string();
    assert_eq!(r.cmd_str(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
    assert!(
        wait_until(Duration::from_secs(10), || info_field(
            &mut r,
            "persistence",
            "loading"
        ) == "1"),
        "the replica never reported its load"
    );
    // A new master's history: not served meanwhile (async_loading 0).
    assert_eq!(info_field(&mut r, "persistence", "async_loading"), "0");
    let ping = text(&r.cmd_str(&["PING"]));
    assert!(ping.starts_with("-LOADING"), "{ping}");
    let set = text(&r.cmd_str(&["CONFIG", "SET", "appendonly", "no"]));
    assert!(set.starts_with("-LOADING"), "{set}");
    wait_link_up(&mut r);
    assert_eq!(info_field(&mut r, "persistence", "loading"), "0");
    assert_eq!(r.cmd_str(&["EXISTS", "mine"]), b":0\r\n");
    assert_same_data(&mut m, &mut r);
}

/// A replica paused for writes reads its master's stream but applies none
/// of it: `slave_read_repl_offset` reaches the master's offset while
/// `slave_repl_offset` stays; unpaused, it applies the rest (Redis's
/// unit/pause "Test when replica paused, offset would not grow").
#[test]
fn a_paused_replica_reads_its_masters_stream_without_applying_it() {
    let master = ferrokv_master();
    let mut m = master.raw();
    let (_replica, mut r) = ferrokv_replica_of(master.port);
    let reaches = |r: &mut Raw, field: &str, want: &str| {
        assert!(
            wait_until(Duration::from_secs(10), || info_field(
                r,
                "replication",
                field
            ) == want),
            "{field} never reached {want}"
        );
    };
    m.cmd_str(&["SET", "foo", "bar"]);
    let want = info_field(&mut m, "replication", "master_repl_offset");
    reaches(&mut r, "slave_repl_offset", &want);
    assert_eq!(
        r.cmd_str(&["CLIENT", "PAUSE", "100000", "WRITE"]),
        b"+OK\r\n"
    );
    m.cmd_str(&["SET", "foo2", "bar2"]);
    let now = info_field(&mut m, "replication", "master_repl_offset");
    reaches(&mut r, "slave_read_repl_offset", &now);
    assert_eq!(info_field(&mut r, "replication", "slave_repl_offset"), want);
    assert_eq!(r.cmd_str(&["GET", "foo2"]), b"$-1\r\n");
    assert_eq!(r.cmd_str(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    reaches(&mut r, "slave_repl_offset", &now);
    assert_eq!(r.cmd_str(&["GET", "foo2"]), b"$4\r\nbar2\r\n");
}

/// Outside a cluster PUBLISH and SPUBLISH reach replicas (Redis's
/// PROPAGATE_REPL), so a subscriber on a replica gets what is published on
/// its master.
#[test]
fn publish_reaches_subscribers_on_a_replica() {
    let master = ferrokv_master();
    let mut m = master.raw();
    let (replica, _r) = ferrokv_replica_of(master.port);
    let mut sub = replica.raw();
    assert_eq!(
        sub.cmd_str(&["SUBSCRIBE", "news"]),
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
    );
    m.cmd_str(&["MULTI"]);
    m.cmd_str(&["PUBLISH", "news", "hello"]);
    m.cmd_str(&["EXEC"]);
    assert_eq!(
        sub.read_reply(),
        b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    );
    let mut ssub = replica.raw();
    assert_eq!(
        ssub.cmd_str(&["SSUBSCRIBE", "shard"]),
        b"*3\r\n$10\r\nssubscribe\r\n$5\r\nshard\r\n:1\r\n"
    );
    assert_eq!(m.cmd_str(&["SPUBLISH", "shard", "hi"]), b":0\r\n");
    assert_eq!(
        ssub.read_reply(),
        b"*3\r\n$8\r\nsmessage\r\n$5\r\nshard\r\n$2\r\nhi\r\n"
    );
}

/// Sends `sig` to process `pid`.
fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a child process this test started.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// `program` writing `log.txt` in `dir`, with `extra` arguments: a master
/// syncing replicas at once, unless `extra` makes it a replica.
fn launch_logged(program: &str, dir: &crate::aof::Dir, extra: &[&str]) -> crate::aof::Proc {
    crate::aof::launch(|port| {
        let mut c = std::process::Command::new(program);
        c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--dir", &dir.s(), "--save", "", "--logfile", "log.txt"])
            .args(["--repl-diskless-sync-delay", "0"])
            .args(extra)
            .current_dir(&dir.0);
        c
    })
}

/// Replicas are never paused: under `CLIENT PAUSE ALL` the master still
/// counts their acknowledgements, so a SIGTERM finds the replica in sync
/// and exits at once instead of waiting `shutdown-timeout` for it (the
/// instance suites' "Waiting for process to exit" lines). The same steps
/// against redis-server as the master.
#[test]
fn a_paused_master_still_counts_replica_acks_as_redis() {
    let run = |program: &str| {
        let dir = crate::aof::Dir::new("ferrokv-paused-acks");
        let mut master = launch_logged(program, &dir, &[]);
        let mut replica = spawn_redis_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
        let mut r = Raw::connect(replica.port);
        wait_link_up(&mut r);
        // Writes and the pause in one go: the replica's acknowledgement of
        // them can only arrive while the pause lasts.
        let mut m = Raw::connect(master.port);
        let mut batch = Vec::new();
        for i in 0..50 {
            batch.extend(encode(&[b"SET", format!("k{i}").as_bytes(), b"v"]));
        }
        batch.extend(encode(&[b"CLIENT", b"PAUSE", b"60000", b"ALL"]));
        m.send(&batch);
        for _ in 0..51 {
            assert_eq!(m.read_reply(), b"+OK\r\n");
        }
        assert!(wait_until(Duration::from_secs(10), || r
            .cmd_str(&["DBSIZE"])
            == b":50\r\n"));
        signal(master.child.id(), libc::SIGTERM);
        let exited = master.child_wait(Duration::from_secs(5));
        let log = std::fs::read_to_string(dir.0.join("log.txt")).expect("log");
        let found = (
            log.contains("1 of 1 replicas are in sync when shutting down."),
            log.contains("Lagging replica"),
        );
        let _ = replica.wait_exit(Duration::ZERO);
        (exited, found)
    };
    let ours = run(env!("CARGO_BIN_EXE_ferrokv"));
    let theirs = run("redis-server");
    assert_eq!(ours, theirs);
    assert_eq!(ours, (Some(0), (true, false)));
}

/// SHUTDOWN and SIGTERM with a lagging replica, as Redis 7.0's
/// integration/shutdown: the callers block and writes pause while the
/// master waits (INFO's shutdown_in_milliseconds), SHUTDOWN ABORT answers
/// the blocked callers with an error and lets writes go on, and with
/// `shutdown-timeout 1` the master exits after a second naming the
/// lagging replica. The same steps against redis-server as the master.
#[test]
fn shutdown_waits_for_lagging_replicas_as_redis() {
    let run = |program: &str| {
        let dir = crate::aof::Dir::new("ferrokv-shutdown-wait");
        let mut master = launch_logged(program, &dir, &[]);
        let mut replica = spawn_redis_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
        let mut r = Raw::connect(replica.port);
        wait_link_up(&mut r);
        let mut m = Raw::connect(master.port);
        m.cmd_str(&["SET", "k", "1"]);
        assert!(wait_until(Duration::from_secs(10), || r
            .cmd_str(&["GET", "k"])
            == b"$1\r\n1\r\n"));
        signal(replica.pid(), libc::SIGSTOP);
        assert_eq!(m.cmd_str(&["INCR", "k"]), b":2\r\n");
        let mut blocked: Vec<Raw> = (0..2).map(|_| Raw::connect(master.port)).collect();
        for b in &mut blocked {
            b.send(&encode(&[b"SHUTDOWN"]));
        }
        assert!(wait_until(Duration::from_secs(10), || info_field(
            &mut m,
            "clients",
            "blocked_clients"
        ) == "2"));
        let clients = info_field(&mut m, "clients", "connected_clients");
        let in_ms: i64 = info_field(&mut m, "server", "shutdown_in_milliseconds")
            .parse()
            .expect("shutdown_in_milliseconds");
        assert!(in_ms > 0, "{in_ms}");
        // Writes wait; reads do not.
        let mut writer = Raw::connect(master.port);
        writer.send(&encode(&[b"SET", b"during", b"shutdown"]));
        assert_eq!(m.cmd_str(&["GET", "k"]), b"$1\r\n2\r\n");
        assert_eq!(m.cmd_str(&["SHUTDOWN", "ABORT"]), b"+OK\r\n");
        let errors: Vec<Vec<u8>> = blocked.iter_mut().map(|b| b.read_reply()).collect();
        assert_eq!(writer.read_reply(), b"+OK\r\n");
        assert_eq!(
            m.cmd_str(&["SHUTDOWN", "ABORT"]),
            b"-ERR No shutdown in progress.\r\n"
        );
        // With a one-second timeout, SIGTERM ends the wait and the server.
        m.cmd_str(&["CONFIG", "SET", "shutdown-timeout", "1"]);
        assert_eq!(m.cmd_str(&["INCR", "k"]), b":3\r\n");
        signal(master.child.id(), libc::SIGTERM);
        let exited = master.child_wait(Duration::from_secs(10));
        signal(replica.pid(), libc::SIGCONT);
        let log = std::fs::read_to_string(dir.0.join("log.txt")).expect("log");
        let wanted = [
            "Waiting for replicas before shutting down.",
            "Shutdown manually aborted.",
            "Lagging replica 127.0.0.1:",
            "0 of 1 replicas are in sync when shutting down.",
            "ready to exit, bye bye",
        ];
        let found: Vec<bool> = wanted.iter().map(|w| log.contains(w)).collect();
        let _ = replica.wait_exit(Duration::ZERO);
        (clients, errors, exited, found)
    };
    let ours = run(env!("CARGO_BIN_EXE_ferrokv"));
    let theirs = run("redis-server");
    assert_eq!(ours, theirs);
    assert_eq!(ours.0, "3");
    assert_eq!(
        ours.1,
        vec![b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n".to_vec(); 2]
    );
    assert_eq!(ours.2, Some(0));
    assert_eq!(ours.3, vec![true; 5]);
}

/// redis.set_repl as in Redis: after REPL_NONE a script's writes reach
/// neither the replica nor the AOF, after REPL_AOF only the AOF, after
/// REPL_ALL both. A redis-server replica follows each master; the
/// master's AOF is read back with DEBUG LOADAOF.
#[test]
fn script_set_repl_targets_the_aof_and_replicas_as_redis() {
    let run = |program: &str| {
        let dir = crate::aof::Dir::new("ferrokv-set-repl");
        let master = crate::aof::launch(|port| {
            let mut c = std::process::Command::new(program);
            c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--dir", &dir.s(), "--save", "", "--appendonly", "yes"])
                .args([
                    "--enable-debug-command",
                    "yes",
                    "--repl-diskless-sync-delay",
                    "0",
                ])
                .current_dir(&dir.0);
            c
        });
        let replica = spawn_redis_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
        let mut r = Raw::connect(replica.port);
        wait_link_up(&mut r);
        let mut m = Raw::connect(master.port);
        m.cmd_str(&[
            "EVAL",
            "redis.call('set','a','1'); redis.set_repl(redis.REPL_NONE); \
             redis.call('set','b','2'); redis.set_repl(redis.REPL_AOF); \
             redis.call('set','c','3'); redis.set_repl(redis.REPL_ALL); \
             redis.call('set','d','4')",
            "0",
        ]);
        let want = b"*4\r\n$1\r\n1\r\n$-1\r\n$-1\r\n$1\r\n4\r\n".to_vec();
        assert!(wait_until(Duration::from_secs(10), || r
            .cmd_str(&["MGET", "a", "b", "c", "d"])
            == want));
        let on_master = m.cmd_str(&["MGET", "a", "b", "c", "d"]);
        m.cmd_str(&["DEBUG", "LOADAOF"]);
        let from_aof = m.cmd_str(&["MGET", "a", "b", "c", "d"]);
        let bad = m.cmd_str(&["EVAL", "redis.set_repl(5)", "0"]);
        (on_master, from_aof, bad)
    };
    let ours = run(env!("CARGO_BIN_EXE_ferrokv"));
    let theirs = run("redis-server");
    assert_eq!(ours.0, theirs.0);
    assert_eq!(ours.1, theirs.1);
    assert_eq!(ours.1, b"*4\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n$1\r\n4\r\n");
    assert_eq!(
        without_script_suffix(&ours.2),
        without_script_suffix(&theirs.2)
    );
}

/// `replica-ignore-maxmemory`: a replica over its maxmemory keeps every key
/// its master sends (the default), or evicts like a master when the
/// directive is off. A ferrokv replica and a redis-server replica of the
/// same redis-server master, side by side.
#[test]
fn replica_ignore_maxmemory_acts_as_redis() {
    let master = spawn_redis();
    let mut m = Raw::connect(master.port);
    let ours = spawn_ferrokv_process_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
    let theirs = spawn_redis_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
    let mut replicas = [Raw::connect(ours.port), Raw::connect(theirs.port)];
    for r in &mut replicas {
        wait_link_up(r);
        r.cmd_str(&["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
        r.cmd_str(&["CONFIG", "SET", "maxmemory", "1"]);
    }
    let value = "v".repeat(1000);
    for i in 0..200 {
        m.cmd_str(&["SET", &format!("k{i}"), &value]);
    }
    let want = m.cmd_str(&["DBSIZE"]);
    let offset = info_field(&mut m, "replication", "master_repl_offset");
    for r in &mut replicas {
        assert!(wait_until(Duration::from_secs(10), || info_field(
            r,
            "replication",
            "slave_repl_offset"
        ) == offset));
        // Reads and writes of its own clients do not evict either.
        r.cmd_str(&["GET", "k1"]);
        assert_eq!(r.cmd_str(&["DBSIZE"]), want);
        r.cmd_str(&["CONFIG", "SET", "replica-ignore-maxmemory", "no"]);
        // Eviction has a time budget per command; the cron goes on.
        assert!(wait_until(Duration::from_secs(10), || {
            r.cmd_str(&["GET", "k1"]);
            r.cmd_str(&["DBSIZE"]) == b":0\r\n"
        }));
    }
}

/// `bind-source-addr`: a replica's link to its master leaves from that
/// address (the master lists the replica by it), for a ferrokv replica as
/// for a redis-server one.
#[test]
fn bind_source_addr_sets_the_replica_links_address_as_redis() {
    let master = spawn_redis_with(&["--protected-mode", "no"]);
    let mut m = Raw::connect(master.port);
    let port = master.port.to_string();
    let args = [
        "--bind-source-addr",
        "127.0.0.2",
        "--replicaof",
        "127.0.0.1",
        &port,
    ];
    let ours = spawn_ferrokv_process_with(&args);
    let theirs = spawn_redis_with(&args);
    for replica in [ours.port, theirs.port] {
        wait_link_up(&mut Raw::connect(replica));
    }
    let listed: Vec<String> = (0..2)
        .map(|i| info_field(&mut m, "replication", &format!("slave{i}")))
        .collect();
    assert_eq!(listed.len(), 2);
    for l in &listed {
        assert!(l.starts_with("ip=127.0.0.2,"), "{l}");
    }
}

/// CLIENT KILL of the master client inside a MULTI that then sleeps: the
/// link is down from the kill, as in Redis (which frees the master client
/// at once), so INFO's `master_link_down_since_seconds` (and the cluster
/// replica's data age, cluster-replica-validity-factor) count the sleep.
/// The master is paused so neither replica reconnects meanwhile.
/// A ferrokv and a redis-server replica of the server on `port`, with
/// DEBUG on, once both links are up.
fn debug_replicas_of(port: u16) -> (Ferrokv, Raw, RedisServer, Raw) {
    let ours = start_with(|c| {
        conf(c, "replicaof", &format!("127.0.0.1 {port}"));
        conf(c, "enable-debug-command", "yes");
    });
    let mut o = ours.raw();
    wait_link_up(&mut o);
    let theirs = spawn_redis_with(&[
        "--replicaof",
        "127.0.0.1",
        &port.to_string(),
        "--enable-debug-command",
        "yes",
    ]);
    let mut t = Raw::connect(theirs.port);
    wait_link_up(&mut t);
    (ours, o, theirs, t)
}

#[test]
fn a_killed_master_link_is_down_from_the_kill_as_in_redis() {
    let master = spawn_redis();
    let mut m = Raw::connect(master.port);
    let (_ours, mut o, _theirs, mut t) = debug_replicas_of(master.port);
    assert_eq!(m.cmd_str(&["CLIENT", "PAUSE", "20000"]), b"+OK\r\n");
    for r in [&mut o, &mut t] {
        assert_eq!(r.cmd_str(&["MULTI"]), b"+OK\r\n");
        r.cmd_str(&["CLIENT", "KILL", "TYPE", "MASTER"]);
        r.cmd_str(&["DEBUG", "SLEEP", "2.1"]);
        assert_eq!(r.cmd_str(&["EXEC"]), b"*2\r\n:1\r\n+OK\r\n");
    }
    for r in [&mut o, &mut t] {
        assert_eq!(info_field(r, "replication", "master_link_status"), "down");
        let since: i64 = info_field(r, "replication", "master_link_down_since_seconds")
            .parse()
            .expect("a number");
        assert!(since >= 2, "down for {since} s");
    }
}

/// Pointed at another master, a replica's link counts as down from when
/// the old one dropped (Redis's repl_down_since is kept across
/// REPLICAOF): INFO shows it, and a cluster replica whose new master dies
/// before the sync may still fail over (its data age is that, not "never
/// connected").
#[test]
fn a_new_master_keeps_the_old_links_down_time_as_redis() {
    let master = spawn_redis();
    let (_ours, mut o, _theirs, mut t) = debug_replicas_of(master.port);
    let (nobody, nobody_else) = (free_port().to_string(), free_port().to_string());
    for (r, who) in [(&mut o, "ferrokv"), (&mut t, "redis-server")] {
        assert_eq!(r.cmd_str(&["REPLICAOF", "127.0.0.1", &nobody]), b"+OK\r\n");
        let since = info_field(r, "replication", "master_link_down_since_seconds");
        assert!(since == "0" || since == "1", "{who}: down for {since} s");
        r.cmd_str(&["DEBUG", "SLEEP", "1.1"]);
        assert_eq!(
            r.cmd_str(&["REPLICAOF", "127.0.0.1", &nobody_else]),
            b"+OK\r\n"
        );
        let since: i64 = info_field(r, "replication", "master_link_down_since_seconds")
            .parse()
            .expect("a number");
        assert!(since >= 1, "{who}: down for {since} s");
        // A master that becomes a replica was never connected.
        assert_eq!(r.cmd_str(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
        assert_eq!(r.cmd_str(&["REPLICAOF", "127.0.0.1", &nobody]), b"+OK\r\n");
        assert_eq!(
            info_field(r, "replication", "master_link_down_since_seconds"),
            "-1",
            "{who}"
        );
    }
}

/// A writable replica expires the keys its own clients gave a TTL (the
/// master knows nothing of them), and INFO's slave_expires_tracked_keys
/// counts them as redis-server's does; keys from the master stay the
/// master's to expire.
#[test]
fn a_writable_replica_expires_its_own_volatile_keys_as_redis() {
    let redis_master = spawn_redis_with(&[]);
    let redis_replica = spawn_redis_with(&[
        "--replicaof",
        "127.0.0.1",
        &redis_master.port.to_string(),
        "--replica-read-only",
        "no",
    ]);
    let master = ferrokv_master();
    let replica = start_with(|c| {
        conf(c, "replicaof", &format!("127.0.0.1 {}", master.port));
        conf(c, "replica-read-only", "no");
    });
    let mut m = [master.raw(), Raw::connect(redis_master.port)];
    let mut r = [replica.raw(), Raw::connect(redis_replica.port)];
    for i in 0..2 {
        wait_link_up(&mut r[i]);
        m[i].cmd_str(&["SET", "from-master", "v", "PX", "200"]);
        wait_replicas(&mut m[i], 1);
        // Paused, so the master's own key is not deleted meanwhile.
        m[i].cmd_str(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    }
    let run = |r: &mut [Raw; 2], args: &[&str]| {
        let (a, b) = (r[0].cmd_str(args), r[1].cmd_str(args));
        assert_eq!(text(&a), text(&b), "{args:?}");
    };
    run(&mut r, &["SET", "short", "v", "PX", "1500"]);
    run(&mut r, &["SET", "long", "v"]);
    run(&mut r, &["EXPIRE", "long", "1000"]);
    run(&mut r, &["SET", "plain", "v"]);
    run(
        &mut r,
        &[
            "EVAL",
            "redis.call('set', KEYS[1], 'v', 'px', 1500)",
            "1",
            "scripted",
        ],
    );
    let tracked = |r: &mut Raw| info_field(r, "stats", "slave_expires_tracked_keys");
    assert_eq!(tracked(&mut r[1]), "3");
    assert_eq!(tracked(&mut r[0]), "3");
    for rr in r.iter_mut() {
        assert!(
            wait_until(Duration::from_secs(5), || info_field(
                rr,
                "stats",
                "expired_keys"
            ) == "2"),
            "the replica's own short-lived keys expired"
        );
    }
    run(&mut r, &["EXISTS", "short", "scripted", "long", "plain"]);
    run(&mut r, &["DBSIZE"]);
    assert_eq!(tracked(&mut r[0]), tracked(&mut r[1]));
    run(&mut r, &["FLUSHALL"]);
    assert_eq!(tracked(&mut r[0]), "0");
    assert_eq!(tracked(&mut r[1]), "0");
}

/// DEBUG REPLICATE sends a command to the replicas only; a replica that
/// errs on its master's stream logs it, counts it in INFO's
/// unexpected_error_replies and, read-only under
/// `propagation-error-behavior panic`, stops, as redis-server does.
#[test]
fn errors_on_the_masters_stream_are_counted_or_stop_the_replica_as_redis() {
    let debug = [
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ];
    let redis_master = spawn_redis_with(&debug);
    let master = spawn_ferrokv_process_with(&debug);
    let mut m = [Raw::connect(master.port), Raw::connect(redis_master.port)];
    let mut replica = spawn_ferrokv_process_with(&[
        "--replicaof",
        "127.0.0.1",
        &master.port.to_string(),
        "--propagation-error-behavior",
        "ignore",
    ]);
    let mut redis_replica = spawn_redis_with(&[
        "--replicaof",
        "127.0.0.1",
        &redis_master.port.to_string(),
        "--propagation-error-behavior",
        "ignore",
    ]);
    let mut r = [Raw::connect(replica.port), Raw::connect(redis_replica.port)];
    for i in 0..2 {
        wait_link_up(&mut r[i]);
        assert_eq!(
            m[i].cmd_str(&["DEBUG", "REPLICATE", "fake-command-1", "x"]),
            b"+OK\r\n"
        );
        m[i].cmd_str(&["SET", "foo", "bar"]);
        wait_replicas(&mut m[i], 1);
        assert_eq!(
            info_field(&mut r[i], "stats", "unexpected_error_replies"),
            "1"
        );
        assert_eq!(r[i].cmd_str(&["GET", "foo"]), b"$3\r\nbar\r\n");
        // A writable replica's own divergence is allowed.
        r[i].cmd_str(&["CONFIG", "SET", "replica-read-only", "no"]);
        r[i].cmd_str(&["CONFIG", "SET", "propagation-error-behavior", "panic"]);
        r[i].cmd_str(&["SET", "n", "foo"]);
        m[i].cmd_str(&["INCRBY", "n", "1"]);
        wait_replicas(&mut m[i], 1);
        assert_eq!(
            info_field(&mut r[i], "stats", "unexpected_error_replies"),
            "2"
        );
        // Read-only again: the next error stops the replica.
        r[i].cmd_str(&["CONFIG", "SET", "replica-read-only", "yes"]);
        m[i].cmd_str(&["DEBUG", "REPLICATE", "fake-command-2"]);
        m[i].cmd_str(&["SET", "foo", "baz"]);
    }
    assert!(
        replica.wait_exit(Duration::from_secs(10)).is_some(),
        "ferrokv's replica stopped"
    );
    assert!(
        redis_replica.wait_exit(Duration::from_secs(10)).is_some(),
        "redis-server's replica stopped"
    );
}

/// While a replica runs a script past busy-reply-threshold, its master's
/// stream waits (never refused with -BUSY) and is applied, in order, once
/// the script is over, as in redis-server.
#[test]
fn the_masters_stream_waits_for_a_busy_script_as_redis() {
    let redis_master = spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
    let redis_replica =
        spawn_redis_with(&["--replicaof", "127.0.0.1", &redis_master.port.to_string()]);
    let master = ferrokv_master();
    let (replica, ours) = ferrokv_replica_of(master.port);
    let mut m = [master.raw(), Raw::connect(redis_master.port)];
    let mut r = [ours, Raw::connect(redis_replica.port)];
    wait_link_up(&mut r[1]);
    for i in 0..2 {
        r[i].cmd_str(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
        // The script takes two seconds of wall clock.
        r[i].send(&encode(&[
            b"EVAL",
            b"local s = tonumber(redis.call('TIME')[1]) while tonumber(redis.call('TIME')[1]) < s + 2 do end return 1",
            b"0",
        ]));
        let mut probe = Raw::connect(if i == 0 {
            replica.port
        } else {
            redis_replica.port
        });
        assert!(
            wait_until(Duration::from_secs(5), || probe
                .cmd_str(&["PING"])
                .starts_with(b"-BUSY")),
            "the script runs"
        );
        for n in 0..50 {
            m[i].cmd_str(&["RPUSH", "l", &n.to_string()]);
        }
        assert_eq!(r[i].read_reply(), b":1\r\n");
        wait_replicas(&mut m[i], 1);
        assert_eq!(r[i].cmd_str(&["LLEN", "l"]), b":50\r\n");
        assert_eq!(r[i].cmd_str(&["LINDEX", "l", "49"]), b"$2\r\n49\r\n");
        assert_eq!(
            info_field(&mut r[i], "stats", "unexpected_error_replies"),
            "0"
        );
    }
}

/// A replica loading its master's snapshot from disk (repl-diskless-load
/// disabled) is loading meanwhile, as Redis's: INFO says `loading:1` and
/// commands get -LOADING, until the load ends and the link is up. Side by
/// side with a redis-server replica; the load is slowed by
/// `key-load-delay`.
#[test]
fn a_replica_loading_a_snapshot_from_disk_answers_loading_as_redis() {
    let master = ferrokv_master();
    let mut m = master.raw();
    let value = "A".repeat(1024);
    for j in 0..200 {
        assert_eq!(m.cmd_str(&["SET", &format!("k{j}"), &value]), b"+OK\r\n");
    }
    let ours = spawn_ferrokv_process();
    let theirs = spawn_redis();
    for (port, who) in [(ours.port, "ferrokv"), (theirs.port, "redis-server")] {
        let mut r = Raw::connect(port);
        config_set_all(
            &mut r,
            who,
            &[
                ("repl-diskless-load", "disabled"),
                ("key-load-delay", "10000"),
                ("loading-process-events-interval-bytes", "1024"),
            ],
        );
        r.cmd_str(&["REPLICAOF", "127.0.0.1", &master.port.to_string()]);
        assert!(
            wait_until(Duration::from_secs(20), || info_field(
                &mut r,
                "persistence",
                "loading"
            ) == "1"),
            "{who}: never seen loading"
        );
        let reply = text(&r.cmd_str(&["GET", "k1"]));
        assert!(reply.starts_with("-LOADING"), "{who}: {reply}");
        r.cmd_str(&["CONFIG", "SET", "key-load-delay", "0"]);
        wait_link_up(&mut r);
        assert_eq!(info_field(&mut r, "persistence", "loading"), "0", "{who}");
        assert_eq!(r.cmd_str(&["DBSIZE"]), b":200\r\n", "{who}");
    }
}

/// The replication buffer Redis 7.0 shares between the backlog and its
/// replicas, side by side with redis-server: a block of 16 KB (with the
/// allocator's rounding) is counted as Redis counts it; a replica that
/// does not read keeps the stream from its offset on, past
/// `repl-backlog-size`, and another replica can continue from there; once
/// it is gone the buffer is trimmed back to the backlog's size. A
/// `repl-backlog-size` set below 16 KB is raised to it.
#[test]
#[cfg_attr(
    ferrokv_sanitize,
    ignore = "the allocator's size classes are jemalloc's"
)]
fn replicas_share_one_replication_buffer_as_redis() {
    on_both_processes(|port, who| {
        let mut m = Raw::connect(port);
        assert_eq!(
            m.cmd_str(&["CONFIG", "SET", "repl-backlog-size", "1"]),
            b"+OK\r\n"
        );
        assert_eq!(
            m.cmd_str(&["CONFIG", "GET", "repl-backlog-size"]),
            b"*2\r\n$17\r\nrepl-backlog-size\r\n$5\r\n16384\r\n",
            "{who}"
        );
        assert_eq!(
            m.cmd_str(&["CONFIG", "SET", "repl-diskless-sync", "no"]),
            b"+OK\r\n"
        );
        assert_eq!(
            info_u64(&mut m, "mem_total_replication_buffers"),
            0,
            "{who}"
        );
        let _silent = silent_replica(port, "1234");
        assert!(
            wait_until(Duration::from_secs(10), || info_field(
                &mut m,
                "replication",
                "slave0"
            )
            .contains("state=online")),
            "{who}"
        );
        assert_eq!(m.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
        assert_eq!(
            info_u64(&mut m, "mem_total_replication_buffers"),
            20504,
            "{who}"
        );
        let value = "x".repeat(100_000);
        for i in 0..200 {
            assert_eq!(m.cmd_str(&["SET", &format!("k{i}"), &value]), b"+OK\r\n");
        }
        let held = info_u64(&mut m, "repl_backlog_histlen");
        assert!(held > 8 << 20, "{who}: {held}");
        assert!(
            info_u64(&mut m, "mem_total_replication_buffers") > held as u64,
            "{who}"
        );
        let list = text(&m.cmd_str(&["CLIENT", "LIST", "TYPE", "replica"]));
        let omem: u64 = list
            .split(' ')
            .find_map(|f| f.strip_prefix("omem="))
            .and_then(|v| v.parse().ok())
            .expect("omem");
        assert!(omem > 8 << 20, "{who}: {list}");
        // Another replica continues from the oldest byte held, far more
        // than the backlog's size behind.
        let replid = info_field(&mut m, "replication", "master_replid");
        let first = info_field(&mut m, "replication", "repl_backlog_first_byte_offset");
        let mut other = Raw::connect(port);
        other.send(&encode(&[b"PSYNC", replid.as_bytes(), first.as_bytes()]));
        let reply = other.read_reply();
        assert!(reply.starts_with(b"+CONTINUE"), "{who}: {}", text(&reply));
        let killed = text(&m.cmd_str(&["CLIENT", "KILL", "TYPE", "replica"]));
        assert_eq!(killed, ":2\r\n", "{who}");
        assert!(
            wait_until(Duration::from_secs(10), || info_u64(
                &mut m,
                "repl_backlog_histlen"
            ) < 16384 + 20480),
            "{who}: the buffer was not trimmed"
        );
        assert!(
            info_u64(&mut m, "mem_total_replication_buffers") < 3 * 20504,
            "{who}"
        );
    });
}

/// A replica that continues far behind is given the stream as fast as it
/// takes it, side by side with redis-server as the master (each with a
/// redis-server replica): 30 MB sent after a partial resynchronization
/// arrive within Redis's own test's 5 seconds, the loop not waiting for
/// its next tick between pieces (replication-buffer's "Partial
/// resynchronization is successful even client-output-buffer-limit is
/// less than repl-backlog-size").
#[test]
fn a_replica_far_behind_catches_up_at_once_as_redis() {
    on_both_processes(|port, who| {
        let mut m = Raw::connect(port);
        config_set_all(
            &mut m,
            who,
            &[
                ("save", ""),
                ("repl-backlog-size", "104857600"),
                ("client-output-buffer-limit", "replica 512k 0 0"),
            ],
        );
        let replica = spawn_redis_with(&["--replicaof", "127.0.0.1", &port.to_string()]);
        let mut r = Raw::connect(replica.port);
        wait_link_up(&mut r);
        let big = "A".repeat(10 << 20);
        m.cmd_str(&["MULTI"]);
        m.cmd_str(&["CLIENT", "KILL", "TYPE", "replica"]);
        for _ in 0..3 {
            m.cmd_str(&["SET", "key", &big]);
        }
        m.cmd_str(&["DEBUG", "SLEEP", "1"]);
        assert!(m.cmd_str(&["EXEC"]).starts_with(b"*5\r\n"), "{who}");
        let offset = info_field(&mut m, "replication", "master_repl_offset");
        assert!(
            wait_until(Duration::from_secs(5), || info_field(
                &mut r,
                "replication",
                "master_repl_offset"
            ) == offset),
            "{who}: the replica did not catch up"
        );
        assert_eq!(info_field(&mut m, "stats", "sync_partial_ok"), "1", "{who}");
        assert_eq!(info_field(&mut m, "stats", "sync_full"), "1", "{who}");
    });
}

/// A fake master on a port of its own: answers the handshake of the
/// replica that connects, returns the replica's PSYNC arguments and the
/// socket.
fn fake_master_accept(listener: &std::net::TcpListener) -> (std::net::TcpStream, Vec<String>) {
    use std::io::{BufRead, BufReader, Write};
    let (mut s, _) = listener.accept().expect("accept");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    loop {
        let mut line = String::new();
        r.read_line(&mut line).expect("read");
        let n: usize = line
            .trim()
            .trim_start_matches('*')
            .parse()
            .expect("an array");
        let mut args = Vec::new();
        for _ in 0..n {
            let mut len = String::new();
            r.read_line(&mut len).expect("read");
            let mut arg = String::new();
            r.read_line(&mut arg).expect("read");
            args.push(arg.trim_end().to_string());
        }
        match args[0].to_ascii_uppercase().as_str() {
            "PING" => s.write_all(b"+PONG\r\n").expect("write"),
            "PSYNC" => return (s, args),
            _ => s.write_all(b"+OK\r\n").expect("write"),
        }
    }
}

/// Redis counts a master's transaction in the replica's offset only at its
/// EXEC: a link lost between MULTI and EXEC resumes at the MULTI (PSYNC
/// asks for it again), so the transaction is neither cut nor half-applied
/// ("EXEC without MULTI" on the replica).
#[test]
fn a_link_lost_inside_a_transaction_resumes_at_its_multi_as_redis() {
    use std::io::Write;
    const REPLID: &str = "0123456789012345678901234567890123456789";
    let multi = encode(&[b"MULTI"]);
    let set = encode(&[b"SET", b"k", b"v"]);
    for who in ["ferrokv", "redis-server"] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let fake = listener.local_addr().expect("addr").port().to_string();
        let ours;
        let theirs;
        let mut r = if who == "ferrokv" {
            ours = start();
            ours.raw()
        } else {
            theirs = spawn_redis();
            Raw::connect(theirs.port)
        };
        assert_eq!(r.cmd_str(&["REPLICAOF", "127.0.0.1", &fake]), b"+OK\r\n");
        let (mut s, _) = fake_master_accept(&listener);
        // An empty data set (checksum 0: not checked), then half a
        // transaction, and the link drops.
        let rdb = b"REDIS0009\xff\0\0\0\0\0\0\0\0";
        s.write_all(format!("+FULLRESYNC {REPLID} 0\r\n${}\r\n", rdb.len()).as_bytes())
            .expect("write");
        s.write_all(rdb).expect("write");
        s.write_all(&multi).expect("write");
        s.write_all(&set).expect("write");
        assert!(
            wait_until(Duration::from_secs(5), || {
                info_field(&mut r, "replication", "master_link_status") == "up"
            }),
            "{who}: no link"
        );
        drop(s);
        let (mut s, psync) = fake_master_accept(&listener);
        assert_eq!(psync[1..], [REPLID.to_string(), "1".to_string()], "{who}");
        s.write_all(format!("+CONTINUE {REPLID}\r\n").as_bytes())
            .expect("write");
        s.write_all(&multi).expect("write");
        s.write_all(&set).expect("write");
        s.write_all(&encode(&[b"EXEC"])).expect("write");
        assert!(
            wait_until(Duration::from_secs(5), || r.cmd_str(&["GET", "k"])
                == b"$1\r\nv\r\n"),
            "{who}: the transaction did not apply"
        );
        assert_eq!(
            info_field(&mut r, "replication", "master_repl_offset"),
            (multi.len() + set.len() + encode(&[b"EXEC"]).len()).to_string(),
            "{who}"
        );
        assert_eq!(
            info_field(&mut r, "stats", "total_error_replies"),
            "0",
            "{who}"
        );
    }
}

/// A master's log of a full sync, disk and diskless, as redis-server's:
/// the child's "DB saved on disk" and copy-on-write lines, "Background
/// saving terminated with success" or "Background RDB transfer terminated
/// with success", the diskless end at warning level and Redis's words
/// ("... Waiting for REPLCONF ACK from slave to enable streaming").
#[test]
fn a_full_sync_logs_as_redis() {
    for diskless in ["no", "yes"] {
        let run = |program: &str| {
            let dir = crate::aof::Dir::new("ferrokv-sync-log");
            let master = launch_logged(program, &dir, &["--repl-diskless-sync", diskless]);
            let mut m = Raw::connect(master.port);
            assert_eq!(m.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
            let replica = spawn_redis_with(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
            wait_link_up(&mut Raw::connect(replica.port));
            let log = || std::fs::read_to_string(dir.0.join("log.txt")).unwrap_or_default();
            assert!(wait_until(Duration::from_secs(10), || log()
                .contains("Synchronization with replica")));
            let (mut parent, kid) = crate::process::log_lines(&log());
            parent.retain(|l| !l.contains("replication IDs are"));
            (parent, kid)
        };
        let ours = run(env!("CARGO_BIN_EXE_ferrokv"));
        let theirs = run("redis-server");
        assert_eq!(ours, theirs, "repl-diskless-sync {diskless}");
    }
}

/// A replica started with `replicaof` and no file to continue asks
/// `PSYNC ? -1`, as Redis's does ("Partial resynchronization not possible
/// (no cached master)"): ferrokv asked to continue its own new history,
/// which a Redis master refused and counted in `sync_partial_err`.
#[test]
fn a_fresh_replica_asks_for_a_full_sync_as_redis() {
    let master = spawn_redis();
    let mut m = Raw::connect(master.port);
    let replica = crate::support::spawn_ferrokv_process_with(&[
        "--replicaof",
        "127.0.0.1",
        &master.port.to_string(),
    ]);
    wait_link_up(&mut Raw::connect(replica.port));
    assert_eq!(info_field(&mut m, "stats", "sync_full"), "1");
    assert_eq!(info_field(&mut m, "stats", "sync_partial_err"), "0");
}

/// A replica's log of a full sync from a redis-server master, loading from
/// disk, diskless with swapdb and diskless on an empty data set, as a
/// redis-server replica's: PSYNC ? -1 with no history, "Non blocking
/// connect for SYNC fired the event.", "Flushing old data", the loaded
/// file's "Loading RDB produced by version ..." lines, "Swapping active DB
/// with loaded DB". A replica told REPLICAOF at run time offers its own
/// history, and drops it ("Discarding previously cached master state.")
/// as the load begins: with `on-empty-db`, before "Flushing old data".
#[test]
fn a_replica_logs_its_full_sync_as_redis() {
    for (diskless, load, at_run_time) in [
        ("no", "disabled", false),
        ("yes", "swapdb", false),
        ("yes", "on-empty-db", true),
        ("no", "on-empty-db", true),
    ] {
        let run = |program: &str| {
            let master = spawn_redis_with(&[
                "--repl-diskless-sync",
                diskless,
                "--repl-diskless-sync-delay",
                "0",
            ]);
            assert_eq!(
                Raw::connect(master.port).cmd_str(&["SET", "k", "v"]),
                b"+OK\r\n"
            );
            let dir = crate::aof::Dir::new("ferrokv-replica-log");
            let port = master.port.to_string();
            let mut args = vec!["--repl-diskless-load", load];
            if !at_run_time {
                args.extend(["--replicaof", "127.0.0.1", &port]);
            }
            let replica = launch_logged(program, &dir, &args);
            let mut r = Raw::connect(replica.port);
            if at_run_time {
                assert_eq!(r.cmd_str(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
            }
            wait_link_up(&mut r);
            let log = || std::fs::read_to_string(dir.0.join("log.txt")).unwrap_or_default();
            assert!(wait_until(Duration::from_secs(10), || log()
                .contains("Finished with success")));
            let (mut lines, _) = crate::process::log_lines(&log());
            // The master's replication ID, the file's age and memory, and
            // REPLICAOF's caller (its address and age).
            lines.retain(|l| {
                ![
                    "Full resync from",
                    "RDB age",
                    "RDB memory",
                    "user request from",
                ]
                .iter()
                .any(|s| l.contains(s))
            });
            lines
                .into_iter()
                .map(|l| match l.split_once("(request ") {
                    Some((head, _)) => format!("{head}(request <id>)"),
                    None => l,
                })
                .collect::<Vec<_>>()
        };
        let ours = run(env!("CARGO_BIN_EXE_ferrokv"));
        let theirs = run("redis-server");
        assert_eq!(ours, theirs, "repl-diskless-load {load}");
        if at_run_time {
            assert!(
                ours.iter().any(|l| l.contains("Discarding previously")),
                "{ours:?}"
            );
        }
    }
}

/// A replica whose master link drops reconnects at once and continues
/// (Redis 7.0's replicationCacheMaster and replicationHandleMasterDisconnection),
/// not at its once-a-second retry: five links killed in a row are each up
/// again within 600 ms (before, every second one took a second),
/// and the log reads as a redis-server replica's: "Caching the disconnected
/// master state.", "Reconnecting to MASTER", the partial resync and
/// "Master accepted a Partial Resynchronization.".
#[test]
fn a_lost_master_link_is_reconnected_at_once_as_redis() {
    let run = |program: &str| {
        let master = spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
        let mut m = Raw::connect(master.port);
        let dir = crate::aof::Dir::new("ferrokv-relink");
        let port = master.port.to_string();
        let replica = launch_logged(program, &dir, &["--replicaof", "127.0.0.1", &port]);
        let mut r = Raw::connect(replica.port);
        wait_link_up(&mut r);
        let log = || std::fs::read_to_string(dir.0.join("log.txt")).unwrap_or_default();
        let synced = log().len();
        for i in 0..5 {
            assert_eq!(m.cmd_str(&["SET", "k", &i.to_string()]), b"+OK\r\n");
            assert_eq!(r.cmd_str(&["CLIENT", "KILL", "TYPE", "master"]), b":1\r\n");
            let up = || {
                String::from_utf8_lossy(&r.cmd_str(&["INFO", "replication"]))
                    .contains("master_link_status:up")
            };
            assert!(
                wait_until(Duration::from_millis(600), up),
                "{program}: kill {i}"
            );
        }
        let text = log();
        let (lines, _) = crate::process::log_lines(&text[synced..]);
        // The replication ID each master made up.
        lines
            .into_iter()
            .map(|l| match l.split_once("(request ") {
                Some((head, _)) => format!("{head}(request <id>)"),
                None => l,
            })
            .collect::<Vec<_>>()
    };
    let ours = run(env!("CARGO_BIN_EXE_ferrokv"));
    let theirs = run("redis-server");
    assert!(
        ours.iter().any(|l| l.contains("Master accepted a Partial")),
        "{ours:?}"
    );
    assert_eq!(ours, theirs);
}

/// A master turned replica, moved to another master, then promoted logs
/// as a redis-server doing the same: "Before turning into a replica ...
/// synthesize a cached master", "Connecting to MASTER" and "sync started"
/// before "REPLICAOF ... enabled (user request from '<client info>')",
/// the dropped link's "Connection with master lost." and "Caching the
/// disconnected master state." (role M), "Discarding previously cached
/// master state." before a full sync's load and at promotion, "Setting
/// secondary replication ID ..." and "MASTER MODE enabled".
#[test]
fn a_replica_switching_masters_logs_as_redis() {
    // No PING from a master in between, which would move the offsets the
    // log shows.
    let args = [
        "--repl-diskless-sync-delay",
        "0",
        "--repl-ping-replica-period",
        "3600",
    ];
    let (first, second) = (spawn_redis_with(&args), spawn_redis_with(&args));
    let run = |program: &str| {
        let dir = crate::aof::Dir::new("ferrokv-switch-log");
        let replica = launch_logged(program, &dir, &[]);
        let mut r = Raw::connect(replica.port);
        let log = || std::fs::read_to_string(dir.0.join("log.txt")).unwrap_or_default();
        let start = log().len();
        for master in [&first, &second] {
            let port = master.port.to_string();
            assert_eq!(r.cmd_str(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
            wait_link_up(&mut r);
            assert!(wait_until(Duration::from_secs(10), || log()
                .ends_with("Finished with success\n")));
        }
        assert_eq!(r.cmd_str(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
        assert!(wait_until(Duration::from_secs(10), || log()
            .contains("MASTER MODE enabled")));
        let text: String = log()[start..].lines().map(|l| masked(l) + "\n").collect();
        let (mut lines, _) = crate::process::log_lines(&text);
        lines.retain(|l| !["RDB age", "RDB memory"].iter().any(|s| l.contains(s)));
        lines
    };
    let ours = run(env!("CARGO_BIN_EXE_ferrokv"));
    assert!(
        ours.iter()
            .any(|l| l.contains("Setting secondary replication ID")),
        "{ours:?}"
    );
    assert_eq!(ours, run("redis-server"));
}

/// A log line with replication IDs and the client's id, descriptor and
/// seconds masked: each server makes up its own, and a loaded machine
/// may tick a second in between.
fn masked(line: &str) -> String {
    line.split(' ')
        .map(|w| {
            let hex = w.chars().take_while(char::is_ascii_hexdigit).count();
            if hex == 40 {
                format!("<id>{}", &w[40..])
            } else if let Some(field) = ["id=", "fd=", "age=", "idle="]
                .iter()
                .find(|f| w.starts_with(*f))
            {
                format!("{field}?")
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
