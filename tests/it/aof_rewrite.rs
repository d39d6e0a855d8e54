//! Background AOF rewrites: the server keeps answering while a child
//! writes the new base, one child at a time (a rewrite waits behind
//! BGSAVE and the other way round), a crash in the middle loses nothing,
//! command bases (`aof-use-rdb-preamble no`), and appendonlydirs exchanged
//! with redis-server 7.0 both ways with compact collections in the base.

use std::path::PathBuf;
use std::time::Duration;

use crate::aof::*;
use crate::persist::compact::populate_collections;
use crate::support::*;

pub(crate) fn manifest(dir: &Dir) -> String {
    std::fs::read_to_string(dir.0.join("appendonlydir/appendonly.aof.manifest")).unwrap_or_default()
}

fn info(r: &mut Raw) -> String {
    String::from_utf8_lossy(&r.cmd_str(&["INFO", "persistence"])).into_owned()
}

/// Writes `n` keys in one pipeline.
fn fill(r: &mut Raw, n: usize) {
    let mut pipeline = Vec::new();
    for i in 0..n {
        let (k, v) = (format!("key:{i:07}"), format!("value-{i}"));
        pipeline.extend(encode(&[b"SET", k.as_bytes(), v.as_bytes()]));
    }
    r.send(&pipeline);
    for _ in 0..n {
        assert_eq!(r.read_reply(), b"+OK\r\n");
    }
}

/// Sends `cmds` as one batch (the executor runs them back to back, so no
/// child can finish in between) and returns the replies.
fn batch(r: &mut Raw, cmds: &[&[&str]]) -> Vec<Vec<u8>> {
    let mut bytes = Vec::new();
    for c in cmds {
        let args: Vec<&[u8]> = c.iter().map(|a| a.as_bytes()).collect();
        bytes.extend(encode(&args));
    }
    r.send(&bytes);
    cmds.iter().map(|_| r.read_reply()).collect()
}

fn rewrite_done(r: &mut Raw) -> bool {
    let i = info(r);
    i.contains("aof_rewrite_in_progress:0") && i.contains("aof_rewrite_scheduled:0")
}

#[test]
fn bgrewriteaof_runs_in_the_background() {
    let dir = Dir::new("ferrokv-aofbg");
    let mut a = ferrokv(&dir, "everysec");
    let mut r = Raw::connect(a.port);
    fill(&mut r, 2_000);
    let replies = batch(
        &mut r,
        &[
            &["BGREWRITEAOF"],
            &["BGREWRITEAOF"],
            &["INFO", "persistence"],
            &["BGSAVE"],
            &["SET", "during", "rewrite"],
        ],
    );
    assert_eq!(
        replies[0],
        b"+Background append only file rewriting started\r\n"
    );
    assert_eq!(
        replies[1],
        b"-ERR Background append only file rewriting already in progress\r\n"
    );
    let text = String::from_utf8_lossy(&replies[2]);
    assert!(text.contains("aof_rewrite_in_progress:1"), "{text}");
    assert!(text.contains("aof_current_rewrite_time_sec:0"), "{text}");
    assert_eq!(
        replies[3],
        b"-ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE \
          SCHEDULE in order to schedule a BGSAVE whenever possible.\r\n"
            .to_vec()
    );
    assert_eq!(replies[4], b"+OK\r\n");
    assert!(wait_until(Duration::from_secs(10), || rewrite_done(&mut r)));
    let text = info(&mut r);
    assert!(text.contains("aof_last_bgrewrite_status:ok"), "{text}");
    assert!(text.contains("aof_rewrites:1\r\n"), "{text}");
    assert_eq!(
        manifest(&dir),
        "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
    );
    // The new incremental file holds only what was written since.
    let incr2 = std::fs::read(dir.0.join("appendonlydir/appendonly.aof.2.incr.aof")).expect("incr");
    assert_eq!(
        incr2,
        b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$6\r\nduring\r\n$7\r\nrewrite\r\n"
    );
    let before = snapshot(a.port);
    a.kill();
    let b = ferrokv(&dir, "everysec");
    assert_eq!(Raw::connect(b.port).cmd_str(&["DBSIZE"]), b":2001\r\n");
    assert_eq!(snapshot(b.port), before);
}

