//! The append-only file: restart round trips, files exchanged with a real
//! redis-server 7.0 in both directions, crash safety under SIGKILL with
//! `appendfsync always` and `everysec`, and torn or corrupted files.
//!
//! These tests run the ferrokv binary as a child process so it can be
//! killed like a crashing server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::*;

/// A temp directory removed on drop.
pub(crate) struct Dir(pub(crate) PathBuf);

impl Dir {
    pub(crate) fn new(name: &str) -> Dir {
        let p = unique_temp_path(name);
        std::fs::create_dir_all(&p).expect("create temp dir");
        Dir(p)
    }

    pub(crate) fn s(&self) -> String {
        self.0.display().to_string()
    }

    pub(crate) fn incr(&self) -> PathBuf {
        self.0
            .join("appendonlydir")
            .join("appendonly.aof.1.incr.aof")
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server process, SIGKILLed on drop.
pub(crate) struct Proc {
    pub(crate) port: u16,
    pub(crate) child: Child,
}

impl Proc {
    /// Its exit code once it exits within `deadline`.
    pub(crate) fn child_wait(&mut self, deadline: Duration) -> Option<i32> {
        wait_exit(&mut self.child, deadline).and_then(|s| s.code())
    }

    pub(crate) fn kill(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

pub(crate) fn ferrokv_cmd(dir: &Dir, port: u16, fsync: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ferrokv"));
    c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--dir", &dir.s(), "--appendonly", "yes"])
        .args(["--appendfsync", fsync, "--save", ""])
        .args(extra)
        .current_dir(&dir.0);
    c
}

/// Starts the server `command(port)` builds on a free port it is seen to
/// hold, and waits until it has loaded its files.
pub(crate) fn launch(command: impl FnMut(u16) -> Command) -> Proc {
    let (child, port) = spawn_on_free_port(command);
    let p = Proc { port, child };
    // Redis answers -LOADING until its files are loaded.
    let mut r = Raw::connect(port);
    assert!(
        wait_until(Duration::from_secs(5), || r.cmd_str(&["PING"])
            == b"+PONG\r\n"),
        "server loaded"
    );
    p
}

pub(crate) fn ferrokv(dir: &Dir, fsync: &str) -> Proc {
    launch(|port| ferrokv_cmd(dir, port, fsync, &[]))
}

pub(crate) fn redis(dir: &Dir) -> Proc {
    launch(|port| {
        let mut c = Command::new("redis-server");
        c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--dir", &dir.s(), "--appendonly", "yes", "--save", ""])
            .args(["--appendfsync", "always"])
            .current_dir(&dir.0);
        c
    })
}

/// The bulk strings of a flat array reply.
fn bulks(r: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let nl = r.iter().position(|&c| c == b'\n').expect("header");
    let mut pos = nl + 1;
    while pos < r.len() {
        let n = frame_len(&r[pos..]).expect("complete element");
        let item = &r[pos..pos + n];
        let inl = item.iter().position(|&c| c == b'\n').expect("bulk header");
        out.push(item[inl + 1..item.len() - 2].to_vec());
        pos += n;
    }
    out
}

/// One key: (db, key, TYPE reply, value parts, PEXPIRETIME reply).
pub(crate) type KeyRow = (usize, Vec<u8>, Vec<u8>, Vec<Vec<u8>>, Vec<u8>);

/// Every key of databases 0..4, value parts sorted for unordered types.
pub(crate) fn snapshot(port: u16) -> Vec<KeyRow> {
    let mut r = Raw::connect(port);
    let mut all = Vec::new();
    for db in 0..4 {
        r.cmd_str(&["SELECT", &db.to_string()]);
        let mut keys = bulks(&r.cmd_str(&["KEYS", "*"]));
        keys.sort();
        for k in keys {
            let t = r.cmd(&[b"TYPE", &k]);
            let mut v = match t.as_slice() {
                b"+string\r\n" => vec![r.cmd(&[b"GET", &k])],
                b"+list\r\n" => bulks(&r.cmd(&[b"LRANGE", &k, b"0", b"-1"])),
                b"+hash\r\n" => bulks(&r.cmd(&[b"HGETALL", &k])),
                b"+set\r\n" => bulks(&r.cmd(&[b"SMEMBERS", &k])),
                b"+zset\r\n" => bulks(&r.cmd(&[b"ZRANGE", &k, b"0", b"-1", b"WITHSCORES"])),
                other => panic!("type {:?}", String::from_utf8_lossy(other)),
            };
            if t != b"+list\r\n" && t != b"+zset\r\n" {
                v.sort();
            }
            let ttl = r.cmd(&[b"PEXPIRETIME", &k]);
            all.push((db, k, t, v, ttl));
        }
    }
    all
}

/// Writes a dataset touching the rewritten commands.
pub(crate) fn populate(r: &mut Raw) {
    let ok = |reply: Vec<u8>| assert_ne!(reply.first(), Some(&b'-'), "{reply:?}");
    for line in [
        "SET s1 hello",
        "SET n 10",
        "INCR n",
        "APPEND s1 world",
        "SET ttl1 v EX 1000",
        "SET ttl2 v PX 500000",
        "SETEX ttl3 900 v",
        "PSETEX ttl4 900000 v",
        "SET e1 v",
        "EXPIRE e1 3000",
        "SET e2 v",
        "PEXPIRE e2 3000000",
        "SET gone v",
        "EXPIRE gone -1",
        "INCRBYFLOAT f 1.5",
        "INCRBYFLOAT f 0.25",
        "RPUSH l a b c d",
        "LPOP l",
        "HSET h f1 v1 f2 v2",
        "SADD set x y z",
        "ZADD z 1 a 2 b",
        "SADD sp a b c d e f",
        "SPOP sp",
        "SPOP sp 2",
        "SELECT 2",
        "SET indb2 v",
        "EVAL \"redis.call('set','sx','1') redis.call('expire','sx',100) return 1\" 0",
        "SELECT 3",
        "MULTI",
        "SET m1 1",
        "INCR m1",
        "RPUSH ml x",
        "EXEC",
        "SELECT 0",
    ] {
        let args: Vec<&str> = split(line);
        ok(r.cmd_str(&args));
    }
}

/// Splits on spaces, keeping double-quoted parts whole.
fn split(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').expect("closing quote");
            out.push(&q[..end]);
            rest = q[end + 1..].trim_start();
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            out.push(&rest[..end]);
            rest = rest[end..].trim_start();
        }
    }
    out
}

#[test]
fn restart_round_trip_keeps_data_and_absolute_ttls() {
    let dir = Dir::new("ferrokv-aof-rt");
    let mut a = ferrokv(&dir, "always");
    let mut r = Raw::connect(a.port);
    populate(&mut r);
    let before = snapshot(a.port);
    assert!(before.len() >= 15, "{}", before.len());
    a.kill();
    let text = std::fs::read(dir.incr()).expect("incr file");
    let has = |s: &[u8]| text.windows(s.len()).any(|w| w == s);
    assert!(has(b"PEXPIREAT") && has(b"KEEPTTL") && has(b"MULTI"));
    let manifest =
        std::fs::read_to_string(dir.0.join("appendonlydir/appendonly.aof.manifest")).expect("m");
    assert_eq!(
        manifest,
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    let b = ferrokv(&dir, "always");
    assert_eq!(snapshot(b.port), before);
    // INFO reports the AOF.
    let info = Raw::connect(b.port).cmd_str(&["INFO", "persistence"]);
    assert!(String::from_utf8_lossy(&info).contains("aof_enabled:1"));
}

#[test]
fn bgrewriteaof_compacts_into_a_new_base() {
    let dir = Dir::new("ferrokv-aof-rw");
    let mut a = ferrokv(&dir, "everysec");
    let mut r = Raw::connect(a.port);
    populate(&mut r);
    assert_eq!(
        r.cmd_str(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    r.cmd_str(&["SET", "after", "rewrite"]);
    let before = snapshot(a.port);
    let path = dir.0.join("appendonlydir/appendonly.aof.manifest");
    assert!(wait_until(Duration::from_secs(5), || {
        std::fs::read_to_string(&path).is_ok_and(|m| m.contains("seq 2 type b"))
    }));
    let manifest = std::fs::read_to_string(&path).expect("manifest");
    assert_eq!(
        manifest,
        "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
    );
    // The replaced files are deleted once the new manifest is in place.
    let base1 = dir.0.join("appendonlydir/appendonly.aof.1.base.rdb");
    assert!(
        wait_until(Duration::from_secs(2), || !dir.incr().exists()
            && !base1.exists()),
        "old files removed"
    );
    drop(r);
    // SHUTDOWN syncs the file.
    Raw::connect(a.port).send(b"SHUTDOWN\r\n");
    let _ = a.child.wait();
    let b = ferrokv(&dir, "everysec");
    assert_eq!(snapshot(b.port), before);
}

#[test]
fn redis_aof_loads_into_ferrokv_and_back() {
    let dir = Dir::new("ferrokv-aof-x");
    let mut theirs = redis(&dir);
    let mut r = Raw::connect(theirs.port);
    populate(&mut r);
    let want = snapshot(theirs.port);
    theirs.kill();
    let mut ours = ferrokv(&dir, "always");
    assert_eq!(snapshot(ours.port), want);
    // More writes by ferrokv, then the directory goes back to Redis.
    let mut o = Raw::connect(ours.port);
    o.cmd_str(&["SET", "from", "ferrokv"]);
    o.cmd_str(&["RPUSH", "l", "z"]);
    let want = snapshot(ours.port);
    ours.kill();
    let back = redis(&dir);
    assert_eq!(snapshot(back.port), want);
}

/// Writes `SET c<i>:<n> <n>` from `clients` connections until the server
/// dies; returns the keys each acknowledged.
fn write_until_killed(port: u16, clients: usize, mut server: Proc) -> Vec<Vec<u64>> {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let stop = stop.clone();
            let count = count.clone();
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                    return acked;
                };
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut n = 0u64;
                let mut buf = [0u8; 5];
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("c{c}:{n}");
                    let v = n.to_string();
                    if s.write_all(&encode(&[b"SET", key.as_bytes(), v.as_bytes()]))
                        .is_err()
                    {
                        break;
                    }
                    if s.read_exact(&mut buf).is_err() || &buf != b"+OK\r\n" {
                        break;
                    }
                    acked.push(n);
                    count.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                }
                acked
            })
        })
        .collect();
    // A random moment between 200 and 700 ms.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    std::thread::sleep(Duration::from_millis(200 + u64::from(nanos % 500)));
    // With a slow disk, `always` acknowledges slowly: wait for some writes.
    wait_until(Duration::from_secs(3), || {
        count.load(Ordering::Relaxed) >= 50
    });
    server.kill();
    stop.store(true, Ordering::Relaxed);
    handles
        .into_iter()
        .map(|h| h.join().expect("writer"))
        .collect()
}

