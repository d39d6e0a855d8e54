//! The `ferrokv` binary: command line, config files, logging, signals and
//! exit codes, checked against redis-server where both can run.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::config::encode_map;
use crate::support::*;

/// The binary, started in a fresh temp directory so that a save on
/// shutdown (save rules are on by default) never writes into the repo.
fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ferrokv"));
    c.current_dir(temp_dir("cwd"));
    c
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "ferrokv-{tag}-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A ferrokv process, killed on drop.
struct Proc(std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_bin(args: &[&str]) -> (Proc, u16) {
    let (child, port) = spawn_on_free_port(|port| {
        // A config file must come first, as for redis-server.
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.extend([
            "--port".into(),
            port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
        ]);
        let mut c = bin();
        c.args(&all);
        c
    });
    (Proc(child), port)
}

fn wait_exit(p: &mut Proc) -> Option<i32> {
    let mut status = None;
    wait_until(Duration::from_secs(5), || {
        status = p.0.try_wait().ok().flatten();
        status.is_some()
    });
    status.and_then(|s| s.code())
}

#[test]
fn binary_port_flag_and_shutdown_exit_zero() {
    let (mut proc, port) = spawn_bin(&["--save", "", "--hz", "20"]);
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "hz"]),
        encode_map(&["hz", "20"])
    );
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "save"]),
        encode_map(&["save", ""])
    );
    c.send(&encode(&[b"SHUTDOWN", b"NOSAVE"]));
    assert!(c.is_closed());
    assert_eq!(wait_exit(&mut proc), Some(0));
}

#[test]
fn binary_sigterm_and_sigint_exit_zero() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let (mut proc, port) = spawn_bin(&[]);
        let mut c = Raw::connect(port);
        assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(proc.0.id() as i32, sig) };
        assert_eq!(wait_exit(&mut proc), Some(0));
        assert!(c.is_closed());
    }
}

