//! The process directives, as a service manager sees them: `daemonize`
//! (the command returns, a pid file names the server), `supervised
//! systemd` (sd_notify lines on `$NOTIFY_SOCKET`), each checked on the
//! real binary.

use std::io::{Read, Write};
use std::os::unix::net::UnixDatagram;
use std::process::Command;
use std::time::Duration;

use crate::support::{
    encode, free_port, spawn_on_free_port, unique_temp_path, wait_exit, wait_until, Raw,
};

/// `daemonize yes`: the command exits 0 at once, the server runs on in
/// the background under the pid the pid file names, and removes the file
/// at SHUTDOWN.
#[test]
fn daemonize_returns_and_writes_the_pid_file() {
    let dir = unique_temp_path("ferrokv-daemon");
    std::fs::create_dir_all(&dir).expect("dir");
    let pidfile = dir.join("ferrokv.pid");
    // Another test may take the port first: the daemon then exits without
    // a pid file, and another port is tried.
    let mut started = None;
    for _ in 0..5 {
        let port = free_port();
        let status = Command::new(env!("CARGO_BIN_EXE_ferrokv"))
            .args(["--daemonize", "yes", "--save", "", "--bind", "127.0.0.1"])
            .args(["--port", &port.to_string()])
            .args(["--pidfile", &pidfile.display().to_string()])
            .args(["--dir", &dir.display().to_string()])
            .status()
            .expect("runs");
        assert!(status.success(), "the command returns 0 at once");
        // The file is created, then the pid written: wait for a pid.
        let holds_pid = || {
            std::fs::read_to_string(&pidfile)
                .is_ok_and(|t| t.ends_with('\n') && t.trim().parse::<i32>().is_ok())
        };
        if wait_until(Duration::from_secs(10), holds_pid) {
            started = Some(port);
            break;
        }
    }
    let port = started.expect("a daemon started");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .expect("pid file")
        .trim()
        .parse()
        .expect("a pid");
    let mut c = Raw::connect(port);
    let info = String::from_utf8_lossy(&c.cmd_str(&["INFO", "server"])).into_owned();
    assert!(info.contains(&format!("process_id:{pid}\r\n")), "{info}");
    c.send(b"SHUTDOWN NOSAVE\r\n");
    assert!(wait_until(Duration::from_secs(10), || !pidfile.exists()));
    let _ = std::fs::remove_dir_all(dir);
}

