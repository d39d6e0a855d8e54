//! Connection commands against redis-server: PING, ECHO, SELECT, QUIT,
//! HELLO, AUTH, RESET and CLIENT (Redis's `unit/introspection` and
//! `unit/auth` territory).

use crate::support::*;

/// Replaces the value after `$2\r\nid\r\n` in a HELLO reply (client ids
/// differ between the servers).
fn mask_hello_id(reply: &[u8]) -> String {
    let s = String::from_utf8_lossy(reply).into_owned();
    let Some(at) = s.find("$2\r\nid\r\n:") else {
        return s;
    };
    let start = at + "$2\r\nid\r\n:".len();
    let end = start + s[start..].find("\r\n").expect("id line ends");
    format!("{}<id>{}", &s[..start], &s[end..])
}

/// Sends to both and compares HELLO replies with the id masked.
fn same_hello(p: &mut Pair, args: &[&str]) {
    let (ours, theirs) = p.both(args);
    assert_eq!(
        mask_hello_id(&ours),
        mask_hello_id(&theirs),
        "HELLO {args:?}"
    );
}

/// The text of a CLIENT LIST/INFO reply (bulk or verbatim).
fn text_of(reply: &[u8]) -> String {
    let s = String::from_utf8_lossy(reply).into_owned();
    let body = &s[s.find("\r\n").expect("header") + 2..s.len() - 2];
    body.strip_prefix("txt:").unwrap_or(body).to_string()
}

/// Field names of a CLIENT LIST line, in order.
fn field_names(line: &str) -> Vec<String> {
    line.split(' ')
        .map(|f| f.split('=').next().unwrap_or_default().to_string())
        .collect()
}

/// The value of `field` in a CLIENT LIST line.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|f| f.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

#[test]
fn ping_echo_select_quit() {
    let mut p = Pair::new();
    p.script(&[
        "PING",
        "PING hello",
        "PING a b",
        "ECHO x",
        "ECHO",
        "SELECT 1",
        "SELECT 16",
        "SELECT -1",
        "SELECT x",
        "SELECT 99999999999999999999",
        "SELECT 9223372036854775807",
        "SELECT 2147483648",
        "SELECT -2147483649",
        "SELECT 1.5",
        "SELECT 0",
    ]);
    p.same(&["ECHO", ""]);
    p.same(&["QUIT", "extra"]);
    assert!(p.ours.is_closed());
    assert!(p.theirs.is_closed());
}

#[test]
fn hello_replies_and_errors() {
    let mut p = Pair::new();
    same_hello(&mut p, &["HELLO"]);
    same_hello(&mut p, &["HELLO", "2"]);
    p.script(&[
        "HELLO 4",
        "HELLO 1",
        "HELLO x",
        "HELLO 3 foo",
        "HELLO 3 AUTH a",
        "HELLO 3 SETNAME",
        "HELLO 2 AUTH nouser pass",
    ]);
    same_hello(&mut p, &["HELLO", "2", "AUTH", "default", "anything"]);
    p.same(&["HELLO", "3", "SETNAME", "a b"]);
    same_hello(&mut p, &["HELLO", "3", "SETNAME", "myname"]);
    p.script(&[
        "CLIENT GETNAME",
        "GET nokey",
        "CLIENT SETNAME",
        "HELLO 3 foo",
    ]);
    same_hello(&mut p, &["HELLO"]);
    same_hello(&mut p, &["HELLO", "2"]);
    p.script(&["GET nokey"]);
}

#[test]
fn auth_without_password() {
    let mut p = Pair::new();
    p.script(&[
        "AUTH x",
        "AUTH default x",
        "AUTH nouser x",
        "AUTH a b c",
        "AUTH",
    ]);
}

