//! Test support: start ferrokv in-process and redis-server as a child on
//! free loopback ports, talk raw RESP, compare replies, wait on conditions.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferrokv::config::Config;

/// A ferrokv server started in this process; dropping it stops the
/// server and removes its directory.
pub struct Ferrokv {
    /// Its port.
    pub port: u16,
    server: Option<ferrokv::Server>,
    dir: std::path::PathBuf,
}

impl Drop for Ferrokv {
    fn drop(&mut self) {
        drop(self.server.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts ferrokv on a free loopback port with `tweak` applied to the
/// default config.
pub fn start_with(tweak: impl FnOnce(&mut Config)) -> Ferrokv {
    let mut config = test_config();
    let dir = unique_temp_path("ferrokv-it");
    config.dir = dir.display().to_string();
    tweak(&mut config);
    // As Redis, which will not start in a `dir` that is not there.
    std::fs::create_dir_all(&config.dir).expect("the server's dir");
    // The server binds port 0 (unless `tweak` chose one) and reports the
    // port it got, so no other test can take it in between.
    let server = ferrokv::Server::start(config).expect("ferrokv starts");
    Ferrokv {
        port: server.port(),
        server: Some(server),
        dir,
    }
}

/// Starts ferrokv as [`start_with`] does, its time read from a manual
/// clock the test moves (returned with it).
pub fn start_with_clock(
    tweak: impl FnOnce(&mut Config),
) -> (Ferrokv, ferrokv::util::clock::ManualClock) {
    let clock = ferrokv::util::clock::ManualClock::new();
    let mut config = test_config();
    let dir = unique_temp_path("ferrokv-it");
    config.dir = dir.display().to_string();
    tweak(&mut config);
    std::fs::create_dir_all(&config.dir).expect("the server's dir");
    let server = ferrokv::Server::start_with_clock(config, clock.clone()).expect("ferrokv starts");
    let f = Ferrokv {
        port: server.port(),
        server: Some(server),
        dir,
    };
    (f, clock)
}

/// The configuration every in-process test server starts from.
fn test_config() -> Config {
    let mut config = Config::default();
    config.port = 0;
    config.bind = vec!["127.0.0.1".into()];
    // As spawn_redis passes `--save ""`: no automatic snapshots, and a
    // directory of its own so no stray dump.rdb is loaded.
    config.save.clear();
    if let Some(n) = test_io_threads() {
        for (name, value) in [
            ("io-threads", n.to_string()),
            ("io-threads-do-reads", "yes".into()),
        ] {
            let (param, _) = ferrokv::config::params::lookup(name.as_bytes()).expect("a parameter");
            config
                .set_args(param, &[value.as_bytes()], false)
                .expect("a valid value");
        }
    }
    config
}

/// `FERROKV_TEST_IO_THREADS=N`: every ferrokv the tests start runs with
/// `io-threads N` and `io-threads-do-reads yes`; with
/// `FERROKV_IO_THREADS_ALWAYS=1` too, the threads serve whenever there is
/// work for them (scripts/test-io-threads.sh sets both).
pub fn test_io_threads() -> Option<usize> {
    std::env::var("FERROKV_TEST_IO_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 1)
}

/// The command-line arguments for [`test_io_threads`] (none without it).
pub fn io_threads_args() -> Vec<String> {
    test_io_threads().map_or_else(Vec::new, |n| {
        vec![
            "--io-threads".into(),
            n.to_string(),
            "--io-threads-do-reads".into(),
            "yes".into(),
        ]
    })
}

/// A path under the system temp dir that no other test uses (not created).
pub fn unique_temp_path(prefix: &str) -> std::path::PathBuf {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()))
}

/// Starts ferrokv with defaults on a free loopback port.
pub fn start() -> Ferrokv {
    start_with(|_| {})
}

impl Ferrokv {
    /// Its `dir`.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// A `redis` crate client.
    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .and_then(|c| c.get_connection())
            .expect("connect to ferrokv")
    }

    /// A raw RESP connection.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }
}

/// A redis-server child process, killed on drop.
pub struct RedisServer {
    /// Its port.
    pub port: u16,
    child: Child,
    /// Its own working directory, so no test loads another's dump.rdb.
    dir: std::path::PathBuf,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A free port (bound then released).
/// Servers bind `* -::*` by default, as Redis, so the port must be free on
/// every IPv6 address as well (where the machine has them), or a server
/// started by another test may hold it there.
pub fn free_port() -> u16 {
    loop {
        let port = std::net::TcpListener::bind("0.0.0.0:0")
            .and_then(|l| l.local_addr())
            .expect("bind port 0")
            .port();
        // A dual-stack bind: free on every IPv4 and IPv6 address.
        match std::net::TcpListener::bind(("::", port)) {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
            _ => return port,
        }
    }
}

/// Starts a server process on a free loopback port: `command(port)`
/// builds it. Another test may take the port between [`free_port`] and the
/// bind, so the process is ours only once it holds the listening socket;
/// one that failed to bind has exited, and another port is tried.
pub fn spawn_on_free_port(mut command: impl FnMut(u16) -> Command) -> (Child, u16) {
    for _ in 0..5 {
        let port = free_port();
        let mut child = command(port)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server binary is installed");
        let pid = child.id();
        if wait_until(Duration::from_secs(5), || {
            matches!(child.try_wait(), Ok(Some(_))) || listens_on(pid, port)
        }) && matches!(child.try_wait(), Ok(None))
        {
            return (child, port);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("the server did not start on a free port");
}

/// Starts redis-server 7.0 on a free loopback port with extra arguments.
pub fn spawn_redis_with(extra: &[&str]) -> RedisServer {
    let dir = unique_temp_path("redis-it");
    std::fs::create_dir_all(&dir).expect("create a directory for redis-server");
    let (child, port) = spawn_on_free_port(|port| {
        let mut cmd = server_command("redis-server", port);
        cmd.args(["--appendonly", "no"])
            .args(["--dir", dir.to_str().unwrap_or("/tmp")])
            .args(extra);
        // Side by side with I/O threads too, so both report the same.
        cmd.args(io_threads_args());
        cmd
    });
    RedisServer { port, child, dir }
}

impl RedisServer {
    /// Its `dir`.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status once it exits within `deadline`.
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<std::process::ExitStatus> {
        wait_exit(&mut self.child, deadline)
    }
}

/// `child`'s exit status once it exits within `deadline`.
pub fn wait_exit(child: &mut Child, deadline: Duration) -> Option<std::process::ExitStatus> {
    let mut status = None;
    wait_until(deadline, || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    status
}

/// The ferrokv binary running as a process of its own, killed on drop.
pub struct FerrokvProcess {
    /// Its port.
    pub port: u16,
    child: Child,
    /// Its own `dir`, removed when it is dropped.
    dir: Option<std::path::PathBuf>,
}

impl FerrokvProcess {
    /// Takes a started ferrokv process listening on `port`.
    pub fn adopt(child: Child, port: u16) -> FerrokvProcess {
        FerrokvProcess {
            port,
            child,
            dir: None,
        }
    }

    /// Takes it with the `dir` it was started in, removed when it is
    /// dropped.
    pub fn adopt_in(child: Child, port: u16, dir: std::path::PathBuf) -> FerrokvProcess {
        FerrokvProcess {
            port,
            child,
            dir: Some(dir),
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status once it exits within `deadline`.
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<std::process::ExitStatus> {
        wait_exit(&mut self.child, deadline)
    }
}

impl Drop for FerrokvProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Starts `cmd` (redis-cli monitor, --replica...) and hands its standard
/// output over line by line as it comes.
pub fn spawn_lines(cmd: &mut Command) -> (ChildGuard, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = ChildGuard(
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the command runs"),
    );
    let out = child.0.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// `program` (redis-server or the ferrokv binary) on loopback port `port`
/// with no save rules.
pub fn server_command(program: &str, port: u16) -> Command {
    let mut cmd = Command::new(program);
    cmd.args([
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
    ]);
    cmd
}

/// A child process killed and reaped on drop.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the ferrokv binary on a free loopback port with `--save ""`.
pub fn spawn_ferrokv_process() -> FerrokvProcess {
    spawn_ferrokv_process_with(&[])
}

/// Starts the ferrokv binary with extra arguments (its own allocator, so
/// memory figures are real: the in-process server shares the test's).
pub fn spawn_ferrokv_process_with(extra: &[&str]) -> FerrokvProcess {
    // A directory of its own (a `--dir` in `extra` wins): files it writes,
    // a replica's snapshot say, never land in the checkout where other
    // tests' servers would load them.
    let dir = unique_temp_path("ferrokv-proc");
    std::fs::create_dir_all(&dir).expect("create a directory for ferrokv");
    let (child, port) = spawn_on_free_port(|port| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrokv"));
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", ""])
            .args(["--dir", dir.to_str().unwrap_or("/tmp")])
            .args(extra);
        cmd.args(io_threads_args());
        cmd
    });
    FerrokvProcess {
        port,
        child,
        dir: Some(dir),
    }
}

/// Starts redis-server with defaults.
pub fn spawn_redis() -> RedisServer {
    spawn_redis_with(&[])
}

/// How many times longer work takes in the AddressSanitizer build
/// (scripts/asan.sh): deadlines and read timeouts are stretched by it.
pub const SLOWDOWN: u32 = if cfg!(ferrokv_sanitize) { 5 } else { 1 };

/// Polls `cond` until it holds or `deadline` (times [`SLOWDOWN`]) passes;
/// returns whether it held.
pub fn wait_until(deadline: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline * SLOWDOWN;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// True when process `pid` holds a socket listening on loopback `port`
/// (Linux: the socket's inode in /proc/net/tcp among the process's fds).
/// Asks the server nothing, so its statistics stay untouched.
pub fn listens_on(pid: u32, port: u16) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    let want = format!(":{port:04X}");
    let inodes: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // local_address, state 0A = LISTEN, inode.
            (f.len() > 9 && f[1].ends_with(&want) && f[3] == "0A").then(|| f[9].to_string())
        })
        .collect();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(Result::ok).any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|t| {
            let t = t.to_string_lossy();
            inodes.iter().any(|i| t == format!("socket:[{i}]"))
        })
    })
}

/// Length of the first complete RESP2/RESP3 value in `buf`, if complete.
pub fn frame_len(buf: &[u8]) -> Option<usize> {
    let nl = buf.iter().position(|&c| c == b'\n')?;
    // A length or count: a simple string or error line may hold any byte.
    let head = || std::str::from_utf8(&buf[1..nl.saturating_sub(1).max(1)]).ok();
    let after = nl + 1;
    match buf.first()? {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(after),
        b'$' | b'=' | b'!' => {
            let n: i64 = head()?.parse().ok()?;
            if n < 0 {
                return Some(after);
            }
            let end = after + n as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        t @ (b'*' | b'~' | b'%' | b'>' | b'|') => {
            let n: i64 = head()?.parse().ok()?;
            if n < 0 {
                return Some(after);
            }
            let count = if matches!(t, b'%' | b'|') { 2 * n } else { n };
            let mut pos = after;
            for _ in 0..count {
                pos += frame_len(&buf[pos..])?;
            }
            Some(pos)
        }
        _ => None,
    }
}

/// Encodes a command as a RESP array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        v.extend_from_slice(a);
        v.extend_from_slice(b"\r\n");
    }
    v
}

/// A raw RESP connection.
pub struct Raw {
    sock: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    /// Connects to a loopback port.
    pub fn connect(port: u16) -> Raw {
        Raw::from_stream(TcpStream::connect(("127.0.0.1", port)).expect("connect"))
    }

