//! End to end with real job-queue frameworks, installed from their
//! registries: Python's rq (PyPI) and Node's bullmq (npm) run their own
//! scripts (tests/it/frameworks/) against an in-process ferrokv.
//!
//! The Python virtualenv and the npm project live under `target/e2e/` and
//! are reused while the pinned versions (requirements.txt,
//! package-lock.json) do not change, so only the first run downloads.
//! Missing python3 or node/npm fail the test: `.ci/run` installs them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{start, wait_until};

/// Longest an install may take.
const INSTALL_DEADLINE: Duration = Duration::from_secs(600);
/// Longest a framework script may take.
const RUN_DEADLINE: Duration = Duration::from_secs(60);

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scripts_dir() -> PathBuf {
    manifest_dir().join("tests/it/frameworks")
}

fn e2e_dir() -> PathBuf {
    manifest_dir().join("target/e2e")
}

/// What a finished process printed.
struct Output {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Output {
    fn describe(&self) -> String {
        format!("--- stdout:\n{}\n--- stderr:\n{}", self.stdout, self.stderr)
    }
}

/// Runs `cmd` to completion within `deadline` (killed past it), output
/// captured in files under `logs` named after `label`.
fn run(mut cmd: Command, label: &str, deadline: Duration) -> Output {
    let logs = e2e_dir().join("logs");
    fs::create_dir_all(&logs).expect("create target/e2e/logs");
    let out_path = logs.join(format!("{label}.stdout"));
    let err_path = logs.join(format!("{label}.stderr"));
    let out = fs::File::create(&out_path).expect("create stdout log");
    let err = fs::File::create(&err_path).expect("create stderr log");
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {label} ({cmd:?}): {e}"));
    let mut status = None;
    let finished = wait_until(deadline, || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    if !finished {
        let _ = child.kill();
        let _ = child.wait();
    }
    let stdout = fs::read_to_string(&out_path).unwrap_or_default();
    let mut stderr = fs::read_to_string(&err_path).unwrap_or_default();
    if !finished {
        stderr.push_str(&format!(
            "\n[killed: still running after {:?}]",
            started.elapsed()
        ));
    }
    Output {
        ok: finished && status.is_some_and(|s| s.success()),
        stdout,
        stderr,
    }
}

/// Fails with a clear message when `tool` cannot be run.
fn require_tool(tool: &str, args: &[&str], hint: &str) {
    let ok = Command::new(tool)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "`{tool} {}` failed: the framework tests need it ({hint}; .ci/run installs it)",
        args.join(" ")
    );
}

/// True when `stamp` holds exactly `content` (the install it marks is
/// current).
fn stamp_matches(stamp: &Path, content: &[u8]) -> bool {
    fs::read(stamp).is_ok_and(|s| s == content)
}

/// A virtualenv with the pinned rq installed; returns its python. Tests
/// running at once share one install.
fn python_env() -> PathBuf {
    static ENV: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ENV.get_or_init(install_python_env).clone()
}

fn install_python_env() -> PathBuf {
    require_tool("python3", &["--version"], "apt-get install python3");
    let venv = e2e_dir().join("py");
    let python = venv.join("bin/python");
    let reqs_path = scripts_dir().join("requirements.txt");
    let reqs = fs::read(&reqs_path).expect("read requirements.txt");
    let stamp = venv.join("ferrokv-requirements.txt");
    if python.exists() && stamp_matches(&stamp, &reqs) {
        return python;
    }
    if !python.exists() {
        fs::create_dir_all(e2e_dir()).expect("create target/e2e");
        let mut cmd = Command::new("python3");
        cmd.args(["-m", "venv"]).arg(&venv);
        let out = run(cmd, "venv", INSTALL_DEADLINE);
        assert!(
            out.ok,
            "python3 -m venv failed (apt-get install python3-venv)\n{}",
            out.describe()
        );
    }
    let mut cmd = Command::new(&python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-r",
    ])
    .arg(&reqs_path);
    let out = run(cmd, "pip-install", INSTALL_DEADLINE);
    assert!(out.ok, "pip install of rq failed\n{}", out.describe());
    fs::write(&stamp, &reqs).expect("write install stamp");
    python
}