/// Counts acknowledged writes missing after the restart.
fn lost_writes(port: u16, acked: &[Vec<u64>]) -> (usize, usize) {
    let mut r = Raw::connect(port);
    let (mut lost, mut total) = (0, 0);
    for (c, ns) in acked.iter().enumerate() {
        for n in ns {
            total += 1;
            let key = format!("c{c}:{n}");
            let want = format!("${}\r\n{n}\r\n", n.to_string().len());
            if r.cmd_str(&["GET", &key]) != want.as_bytes() {
                lost += 1;
            }
        }
    }
    (lost, total)
}

#[test]
fn sigkill_with_fsync_always_loses_no_acknowledged_write() {
    let dir = Dir::new("ferrokv-aof-crash");
    let a = ferrokv(&dir, "always");
    let port = a.port;
    let acked = write_until_killed(port, 4, a);
    let b = ferrokv(&dir, "always");
    let (lost, total) = lost_writes(b.port, &acked);
    eprintln!("appendfsync always: {total} acknowledged writes, {lost} lost");
    assert!(total >= 50, "{total}");
    assert_eq!(lost, 0);
}

#[test]
fn sigkill_with_fsync_everysec_loses_at_most_a_second() {
    let dir = Dir::new("ferrokv-aof-crash-es");
    let a = ferrokv(&dir, "everysec");
    let port = a.port;
    let acked = write_until_killed(port, 4, a);
    let b = ferrokv(&dir, "everysec");
    let (lost, total) = lost_writes(b.port, &acked);
    eprintln!("appendfsync everysec: {total} acknowledged writes, {lost} lost");
    assert!(total >= 50, "{total}");
    // A process kill leaves written data in the page cache, so nothing
    // written before the kill is lost; only an OS crash would lose up to
    // the last second.
    assert_eq!(lost, 0);
}

