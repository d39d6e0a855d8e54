//! The multi-part AOF's layout at start-up, side by side with
//! redis-server 7.0: manifests Redis refuses (and the lines it logs before
//! exiting), files the manifest names that are missing, and the upgrade of
//! an old-style single AOF (plain, or with an RDB preamble) into the AOF
//! directory, with the manifest and files each server leaves behind.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::aof::{ferrokv_cmd, launch, redis, Dir, Proc};
use crate::support::*;

/// A RESP command as the AOF holds it.
fn resp(args: &[&str]) -> String {
    let mut s = format!("*{}\r\n", args.len());
    for a in args {
        s.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s
}

/// Files to lay out, relative to the server's `dir`.
type Layout<'a> = &'a [(&'a str, &'a [u8])];

fn lay_out(dir: &Dir, files: Layout<'_>) {
    for (path, bytes) in files {
        let p = dir.0.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, bytes).expect("write");
    }
}

/// The messages of a server's log, without Redis's `pid:role date time
/// level` prefix (continuation lines of a multi-line message as they are).
fn messages(log: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(log)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.splitn(7, ' ').collect();
            if f.len() == 7 && f[0].contains(':') && f[4].contains(':') {
                f[6].to_string()
            } else {
                l.to_string()
            }
        })
        .filter(|m| !m.trim().is_empty())
        .collect()
}

/// Runs a server that must refuse to start; its exit code and messages.
fn refused(mut cmd: Command) -> (Option<i32>, Vec<String>) {
    let out = cmd.output().expect("runs");
    let mut log = out.stdout;
    log.extend_from_slice(&out.stderr);
    (out.status.code(), messages(&log))
}

fn redis_cmd(dir: &Dir) -> Command {
    let mut c = Command::new("redis-server");
    c.args(["--port", &free_port().to_string(), "--bind", "127.0.0.1"])
        .args(["--dir", &dir.s(), "--appendonly", "yes", "--save", ""])
        .current_dir(&dir.0);
    c
}

/// The lines about the AOF that Redis logs while refusing a layout.
fn aof_lines(messages: &[String]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| {
            m.contains("AOF") || m.contains("manifest") || m.contains(">>>") || m.contains("append")
        })
        .map(|m| m.trim().to_string())
        .collect()
}