    /// The socket, for reading at the byte level.
    pub fn into_stream(self) -> TcpStream {
        self.sock
    }

    /// A connection made by the caller (from a chosen source address).
    pub fn from_stream(sock: TcpStream) -> Raw {
        sock.set_read_timeout(Some(Duration::from_secs(10) * SLOWDOWN))
            .expect("timeout");
        sock.set_nodelay(true).expect("nodelay");
        Raw {
            sock,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).expect("write");
    }

    /// Reads one complete reply.
    pub fn read_reply(&mut self) -> Vec<u8> {
        loop {
            if let Some(n) = frame_len(&self.buf) {
                return self.buf.drain(..n).collect();
            }
            let mut chunk = [0u8; 65536];
            // A signal the in-process servers handle may interrupt the read.
            let n = match self.sock.read(&mut chunk) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => r.expect("read reply"),
            };
            assert!(
                n > 0,
                "connection closed with {:?} buffered",
                String::from_utf8_lossy(&self.buf)
            );
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends a command and returns its raw reply.
    pub fn cmd(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(&encode(args));
        self.read_reply()
    }

    /// Sends a command given as strings.
    pub fn cmd_str(&mut self, args: &[&str]) -> Vec<u8> {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.cmd(&a)
    }

    /// Reads everything until the peer closes (or 5 s pass).
    pub fn read_to_close(&mut self) -> Vec<u8> {
        self.sock
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut out = std::mem::take(&mut self.buf);
        let _ = self.sock.read_to_end(&mut out);
        out
    }

    /// True once the peer has closed the connection (waits up to 5 s).
    pub fn is_closed(&mut self) -> bool {
        self.sock
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut b = [0u8; 1];
        matches!(self.sock.read(&mut b), Ok(0))
    }
}

/// A ferrokv and a redis-server side by side, for differential tests.
pub struct Pair {
    /// ferrokv.
    pub ours: Raw,
    /// redis-server.
    pub theirs: Raw,
    _server: OursServer,
    _redis: RedisServer,
}

/// The ferrokv of a [`Pair`]: in this process, or a process of its own
/// for tests that change what Redis keeps process-wide (the `lazyfree-*`
/// directives, the encoding thresholds), which every in-process server
/// of the test binary shares.
enum OursServer {
    InProcess(Ferrokv),
    Process(FerrokvProcess),
}

impl OursServer {
    fn port(&self) -> u16 {
        match self {
            OursServer::InProcess(s) => s.port,
            OursServer::Process(p) => p.port,
        }
    }
}

impl Pair {
    /// Starts both servers and connects to each.
    pub fn new() -> Pair {
        let server = start();
        let redis = spawn_redis();
        Pair {
            ours: server.raw(),
            theirs: Raw::connect(redis.port),
            _server: OursServer::InProcess(server),
            _redis: redis,
        }
    }