fn start_fails(dir: &Dir, extra: &[&str]) -> String {
    let out = ferrokv_cmd(dir, free_port(), "always", extra)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let mut all = String::from_utf8_lossy(&out.stdout).into_owned();
    all.push_str(&String::from_utf8_lossy(&out.stderr));
    all
}

fn written(dir: &Dir) {
    let mut a = ferrokv(dir, "always");
    let mut r = Raw::connect(a.port);
    r.cmd_str(&["SET", "a", "1"]);
    r.cmd_str(&["SET", "b", "2"]);
    a.kill();
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open");
    f.write_all(bytes).expect("append");
}

/// Appends `tail` to the last file of a data set holding a=1 and b=2:
/// with aof-load-truncated off the start fails with `expect` in the log;
/// with it on, the server starts with a and b only and the file back at
/// its length before the tail. Returns that server and a connection.
fn refused_then_cut(dir: &Dir, tail: &[u8], expect: &[&str]) -> (Proc, Raw) {
    written(dir);
    let good = std::fs::metadata(dir.incr()).expect("incr").len();
    append(&dir.incr(), tail);
    let err = start_fails(dir, &["--aof-load-truncated", "no"]);
    for e in expect {
        assert!(err.contains(e), "{err} lacks {e}");
    }
    let b = ferrokv(dir, "always");
    let mut r = Raw::connect(b.port);
    assert_eq!(
        r.cmd_str(&["MGET", "a", "b", "c"]),
        b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"
    );
    assert_eq!(std::fs::metadata(dir.incr()).expect("incr").len(), good);
    (b, r)
}

const UNEXPECTED_END: &str =
    "Unexpected end of file reading the append only file appendonly.aof.1.incr.aof";

#[test]
fn torn_tail_is_truncated_or_refused() {
    let dir = Dir::new("ferrokv-aof-torn");
    let (b, mut r) = refused_then_cut(
        &dir,
        b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$5\r\nab",
        &[
            UNEXPECTED_END,
            "set the 'aof-load-truncated' configuration option to yes",
        ],
    );
    // New writes follow the truncated tail and load again.
    r.cmd_str(&["SET", "c", "3"]);
    drop(b);
    let c = ferrokv(&dir, "always");
    assert_eq!(Raw::connect(c.port).cmd_str(&["GET", "c"]), b"$1\r\n3\r\n");
}