/// `supervised systemd`: loading, ready and stopping reach the notify
/// socket as Redis sends them, and the server stays in the foreground
/// even with `daemonize yes`.
#[test]
fn supervised_systemd_notifies_readiness() {
    let dir = unique_temp_path("ferrokv-notify");
    std::fs::create_dir_all(&dir).expect("dir");
    let sock_path = dir.join("notify");
    let sock = UnixDatagram::bind(&sock_path).expect("bind");
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferrokv"))
        .args([
            "--supervised",
            "systemd",
            "--daemonize",
            "yes",
            "--save",
            "",
        ])
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--dir", &dir.display().to_string()])
        .env("NOTIFY_SOCKET", &sock_path)
        .spawn()
        .expect("runs");
    let next = || {
        let mut buf = [0u8; 256];
        let n = sock.recv(&mut buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    assert_eq!(next(), "STATUS=Redis is loading...\n");
    assert_eq!(next(), "STATUS=Ready to accept connections\n");
    assert_eq!(next(), "READY=1\n");
    assert!(
        child.try_wait().expect("wait").is_none(),
        "stays in the foreground"
    );
    let mut c = Raw::connect(port);
    c.send(b"SHUTDOWN NOSAVE\r\n");
    assert_eq!(next(), "STOPPING=1\n");
    assert!(child.wait().expect("exits").success());
    let _ = std::fs::remove_dir_all(dir);
}

/// A replica supervised by systemd reports its syncs as Redis's: after
/// "Ready to accept connections in read-only mode. Waiting for MASTER <->
/// REPLICA sync" and READY=1, a status line when the full sync finished
/// and one when a partial resync was accepted (redisCommunicateSystemd).
/// Compared with a redis-server replica of the same master.
#[test]
fn a_supervised_replica_reports_its_syncs_to_systemd_as_redis() {
    let master = crate::support::spawn_redis_with(&["--repl-diskless-sync-delay", "0"]);
    let run = |program: &str| {
        let dir = unique_temp_path("ferrokv-notify-replica");
        std::fs::create_dir_all(&dir).expect("dir");
        let sock_path = dir.join("notify");
        let sock = UnixDatagram::bind(&sock_path).expect("bind");
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let master_port = master.port.to_string();
        let (mut child, port) = spawn_on_free_port(|port| {
            let mut c = Command::new(program);
            c.args(["--supervised", "systemd", "--save", ""])
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args(["--dir", &dir.display().to_string()])
                .args(["--replicaof", "127.0.0.1", &master_port])
                .env("NOTIFY_SOCKET", &sock_path);
            c
        });
        let next = || {
            let mut buf = [0u8; 256];
            let n = sock.recv(&mut buf).expect("a notification");
            String::from_utf8_lossy(&buf[..n]).into_owned()
        };
        let mut got: Vec<String> = (0..4).map(|_| next()).collect();
        let mut c = Raw::connect(port);
        assert_eq!(c.cmd_str(&["CLIENT", "KILL", "TYPE", "master"]), b":1\r\n");
        got.push(next());
        c.send(b"SHUTDOWN NOSAVE\r\n");
        got.push(next());
        assert!(wait_exit(&mut child, Duration::from_secs(10)).is_some());
        let _ = std::fs::remove_dir_all(dir);
        got
    };
    let ours = run(env!("CARGO_BIN_EXE_ferrokv"));
    assert_eq!(
        ours[3],
        "STATUS=MASTER <-> REPLICA sync: Finished with success. Ready to accept connections in read-write mode.\n"
    );
    assert_eq!(ours, run("redis-server"));
}

/// `watchdog-period`: a period under two cron periods reads back raised
/// as Redis raises it; when the executor is stuck (DEBUG SLEEP 1) the log
/// gets one "WATCHDOG TIMER EXPIRED" report with the executor's stack
/// (the DEBUG handler, `debugCommand`, in it), and the server answers on.
#[test]
fn watchdog_logs_the_stuck_executors_stack() {
    let dir = unique_temp_path("ferrokv-watchdog");
    std::fs::create_dir_all(&dir).expect("dir");
    let log = dir.join("log");
    let log_arg = log.display().to_string();
    let ours = crate::aof::launch(|port| {
        let mut c = crate::support::server_command(env!("CARGO_BIN_EXE_ferrokv"), port);
        c.args(["--logfile", &log_arg, "--enable-debug-command", "yes"]);
        c
    });
    let theirs = crate::support::spawn_redis();
    for port in [ours.port, theirs.port] {
        let mut c = Raw::connect(port);
        assert_eq!(
            c.cmd_str(&["CONFIG", "SET", "watchdog-period", "50"]),
            b"+OK\r\n"
        );
        assert_eq!(
            c.cmd_str(&["CONFIG", "GET", "watchdog-period"]),
            b"*2\r\n$15\r\nwatchdog-period\r\n$3\r\n200\r\n"
        );
    }
    let mut c = Raw::connect(ours.port);
    assert_eq!(c.cmd_str(&["DEBUG", "SLEEP", "1"]), b"+OK\r\n");
    assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        wait_until(Duration::from_secs(5), || text().contains("debugCommand")),
        "{}",
        text()
    );
    assert_eq!(text().matches("--- WATCHDOG TIMER EXPIRED ---").count(), 1);
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "watchdog-period", "0"]),
        b"+OK\r\n"
    );
    assert_eq!(c.cmd_str(&["DEBUG", "SLEEP", "0.5"]), b"+OK\r\n");
    assert_eq!(text().matches("--- WATCHDOG TIMER EXPIRED ---").count(), 1);
    let _ = std::fs::remove_dir_all(dir);
}

/// The binary of the server named `name` ("ferrokv" or "redis").
fn executable(name: &str) -> &'static str {
    if name == "ferrokv" {
        env!("CARGO_BIN_EXE_ferrokv")
    } else {
        "redis-server"
    }
}

/// The process's command line as `ps` reads it, split on spaces.
fn cmdline(pid: i32) -> Vec<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .split(['\0', ' '])
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The child processes of `pid`.
fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if ppid == Some(pid) {
            out.extend(entry.file_name().to_string_lossy().parse::<i32>().ok());
        }
    }
    out
}