#[test]
fn binary_reads_config_file_with_quotes_include_and_units() {
    let dir = temp_dir("conf");
    let inc = dir.join("extra.conf");
    std::fs::write(&inc, "hz 25\nmaxmemory 512mb\n").expect("write");
    let main = dir.join("main.conf");
    let text = format!(
        "# a comment\n\n  masteruser \"pa ss\\x21\"\ninclude {}\nproto-max-bulk-len 2gb\nsave 100 1\nsave 200 2\nnotify-keyspace-events 'KEA'\nlua-time-limit 777\n",
        inc.display()
    );
    std::fs::write(&main, text).expect("write");
    let (_proc, port) = spawn_bin(&[main.to_str().expect("path")]);
    let mut c = Raw::connect(port);
    for (k, v) in [
        ("masteruser", "pa ss!"),
        ("hz", "25"),
        ("maxmemory", "536870912"),
        ("proto-max-bulk-len", "2147483648"),
        ("save", "100 1 200 2"),
        ("notify-keyspace-events", "AKE"),
        ("busy-reply-threshold", "777"),
    ] {
        assert_eq!(c.cmd_str(&["CONFIG", "GET", k]), encode_map(&[k, v]), "{k}");
    }
    let info = String::from_utf8_lossy(&c.cmd_str(&["INFO", "server"])).into_owned();
    assert!(
        info.contains(&format!(
            "config_file:{}",
            std::fs::canonicalize(&main).expect("path").display()
        )),
        "{info}"
    );
    // requirepass from a file takes effect for new clients.
    let auth = dir.join("auth.conf");
    std::fs::write(&auth, "requirepass 'x y'\n").expect("write");
    let (_proc2, port2) = spawn_bin(&[auth.to_str().expect("path")]);
    assert!(Raw::connect(port2)
        .cmd_str(&["PING"])
        .starts_with(b"-NOAUTH"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn multi_argument_directives_given_as_one_value_are_split_as_redis_splits_them() {
    let args = [
        "--save",
        "900 1",
        "--client-output-buffer-limit",
        "normal 64mb 32mb 10",
    ];
    let (_proc, port) = spawn_bin(&args);
    let redis = spawn_redis_with(&args);
    let (mut ours, mut theirs) = (Raw::connect(port), Raw::connect(redis.port));
    for k in ["save", "client-output-buffer-limit"] {
        let reply = ours.cmd_str(&["CONFIG", "GET", k]);
        assert_eq!(
            String::from_utf8_lossy(&reply),
            String::from_utf8_lossy(&theirs.cmd_str(&["CONFIG", "GET", k])),
        );
    }
    assert_eq!(
        ours.cmd_str(&["CONFIG", "GET", "save"]),
        encode_map(&["save", "900 1"])
    );
    // The same quoting in a config file.
    let dir = temp_dir("multiarg");
    let conf = dir.join("main.conf");
    std::fs::write(
        &conf,
        "client-output-buffer-limit \"pubsub 1mb 512kb 5\"\nsave \"60 5\"\n",
    )
    .expect("write");
    let (_proc, port) = spawn_bin(&[conf.to_str().expect("path")]);
    let mut ours = Raw::connect(port);
    assert_eq!(
        ours.cmd_str(&["CONFIG", "GET", "save"]),
        encode_map(&["save", "60 5"])
    );
    assert_eq!(
        ours.cmd_str(&["CONFIG", "GET", "client-output-buffer-limit"]),
        encode_map(&[
            "client-output-buffer-limit",
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 5"
        ])
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// The TLS switches without certificates: CONFIG SET refuses them as
/// redis-server does, and a start with them stops as Redis's ("Failed to
/// configure TLS", exit 1).
#[test]
fn tls_switches_without_certificates_are_refused_as_redis() {
    let mut p = crate::support::Pair::new();
    for (name, value) in [("tls-replication", "yes"), ("tls-cluster", "yes")] {
        let reply = p.same(&["CONFIG", "SET", name, value]);
        assert!(
            String::from_utf8_lossy(&reply).starts_with(&format!(
                "-ERR CONFIG SET failed (possibly related to argument '{name}') - Unable to update TLS configuration"
            )),
            "{}",
            String::from_utf8_lossy(&reply)
        );
        p.same(&["CONFIG", "GET", name]);
        p.same(&["CONFIG", "SET", name, "no"]);
    }
    for args in [["--tls-replication", "yes"], ["--tls-cluster", "yes"]] {
        let ours = run({
            let mut c = Command::new(env!("CARGO_BIN_EXE_ferrokv"));
            c.args(["--port", "0"]).args(args);
            c
        });
        let theirs = run({
            let mut c = Command::new("redis-server");
            c.args(["--port", "0"]).args(args);
            c
        });
        assert_eq!(ours.0, theirs.0, "{args:?}");
        assert_eq!(ours.0, Some(1), "{args:?}");
        for out in [&ours.1, &theirs.1] {
            assert!(out.contains("No tls-cert-file configured!"), "{out}");
            assert!(
                out.contains("Failed to configure TLS. Check logs for more info."),
                "{out}"
            );
        }
    }
}

/// Runs a binary and returns (exit code, stdout, stderr).
fn run(mut cmd: Command) -> (Option<i32>, String, String) {
    let out = cmd.stdin(Stdio::null()).output().expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_config_reports_like_redis_and_exits_1() {
    let dir = temp_dir("bad");
    let cases: &[(&str, &[&str])] = &[
        ("port 7777\nfoo bar\n", &[]),
        ("databases abc\n", &[]),
        ("port \"7777\n", &[]),
        ("maxmemory 1xb\n", &[]),
        ("loglevel loud\n", &[]),
        ("", &["--foo", "bar"]),
        ("", &["--port"]),
        ("", &["--hz", "abc"]),
        ("dir /nonexistent/dir\n", &[]),
        ("logfile /nonexistent/dir/x.log\n", &[]),
        ("save 10\n", &[]),
        ("bind\n", &[]),
        ("include\n", &[]),
        ("sentinel monitor x\n", &[]),
        ("port 1 2\n", &[]),
    ];
    for (i, (text, extra)) in cases.iter().enumerate() {
        let f = dir.join(format!("bad{i}.conf"));
        std::fs::write(&f, text).expect("write");
        let mut ours = bin();
        ours.arg(&f).args(*extra);
        let mut theirs = Command::new("redis-server");
        theirs.arg(&f).args(*extra);
        let (oc, _, oe) = run(ours);
        let (tc, _, te) = run(theirs);
        assert_eq!(oc, Some(1), "{text:?} {extra:?}");
        assert_eq!(tc, Some(1));
        assert_eq!(oe, te, "{text:?} {extra:?}");
    }
    let (code, _, err) = run({
        let mut c = bin();
        c.arg(dir.join("missing.conf"));
        c
    });
    assert_eq!(code, Some(1));
    assert!(err.contains("Fatal error, can't open config file"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn version_and_help() {
    for flag in ["-v", "--version"] {
        let (code, out, _) = run({
            let mut c = bin();
            c.arg(flag);
            c
        });
        assert_eq!(code, Some(0));
        assert!(out.starts_with("Redis server v=7.0.15 "), "{out}");
        assert!(out.contains(&format!("ferrokv={}", env!("CARGO_PKG_VERSION"))));
    }
    for flag in ["-h", "--help"] {
        let (code, _, err) = run({
            let mut c = bin();
            c.arg(flag);
            c
        });
        assert_eq!(code, Some(1));
        assert!(
            err.starts_with("Usage: ./ferrokv [/path/to/redis.conf] [options] [-]"),
            "{err}"
        );
    }
}

#[test]
fn config_from_stdin() {
    let port = free_port();
    let mut child = bin()
        .args(["-", "--port", &port.to_string(), "--bind", "127.0.0.1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(b"maxmemory 1mb\n").expect("write stdin");
    }
    let mut proc = Proc(child);
    assert!(wait_until(Duration::from_secs(5), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    }));
    let mut c = Raw::connect(port);
    assert_eq!(
        c.cmd_str(&["CONFIG", "GET", "maxmemory"]),
        encode_map(&["maxmemory", "1048576"])
    );
    c.send(&encode(&[b"SHUTDOWN"]));
    assert_eq!(wait_exit(&mut proc), Some(0));
}

#[test]
fn config_rewrite_round_trips_through_the_file() {
    let dir = temp_dir("rewrite");
    let f = dir.join("r.conf");
    std::fs::write(&f, "# keep me\nhz 15\nsave 100 1\nsave 200 2\n").expect("write");
    let path = f.to_str().expect("path");
    let (mut proc, port) = spawn_bin(&[path]);
    let mut c = Raw::connect(port);
    assert_eq!(
        c.cmd_str(&[
            "CONFIG",
            "SET",
            "maxmemory",
            "2mb",
            "hz",
            "30",
            "requirepass",
            "a b"
        ]),
        b"+OK\r\n"
    );
    assert_eq!(c.cmd_str(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    c.send(&encode(&[b"SHUTDOWN"]));
    assert_eq!(wait_exit(&mut proc), Some(0));
    let text = std::fs::read_to_string(&f).expect("read");
    assert!(text.starts_with("# keep me\nhz 30\n"), "{text}");
    let (_proc, port) = spawn_bin(&[path]);
    let mut c = Raw::connect(port);
    assert!(c.cmd_str(&["PING"]).starts_with(b"-NOAUTH"));
    // The rewrite wrote the default user's line with the password's hash;
    // users load after requirepass, so it still needs the password, as in
    // Redis.
    let (_proc3, port3) = spawn_bin(&[path, "--requirepass", ""]);
    let mut c = Raw::connect(port3);
    assert!(c.cmd_str(&["PING"]).starts_with(b"-NOAUTH"));
    assert_eq!(c.cmd_str(&["AUTH", "a b"]), b"+OK\r\n");
    assert!(text.contains("\nuser default on #c8687a08aa5d6ed2044328fa6a697ab8e96dc34291e8c2034ae8c38e6fcc6d65 ~* &* +@all\n"), "{text}");
    for (k, v) in [
        ("maxmemory", "2097152"),
        ("hz", "30"),
        ("save", "100 1 200 2"),
    ] {
        assert_eq!(c.cmd_str(&["CONFIG", "GET", k]), encode_map(&[k, v]), "{k}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn logfile_and_loglevel() {
    let dir = temp_dir("log");
    for (level, expect_ready) in [("notice", true), ("warning", false)] {
        let log = dir.join(format!("{level}.log"));
        let pid = dir.join(format!("{level}.pid"));
        let (mut proc, port) = spawn_bin(&[
            "--logfile",
            log.to_str().expect("path"),
            "--loglevel",
            level,
            "--pidfile",
            pid.to_str().expect("path"),
        ]);
        // Written once the ports are bound, as Redis's createPidFile: a
        // client may connect a moment before it is there, and the file
        // exists a moment before its line is written.
        assert!(wait_until(Duration::from_secs(10), || {
            std::fs::read_to_string(&pid).is_ok_and(|s| s.ends_with('\n'))
        }));
        let written = std::fs::read_to_string(&pid).expect("pidfile written");
        assert_eq!(written.trim(), proc.0.id().to_string());
        let mut c = Raw::connect(port);
        assert_eq!(
            c.cmd_str(&["CONFIG", "GET", "loglevel"]),
            encode_map(&["loglevel", level])
        );
        c.send(&encode(&[b"SHUTDOWN"]));
        assert_eq!(wait_exit(&mut proc), Some(0));
        assert!(!pid.exists(), "pidfile removed at exit");
        let text = std::fs::read_to_string(&log).expect("log written");
        assert_eq!(
            text.contains("Ready to accept connections"),
            expect_ready,
            "{text}"
        );
        assert!(text.contains("User requested shutdown"), "{text}");
        assert_eq!(
            text.contains(&format!("port={port}")),
            expect_ready,
            "{text}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn acl_startup_errors_stop_the_server_as_in_redis() {
    let dir = temp_dir("aclstart");
    let aclfile = dir.join("users.acl");
    std::fs::write(&aclfile, "user a on nopass ~* +@all\n").expect("write");
    let acl = aclfile.display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--user", "bob", "on", "--aclfile", &acl],
            "please define either an ACL file or declare users directly in your redis.conf, but not both",
        ),
        (
            &["--user", "bob", "on", "+nosuch"],
            "Error loading ACL rule '+nosuch' for the user named 'bob': Unknown command or category name in ACL",
        ),
    ];
    for (args, message) in cases {
        for server in [bin(), Command::new("redis-server")] {
            let mut cmd = server;
            let port = crate::support::free_port().to_string();
            cmd.args(["--port", &port]).args(*args);
            let (code, out, err) = run(cmd);
            assert_eq!(code, Some(1), "{args:?}");
            assert!(
                out.contains(message) || err.contains(message),
                "{args:?}: {out}{err}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The log reads like redis-server's: `pid:role dd Mon yyyy HH:MM:SS.mmm
/// level message`, with its start-up lines, the banner with `always-show-
/// logo`, `Ready to accept connections` and a replica's role letter.
#[test]
fn the_log_reads_like_redis() {
    let dir = temp_dir("logformat");
    let log = dir.join("log");
    let path = log.display().to_string();
    let (mut p, port) = spawn_bin(&["--logfile", &path, "--always-show-logo", "yes"]);
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd_str(&["REPLICAOF", "127.0.0.1", "1"]), b"+OK\r\n");
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(wait_until(Duration::from_secs(5), || text()
        .contains("Connecting to MASTER")));
    drop(c);
    let _ = p.0.kill();
    let _ = wait_exit(&mut p);
    let text = text();
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mut roles = String::new();
    for line in text.lines().filter(|l| {
        l.contains(':')
            && l.split(':')
                .next()
                .is_some_and(|p| p.parse::<u32>().is_ok())
    }) {
        let (pid, rest) = line.split_once(':').expect("pid:");
        assert_eq!(pid, p.0.id().to_string(), "{line}");
        let b = rest.as_bytes();
        assert!(b"MSC".contains(&b[0]) && b[1] == b' ', "{line}");
        roles.push(b[0] as char);
        let (day, month, year, time) = (&rest[2..4], &rest[5..8], &rest[9..13], &rest[14..26]);
        assert!(
            day.parse::<u8>().is_ok() && months.contains(&month) && year.parse::<u16>().is_ok(),
            "{line}"
        );
        assert!(
            time.as_bytes()[2] == b':' && time.as_bytes()[8] == b'.',
            "{line}"
        );
        assert!(b".-*#".contains(&b[27]) && b[28] == b' ', "{line}");
    }
    assert!(
        roles.starts_with('C') && roles.contains('M') && roles.ends_with('S'),
        "{roles}\n{text}"
    );
    assert!(text.contains(" * Ready to accept connections\n"), "{text}");
    assert!(text.contains(&format!("Port: {port}")), "{text}");
    assert!(
        text.contains(" # Configuration loaded") || text.contains("no config file specified"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `syslog-enabled`: each message also goes to syslog with the ident,
/// facility, pid and priority redis-server uses. The test stands in for
/// the system logger on /dev/log when the machine has none (CI's and
/// these machines'); with a logger running there it cannot listen in, and
/// checks only that the server runs and logs with syslog on.
#[test]
fn syslog_gets_the_messages_redis_sends() {
    use std::os::unix::net::UnixDatagram;
    let args = [
        "--syslog-enabled",
        "yes",
        "--syslog-ident",
        "kvtest",
        "--syslog-facility",
        "local3",
        "--save",
        "",
    ];
    let Ok(sock) = UnixDatagram::bind("/dev/log") else {
        let (mut p, port) = spawn_bin(&args);
        assert_eq!(Raw::connect(port).cmd_str(&["PING"]), b"+PONG\r\n");
        let _ = p.0.kill();
        return;
    };
    // Both servers' messages arrive while they run: read them as they come
    // (a datagram socket's queue is short and senders wait on it).
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = {
        let sock = sock.try_clone().expect("clone");
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = sock.recv(&mut buf) {
                if n == 0
                    || tx
                        .send(String::from_utf8_lossy(&buf[..n]).into_owned())
                        .is_err()
                {
                    break;
                }
            }
        })
    };
    let mut got = Vec::new();
    for program in [env!("CARGO_BIN_EXE_ferrokv"), "redis-server"] {
        let (child, port) = spawn_on_free_port(|port| {
            let mut c = Command::new(program);
            c.current_dir(temp_dir("syslog"));
            c.args(args)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"]);
            c
        });
        let mut p = Proc(child);
        assert_eq!(Raw::connect(port).cmd_str(&["PING"]), b"+PONG\r\n");
        let pid = p.0.id();
        let mut lines = Vec::new();
        let ready = wait_until(Duration::from_secs(10), || {
            while let Ok(l) = rx.try_recv() {
                lines.push(l);
            }
            lines
                .iter()
                .any(|l| l.contains("Ready to accept connections"))
        });
        assert!(ready, "{program}: {lines:?}");
        // local3 (19) * 8 + notice (5); the pid in brackets; the bare
        // message.
        let want = format!("kvtest[{pid}]: Ready to accept connections");
        let line = lines
            .iter()
            .find(|l| l.ends_with(&want))
            .unwrap_or_else(|| panic!("{program}: no {want:?} in {lines:?}"));
        assert!(line.starts_with("<157>"), "{line}");
        got.push(lines.iter().any(|l| l.starts_with("<156>")));
        terminate(&mut p);
    }
    // Warnings at LOG_WARNING on both.
    assert_eq!(got, [true, true]);
    let _ = std::fs::remove_file("/dev/log");
    // Wakes the reader from its recv.
    let _ = sock.shutdown(std::net::Shutdown::Both);
    let _ = reader.join();
}

fn terminate(p: &mut Proc) {
    let _ = Command::new("kill").arg(p.0.id().to_string()).status();
    assert_eq!(wait_exit(p), Some(0));
}