/// The last file ends after a MULTI and its commands, with no EXEC: Redis
/// refuses to start unless aof-load-truncated is on; then the unfinished
/// transaction is cut off before anything is appended after it, so writes
/// acknowledged later survive the next restart.
#[test]
fn unfinished_transaction_at_the_end_is_refused_or_cut_before_new_writes() {
    let dir = Dir::new("ferrokv-aof-dangling-multi");
    let (b, mut r) = refused_then_cut(
        &dir,
        b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$1\r\n9\r\n",
        &[
            "Revert incomplete MULTI/EXEC transaction in AOF file appendonly.aof.1.incr.aof",
            UNEXPECTED_END,
        ],
    );
    assert_eq!(r.cmd_str(&["SET", "d", "4"]), b"+OK\r\n");
    drop(b);
    let c = ferrokv(&dir, "always");
    assert_eq!(
        Raw::connect(c.port).cmd_str(&["MGET", "a", "c", "d"]),
        b"*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n4\r\n"
    );
}

#[test]
fn corrupted_file_is_refused_with_offset_and_reason() {
    let dir = Dir::new("ferrokv-aof-bad");
    written(&dir);
    let good = std::fs::metadata(dir.incr()).expect("incr").len();
    append(&dir.incr(), b"garbage\r\n*1\r\n$4\r\nPING\r\n");
    let err = start_fails(&dir, &[]);
    assert!(
        err.contains("Bad file format") && err.contains(&format!("offset {good}")),
        "{err}"
    );
}

#[test]
fn config_set_appendonly_starts_the_aof() {
    let dir = Dir::new("ferrokv-aof-cfg");
    let mut a = launch(|port| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ferrokv"));
        c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--dir", &dir.s(), "--save", ""])
            .current_dir(&dir.0);
        c
    });
    let port = a.port;
    let mut r = Raw::connect(port);
    r.cmd_str(&["SET", "before", "1"]);
    assert_eq!(
        r.cmd_str(&["CONFIG", "SET", "appendonly", "yes"]),
        b"+OK\r\n"
    );
    assert_eq!(
        r.cmd_str(&["CONFIG", "SET", "appendfsync", "always"]),
        b"+OK\r\n"
    );
    r.cmd_str(&["SET", "after", "2"]);
    // As in Redis, the AOF holds the data once its first background
    // rewrite has ended.
    assert!(wait_until(Duration::from_secs(10), || {
        let info = String::from_utf8_lossy(&r.cmd_str(&["INFO", "persistence"])).into_owned();
        info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0")
    }));
    a.kill();
    let b = ferrokv(&dir, "always");
    assert_eq!(
        Raw::connect(b.port).cmd_str(&["MGET", "before", "after"]),
        b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
}

#[test]
fn keys_expired_before_the_restart_stay_expired() {
    let dir = Dir::new("ferrokv-aof-exp");
    let mut a = ferrokv(&dir, "always");
    let mut r = Raw::connect(a.port);
    r.cmd_str(&["SET", "k", "1", "PX", "200"]);
    // Written while the key lived: replay must not recreate it without TTL.
    assert_eq!(r.cmd_str(&["INCR", "k"]), b":2\r\n");
    r.cmd_str(&["RPUSH", "l", "a"]);
    r.cmd_str(&["PEXPIRE", "l", "200"]);
    r.cmd_str(&["RPUSH", "l", "b"]);
    assert!(wait_until(Duration::from_secs(2), || r
        .cmd_str(&["EXISTS", "k", "l"])
        == b":0\r\n"));
    a.kill();
    // Expired keys are written as DEL, as Redis propagates expirations.
    let text = std::fs::read(dir.incr()).expect("incr file");
    let del_l = b"*2\r\n$3\r\nDEL\r\n$1\r\nl\r\n";
    assert!(text.windows(del_l.len()).any(|w| w == del_l));
    let b = ferrokv(&dir, "always");
    assert_eq!(
        Raw::connect(b.port).cmd_str(&["EXISTS", "k", "l"]),
        b":0\r\n"
    );
}

#[test]
fn growth_triggers_an_automatic_rewrite() {
    let dir = Dir::new("ferrokv-aof-auto");
    let extra = [
        "--auto-aof-rewrite-min-size",
        "4kb",
        "--auto-aof-rewrite-percentage",
        "100",
    ];
    let mut a = launch(|port| ferrokv_cmd(&dir, port, "everysec", &extra));
    let mut r = Raw::connect(a.port);
    for i in 0..200 {
        r.cmd_str(&["SET", &format!("key:{i}"), "some value to grow the file"]);
    }
    let manifest = dir.0.join("appendonlydir/appendonly.aof.manifest");
    assert!(wait_until(Duration::from_secs(3), || {
        std::fs::read_to_string(&manifest).is_ok_and(|m| !m.contains("seq 1 "))
    }));
    let info = String::from_utf8_lossy(&r.cmd_str(&["INFO", "persistence"])).into_owned();
    assert!(info.contains("aof_rewrites:"), "{info}");
    r.cmd_str(&["SET", "last", "1"]);
    a.kill();
    let b = ferrokv(&dir, "everysec");
    assert_eq!(Raw::connect(b.port).cmd_str(&["DBSIZE"]), b":201\r\n");
}