/// `set-proc-title` and `proc-title-template`: the command line reads as
/// redis-server's (the executable as run, then the listening address) at
/// start, after CONFIG SET of a template naming every variable, and in a
/// background save's child ("redis-rdb-bgsave ..."); a bad template gets
/// Redis's error.
#[test]
fn process_title_follows_the_template_as_redis() {
    // A directory of its own: the save child killed below leaves its temp
    // file behind, as Redis's does.
    let dir = crate::persist::data::TempDir::new("proc-title");
    let ours = crate::aof::launch(|port| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ferrokv"));
        c.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--enable-debug-command", "yes", "--dir", &dir.s()]);
        c
    });
    let theirs = crate::support::spawn_redis_with(&["--enable-debug-command", "yes"]);
    let mut seen = Vec::new();
    for port in [ours.port, theirs.port] {
        let mut c = Raw::connect(port);
        let info = String::from_utf8_lossy(&c.cmd_str(&["INFO", "server"])).into_owned();
        let pid: i32 = info
            .lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .and_then(|p| p.trim().parse().ok())
            .expect("process_id");
        // The executable's path differs; the rest must not.
        let shape = |mut words: Vec<String>, at: usize| {
            if let Some(w) = words.get_mut(at) {
                *w = "EXE".into();
            }
            words
                .into_iter()
                .map(|w| w.replace(&port.to_string(), "PORT"))
                .collect::<Vec<String>>()
        };
        let mut steps = vec![shape(cmdline(pid), 0)];
        assert_eq!(
            c.cmd_str(&[
                "CONFIG",
                "SET",
                "proc-title-template",
                "TEST {title} {listen-addr} {port} {tls-port} {unixsocket} {config-file}"
            ]),
            b"+OK\r\n"
        );
        steps.push(shape(cmdline(pid), 1));
        let bad = c.cmd_str(&["CONFIG", "SET", "proc-title-template", "{invalid-var}"]);
        steps.push(vec![String::from_utf8_lossy(&bad).into_owned()]);
        assert_eq!(c.cmd_str(&["DEBUG", "POPULATE", "2000"]), b"+OK\r\n");
        assert_eq!(
            c.cmd_str(&["CONFIG", "SET", "rdb-key-save-delay", "10000"]),
            b"+OK\r\n"
        );
        assert_eq!(c.cmd_str(&["BGSAVE"]), b"+Background saving started\r\n");
        // A forked child shows its parent's title until it sets its own:
        // wait for the child's title, not only for the child.
        let mut kids = Vec::new();
        assert!(wait_until(Duration::from_secs(5), || {
            kids = children(pid);
            kids.len() == 1 && cmdline(kids[0]).iter().any(|w| w == "redis-rdb-bgsave")
        }));
        steps.push(shape(cmdline(kids[0]), 2));
        // SAFETY: kill(2) of the save child this test started.
        unsafe { libc::kill(kids[0], libc::SIGKILL) };
        seen.push(steps);
    }
    assert_eq!(seen[0][0], ["EXE", "127.0.0.1:PORT"]);
    assert_eq!(seen[0], seen[1]);
}

/// `dir` takes effect as the file is read, as Redis's chdir: a relative
/// `logfile` and `pidfile` after it land inside it, for ferrokv as for
/// redis-server.
#[test]
fn relative_files_after_dir_land_inside_it() {
    let root = unique_temp_path("ferrokv-dir-first");
    for name in ["ferrokv", "redis"] {
        let sub = root.join(name);
        std::fs::create_dir_all(&sub).expect("dir");
        let conf = root.join(format!("{name}.conf"));
        let port = free_port();
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\nsave \"\"\ndir ./{name}\nlogfile log.txt\npidfile server.pid\n"
            ),
        )
        .expect("conf");
        let exe = executable(name);
        let mut child = Command::new(exe)
            .arg(&conf)
            .current_dir(&root)
            .spawn()
            .expect("starts");
        let ok = wait_until(Duration::from_secs(10), || {
            sub.join("server.pid").exists()
                && std::fs::read_to_string(sub.join("log.txt"))
                    .is_ok_and(|t| t.contains("eady to accept connections"))
        });
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            ok,
            "{name}: {:?}",
            std::fs::read_dir(&sub).map(|d| d.count())
        );
        assert!(!root.join("log.txt").exists(), "{name}");
    }
    let _ = std::fs::remove_dir_all(root);
}

