//! TLS side by side with redis-server 7.0 (`tls-port`, `tls-auth-clients`,
//! `tls-replication`, CONFIG SET of the tls-* directives): both servers
//! run as processes with the same arguments and certificates made here
//! with `openssl`, as Redis's utils/gen-test-certs.sh makes its own.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use openssl::ssl::{SslConnector, SslMethod, SslStream, SslVerifyMode};

use crate::support::{
    frame_len, spawn_on_free_port, unique_temp_path, wait_until, ChildGuard, Raw,
};

/// The certificates every test uses.
struct Certs {
    dir: PathBuf,
}

impl Certs {
    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// The server's TLS arguments, as the Redis suite's (server and client
    /// certificates, CA, DH parameters).
    fn server_args(&self) -> Vec<String> {
        [
            ("--tls-cert-file", "server.crt"),
            ("--tls-key-file", "server.key"),
            ("--tls-client-cert-file", "client.crt"),
            ("--tls-client-key-file", "client.key"),
            ("--tls-ca-cert-file", "ca.crt"),
            ("--tls-dh-params-file", "redis.dh"),
        ]
        .iter()
        .flat_map(|(k, f)| [k.to_string(), self.path(f)])
        .collect()
    }
}

fn openssl(args: &[&str], dir: &Path) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`ca`, and `other-ca` that the servers do not trust), a server
/// and a client certificate from `ca`, a client certificate from
/// `other-ca`, and DH parameters.
fn certs() -> &'static Certs {
    static CERTS: OnceLock<Certs> = OnceLock::new();
    CERTS.get_or_init(|| {
        let dir = unique_temp_path("ferrokv-tls-certs");
        std::fs::create_dir_all(&dir).expect("certificate directory");
        for ca in ["ca", "other-ca"] {
            openssl(&["genrsa", "-out", &format!("{ca}.key"), "2048"], &dir);
            openssl(
                &[
                    "req",
                    "-x509",
                    "-new",
                    "-nodes",
                    "-sha256",
                    "-key",
                    &format!("{ca}.key"),
                    "-days",
                    "3650",
                    "-subj",
                    &format!("/O=ferrokv test/CN={ca}"),
                    "-out",
                    &format!("{ca}.crt"),
                ],
                &dir,
            );
        }
        std::fs::write(
            dir.join("openssl.cnf"),
            "[ server_cert ]\nkeyUsage = digitalSignature, keyEncipherment\nnsCertType = server\n\
             [ client_cert ]\nkeyUsage = digitalSignature, keyEncipherment\nnsCertType = client\n",
        )
        .expect("openssl.cnf");
        for (name, ca, cn, ext) in [
            ("server", "ca", "Server-only", Some("server_cert")),
            ("client", "ca", "Client-only", Some("client_cert")),
            ("redis", "ca", "Generic-cert", None),
            ("stranger", "other-ca", "Stranger", Some("client_cert")),
        ] {
            openssl(&["genrsa", "-out", &format!("{name}.key"), "2048"], &dir);
            openssl(
                &[
                    "req",
                    "-new",
                    "-sha256",
                    "-subj",
                    &format!("/O=ferrokv test/CN={cn}"),
                    "-key",
                    &format!("{name}.key"),
                    "-out",
                    &format!("{name}.csr"),
                ],
                &dir,
            );
            let mut args = vec![
                "x509".to_string(),
                "-req".into(),
                "-sha256".into(),
                "-in".into(),
                format!("{name}.csr"),
                "-CA".into(),
                format!("{ca}.crt"),
                "-CAkey".into(),
                format!("{ca}.key"),
                "-CAcreateserial".into(),
                "-days".into(),
                "365".into(),
                "-out".into(),
                format!("{name}.crt"),
            ];
            if let Some(ext) = ext {
                args.extend([
                    "-extfile".into(),
                    "openssl.cnf".into(),
                    "-extensions".into(),
                    ext.into(),
                ]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            openssl(&args, &dir);
        }
        openssl(
            &[
                "genpkey",
                "-genparam",
                "-algorithm",
                "DH",
                "-pkeyopt",
                "group:ffdhe2048",
                "-out",
                "redis.dh",
            ],
            &dir,
        );
        Certs { dir }
    })
}

/// A server (`redis-server` or ferrokv) with `--port 0` and a TLS port
/// only, the certificates above and `extra` arguments.
struct TlsServer {
    port: u16,
    _child: ChildGuard,
    dir: PathBuf,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ferrokv_bin() -> &'static str {
    env!("CARGO_BIN_EXE_ferrokv")
}

fn spawn_tls(program: &str, extra: &[&str]) -> TlsServer {
    let dir = unique_temp_path("ferrokv-tls");
    std::fs::create_dir_all(&dir).expect("server directory");
    let tls = certs().server_args();
    let (child, port) = spawn_on_free_port(|port| {
        let mut cmd = Command::new(program);
        cmd.args([
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .args(["--save", "", "--dir", dir.to_str().unwrap_or("/tmp")])
        .args(&tls)
        .args(extra);
        cmd
    });
    TlsServer {
        port,
        _child: ChildGuard(child),
        dir,
    }
}

/// The two servers with the same arguments: (ferrokv, redis-server).
fn pair(extra: &[&str]) -> (TlsServer, TlsServer) {
    (
        spawn_tls(ferrokv_bin(), extra),
        spawn_tls("redis-server", extra),
    )
}

/// A TLS client connection speaking RESP.
struct TlsClient {
    s: SslStream<TcpStream>,
    buf: Vec<u8>,
}

/// Connects over TLS with client certificate `cert` ("client", "stranger"
/// or none), trusting the test CA; the error says why it failed.
fn tls_connect(port: u16, cert: Option<&str>) -> Result<TlsClient, String> {
    let c = certs();
    let mut b = SslConnector::builder(SslMethod::tls()).map_err(|e| e.to_string())?;
    b.set_ca_file(c.path("ca.crt")).map_err(|e| e.to_string())?;
    if let Some(name) = cert {
        b.set_certificate_file(
            c.path(&format!("{name}.crt")),
            openssl::ssl::SslFiletype::PEM,
        )
        .map_err(|e| e.to_string())?;
        b.set_private_key_file(
            c.path(&format!("{name}.key")),
            openssl::ssl::SslFiletype::PEM,
        )
        .map_err(|e| e.to_string())?;
    }
    let connector = b.build();
    let tcp = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let mut cfg = connector.configure().map_err(|e| e.to_string())?;
    cfg.set_verify_hostname(false);
    let s = cfg.connect("localhost", tcp).map_err(|e| e.to_string())?;
    Ok(TlsClient { s, buf: Vec::new() })
}

impl TlsClient {
    /// Sends a command and reads its reply; an error when the connection
    /// failed or closed.
    fn cmd(&mut self, args: &[&str]) -> Result<Vec<u8>, String> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.s
            .write_all(&crate::support::encode(&args))
            .map_err(|e| e.to_string())?;
        self.reply()
    }

    fn reply(&mut self) -> Result<Vec<u8>, String> {
        loop {
            if let Some(n) = frame_len(&self.buf) {
                return Ok(self.buf.drain(..n).collect());
            }
            let mut chunk = [0u8; 16384];
            match self.s.read(&mut chunk) {
                Ok(0) => return Err("closed".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// Whether a PING over TLS with client certificate `cert` is answered.
fn pong(port: u16, cert: Option<&str>) -> bool {
    tls_connect(port, cert)
        .and_then(|mut c| c.cmd(&["PING"]))
        .is_ok_and(|r| r == b"+PONG\r\n")
}

#[test]
fn replies_over_tls_match_redis() {
    let (f, r) = pair(&[]);
    let mut fc = tls_connect(f.port, Some("client")).expect("ferrokv over TLS");
    let mut rc = tls_connect(r.port, Some("client")).expect("redis over TLS");
    let big = "x".repeat(300_000);
    let cmds: Vec<Vec<&str>> = vec![
        vec!["PING"],
        vec!["SET", "k", "v"],
        vec!["GET", "k"],
        vec!["SET", "big", &big],
        vec!["STRLEN", "big"],
        vec!["GET", "big"],
        vec!["RPUSH", "l", "a", "b", "c"],
        vec!["LRANGE", "l", "0", "-1"],
        vec!["CLIENT", "SETNAME", "tls-client"],
        vec!["CLIENT", "GETNAME"],
        vec!["HGETALL", "nosuch"],
        vec!["INCR", "k"],
        vec!["CONFIG", "GET", "tls-*"],
        vec!["CONFIG", "GET", "port"],
    ];
    for cmd in &cmds {
        let a = fc.cmd(cmd).expect("ferrokv replies");
        let b = rc.cmd(cmd).expect("redis replies");
        if cmd[0] == "CONFIG" {
            // Paths and ports differ; the names and their order of
            // appearance do not matter, the values' shape does.
            assert_eq!(a.len() > 4, b.len() > 4, "{cmd:?}");
            continue;
        }
        assert_eq!(a, b, "{cmd:?}");
    }
    // A pipeline of many commands in one write, answered in order.
    let mut batch = Vec::new();
    for i in 0..2000 {
        batch.extend(crate::support::encode(&[
            b"INCRBY",
            b"n",
            i.to_string().as_bytes(),
        ]));
    }
    for c in [&mut fc, &mut rc] {
        c.s.write_all(&batch).expect("pipeline");
    }
    for _ in 0..2000 {
        assert_eq!(fc.reply().expect("ferrokv"), rc.reply().expect("redis"));
    }
    // redis-cli --tls prints the same.
    let c = certs();
    for args in [
        vec!["lrange", "l", "0", "-1"],
        vec!["get", "k"],
        vec!["dbsize"],
    ] {
        let out = |port: u16| {
            let o = Command::new("redis-cli")
                .args([
                    "-p",
                    &port.to_string(),
                    "--tls",
                    "--cacert",
                    &c.path("ca.crt"),
                ])
                .args([
                    "--cert",
                    &c.path("client.crt"),
                    "--key",
                    &c.path("client.key"),
                ])
                .args(&args)
                .output()
                .expect("redis-cli runs");
            String::from_utf8_lossy(&o.stdout).into_owned()
        };
        assert_eq!(out(f.port), out(r.port), "{args:?}");
    }
}

#[test]
fn client_certificates_are_checked_as_redis() {
    for auth in ["yes", "optional", "no"] {
        let (f, r) = pair(&["--tls-auth-clients", auth]);
        for cert in [Some("client"), None, Some("stranger")] {
            let (a, b) = (pong(f.port, cert), pong(r.port, cert));
            assert_eq!(a, b, "tls-auth-clients {auth}, client certificate {cert:?}");
        }
        // What Redis accepts: yes needs a certificate from its CA,
        // optional refuses only a stranger's, no asks for none.
        assert_eq!(pong(f.port, None), auth != "yes");
        assert_eq!(pong(f.port, Some("stranger")), auth == "no");
        assert!(pong(f.port, Some("client")));
    }
}

#[test]
fn bad_bytes_on_the_tls_port_close_only_their_connection() {
    let (f, r) = pair(&["--timeout", "1"]);
    for s in [&f, &r] {
        let mut keep = tls_connect(s.port, Some("client")).expect("a TLS client");
        assert_eq!(keep.cmd(&["SET", "a", "1"]).expect("reply"), b"+OK\r\n");
        // Plain text on the TLS port: the handshake fails, the
        // connection closes without a reply.
        let mut plain = Raw::connect(s.port);
        plain.send(b"PING\r\n");
        assert!(plain.read_to_close().is_empty(), "port {}", s.port);
        // A truncated record (the start of a ClientHello), then a close.
        let mut t = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
        t.write_all(&[0x16, 0x03, 0x01, 0x02]).expect("write");
        drop(t);
        assert_eq!(keep.cmd(&["GET", "a"]).expect("reply"), b"$1\r\n1\r\n");
        // A handshake that stalls is a client like any other: `timeout`
        // closes it.
        let mut stalled = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
        stalled
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut byte = [0u8; 1];
        assert!(
            matches!(stalled.read(&mut byte), Ok(0) | Err(_)),
            "port {}",
            s.port
        );
        let mut again = tls_connect(s.port, Some("client")).expect("a TLS client");
        assert_eq!(again.cmd(&["GET", "a"]).expect("reply"), b"$1\r\n1\r\n");
    }
    // Stalled handshakes count against maxclients, as in Redis: with
    // `maxclients 4`, four silent connections leave no room for a fifth.
    let (f, r) = pair(&["--maxclients", "4"]);
    for s in [&f, &r] {
        let silent: Vec<TcpStream> = (0..4)
            .map(|_| TcpStream::connect(("127.0.0.1", s.port)).expect("connect"))
            .collect();
        // Each is accepted (a client) before the fifth arrives.
        assert!(wait_until(Duration::from_secs(5), || {
            let _probe = &silent;
            !pong(s.port, Some("client"))
        }));
        drop(silent);
        assert!(wait_until(Duration::from_secs(5), || pong(
            s.port,
            Some("client")
        )));
    }
}

#[test]
fn replication_over_tls_both_ways() {
    for (master_bin, replica_bin) in [
        (ferrokv_bin(), "redis-server"),
        ("redis-server", ferrokv_bin()),
    ] {
        let master = spawn_tls(
            master_bin,
            &[
                "--tls-replication",
                "yes",
                "--repl-diskless-sync-delay",
                "0",
            ],
        );
        let mut m = tls_connect(master.port, Some("client")).expect("master");
        m.cmd(&["SET", "before", "1"]).expect("set");
        let port = master.port.to_string();
        let replica = spawn_tls(
            replica_bin,
            &[
                "--tls-replication",
                "yes",
                "--replicaof",
                "127.0.0.1",
                &port,
            ],
        );
        let mut r = tls_connect(replica.port, Some("client")).expect("replica");
        let synced = wait_until(Duration::from_secs(20), || {
            r.cmd(&["GET", "before"]).is_ok_and(|v| v == b"$1\r\n1\r\n")
        });
        assert!(
            synced,
            "{replica_bin} replica of {master_bin}: full sync over TLS"
        );
        m.cmd(&["SET", "after", "2"]).expect("set");
        let streamed = wait_until(Duration::from_secs(10), || {
            r.cmd(&["GET", "after"]).is_ok_and(|v| v == b"$1\r\n2\r\n")
        });
        assert!(
            streamed,
            "{replica_bin} replica of {master_bin}: the stream over TLS"
        );
        // The replica announced its TLS port to the master.
        let info = m.cmd(&["INFO", "replication"]).expect("info");
        let info = String::from_utf8_lossy(&info);
        assert!(
            info.contains(&format!("port={},", replica.port)),
            "{master_bin} sees {replica_bin} on its TLS port: {info}"
        );
    }
}

#[test]
fn tls_directives_are_set_and_refused_as_redis() {
    // A plain server with no TLS configured: CONFIG SET of tls-port
    // without certificates fails as Redis's; tls-cert-file alone is
    // accepted (nothing asks for TLS yet).
    let f = crate::support::spawn_ferrokv_process();
    let r = crate::support::spawn_redis();
    let mut pair = [Raw::connect(f.port), Raw::connect(r.port)];
    let c = certs();
    let tls_port = crate::support::free_port().to_string();
    let steps: Vec<Vec<String>> = vec![
        vec![
            "CONFIG".into(),
            "SET".into(),
            "tls-port".into(),
            tls_port.clone(),
        ],
        vec![
            "CONFIG".into(),
            "SET".into(),
            "tls-replication".into(),
            "yes".into(),
        ],
        vec![
            "CONFIG".into(),
            "SET".into(),
            "tls-cert-file".into(),
            c.path("server.crt"),
        ],
        vec![
            "CONFIG".into(),
            "SET".into(),
            "tls-key-file".into(),
            c.path("server.key"),
        ],
        vec![
            "CONFIG".into(),
            "SET".into(),
            "tls-ca-cert-file".into(),
            c.path("ca.crt"),
        ],
        vec![
            "CONFIG".into(),
            "SET".into(),
            "tls-protocols".into(),
            "TLSv1.2 SSLv9".into(),
        ],
        vec![
            "CONFIG".into(),
            "SET".into(),
            "tls-protocols".into(),
            "".into(),
        ],
        vec![
            "CONFIG".into(),
            "GET".into(),
            "tls-session-cache-size".into(),
        ],
        vec![
            "CONFIG".into(),
            "GET".into(),
            "tls-session-cache-timeout".into(),
        ],
        vec!["CONFIG".into(), "GET".into(), "tls-auth-clients".into()],
        vec![
            "CONFIG".into(),
            "SET".into(),
            "tls-auth-clients".into(),
            "maybe".into(),
        ],
        vec![
            "CONFIG".into(),
            "SET".into(),
            "tls-session-cache-size".into(),
            "-1".into(),
        ],
    ];
    for step in &steps {
        let args: Vec<&str> = step.iter().map(String::as_str).collect();
        let a = pair[0].cmd_str(&args);
        let b = pair[1].cmd_str(&args);
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{args:?}"
        );
    }
    // Only ferrokv opens the TLS port here (the ports differ): with the
    // certificates in place, tls-port now listens, and moves.
    let port: u16 = crate::support::free_port();
    let set = pair[0].cmd_str(&["CONFIG", "SET", "tls-port", &port.to_string()]);
    assert_eq!(set, b"+OK\r\n");
    assert!(pong(port, None) || pong(port, Some("client")));
    // A bad cipher list is refused, and TLS goes on with the old contexts.
    let bad = pair[0].cmd_str(&["CONFIG", "SET", "tls-ciphers", "NOSUCHCIPHER"]);
    assert!(bad.starts_with(b"-ERR CONFIG SET failed (possibly related to argument 'tls-ciphers') - Unable to update TLS configuration"));
    assert!(pong(port, Some("client")));
    assert_eq!(
        pair[0].cmd_str(&["CONFIG", "SET", "tls-port", "0"]),
        b"+OK\r\n"
    );
    assert!(wait_until(Duration::from_secs(5), || TcpStream::connect((
        "127.0.0.1",
        port
    ))
    .is_err()));
}

#[test]
fn a_certificate_change_reaches_new_connections_and_sessions_resume() {
    let f = spawn_tls(ferrokv_bin(), &["--tls-auth-clients", "no"]);
    let subject = |port: u16| {
        let c = tls_connect(port, None).expect("connect");
        let cert = c.s.ssl().peer_certificate().expect("a server certificate");
        let cn = cert
            .subject_name()
            .entries_by_nid(openssl::nid::Nid::COMMONNAME)
            .next()
            .and_then(|e| e.data().to_string().ok());
        cn.unwrap_or_default()
    };
    assert_eq!(subject(f.port), "Server-only");
    let mut admin = tls_connect(f.port, None).expect("connect");
    let c = certs();
    let r = admin
        .cmd(&[
            "CONFIG",
            "SET",
            "tls-cert-file",
            &c.path("redis.crt"),
            "tls-key-file",
            &c.path("redis.key"),
        ])
        .expect("reply");
    assert_eq!(r, b"+OK\r\n");
    assert_eq!(subject(f.port), "Generic-cert");
    // The open connection keeps working.
    assert_eq!(admin.cmd(&["PING"]).expect("reply"), b"+PONG\r\n");

    // Session resumption (tls-session-caching yes, the default) over
    // TLS 1.2, where the session is known once the handshake ends.
    let connect_with = |session: Option<&openssl::ssl::SslSessionRef>| {
        let mut b = SslConnector::builder(SslMethod::tls()).expect("builder");
        b.set_verify(SslVerifyMode::NONE);
        b.set_max_proto_version(Some(openssl::ssl::SslVersion::TLS1_2))
            .expect("version");
        let connector = b.build();
        let mut ssl = connector
            .configure()
            .expect("configure")
            .into_ssl("localhost")
            .expect("ssl");
        if let Some(s) = session {
            // SAFETY: the session comes from a connection to the same
            // server with the same context settings.
            unsafe { ssl.set_session(s) }.expect("set session");
        }
        let tcp = TcpStream::connect(("127.0.0.1", f.port)).expect("tcp");
        ssl.connect(tcp).expect("handshake")
    };
    let first = connect_with(None);
    let session = first.ssl().session().expect("a session").to_owned();
    let second = connect_with(Some(&session));
    assert!(second.ssl().session_reused(), "the session is resumed");
}

#[test]
fn bad_tls_configuration_stops_the_start_as_redis() {
    for args in [
        vec!["--tls-cert-file", ""],
        vec!["--tls-protocols", "TLSv9"],
        vec!["--tls-ca-cert-file", "/nonexistent/ca.crt"],
        vec!["--tls-ciphers", "NOSUCHCIPHER"],
    ] {
        let run = |program: &str| {
            let port = crate::support::free_port().to_string();
            let out = Command::new(program)
                .args([
                    "--port",
                    "0",
                    "--tls-port",
                    &port,
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                ])
                .args(certs().server_args())
                .args(&args)
                .output()
                .expect("server runs");
            let log = String::from_utf8_lossy(&out.stdout).into_owned();
            (
                out.status.code(),
                log.contains("Failed to configure TLS. Check logs for more info."),
            )
        };
        assert_eq!(run(ferrokv_bin()), run("redis-server"), "{args:?}");
        assert_eq!(run(ferrokv_bin()), (Some(1), true), "{args:?}");
    }
}

/// A server with a plain port and a TLS port, TLS on its cluster bus
/// (`tls-cluster yes`): (guard, plain port, TLS port).
fn spawn_tls_cluster_node(program: &str) -> (TlsServer, u16) {
    // The bus port is the TLS port + 10000: TLS ports below 55535.
    loop {
        let plain = crate::support::free_port();
        let s = spawn_tls(
            program,
            &[
                "--port",
                &plain.to_string(),
                "--cluster-enabled",
                "yes",
                "--tls-cluster",
                "yes",
                "--tls-replication",
                "yes",
            ],
        );
        if s.port < 55_000 {
            return (s, plain);
        }
    }
}

#[test]
fn a_mixed_cluster_speaks_tls_on_its_bus() {
    let (f, f_plain) = spawn_tls_cluster_node(ferrokv_bin());
    let (r, r_plain) = spawn_tls_cluster_node("redis-server");
    let mut fc = tls_connect(f.port, Some("client")).expect("ferrokv");
    let mut rc = tls_connect(r.port, Some("client")).expect("redis");
    // The bus port follows the TLS port.
    let meet = fc
        .cmd(&[
            "CLUSTER",
            "MEET",
            "127.0.0.1",
            &r.port.to_string(),
            &(r.port + 10000).to_string(),
        ])
        .expect("meet");
    assert_eq!(meet, b"+OK\r\n");
    let mut add = vec![
        "CLUSTER".to_string(),
        "ADDSLOTSRANGE".into(),
        "0".into(),
        "8191".into(),
    ];
    let args: Vec<&str> = add.iter().map(String::as_str).collect();
    assert_eq!(fc.cmd(&args).expect("addslots"), b"+OK\r\n");
    add[2] = "8192".into();
    add[3] = "16383".into();
    let args: Vec<&str> = add.iter().map(String::as_str).collect();
    assert_eq!(rc.cmd(&args).expect("addslots"), b"+OK\r\n");
    let ok = |c: &mut TlsClient| {
        c.cmd(&["CLUSTER", "INFO"])
            .is_ok_and(|i| String::from_utf8_lossy(&i).contains("cluster_state:ok"))
    };
    assert!(
        wait_until(Duration::from_secs(30), || ok(&mut fc) && ok(&mut rc)),
        "both nodes see the whole cluster over the TLS bus"
    );
    // TLS clients see TLS ports; plain clients the plaintext ones, as
    // Redis shows them.
    let nodes = |c: &mut TlsClient| {
        String::from_utf8_lossy(&c.cmd(&["CLUSTER", "NODES"]).expect("nodes")).into_owned()
    };
    let shown = nodes(&mut rc);
    assert!(
        shown.contains(&format!("127.0.0.1:{}@{}", f.port, f.port + 10000)),
        "{shown}"
    );
    let mut plain = Raw::connect(f_plain);
    let text = String::from_utf8_lossy(&plain.cmd_str(&["CLUSTER", "NODES"])).into_owned();
    assert!(
        text.contains(&format!("127.0.0.1:{r_plain}@{}", r.port + 10000)),
        "{text}"
    );
    // A redirection names the port of the client's kind; key "a" is in
    // slot 15495 (redis-server's half).
    let moved_plain = plain.cmd_str(&["GET", "a"]);
    assert_eq!(
        moved_plain,
        format!("-MOVED 15495 127.0.0.1:{r_plain}\r\n").as_bytes()
    );
    let moved_tls = fc.cmd(&["GET", "a"]).expect("reply");
    assert_eq!(
        moved_tls,
        format!("-MOVED 15495 127.0.0.1:{}\r\n", r.port).as_bytes()
    );
    // redis-server redirects ferrokv's keys the same way: "b" is in slot
    // 3300.
    let mut rplain = Raw::connect(r_plain);
    assert_eq!(
        rplain.cmd_str(&["GET", "b"]),
        format!("-MOVED 3300 127.0.0.1:{f_plain}\r\n").as_bytes()
    );
    assert_eq!(
        rc.cmd(&["GET", "b"]).expect("reply"),
        format!("-MOVED 3300 127.0.0.1:{}\r\n", f.port).as_bytes()
    );
    // CLUSTER SHARDS shows both ports.
    let shards =
        String::from_utf8_lossy(&fc.cmd(&["CLUSTER", "SHARDS"]).expect("shards")).into_owned();
    assert!(
        shards.contains(&format!(
            "$4\r\nport\r\n:{f_plain}\r\n$8\r\ntls-port\r\n:{}\r\n",
            f.port
        )),
        "{shards}"
    );
}