#[test]
fn refused_layouts_are_refused_with_redis_lines() {
    let set1 = resp(&["set", "k1", "v1"]);
    let set2 = resp(&["set", "k2", "v2"]);
    let long = "file appendonly.aof.1.base.aof seq 1 type b ".repeat(30) + "\n";
    let cases: Vec<(&str, Vec<(&str, Vec<u8>)>)> = vec![
        (
            "a file the manifest names is missing",
            vec![
                (
                    "appendonlydir/appendonly.aof.1.base.aof",
                    set1.clone().into(),
                ),
                (
                    "appendonlydir/appendonly.aof.2.incr.aof",
                    set2.clone().into(),
                ),
                (
                    "appendonlydir/appendonly.aof.manifest",
                    b"file appendonly.aof.1.base.aof seq 1 type b\n\
                      file appendonly.aof.1.incr.aof seq 1 type i\n\
                      file appendonly.aof.2.incr.aof seq 2 type i\n"
                        .to_vec(),
                ),
            ],
        ),
        (
            "sequence not increasing",
            vec![
                (
                    "appendonlydir/appendonly.aof.1.incr.aof",
                    set1.clone().into(),
                ),
                (
                    "appendonlydir/appendonly.aof.2.incr.aof",
                    set2.clone().into(),
                ),
                (
                    "appendonlydir/appendonly.aof.manifest",
                    b"file appendonly.aof.2.incr.aof seq 2 type i\n\
                      file appendonly.aof.1.incr.aof seq 1 type i\n"
                        .to_vec(),
                ),
            ],
        ),
        (
            "blank line",
            vec![
                (
                    "appendonlydir/appendonly.aof.1.incr.aof",
                    set1.clone().into(),
                ),
                (
                    "appendonlydir/appendonly.aof.manifest",
                    b"file appendonly.aof.1.incr.aof seq 1 type i\n\n".to_vec(),
                ),
            ],
        ),
        (
            "two bases",
            vec![
                (
                    "appendonlydir/appendonly.aof.1.base.aof",
                    set1.clone().into(),
                ),
                (
                    "appendonlydir/appendonly.aof.2.base.aof",
                    set2.clone().into(),
                ),
                (
                    "appendonlydir/appendonly.aof.manifest",
                    b"file appendonly.aof.1.base.aof seq 1 type b\n\
                      file appendonly.aof.2.base.aof seq 2 type b\n"
                        .to_vec(),
                ),
            ],
        ),
        (
            "unknown type",
            vec![(
                "appendonlydir/appendonly.aof.manifest",
                b"file appendonly.aof.1.base.aof seq 1 type x\n".to_vec(),
            )],
        ),
        (
            "missing key",
            vec![(
                "appendonlydir/appendonly.aof.manifest",
                b"filx appendonly.aof.1.base.aof seq 1 type b\n".to_vec(),
            )],
        ),
        (
            "short line",
            vec![(
                "appendonlydir/appendonly.aof.manifest",
                b"file appendonly.aof.1.incr.aof type i\n".to_vec(),
            )],
        ),
        (
            "odd parameter",
            vec![(
                "appendonlydir/appendonly.aof.manifest",
                b"file appendonly.aof.1.incr.aof seq 1 type i newkey\n".to_vec(),
            )],
        ),
        (
            "a path for a name",
            vec![(
                "appendonlydir/appendonly.aof.manifest",
                b"file ../appendonly.aof.1.incr.aof seq 1 type i\n".to_vec(),
            )],
        ),
        (
            "line too long",
            vec![("appendonlydir/appendonly.aof.manifest", long.into_bytes())],
        ),
        (
            "no newline at the end",
            vec![(
                "appendonlydir/appendonly.aof.manifest",
                b"file appendonly.aof.1.incr.aof seq 1 type i".to_vec(),
            )],
        ),
        (
            "empty manifest",
            vec![("appendonlydir/appendonly.aof.manifest", Vec::new())],
        ),
        (
            "the old name as the base, in neither directory",
            vec![(
                "appendonlydir/appendonly.aof.manifest",
                b"file appendonly.aof seq 1 type b\n".to_vec(),
            )],
        ),
        (
            "an unknown command",
            vec![
                (
                    "appendonlydir/appendonly.aof.1.incr.aof",
                    format!("{set1}{}", resp(&["bla", "foo"])).into_bytes(),
                ),
                (
                    "appendonlydir/appendonly.aof.manifest",
                    b"file appendonly.aof.1.incr.aof seq 1 type i\n".to_vec(),
                ),
            ],
        ),
    ];
    for (what, files) in &cases {
        let files: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (*p, b.as_slice())).collect();
        let (ours, theirs) = (Dir::new("aof-layout-f"), Dir::new("aof-layout-r"));
        lay_out(&ours, &files);
        lay_out(&theirs, &files);
        let (code_r, log_r) = refused(redis_cmd(&theirs));
        let (code_f, log_f) = refused(ferrokv_cmd(&ours, free_port(), "always", &[]));
        assert_eq!(code_r, Some(1), "{what}: redis-server refuses");
        assert_eq!(code_f, code_r, "{what}: ferrokv refuses as redis-server");
        let ours_lines = aof_lines(&log_f);
        let redis_lines = aof_lines(&log_r);
        assert!(!redis_lines.is_empty(), "{what}: redis-server said why");
        for line in redis_lines {
            assert!(
                ours_lines.contains(&line),
                "{what}: redis-server logged {line:?}; ferrokv logged {ours_lines:#?}"
            );
        }
        // The last line says why, as Redis's does (the suite reads it).
        assert_eq!(
            log_f.last().map(|l| l.trim()),
            log_r.last().map(|l| l.trim()),
            "{what}: last line"
        );
    }
}

/// The files of the AOF directory, with the manifest's text.
fn aof_files(dir: &Dir) -> (Vec<String>, String) {
    (
        crate::aof_rewrite::aof_files(dir),
        crate::aof_rewrite::manifest(dir),
    )
}

fn values(p: &Proc, keys: &[&str]) -> Vec<Vec<u8>> {
    let mut r = Raw::connect(p.port);
    keys.iter().map(|k| r.cmd_str(&["GET", k])).collect()
}

/// An old-style AOF with an RDB preamble, written by redis-server: its
/// rewrite's RDB base, then commands after it.
fn redis_preamble_aof() -> Vec<u8> {
    let dir = Dir::new("aof-layout-preamble");
    let mut p = redis(&dir);
    let mut r = Raw::connect(p.port);
    r.cmd_str(&["SET", "k1", "v1"]);
    r.cmd_str(&["SET", "k2", "v2"]);
    r.cmd_str(&["BGREWRITEAOF"]);
    assert!(
        wait_until(Duration::from_secs(10), || {
            let info = String::from_utf8_lossy(&r.cmd_str(&["INFO", "persistence"])).into_owned();
            info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0")
                && aof_files(&dir).1.contains(".2.base.rdb")
        }),
        "redis-server rewrote its AOF"
    );
    r.cmd_str(&["SET", "k3", "v3"]);
    p.kill();
    let d = dir.0.join("appendonlydir");
    let mut out = std::fs::read(d.join("appendonly.aof.2.base.rdb")).expect("base");
    out.extend(std::fs::read(d.join("appendonly.aof.2.incr.aof")).expect("incr"));
    assert!(out.starts_with(b"REDIS"));
    out
}