#[test]
fn auth_with_requirepass() {
    let mut p = Pair::new_with(
        |c| c.requirepass = Some(b"foo".to_vec()),
        &["--requirepass", "foo"],
    );
    p.script(&[
        "PING",
        "GET k",
        "CLIENT ID",
        "HELLO",
        "HELLO 3 AUTH default bad",
        "AUTH bad",
        "AUTH default bad",
        "AUTH Default foo",
        "AUTH a b c",
        "PING",
    ]);
    // SETNAME is applied before HELLO checks authentication.
    p.same(&["HELLO", "2", "SETNAME", "early"]);
    p.script(&[
        "AUTH foo",
        "PING",
        "CLIENT GETNAME",
        "RESET",
        "PING",
        "CLIENT GETNAME",
    ]);
    same_hello(
        &mut p,
        &["HELLO", "3", "AUTH", "default", "foo", "SETNAME", "n"],
    );
    p.script(&[
        "PING",
        "CLIENT GETNAME",
        "RESET",
        "GET k",
        "AUTH default foo",
        "GET k",
    ]);
    // QUIT needs no authentication.
    let (mut o, mut t) = p.connect_again();
    for r in [&mut o, &mut t] {
        assert_eq!(r.cmd_str(&["QUIT"]), b"+OK\r\n");
        assert!(r.is_closed());
    }
}

#[test]
fn reset_restores_connection_defaults() {
    let mut p = Pair::new();
    same_hello(&mut p, &["HELLO", "3"]);
    p.script(&[
        "SELECT 3",
        "SET k v",
        "CLIENT SETNAME somename",
        "CLIENT NO-EVICT on",
    ]);
    p.ours.send(&encode(&[b"CLIENT", b"REPLY", b"OFF"]));
    p.theirs.send(&encode(&[b"CLIENT", b"REPLY", b"OFF"]));
    p.script(&["RESET", "GET k", "CLIENT GETNAME", "CLIENT REPLY ON"]);
    // Back in RESP2 (null bulk) and db 0.
    let info = text_of(&p.ours.cmd_str(&["CLIENT", "INFO"]));
    let info = info.trim_end();
    assert_eq!(field(info, "db"), "0");
    assert_eq!(field(info, "resp"), "2");
    assert_eq!(field(info, "name"), "");
    // NO-EVICT survives RESET, as in Redis.
    assert_eq!(field(info, "flags"), "e");
    let theirs = text_of(&p.theirs.cmd_str(&["CLIENT", "INFO"]));
    assert_eq!(field(theirs.trim_end(), "flags"), "e");
}

#[test]
fn client_reply_modes() {
    let mut p = Pair::new();
    for r in [&mut p.ours, &mut p.theirs] {
        r.send(&encode(&[b"CLIENT", b"REPLY", b"SKIP"]));
        r.send(&encode(&[b"ECHO", b"skipped"]));
    }
    p.same(&["ECHO", "after-skip"]);
    for r in [&mut p.ours, &mut p.theirs] {
        r.send(&encode(&[b"CLIENT", b"REPLY", b"OFF"]));
        r.send(&encode(&[b"ECHO", b"off"]));
        r.send(&encode(&[b"CLIENT", b"REPLY", b"SKIP"]));
        r.send(&encode(&[b"ECHO", b"still-off"]));
    }
    p.script(&[
        "CLIENT REPLY ON",
        "ECHO on",
        "CLIENT REPLY maybe",
        "CLIENT REPLY",
    ]);
}

#[test]
fn client_simple_subcommands() {
    let mut p = Pair::new();
    p.script(&[
        "CLIENT GETNAME",
        "CLIENT SETNAME abc",
        "CLIENT GETNAME",
        "CLIENT SETNAME",
        "CLIENT SETNAME a b",
        "CLIENT SETNAME ",
        "CLIENT GETNAME",
        "CLIENT NO-EVICT on",
        "CLIENT NO-EVICT off",
        "CLIENT NO-EVICT maybe",
        "CLIENT GETREDIR",
        "CLIENT TRACKINGINFO",
        "CLIENT",
        "CLIENT NOSUCH",
        "CLIENT SETINFO lib-name x",
        "CLIENT NO-TOUCH on",
        "CLIENT LIST TYPE foo",
        "CLIENT LIST ID",
        "CLIENT LIST ID 1 abc",
        "CLIENT LIST foo",
        "CLIENT LIST ID 99999",
        "CLIENT LIST TYPE pubsub",
        "CLIENT LIST TYPE master",
        "CLIENT KILL 1.2.3.4:5",
        "CLIENT KILL ID 99999",
        "CLIENT KILL ID 0",
        "CLIENT KILL ID abc",
        "CLIENT KILL TYPE foo",
        "CLIENT KILL TYPE normal SKIPME maybe",
        "CLIENT KILL USER nouser",
        "CLIENT KILL USER default",
        "CLIENT KILL LADDR 1.1.1.1:1",
        "CLIENT KILL ID 1 ID",
        "CLIENT KILL MAXAGE 10",
        "CLIENT KILL ADDR",
        "CLIENT KILL TYPE replica",
        "CLIENT KILL TYPE pubsub",
    ]);
    p.same(&["CLIENT", "SETNAME", "\u{e9}"]);
    p.same(&["CLIENT", "SETNAME", "a\nb"]);
    same_hello(&mut p, &["HELLO", "3"]);
    p.script(&["CLIENT GETNAME", "CLIENT TRACKINGINFO", "CLIENT GETREDIR"]);
    let (ours, theirs) = p.both(&["CLIENT", "ID"]);
    assert!(ours.starts_with(b":") && theirs.starts_with(b":"));
}