/// An npm project with the pinned bullmq installed; returns its
/// directory. Tests running at once share one install.
fn node_env() -> PathBuf {
    static ENV: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ENV.get_or_init(install_node_env).clone()
}

fn install_node_env() -> PathBuf {
    require_tool("node", &["--version"], "apt-get install nodejs");
    require_tool("npm", &["--version"], "apt-get install npm");
    let dir = e2e_dir().join("node");
    fs::create_dir_all(&dir).expect("create target/e2e/node");
    let lock = fs::read(scripts_dir().join("package-lock.json")).expect("read package-lock.json");
    let manifest = fs::read(scripts_dir().join("package.json")).expect("read package.json");
    let stamp = dir.join("node_modules/.ferrokv-lock.json");
    if !(stamp_matches(&stamp, &lock) && dir.join("node_modules/bullmq").exists()) {
        fs::write(dir.join("package.json"), &manifest).expect("write package.json");
        fs::write(dir.join("package-lock.json"), &lock).expect("write package-lock.json");
        // `npm install` with the lock file installs the locked versions
        // (`npm ci` rejects locks that leave out other platforms' optional
        // packages, as npm 11 writes them).
        let mut cmd = Command::new("npm");
        cmd.args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir);
        let out = run(cmd, "npm-install", INSTALL_DEADLINE);
        assert!(out.ok, "npm install of bullmq failed\n{}", out.describe());
        fs::write(&stamp, &lock).expect("write install stamp");
    }
    dir
}

#[test]
fn rq_enqueue_work_and_results() {
    let python = python_env();
    let server = start();
    let mut cmd = Command::new(python);
    cmd.arg(scripts_dir().join("rq_e2e.py"))
        .arg(server.port.to_string());
    let out = run(cmd, "rq", RUN_DEADLINE);
    assert!(
        out.ok && out.stdout.contains("RQ OK"),
        "the rq script failed against ferrokv\n{}",
        out.describe()
    );
}

#[test]
fn bullmq_queue_worker_and_events() {
    let dir = node_env();
    // Node resolves `bullmq` from the script's own directory upwards, so
    // the script runs from inside the npm project.
    let script = dir.join("bullmq_e2e.mjs");
    fs::copy(scripts_dir().join("bullmq_e2e.mjs"), &script).expect("copy the bullmq script");
    let server = start();
    let mut cmd = Command::new("node");
    cmd.arg(&script).arg(server.port.to_string());
    let out = run(cmd, "bullmq", RUN_DEADLINE);
    assert!(
        out.ok && out.stdout.contains("BULLMQ OK"),
        "the bullmq script failed against ferrokv\n{}",
        out.describe()
    );
}

#[test]
fn redis_py_acl_users() {
    let python = python_env();
    let server = start();
    let mut cmd = Command::new(python);
    cmd.arg(scripts_dir().join("acl_redis_py.py"))
        .arg(server.port.to_string());
    let out = run(cmd, "acl-redis-py", RUN_DEADLINE);
    assert!(
        out.ok && out.stdout.contains("ACL PY OK"),
        "the redis-py ACL script failed against ferrokv\n{}",
        out.describe()
    );
}

/// redis-py's client-side cache (RESP3, CLIENT TRACKING) serves reads
/// locally and drops them on ferrokv's invalidations.
#[test]
fn redis_py_client_side_cache() {
    let python = python_env();
    let server = start();
    let mut cmd = Command::new(python);
    cmd.arg(scripts_dir().join("tracking_redis_py.py"))
        .arg(server.port.to_string());
    let out = run(cmd, "tracking-redis-py", RUN_DEADLINE);
    assert!(
        out.ok && out.stdout.contains("TRACKING PY OK"),
        "the redis-py client-side cache script failed against ferrokv\n{}",
        out.describe()
    );
}

