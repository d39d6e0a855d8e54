//! `io-threads`: many clients at once against a server with I/O threads,
//! every reply checked against a model of what each client did, and the
//! directives as Redis has them.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::time::Duration;

use crate::support::{encode, server_command, spawn_on_free_port, wait_until, ChildGuard, Raw};

/// A small deterministic generator (xorshift64*), one per client.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A value: mostly a few bytes, sometimes large enough to be read
    /// apart and written in many pieces.
    fn value(&mut self) -> Vec<u8> {
        let len = match self.below(20) {
            0 => 40_000 + self.below(80_000),
            1..=3 => 100 + self.below(2_000),
            _ => 1 + self.below(24),
        } as usize;
        let seed = self.next() as u8;
        (0..len)
            .map(|i| b'a' + (seed.wrapping_add(i as u8) % 26))
            .collect()
    }
}

fn bulk(v: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", v.len()).into_bytes();
    out.extend_from_slice(v);
    out.extend_from_slice(b"\r\n");
    out
}

fn int(n: usize) -> Vec<u8> {
    format!(":{n}\r\n").into_bytes()
}

/// One client's keys as the server must hold them.
#[derive(Default)]
struct Model {
    strings: HashMap<String, Vec<u8>>,
    lists: HashMap<String, VecDeque<Vec<u8>>>,
    counter: usize,
}

impl Model {
    /// A random command on keys of client `me`, and the reply the model
    /// says it gets (applied to the model).
    fn command(&mut self, me: usize, rng: &mut Rng) -> (Vec<Vec<u8>>, Vec<u8>) {
        let s = format!("c{me}:s{}", rng.below(6));
        let l = format!("c{me}:l{}", rng.below(4));
        let args = |v: &[&[u8]]| v.iter().map(|a| a.to_vec()).collect::<Vec<_>>();
        match rng.below(8) {
            0 => {
                let v = rng.value();
                let a = args(&[b"SET", s.as_bytes(), &v]);
                self.strings.insert(s, v);
                (a, b"+OK\r\n".to_vec())
            }
            1 => {
                let reply = self
                    .strings
                    .get(&s)
                    .map_or(b"$-1\r\n".to_vec(), |v| bulk(v));
                (args(&[b"GET", s.as_bytes()]), reply)
            }
            2 => {
                let v = rng.value();
                let a = args(&[b"APPEND", s.as_bytes(), &v]);
                let cur = self.strings.entry(s).or_default();
                cur.extend_from_slice(&v);
                (a, int(cur.len()))
            }
            3 => {
                self.counter += 1;
                let key = format!("c{me}:n");
                (args(&[b"INCR", key.as_bytes()]), int(self.counter))
            }
            4 => {
                let v = rng.value();
                let a = args(&[b"RPUSH", l.as_bytes(), &v]);
                let list = self.lists.entry(l).or_default();
                list.push_back(v);
                (a, int(list.len()))
            }
            5 => {
                let a = args(&[b"LPOP", l.as_bytes()]);
                let popped = self.lists.get_mut(&l).and_then(VecDeque::pop_front);
                if self.lists.get(&l).is_some_and(VecDeque::is_empty) {
                    self.lists.remove(&l);
                }
                (a, popped.map_or(b"$-1\r\n".to_vec(), |v| bulk(&v)))
            }
            6 => {
                let a = args(&[b"LRANGE", l.as_bytes(), b"0", b"-1"]);
                (a, self.list_reply(&l))
            }
            _ => {
                let a = args(&[b"DEL", s.as_bytes()]);
                (a, int(usize::from(self.strings.remove(&s).is_some())))
            }
        }
    }

    fn list_reply(&self, key: &str) -> Vec<u8> {
        let list = self.lists.get(key);
        let mut out = format!("*{}\r\n", list.map_or(0, VecDeque::len)).into_bytes();
        for v in list.into_iter().flatten() {
            out.extend_from_slice(&bulk(v));
        }
        out
    }
}

