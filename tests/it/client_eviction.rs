//! Client memory and `maxmemory-clients` against redis-server (Redis's
//! `unit/client-eviction`): CLIENT LIST's buffer fields for a client with a
//! large query buffer or much pending output, and which clients are closed
//! when the clients together pass the limit.

use std::io::Write;
use std::time::Duration;

use crate::support::*;

/// CLIENT LIST of the server behind `control`.
fn client_list(control: &mut Raw) -> String {
    let reply = control.cmd_str(&["CLIENT", "LIST"]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    text.split_once("\r\n")
        .map(|(_, t)| t.to_string())
        .unwrap_or_default()
}

/// Field `name` of the CLIENT LIST line of the client called `client`.
fn field_of(control: &mut Raw, client: &str, name: &str) -> Option<u64> {
    let list = client_list(control);
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={client} ")))?;
    let value = line
        .split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))?;
    value.parse().ok()
}

fn present(control: &mut Raw, client: &str) -> bool {
    client_list(control).contains(&format!(" name={client} "))
}

fn evicted_clients(control: &mut Raw) -> u64 {
    let info = String::from_utf8_lossy(&control.cmd_str(&["INFO", "stats"])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix("evicted_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("evicted_clients")
}

/// A client called `name` that has announced a bulk of `announced` bytes
/// and sent `sent` of them: its query buffer is allocated for the whole
/// bulk, as Redis allocates it for a large argument.
fn partial_bulk(port: u16, name: &str, announced: usize, sent: usize) -> Raw {
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd_str(&["CLIENT", "SETNAME", name]), b"+OK\r\n");
    c.send(format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${announced}\r\n").as_bytes());
    c.send(&vec![b'x'; sent]);
    c
}

/// Waits until the server behind `control` has read what every client
/// sent so far (a round trip on a connection of its own).
fn settle(port: u16) {
    let mut other = Raw::connect(port);
    assert_eq!(other.cmd_str(&["PING"]), b"+PONG\r\n");
}

/// Runs `case` against ferrokv and redis-server, each on a fresh server.
fn on_both(case: impl Fn(u16, &str)) {
    let server = start();
    case(server.port, "ferrokv");
    let redis = spawn_redis();
    case(redis.port, "redis-server");
}

#[test]
fn client_list_shows_a_large_query_buffer_and_pending_output() {
    on_both(|port, who| {
        let mut control = Raw::connect(port);
        let _big = partial_bulk(port, "big", 2_000_000, 900_000);
        // Read in several rounds.
        assert!(
            wait_until(Duration::from_secs(5), || {
                field_of(&mut control, "big", "qbuf").unwrap_or(0) >= 900_000
            }),
            "{who}: {}",
            client_list(&mut control)
        );
        let qbuf = field_of(&mut control, "big", "qbuf").expect("qbuf");
        assert!((900_000..=900_100).contains(&qbuf), "{who}: qbuf={qbuf}");
        let free = field_of(&mut control, "big", "qbuf-free").expect("qbuf-free");
        assert!(free >= 1_000_000, "{who}: qbuf-free={free}");
        let tot = field_of(&mut control, "big", "tot-mem").expect("tot-mem");
        assert!(tot >= 2_000_000, "{who}: tot-mem={tot}");
        // A client that asks for ~5 MB of replies and reads none of them.
        let item = "v".repeat(1000);
        let mut push = vec!["RPUSH", "list"];
        push.extend(std::iter::repeat_n(item.as_str(), 500));
        control.cmd_str(&push);
        let mut reader = Raw::connect(port);
        assert_eq!(reader.cmd_str(&["CLIENT", "SETNAME", "reader"]), b"+OK\r\n");
        reader.send(&encode(&[b"LRANGE", b"list", b"0", b"-1"]).repeat(10));
        settle(port);
        assert!(
            wait_until(Duration::from_secs(5), || {
                field_of(&mut control, "reader", "omem").unwrap_or(0) > 1_000_000
            }),
            "{who}: {}",
            client_list(&mut control)
        );
        let oll = field_of(&mut control, "reader", "oll").expect("oll");
        let obl = field_of(&mut control, "reader", "obl").expect("obl");
        assert!(oll > 0, "{who}: obl={obl} oll={oll}");
        let tot = field_of(&mut control, "reader", "tot-mem").expect("tot-mem");
        assert!(tot > 1_000_000, "{who}: tot-mem={tot}");
    });
}

#[test]
fn a_client_with_a_large_query_buffer_is_evicted() {
    on_both(|port, who| {
        let mut control = Raw::connect(port);
        assert_eq!(
            control.cmd_str(&["CONFIG", "SET", "maxmemory-clients", "1mb"]),
            b"+OK\r\n"
        );
        let mut small = Raw::connect(port);
        assert_eq!(small.cmd_str(&["CLIENT", "SETNAME", "small"]), b"+OK\r\n");
        let _big = partial_bulk(port, "big", 2_000_000, 1000);
        assert!(
            wait_until(Duration::from_secs(5), || !present(&mut control, "big")),
            "{who}: big was not evicted"
        );
        assert!(present(&mut control, "small"), "{who}");
        assert_eq!(small.cmd_str(&["PING"]), b"+PONG\r\n");
        assert_eq!(evicted_clients(&mut control), 1, "{who}");
    });
}

#[test]
fn no_evict_clients_stay() {
    on_both(|port, who| {
        let mut control = Raw::connect(port);
        // Over the limit with only no-evict clients left, every other
        // client would go, this one too.
        assert_eq!(control.cmd_str(&["CLIENT", "NO-EVICT", "on"]), b"+OK\r\n");
        control.cmd_str(&["CONFIG", "SET", "maxmemory-clients", "1mb"]);
        let mut big = Raw::connect(port);
        assert_eq!(big.cmd_str(&["CLIENT", "NO-EVICT", "on"]), b"+OK\r\n");
        assert_eq!(big.cmd_str(&["CLIENT", "SETNAME", "big"]), b"+OK\r\n");
        big.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n");
        big.send(&[b'x'; 1000]);
        // A new connection would be evicted at its first command: the
        // round trips go through the control connection.
        for _ in 0..2 {
            assert_eq!(control.cmd_str(&["PING"]), b"+PONG\r\n");
        }
        assert!(present(&mut control, "big"), "{who}");
        assert_eq!(evicted_clients(&mut control), 0, "{who}");
        // Completing the value, the client is served.
        big.send(&vec![b'x'; 2_000_000 - 1000]);
        big.send(b"\r\n");
        assert_eq!(big.read_reply(), b"+OK\r\n", "{who}");
    });
}

#[test]
fn pending_output_and_queued_transactions_count() {
    on_both(|port, who| {
        let mut control = Raw::connect(port);
        let item = "v".repeat(1000);
        let mut push = vec!["RPUSH", "list"];
        push.extend(std::iter::repeat_n(item.as_str(), 500));
        control.cmd_str(&push);
        control.cmd_str(&["CONFIG", "SET", "maxmemory-clients", "2mb"]);
        // Replies nobody reads.
        let mut reader = Raw::connect(port);
        assert_eq!(reader.cmd_str(&["CLIENT", "SETNAME", "reader"]), b"+OK\r\n");
        reader.send(&encode(&[b"LRANGE", b"list", b"0", b"-1"]).repeat(10));
        assert!(
            wait_until(Duration::from_secs(5), || !present(&mut control, "reader")),
            "{who}: the slow reader was not evicted"
        );
        // A transaction queueing 3 MB of arguments.
        let mut tx = Raw::connect(port);
        assert_eq!(tx.cmd_str(&["CLIENT", "SETNAME", "tx"]), b"+OK\r\n");
        assert_eq!(tx.cmd_str(&["MULTI"]), b"+OK\r\n");
        let value = vec![b'v'; 30_000];
        let mut tx = tx.into_stream();
        for i in 0..100 {
            let key = format!("k{i}");
            // Closed on the way: the rest is not sent.
            if tx
                .write_all(&encode(&[b"SET", key.as_bytes(), &value]))
                .is_err()
            {
                break;
            }
        }
        assert!(
            wait_until(Duration::from_secs(5), || !present(&mut control, "tx")),
            "{who}: the transaction was not evicted"
        );
        assert_eq!(evicted_clients(&mut control), 2, "{who}");
        assert_eq!(control.cmd_str(&["PING"]), b"+PONG\r\n");
    });
}

#[test]
fn the_largest_clients_go_first_and_only_until_below_the_limit() {
    on_both(|port, who| {
        let mut control = Raw::connect(port);
        control.cmd_str(&["CONFIG", "SET", "maxmemory-clients", "5mb"]);
        let _a = partial_bulk(port, "a", 300_000, 10);
        let _b = partial_bulk(port, "b", 700_000, 10);
        let _c = partial_bulk(port, "c", 1_500_000, 10);
        let _d = partial_bulk(port, "d", 1_600_000, 10);
        settle(port);
        assert_eq!(evicted_clients(&mut control), 0, "{who}");
        // Lowering the limit evicts at once: d alone leaves ~2.5 MB, over
        // 2 MB; d and c leave ~1 MB.
        control.cmd_str(&["CONFIG", "SET", "maxmemory-clients", "2mb"]);
        assert!(
            wait_until(Duration::from_secs(5), || evicted_clients(&mut control)
                == 2),
            "{who}: {}",
            client_list(&mut control)
        );
        settle(port);
        assert_eq!(evicted_clients(&mut control), 2, "{who}");
        assert!(
            present(&mut control, "a") && present(&mut control, "b"),
            "{who}"
        );
        assert!(
            !present(&mut control, "c") && !present(&mut control, "d"),
            "{who}"
        );
    });
}

#[test]
fn a_percentage_of_maxmemory() {
    on_both(|port, who| {
        let mut control = Raw::connect(port);
        control.cmd_str(&["CONFIG", "SET", "maxmemory", "100mb"]);
        control.cmd_str(&["CONFIG", "SET", "maxmemory-clients", "2%"]);
        assert_eq!(
            control.cmd_str(&["CONFIG", "GET", "maxmemory-clients"]),
            b"*2\r\n$17\r\nmaxmemory-clients\r\n$2\r\n2%\r\n"
        );
        let _small = partial_bulk(port, "small", 1_000_000, 10);
        settle(port);
        assert!(present(&mut control, "small"), "{who}");
        let _big = partial_bulk(port, "big", 3_000_000, 10);
        assert!(
            wait_until(Duration::from_secs(5), || !present(&mut control, "big")),
            "{who}: big was not evicted"
        );
        assert!(present(&mut control, "small"), "{who}");
    });
}

/// A large bulk read whole but for its CRLF is still query buffer, as in
/// Redis (`qbuf` is the bulk's size, `tot-mem` holds it); and a client idle
/// for more than two seconds holds no buffers (Redis frees an idle
/// client's query buffer), so an idle connection costs little.
#[test]
fn complete_bulk_without_crlf_and_idle_buffers_like_redis() {
    let server = spawn_ferrokv_process();
    let redis = spawn_redis();
    for (port, who) in [(server.port, "ferrokv"), (redis.port, "redis-server")] {
        let mut control = Raw::connect(port);
        let size = 3_000_001;
        let mut big = Raw::connect(port);
        assert_eq!(big.cmd_str(&["CLIENT", "SETNAME", "big"]), b"+OK\r\n");
        big.send(format!("*1\r\n${size}\r\n").as_bytes());
        big.send(&vec![b'v'; size]);
        assert!(
            wait_until(Duration::from_secs(5), || field_of(
                &mut control,
                "big",
                "qbuf"
            ) == Some(size as u64)),
            "{who}: {}",
            client_list(&mut control)
        );
        let tot = field_of(&mut control, "big", "tot-mem").expect("tot-mem");
        assert!(tot > size as u64, "{who}: tot-mem={tot}");
        let mut idle = Raw::connect(port);
        assert_eq!(idle.cmd_str(&["CLIENT", "SETNAME", "idle"]), b"+OK\r\n");
        assert!(
            wait_until(Duration::from_secs(6), || field_of(
                &mut control,
                "idle",
                "qbuf-free"
            ) == Some(0)),
            "{who}: {}",
            client_list(&mut control)
        );
        let tot = field_of(&mut control, "idle", "tot-mem").expect("tot-mem");
        assert!(tot < 4096, "{who}: tot-mem={tot}");
        // It still works, with buffers again.
        assert_eq!(idle.cmd_str(&["PING"]), b"+PONG\r\n");
    }
}