/// The incremental AOF with the numbers that depend on the moment (absolute
/// expiry times, generated stream IDs: every run of 13 digits) masked.
fn masked_incr(dir: &Path) -> String {
    let bytes = std::fs::read(dir.join("appendonlydir/appendonly.aof.1.incr.aof")).expect("incr");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let mut out = String::new();
    let mut digits = String::new();
    for c in text.chars().chain(std::iter::once('\n')) {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if digits.len() == 13 {
            out.push_str("#############");
        } else {
            out.push_str(&digits);
        }
        digits.clear();
        out.push(c);
    }
    out.replace("\r\n", " ")
}

/// ferrokv and redis-server side by side, each with `appendonly yes` and
/// `appendfsync always` in its own directory.
pub(crate) fn aof_pair(ours: &Dir, theirs: &Dir) -> Pair {
    let ours_path = ours.s();
    Pair::new_with(
        |c| {
            c.dir = ours_path;
            c.appendonly = true;
            c.appendfsync = "always".into();
        },
        &[
            "--dir",
            &theirs.s(),
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ],
    )
}

/// Waits until both servers count `n` blocked clients.
fn blocked_on_both(p: &mut Pair, n: usize) {
    let want = format!("blocked_clients:{n}\r\n");
    assert!(wait_until(Duration::from_secs(5), || {
        let (a, b) = p.both(&["INFO", "clients"]);
        String::from_utf8_lossy(&a).contains(&want) && String::from_utf8_lossy(&b).contains(&want)
    }));
}

/// What reaches the AOF is what Redis 7.0 writes for the same commands:
/// relative TTLs as absolute ones, random and generated choices as made,
/// blocking and multi-key pops as the plain pops they were, transactions
/// and scripts with several writes wrapped in MULTI/EXEC, a single write
/// not.
#[test]
fn propagated_commands_match_redis_aof() {
    let ours_dir = Dir::new("ferrokv-aof-prop");
    let theirs_dir = Dir::new("redis-aof-prop");
    let mut p = aof_pair(&ours_dir, &theirs_dir);
    p.script(&[
        "SET a 1",
        "SET b 2 EX 100",
        "SET b2 2 PX 100000 GET",
        "SETEX c 100 v",
        "PSETEX d 100000 v",
        "SET e 1 PXAT 99999999999999",
        "set e2 1 pxat 99999999999999 nx",
        "SET e3 1 XX PXAT 99999999999999 GET",
        "EXPIRE a 100",
        "PEXPIRE a 200000 GT",
        "EXPIREAT a 99999999999 XX",
        "PEXPIREAT a 99999999999999",
        "EXPIRE e -1",
        "INCRBYFLOAT f 1.5",
        "GETEX b EX 200",
        "GETEX b PERSIST",
        "GETEX c PXAT 1",
        "SADD s1 x",
        "SPOP s1",
        "SADD s2 x",
        "SPOP s2 5",
        "RPUSH l a b c d e f",
        "BLPOP l 0",
        "BRPOP l 0",
        "BLMOVE l l2 LEFT RIGHT 0",
        "BRPOPLPUSH l l2 0",
        "LMPOP 1 l LEFT COUNT 1",
        "BLMPOP 0 1 l RIGHT COUNT 5",
        "LPOP l2 5",
        "ZADD z 1 a 2 b 3 c 4 d",
        "BZPOPMIN z 0",
        "BZMPOP 0 1 z MAX COUNT 1",
        "ZMPOP 1 z MIN COUNT 9",
        "XADD st 1-1 a 1",
        "XADD st 2-* b 2",
        "XTRIM st MAXLEN ~ 0",
        "XADD st MAXLEN = 1 3-1 c 3",
        "MULTI",
        "SET m 1",
        "INCR m",
        "EXEC",
        "MULTI",
        "SET m1 1",
        "EXEC",
        "SELECT 3",
        "SET in3 v",
        "SELECT 0",
    ]);
    // The generated ID comes from each server's clock.
    let (a, b) = p.both(&["XADD", "gen", "*", "a", "1"]);
    assert!(a.starts_with(b"$15\r\n") && b.starts_with(b"$15\r\n"));
    p.same(&[
        "EVAL",
        "redis.call('set','s','1') redis.call('incr','s') return 1",
        "0",
    ]);
    p.same(&["EVAL", "redis.call('set','one','1') return 1", "0"]);
    p.same(&["EVAL", "return redis.call('get','one')", "0"]);
    assert_eq!(masked_incr(&ours_dir.0), masked_incr(&theirs_dir.0));
}