fn encode_owned(args: &[Vec<u8>]) -> Vec<u8> {
    let a: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    encode(&a)
}

fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.len() > 200 {
        format!("{}… ({} bytes)", &s[..200], b.len())
    } else {
        s.into_owned()
    }
}

/// One client's run: pipelines, MULTI/EXEC, a blocking pop served by a
/// push from its main connection, pub/sub, and connections that drop in
/// the middle of a command. Returns its model for the final check.
fn client_run(port: u16, me: usize, steps: usize) -> Model {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (me as u64 + 1).wrapping_mul(0x1000_0001));
    let mut model = Model::default();
    let mut main = Raw::connect(port);
    let mut blk = Raw::connect(port);
    let mut sub = Raw::connect(port);
    let channel = format!("c{me}:ch");
    assert_eq!(
        sub.cmd_str(&["SUBSCRIBE", &channel]),
        format!(
            "*3\r\n$9\r\nsubscribe\r\n${}\r\n{channel}\r\n:1\r\n",
            channel.len()
        )
        .into_bytes()
    );
    let mut dropped = 0usize;
    for step in 0..steps {
        match rng.below(10) {
            0..=4 => {
                let n = 1 + rng.below(32) as usize;
                let mut bytes = Vec::new();
                let mut want = Vec::new();
                for _ in 0..n {
                    let (args, reply) = model.command(me, &mut rng);
                    bytes.extend_from_slice(&encode_owned(&args));
                    want.push((args, reply));
                }
                main.send(&bytes);
                for (args, reply) in want {
                    let got = main.read_reply();
                    assert_eq!(
                        show(&got),
                        show(&reply),
                        "client {me} step {step}: {}",
                        show(&args[0])
                    );
                }
            }
            5 | 6 => {
                let n = 1 + rng.below(5) as usize;
                let mut bytes = encode(&[b"MULTI"]);
                let mut replies = Vec::new();
                for _ in 0..n {
                    let (args, reply) = model.command(me, &mut rng);
                    bytes.extend_from_slice(&encode_owned(&args));
                    replies.push(reply);
                }
                bytes.extend_from_slice(&encode(&[b"EXEC"]));
                main.send(&bytes);
                assert_eq!(main.read_reply(), b"+OK\r\n");
                for _ in 0..n {
                    assert_eq!(main.read_reply(), b"+QUEUED\r\n", "client {me} step {step}");
                }
                let mut want = format!("*{n}\r\n").into_bytes();
                for r in replies {
                    want.extend_from_slice(&r);
                }
                assert_eq!(
                    show(&main.read_reply()),
                    show(&want),
                    "client {me} step {step}"
                );
            }
            7 => {
                let key = format!("c{me}:b");
                let v = rng.value();
                blk.send(&encode(&[b"BLPOP", key.as_bytes(), b"10"]));
                assert_eq!(main.cmd(&[b"RPUSH", key.as_bytes(), &v]), b":1\r\n");
                let mut want = b"*2\r\n".to_vec();
                want.extend_from_slice(&bulk(key.as_bytes()));
                want.extend_from_slice(&bulk(&v));
                assert_eq!(
                    show(&blk.read_reply()),
                    show(&want),
                    "client {me} step {step}"
                );
            }
            8 => {
                let msg = rng.value();
                assert_eq!(main.cmd(&[b"PUBLISH", channel.as_bytes(), &msg]), b":1\r\n");
                let mut want = b"*3\r\n$7\r\nmessage\r\n".to_vec();
                want.extend_from_slice(&bulk(channel.as_bytes()));
                want.extend_from_slice(&bulk(&msg));
                assert_eq!(
                    show(&sub.read_reply()),
                    show(&want),
                    "client {me} step {step}"
                );
            }
            _ => {
                // A whole INCR, then a SET cut short: the INCR counts, the
                // SET never happens, whatever the server had read.
                let mut gone = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
                let key = format!("c{me}:dropped");
                let mut bytes = encode(&[b"INCR", key.as_bytes()]);
                let cut = encode(&[b"SET", format!("c{me}:never").as_bytes(), &rng.value()]);
                let at = 1 + rng.below(cut.len() as u64 - 1) as usize;
                bytes.extend_from_slice(&cut[..at]);
                let _ = gone.write_all(&bytes);
                dropped += 1;
            }
        }
    }
    let key = format!("c{me}:dropped");
    assert!(
        wait_until(Duration::from_secs(10), || {
            let got = main.cmd(&[b"GET", key.as_bytes()]);
            got == if dropped == 0 {
                b"$-1\r\n".to_vec()
            } else {
                bulk(dropped.to_string().as_bytes())
            }
        }),
        "client {me}: the dropped connections' INCRs"
    );
    assert_eq!(
        main.cmd_str(&["EXISTS", &format!("c{me}:never")]),
        b":0\r\n"
    );
    model
}

