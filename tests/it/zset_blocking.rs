//! BZPOPMIN, BZPOPMAX and BZMPOP: immediate answers, errors, timeouts,
//! clients served by later writes, and list/sorted-set waiters on one key.

use std::time::Duration;

use crate::support::{encode, wait_until, Pair, Raw};

/// Waits until both servers report `n` blocked clients.
fn wait_blocked(p: &mut Pair, n: usize) {
    let want = format!("blocked_clients:{n}\r\n");
    assert!(wait_until(Duration::from_secs(5), || {
        let (a, b) = p.both(&["INFO", "clients"]);
        String::from_utf8_lossy(&a).contains(&want) && String::from_utf8_lossy(&b).contains(&want)
    }));
}

fn send_both(a: &mut Raw, b: &mut Raw, args: &[&str]) {
    let v: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    a.send(&encode(&v));
    b.send(&encode(&v));
}

fn same_reply(a: &mut Raw, b: &mut Raw) -> Vec<u8> {
    let x = a.read_reply();
    let y = b.read_reply();
    assert_eq!(String::from_utf8_lossy(&x), String::from_utf8_lossy(&y));
    x
}

fn immediate_script(p: &mut Pair) {
    p.script(&[
        "ZADD z 1 a 2 b 3 c 4 d 5 e 6 f 7 g",
        "BZPOPMIN z 0",
        "BZPOPMAX z 0",
        "BZPOPMIN nokey z 0",
        "BZMPOP 0 2 nokey z MIN COUNT 2",
        "BZMPOP 0 1 z MAX COUNT 10",
        "EXISTS z",
        "BZPOPMIN z 0.01",
        "BZPOPMAX z 0.01",
        "BZMPOP 0.01 1 z MIN",
        "BZPOPMIN z -1",
        "BZPOPMIN z abc",
        "BZMPOP 0 0 z MIN",
        "BZMPOP 0 1 z FOO",
        "BZMPOP 0 1 z MIN COUNT 0",
        "BZMPOP 0 1 z MIN COUNT 1 COUNT 1",
        "BZMPOP 0 3 z MIN",
        "BZMPOP -1 1 z MIN",
        "SET s x",
        "BZPOPMIN s 0",
        "BZMPOP 0 1 s MAX",
        "ZADD z 1.5 x",
        "MULTI",
        "BZPOPMIN nokey 0",
        "BZMPOP 0 1 nokey MIN",
        "BZPOPMAX z 0",
        "EXEC",
    ]);
}

#[test]
fn immediate_pops_and_errors_resp2() {
    let mut p = Pair::new();
    immediate_script(&mut p);
}

#[test]
fn immediate_pops_and_errors_resp3() {
    let mut p = Pair::new();
    p.both(&["HELLO", "3"]);
    immediate_script(&mut p);
}

#[test]
fn blocked_clients_are_served_by_zadd() {
    let mut p = Pair::new();
    let (mut a1, mut a2) = p.connect_again();
    let (mut b1, mut b2) = p.connect_again();
    send_both(&mut a1, &mut a2, &["BZPOPMIN", "z1", "z2", "0"]);
    wait_blocked(&mut p, 1);
    send_both(
        &mut b1,
        &mut b2,
        &["BZMPOP", "0", "1", "z2", "MAX", "COUNT", "5"],
    );
    wait_blocked(&mut p, 2);
    p.same(&["ZADD", "z2", "1", "a", "2", "b", "3", "c"]);
    same_reply(&mut a1, &mut a2);
    same_reply(&mut b1, &mut b2);
    p.same(&["EXISTS", "z2"]);
    // A list waiter and a sorted-set waiter on one key: each type wakes
    // only its own.
    send_both(&mut a1, &mut a2, &["BLPOP", "k", "0"]);
    wait_blocked(&mut p, 1);
    send_both(&mut b1, &mut b2, &["BZPOPMAX", "k", "0"]);
    wait_blocked(&mut p, 2);
    p.same(&["ZADD", "k", "7", "m"]);
    same_reply(&mut b1, &mut b2);
    p.same(&["RPUSH", "k", "v"]);
    same_reply(&mut a1, &mut a2);
    // Timeouts answer a null array in RESP3 too.
    for r in [&mut a1, &mut a2] {
        r.cmd_str(&["HELLO", "3"]);
    }
    send_both(&mut a1, &mut a2, &["BZPOPMIN", "none", "0.05"]);
    same_reply(&mut a1, &mut a2);
}