    /// Starts both servers with extra configuration (`tweak` for ferrokv,
    /// `redis_args` for redis-server) and connects to each.
    pub fn new_with(tweak: impl FnOnce(&mut Config), redis_args: &[&str]) -> Pair {
        let server = start_with(tweak);
        let redis = spawn_redis_with(redis_args);
        Pair {
            ours: server.raw(),
            theirs: Raw::connect(redis.port),
            _server: OursServer::InProcess(server),
            _redis: redis,
        }
    }

    /// Starts the ferrokv binary as a process and redis-server, both
    /// with `args`, and connects to each: for tests that change
    /// process-wide directives (see [`OursServer`]).
    pub fn of_processes(args: &[&str]) -> Pair {
        let server = spawn_ferrokv_process_with(args);
        let redis = spawn_redis_with(args);
        Pair {
            ours: Raw::connect(server.port),
            theirs: Raw::connect(redis.port),
            _server: OursServer::Process(server),
            _redis: redis,
        }
    }

    /// Opens another connection to each server.
    pub fn connect_again(&self) -> (Raw, Raw) {
        (
            Raw::connect(self._server.port()),
            Raw::connect(self._redis.port),
        )
    }

    /// The ports of ferrokv and redis-server.
    pub fn ports(&self) -> (u16, u16) {
        (self._server.port(), self._redis.port)
    }

