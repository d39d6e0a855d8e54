//! Redis Cluster with real processes (Redis's `unit/cluster/*.tcl`):
//! CLUSTER's replies and the routing errors compared with a redis-server
//! in cluster mode; six-node clusters built by `redis-cli --cluster
//! create`, all ferrokv and mixed with redis-server, written through
//! redirections; a master killed and its replica promoted with no WAITed
//! write lost; resharding under a write load in both directions between
//! ferrokv and redis-server with no key lost; ASK and TRYAGAIN during a
//! migration compared with redis-server's.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

/// Which server a node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The ferrokv binary.
    Ferrokv,
    /// redis-server.
    Redis,
}

/// A cluster node process, killed on drop.
pub struct Node {
    /// Its client port (the bus is 10000 above).
    pub port: u16,
    /// What it runs.
    pub kind: Kind,
    child: Option<ChildGuard>,
    _dir: std::path::PathBuf,
}

impl Node {
    /// Kills the process (SIGKILL).
    pub fn kill(&mut self) {
        self.child = None;
    }

    /// Starts it again on its port with its files.
    fn restart(&mut self, node_timeout: u64) {
        self.kill();
        let n = spawn_node(self.kind, node_timeout, self.port, &self._dir).expect("restarted");
        self.child = n.child;
    }
}

/// Cluster tests run one at a time: each starts up to seven servers, and
/// on a 2-core machine several at once slow gossip past their deadlines.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A loopback port whose bus port (10000 above) is free too.
fn cluster_port() -> u16 {
    loop {
        let p = free_port();
        if p <= 55535 && std::net::TcpListener::bind(("127.0.0.1", p + 10000)).is_ok() {
            return p;
        }
    }
}

/// Starts a node in cluster mode with `node_timeout` ms.
pub fn start_node(kind: Kind, node_timeout: u64) -> Node {
    let dir = unique_temp_path("cluster-node");
    std::fs::create_dir_all(&dir).expect("create a node directory");
    for _ in 0..5 {
        if let Some(n) = spawn_node(kind, node_timeout, cluster_port(), &dir) {
            return n;
        }
    }
    panic!("a cluster node did not start");
}