/// `unixsocket` and `unixsocketperm`: the socket file carries the
/// permissions, clients connected through it show as Redis shows them
/// (CLIENT INFO `addr`/`laddr` `<path>:0` and flag U, MONITOR's
/// `unix:<path>`), `redis-cli -s` works, and SHUTDOWN removes the file.
#[test]
fn unix_socket_serves_clients_as_redis() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixStream;
    let root = unique_temp_path("ferrokv-unixsocket");
    std::fs::create_dir_all(&root).expect("dir");
    let mut seen = Vec::new();
    for name in ["ferrokv", "redis"] {
        let path = root.join(format!("{name}.sock"));
        let path_s = path.display().to_string();
        let exe = executable(name);
        let mut child = Command::new(exe)
            .args(["--port", &free_port().to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--unixsocket",
                &path_s,
                "--unixsocketperm",
                "700",
            ])
            .current_dir(&root)
            .spawn()
            .expect("starts");
        let connect = || UnixStream::connect(&path);
        assert!(
            wait_until(Duration::from_secs(10), || connect().is_ok()),
            "{name}"
        );
        let mode = std::fs::metadata(&path)
            .expect("socket")
            .permissions()
            .mode()
            & 0o777;
        let mut c = connect().expect("connect");
        c.write_all(b"CLIENT INFO\r\n").expect("write");
        let mut r = BufReader::new(c.try_clone().expect("clone"));
        let mut line = String::new();
        r.read_line(&mut line).expect("header");
        line.clear();
        r.read_line(&mut line).expect("info");
        let info: Vec<String> = line
            .split(' ')
            .filter(|f| {
                ["addr=", "laddr=", "flags="]
                    .iter()
                    .any(|p| f.starts_with(p))
            })
            .map(|f| f.replace(&path_s, "PATH"))
            .collect();
        // MONITOR shows the unix client's commands.
        let mut m = connect().expect("connect");
        m.write_all(b"MONITOR\r\n").expect("write");
        let mut mr = BufReader::new(m.try_clone().expect("clone"));
        let mut ok = String::new();
        mr.read_line(&mut ok).expect("+OK");
        c.write_all(b"SET k v\r\n").expect("write");
        line.clear();
        r.read_line(&mut line).expect("+OK");
        let mut mon = String::new();
        mr.read_line(&mut mon).expect("monitor line");
        let mon = mon[mon.find('[').unwrap_or(0)..].replace(&path_s, "PATH");
        let cli = Command::new("redis-cli")
            .args(["-s", &path_s, "GET", "k"])
            .output()
            .expect("redis-cli");
        c.write_all(b"SHUTDOWN NOSAVE\r\n").expect("write");
        let _ = child.wait();
        seen.push((
            mode,
            info,
            mon,
            String::from_utf8_lossy(&cli.stdout).into_owned(),
            path.exists(),
        ));
    }
    assert_eq!(
        seen[0].1,
        ["addr=PATH:0", "laddr=PATH:0", "flags=U"],
        "{:?}",
        seen[0]
    );
    assert_eq!(seen[0], seen[1]);
    let _ = std::fs::remove_dir_all(root);
}

/// A signal's shutdown waits for the cron: with DEBUG PAUSE-CRON 1 it is
/// pending, SHUTDOWN ABORT cancels it ("Shutdown manually aborted"), and
/// without one pending ABORT is refused. A second SIGINT while the final
/// save runs ends the process at once and removes the save's temp file
/// ("You insist... exiting now."). As redis-server, side by side.
#[test]
fn signal_shutdown_can_be_aborted_or_insisted_on_as_redis() {
    let root = unique_temp_path("ferrokv-sigabort");
    for name in ["ferrokv", "redis"] {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).expect("dir");
        let log = dir.join("log");
        let exe = executable(name);
        let port = free_port();
        let mut child = Command::new(exe)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--enable-debug-command", "yes"])
            .args(["--dir", &dir.display().to_string()])
            .args(["--logfile", &log.display().to_string()])
            .spawn()
            .expect("starts");
        let pid = child.id() as i32;
        assert!(wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        }));
        let mut c = Raw::connect(port);
        let text = || std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(
            c.cmd_str(&["SHUTDOWN", "ABORT"]),
            b"-ERR No shutdown in progress.\r\n",
            "{name}"
        );
        assert_eq!(c.cmd_str(&["DEBUG", "PAUSE-CRON", "1"]), b"+OK\r\n");
        // SAFETY: kill(2) of the server this test started.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        assert!(wait_until(Duration::from_secs(5), || text()
            .contains("Received SIGTERM scheduling shutdown")));
        assert_eq!(c.cmd_str(&["SHUTDOWN", "ABORT"]), b"+OK\r\n", "{name}");
        assert!(text().contains("Shutdown manually aborted"), "{name}");
        assert_eq!(c.cmd_str(&["DEBUG", "PAUSE-CRON", "0"]), b"+OK\r\n");
        assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n", "{name}");
        // A slow final save, interrupted by a second SIGINT.
        for i in 0..20 {
            c.cmd_str(&["SET", &i.to_string(), "v"]);
        }
        assert_eq!(
            c.cmd_str(&["CONFIG", "SET", "rdb-key-save-delay", "100000"]),
            b"+OK\r\n"
        );
        assert_eq!(c.cmd_str(&["CONFIG", "SET", "save", "900 1"]), b"+OK\r\n");
        let temp = dir.join(format!("temp-{pid}.rdb"));
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGINT) };
        assert!(
            wait_until(Duration::from_secs(5), || temp.exists()),
            "{name}"
        );
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGINT) };
        assert!(
            wait_until(Duration::from_secs(5), || !temp.exists()),
            "{name}"
        );
        let status = child.wait().expect("exits");
        assert_eq!(status.code(), Some(1), "{name}");
        assert!(text().contains("You insist... exiting now."), "{name}");
    }
    let _ = std::fs::remove_dir_all(root);
}