#[test]
fn a_crash_during_the_rewrite_loses_nothing() {
    let dir = Dir::new("ferrokv-aofbg-crash");
    let mut a = ferrokv(&dir, "always");
    let mut r = Raw::connect(a.port);
    fill(&mut r, 30_000);
    let replies = batch(&mut r, &[&["BGREWRITEAOF"], &["SET", "during", "1"]]);
    assert_eq!(replies[1], b"+OK\r\n");
    // The new incremental file is in the manifest before the child ends.
    assert!(manifest(&dir).contains("appendonly.aof.2.incr.aof seq 2 type i"));
    a.kill();
    let b = ferrokv(&dir, "always");
    let mut r = Raw::connect(b.port);
    assert_eq!(r.cmd_str(&["DBSIZE"]), b":30001\r\n");
    assert_eq!(r.cmd_str(&["GET", "during"]), b"$1\r\n1\r\n");
    assert_eq!(
        r.cmd_str(&["GET", "key:0012345"]),
        b"$11\r\nvalue-12345\r\n"
    );
}

#[test]
fn one_child_at_a_time() {
    let dir = Dir::new("ferrokv-aofbg-sched");
    let a = ferrokv(&dir, "everysec");
    let mut r = Raw::connect(a.port);
    fill(&mut r, 30_000);
    let replies = batch(
        &mut r,
        &[&["BGSAVE"], &["BGREWRITEAOF"], &["INFO", "persistence"]],
    );
    assert_eq!(replies[0], b"+Background saving started\r\n");
    assert_eq!(
        replies[1],
        b"+Background append only file rewriting scheduled\r\n"
    );
    let text = String::from_utf8_lossy(&replies[2]);
    assert!(text.contains("aof_rewrite_scheduled:1"), "{text}");
    assert!(text.contains("aof_rewrite_in_progress:0"), "{text}");
    // The rewrite starts once the save is collected, then completes.
    assert!(wait_until(Duration::from_secs(10), || manifest(&dir)
        .contains("seq 2 type b")));
    assert!(wait_until(Duration::from_secs(10), || rewrite_done(&mut r)));
    // BGSAVE SCHEDULE waits behind a rewrite.
    let dump = dir.0.join("dump.rdb");
    let _ = std::fs::remove_file(&dump);
    let replies = batch(
        &mut r,
        &[
            &["BGREWRITEAOF"],
            &["BGSAVE", "SCHEDULE"],
            &["BGREWRITEAOF"],
        ],
    );
    assert_eq!(
        replies[0],
        b"+Background append only file rewriting started\r\n"
    );
    assert_eq!(replies[1], b"+Background saving scheduled\r\n");
    assert!(replies[2].starts_with(b"-ERR Background append only file rewriting already"));
    assert!(wait_until(Duration::from_secs(10), || dump.exists()));
    assert!(wait_until(Duration::from_secs(10), || manifest(&dir)
        .contains("seq 3 type b")));
}

fn base_path(dir: &Dir, seq: u64, ext: &str) -> PathBuf {
    dir.0
        .join(format!("appendonlydir/appendonly.aof.{seq}.base.{ext}"))
}

