//! The CLOCK command: refused as Redis refuses DEBUG unless
//! `enable-clock-command` allows it; what follows the logical clock (TTLs,
//! active expiry, TIME, stream IDs, blocking timeouts, idle times of keys,
//! CL.THROTTLE) and what stays on real time (command durations, client
//! idle times and timeouts, save points, LASTSAVE).

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::support::*;

fn clock_on() -> Ferrokv {
    start_with(|c| {
        c.other.insert("enable-clock-command", "yes".into());
    })
}

fn int(reply: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(reply);
    text.trim_end()
        .strip_prefix(':')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not an integer: {text:?}"))
}

fn info_field(r: &mut Raw, section: &str, field: &str) -> String {
    let info = String::from_utf8_lossy(&r.cmd_str(&["INFO", section])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {info}"))
        .to_string()
}

/// Waits (5 s at most) until an INFO field reads `want`.
fn wait_for_field(r: &mut Raw, section: &str, field: &str, want: &str) {
    assert!(
        wait_until(Duration::from_secs(5), || info_field(r, section, field)
            == want),
        "{field} is {}, not {want}",
        info_field(r, section, field)
    );
}

#[test]
fn refused_unless_enabled_with_debugs_wording() {
    // Redis's refusal of DEBUG, with the command and parameter renamed.
    let redis = spawn_redis();
    let theirs = Raw::connect(redis.port).cmd_str(&["DEBUG", "SLEEP", "0"]);
    let want = String::from_utf8_lossy(&theirs)
        .replace("DEBUG", "CLOCK")
        .replace("enable-debug-command", "enable-clock-command");
    let server = start();
    let mut r = server.raw();
    assert_eq!(String::from_utf8_lossy(&r.cmd_str(&["CLOCK", "NOW"])), want);
    // Refused before running: inside MULTI it fails the transaction.
    r.cmd_str(&["MULTI"]);
    assert_eq!(String::from_utf8_lossy(&r.cmd_str(&["CLOCK", "NOW"])), want);
    assert_eq!(
        r.cmd_str(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    let stats = String::from_utf8_lossy(&r.cmd_str(&["INFO", "commandstats"])).into_owned();
    assert!(
        stats.contains(
            "cmdstat_clock:calls=0,usec=0,usec_per_call=0.00,rejected_calls=2,failed_calls=0"
        ),
        "{stats}"
    );
    // Like enable-debug-command: immutable, and only named exactly.
    assert_eq!(
        r.cmd_str(&["CONFIG", "SET", "enable-clock-command", "yes"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'enable-clock-command') - can't set immutable config\r\n"
    );
    assert_eq!(
        r.cmd_str(&["CONFIG", "GET", "enable-clock-command"]),
        b"*2\r\n$20\r\nenable-clock-command\r\n$2\r\nno\r\n"
    );
    // Scripts may not call it.
    let from_lua = r.cmd_str(&["EVAL", "return redis.call('clock', 'now')", "0"]);
    assert!(from_lua.starts_with(b"-ERR This Redis command is not allowed from script"));
}

#[test]
fn local_allows_only_127_0_0_1_and_its_value_comes_from_the_command_line() {
    let server = start_with(|c| {
        // Protected mode would turn 127.0.0.2 away before CLOCK could.
        ferrokv::config::file::load_str(c, "enable-clock-command local\nprotected-mode no")
            .expect("directive");
    });
    let mut local = server.raw();
    assert!(local.cmd_str(&["CLOCK", "NOW"]).starts_with(b":"));
    // Another loopback address is not local, as in Redis.
    let sock =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    sock.bind(&SocketAddr::from(([127, 0, 0, 2], 0)).into())
        .expect("bind 127.0.0.2");
    sock.connect(&SocketAddr::from(([127, 0, 0, 1], server.port)).into())
        .expect("connect");
    let mut other = Raw::from_stream(TcpStream::from(sock));
    let reply = other.cmd_str(&["CLOCK", "NOW"]);
    assert!(
        reply.starts_with(b"-ERR CLOCK command not allowed."),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    assert_eq!(other.cmd_str(&["PING"]), b"+PONG\r\n");
}

#[test]
fn subcommands_and_their_errors() {
    let server = clock_on();
    let mut r = server.raw();
    assert_eq!(r.cmd_str(&["CLOCK", "SET", "1700000000123"]), b"+OK\r\n");
    let now = int(&r.cmd_str(&["CLOCK", "NOW"]));
    assert!(
        (1_700_000_000_123..1_700_000_010_000).contains(&now),
        "{now}"
    );
    assert_eq!(r.cmd_str(&["CLOCK", "FREEZE"]), b"+OK\r\n");
    let frozen = int(&r.cmd_str(&["CLOCK", "NOW"]));
    // Standing still: two TIME replies a round trip apart are the same.
    let t = r.cmd_str(&["TIME"]);
    assert_eq!(r.cmd_str(&["TIME"]), t);
    assert_eq!(r.cmd_str(&["CLOCK", "ADVANCE", "5000"]), b"+OK\r\n");
    assert_eq!(int(&r.cmd_str(&["CLOCK", "NOW"])), frozen + 5000);
    assert_eq!(r.cmd_str(&["CLOCK", "SET", "1000"]), b"+OK\r\n");
    assert_eq!(int(&r.cmd_str(&["CLOCK", "NOW"])), 1000);
    assert_eq!(r.cmd_str(&["TIME"]), b"*2\r\n$1\r\n1\r\n$1\r\n0\r\n");
    assert_eq!(r.cmd_str(&["CLOCK", "RESUME"]), b"+OK\r\n");
    assert!(wait_until(Duration::from_secs(5), || int(
        &r.cmd_str(&["CLOCK", "NOW"])
    ) > 1000));
    let cases: &[(&[&str], &[u8])] = &[
        (&["CLOCK"], b"-ERR wrong number of arguments for 'clock' command\r\n"),
        (&["CLOCK", "TICK"], b"-ERR unknown subcommand 'TICK'. Try CLOCK HELP.\r\n"),
        (&["CLOCK", "NOW", "1"], b"-ERR unknown subcommand or wrong number of arguments for 'NOW'. Try CLOCK HELP.\r\n"),
        (&["CLOCK", "advance"], b"-ERR unknown subcommand or wrong number of arguments for 'advance'. Try CLOCK HELP.\r\n"),
        (&["CLOCK", "ADVANCE", "soon"], b"-ERR value is not an integer or out of range\r\n"),
        (&["CLOCK", "ADVANCE", "-1"], b"-ERR value is out of range, must be positive\r\n"),
        (&["CLOCK", "SET", "-5"], b"-ERR value is out of range, must be positive\r\n"),
    ];
    for (args, want) in cases {
        assert_eq!(r.cmd_str(args), *want, "{args:?}");
    }
    let help = r.cmd_str(&["CLOCK", "HELP"]);
    assert!(
        help.starts_with(b"*13\r\n+CLOCK <subcommand>"),
        "{}",
        String::from_utf8_lossy(&help)
    );
    // Inside MULTI it is queued and runs with EXEC.
    r.cmd_str(&["CLOCK", "FREEZE"]);
    r.cmd_str(&["CLOCK", "SET", "2000000000000"]);
    r.cmd_str(&["MULTI"]);
    r.cmd_str(&["CLOCK", "ADVANCE", "1"]);
    r.cmd_str(&["CLOCK", "NOW"]);
    assert_eq!(r.cmd_str(&["EXEC"]), b"*2\r\n+OK\r\n:2000000000001\r\n");
}

#[test]
fn time_driven_things_follow_it() {
    let server = clock_on();
    let mut r = server.raw();
    r.cmd_str(&["CLOCK", "FREEZE"]);
    let start = int(&r.cmd_str(&["CLOCK", "NOW"]));
    // TTLs: lazily and in the active cycle.
    r.cmd_str(&["SET", "lazy", "v", "EX", "100"]);
    r.cmd_str(&["SET", "active", "v", "PX", "100500"]);
    r.cmd_str(&["CLOCK", "ADVANCE", "60000"]);
    assert_eq!(r.cmd_str(&["TTL", "lazy"]), b":40\r\n");
    // A key lives through the millisecond its TTL names.
    r.cmd_str(&["CLOCK", "ADVANCE", "40000"]);
    assert_eq!(r.cmd_str(&["GET", "lazy"]), b"$1\r\nv\r\n");
    r.cmd_str(&["CLOCK", "ADVANCE", "1"]);
    assert_eq!(r.cmd_str(&["GET", "lazy"]), b"$-1\r\n");
    r.cmd_str(&["CLOCK", "ADVANCE", "500"]);
    wait_for_field(&mut r, "stats", "expired_keys", "2");
    assert_eq!(r.cmd_str(&["DBSIZE"]), b":0\r\n");
    // TIME and stream IDs.
    let now = start + 100_501;
    let time = String::from_utf8_lossy(&r.cmd_str(&["TIME"])).into_owned();
    assert!(time.contains(&format!("\r\n{}\r\n", now / 1000)), "{time}");
    assert_eq!(
        r.cmd_str(&["XADD", "s", "*", "f", "v"]),
        format!("$15\r\n{now}-0\r\n").into_bytes()
    );
    // Idle times of keys.
    r.cmd_str(&["SET", "old", "v"]);
    r.cmd_str(&["CLOCK", "ADVANCE", "250000"]);
    assert_eq!(r.cmd_str(&["OBJECT", "IDLETIME", "old"]), b":250\r\n");
    // Blocking timeouts: a 30-second BLPOP ends when the clock passes it.
    let mut waiter = server.raw();
    waiter.send(&encode(&[b"BLPOP", b"q", b"30"]));
    wait_for_field(&mut r, "clients", "blocked_clients", "1");
    let moved = Instant::now();
    r.cmd_str(&["CLOCK", "ADVANCE", "30000"]);
    assert_eq!(waiter.read_reply(), b"*-1\r\n");
    assert!(
        moved.elapsed() < Duration::from_secs(2),
        "{:?}",
        moved.elapsed()
    );
    // CL.THROTTLE: a refused request succeeds once the clock moved.
    let t = |r: &mut Raw| r.cmd_str(&["CL.THROTTLE", "rl", "0", "1", "60"]);
    assert!(t(&mut r).starts_with(b"*5\r\n:0\r\n"));
    assert!(t(&mut r).starts_with(b"*5\r\n:1\r\n"));
    r.cmd_str(&["CLOCK", "ADVANCE", "60000"]);
    assert!(t(&mut r).starts_with(b"*5\r\n:0\r\n"));
}

#[test]
fn durations_idle_times_and_save_points_stay_on_real_time() {
    let server = start_with(|c| {
        c.other.insert("enable-clock-command", "yes".into());
        c.timeout = 60;
        c.save = vec![(3600, 1)];
    });
    let mut r = server.raw();
    let lastsave = r.cmd_str(&["LASTSAVE"]);
    r.cmd_str(&["SET", "k", "v"]);
    r.cmd_str(&["SET", "tick", "v", "PX", "1"]);
    // Two hours and a day pass on the logical clock, in one command.
    r.cmd_str(&["CLOCK", "ADVANCE", "93600000"]);
    // The active cycle has run since (the key expired without a read)...
    wait_for_field(&mut r, "stats", "expired_keys", "1");
    // ...and yet no save point fired, no client timed out, and the command
    // that moved the clock took microseconds, not a day.
    // (Two SETs; an expiry is not a change that counts, as in Redis.)
    assert_eq!(
        info_field(&mut r, "persistence", "rdb_changes_since_last_save"),
        "2"
    );
    assert_eq!(
        info_field(&mut r, "persistence", "rdb_bgsave_in_progress"),
        "0"
    );
    assert_eq!(r.cmd_str(&["LASTSAVE"]), lastsave);
    assert_eq!(r.cmd_str(&["PING"]), b"+PONG\r\n");
    let stats = String::from_utf8_lossy(&r.cmd_str(&["INFO", "commandstats"])).into_owned();
    let usec: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_clock:calls=1,usec="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stats}"));
    assert!(usec < 1_000_000, "CLOCK ADVANCE counted {usec} µs");
    // The connection's age and idle time are the seconds the test took,
    // not the 26 hours the logical clock moved.
    let list = String::from_utf8_lossy(&r.cmd_str(&["CLIENT", "INFO"])).into_owned();
    for field in ["age", "idle"] {
        let secs: u64 = list
            .split(' ')
            .find_map(|kv| kv.strip_prefix(&format!("{field}=")))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in {list}"));
        assert!(secs < 60, "{field}={secs}: {list}");
    }
}