/// `crash-log-enabled` and `use-exit-on-panic` as in Redis: DEBUG PANIC
/// writes the stack trace only with the crash log on and ends in abort(),
/// or exit status 1 with use-exit-on-panic; DEBUG SEGFAULT without the
/// crash log dies of the signal with nothing written.
#[test]
fn crash_directives_act_like_redis() {
    use std::os::unix::process::ExitStatusExt;
    let run = |program: &str, extra: &[&str], cmd: &str| -> (Option<i32>, Option<i32>, bool) {
        let dir = unique_temp_path("ferrokv-crash");
        std::fs::create_dir_all(&dir).expect("dir");
        let log = dir.join("log.txt");
        let (mut child, port) = spawn_on_free_port(|port| {
            let mut c = crate::support::server_command(program, port);
            c.args(["--enable-debug-command", "yes"])
                .args(["--logfile", log.to_str().expect("utf-8 path")])
                .args(extra);
            c
        });
        let mut r = Raw::connect(port);
        r.send(&encode(&[b"DEBUG", cmd.as_bytes()]));
        let status = wait_exit(&mut child, Duration::from_secs(20)).expect("it ends");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        (
            status.code(),
            status.signal(),
            text.contains("------ STACK TRACE ------"),
        )
    };
    for (extra, cmd) in [
        (&["--crash-log-enabled", "no"][..], "PANIC"),
        (&["--use-exit-on-panic", "yes"], "PANIC"),
        (&["--crash-log-enabled", "no"], "SEGFAULT"),
    ] {
        let ours = run(env!("CARGO_BIN_EXE_ferrokv"), extra, cmd);
        let theirs = run("redis-server", extra, cmd);
        assert_eq!(ours, theirs, "{extra:?} DEBUG {cmd}");
    }
}

/// Redis's "Crash report generated on SIGABRT": a fatal signal sent from
/// outside, while the event loop waits, writes the crash report and the
/// process dies of the signal, as redis-server does. (The report read the
/// network's state that the waiting loop held, failed, and the process
/// died with nothing written.)
#[test]
fn a_fatal_signal_from_outside_writes_the_crash_report_as_redis() {
    use std::os::unix::process::ExitStatusExt;
    let run = |program: &str, sig: libc::c_int| -> (Option<i32>, bool, bool) {
        let dir = unique_temp_path("ferrokv-signal");
        std::fs::create_dir_all(&dir).expect("dir");
        let log = dir.join("log.txt");
        let (mut child, port) = spawn_on_free_port(|port| {
            let mut c = crate::support::server_command(program, port);
            c.args(["--logfile", log.to_str().expect("utf-8 path")])
                .args(["--crash-memcheck-enabled", "no"]);
            c
        });
        let mut r = Raw::connect(port);
        assert_eq!(r.cmd_str(&["PING"]), b"+PONG\r\n");
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let status = wait_exit(&mut child, Duration::from_secs(20)).expect("it ends");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        (
            status.signal(),
            text.contains("------ STACK TRACE ------"),
            text.contains(&format!("crashed by signal: {sig}")),
        )
    };
    for sig in [libc::SIGABRT, libc::SIGSEGV] {
        let ours = run(env!("CARGO_BIN_EXE_ferrokv"), sig);
        let theirs = run("redis-server", sig);
        assert_eq!(ours, theirs, "signal {sig}");
        assert_eq!(ours, (Some(sig), true, true), "signal {sig}");
    }
}

