//! Bitmap, HyperLogLog, geo and stream writes against WATCH and TTLs, side
//! by side with redis-server: a write that changes nothing leaves a
//! watcher's EXEC alone, one that changes the value (a PFCOUNT refreshing
//! its cache included) aborts it; in-place writes keep the key's TTL, stored
//! results replace it, and an expired key is written as a new one.

use crate::support::*;

/// Runs `setup`, WATCHes `k` on one connection, runs `cmd` on another,
/// and returns both servers' EXEC replies, asserting they agree.
fn exec_after(p: &mut Pair, others: &mut (Raw, Raw), setup: &[&str], cmd: &str) -> Vec<u8> {
    p.same(&["FLUSHALL"]);
    p.script(setup);
    p.same(&["WATCH", "k"]);
    p.same(&["MULTI"]);
    p.same(&["PING"]);
    let args: Vec<&str> = cmd.split(' ').collect();
    let (a, b) = (others.0.cmd_str(&args), others.1.cmd_str(&args));
    assert_eq!(
        String::from_utf8_lossy(&a),
        String::from_utf8_lossy(&b),
        "{cmd}"
    );
    let (ours, theirs) = p.both(&["EXEC"]);
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs),
        "EXEC after {cmd}"
    );
    ours
}

#[test]
fn watch_sees_exactly_the_writes_redis_signals() {
    let mut p = Pair::new();
    let mut others = p.connect_again();
    let cases: &[(&[&str], &str, bool)] = &[
        (&["SETBIT k 3 1"], "SETBIT k 3 1", false),
        (&["SETBIT k 3 1"], "SETBIT k 3 0", true),
        (&["SETBIT k 3 1"], "SETBIT k 100 0", true),
        (
            &["SET k abc"],
            "BITFIELD k OVERFLOW FAIL INCRBY u8 0 255",
            false,
        ),
        (&["SET k abc"], "BITFIELD k SET u8 0 97", false),
        (&["SET k abc"], "BITFIELD k SET u8 0 98", true),
        (&["SET k abc"], "BITFIELD_RO k GET u8 0", false),
        (&["SET k abc"], "BITOP NOT k k", true),
        (&["SET k abc"], "BITCOUNT k", false),
        (&["PFADD k a b"], "PFADD k a", false),
        (&["PFADD k a b"], "PFADD k zz", true),
        (&["PFADD k a b"], "PFCOUNT k", true),
        (&["PFADD k a b", "PFCOUNT k"], "PFCOUNT k", false),
        (&["PFADD k a b"], "PFCOUNT k other", false),
        (&["PFADD k a b"], "PFDEBUG ENCODING k", false),
        (&["PFADD k a b"], "PFDEBUG TODENSE k", false),
        (&["PFADD k a b"], "PFDEBUG GETREG k", false),
        (&["PFADD k a b"], "PFMERGE k", true),
        (&["GEOADD k 1 2 a"], "GEOADD k NX 1 2 a", false),
        (&["GEOADD k 1 2 a"], "GEOADD k 1 3 a", true),
        (
            &["GEOADD k 1 2 a"],
            "GEOSEARCH k FROMLONLAT 1 2 BYRADIUS 1 km",
            false,
        ),
        (&["GEOADD k 1 2 a"], "GEORADIUS k 1 2 10 km STORE k", true),
        (
            &["GEOADD s 1 2 a"],
            "GEOSEARCHSTORE k s FROMLONLAT 50 50 BYRADIUS 1 km",
            false,
        ),
        // Redis's stream commands signal only XADD, XDEL, XTRIM that
        // removed entries, and XGROUP CREATE ... MKSTREAM that made the key.
        (&["XADD k 1-1 a 1"], "XSETID k 5-0", false),
        (&["XADD k 1-1 a 1"], "XADD k 2-1 a 1", true),
        (&["XADD k 1-1 a 1"], "XDEL k 1-1", true),
        (&["XADD k 1-1 a 1"], "XDEL k 9-1", false),
        (&["XADD k 1-1 a 1"], "XTRIM k MAXLEN 0", true),
        (&["XADD k 1-1 a 1"], "XTRIM k MAXLEN 5", false),
        (&["XADD k 1-1 a 1"], "XGROUP CREATE k g 0", false),
        (&[], "XGROUP CREATE k g 0 MKSTREAM", true),
        (
            &["XADD k 1-1 a 1", "XGROUP CREATE k g 0"],
            "XREADGROUP GROUP g c STREAMS k >",
            false,
        ),
        (
            &["XADD k 1-1 a 1", "XGROUP CREATE k g 0"],
            "XGROUP SETID k g $",
            false,
        ),
    ];
    for (setup, cmd, aborts) in cases {
        let reply = exec_after(&mut p, &mut others, setup, cmd);
        let aborted = reply == b"*-1\r\n";
        assert_eq!(
            aborted,
            *aborts,
            "{cmd}: EXEC {}",
            String::from_utf8_lossy(&reply)
        );
    }
}

#[test]
fn ttls_are_kept_replaced_or_expired_as_redis_does() {
    let mut p = Pair::new();
    let at = "4000000000";
    for (setup, cmd) in [
        ("SETBIT k 1 1", "SETBIT k 100 1"),
        ("SET k abc", "BITFIELD k INCRBY u8 0 1"),
        ("SET k abc", "BITOP NOT k k"),
        ("PFADD k a", "PFADD k b c"),
        ("PFADD k a", "PFCOUNT k"),
        ("PFADD k a", "PFMERGE k k"),
        ("GEOADD k 1 2 a", "GEOADD k 3 4 b"),
        ("GEOADD k 1 2 a", "GEORADIUS k 1 2 10 km STORE k"),
        (
            "GEOADD k 1 2 a",
            "GEOSEARCHSTORE k k FROMLONLAT 1 2 BYRADIUS 9 km",
        ),
    ] {
        p.same(&["FLUSHALL"]);
        p.script(&[setup, &format!("EXPIREAT k {at}")]);
        p.script(&[cmd]);
        p.same(&["EXPIRETIME", "k"]);
        p.same(&["DUMP", "k"]);
    }
    // Expired keys are gone before the write: each starts afresh.
    p.same(&["FLUSHALL"]);
    for (setup, cmd) in [
        ("SETBIT k 1 1", "SETBIT k 9 1"),
        ("PFADD k a", "PFADD k b"),
        ("GEOADD k 1 2 a", "GEOADD k 3 4 b"),
        ("SET k abc", "BITFIELD k GET u8 0"),
    ] {
        p.script(&[setup]);
        p.same(&["PEXPIRE", "k", "1"]);
        let (mut ours, mut theirs) = p.connect_again();
        assert!(wait_until(std::time::Duration::from_secs(2), || {
            ours.cmd_str(&["PTTL", "k"]) == b":-2\r\n"
                && theirs.cmd_str(&["PTTL", "k"]) == b":-2\r\n"
        }));
        p.script(&[cmd]);
        p.same(&["DUMP", "k"]);
        p.same(&["TTL", "k"]);
    }
}
