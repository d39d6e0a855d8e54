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

fn text_of(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).into_owned()
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
        // A client that asks for ~10 MB of replies and reads none of them
        // (more than the kernel's socket buffers take).
        let item = "v".repeat(1000);
        let mut push = vec!["RPUSH", "list"];
        push.extend(std::iter::repeat_n(item.as_str(), 500));
        control.cmd_str(&push);
        let mut reader = Raw::connect(port);
        assert_eq!(reader.cmd_str(&["CLIENT", "SETNAME", "reader"]), b"+OK\r\n");
        reader.send(&encode(&[b"LRANGE", b"list", b"0", b"-1"]).repeat(20));
        let replies = 20 * (6 + 500 * (7 + 1000 + 2));
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
        // What waits takes the memory its bytes need: no more than the
        // replies themselves, not a buffer doubled as it grew.
        let omem = field_of(&mut control, "reader", "omem").expect("omem");
        assert!(
            omem <= replies,
            "{who}: omem={omem} for {replies} bytes of replies"
        );
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

/// Replies a pipeline builds count as they grow: Redis updates a client's
/// memory after each command, so a client piling up replies it does not
/// read is evicted in the middle of its pipeline (its later commands do
/// not run), not after it.
#[test]
fn replies_count_while_a_pipeline_runs() {
    on_both(|port, who| {
        let mut control = Raw::connect(port);
        control.cmd_str(&["SETRANGE", "k", "100000", "x"]);
        control.cmd_str(&["CONFIG", "SET", "maxmemory-clients", "3mb"]);
        assert_eq!(control.cmd_str(&["CLIENT", "NO-EVICT", "on"]), b"+OK\r\n");
        let mut big = Raw::connect(port);
        let mut pipeline = Vec::new();
        for _ in 0..60 {
            pipeline.extend(encode(&[b"MGET", b"k"]));
            pipeline.extend(encode(&[b"INCR", b"ran"]));
        }
        big.send(&pipeline);
        assert!(
            wait_until(Duration::from_secs(5), || evicted_clients(&mut control)
                == 1),
            "{who}: not evicted"
        );
        let ran = text_of(&control.cmd_str(&["GET", "ran"]));
        let ran: u32 = ran.lines().nth(1).unwrap_or("0").parse().expect("a count");
        assert!((20..=40).contains(&ran), "{who}: {ran} commands ran");
    });
}