/// Bitmap, HyperLogLog and geo commands reach the AOF as Redis writes
/// them: GEOADD as the ZADD it is, PFCOUNT when it refreshed the cached
/// cardinality, no-op writes not at all; the restarted server holds the
/// same bytes.
#[test]
fn bitmap_hll_and_geo_commands_reach_the_aof_like_redis() {
    let ours_dir = Dir::new("ferrokv-aof-bits");
    let theirs_dir = Dir::new("redis-aof-bits");
    let mut p = aof_pair(&ours_dir, &theirs_dir);
    p.script(&[
        "SETBIT b 7 1",
        "SETBIT b 7 1",
        "BITFIELD b SET u8 8 200 INCRBY i4 0 3",
        "BITFIELD b OVERFLOW FAIL INCRBY u8 8 100",
        "BITFIELD_RO b GET u8 8",
        "BITOP NOT nb b",
        "PFADD h a b c",
        "PFADD h a",
        "PFCOUNT h",
        "PFCOUNT h",
        "PFADD h2 x",
        "PFMERGE h3 h h2",
        "PFCOUNT h h2",
        "PFDEBUG TODENSE h3",
        "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        "GEOADD g NX CH 13 38 Palermo",
        "GEORADIUS g 15 37 200 km STORE gs",
        "GEOSEARCHSTORE gs2 g FROMMEMBER Palermo BYRADIUS 500 km STOREDIST",
        "MULTI",
        "PFADD h4 z",
        "PFCOUNT h4",
        "EXEC",
    ]);
    let aof = masked_incr(&ours_dir.0);
    assert!(aof.contains("zadd") && aof.contains("PFCOUNT"), "{aof}");
    assert_eq!(aof, masked_incr(&theirs_dir.0));
    let keys = ["b", "nb", "h", "h2", "h3", "h4", "g", "gs", "gs2"];
    let dumps: Vec<Vec<u8>> = keys.iter().map(|k| p.same(&["DUMP", k])).collect();
    drop(p);
    let mut p = aof_pair(&ours_dir, &theirs_dir);
    for (k, d) in keys.iter().zip(&dumps) {
        assert_eq!(&p.same(&["DUMP", k]), d, "{k} after restart");
    }
}

/// Clients served after blocking run their command again, so what they
/// took reaches the AOF as the plain pop or move it was (once lost on
/// restart), and each blocking command is counted once, as in Redis.
#[test]
fn served_blocked_commands_reach_the_aof_like_redis() {
    let ours_dir = Dir::new("ferrokv-aof-blocked");
    let theirs_dir = Dir::new("redis-aof-blocked");
    let mut p = aof_pair(&ours_dir, &theirs_dir);
    let (mut wa, mut wb) = p.connect_again();
    let blocked = blocked_on_both;
    for (wait, wake) in [
        (&["BLPOP", "q", "0"][..], &["RPUSH", "q", "x", "y"][..]),
        (
            &["BLMOVE", "q2", "dst", "RIGHT", "LEFT", "0"],
            &["RPUSH", "q2", "a"],
        ),
        (&["BZPOPMAX", "z", "0"], &["ZADD", "z", "1", "a", "2", "b"]),
        (
            &["BLMPOP", "0", "2", "q3", "q4", "LEFT", "COUNT", "3"],
            &["RPUSH", "q4", "1", "2"],
        ),
        (
            &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
            &["XADD", "s", "5-1", "f", "v"],
        ),
    ] {
        let a: Vec<&[u8]> = wait.iter().map(|s| s.as_bytes()).collect();
        wa.send(&encode(&a));
        wb.send(&encode(&a));
        blocked(&mut p, 1);
        p.same(wake);
        let (x, y) = (wa.read_reply(), wb.read_reply());
        assert_eq!(
            String::from_utf8_lossy(&x),
            String::from_utf8_lossy(&y),
            "{wait:?}"
        );
        blocked(&mut p, 0);
    }
    for k in ["q", "dst", "z", "q4"] {
        let (a, b) = p.both(&["DUMP", k]);
        assert_eq!(a, b, "{k}");
    }
    let stats = |r: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(r)
            .split("\r\n")
            .filter(|l| {
                ["blpop", "blmove", "bzpopmax", "blmpop", "xread"]
                    .iter()
                    .any(|c| l.starts_with(&format!("cmdstat_{c}:")))
            })
            .map(|l| l.split(",usec").next().unwrap_or("").to_string())
            .collect()
    };
    let (a, b) = p.both(&["INFO", "commandstats"]);
    let (mut a, mut b) = (stats(&a), stats(&b));
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert_eq!(masked_incr(&ours_dir.0), masked_incr(&theirs_dir.0));
}