    /// Sends `args` to both and asserts the replies are byte-identical;
    /// returns the reply.
    pub fn same(&mut self, args: &[&str]) -> Vec<u8> {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.same_bytes(&a)
    }

    /// As [`Pair::same`] for binary arguments.
    pub fn same_bytes(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let ours = self.ours.cmd(args);
        let theirs = self.theirs.cmd(args);
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "reply differs for {:?}",
            args.iter()
                .map(|a| String::from_utf8_lossy(a))
                .collect::<Vec<_>>()
        );
        ours
    }

    /// Runs each command line (split on spaces) through [`Pair::same`].
    pub fn script(&mut self, lines: &[&str]) {
        for l in lines {
            let args: Vec<&str> = l.split(' ').collect();
            self.same(&args);
        }
    }

    /// Sends to both and returns both replies without comparing (for
    /// values that legitimately differ, such as TTLs).
    pub fn both(&mut self, args: &[&str]) -> (Vec<u8>, Vec<u8>) {
        (self.ours.cmd_str(args), self.theirs.cmd_str(args))
    }
}

/// Runs `cases` deterministic random command sequences drawn from
/// `sequences` through both servers of `pair` (FLUSHALL first, each
/// sequence pipelined) and asserts every reply is byte-identical;
/// proptest shrinks a mismatch to a minimal sequence.
pub fn same_random_sequences(
    pair: Pair,
    cases: u32,
    sequences: impl proptest::strategy::Strategy<Value = Vec<Vec<String>>>,
) {
    same_random_sequences_by(pair, cases, sequences, |_, reply| {
        String::from_utf8_lossy(reply).into_owned()
    });
}

/// As [`same_random_sequences`], comparing the replies as `normal` renders
/// them (for replies whose order legitimately differs).
pub fn same_random_sequences_by(
    pair: Pair,
    cases: u32,
    sequences: impl proptest::strategy::Strategy<Value = Vec<Vec<String>>>,
    normal: impl Fn(&[String], &[u8]) -> String,
) {
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let pair = std::cell::RefCell::new(pair);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let result = runner.run(&sequences, |cmds| {
        let mut p = pair.borrow_mut();
        p.same(&["FLUSHALL"]);
        let mut wire = Vec::new();
        for cmd in &cmds {
            let args: Vec<&[u8]> = cmd.iter().map(|s| s.as_bytes()).collect();
            wire.extend_from_slice(&encode(&args));
        }
        p.ours.send(&wire);
        p.theirs.send(&wire);
        // Read every reply before judging, so a failing case leaves both
        // connections in step for the shrinking runs.
        let replies: Vec<(Vec<u8>, Vec<u8>)> = cmds
            .iter()
            .map(|_| (p.ours.read_reply(), p.theirs.read_reply()))
            .collect();
        for (cmd, (ours, theirs)) in cmds.iter().zip(&replies) {
            proptest::prop_assert_eq!(normal(cmd, ours), normal(cmd, theirs), "command {:?}", cmd);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Runs `cmds` on `main` with `sub` subscribed to every keyevent of
/// database 0 (notifications must be on), then `SET done 1`; returns the
/// events as `event:key`, up to and including `set:done`.
pub fn keyevents_of(sub: &mut Raw, main: &mut Raw, cmds: &[&[&str]]) -> Vec<String> {
    sub.cmd_str(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    for c in cmds {
        main.cmd_str(c);
    }
    main.cmd_str(&["SET", "done", "1"]);
    let mut events = Vec::new();
    while events.last().map(String::as_str) != Some("set:done") {
        let r = String::from_utf8_lossy(&sub.read_reply()).into_owned();
        let lines: Vec<&str> = r.split("\r\n").collect();
        events.push(format!(
            "{}:{}",
            lines[6].rsplit(':').next().unwrap_or(""),
            lines[8]
        ));
    }
    events
}

impl Pair {
    /// [`keyevents_of`] on both servers (notifications on): asserts they
    /// report the same events and returns them.
    pub fn same_keyevents(&mut self, cmds: &[&[&str]]) -> Vec<String> {
        let (mut ours, mut theirs) = self.connect_again();
        let a = keyevents_of(&mut ours, &mut self.ours, cmds);
        let b = keyevents_of(&mut theirs, &mut self.theirs, cmds);
        assert_eq!(a, b, "keyspace events of ferrokv and redis-server");
        a
    }
}

/// Runs `cmd` with `input` on its standard input (closed after) and
/// returns its standard output.
pub fn output_with_input(cmd: &mut Command, input: &[u8]) -> String {
    use std::io::Write as _;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the command runs");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input)
        .expect("write stdin");
    let out = child.wait_with_output().expect("its output");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A script error reply without its ` script: <sha>, on @user_script:N.`
/// part, which names the script (its SHA differs with the body's bytes).
pub fn without_script_suffix(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply)
        .split(" script:")
        .next()
        .unwrap_or("")
        .to_string()
}

/// The integer INFO field `name` (from INFO ALL).
pub fn info_u64(raw: &mut Raw, name: &str) -> u64 {
    let info = String::from_utf8_lossy(&raw.cmd_str(&["INFO", "all"])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in INFO"))
}

/// The ferrokv binary (its own allocator: memory figures are real) and
/// redis-server, both with DEBUG on, each checked by `case` in turn.
pub fn on_both_processes(case: impl Fn(u16, &str)) {
    let args = ["--enable-debug-command", "yes"];
    let server = spawn_ferrokv_process_with(&args);
    case(server.port, "ferrokv");
    let redis = spawn_redis_with(&args);
    case(redis.port, "redis-server");
}

/// The server's clock in milliseconds (TIME).
pub fn server_ms(r: &mut Raw) -> u64 {
    let reply = String::from_utf8(r.cmd_str(&["TIME"])).expect("TIME is text");
    let nums: Vec<u64> = reply.split("\r\n").filter_map(|l| l.parse().ok()).collect();
    nums[0] * 1000 + nums[1] / 1000
}

/// Gives `keys` a TTL of 20 ms on both servers and waits, on each
/// server's own clock, until it has passed (with active expiry off, the
/// keys stay until a command runs into them).
pub fn let_expire(p: &mut Pair, keys: &[&str]) {
    for k in keys {
        p.same(&["SET", k, "v", "PX", "20"]);
    }
    for r in [&mut p.ours, &mut p.theirs] {
        let at = server_ms(r) + 21;
        assert!(wait_until(Duration::from_secs(5), || server_ms(r) > at));
    }
}

/// Both servers with DEBUG enabled.
pub fn debug_pair() -> Pair {
    Pair::new_with(
        |c| {
            let (param, _) =
                ferrokv::config::params::lookup(b"enable-debug-command").expect("a parameter");
            c.set_value(param, b"yes").expect("a valid value");
        },
        &["--enable-debug-command", "yes"],
    )
}
