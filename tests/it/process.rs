//! The process directives, as a service manager sees them: `daemonize`
//! (the command returns, a pid file names the server), `supervised
//! systemd` (sd_notify lines on `$NOTIFY_SOCKET`), each checked on the
//! real binary.

use std::os::unix::net::UnixDatagram;
use std::process::Command;
use std::time::Duration;

use crate::support::{free_port, unique_temp_path, wait_until, Raw};

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
        if wait_until(Duration::from_secs(10), || pidfile.exists()) {
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
        let mut c = Command::new(env!("CARGO_BIN_EXE_ferrokv"));
        c.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--logfile", &log_arg, "--enable-debug-command", "yes"]);
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