/// A replica loading its master's snapshot from the socket
/// (`repl-diskless-load on-empty-db`) runs no cron, as Redis's does not
/// while it loads: a load longer than `watchdog-period` logs the watchdog's
/// report, and the load goes on (Redis's "replica can handle EINTR if use
/// diskless load"). Side by side with a redis-server replica; the master
/// is redis-server, slowed by `rdb-key-save-delay`.
#[test]
fn watchdog_expires_during_a_diskless_load() {
    for replica_kind in ["ferrokv", "redis"] {
        let master = crate::support::spawn_redis_with(&["--enable-debug-command", "yes"]);
        let mut m = Raw::connect(master.port);
        assert_eq!(
            m.cmd_str(&["DEBUG", "POPULATE", "100", "master", "100000"]),
            b"+OK\r\n"
        );
        for (k, v) in [
            ("rdbcompression", "no"),
            ("repl-diskless-sync", "yes"),
            ("repl-diskless-sync-delay", "0"),
            ("rdb-key-save-delay", "10000"),
        ] {
            assert_eq!(m.cmd_str(&["CONFIG", "SET", k, v]), b"+OK\r\n");
        }
        let dir = unique_temp_path("ferrokv-watchdog-load");
        std::fs::create_dir_all(&dir).expect("dir");
        let log = dir.join("log");
        let log_arg = log.display().to_string();
        let dir_arg = dir.display().to_string();
        let args = ["--logfile", &log_arg, "--dir", &dir_arg];
        let (_ours, _theirs, port) = if replica_kind == "ferrokv" {
            let p = crate::aof::launch(|port| {
                let mut c = crate::support::server_command(env!("CARGO_BIN_EXE_ferrokv"), port);
                c.args(args);
                c
            });
            let port = p.port;
            (Some(p), None, port)
        } else {
            let r = crate::support::spawn_redis_with(&args);
            let port = r.port;
            (None, Some(r), port)
        };
        let mut r = Raw::connect(port);
        for (k, v) in [
            ("repl-diskless-load", "on-empty-db"),
            ("watchdog-period", "200"),
        ] {
            assert_eq!(r.cmd_str(&["CONFIG", "SET", k, v]), b"+OK\r\n");
        }
        assert_eq!(
            r.cmd_str(&["REPLICAOF", "127.0.0.1", &master.port.to_string()]),
            b"+OK\r\n"
        );
        let text = || std::fs::read_to_string(&log).unwrap_or_default();
        let loading_from = || text().find("Loading DB in memory");
        assert!(
            wait_until(Duration::from_secs(10), || loading_from().is_some()),
            "{replica_kind}: {}",
            text()
        );
        assert!(
            wait_until(Duration::from_secs(10), || {
                let t = text();
                loading_from().is_some_and(|at| t[at..].contains("WATCHDOG TIMER EXPIRED"))
            }),
            "{replica_kind}: {}",
            text()
        );
        let info = String::from_utf8_lossy(&r.cmd_str(&["INFO", "persistence"])).into_owned();
        assert!(info.contains("loading:1\r\n"), "{replica_kind}: {info}");
        assert!(!text().contains("Reconnecting to MASTER"), "{replica_kind}");
        // The replica is killed mid-load with its directory gone.
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// CPU ticks (user and system) in a /proc `stat` file.
fn cpu_ticks(stat_path: &str) -> u64 {
    let stat = std::fs::read_to_string(stat_path).expect("a stat file");
    // Fields after the parenthesized name: state is the first, utime the
    // 12th and stime the 13th.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(11) + field(12)
}

/// The event loop runs on the process's main thread, as Redis's: the
/// kernel hands a signal sent to the process (SIGSTOP above all) to the
/// main thread, so the thread that serves is the one it stops at once.
/// Served from another thread while the main thread idled, a replica the
/// suite stopped went on acknowledging writes until the main thread was
/// next scheduled (unit/wait under load). The main thread's CPU time shows
/// who serves, in both servers; a stopped server answers only once
/// continued.
#[test]
fn the_main_thread_serves_and_a_stop_signal_stops_it() {
    let ours = crate::support::spawn_ferrokv_process();
    let theirs = crate::support::spawn_redis();
    for (port, pid, who) in [
        (ours.port, ours.pid(), "ferrokv"),
        (theirs.port, theirs.pid(), "redis-server"),
    ] {
        // With I/O threads (scripts/test-io-threads.sh) the network's work
        // is shared out, in both servers.
        if crate::support::test_io_threads().is_none() {
            let mut c = Raw::connect(port);
            let pipeline = encode(&[b"PING"]).repeat(10_000);
            for _ in 0..100 {
                c.send(&pipeline);
                for _ in 0..10_000 {
                    assert_eq!(c.read_reply(), b"+PONG\r\n");
                }
            }
            let main = cpu_ticks(&format!("/proc/{pid}/task/{pid}/stat"));
            let all = cpu_ticks(&format!("/proc/{pid}/stat"));
            assert!(
                all > 0 && main * 2 >= all,
                "{who}: the main thread took {main} of the process's {all} ticks"
            );
        }

        let mut sock = Raw::connect(port).into_stream();
        // SAFETY: kill(2) on the server process this test started.
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGSTOP) }, 0);
        sock.write_all(&encode(&[b"PING"])).expect("write");
        sock.set_read_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let mut reply = [0u8; 7];
        assert!(
            sock.read(&mut reply).is_err(),
            "{who}: answered while stopped"
        );
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGCONT) }, 0);
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        sock.read_exact(&mut reply)
            .expect("the reply once continued");
        assert_eq!(&reply, b"+PONG\r\n", "{who}");
    }
}