/// Redis frees an evicted client at once: a CLIENT LIST pipelined behind
/// the CONFIG SET that put the clients over the limit (eviction runs
/// before it) no longer lists it.
#[test]
fn an_evicted_client_is_gone_from_the_next_command() {
    on_both(|port, who| {
        let mut control = Raw::connect(port);
        let _big = partial_bulk(port, "big", 2_000_000, 1000);
        settle(port);
        assert!(present(&mut control, "big"), "{who}");
        let mut pipeline = encode(&[b"CONFIG", b"SET", b"maxmemory-clients", b"1mb"]);
        pipeline.extend(encode(&[b"CLIENT", b"LIST"]));
        control.send(&pipeline);
        assert_eq!(control.read_reply(), b"+OK\r\n", "{who}");
        let list = String::from_utf8_lossy(&control.read_reply()).into_owned();
        assert!(list.contains(" name= "), "{who}: {list}");
        assert!(!list.contains(" name=big "), "{who}: {list}");
        assert_eq!(evicted_clients(&mut control), 1, "{who}");
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

/// What CLIENT LIST says the query buffer of `client` takes.
fn query_buffer(control: &mut Raw, client: &str) -> u64 {
    field_of(control, client, "qbuf").unwrap_or(0)
        + field_of(control, client, "qbuf-free").unwrap_or(0)
}

/// Redis's `unit/querybuf`: a new client's buffer is the read size (16 KB)
/// and goes once the client idles; after a large argument the buffer keeps
/// room for another, and shrinks back to its recent peak once small
/// commands follow.
#[test]
fn query_buffers_are_sized_and_trimmed_as_redis() {
    on_both_processes(|port, who| {
        let mut control = Raw::connect(port);
        let mut c = Raw::connect(port);
        assert_eq!(c.cmd_str(&["CLIENT", "SETNAME", "q"]), b"+OK\r\n");
        let first = query_buffer(&mut control, "q");
        assert!((16384..32768).contains(&first), "{who}: {first}");
        let big = "A".repeat(400_000);
        assert_eq!(c.cmd_str(&["SET", "x", &big]), b"+OK\r\n");
        let grown = query_buffer(&mut control, "q");
        assert!(grown > 32768, "{who}: {grown}");
        assert!(
            wait_until(Duration::from_secs(3), || {
                assert_eq!(c.cmd_str(&["SET", "x", "small"]), b"+OK\r\n");
                query_buffer(&mut control, "q") < grown
            }),
            "{who}: the buffer stayed at {grown}"
        );
        // Two cron visits without a read between them shrink it to its
        // zero peak, in Redis too (sdsResize to 0); a read gives it one.
        assert_eq!(c.cmd_str(&["SET", "x", "small"]), b"+OK\r\n");
        assert!(query_buffer(&mut control, "q") > 0, "{who}");
        // Idle more than two seconds: freed.
        assert!(
            wait_until(Duration::from_secs(6), || query_buffer(&mut control, "q")
                == 0),
            "{who}: {}",
            client_list(&mut control)
        );
        assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n", "{who}");
    });
}

/// Redis's `unit/replybufsize`: an idle client's reply buffer shrinks to
/// 1 KB, and one whose replies fill it doubles it up to 16 KB (CLIENT LIST
/// `rbs`), counted in INFO's reply_buffer_shrinks and _expands.
#[test]
fn reply_buffers_follow_their_peak_as_redis() {
    on_both_processes(|port, who| {
        let mut control = Raw::connect(port);
        control.cmd_str(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100"]);
        let mut c = Raw::connect(port);
        assert_eq!(c.cmd_str(&["CLIENT", "SETNAME", "r"]), b"+OK\r\n");
        assert!(
            wait_until(Duration::from_secs(3), || {
                let rbs = field_of(&mut control, "r", "rbs").unwrap_or(0);
                (1024..2046).contains(&rbs)
            }),
            "{who}: {}",
            client_list(&mut control)
        );
        assert!(info_u64(&mut control, "reply_buffer_shrinks") > 0, "{who}");
        control.cmd_str(&["SET", "bigval", &"x".repeat(32768)]);
        control.cmd_str(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never"]);
        assert!(
            wait_until(Duration::from_secs(3), || {
                c.cmd_str(&["GET", "bigval"]);
                let rbs = field_of(&mut control, "r", "rbs").unwrap_or(0);
                (16384..32768).contains(&rbs)
            }),
            "{who}: {}",
            client_list(&mut control)
        );
        assert!(info_u64(&mut control, "reply_buffer_expands") > 0, "{who}");
        assert_eq!(
            control.cmd_str(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "reset"]),
            b"+OK\r\n"
        );
        assert_eq!(
            &control.cmd_str(&["DEBUG", "REPLYBUFFER", "nope", "1"])[..5],
            b"-ERR ",
            "{who}"
        );
    });
}

/// Redis's "evict clients only until below limit": a no-evict client's
/// figure read during its own CLIENT LIST is not less than what counts
/// against the limit afterwards (the reply buffer its command fills
/// included), so exactly half the clients go.
#[test]
fn eviction_stops_below_the_limit_as_redis() {
    on_both_processes(|port, who| {
        let mut control = Raw::connect(port);
        control.cmd_str(&["DEBUG", "REPLYBUFFER", "RESIZING", "0"]);
        control.cmd_str(&["CLIENT", "SETNAME", "control"]);
        control.cmd_str(&["CLIENT", "NO-EVICT", "on"]);
        let mut clients = Vec::new();
        let mut most = 0;
        for j in 0..10 {
            let name = format!("client{j}");
            let c = partial_bulk(port, &name, 1 << 20, 1 << 20);
            clients.push(c);
            assert!(
                wait_until(Duration::from_secs(5), || {
                    field_of(&mut control, &name, "tot-mem").unwrap_or(0) >= 1 << 20
                }),
                "{who}"
            );
            most = most.max(field_of(&mut control, &name, "tot-mem").unwrap_or(0));
        }
        let control_mem = field_of(&mut control, "control", "tot-mem").expect("control");
        let limit = most * 10 / 2 + control_mem;
        assert_eq!(
            control.cmd_str(&["CONFIG", "SET", "maxmemory-clients", &limit.to_string()]),
            b"+OK\r\n"
        );
        let left = client_list(&mut control).matches(" name=client").count();
        assert_eq!(left, 5, "{who}: {}", client_list(&mut control));
    });
}

/// A client that sends the start of a large command and closes at once
/// (its close arriving with its last bytes) is gone, as from Redis: such
/// connections stayed open, holding their query buffers.
#[test]
fn a_close_that_comes_with_the_last_bytes_closes_the_client() {
    on_both(|port, who| {
        let mut control = Raw::connect(port);
        for _ in 0..3 {
            let mut socks = Vec::new();
            for _ in 0..20 {
                let mut c = Raw::connect(port);
                assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
                socks.push(c);
            }
            let arg = format!("$1000\r\n{}\r\n", "x".repeat(1000));
            let partial = format!("*250\r\n{}", arg.repeat(249));
            for c in &mut socks {
                c.send(partial.as_bytes());
            }
            drop(socks);
            assert!(
                wait_until(Duration::from_secs(5), || {
                    info_u64(&mut control, "connected_clients") == 1
                }),
                "{who}: {}",
                client_list(&mut control)
            );
        }
    });
}

/// Redis frees an evicted client's buffers before the command that
/// evicted it runs, so memory a client eviction gave back is not taken
/// for keys: 20 clients each pipelining MGETs of a 100 kB value while
/// paused (each then runs its whole pipeline at once) are evicted under
/// `maxmemory-clients`, and no key is evicted under `maxmemory`. Closed
/// only after the running command, their buffers made the server evict
/// keys (maxmemory's 'many MGET clients, client eviction: true' under
/// load).
#[test]
fn evicted_clients_free_their_memory_before_key_eviction() {
    // Processes of their own: used_memory is the server's alone.
    on_both_processes(|port, who| {
        let mut control = Raw::connect(port);
        for (name, value) in [
            ("maxmemory", "11mb"),
            ("maxmemory-policy", "allkeys-lru"),
            ("maxmemory-clients", "3mb"),
        ] {
            assert_eq!(control.cmd_str(&["CONFIG", "SET", name, value]), b"+OK\r\n");
        }
        assert_eq!(control.cmd_str(&["CLIENT", "NO-EVICT", "on"]), b"+OK\r\n");
        for j in 0..50 {
            control.cmd_str(&["SETRANGE", &j.to_string(), "100000", "x"]);
        }
        let mut clients: Vec<Raw> = (0..20).map(|_| Raw::connect(port)).collect();
        assert_eq!(
            control.cmd_str(&["CLIENT", "PAUSE", "500", "ALL"]),
            b"+OK\r\n"
        );
        let pipeline = encode(&[b"MGET", b"1"]).repeat(16);
        for c in &mut clients {
            c.send(&pipeline);
        }
        // Answered once the pause is over; the pipelines ran when no
        // client is held by it any more.
        assert!(
            wait_until(Duration::from_secs(5), || info_u64(
                &mut control,
                "blocked_clients"
            ) == 0),
            "{who}: clients still paused"
        );
        assert!(
            evicted_clients(&mut control) > 0,
            "{who}: no client evicted"
        );
        assert_eq!(info_u64(&mut control, "evicted_keys"), 0, "{who}");
        assert_eq!(control.cmd_str(&["DBSIZE"]), b":50\r\n", "{who}");
    });
}

/// A replica is never a client eviction candidate (Redis's
/// clientEvictionAllowed): however much of the stream it has pending, the
/// master keeps its link, and the replica gets every write.
#[test]
fn replicas_are_not_evicted() {
    on_both(|port, who| {
        let mut control = Raw::connect(port);
        assert_eq!(
            control.cmd_str(&["CONFIG", "SET", "repl-diskless-sync", "no"]),
            b"+OK\r\n"
        );
        let replica = spawn_redis_with(&["--replicaof", "127.0.0.1", &port.to_string()]);
        let mut r = Raw::connect(replica.port);
        assert!(
            wait_until(Duration::from_secs(10), || {
                String::from_utf8_lossy(&r.cmd_str(&["INFO", "replication"]))
                    .contains("master_link_status:up")
            }),
            "{who}: the replica never linked"
        );
        control.cmd_str(&["CONFIG", "SET", "maxmemory-clients", "128kb"]);
        control.cmd_str(&["CLIENT", "NO-EVICT", "on"]);
        let value = "x".repeat(3_000_000);
        for i in 0..5 {
            let key = format!("big{i}");
            assert_eq!(control.cmd_str(&["SET", &key, &value]), b"+OK\r\n");
        }
        assert_eq!(control.cmd_str(&["WAIT", "1", "10000"]), b":1\r\n", "{who}");
        assert_eq!(evicted_clients(&mut control), 0, "{who}");
        assert_eq!(r.cmd_str(&["DBSIZE"]), b":5\r\n", "{who}");
    });
}