#[test]
fn command_bases_without_the_rdb_preamble() {
    let dir = Dir::new("ferrokv-aofbg-cmds");
    let extra = ["--aof-use-rdb-preamble", "no"];
    let mut a = launch(|port| ferrokv_cmd(&dir, port, "always", &extra));
    let port = a.port;
    let mut r = Raw::connect(port);
    populate(&mut r);
    populate_collections(&mut r);
    assert_eq!(
        r.cmd_str(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    assert!(wait_until(Duration::from_secs(10), || rewrite_done(&mut r)));
    r.cmd_str(&["SET", "after", "1"]);
    let base = std::fs::read(base_path(&dir, 2, "aof")).expect("command base");
    assert!(base.starts_with(b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"));
    let want = snapshot(port);
    a.kill();
    let b = ferrokv(&dir, "always");
    assert_eq!(snapshot(b.port), want);
    drop(b);
    // Redis 7.0 loads the command base too.
    let theirs = redis(&dir);
    assert_eq!(snapshot(theirs.port), want);
}

#[test]
fn redis_rdb_preamble_aof_loads_into_ferrokv() {
    let dir = Dir::new("ferrokv-aofbg-from-redis");
    let mut theirs = redis(&dir);
    let mut r = Raw::connect(theirs.port);
    populate(&mut r);
    populate_collections(&mut r);
    assert_eq!(
        r.cmd_str(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    assert!(wait_until(Duration::from_secs(10), || rewrite_done(&mut r)));
    // Writes after the rewrite land in Redis's new incremental file.
    r.cmd_str(&["HSET", "h_small", "new", "field"]);
    r.cmd_str(&["SADD", "s_int", "99"]);
    r.cmd_str(&["DEL", "z_big"]);
    let base = std::fs::read(base_path(&dir, 2, "rdb")).expect("Redis's RDB base");
    assert!(base.starts_with(b"REDIS0010"));
    let want = snapshot(theirs.port);
    theirs.kill();
    let ours = ferrokv(&dir, "always");
    assert_eq!(snapshot(ours.port), want);
    let mut o = Raw::connect(ours.port);
    assert_eq!(
        o.cmd_str(&["OBJECT", "ENCODING", "h_small"]),
        b"$8\r\nlistpack\r\n"
    );
    assert_eq!(
        o.cmd_str(&["OBJECT", "ENCODING", "s_int"]),
        b"$6\r\nintset\r\n"
    );
}

#[test]
fn ferrokv_rdb_preamble_aof_loads_into_redis() {
    let dir = Dir::new("ferrokv-aofbg-to-redis");
    let mut ours = ferrokv(&dir, "always");
    let mut r = Raw::connect(ours.port);
    populate(&mut r);
    populate_collections(&mut r);
    assert_eq!(
        r.cmd_str(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    assert!(wait_until(Duration::from_secs(10), || rewrite_done(&mut r)));
    r.cmd_str(&["HSET", "h_small", "new", "field"]);
    r.cmd_str(&["ZADD", "z_small", "7", "seven"]);
    let base = std::fs::read(base_path(&dir, 2, "rdb")).expect("RDB base");
    assert!(base.starts_with(b"REDIS0010"));
    let want = snapshot(ours.port);
    ours.kill();
    let theirs = redis(&dir);
    assert_eq!(snapshot(theirs.port), want);
}

/// The field names of an INFO persistence reply, in order.
fn field_names(reply: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(reply)
        .lines()
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
        .filter(|k| !k.starts_with('$'))
        .collect()
}

#[test]
fn info_persistence_fields_match_redis() {
    // AOF off.
    let mut p = Pair::new();
    let (a, b) = p.both(&["INFO", "persistence"]);
    assert_eq!(field_names(&a), field_names(&b));
    assert!(field_names(&a).len() >= 30);
    // AOF on: Redis adds the aof_current_size group.
    let d1 = Dir::new("ferrokv-info-aof");
    let d2 = Dir::new("ferrokv-info-aof-redis");
    let ours = ferrokv(&d1, "everysec");
    let theirs = redis(&d2);
    let a = Raw::connect(ours.port).cmd_str(&["INFO", "persistence"]);
    let b = Raw::connect(theirs.port).cmd_str(&["INFO", "persistence"]);
    assert_eq!(field_names(&a), field_names(&b));
    assert!(field_names(&a).contains(&"aof_pending_rewrite".to_string()));
    // The values that mean the same on both sides agree.
    for f in [
        "aof_enabled:1",
        "aof_rewrites:0",
        "aof_rewrite_in_progress:0",
    ] {
        assert!(String::from_utf8_lossy(&a).contains(f), "{f}");
        assert!(String::from_utf8_lossy(&b).contains(f), "{f}");
    }
}

/// A rewrite writes a stream's groups as Redis does: XGROUP CREATE with
/// ENTRIESREAD, one XCLAIM ... FORCE per pending entry, XGROUP
/// CREATECONSUMER for consumers owning nothing. (One key: the two
/// servers' key orders differ.)
#[test]
fn rewritten_groups_match_redis() {
    let ours_dir = Dir::new("ferrokv-aofrw-groups");
    let theirs_dir = Dir::new("redis-aofrw-groups");
    let mut p = aof_pair(&ours_dir, &theirs_dir);
    p.script(&[
        "CONFIG SET aof-use-rdb-preamble no",
        "XADD s 1-1 a 1",
        "XADD s 2-1 b 2",
        "XADD s 3-1 c 3 d 4",
        "XGROUP CREATE s g 0",
        "XGROUP CREATE s h $ ENTRIESREAD 7",
        "XGROUP CREATECONSUMER s g idle",
        "XREADGROUP GROUP g c1 COUNT 2 STREAMS s >",
        "XREADGROUP GROUP g c2 STREAMS s >",
        "XCLAIM s g c3 0 2-1 RETRYCOUNT 4",
        "XDEL s 1-1",
    ]);
    let base = |dir: &Dir, r: &mut Raw| {
        assert_eq!(
            r.cmd_str(&["BGREWRITEAOF"]),
            b"+Background append only file rewriting started\r\n"
        );
        assert!(wait_until(Duration::from_secs(10), || rewrite_done(r)));
        let bytes = std::fs::read(base_path(dir, 2, "aof")).expect("command base");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        // Delivery times are each server's clock.
        let mut out = String::new();
        let mut digits = String::new();
        for c in text.chars().chain(std::iter::once('\n')) {
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            out.push_str(if digits.len() == 13 { "T" } else { &digits });
            digits.clear();
            out.push(c);
        }
        out
    };
    let ours = base(&ours_dir, &mut p.ours);
    assert!(
        ours.contains("CREATECONSUMER") && ours.contains("XCLAIM"),
        "{ours}"
    );
    assert_eq!(ours, base(&theirs_dir, &mut p.theirs));
}

/// `aof-disable-auto-gc yes` keeps the files two rewrites replaced, named
/// as history in the manifest in Redis's order; `no` deletes them at once.
/// The manifests and files match redis-server's step by step.
#[test]
fn auto_gc_disabled_keeps_history_as_redis() {
    let (ours_dir, theirs_dir) = (Dir::new("ferrokv-aofgc"), Dir::new("redis-aofgc"));
    let ours = ferrokv(&ours_dir, "always");
    let theirs = redis(&theirs_dir);
    let mut seen = Vec::new();
    for (dir, port) in [(&ours_dir, ours.port), (&theirs_dir, theirs.port)] {
        let mut r = Raw::connect(port);
        let files = aof_files;
        let mut steps = Vec::new();
        assert_eq!(
            r.cmd_str(&["CONFIG", "SET", "aof-disable-auto-gc", "yes"]),
            b"+OK\r\n"
        );
        for i in 0..2 {
            assert_eq!(r.cmd_str(&["SET", "k", &i.to_string()]), b"+OK\r\n");
            assert_eq!(
                r.cmd_str(&["BGREWRITEAOF"]),
                b"+Background append only file rewriting started\r\n"
            );
            assert!(wait_until(Duration::from_secs(10), || rewrite_done(&mut r)));
            steps.push((manifest(dir), files(dir)));
        }
        assert_eq!(
            r.cmd_str(&["CONFIG", "SET", "aof-disable-auto-gc", "no"]),
            b"+OK\r\n"
        );
        // Redis deletes the files on its background thread.
        assert!(wait_until(Duration::from_secs(10), || files(dir).len() == 3));
        steps.push((manifest(dir), files(dir)));
        seen.push(steps);
    }
    assert!(seen[0][1].0.contains("type h"), "{:?}", seen[0]);
    assert_eq!(seen[0], seen[1]);
}

/// A server started with `appendonly no` and the `--logfile` in `dir`.
fn plain(program: &str, dir: &Dir) -> Proc {
    launch(|port| {
        let mut c = std::process::Command::new(program);
        c.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--dir", &dir.s(), "--save", "", "--logfile", "log.txt"])
            .current_dir(&dir.0);
        c
    })
}

/// The AOF directory's file names, sorted.
pub(crate) fn aof_files(dir: &Dir) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.0.join("appendonlydir"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// CONFIG SET appendonly yes as Redis's startAppendOnly: the AOF waits for
/// a background rewrite (scheduled inside EXEC, with its log line), writes
/// made meanwhile go to a temporary incremental file that becomes the
/// first incremental file, and the files and manifest end as Redis's;
/// CONFIG SET appendonly no during that rewrite leaves no files behind.
#[test]
fn config_set_appendonly_waits_for_a_background_rewrite_as_redis() {
    let run = |program: &str| {
        let dir = Dir::new("ferrokv-aof-enable");
        let p = plain(program, &dir);
        let mut r = Raw::connect(p.port);
        fill(&mut r, 2_000);
        // Enabled and disabled again while the child runs.
        r.cmd_str(&["CONFIG", "SET", "rdb-key-save-delay", "1000"]);
        assert_eq!(
            r.cmd_str(&["CONFIG", "SET", "appendonly", "yes"]),
            b"+OK\r\n"
        );
        let text = info(&mut r);
        assert!(text.contains("aof_enabled:1"), "{text}");
        assert!(text.contains("aof_rewrite_in_progress:1"), "{text}");
        assert_eq!(
            r.cmd_str(&["CONFIG", "SET", "appendonly", "no"]),
            b"+OK\r\n"
        );
        assert!(wait_until(Duration::from_secs(10), || aof_files(&dir)
            .iter()
            .all(|f| !f.starts_with("temp-rewriteaof"))));
        let after_disable = aof_files(&dir);
        r.cmd_str(&["CONFIG", "SET", "rdb-key-save-delay", "0"]);
        // Inside EXEC the rewrite is only scheduled.
        let replies = batch(
            &mut r,
            &[
                &["MULTI"],
                &["SET", "foo", "bar"],
                &["CONFIG", "SET", "appendonly", "yes"],
                &["EXEC"],
                &["SET", "after", "exec"],
            ],
        );
        assert_eq!(replies[3], b"*2\r\n+OK\r\n+OK\r\n");
        assert!(wait_until(Duration::from_secs(10), || rewrite_done(&mut r)));
        let text = info(&mut r);
        assert!(text.contains("aof_enabled:1"), "{text}");
        let rewrites = text
            .lines()
            .find(|l| l.starts_with("aof_rewrites:"))
            .map(str::to_string);
        let log = std::fs::read_to_string(dir.0.join("log.txt")).expect("log");
        assert!(
            log.contains(
                "AOF was enabled during a transaction. An AOF background was scheduled to start when possible."
            ),
            "{log}"
        );
        r.cmd_str(&["SET", "last", "1"]);
        let manifest_text = manifest(&dir);
        let files = aof_files(&dir);
        let dbsize = r.cmd_str(&["DBSIZE"]);
        drop(p);
        (after_disable, manifest_text, files, dbsize, rewrites, dir)
    };
    let ours = run(env!("CARGO_BIN_EXE_ferrokv"));
    let theirs = run("redis-server");
    assert_eq!(ours.0, theirs.0);
    assert_eq!(ours.1, theirs.1);
    assert_eq!(ours.2, theirs.2);
    assert_eq!(ours.3, theirs.3);
    assert_eq!(ours.4, theirs.4);
    // Everything acknowledged is in the files.
    let b = ferrokv(&ours.5, "everysec");
    let mut r = Raw::connect(b.port);
    assert_eq!(r.cmd_str(&["DBSIZE"]), b":2003\r\n");
    assert_eq!(r.cmd_str(&["GET", "after"]), b"$4\r\nexec\r\n");
}