/// CLIENT HELP is Redis's, line for line.
#[test]
fn client_help_is_redis() {
    let mut p = Pair::new();
    p.same(&["CLIENT", "HELP"]);
}

#[test]
fn client_list_and_info_format() {
    let mut p = Pair::new();
    p.script(&["CLIENT SETNAME me", "SELECT 2"]);
    for cmd in [
        &["CLIENT", "INFO"][..],
        &["CLIENT", "LIST"],
        &["CLIENT", "LIST", "TYPE", "normal"],
    ] {
        let (ours, theirs) = p.both(cmd);
        assert_eq!(ours[0], b'$');
        assert_eq!(theirs[0], b'$');
        let (o, t) = (text_of(&ours), text_of(&theirs));
        assert!(o.ends_with('\n') && t.ends_with('\n'), "{o:?}");
        let (o, t) = (o.trim_end(), t.trim_end());
        assert_eq!(field_names(o), field_names(t), "{o}\n{t}");
        for f in [
            "name",
            "flags",
            "db",
            "sub",
            "multi",
            "multi-mem",
            "argv-mem",
            "qbuf",
            "events",
            "cmd",
            "user",
            "redir",
            "resp",
        ] {
            assert_eq!(field(o, f), field(t, f), "field {f}:\n{o}\n{t}");
        }
    }
    // CLIENT LIST ID with this client's own id.
    let id = String::from_utf8_lossy(&p.ours.cmd_str(&["CLIENT", "ID"]))[1..]
        .trim()
        .to_string();
    let one = text_of(&p.ours.cmd_str(&["CLIENT", "LIST", "ID", &id, &id]));
    assert_eq!(one.lines().count(), 2);
    assert_eq!(field(one.lines().next().expect("line"), "id"), id);
    // RESP3: verbatim text.
    same_hello(&mut p, &["HELLO", "3"]);
    let (ours, theirs) = p.both(&["CLIENT", "INFO"]);
    assert!(ours.starts_with(b"=") && theirs.starts_with(b"="));
    let (o, t) = (text_of(&ours), text_of(&theirs));
    assert_eq!(field_names(o.trim_end()), field_names(t.trim_end()));
    assert_eq!(field(o.trim_end(), "resp"), "3");
    // Another connection shows up, idle.
    let (mut o2, mut t2) = p.connect_again();
    o2.cmd_str(&["PING"]);
    t2.cmd_str(&["PING"]);
    let (ours, theirs) = p.both(&["CLIENT", "LIST"]);
    let (o, t) = (text_of(&ours), text_of(&theirs));
    assert_eq!(o.lines().count(), 2);
    assert_eq!(t.lines().count(), 2);
    other_client_agrees(&mut p, &["cmd", "qbuf", "argv-mem", "flags", "db"], "idle");
    // `cmd=` names the last command even when it was refused, and reads
    // NULL after an unknown command or subcommand.
    for refused in [
        &["GET", "x"][..],
        &["FOO"],
        &["GET"],
        &["CLIENT", "NOSUCH"],
        &["SET", "k", "v"],
    ] {
        o2.cmd_str(refused);
        t2.cmd_str(refused);
        other_client_agrees(&mut p, &["cmd"], &format!("after {refused:?}"));
    }
    // A queue's multi-mem: its arguments' bytes and a pointer per argument.
    for c in [&["MULTI"][..], &["SET", "a", "bbbbbbbbbb"], &["GET", "a"]] {
        o2.cmd_str(c);
        t2.cmd_str(c);
    }
    other_client_agrees(&mut p, &["multi", "multi-mem", "flags"], "queueing");
}