#[test]
fn ioredis_acl_users() {
    let dir = node_env();
    // ioredis comes with bullmq; the script runs from the npm project.
    let script = dir.join("acl_ioredis.mjs");
    fs::copy(scripts_dir().join("acl_ioredis.mjs"), &script).expect("copy the ioredis script");
    let server = start();
    let mut cmd = Command::new("node");
    cmd.arg(&script).arg(server.port.to_string());
    let out = run(cmd, "acl-ioredis", RUN_DEADLINE);
    assert!(
        out.ok && out.stdout.contains("ACL IOREDIS OK"),
        "the ioredis ACL script failed against ferrokv\n{}",
        out.describe()
    );
}

/// Starts the ferrokv binary on `port` with `args`, waiting until it
/// listens; killed on drop.
fn ferrokv_on(port: u16, args: &[&str]) -> crate::support::FerrokvProcess {
    // A directory of its own: a replica keeps its synced snapshot there.
    let dir = crate::support::unique_temp_path("ferrokv-sentinel-node");
    fs::create_dir_all(&dir).expect("a node directory");
    let child = crate::support::server_command(env!("CARGO_BIN_EXE_ferrokv"), port)
        .args(["--repl-diskless-sync-delay", "0"])
        .args(["--dir", dir.to_str().unwrap_or("/tmp")])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the ferrokv binary runs");
    let p = crate::support::FerrokvProcess::adopt_in(child, port, dir);
    let pid = p.pid();
    assert!(wait_until(Duration::from_secs(10), || {
        crate::support::listens_on(pid, port)
    }));
    p
}

/// One reply of `args` from `port`, as text, on a new connection; tried
/// again when the connection is closed under it (Sentinel kills normal
/// clients of the servers it reconfigures).
fn ask(port: u16, args: &[&str]) -> String {
    use std::io::{Read, Write};
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    for _ in 0..10 {
        let Ok(mut sock) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
        if sock.write_all(&crate::support::encode(&args)).is_err() {
            continue;
        }
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while crate::support::frame_len(&buf).is_none() {
            match sock.read(&mut chunk) {
                Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => break,
            }
        }
        if crate::support::frame_len(&buf).is_some() {
            return String::from_utf8_lossy(&buf).into_owned();
        }
    }
    String::new()
}