/// Runs a node on `port` with its files in `dir`; None if it did not
/// start (its port taken meanwhile).
fn spawn_node(kind: Kind, node_timeout: u64, port: u16, dir: &std::path::Path) -> Option<Node> {
    let program = match kind {
        Kind::Ferrokv => env!("CARGO_BIN_EXE_ferrokv"),
        Kind::Redis => "redis-server",
    };
    let mut cmd = server_command(program, port);
    cmd.args(["--cluster-enabled", "yes"])
        .args(["--cluster-node-timeout", &node_timeout.to_string()])
        .args(["--dir", dir.to_str().unwrap_or("/tmp")])
        .args(["--appendonly", "no", "--repl-diskless-sync-delay", "0"])
        .args(["--enable-debug-command", "yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = ChildGuard(cmd.spawn().expect("the server binary runs"));
    let pid = child.0.id();
    let started = wait_until(Duration::from_secs(5), || {
        matches!(child.0.try_wait(), Ok(Some(_)))
            || (listens_on(pid, port) && listens_on(pid, port + 10000))
    });
    (started && matches!(child.0.try_wait(), Ok(None))).then(|| Node {
        port,
        kind,
        child: Some(child),
        _dir: dir.to_path_buf(),
    })
}

fn text(r: &[u8]) -> String {
    String::from_utf8_lossy(r).into_owned()
}

/// The node's ID (CLUSTER MYID).
fn node_id(port: u16) -> String {
    text(&Raw::connect(port).cmd_str(&["CLUSTER", "MYID"]))
        .lines()
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

/// A command's reply from the node on `port`, as text.
pub fn ask(port: u16, args: &[&str]) -> String {
    text(&Raw::connect(port).cmd_str(args))
}

/// `redis-cli --cluster <args>` with `--cluster-yes`; its output.
fn cluster_tool(args: &[String]) -> (bool, String) {
    let out = Command::new("redis-cli")
        .arg("--cluster")
        .args(args)
        .arg("--cluster-yes")
        .stdin(Stdio::null())
        .output()
        .expect("redis-cli runs");
    (
        out.status.success(),
        format!("{}{}", text(&out.stdout), text(&out.stderr)),
    )
}

/// Nodes started with `kinds` and joined by `redis-cli --cluster create`
/// with `replicas` replicas per master; waits until every node reports
/// the cluster ok.
pub fn create_cluster(kinds: &[Kind], replicas: usize, node_timeout: u64) -> Vec<Node> {
    let nodes: Vec<Node> = kinds.iter().map(|&k| start_node(k, node_timeout)).collect();
    let mut args = vec!["create".to_string()];
    args.extend(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)));
    args.extend(["--cluster-replicas".to_string(), replicas.to_string()]);
    let (ok, out) = cluster_tool(&args);
    assert!(ok && out.contains("[OK] All 16384 slots covered"), "{out}");
    for n in &nodes {
        assert!(
            wait_until(Duration::from_secs(20), || {
                ask(n.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
            }),
            "node {} ({:?}) never saw the cluster ok",
            n.port,
            n.kind
        );
    }
    nodes
}

/// A client that follows -MOVED and -ASK, as cluster clients do.
pub struct ClusterClient {
    conns: HashMap<u16, Raw>,
    /// Where each slot was last found.
    slots: HashMap<u16, u16>,
    seed: u16,
}

impl ClusterClient {
    /// A client that starts at `seed`.
    pub fn new(seed: u16) -> ClusterClient {
        ClusterClient {
            conns: HashMap::new(),
            slots: HashMap::new(),
            seed,
        }
    }

    fn conn(&mut self, port: u16) -> &mut Raw {
        self.conns.entry(port).or_insert_with(|| Raw::connect(port))
    }

    /// Runs `args` (its key at `args[1]`) wherever its slot is served.
    pub fn cmd(&mut self, args: &[&str]) -> String {
        let slot = key_slot(args[1].as_bytes());
        let mut port = *self.slots.get(&slot).unwrap_or(&self.seed);
        let mut asking = false;
        for _ in 0..16 {
            let c = self.conn(port);
            if asking {
                assert_eq!(c.cmd_str(&["ASKING"]), b"+OK\r\n");
            }
            let r = text(&c.cmd_str(args));
            let redirect = |r: &str, kind: &str| -> Option<u16> {
                let rest = r.strip_prefix(kind)?;
                rest.trim_end().rsplit(':').next()?.parse().ok()
            };
            if let Some(p) = redirect(&r, "-MOVED ") {
                self.slots.insert(slot, p);
                port = p;
                asking = false;
            } else if let Some(p) = redirect(&r, "-ASK ") {
                port = p;
                asking = true;
            } else if r.starts_with("-TRYAGAIN") || r.starts_with("-CLUSTERDOWN") {
                std::thread::sleep(Duration::from_millis(50));
            } else {
                return r;
            }
        }
        panic!("too many redirections for {args:?}");
    }
}

/// The hash slot of a key (CRC16 of the hash tag or the key, mod 16384).
pub fn key_slot(key: &[u8]) -> u16 {
    ferrokv::util::crc16::key_hash_slot(key)
}

/// Replaces every node id (40 hex digits) in `s` with `<id>`, and each
/// port of `ports` with `<port>`.
fn normalized(s: &str, ports: &[u16]) -> String {
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let run = b[i..]
            .iter()
            .take_while(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
            .count();
        if run == 40 {
            out.push_str("<id>");
            i += 40;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    for p in ports {
        out = out.replace(&(p + 10000).to_string(), "<bus>");
        out = out.replace(&p.to_string(), "<port>");
    }
    out
}

/// Both single-node clusters answer `args` alike, ids and ports aside.
fn same(f: &mut Raw, r: &mut Raw, ports: &[u16], args: &[&str]) -> String {
    let a = normalized(&text(&f.cmd_str(args)), ports);
    let b = normalized(&text(&r.cmd_str(args)), ports);
    assert_eq!(a, b, "reply differs for {args:?}");
    a
}

#[test]
fn single_node_replies_match_redis() {
    let _serial = one_at_a_time();
    let fk = start_node(Kind::Ferrokv, 15000);
    let rd = start_node(Kind::Redis, 15000);
    let ports = [fk.port, rd.port];
    let (mut f, mut r) = (Raw::connect(fk.port), Raw::connect(rd.port));
    let mut s = |args: &[&str]| same(&mut f, &mut r, &ports, args);
    for cmd in [
        "CLUSTER INFO",
        "CLUSTER NODES",
        "CLUSTER SLOTS",
        "CLUSTER SHARDS",
        "CLUSTER LINKS",
        "CLUSTER HELP",
        "CLUSTER KEYSLOT foo",
        "CLUSTER KEYSLOT {user1000}.following",
        "CLUSTER KEYSLOT foo{}{bar}",
        "CLUSTER COUNTKEYSINSLOT 16384",
        "CLUSTER COUNTKEYSINSLOT x",
        "CLUSTER GETKEYSINSLOT 0 -1",
        "CLUSTER GETKEYSINSLOT 0 x",
        "CLUSTER ADDSLOTS 16384",
        "CLUSTER ADDSLOTS x",
        "CLUSTER ADDSLOTS 5 5",
        "CLUSTER ADDSLOTSRANGE 5 1",
        "CLUSTER ADDSLOTSRANGE 1 2 3",
        "CLUSTER DELSLOTS 7",
        "CLUSTER SETSLOT 7 MIGRATING 0123456789012345678901234567890123456789",
        "CLUSTER SETSLOT 7 IMPORTING 0123456789012345678901234567890123456789",
        "CLUSTER SETSLOT 7 NODE 0123456789012345678901234567890123456789",
        "CLUSTER SETSLOT 7 BOGUS",
        "CLUSTER SETSLOT 7 STABLE",
        "CLUSTER FORGET 0123456789012345678901234567890123456789",
        "CLUSTER REPLICAS 0123456789012345678901234567890123456789",
        "CLUSTER COUNT-FAILURE-REPORTS 0123456789012345678901234567890123456789",
        "CLUSTER MEET 999.1.1.1 7000",
        "CLUSTER MEET 127.0.0.1 x",
        "CLUSTER FAILOVER",
        "CLUSTER FAILOVER BOGUS",
        "CLUSTER RESET BOGUS",
        "CLUSTER BOGUS",
        "SET foo bar",
        "GET foo",
        "SELECT 1",
        "SELECT 0",
        "SWAPDB 0 1",
        "MOVE foo 1",
        "COPY foo bar DB 1",
        "READONLY",
        "READWRITE",
        "ASKING",
        "CLUSTER ADDSLOTS 1 2 3",
        "CLUSTER ADDSLOTS 3",
        "CLUSTER ADDSLOTSRANGE 10 20 100 200",
        "CLUSTER DELSLOTS 2",
        "CLUSTER DELSLOTSRANGE 10 12",
        "CLUSTER NODES",
        "CLUSTER SLOTS",
        "CLUSTER SHARDS",
        "CLUSTER INFO",
        "CLUSTER SET-CONFIG-EPOCH -1",
        "CLUSTER SET-CONFIG-EPOCH 5",
        "CLUSTER SET-CONFIG-EPOCH 6",
        "CLUSTER BUMPEPOCH",
        "CLUSTER INFO",
        "CLUSTER FLUSHSLOTS",
        "CLUSTER DELSLOTSRANGE 0 16383",
        "CLUSTER ADDSLOTSRANGE 0 16383",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        s(&args);
    }
    // A master refuses writes for two seconds after start (Redis's
    // writable delay), then serves every slot.
    assert!(wait_until(Duration::from_secs(10), || {
        ask(fk.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
            && ask(rd.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    }));
    // A slot unassigned takes the cluster down, as the directives say.
    let in_100 = (0..)
        .map(|i| format!("k{i}"))
        .find(|k| key_slot(k.as_bytes()) == 100)
        .unwrap_or_default();
    let down = [
        "SET foo bar",
        "CLUSTER DELSLOTS 100",
        "GET foo",
        "CONFIG SET cluster-allow-reads-when-down yes",
        "GET foo",
        "SET foo x",
        &format!("GET {in_100}"),
        "CONFIG SET cluster-allow-reads-when-down no",
        "CONFIG SET cluster-require-full-coverage no",
    ]
    .map(|cmd| {
        let args: Vec<&str> = cmd.split(' ').collect();
        s(&args)
    });
    assert_eq!(down[2], "-CLUSTERDOWN The cluster is down\r\n");
    assert_eq!(down[4], "$3\r\nbar\r\n");
    assert!(down[5].contains("only accepts read commands"), "{down:?}");
    assert!(wait_until(Duration::from_secs(10), || {
        ask(fk.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
            && ask(rd.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    }));
    for cmd in [
        "GET foo",
        &format!("GET {in_100}"),
        "CONFIG SET cluster-require-full-coverage yes",
        "CLUSTER ADDSLOTS 100",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        s(&args);
    }
    for cmd in [
        "CLUSTER INFO",
        "SET foo bar",
        "SET {foo}x 1",
        "MSET a 1 b 2",
        "MSET {a}1 1 {a}2 2",
        "MGET {a}1 {a}2",
        "CLUSTER COUNTKEYSINSLOT 15495",
        "CLUSTER GETKEYSINSLOT 15495 10",
        "CLUSTER GETKEYSINSLOT 15495 1",
        "CLUSTER GETKEYSINSLOT 12182 1",
        "EVAL return 1 2 a b",
        "EVAL return 1 2 {a}1 {a}2",
        "MULTI",
        "SET a 1",
        "SET b 1",
        "EXEC",
        "MULTI",
        "SET {a}1 x",
        "GET {a}2",
        "EXEC",
        "CLUSTER FLUSHSLOTS",
        "CLUSTER RESET",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        s(&args);
    }
    // A client blocked on a slot that stops being served is told.
    let q_slot = key_slot(b"{q}").to_string();
    let (mut bf, mut br) = (Raw::connect(fk.port), Raw::connect(rd.port));
    for b in [&mut bf, &mut br] {
        b.send(&encode(&[b"BLPOP", b"{q}", b"0"]));
    }
    assert!(wait_until(Duration::from_secs(5), || {
        [fk.port, rd.port]
            .iter()
            .all(|&p| ask(p, &["INFO", "clients"]).contains("blocked_clients:1"))
    }));
    s(&["CLUSTER", "DELSLOTS", &q_slot]);
    assert_eq!(text(&bf.read_reply()), text(&br.read_reply()));
    s(&["CLUSTER", "ADDSLOTS", &q_slot]);
    // Scripts touch only keys of this node, of one slot once flagged.
    for args in [
        &["EVAL", "return redis.call('get',KEYS[1])", "1", "foo"][..],
        &["EVAL", "return redis.call('set','{a}1','x')", "1", "foo"],
        &["EVAL", "return redis.call('mget','{a}1','{a}2')", "0"],
        &["EVAL", "return redis.call('mget','{a}1','b')", "0"],
        &[
            "EVAL",
            "#!lua\nreturn redis.call('set','{a}1','x')",
            "1",
            "foo",
        ],
        &[
            "EVAL",
            "#!lua flags=allow-cross-slot-keys\nreturn redis.call('set','{a}1','x')",
            "1",
            "foo",
        ],
        &[
            "EVAL",
            "#!lua\nreturn redis.call('get',KEYS[1])..redis.call('get','{a}1')",
            "1",
            "{a}2",
        ],
    ] {
        s(args);
    }
    // Functions are checked as scripts are.
    let lib = "#!lua name=lib\n\
        redis.register_function('get1', function(keys, args) return redis.call('get', keys[1]) end)\n\
        redis.register_function('other', function(keys, args) return redis.call('get', args[1]) end)\n\
        redis.register_function{function_name='nocluster', callback=function() return 1 end, flags={'no-cluster'}}";
    for args in [
        &["FUNCTION", "LOAD", lib][..],
        &["FCALL", "get1", "1", "foo"],
        &["FCALL", "get1", "2", "{a}1", "b"],
        &["FCALL", "other", "1", "{a}1", "{a}2"],
        &["FCALL", "other", "1", "{a}1", "b"],
        &["FCALL_RO", "get1", "2", "{a}1", "{a}2"],
        &["FCALL", "nocluster", "0"],
        &["EVAL", "#!lua flags=no-cluster\nreturn 1", "0"],
        &["EVAL", "#!lua flags=no-cluster,no-writes\nreturn 1", "0"],
        &["FUNCTION", "DELETE", "lib"],
    ] {
        s(args);
    }
    // Each node notifies of its own keys' events.
    s(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let events: Vec<Vec<String>> = [fk.port, rd.port]
        .iter()
        .map(|&p| {
            let (mut sub, mut main) = (Raw::connect(p), Raw::connect(p));
            keyevents_of(
                &mut sub,
                &mut main,
                &[
                    &["SET", "foo", "x"],
                    &["MSET", "a", "1", "b", "2"],
                    &["MSET", "{a}1", "1", "{a}2", "2"],
                    &["EXPIRE", "{a}1", "100"],
                    &["DEL", "foo", "{a}1"],
                    &["DEL", "{a}1", "{a}2"],
                ],
            )
        })
        .collect();
    assert_eq!(events[0], events[1]);
    assert!(events[0].contains(&"expire:{a}1".to_string()), "{events:?}");
    // Clients are told of hostnames when asked for.
    s(&["CONFIG", "SET", "cluster-announce-hostname", "host-x"]);
    s(&[
        "CONFIG",
        "SET",
        "cluster-preferred-endpoint-type",
        "hostname",
    ]);
    // Announced addresses take effect at once.
    for cmd in [
        "CLUSTER SLOTS",
        "CLUSTER SHARDS",
        "CLUSTER NODES",
        "CONFIG SET cluster-announce-port 1234",
        "CONFIG SET cluster-announce-bus-port 4321",
        "CONFIG SET cluster-announce-ip 10.1.2.3",
        "CLUSTER NODES",
        "CLUSTER SHARDS",
        "CONFIG SET cluster-preferred-endpoint-type ip",
        "CLUSTER SLOTS",
        "CONFIG SET cluster-announce-ip 10.1.2.3",
        "CONFIG SET cluster-announce-ip \"\"",
        "CONFIG SET cluster-announce-port 0",
        "CONFIG SET cluster-announce-bus-port 0",
        "CONFIG SET cluster-announce-hostname \"\"",
        "CLUSTER NODES",
        "CLUSTER SHARDS",
    ] {
        let args: Vec<&str> = cmd
            .split(' ')
            .map(|a| if a == "\"\"" { "" } else { a })
            .collect();
        s(&args);
    }
    for cmd in [
        "FLUSHALL",
        "CLUSTER RESET SOFT",
        "CLUSTER INFO",
        "INFO cluster",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        s(&args);
    }
}

/// Every node's CLUSTER NODES agrees on who serves what.
fn slots_agree(nodes: &[Node]) -> bool {
    let mut args = vec!["check".to_string()];
    args.push(format!("127.0.0.1:{}", nodes[0].port));
    let (_, out) = cluster_tool(&args);
    out.contains("[OK] All nodes agree about slots configuration")
        && out.contains("[OK] All 16384 slots covered")
}

/// The port of the master serving `slot`, from `via`'s CLUSTER NODES.
fn master_of(via: u16, slot: u16) -> u16 {
    let nodes = ask(via, &["CLUSTER", "NODES"]);
    for line in nodes.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() < 9 || !f[2].contains("master") || f[2].contains("fail") {
            continue;
        }
        for r in &f[8..] {
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            if let (Ok(a), Ok(b)) = (a.parse::<u16>(), b.parse::<u16>()) {
                if (a..=b).contains(&slot) {
                    let addr = f[1].split('@').next().unwrap_or("");
                    return addr
                        .rsplit(':')
                        .next()
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(0);
                }
            }
        }
    }
    0
}

/// Node `port`'s CLUSTER LINKS (in RESP3 if `resp3`): each link's
/// direction and peer id, and the set of entry shapes (ids and numbers
/// elided).
fn links_of(port: u16, resp3: bool) -> (Vec<(String, String)>, std::collections::BTreeSet<String>) {
    let mut c = Raw::connect(port);
    if resp3 {
        c.cmd_str(&["HELLO", "3"]);
    }
    let reply = text(&c.cmd_str(&["CLUSTER", "LINKS"]));
    let values: Vec<&str> = reply
        .split("\r\n")
        .filter(|l| !l.is_empty() && !l.starts_with(['*', '%', '$']))
        .collect();
    let mut pairs = Vec::new();
    let mut shapes = std::collections::BTreeSet::new();
    for e in values.chunks(12) {
        pairs.push((e[1].to_string(), e[3].to_string()));
        let shape: Vec<String> = e
            .iter()
            .map(|v| {
                if v.starts_with(':') {
                    ":<n>".to_string()
                } else if *v == "rw" {
                    // A link with output pending at that moment.
                    "r".to_string()
                } else {
                    normalized(v, &[])
                }
            })
            .collect();
        shapes.insert(shape.join(" "));
    }
    (pairs, shapes)
}

/// Every node has a link to and from every other (CLUSTER LINKS), and
/// every node, ferrokv or redis-server, describes its links alike.
fn links_agree(nodes: &[Node]) {
    let ids: Vec<String> = nodes
        .iter()
        .map(|n| {
            let r = ask(n.port, &["CLUSTER", "MYID"]);
            r.lines().nth(1).unwrap_or("").to_string()
        })
        .collect();
    for resp3 in [false, true] {
        let mut shapes = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            let mut expected: Vec<(String, String)> = ids
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .flat_map(|(_, id)| {
                    [
                        ("from".to_string(), id.clone()),
                        ("to".to_string(), id.clone()),
                    ]
                })
                .collect();
            expected.sort();
            let mut got = (Vec::new(), Default::default());
            let complete = wait_until(Duration::from_secs(10), || {
                got = links_of(n.port, resp3);
                got.0.sort();
                got.0 == expected
            });
            assert!(
                complete,
                "node {} ({:?}) links: {:?}",
                n.port, n.kind, got.0
            );
            shapes.push((n.kind, got.1));
        }
        assert!(!shapes[0].1.is_empty());
        for w in shapes.windows(2) {
            assert_eq!(w[0].1, w[1].1, "CLUSTER LINKS differs: {w:?}");
        }
    }
}

/// DEBUG CLUSTERLINK KILL as Redis's: the link to a node is closed and
/// the cron links again; a node it does not know gets Redis's error. On a
/// cluster of ferrokv and redis-server nodes.
#[test]
fn debug_clusterlink_kill_closes_links_that_come_back_as_redis() {
    let _one = one_at_a_time();
    let nodes = create_cluster(&[Kind::Ferrokv, Kind::Redis, Kind::Ferrokv], 0, 5000);
    links_agree(&nodes);
    let ids: Vec<String> = nodes.iter().map(|n| node_id(n.port)).collect();
    let unknown = "0".repeat(40);
    let mut errors = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let other = ids[(i + 1) % ids.len()].as_str();
        // One direction at a time: redis-server crashes when told to kill
        // a link that is already gone.
        let reply = ask(n.port, &["DEBUG", "CLUSTERLINK", "KILL", "to", other]);
        assert_eq!(reply, "+OK\r\n", "{:?}", n.kind);
        errors.push(ask(
            n.port,
            &["DEBUG", "CLUSTERLINK", "KILL", "to", &unknown],
        ));
    }
    assert!(errors.iter().all(|e| *e == errors[1]), "{errors:?}");
    assert!(errors[1].starts_with("-ERR Unknown node"), "{errors:?}");
    links_agree(&nodes);
}

/// Builds a 3-master, 3-replica cluster of `kinds`, writes through
/// redirections with a WAIT after each batch, kills the master of a slot
/// and checks its replica takes over within three node timeouts with
/// every WAITed write.
fn fail_over_a_master(kinds: &[Kind]) {
    const TIMEOUT: u64 = 1000;
    let mut nodes = create_cluster(kinds, 1, TIMEOUT);
    assert!(
        wait_until(Duration::from_secs(20), || slots_agree(&nodes)),
        "the nodes do not agree"
    );
    links_agree(&nodes);
    let mut client = ClusterClient::new(nodes[0].port);
    for i in 0..300 {
        let k = format!("key:{i}");
        assert_eq!(client.cmd(&["SET", &k, &i.to_string()]), "+OK\r\n");
    }
    // Every master's replica has the writes (WAIT 1).
    for n in &nodes {
        if ask(n.port, &["ROLE"]).contains("master") {
            assert!(wait_until(Duration::from_secs(20), || ask(
                n.port,
                &["WAIT", "1", "100"]
            ) == ":1\r\n"));
        }
    }
    let slot = key_slot(b"key:0");
    let victim = master_of(nodes[0].port, slot);
    // Its replica redirects reads, but serves them after READONLY.
    let replica = nodes
        .iter()
        .map(|n| n.port)
        .find(|&p| {
            let role = ask(p, &["ROLE"]);
            role.contains("slave") && role.contains(&format!(":{victim}\r\n"))
        })
        .expect("the victim's replica");
    let mut r = Raw::connect(replica);
    assert!(text(&r.cmd_str(&["GET", "key:0"]))
        .starts_with(&format!("-MOVED {slot} 127.0.0.1:{victim}")));
    assert_eq!(r.cmd_str(&["READONLY"]), b"+OK\r\n");
    assert_eq!(r.cmd_str(&["GET", "key:0"]), b"$1\r\n0\r\n");
    assert!(text(&r.cmd_str(&["SET", "key:0", "x"])).starts_with("-MOVED"));
    assert_eq!(r.cmd_str(&["READWRITE"]), b"+OK\r\n");
    assert!(text(&r.cmd_str(&["GET", "key:0"])).starts_with("-MOVED"));
    let observer = nodes
        .iter()
        .find(|n| n.port != victim)
        .map(|n| n.port)
        .expect("another node");
    let i = nodes
        .iter()
        .position(|n| n.port == victim)
        .expect("the victim");
    let killed = Instant::now();
    nodes[i].kill();
    assert!(
        wait_until(Duration::from_secs(3 * TIMEOUT / 1000 + 10), || {
            let m = master_of(observer, slot);
            m != 0 && m != victim
        }),
        "no replica took over"
    );
    let took = killed.elapsed();
    assert!(
        took <= Duration::from_millis(3 * TIMEOUT + 1500),
        "failover took {took:?}"
    );
    nodes.remove(i);
    assert!(wait_until(Duration::from_secs(20), || {
        ask(observer, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    }));
    let mut client = ClusterClient::new(observer);
    for i in 0..300 {
        let k = format!("key:{i}");
        assert_eq!(
            client.cmd(&["GET", &k]),
            format!("${}\r\n{i}\r\n", i.to_string().len())
        );
    }
}

#[test]
fn ferrokv_cluster_created_by_redis_cli_fails_over() {
    let _serial = one_at_a_time();
    fail_over_a_master(&[Kind::Ferrokv; 6]);
}

#[test]
fn mixed_cluster_fails_over() {
    let _serial = one_at_a_time();
    use Kind::{Ferrokv as F, Redis as R};
    fail_over_a_master(&[F, R, F, R, F, R]);
}

/// Reshards slots from each master to the next under a write load and
/// checks no key was lost.
#[test]
fn reshard_between_ferrokv_and_redis_under_load_loses_nothing() {
    let _serial = one_at_a_time();
    use Kind::{Ferrokv as F, Redis as R};
    let nodes = create_cluster(&[F, R, F], 0, 5000);
    let ids: Vec<String> = nodes
        .iter()
        .map(|n| text(&Raw::connect(n.port).cmd_str(&["CLUSTER", "MYID"])))
        .map(|r| r.lines().nth(1).unwrap_or_default().to_string())
        .collect();
    let seed = nodes[0].port;
    let mut client = ClusterClient::new(seed);
    for i in 0..500 {
        client.cmd(&["SET", &format!("k{i}"), &format!("v{i}")]);
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut client = ClusterClient::new(seed);
            let mut i = 500;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                assert_eq!(
                    client.cmd(&["SET", &format!("k{i}"), &format!("v{i}")]),
                    "+OK\r\n"
                );
                i += 1;
            }
            i
        })
    };
    for (from, to) in [(0, 1), (1, 2), (2, 0)] {
        let (ok, out) = cluster_tool(&[
            "reshard".into(),
            format!("127.0.0.1:{seed}"),
            "--cluster-from".into(),
            ids[from].clone(),
            "--cluster-to".into(),
            ids[to].clone(),
            "--cluster-slots".into(),
            "300".into(),
        ]);
        assert!(ok, "{out}");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let written = writer.join().expect("the writer");
    assert!(wait_until(Duration::from_secs(20), || slots_agree(&nodes)));
    let mut client = ClusterClient::new(seed);
    for i in 0..written {
        let v = format!("v{i}");
        assert_eq!(
            client.cmd(&["GET", &format!("k{i}")]),
            format!("${}\r\n{v}\r\n", v.len()),
            "k{i} lost"
        );
    }
    let total: usize = nodes
        .iter()
        .map(|n| {
            ask(n.port, &["DBSIZE"])
                .trim_start_matches(':')
                .trim()
                .parse::<usize>()
                .unwrap_or(0)
        })
        .sum();
    assert_eq!(total, written);
}

/// A slot half migrated from a source to a target: the source answers
/// -ASK for missing keys and -TRYAGAIN for multi-key commands with some
/// missing; the target serves it only after ASKING. ferrokv as source with
/// redis-server as target, and the other way round, answer alike.
/// `redis-cli --cluster fix` closes a half-done migration and covers
/// unassigned slots, with keys and without, on ferrokv and redis-server
/// nodes.
#[test]
fn cluster_fix_repairs_open_and_uncovered_slots() {
    let _serial = one_at_a_time();
    use Kind::{Ferrokv as F, Redis as R};
    let nodes = create_cluster(&[F, R, F], 0, 5000);
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let id = |p: u16| {
        let r = ask(p, &["CLUSTER", "MYID"]);
        r.lines().nth(1).unwrap_or_default().to_string()
    };
    let mut client = ClusterClient::new(ports[0]);
    let keys: Vec<String> = (0..100)
        .flat_map(|i| [format!("{{a}}{i}"), format!("{{b}}{i}")])
        .collect();
    for k in &keys {
        assert_eq!(client.cmd(&["SET", k, k]), "+OK\r\n");
    }
    // Slot {a} half moved from a ferrokv node to redis-server.
    let a = key_slot(b"{a}").to_string();
    let (from, to) = (master_of(ports[0], 15495), ports[1]);
    assert_eq!(a, "15495");
    assert_eq!(
        ask(to, &["CLUSTER", "SETSLOT", &a, "IMPORTING", &id(from)]),
        "+OK\r\n"
    );
    assert_eq!(
        ask(from, &["CLUSTER", "SETSLOT", &a, "MIGRATING", &id(to)]),
        "+OK\r\n"
    );
    let some: Vec<String> = (0..40).map(|i| format!("{{a}}{i}")).collect();
    let to_port = to.to_string();
    let mut migrate = vec!["MIGRATE", "127.0.0.1", &to_port, "", "0", "5000", "KEYS"];
    migrate.extend(some.iter().map(String::as_str));
    assert_eq!(ask(from, &migrate), "+OK\r\n");
    let fix = |input: &[u8]| {
        let out = output_with_input(
            Command::new("redis-cli").args([
                "--cluster",
                "fix",
                &format!("127.0.0.1:{}", ports[2]),
            ]),
            input,
        );
        assert!(
            wait_until(Duration::from_secs(20), || slots_agree(&nodes)),
            "the nodes do not agree after the fix: {out}"
        );
        out
    };
    let out = fix(b"");
    assert!(out.contains("Fixing open slot 15495"), "{out}");
    // Slot {b}, with keys, and an empty slot of redis-server's unassigned
    // (the cluster is down meanwhile, so the open slot was fixed first).
    let b = key_slot(b"{b}").to_string();
    assert_eq!(
        ask(master_of(ports[0], 3300), &["CLUSTER", "DELSLOTS", &b]),
        "+OK\r\n"
    );
    assert_eq!(ask(ports[1], &["CLUSTER", "DELSLOTS", "6000"]), "+OK\r\n");
    let out = fix(b"yes\nyes\n");
    assert!(out.contains("Covering slot 3300"), "{out}");
    assert!(out.contains("Covering slot 6000"), "{out}");
    let (ok, out) = cluster_tool(&["check".into(), format!("127.0.0.1:{}", ports[0])]);
    assert!(ok && !out.contains("[WARNING]"), "{out}");
    let mut client = ClusterClient::new(ports[1]);
    for k in &keys {
        assert_eq!(client.cmd(&["GET", k]), format!("${}\r\n{k}\r\n", k.len()));
    }
    let owner = master_of(ports[0], 15495);
    assert_eq!(ask(owner, &["CLUSTER", "COUNTKEYSINSLOT", &a]), ":100\r\n");
}

#[test]
fn ask_and_tryagain_during_migration_match_redis() {
    let _serial = one_at_a_time();
    use Kind::{Ferrokv as F, Redis as R};
    let mut transcripts = Vec::new();
    for kinds in [[F, R, F], [R, F, R]] {
        let nodes = create_cluster(&kinds, 0, 5000);
        let (src, dst) = (nodes[0].port, nodes[1].port);
        let (src_id, dst_id) = (node_id(src), node_id(dst));
        // Keys of slot 2 ({b}...): the source serves it.
        let slot = key_slot(b"{b}");
        assert_eq!(master_of(src, slot), src, "{kinds:?}");
        let (mut s, mut d) = (Raw::connect(src), Raw::connect(dst));
        let slot_s = slot.to_string();
        assert_eq!(s.cmd_str(&["SET", "{b}1", "one"]), b"+OK\r\n");
        assert_eq!(s.cmd_str(&["SET", "{b}2", "two"]), b"+OK\r\n");
        let mut t = Vec::new();
        let mut run = |c: &mut Raw, args: &[&str]| {
            t.push(normalized(&text(&c.cmd_str(args)), &[src, dst]));
        };
        run(
            &mut d,
            &["CLUSTER", "SETSLOT", &slot_s, "IMPORTING", &src_id],
        );
        run(
            &mut s,
            &["CLUSTER", "SETSLOT", &slot_s, "MIGRATING", &dst_id],
        );
        run(
            &mut s,
            &[
                "MIGRATE",
                "127.0.0.1",
                &dst.to_string(),
                "{b}1",
                "0",
                "5000",
            ],
        );
        run(&mut s, &["GET", "{b}1"]);
        run(&mut s, &["GET", "{b}2"]);
        run(&mut s, &["MGET", "{b}1", "{b}2"]);
        run(&mut s, &["SET", "{b}3", "new"]);
        run(&mut d, &["GET", "{b}1"]);
        run(&mut d, &["ASKING"]);
        run(&mut d, &["GET", "{b}1"]);
        run(&mut d, &["GET", "{b}1"]);
        run(&mut d, &["ASKING"]);
        run(&mut d, &["MGET", "{b}1", "{b}2"]);
        run(&mut d, &["CLUSTER", "COUNTKEYSINSLOT", &slot_s]);
        run(
            &mut s,
            &[
                "MIGRATE",
                "127.0.0.1",
                &dst.to_string(),
                "",
                "0",
                "5000",
                "KEYS",
                "{b}2",
                "{b}9",
            ],
        );
        run(
            &mut s,
            &[
                "MIGRATE",
                "127.0.0.1",
                &dst.to_string(),
                "{b}9",
                "0",
                "5000",
            ],
        );
        run(&mut d, &["CLUSTER", "SETSLOT", &slot_s, "NODE", &dst_id]);
        run(&mut s, &["CLUSTER", "SETSLOT", &slot_s, "NODE", &dst_id]);
        run(&mut s, &["GET", "{b}1"]);
        run(&mut d, &["GET", "{b}2"]);
        transcripts.push((kinds, t));
    }
    let (a, b) = (&transcripts[0], &transcripts[1]);
    for (i, (x, y)) in a.1.iter().zip(&b.1).enumerate() {
        assert_eq!(x, y, "step {i} differs between {:?} and {:?}", a.0, b.0);
    }
}

/// nodes.conf keeps a node's name, slots, epochs and peers across a
/// restart, in the file format redis-server reads.
#[test]
fn nodes_conf_survives_a_restart() {
    let _serial = one_at_a_time();
    let mut n = start_node(Kind::Ferrokv, 5000);
    let p = n.port;
    assert_eq!(
        ask(p, &["CLUSTER", "ADDSLOTSRANGE", "0", "100", "200", "300"]),
        "+OK\r\n"
    );
    assert_eq!(ask(p, &["CLUSTER", "SET-CONFIG-EPOCH", "7"]), "+OK\r\n");
    assert_eq!(
        ask(
            p,
            &[
                "CLUSTER",
                "SETSLOT",
                "5",
                "MIGRATING",
                "0123456789012345678901234567890123456789"
            ]
        )
        .starts_with("-ERR I don't know"),
        true
    );
    let before = ask(p, &["CLUSTER", "NODES"]);
    let info = ask(p, &["CLUSTER", "INFO"]);
    n.restart(5000);
    assert_eq!(ask(p, &["CLUSTER", "NODES"]), before);
    let after = ask(p, &["CLUSTER", "INFO"]);
    for field in [
        "cluster_slots_assigned:202",
        "cluster_current_epoch:7",
        "cluster_my_epoch:7",
    ] {
        assert!(
            info.contains(field) && after.contains(field),
            "{field}: {after}"
        );
    }
    // redis-server reads the file ferrokv wrote.
    let conf = n._dir.join("nodes.conf");
    let text = std::fs::read_to_string(&conf).expect("nodes.conf");
    assert!(
        text.ends_with("vars currentEpoch 7 lastVoteEpoch 0\n"),
        "{text}"
    );
    let dir = unique_temp_path("cluster-redis-reads");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("nodes.conf"), &text).expect("copy nodes.conf");
    n.kill();
    let r = spawn_node(Kind::Redis, 5000, p, &dir).expect("redis-server starts on the file");
    assert_eq!(ask(r.port, &["CLUSTER", "NODES"]), before);
}

/// Whether every node's CLUSTER NODES lists the same node ids.
fn all_know_each_other(nodes: &[Node]) -> bool {
    let known: Vec<std::collections::BTreeSet<String>> = nodes
        .iter()
        .map(|n| {
            ask(n.port, &["CLUSTER", "NODES"])
                .lines()
                .filter_map(|l| l.split(' ').next())
                .map(|id| id.trim_start_matches('$').to_string())
                .filter(|id| id.len() == 40)
                .collect()
        })
        .collect();
    known.windows(2).all(|w| w[0] == w[1])
}

/// `redis-cli --cluster add-node` (a master and a replica), `rebalance`
/// onto the new master, a manual CLUSTER FAILOVER of the replica, and
/// `del-node` of the demoted master, on a ferrokv cluster with a
/// redis-server replica; no key lost.
#[test]
fn add_rebalance_manual_failover_and_del_node() {
    let _serial = one_at_a_time();
    use Kind::{Ferrokv as F, Redis as R};
    let mut nodes = create_cluster(&[F, F, F], 0, 5000);
    let seed = nodes[0].port;
    let mut client = ClusterClient::new(seed);
    for i in 0..200 {
        assert_eq!(
            client.cmd(&["SET", &format!("k{i}"), &i.to_string()]),
            "+OK\r\n"
        );
    }
    let (extra, replica) = (start_node(F, 5000), start_node(R, 5000));
    let at = |p: u16| format!("127.0.0.1:{p}");
    let (ok, out) = cluster_tool(&["add-node".into(), at(extra.port), at(seed)]);
    assert!(ok, "{out}");
    nodes.push(extra);
    // redis-cli refuses the next add-node ("Nodes don't agree about
    // configuration!") until gossip has told every node of the new one.
    assert!(wait_until(Duration::from_secs(20), || all_know_each_other(
        &nodes
    )));
    // Knowing the node is not yet agreeing on it (its epoch, its flags):
    // add-node checks the whole configuration first.
    assert!(wait_until(Duration::from_secs(20), || cluster_tool(&[
        "check".into(),
        at(seed)
    ])
    .0));
    let (ok, out) = cluster_tool(&[
        "add-node".into(),
        at(replica.port),
        at(seed),
        "--cluster-slave".into(),
        "--cluster-master-id".into(),
        ask(seed, &["CLUSTER", "MYID"])
            .lines()
            .nth(1)
            .unwrap_or_default()
            .to_string(),
    ]);
    assert!(ok, "{out}");
    assert!(wait_until(Duration::from_secs(20), || slots_agree(&nodes)));
    // Every node knows every other (gossip spreads the added nodes), or
    // rebalance's moves meet "Unknown node".
    assert!(wait_until(Duration::from_secs(20), || all_know_each_other(
        &nodes
    )));
    // A new master serves nothing for two seconds after it starts.
    assert!(wait_until(Duration::from_secs(20), || nodes.iter().all(
        |n| { ask(n.port, &["CLUSTER", "INFO"]).contains("cluster_state:ok") }
    )));
    let (ok, out) = cluster_tool(&[
        "rebalance".into(),
        at(seed),
        "--cluster-use-empty-masters".into(),
    ]);
    assert!(ok, "{out}");
    assert!(wait_until(Duration::from_secs(20), || slots_agree(&nodes)));
    let new_master = nodes.last().map(|n| n.port).unwrap_or(0);
    assert!(ask(new_master, &["CLUSTER", "INFO"]).contains("cluster_state:ok"));
    assert!(
        !ask(new_master, &["DBSIZE"]).starts_with(":0"),
        "rebalance moved no key"
    );
    // The replica (redis-server) of the seed takes over on request.
    assert!(wait_until(Duration::from_secs(20), || {
        ask(replica.port, &["INFO", "replication"]).contains("master_link_status:up")
    }));
    assert_eq!(ask(replica.port, &["CLUSTER", "FAILOVER"]), "+OK\r\n");
    assert!(wait_until(Duration::from_secs(20), || {
        ask(replica.port, &["ROLE"]).contains("master") && ask(seed, &["ROLE"]).contains("slave")
    }));
    // Every node learns of the switch before the demoted ferrokv node
    // leaves the cluster.
    let promoted_id = ask(replica.port, &["CLUSTER", "MYID"])
        .lines()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    assert!(wait_until(Duration::from_secs(20), || {
        nodes.iter().all(|n| {
            ask(n.port, &["CLUSTER", "NODES"])
                .lines()
                .any(|l| l.starts_with(&promoted_id) && l.contains("master"))
        })
    }));
    let old_id = ask(seed, &["CLUSTER", "MYID"])
        .lines()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let (ok, out) = cluster_tool(&["del-node".into(), at(new_master), old_id.clone()]);
    assert!(ok, "{out}");
    assert!(!ask(new_master, &["CLUSTER", "NODES"]).contains(&old_id));
    let mut client = ClusterClient::new(new_master);
    for i in 0..200 {
        let v = i.to_string();
        assert_eq!(
            client.cmd(&["GET", &format!("k{i}")]),
            format!("${}\r\n{v}\r\n", v.len())
        );
    }
}

/// Replica migration: when a master loses its only replica, a replica of
/// the master with the most replicas moves to it (after five seconds).
#[test]
fn a_replica_migrates_to_an_orphaned_master() {
    let _serial = one_at_a_time();
    const TIMEOUT: u64 = 1000;
    let mut nodes = create_cluster(&[Kind::Ferrokv; 6], 1, TIMEOUT);
    let seed = nodes[0].port;
    let id_of = |p: u16| {
        ask(p, &["CLUSTER", "MYID"])
            .lines()
            .nth(1)
            .unwrap_or_default()
            .to_string()
    };
    // A seventh node: a second replica of the first master.
    let extra = start_node(Kind::Ferrokv, TIMEOUT);
    let (ok, out) = cluster_tool(&[
        "add-node".into(),
        format!("127.0.0.1:{}", extra.port),
        format!("127.0.0.1:{seed}"),
        "--cluster-slave".into(),
        "--cluster-master-id".into(),
        id_of(seed),
    ]);
    assert!(ok, "{out}");
    assert!(
        wait_until(Duration::from_secs(10), || ask(extra.port, &["ROLE"])
            .contains("slave")),
        "{out}\n{}",
        ask(extra.port, &["CLUSTER", "NODES"])
    );
    nodes.push(extra);
    // The replica of another master goes away.
    let other = master_of(seed, 16383);
    let other_id = id_of(other);
    let orphaned_replica = nodes
        .iter()
        .position(|n| {
            let role = ask(n.port, &["ROLE"]);
            role.contains("slave") && role.contains(&format!(":{other}\r\n"))
        })
        .expect("a replica of the other master");
    assert!(wait_until(Duration::from_secs(20), || {
        ask(nodes[orphaned_replica].port, &["INFO", "replication"])
            .contains("master_link_status:up")
    }));
    let gone = id_of(nodes[orphaned_replica].port);
    nodes[orphaned_replica].kill();
    // One of the first master's two replicas now replicates the other.
    assert!(
        wait_until(Duration::from_secs(30), || {
            let n = ask(seed, &["CLUSTER", "REPLICAS", &other_id]);
            n.lines()
                .any(|l| l.contains("slave") && !l.contains("fail") && !l.contains(&gone))
        }),
        "no replica migrated: {}",
        ask(seed, &["CLUSTER", "NODES"])
    );
}

/// A shard channel's subscribers on the node that gives its slot away are
/// told `sunsubscribe` (Redis's removeChannelsInSlot), as the legacy
/// cluster suite's 25-pubsubshard-slot-migration checks; a ferrokv source
/// and a redis-server source send the same message.
#[test]
fn shard_subscribers_are_unsubscribed_when_their_slot_moves() {
    let _serial = one_at_a_time();
    use Kind::{Ferrokv as F, Redis as R};
    for kinds in [[F, R, F], [R, F, R]] {
        let nodes = create_cluster(&kinds, 0, 5000);
        let slot = key_slot(b"mychannel");
        let src = master_of(nodes[0].port, slot);
        let dst = nodes
            .iter()
            .map(|n| n.port)
            .find(|&p| p != src)
            .expect("another node");
        let (src_id, dst_id) = (node_id(src), node_id(dst));
        let mut sub = Raw::connect(src);
        assert!(text(&sub.cmd_str(&["SSUBSCRIBE", "mychannel"])).contains("ssubscribe"));
        let (mut s, mut d) = (Raw::connect(src), Raw::connect(dst));
        let slot_s = slot.to_string();
        let ok = b"+OK\r\n".to_vec();
        assert_eq!(
            s.cmd_str(&["CLUSTER", "SETSLOT", &slot_s, "MIGRATING", &dst_id]),
            ok
        );
        assert_eq!(
            d.cmd_str(&["CLUSTER", "SETSLOT", &slot_s, "IMPORTING", &src_id]),
            ok
        );
        assert_eq!(s.cmd_str(&["SPUBLISH", "mychannel", "hello"]), b":1\r\n");
        assert_eq!(
            sub.read_reply(),
            b"*3\r\n$8\r\nsmessage\r\n$9\r\nmychannel\r\n$5\r\nhello\r\n",
            "{kinds:?}"
        );
        assert_eq!(
            s.cmd_str(&["CLUSTER", "SETSLOT", &slot_s, "NODE", &dst_id]),
            ok
        );
        assert_eq!(
            sub.read_reply(),
            b"*3\r\n$12\r\nsunsubscribe\r\n$9\r\nmychannel\r\n:0\r\n",
            "{kinds:?}"
        );
        assert_eq!(
            d.cmd_str(&["CLUSTER", "SETSLOT", &slot_s, "NODE", &dst_id]),
            ok
        );
        assert_eq!(sub.cmd_str(&["PING"]), b"+PONG\r\n");
    }
}