/// The logo (or the "Running mode" line) is logged once the ports are
/// open, as Redis's redisAsciiArt after initServer: the suite takes the
/// logo's PID line for a server that listens and connects at once. Each
/// server here is connected to the moment its PID line is read; and only
/// one of the two forms is logged, the logo with the server's mode.
#[test]
fn the_logo_is_logged_once_the_port_listens() {
    for (logo, cluster) in [("yes", "no"), ("yes", "yes"), ("no", "no")] {
        let dir = unique_temp_path("ferrokv-logo");
        std::fs::create_dir_all(&dir).expect("dir");
        let port = free_port();
        let (_server, lines) = crate::support::spawn_lines(
            Command::new(env!("CARGO_BIN_EXE_ferrokv"))
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--dir", &dir.display().to_string()])
                .args(["--always-show-logo", logo, "--cluster-enabled", cluster]),
        );
        let mut seen = Vec::new();
        let sign = if logo == "yes" {
            " PID: "
        } else {
            "Running mode="
        };
        while !seen.last().is_some_and(|l: &String| l.contains(sign)) {
            match lines.recv_timeout(Duration::from_secs(10)) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("no {sign:?} line (port {port} taken?): {seen:?}"),
            }
        }
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "not listening once {sign:?} was logged"
        );
        let mode = if cluster == "yes" {
            "cluster"
        } else {
            "standalone"
        };
        let text = seen.join("\n");
        if logo == "yes" {
            assert!(text.contains(&format!("Running in {mode} mode")), "{text}");
            assert!(!text.contains("Running mode="), "{text}");
        } else {
            assert!(
                text.contains(&format!("Running mode={mode}, port={port}.")),
                "{text}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Started with arguments but no config file, Redis logs "Configuration
/// loaded": its warning that no config file was given is for a start with
/// no arguments at all (argc == 1). ferrokv logged the warning.
#[test]
fn arguments_without_a_file_log_configuration_loaded_as_redis() {
    for name in ["ferrokv", "redis"] {
        let dir = unique_temp_path("ferrokv-conf-line");
        std::fs::create_dir_all(&dir).expect("dir");
        let port = free_port();
        let (_server, lines) = crate::support::spawn_lines(
            Command::new(executable(name))
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--dir", &dir.display().to_string()]),
        );
        let mut seen = Vec::new();
        while !seen
            .last()
            .is_some_and(|l: &String| l.contains("Ready to accept connections"))
        {
            match lines.recv_timeout(Duration::from_secs(10)) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("{name}: not ready (port {port} taken?): {seen:?}"),
            }
        }
        let text = seen.join("\n");
        assert!(text.contains(" # Configuration loaded"), "{name}: {text}");
        assert!(!text.contains("no config file specified"), "{name}: {text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The log lines of SAVE, BGSAVE, BGREWRITEAOF and enabling the AOF, and
/// of a save child killed by a signal, as redis-server writes them: the
/// parent's ("Background saving started by pid N", "Background saving
/// terminated with success", "Successfully renamed the temporary AOF base
/// file ...", "Removing the history file ...") in order, and the child's
/// own under its pid with the role `C` ("DB saved on disk", "Successfully
/// created the temporary AOF base file ...", "Fork CoW for RDB: ...").
/// ferrokv's children wrote none, and its parent's lines differed.
#[test]
fn background_children_log_as_redis() {
    let logs: Vec<(Vec<String>, Vec<String>)> = ["ferrokv", "redis"]
        .iter()
        .map(|name| children_log(name))
        .collect();
    assert_eq!(logs[0].0, logs[1].0, "the parent's lines");
    assert_eq!(logs[0].1, logs[1].1, "the children's lines");
}

/// Runs [`background_children_log_as_redis`]'s steps on `name`; returns
/// its log's lines as [`log_lines`] gives them.
fn children_log(name: &str) -> (Vec<String>, Vec<String>) {
    let dir = crate::persist::data::TempDir::new("children-log");
    let log = dir.path().join("log");
    let log_arg = log.display().to_string();
    let (child, port) = spawn_on_free_port(|port| {
        let mut c = crate::support::server_command(executable(name), port);
        c.args(["--logfile", &log_arg, "--dir", &dir.s()])
            .args(["--enable-debug-command", "yes"]);
        c
    });
    let _server = crate::support::ChildGuard(child);
    let mut c = Raw::connect(port);
    let pid = crate::replication::info_field(&mut c, "server", "process_id")
        .parse::<i32>()
        .expect("process_id");
    let idle = |c: &mut Raw| {
        assert!(
            wait_until(Duration::from_secs(10), || {
                let p = String::from_utf8_lossy(&c.cmd_str(&["INFO", "persistence"])).into_owned();
                ["rdb_bgsave_in_progress:0", "aof_rewrite_in_progress:0"]
                    .iter()
                    .all(|f| p.contains(f))
                    && p.contains("aof_rewrite_scheduled:0")
            }),
            "{name}: a child still runs"
        );
    };
    assert_eq!(c.cmd_str(&["DEBUG", "POPULATE", "1000"]), b"+OK\r\n");
    assert_eq!(c.cmd_str(&["SAVE"]), b"+OK\r\n");
    c.cmd_str(&["BGSAVE"]);
    idle(&mut c);
    c.cmd_str(&["BGREWRITEAOF"]);
    idle(&mut c);
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "appendonly", "yes"]),
        b"+OK\r\n"
    );
    idle(&mut c);
    c.cmd_str(&["BGREWRITEAOF"]);
    idle(&mut c);
    // A save child killed by a signal.
    c.cmd_str(&["CONFIG", "SET", "rdb-key-save-delay", "100000"]);
    c.cmd_str(&["BGSAVE"]);
    let mut kids = Vec::new();
    assert!(wait_until(Duration::from_secs(5), || {
        kids = children(pid);
        kids.len() == 1
    }));
    // SAFETY: kill(2) of the save child this test started.
    unsafe { libc::kill(kids[0], libc::SIGKILL) };
    idle(&mut c);
    let text = std::fs::read_to_string(&log).expect("the log");
    log_lines(&text)
}

/// A server log's lines, the parent's and its children's (role `C`) apart,
/// each without pid and time and with numbers of three digits or more as
/// N; start-up lines (which name the server) and copy-on-write figures
/// (each process's own) left out.
pub(crate) fn log_lines(text: &str) -> (Vec<String>, Vec<String>) {
    let (mut parent, mut kid) = (Vec::new(), Vec::new());
    for line in text.lines() {
        // `pid:role dd Mon yyyy hh:mm:ss.mmm level message`
        let Some((_, rest)) = line.split_once(':') else {
            continue;
        };
        let role = rest.chars().next().unwrap_or(' ');
        let Some(message) = rest.get(27..) else {
            continue;
        };
        let mut shown = String::new();
        let mut digits = String::new();
        for ch in message.chars().chain(std::iter::once(' ')) {
            if ch.is_ascii_digit() {
                digits.push(ch);
                continue;
            }
            shown.push_str(if digits.len() >= 3 { "N" } else { &digits });
            digits.clear();
            shown.push(ch);
        }
        let shown = shown.trim_end().to_string();
        if [
            "is starting",
            "version=",
            "monotonic",
            "overcommit",
            "Configuration",
        ]
        .iter()
        .any(|s| shown.contains(s))
        {
            continue;
        }
        let shown = match shown.split_once("Fork CoW for ") {
            Some((head, tail)) => format!(
                "{head}Fork CoW for {}",
                tail.split(':').next().unwrap_or("")
            ),
            None => shown,
        };
        match role {
            'C' => kid.push(shown),
            _ => parent.push(shown),
        }
    }
    (parent, kid)
}