/// A client blocked on keys or held by CLIENT PAUSE keeps its command's
/// argv (`argv-mem`) and the rest of its pipeline (`qbuf`) in CLIENT LIST,
/// as Redis's blocked clients do.
#[test]
fn client_list_shows_what_a_held_client_holds() {
    let mut p = Pair::new();
    let pipelines: [&[&[&str]]; 4] = [
        &[&["BLPOP", "l", "0"], &["GET", "x"], &["SET", "a", "b"]],
        &[&["XREAD", "BLOCK", "0", "STREAMS", "x", "$"]],
        &[&["SET", "k", "v"], &["GET", "k"]],
        &[&["MULTI"], &["SET", "k", "v"], &["EXEC"]],
    ];
    for (n, cmds) in pipelines.iter().enumerate() {
        let paused = n >= 2;
        if paused {
            p.both(&["CLIENT", "PAUSE", "100000", "WRITE"]);
        }
        let (mut o, mut t) = p.connect_again();
        let wire: Vec<u8> = cmds
            .iter()
            .flat_map(|c| encode(&c.iter().map(|a| a.as_bytes()).collect::<Vec<_>>()))
            .collect();
        let (oa, ta) = (own_addr(&mut o), own_addr(&mut t));
        o.send(&wire);
        t.send(&wire);
        crate::stream::wait_blocked(&mut p, 1);
        let (ours, theirs) = p.both(&["CLIENT", "LIST"]);
        let line = |list: &[u8], addr: &str| {
            text_of(list)
                .lines()
                .find(|l| field(l, "addr") == addr)
                .expect("held client listed")
                .to_string()
        };
        let (ol, tl) = (line(&ours, &oa), line(&theirs, &ta));
        for f in ["flags", "qbuf", "argv-mem", "multi", "cmd"] {
            assert_eq!(
                field(&ol, f),
                field(&tl, f),
                "{f} for {cmds:?}:\n{ol}\n{tl}"
            );
        }
        if paused {
            p.both(&["CLIENT", "UNPAUSE"]);
        }
        p.both(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
        crate::stream::wait_blocked(&mut p, 0);
    }
}

/// CLIENT INFO's `qbuf` counts what was read with the command, as Redis's
/// query buffer holds a whole read until every command in it has run: an
/// inline command's own bytes, and a pipeline's every command, those run
/// before it included. ferrokv gave the command's size as a multibulk,
/// alone (26 bytes for each case here).
#[test]
fn client_info_qbuf_counts_the_whole_read_as_redis() {
    let mut p = Pair::new();
    let info = encode(&[&b"CLIENT"[..], b"INFO"]);
    let ping = encode(&[&b"PING"[..]]);
    // Each case's bytes, sent in one write, and its number of commands.
    let cases: [(Vec<u8>, usize); 4] = [
        (b"CLIENT INFO\r\n".to_vec(), 1),
        (
            [b"PING\r\n".as_slice(), b"CLIENT INFO\r\n", b"PING\r\n"].concat(),
            3,
        ),
        ([info.as_slice(), &ping].concat(), 2),
        ([ping.as_slice(), &info, &ping, &ping].concat(), 4),
    ];
    for (wire, commands) in &cases {
        let mut qbufs = Vec::new();
        for r in [&mut p.ours, &mut p.theirs] {
            r.send(wire);
            let mut line = String::new();
            for _ in 0..*commands {
                let reply = r.read_reply();
                if reply.starts_with(b"$") {
                    line = text_of(&reply);
                }
            }
            qbufs.push(field(line.trim_end(), "qbuf").to_string());
        }
        assert_eq!(
            qbufs[0],
            qbufs[1],
            "{:?} (left ferrokv)",
            String::from_utf8_lossy(wire)
        );
    }
}

/// The second client CLIENT LIST shows has the same `fields` on both servers.
fn other_client_agrees(p: &mut Pair, fields: &[&str], when: &str) {
    let (ours, theirs) = p.both(&["CLIENT", "LIST"]);
    let (o, t) = (text_of(&ours), text_of(&theirs));
    let (o, t) = (
        o.lines().nth(1).expect("second"),
        t.lines().nth(1).expect("second"),
    );
    for f in fields {
        assert_eq!(field(o, f), field(t, f), "field {f} {when}:\n{o}\n{t}");
    }
}

/// The `addr=` of the connection behind `r`.
fn own_addr(r: &mut Raw) -> String {
    let info = text_of(&r.cmd_str(&["CLIENT", "INFO"]));
    field(info.trim_end(), "addr").to_string()
}

#[test]
fn client_kill_other_and_self() {
    let mut p = Pair::new();
    // By ID.
    let (mut o2, mut t2) = p.connect_again();
    for (main, other) in [(&mut p.ours, &mut o2), (&mut p.theirs, &mut t2)] {
        let id = String::from_utf8_lossy(&other.cmd_str(&["CLIENT", "ID"]))[1..]
            .trim()
            .to_string();
        assert_eq!(main.cmd_str(&["CLIENT", "KILL", "ID", &id]), b":1\r\n");
        assert!(other.is_closed());
        assert_eq!(main.cmd_str(&["CLIENT", "KILL", "ID", &id]), b":0\r\n");
    }
    // Old form, by address.
    let (mut o3, mut t3) = p.connect_again();
    for (main, other) in [(&mut p.ours, &mut o3), (&mut p.theirs, &mut t3)] {
        let addr = own_addr(other);
        assert_eq!(main.cmd_str(&["CLIENT", "KILL", &addr]), b"+OK\r\n");
        assert!(other.is_closed());
        assert_eq!(
            main.cmd_str(&["CLIENT", "KILL", &addr]),
            b"-ERR No such client\r\n"
        );
    }
    // New form by ADDR and LADDR: skips the caller by default.
    for r in [&mut p.ours, &mut p.theirs] {
        let addr = own_addr(r);
        assert_eq!(r.cmd_str(&["CLIENT", "KILL", "ADDR", &addr]), b":0\r\n");
        let info = text_of(&r.cmd_str(&["CLIENT", "INFO"]));
        let laddr = field(info.trim_end(), "laddr").to_string();
        assert_eq!(r.cmd_str(&["CLIENT", "KILL", "LADDR", &laddr]), b":0\r\n");
        assert_eq!(r.cmd_str(&["CLIENT", "KILL", "TYPE", "normal"]), b":0\r\n");
    }
    // TYPE normal kills every other ordinary client.
    let (mut o4, mut t4) = p.connect_again();
    let (mut o5, mut t5) = p.connect_again();
    for r in [&mut o4, &mut t4, &mut o5, &mut t5] {
        r.cmd_str(&["PING"]);
    }
    p.same(&["CLIENT", "KILL", "TYPE", "normal", "USER", "default"]);
    for r in [&mut o4, &mut t4, &mut o5, &mut t5] {
        assert!(r.is_closed());
    }
    // Killing oneself: the reply arrives, then the connection closes.
    let (mut o6, mut t6) = p.connect_again();
    for r in [&mut o6, &mut t6] {
        let id = String::from_utf8_lossy(&r.cmd_str(&["CLIENT", "ID"]))[1..]
            .trim()
            .to_string();
        assert_eq!(
            r.cmd_str(&["CLIENT", "KILL", "ID", &id, "SKIPME", "no"]),
            b":1\r\n"
        );
        assert!(r.is_closed());
    }
    for r in [&mut p.ours, &mut p.theirs] {
        let addr = own_addr(r);
        assert_eq!(r.cmd_str(&["CLIENT", "KILL", &addr]), b"+OK\r\n");
        assert!(r.is_closed());
    }
}

#[test]
fn redis_crate_client_handshake() {
    // The redis crate sends CLIENT SETINFO (a 7.2 command) and ignores the
    // error; the connection must still work, in RESP2 and RESP3.
    let server = start();
    let mut con = server.client();
    let pong: String = redis::cmd("PING").query(&mut con).expect("ping");
    assert_eq!(pong, "PONG");
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", server.port))
        .expect("url");
    let mut con3 = client.get_connection().expect("resp3 connection");
    let name: Option<String> = redis::cmd("CLIENT")
        .arg("GETNAME")
        .query(&mut con3)
        .expect("getname");
    assert_eq!(name, None);
    let info: String = redis::cmd("CLIENT")
        .arg("INFO")
        .query(&mut con3)
        .expect("info");
    assert!(info.contains("resp=3"), "{info}");
}

#[test]
fn client_pause_and_unpause() {
    use std::time::{Duration, Instant};
    let mut p = Pair::new();
    p.script(&[
        "CLIENT PAUSE abc",
        "CLIENT PAUSE -1",
        "CLIENT PAUSE 10 foo",
        "CLIENT PAUSE abc foo",
        "CLIENT PAUSE 10 write x",
        "CLIENT PAUSE",
        "CLIENT UNPAUSE x",
        "CLIENT PAUSE 0",
        "CLIENT PAUSE 0 WRITE",
        "CLIENT UNPAUSE",
    ]);
    let (mut a, _) = p.connect_again();
    let (mut b, _) = p.connect_again();
    // WRITE: reads go on, writes wait for the end of the pause.
    assert_eq!(a.cmd_str(&["CLIENT", "PAUSE", "300", "WRITE"]), b"+OK\r\n");
    let t = Instant::now();
    assert_eq!(b.cmd_str(&["GET", "k"]), b"$-1\r\n");
    assert!(t.elapsed() < Duration::from_millis(250));
    assert_eq!(b.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
    assert!(
        t.elapsed() >= Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
    // UNPAUSE releases held commands at once; ALL holds reads too.
    assert_eq!(
        a.cmd_str(&["CLIENT", "PAUSE", "100000", "WRITE"]),
        b"+OK\r\n"
    );
    b.send(&encode(&[b"SET", b"k", b"w"]));
    b.send(&encode(&[b"GET", b"k"]));
    assert_eq!(a.cmd_str(&["GET", "k"]), b"$1\r\nv\r\n");
    assert_eq!(a.cmd_str(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    assert_eq!(b.read_reply(), b"+OK\r\n");
    assert_eq!(b.read_reply(), b"$1\r\nw\r\n");
    assert_eq!(a.cmd_str(&["CLIENT", "PAUSE", "200", "ALL"]), b"+OK\r\n");
    let t = Instant::now();
    assert_eq!(b.cmd_str(&["PING"]), b"+PONG\r\n");
    assert!(
        t.elapsed() >= Duration::from_millis(100),
        "{:?}",
        t.elapsed()
    );
}

/// Commands held by a pause that has ended run before any command sent
/// after its end: Redis holds every arrival until its cron ends the pause,
/// then runs them in the order they came.
#[test]
fn held_commands_run_before_those_sent_after_the_pause() {
    use std::time::{Duration, Instant};
    let p = Pair::new();
    let (ours, theirs) = p.ports();
    for port in [ours, theirs] {
        let mut a = Raw::connect(port);
        let mut b = Raw::connect(port);
        let mut d = Raw::connect(port);
        let t = Instant::now();
        assert_eq!(a.cmd_str(&["CLIENT", "PAUSE", "200", "ALL"]), b"+OK\r\n");
        b.send(&encode(&[b"SET", b"k", b"v"]));
        // The pause ends by the clock; nothing runs the held SET first.
        assert!(wait_until(Duration::from_secs(5), || t.elapsed()
            >= Duration::from_millis(200)));
        assert_eq!(d.cmd_str(&["GET", "k"]), b"$1\r\nv\r\n", "port {port}");
        assert_eq!(b.read_reply(), b"+OK\r\n");
    }
}

/// A fresh server's first connection is id 3 in both: Redis 7.0 gives
/// ids 1 and 2 to its Lua and function-engine clients at start-up.
#[test]
fn the_first_connection_is_client_id_3() {
    let server = start();
    let redis = spawn_redis();
    for port in [server.port, redis.port] {
        let mut r = Raw::connect(port);
        assert_eq!(r.cmd_str(&["CLIENT", "ID"]), b":3\r\n", "port {port}");
    }
}