/// Sentinel (redis-server --sentinel) manages a ferrokv master and two
/// ferrokv replicas: the master is killed while redis-py writes through
/// Sentinel discovery; a replica is promoted, the other follows it, the
/// client goes on writing, and the old master rejoins as a replica.
#[test]
fn sentinel_fails_over_a_ferrokv_master() {
    use crate::support::free_port;
    let python = python_env();
    let (pm, p1, p2) = (free_port(), free_port(), free_port());
    let master = ferrokv_on(pm, &[]);
    let of = ["--replicaof", "127.0.0.1", &pm.to_string()].map(String::from);
    let of: Vec<&str> = of.iter().map(String::as_str).collect();
    let _r1 = ferrokv_on(p1, &of);
    let _r2 = ferrokv_on(p2, &of);
    for p in [p1, p2] {
        assert!(wait_until(Duration::from_secs(20), || ask(
            p,
            &["INFO", "replication"]
        )
        .contains("master_link_status:up")));
    }
    let dir = crate::support::unique_temp_path("sentinel");
    fs::create_dir_all(&dir).expect("sentinel dir");
    let ps = free_port();
    let conf = dir.join("sentinel.conf");
    fs::write(
        &conf,
        format!(
            "port {ps}\nbind 127.0.0.1\ndir {}\nlogfile sentinel.log\nsentinel monitor mymaster 127.0.0.1 {pm} 1\n\
             sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 10000\n",
            dir.display()
        ),
    )
    .expect("write sentinel.conf");
    let sentinel = Command::new("redis-server")
        .arg(&conf)
        .arg("--sentinel")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server --sentinel runs");
    let sentinel = crate::support::ChildGuard(sentinel);
    assert!(wait_until(Duration::from_secs(10), || {
        crate::support::listens_on(sentinel.0.id(), ps)
    }));
    // Sentinel learns the replicas from the master's INFO.
    assert!(
        wait_until(Duration::from_secs(30), || {
            let r = ask(ps, &["SENTINEL", "REPLICAS", "mymaster"]);
            r.starts_with("*2\r\n") && !r.contains("s_down")
        }),
        "{}",
        ask(ps, &["SENTINEL", "REPLICAS", "mymaster"])
    );
    let mut cmd = Command::new(python);
    cmd.arg(scripts_dir().join("sentinel_redis_py.py"))
        .arg(ps.to_string())
        .arg("12");
    let client = std::thread::spawn(move || run(cmd, "sentinel-redis-py", RUN_DEADLINE));
    std::thread::sleep(Duration::from_secs(2));
    drop(master);
    let new_port = |ps| {
        let r = ask(ps, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"]);
        [p1, p2]
            .into_iter()
            .find(|p| r.contains(&format!("\r\n{p}\r\n")))
    };
    assert!(
        wait_until(Duration::from_secs(30), || new_port(ps).is_some()),
        "no failover"
    );
    let promoted = new_port(ps).expect("a promoted replica");
    let other = if promoted == p1 { p2 } else { p1 };
    assert!(ask(promoted, &["ROLE"]).starts_with("*3\r\n$6\r\nmaster"));
    assert!(
        wait_until(Duration::from_secs(30), || {
            let info = ask(other, &["INFO", "replication"]);
            info.contains(&format!("master_port:{promoted}"))
                && info.contains("master_link_status:up")
        }),
        "the other replica does not follow the promoted one"
    );
    let out = client.join().expect("the client thread");
    assert!(
        out.ok && out.stdout.contains("SENTINEL PY OK"),
        "redis-py through Sentinel failed\n{}",
        out.describe()
    );
    // The old master comes back and is turned into a replica of the
    // master Sentinel names then (on a loaded machine Sentinel may have
    // failed over once more meanwhile).
    let _old = ferrokv_on(pm, &[]);
    assert!(
        wait_until(Duration::from_secs(40), || {
            let current = new_port(ps).unwrap_or(promoted);
            let info = ask(pm, &["INFO", "replication"]);
            info.contains(&format!("master_port:{current}"))
                && info.contains("master_link_status:up")
        }),
        "the old master did not rejoin as a replica of {:?}: {}\n{}",
        new_port(ps),
        ask(pm, &["INFO", "replication"]),
        fs::read_to_string(dir.join("sentinel.log")).unwrap_or_default()
    );
    let _ = fs::remove_dir_all(&dir);
}

/// redis-py's RedisCluster on a six-node ferrokv cluster built by
/// `redis-cli --cluster create`: writes, reads, a pipeline, hash tags and
/// sharded pub/sub through redirections.
#[test]
fn redis_py_cluster_client() {
    let _serial = crate::cluster::one_at_a_time();
    let python = python_env();
    let nodes = crate::cluster::create_cluster(&[crate::cluster::Kind::Ferrokv; 6], 1, 5000);
    let mut cmd = Command::new(python);
    cmd.arg(scripts_dir().join("cluster_redis_py.py"))
        .arg(nodes[0].port.to_string());
    let out = run(cmd, "cluster-redis-py", RUN_DEADLINE);
    assert!(
        out.ok && out.stdout.contains("CLUSTER PY OK"),
        "redis-py RedisCluster failed\n{}",
        out.describe()
    );
}
