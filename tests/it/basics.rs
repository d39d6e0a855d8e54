//! Smoke tests of the core path: connect, framing, a few commands.

use crate::support::*;

#[test]
fn ping_set_get_incr_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "PING",
        "SET k v",
        "GET k",
        "INCR n",
        "INCRBY n 10",
        "DECRBY n -9223372036854775808",
        "GET missing",
        "SET k v EX 0",
        "SET k v EX 10 PX 10",
        "SET k v NX GET",
        "NOSUCHCOMMAND a b",
        "GET",
    ]);
}

#[test]
fn redis_crate_client_works() {
    let server = start();
    let mut con = server.client();
    let _: () = redis::cmd("SET")
        .arg("a")
        .arg(41)
        .query(&mut con)
        .expect("set");
    let n: i64 = redis::cmd("INCR").arg("a").query(&mut con).expect("incr");
    assert_eq!(n, 42);
}