/// Consumer groups reach the AOF as Redis writes them: reads through a
/// group as one XCLAIM per delivered entry (XGROUP SETID after a NOACK
/// read, XGROUP CREATECONSUMER for the consumer it made), claims as
/// XCLAIM, a blocked reader's delivery as XCLAIM too; restarted, both
/// servers rebuild the same groups from it.
#[test]
fn consumer_groups_reach_the_aof_like_redis() {
    use crate::stream_group::masked;
    let ours_dir = Dir::new("ferrokv-aof-groups");
    let theirs_dir = Dir::new("redis-aof-groups");
    let mut p = aof_pair(&ours_dir, &theirs_dir);
    p.script(&[
        "XGROUP CREATE s g $ MKSTREAM",
        "XGROUP CREATE s g $ MKSTREAM",
        "XADD s 1-1 a 1",
        "XADD s 2-1 b 2",
        "XADD s 3-1 c 3",
        "XGROUP CREATECONSUMER s g idle",
        "XREADGROUP GROUP g c1 COUNT 2 STREAMS s >",
        "XREADGROUP GROUP g c2 NOACK STREAMS s >",
        "XREADGROUP GROUP g c1 STREAMS s 0",
        "XREADGROUP GROUP g c1 STREAMS s >",
        "XACK s g 1-1",
        "XACK s g 1-1",
        "XCLAIM s g c3 0 2-1 RETRYCOUNT 5",
        "XCLAIM s g c3 0 2 JUSTID",
        "XCLAIM s g c3 0 7-0 LASTID 9-0",
        "XADD s 4-1 d 4",
        "XREADGROUP GROUP g c1 STREAMS s >",
        "XDEL s 4-1",
        "XAUTOCLAIM s g c4 0 0",
        "XGROUP SETID s g 3-1 ENTRIESREAD 3",
        "XGROUP DELCONSUMER s g c1",
        "XGROUP DELCONSUMER s g nobody",
        "XGROUP CREATE s h 0",
        "XGROUP DESTROY s h",
        "MULTI",
        "XADD s 5-1 e 5",
        "XREADGROUP GROUP g c5 STREAMS s >",
        "EXEC",
        "EVAL return(redis.call('XREADGROUP','GROUP','g','c6','NOACK','STREAMS','s','0')) 0",
    ]);
    // A blocked reader served by XADD.
    let (mut ours, mut theirs) = p.connect_again();
    let read: Vec<&[u8]> = vec![
        b"XREADGROUP",
        b"GROUP",
        b"g",
        b"c7",
        b"BLOCK",
        b"0",
        b"STREAMS",
        b"s",
        b">",
    ];
    ours.send(&encode(&read));
    theirs.send(&encode(&read));
    let blocked = |p: &mut Pair| {
        let (a, b) = p.both(&["INFO", "clients"]);
        let one = |r: &[u8]| String::from_utf8_lossy(r).contains("blocked_clients:1\r\n");
        one(&a) && one(&b)
    };
    assert!(wait_until(Duration::from_secs(5), || blocked(&mut p)));
    p.same(&["XADD", "s", "6-1", "f", "6"]);
    assert_eq!(ours.read_reply(), theirs.read_reply());
    let aof = masked_incr(&ours_dir.0);
    assert!(
        aof.contains("XCLAIM") && aof.contains("CREATECONSUMER"),
        "{aof}"
    );
    assert_eq!(aof, masked_incr(&theirs_dir.0));
    let questions: [&[&str]; 3] = [
        &["XINFO", "STREAM", "s", "FULL"],
        &["XPENDING", "s", "g"],
        &["XINFO", "GROUPS", "s"],
    ];
    let before: Vec<String> = questions
        .iter()
        .map(|q| {
            let (a, b) = p.both(q);
            assert_eq!(masked(&a), masked(&b), "{q:?}");
            masked(&a)
        })
        .collect();
    drop(p);
    let mut p = aof_pair(&ours_dir, &theirs_dir);
    for (q, want) in questions.iter().zip(&before) {
        let (a, b) = p.both(q);
        assert_eq!(masked(&a), masked(&b), "{q:?} after restart");
        // Redis's replay does not restore a group's read counter past an
        // XGROUP SETID (XCLAIM LASTID moves only the ID), so only the
        // pending entries are compared with what was there before.
        if q[0] == "XPENDING" {
            assert_eq!(&masked(&a), want, "{q:?} survives the restart");
        }
    }
}

/// `aof-timestamp-enabled yes`: `#TS:` lines open the incremental file and
/// a command base, as redis-server writes them; files with annotations
/// (ferrokv's and redis-server's) load into the same data.
#[test]
fn timestamp_annotations_are_written_and_loaded_as_redis() {
    let (ours_dir, theirs_dir) = (Dir::new("ferrokv-aofts"), Dir::new("redis-aofts"));
    let extra = ["--aof-use-rdb-preamble", "no"];
    let mut ours = launch(|port| ferrokv_cmd(&ours_dir, port, "always", &extra));
    let mut theirs = launch(|port| {
        let mut c = Command::new("redis-server");
        c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--dir",
                &theirs_dir.s(),
                "--appendonly",
                "yes",
                "--save",
                "",
            ])
            .args(["--appendfsync", "always"])
            .args(extra)
            .current_dir(&theirs_dir.0);
        c
    });
    let incr2 = |dir: &Dir| dir.0.join("appendonlydir/appendonly.aof.2.incr.aof");
    let base2 = |dir: &Dir| dir.0.join("appendonlydir/appendonly.aof.2.base.aof");
    let mut shapes = Vec::new();
    for (dir, port) in [(&ours_dir, ours.port), (&theirs_dir, theirs.port)] {
        let mut r = Raw::connect(port);
        let shape = |path: PathBuf| {
            let text =
                String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned();
            text.lines()
                .map(|l| if l.starts_with("#TS:") { "#TS" } else { l }.to_string())
                .collect::<Vec<String>>()
        };
        // Turned on now, so the base written at start-up (in the same
        // second) does not stand for this second's annotation.
        assert_eq!(
            r.cmd_str(&["CONFIG", "SET", "aof-timestamp-enabled", "yes"]),
            b"+OK\r\n"
        );
        assert_eq!(r.cmd_str(&["SET", "foo", "bar"]), b"+OK\r\n");
        let first = shape(dir.incr());
        assert_eq!(
            r.cmd_str(&["BGREWRITEAOF"]),
            b"+Background append only file rewriting started\r\n"
        );
        assert!(wait_until(Duration::from_secs(10), || {
            String::from_utf8_lossy(&r.cmd_str(&["INFO", "persistence"]))
                .contains("aof_rewrite_in_progress:0")
                && base2(dir).exists()
        }));
        assert_eq!(r.cmd_str(&["SET", "after", "1"]), b"+OK\r\n");
        let base = shape(base2(dir));
        assert_eq!(first.first().map(String::as_str), Some("#TS"), "{first:?}");
        assert_eq!(base.first().map(String::as_str), Some("#TS"), "{base:?}");
        // Whether the next write is annotated depends on the second.
        let mut next = shape(incr2(dir));
        next.retain(|l| l != "#TS");
        shapes.push((first, base, next));
    }
    assert_eq!(shapes[0], shapes[1]);
    // Each server's directory loads in ferrokv.
    ours.kill();
    theirs.kill();
    for dir in [&ours_dir, &theirs_dir] {
        let p = launch(|port| ferrokv_cmd(dir, port, "always", &[]));
        let mut r = Raw::connect(p.port);
        assert_eq!(r.cmd_str(&["GET", "foo"]), b"$3\r\nbar\r\n");
        assert_eq!(r.cmd_str(&["GET", "after"]), b"$1\r\n1\r\n");
    }
}