/// ferrokv as a process of its own with `io-threads 4`, told to use the
/// threads whenever there is work for them (without, they would serve
/// only where they pay off); its guard and port.
fn spawn_threaded() -> (ChildGuard, u16) {
    let (child, port) = spawn_on_free_port(|port| {
        let mut cmd = server_command(env!("CARGO_BIN_EXE_ferrokv"), port);
        cmd.args(["--io-threads", "4", "--io-threads-do-reads", "yes"])
            .env("FERROKV_IO_THREADS_ALWAYS", "1");
        cmd
    });
    (ChildGuard(child), port)
}

#[test]
fn many_clients_with_io_threads_get_the_replies_a_model_predicts() {
    let (_server, port) = spawn_threaded();
    let clients = 24;
    let models: Vec<(usize, Model)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|me| s.spawn(move || (me, client_run(port, me, 150))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a client thread"))
            .collect()
    });
    // The whole keyspace is what the models hold, nothing more.
    let mut check = Raw::connect(port);
    let mut keys = 0;
    for (me, model) in &models {
        for (k, v) in &model.strings {
            assert_eq!(
                show(&check.cmd_str(&["GET", k])),
                show(&bulk(v)),
                "client {me}"
            );
        }
        for k in model.lists.keys() {
            assert_eq!(
                show(&check.cmd_str(&["LRANGE", k, "0", "-1"])),
                show(&model.list_reply(k))
            );
        }
        keys += model.strings.len() + model.lists.len();
        keys += usize::from(model.counter > 0);
        let dropped = check.cmd_str(&["EXISTS", &format!("c{me}:dropped")]);
        keys += usize::from(dropped == b":1\r\n");
    }
    assert_eq!(check.cmd_str(&["DBSIZE"]), int(keys));
    let info = String::from_utf8(check.cmd_str(&["INFO", "stats"])).expect("text");
    let stat = |name: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in INFO"))
    };
    assert!(stat("io_threaded_reads_processed") > 0, "{info}");
    assert!(stat("io_threaded_writes_processed") > 0, "{info}");
    assert!(stat("total_reads_processed") >= stat("io_threaded_reads_processed"));
}

/// io-threads and io-threads-do-reads are immutable, as in Redis; INFO
/// names the threads' counters as Redis does.
#[test]
fn io_threads_directives_are_immutable_and_reported_like_redis() {
    let mut pair = crate::support::Pair::new();
    for args in [
        &["CONFIG", "SET", "io-threads", "4"][..],
        &["CONFIG", "SET", "io-threads-do-reads", "yes"],
        &["CONFIG", "GET", "io-threads"],
        &["CONFIG", "GET", "io-threads-do-reads"],
    ] {
        pair.same(args);
    }
    for section in ["server", "stats"] {
        let (ours, theirs) = pair.both(&["INFO", section]);
        let names = |b: &[u8]| -> Vec<String> {
            String::from_utf8_lossy(b)
                .lines()
                .filter(|l| l.contains("io_thread") || l.contains("_processed"))
                .map(|l| l.split(':').next().unwrap_or("").to_string())
                .collect()
        };
        assert_eq!(names(&ours), names(&theirs), "INFO {section}");
    }
}