#[test]
fn old_style_aofs_are_moved_into_the_aof_directory_as_redis_moves_them() {
    let plain = format!(
        "{}{}{}",
        resp(&["set", "k1", "v1"]),
        resp(&["set", "k2", "v2"]),
        resp(&["set", "k3", "v3"])
    );
    let preamble = redis_preamble_aof();
    let later = resp(&["set", "k4", "v4"]);
    let cases: Vec<(&str, Vec<(&str, &[u8])>)> = vec![
        ("plain", vec![("appendonly.aof", plain.as_bytes())]),
        ("rdb preamble", vec![("appendonly.aof", &preamble)]),
        (
            "an upgrade cut short before the move",
            vec![
                ("appendonly.aof", plain.as_bytes()),
                (
                    "appendonlydir/appendonly.aof.manifest",
                    b"file appendonly.aof seq 1 type b\n",
                ),
            ],
        ),
        (
            "the old name in both directories",
            vec![
                ("appendonly.aof", plain.as_bytes()),
                ("appendonlydir/appendonly.aof", later.as_bytes()),
                (
                    "appendonlydir/appendonly.aof.manifest",
                    b"file appendonly.aof seq 1 type b\n",
                ),
            ],
        ),
    ];
    let keys = ["k1", "k2", "k3", "k4"];
    for (what, files) in &cases {
        let (ours, theirs) = (Dir::new("aof-upgrade-f"), Dir::new("aof-upgrade-r"));
        lay_out(&ours, files);
        lay_out(&theirs, files);
        let f = launch(|port| ferrokv_cmd(&ours, port, "always", &[]));
        let r = redis(&theirs);
        assert_eq!(values(&f, &keys), values(&r, &keys), "{what}: data");
        assert_eq!(
            aof_files(&ours),
            aof_files(&theirs),
            "{what}: AOF directory"
        );
        assert_eq!(
            Path::new(&ours.0.join("appendonly.aof")).exists(),
            Path::new(&theirs.0.join("appendonly.aof")).exists(),
            "{what}: the old file in dir"
        );
    }
}

/// DEBUG LOADAOF loads the files again without writing what it replays
/// into them a second time (a counter stays right across loads and a
/// restart), and a read-only replica's load runs its functions' and keys'
/// commands, as in redis-server.
#[test]
fn debug_loadaof_appends_nothing_and_a_replica_loads_as_redis() {
    let (ours, theirs) = (Dir::new("aof-loadaof-f"), Dir::new("aof-loadaof-r"));
    let debug = ["--enable-debug-command", "yes"];
    let start_ours = |d: &Dir| launch(|port| ferrokv_cmd(d, port, "always", &debug));
    let start_theirs = |d: &Dir| {
        launch(|port| {
            let mut c = redis_cmd(d);
            c.args(["--port", &port.to_string()]).args(debug);
            c
        })
    };
    let mut servers = [start_ours(&ours), start_theirs(&theirs)];
    let library = "#!lua name=lib\nredis.register_function('f', function() return 1 end)";
    let steps: &[&[&str]] = &[
        &["INCR", "n"],
        &["RPUSH", "l", "a"],
        &["FUNCTION", "LOAD", library],
        &["DEBUG", "LOADAOF"],
        &["INCR", "n"],
        &["REPLICAOF", "127.0.0.1", "1"],
        &["DEBUG", "LOADAOF"],
        &["REPLICAOF", "NO", "ONE"],
        &["GET", "n"],
        &["LRANGE", "l", "0", "-1"],
        &["FUNCTION", "LIST"],
    ];
    let mut conns: Vec<Raw> = servers.iter().map(|s| Raw::connect(s.port)).collect();
    for args in steps {
        let a = conns[0].cmd_str(args);
        let b = conns[1].cmd_str(args);
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{args:?}"
        );
    }
    for s in servers.iter_mut() {
        s.kill();
    }
    servers = [start_ours(&ours), start_theirs(&theirs)];
    for args in [&["GET", "n"][..], &["LRANGE", "l", "0", "-1"]] {
        assert_eq!(
            values_of(&servers[0], args),
            values_of(&servers[1], args),
            "{args:?}"
        );
    }
    assert_eq!(values_of(&servers[0], &["GET", "n"]), b"$1\r\n2\r\n");
}

fn values_of(p: &Proc, args: &[&str]) -> Vec<u8> {
    Raw::connect(p.port).cmd_str(args)
}