/// As Redis: FLUSHALL and FLUSHDB of empty databases still reach the AOF;
/// a blocked client woken (by EXEC, by SWAPDB) for a key that expired
/// meanwhile stays blocked, the key's DEL is written and the blocking
/// command is not.
#[test]
fn empty_flushes_and_expired_wakeups_reach_the_aof_like_redis() {
    let ours_dir = Dir::new("ferrokv-aof-expwake");
    let theirs_dir = Dir::new("redis-aof-expwake");
    let ours_path = ours_dir.s();
    let mut p = Pair::new_with(
        |c| {
            c.dir = ours_path;
            c.appendonly = true;
            c.appendfsync = "always".into();
            if let Some((param, _)) = ferrokv::config::params::lookup(b"enable-debug-command") {
                let _ = c.set_args(param, &[b"yes"], false);
            }
        },
        &[
            "--dir",
            &theirs_dir.s(),
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--enable-debug-command",
            "yes",
        ],
    );
    let (mut wa, mut wb) = p.connect_again();
    let blocked = blocked_on_both;
    p.same(&["FLUSHALL"]);
    p.same(&["FLUSHDB"]);
    p.same(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    // Woken by EXEC.
    let brpop: Vec<&[u8]> = vec![b"BRPOP", b"k", b"0"];
    wa.send(&encode(&brpop));
    wb.send(&encode(&brpop));
    blocked(&mut p, 1);
    p.same(&["MULTI"]);
    p.same(&["RPUSH", "k", "hello"]);
    p.same(&["PEXPIRE", "k", "100"]);
    p.same(&["DEBUG", "SLEEP", "0.2"]);
    p.same(&["EXEC"]);
    blocked(&mut p, 1);
    let ids = p.both(&["CLIENT", "LIST", "TYPE", "NORMAL"]);
    for (port_conn, list) in [(&mut p.ours, ids.0), (&mut p.theirs, ids.1)] {
        let text = String::from_utf8_lossy(&list).into_owned();
        let id = text
            .lines()
            .find(|l| l.contains("flags=b"))
            .and_then(|l| l.split(' ').next())
            .and_then(|f| f.strip_prefix("id="))
            .expect("a blocked client")
            .to_string();
        assert_eq!(port_conn.cmd_str(&["CLIENT", "UNBLOCK", &id]), b":1\r\n");
    }
    assert_eq!(wa.read_reply(), wb.read_reply());
    // Woken by SWAPDB.
    let brpop9: Vec<&[u8]> = vec![b"BRPOP", b"k", b"0"];
    for w in [&mut wa, &mut wb] {
        assert_eq!(w.cmd_str(&["SELECT", "9"]), b"+OK\r\n");
        w.send(&encode(&brpop9));
    }
    blocked(&mut p, 1);
    p.same(&["SELECT", "1"]);
    p.same(&["RPUSH", "k", "hello"]);
    p.same(&["PEXPIRE", "k", "100"]);
    p.same(&["DEBUG", "SLEEP", "0.2"]);
    p.same(&["SWAPDB", "1", "9"]);
    blocked(&mut p, 1);
    p.same(&["SELECT", "0"]);
    p.same(&["SET", "end", "1"]);
    let ours = masked_incr(&ours_dir.0);
    assert_eq!(ours.matches("$3 DEL").count(), 2, "{ours}");
    assert_eq!(ours.matches("FLUSH").count(), 2, "{ours}");
    assert_eq!(ours, masked_incr(&theirs_dir.0));
}