/// Redis's "client tracking don't cause eviction feedback loop" with the
/// I/O threads writing: ten tracking clients, 300 keys of 1000-byte names,
/// a limit 40 KB under what is used. The invalidations the evictions send
/// are handed to the threads; a command that came in before they were
/// written counted them against maxmemory and evicted more, whose
/// invalidations counted again, down to an empty keyspace (the suite's
/// maxmemory unit with `io-threads 4`, under load). Eviction now waits for
/// the threads' writes first, as Redis's threaded writes end before the
/// next command runs. Busy threads in this process keep the I/O threads
/// from the CPU, as the load did (the old code lost the keyspace in about
/// one round of four).
#[test]
fn tracking_invalidations_do_not_feed_eviction_while_io_threads_write() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_server, port) = spawn_threaded();
    let info = |r: &mut Raw, name: &str| crate::support::info_u64(r, name);
    let mut r = Raw::connect(port);
    for (name, value) in [
        ("maxmemory-policy", "allkeys-lru"),
        ("maxmemory-eviction-tenacity", "100"),
        ("latency-tracking", "no"),
    ] {
        assert_eq!(r.cmd_str(&["CONFIG", "SET", name, value]), b"+OK\r\n");
    }
    /// Stops the busy threads however the rounds end (a failed assertion
    /// included), so the scope can join them.
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Relaxed);
        }
    }
    let busy = AtomicBool::new(true);
    std::thread::scope(|s| {
        let _stop = Stop(&busy);
        for _ in 0..3 {
            s.spawn(|| {
                while busy.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        let mut evicted_before = 0;
        for round in 0..8 {
            let mut trackers: Vec<Raw> = (0..10).map(|_| Raw::connect(port)).collect();
            for t in &mut trackers {
                t.cmd_str(&["HELLO", "3"]);
                assert_eq!(t.cmd_str(&["CLIENT", "TRACKING", "on"]), b"+OK\r\n");
            }
            let mut batch = Vec::new();
            for j in 0..300 {
                let key = format!("{j}{}", "x".repeat(1000));
                batch.extend(encode(&[b"SET", key.as_bytes(), b"x"]));
            }
            r.send(&batch);
            for _ in 0..300 {
                assert_eq!(r.read_reply(), b"+OK\r\n");
            }
            for t in &mut trackers {
                let mut gets = Vec::new();
                for j in 0..300 {
                    let key = format!("{j}{}", "x".repeat(1000));
                    gets.extend(encode(&[b"GET", key.as_bytes()]));
                }
                t.send(&gets);
                for _ in 0..300 {
                    assert_eq!(t.read_reply(), b"$1\r\nx\r\n");
                }
            }
            let used = info(&mut r, "used_memory");
            let limit = (used - 40_000).to_string();
            assert_eq!(
                r.cmd_str(&["CONFIG", "SET", "maxmemory", &limit]),
                b"+OK\r\n"
            );
            let evicted = info(&mut r, "evicted_keys") - evicted_before;
            let dbsize = r.cmd_str(&["DBSIZE"]);
            let dbsize: u64 = String::from_utf8_lossy(&dbsize[1..dbsize.len() - 2])
                .parse()
                .expect("DBSIZE");
            assert!(
                (200..=300).contains(&dbsize),
                "round {round}: dbsize {dbsize}, {evicted} evicted first"
            );
            assert_eq!(r.cmd_str(&["CONFIG", "SET", "maxmemory", "0"]), b"+OK\r\n");
            assert_eq!(r.cmd_str(&["FLUSHALL"]), b"+OK\r\n");
            evicted_before = info(&mut r, "evicted_keys");
        }
    });
}
