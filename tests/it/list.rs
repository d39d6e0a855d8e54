//! List commands against redis-server 7.0, byte for byte (Redis's
//! `unit/type/list.tcl` territory): pushes, pops with counts, ranges,
//! indexes, LSET, LINSERT, LREM, LTRIM, LPOS, LMOVE, LMPOP, wrong types,
//! RESP3 nulls, and big lists spanning many chunks.

use crate::support::*;

#[test]
fn push_pop_len_and_types() {
    let mut p = Pair::new();
    p.script(&[
        "LPUSH l a b c",
        "RPUSH l d e",
        "LLEN l",
        "LRANGE l 0 -1",
        "LPUSHX nol a",
        "RPUSHX nol a",
        "EXISTS nol",
        "LPUSHX l x",
        "RPUSHX l y z",
        "LPOP l",
        "RPOP l",
        "LPOP l 2",
        "RPOP l 2",
        "LPOP l 0",
        "LPOP nol 0",
        "LPOP nol",
        "RPOP nol 3",
        "LPOP l -1",
        "LPOP l x",
        "LPOP l 1 2",
        "LRANGE l 0 -1",
        "RPOP l 100",
        "EXISTS l",
        "LLEN l",
        "SET s v",
        "LPUSH s a",
        "RPUSH s a",
        "LPUSHX s a",
        "LPOP s",
        "RPOP s 2",
        "LLEN s",
        "LRANGE s 0 1",
        "LINDEX s 0",
        "LSET s 0 a",
        "LINSERT s BEFORE a b",
        "LREM s 0 a",
        "LTRIM s 0 1",
        "LPOS s a",
        "LMOVE s l LEFT RIGHT",
        "RPOPLPUSH s l",
        "LMPOP 1 s LEFT",
        "RPUSH l 1",
        "RPOPLPUSH l s",
        "LMOVE l s LEFT RIGHT",
        "LRANGE l 0 -1",
    ]);
}

#[test]
fn ranges_and_indexes() {
    let mut p = Pair::new();
    p.same(&[
        "RPUSH", "l", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
    ]);
    for (s, e) in [
        ("0", "-1"),
        ("0", "0"),
        ("-1", "-1"),
        ("-100", "100"),
        ("5", "2"),
        ("3", "-3"),
        ("10", "20"),
        ("-3", "-5"),
        ("-20", "-15"),
        ("9", "9"),
        ("x", "1"),
        ("1", "y"),
        ("-9223372036854775808", "9223372036854775807"),
    ] {
        p.same(&["LRANGE", "l", s, e]);
        p.same(&["LRANGE", "missing", s, e]);
    }
    for i in [
        "0",
        "9",
        "10",
        "-1",
        "-10",
        "-11",
        "x",
        "9223372036854775807",
        "-9223372036854775808",
    ] {
        p.same(&["LINDEX", "l", i]);
        p.same(&["LINDEX", "missing", i]);
    }
    p.script(&[
        "LSET l 0 zero",
        "LSET l -1 nine",
        "LSET l 10 x",
        "LSET l -11 x",
        "LSET l x x",
        "LSET missing 0 x",
        "LSET missing x x",
        "LRANGE l 0 -1",
    ]);
}

#[test]
fn insert_rem_trim() {
    let mut p = Pair::new();
    p.script(&[
        "RPUSH l a b c b a",
        "LINSERT l BEFORE b X",
        "LINSERT l after b Y",
        "LINSERT l AFTER a Z",
        "LINSERT l before missing Q",
        "LINSERT l middle a Q",
        "LINSERT nol BEFORE a b",
        "LINSERT nol middle a b",
        "LRANGE l 0 -1",
        "LREM l 1 b",
        "LREM l -1 a",
        "LREM l 0 Y",
        "LREM l 0 nothing",
        "LREM l x a",
        "LREM nol 0 a",
        "LRANGE l 0 -1",
        "RPUSH r a a a b a a",
        "LREM r -2 a",
        "LRANGE r 0 -1",
        "LREM r 2 a",
        "LRANGE r 0 -1",
        "LREM r 0 a",
        "LREM r 0 b",
        "EXISTS r",
        "RPUSH t 1 2 3 4 5 6",
        "LTRIM t 1 -2",
        "LRANGE t 0 -1",
        "LTRIM t -100 100",
        "LRANGE t 0 -1",
        "LTRIM t 2 1",
        "EXISTS t",
        "LTRIM nol 0 1",
        "LTRIM t x 1",
        "RPUSH t 1 2 3",
        "LTRIM t 5 10",
        "EXISTS t",
    ]);
}

#[test]
fn lpos_options_and_errors() {
    let mut p = Pair::new();
    p.script(&[
        "RPUSH l a b c 1 2 3 c c",
        "LPOS l c",
        "LPOS l c RANK 2",
        "LPOS l c RANK -1",
        "LPOS l c RANK -3",
        "LPOS l c RANK 4",
        "LPOS l c COUNT 0",
        "LPOS l c COUNT 2",
        "LPOS l c COUNT 2 RANK -1",
        "LPOS l c COUNT 0 RANK 2",
        "LPOS l c MAXLEN 3",
        "LPOS l c MAXLEN 3 COUNT 0",
        "LPOS l c RANK -1 MAXLEN 1",
        "LPOS l c RANK -1 MAXLEN 2 COUNT 0",
        "LPOS l x",
        "LPOS l x COUNT 5",
        "LPOS nol x",
        "LPOS nol x COUNT 5",
        "LPOS l c RANK 0",
        "LPOS l c RANK x",
        "LPOS l c COUNT -1",
        "LPOS l c MAXLEN -1",
        "LPOS l c COUNT x",
        "LPOS l c FOO 1",
        "LPOS l c RANK",
        "LPOS l c RANK -9223372036854775808",
        "LPOS l c RANK -9223372036854775808 COUNT 2",
        "LPOS l c RANK 9223372036854775807",
        "LPOS nol c RANK 0",
        "SET s x",
        "LPOS s x",
        "LPOS s x RANK 0",
    ]);
}

#[test]
fn lmove_rpoplpush_lmpop() {
    let mut p = Pair::new();
    p.script(&[
        "RPUSH src a b c",
        "LMOVE src dst LEFT RIGHT",
        "LMOVE src dst RIGHT LEFT",
        "LMOVE src dst left left",
        "LMOVE src dst LEFT RIGHT",
        "EXISTS src",
        "LRANGE dst 0 -1",
        "LMOVE dst dst LEFT RIGHT",
        "LRANGE dst 0 -1",
        "RPOPLPUSH dst dst",
        "LRANGE dst 0 -1",
        "RPOPLPUSH dst other",
        "RPOPLPUSH nol other",
        "LMOVE dst other UP LEFT",
        "LMOVE dst other LEFT DOWN",
        "LMOVE nol other UP LEFT",
        "RPUSH one x",
        "LMOVE one one LEFT LEFT",
        "LRANGE one 0 -1",
        "LMPOP 2 nol dst LEFT",
        "LMPOP 2 nol dst RIGHT COUNT 10",
        "LMPOP 2 nol other LEFT COUNT 1",
        "LMPOP 1 nol LEFT",
        "LMPOP 0 a LEFT",
        "LMPOP -1 a LEFT",
        "LMPOP x a LEFT",
        "LMPOP 2 a LEFT",
        "LMPOP 1 a MIDDLE",
        "LMPOP 1 a LEFT COUNT 0",
        "LMPOP 1 a LEFT COUNT x",
        "LMPOP 1 a LEFT COUNT 1 COUNT 2",
        "LMPOP 1 a LEFT FOO",
        "LMPOP 1 a LEFT COUNT",
        "LMPOP 9223372036854775807 a LEFT",
        "SET s x",
        "RPUSH z 1",
        "LMPOP 2 nol s LEFT",
        "LMPOP 2 z s LEFT",
        "EXISTS z",
    ]);
}

#[test]
fn resp3_nulls_and_arrays() {
    let mut p = Pair::new();
    let (ours, theirs) = p.both(&["HELLO", "3"]);
    assert!(theirs.starts_with(b"%"));
    if ours.starts_with(b"-ERR unknown command") {
        // HELLO lands with the connection commands; until then there is no
        // way to switch this branch to RESP3.
        eprintln!("resp3_nulls_and_arrays: skipped, HELLO not implemented");
        return;
    }
    p.script(&[
        "LPOP nol",
        "LPOP nol 2",
        "LINDEX nol 0",
        "LPOS nol a",
        "LMOVE nol x LEFT LEFT",
        "LMPOP 1 nol LEFT",
        "RPUSH l a b c",
        "LPOP l 2",
        "LPOS l c COUNT 0",
        "LMPOP 1 l RIGHT COUNT 5",
        "BLPOP nol 0.01",
        "BLMOVE nol x LEFT LEFT 0.01",
        "BLMPOP 0.01 1 nol LEFT",
    ]);
}

#[test]
fn blocking_forms_answer_at_once_when_data_or_errors() {
    let mut p = Pair::new();
    p.script(&[
        "RPUSH a 1 2",
        "RPUSH b 3",
        "BLPOP nol a b 0",
        "BRPOP nol b a 0",
        "BLPOP a 0",
        "EXISTS a",
        "SET s x",
        "BLPOP nol s 0",
        "BLPOP b s 0",
        "BLPOP nol -1",
        "BLPOP nol abc",
        "BLPOP nol 9223372036854775807",
        "BLPOP nol inf",
        "BLPOP nol -0.5",
        "BLPOP nol 0.0001",
        "RPUSH c x y",
        "BLMOVE c d LEFT RIGHT 0",
        "BRPOPLPUSH c d 0",
        "LRANGE d 0 -1",
        "BLMOVE s d LEFT RIGHT 0",
        "BLMOVE d s LEFT RIGHT 0",
        "BLMOVE d d UP RIGHT 0",
        "BLMOVE d d LEFT RIGHT x",
        "BRPOPLPUSH d d -1",
        "RPUSH e 1 2 3",
        "BLMPOP 0 2 nol e LEFT COUNT 2",
        "BLMPOP 0 2 nol e RIGHT",
        "BLMPOP x 1 e LEFT",
        "BLMPOP 0 0 e LEFT",
        "BLMPOP 0 1 e LEFT COUNT 0",
        "BLMPOP 0 1 s LEFT",
        "BLMPOP -1 1 e LEFT",
        "BLPOP nol 0.001",
        "BRPOPLPUSH nol x 0.001",
        "BLMPOP 0.001 1 nol RIGHT",
    ]);
}

#[test]
fn big_lists_span_chunks() {
    let mut p = Pair::new();
    // Several thousand elements of mixed sizes, pushed at both ends.
    let big = "x".repeat(300);
    for i in 0..300 {
        let v = format!("v{i}");
        p.same(&["RPUSH", "l", &v, &big, "mid"]);
        p.same(&["LPUSH", "l", &v]);
    }
    p.same(&["LLEN", "l"]);
    p.same(&["LRANGE", "l", "0", "-1"]);
    p.same(&["LRANGE", "l", "400", "450"]);
    p.same(&["LRANGE", "l", "-450", "-400"]);
    for i in [
        "0", "1", "299", "300", "301", "600", "-1", "-301", "1199", "-1200",
    ] {
        p.same(&["LINDEX", "l", i]);
    }
    p.same(&["LSET", "l", "500", &"y".repeat(9000)]);
    p.same(&["LINSERT", "l", "BEFORE", "v150", &"z".repeat(5000)]);
    p.same(&["LINSERT", "l", "AFTER", "v151", "small"]);
    p.same(&["LPOS", "l", "mid", "RANK", "-7", "COUNT", "3"]);
    p.same(&["LPOS", "l", "mid", "COUNT", "0"]);
    p.same(&["LREM", "l", "-5", "mid"]);
    p.same(&["LREM", "l", "5", &big]);
    p.same(&["LRANGE", "l", "0", "-1"]);
    p.same(&["LTRIM", "l", "100", "-100"]);
    p.same(&["LRANGE", "l", "0", "-1"]);
    p.same(&["LPOP", "l", "77"]);
    p.same(&["RPOP", "l", "77"]);
    p.same(&["LREM", "l", "0", "mid"]);
    p.same(&["LRANGE", "l", "0", "-1"]);
    p.same(&["RPOP", "l", "100000"]);
    p.same(&["EXISTS", "l"]);
}

#[test]
fn binary_and_empty_elements() {
    let mut p = Pair::new();
    let long = vec![0u8; 70000];
    p.same_bytes(&[b"RPUSH", b"b", b"", b"\x00\r\n\xff", &long, b""]);
    p.same_bytes(&[b"LRANGE", b"b", b"0", b"-1"]);
    p.same_bytes(&[b"LPOS", b"b", b"", b"COUNT", b"0"]);
    p.same_bytes(&[b"LREM", b"b", b"0", b""]);
    p.same_bytes(&[b"LINDEX", b"b", b"1"]);
    p.same_bytes(&[b"RPOP", b"b"]);
    p.same_bytes(&[b"LRANGE", b"b", b"0", b"-1"]);
}

#[test]
fn object_encoding_and_type_are_list() {
    let server = start();
    let mut c = server.raw();
    assert_eq!(c.cmd_str(&["RPUSH", "l", "a"]), b":1\r\n");
    assert_eq!(c.cmd_str(&["SET", "s", "x"]), b"+OK\r\n");
    // TYPE/OBJECT may not be on this branch yet: only check what answers.
    let t = c.cmd_str(&["TYPE", "l"]);
    assert!(
        t == b"+list\r\n" || t.starts_with(b"-ERR unknown command"),
        "{t:?}"
    );
    let e = c.cmd_str(&["OBJECT", "ENCODING", "l"]);
    assert!(
        e == b"$9\r\nquicklist\r\n" || e.starts_with(b"-ERR unknown command"),
        "{e:?}"
    );
}

/// Resident set size of process `pid` in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// RSS growth in bytes of process `pid` while 1,000,000 16-byte elements
/// are pushed into one list at `port` (1000 RPUSH of 1000, one at a time).
fn list_growth(pid: u32, port: u16) -> u64 {
    let mut c = Raw::connect(port);
    let before = rss_kib(pid);
    for i in 0..1000 {
        let vals: Vec<String> = (0..1000).map(|j| format!("{:016}", i * 1000 + j)).collect();
        let mut args: Vec<&[u8]> = vec![b"RPUSH", b"biglist"];
        args.extend(vals.iter().map(|v| v.as_bytes()));
        let r = c.cmd(&args);
        assert_eq!(r, format!(":{}\r\n", (i + 1) * 1000).into_bytes());
    }
    (rss_kib(pid) - before) * 1024
}

#[test]
#[cfg_attr(
    ferrokv_sanitize,
    ignore = "RSS: the sanitizer adds redzones and shadow memory to every allocation"
)]
fn million_small_elements_cost_no_more_than_redis() {
    let ours = spawn_ferrokv_process();
    let ours_growth = list_growth(ours.pid(), ours.port);
    let redis = spawn_redis();
    let redis_growth = list_growth(redis.pid(), redis.port);

    eprintln!(
        "1M x 16-byte list: ferrokv {:.1} B/element, redis {:.1} B/element",
        ours_growth as f64 / 1e6,
        redis_growth as f64 / 1e6
    );
    assert!(
        ours_growth * 10 <= redis_growth * 12,
        "ferrokv {ours_growth} bytes vs redis {redis_growth} bytes"
    );
}

/// LTRIM that keeps every element still tells watchers and trackers, but
/// changes nothing: it is not propagated and does not count towards the
/// next save (Redis adds only the removed count to its dirty counter).
#[test]
fn ltrim_keeping_everything_changes_nothing() {
    let mut p = Pair::new();
    let (mut ours2, mut theirs2) = p.connect_again();
    p.same(&["RPUSH", "l", "a", "b", "c"]);
    p.same(&["WATCH", "l"]);
    for c in [&mut ours2, &mut theirs2] {
        assert_eq!(c.cmd_str(&["LTRIM", "l", "0", "-1"]), b"+OK\r\n");
    }
    p.same(&["MULTI"]);
    p.same(&["PING"]);
    p.same(&["EXEC"]);
    let changes = |r: &mut Raw| info_u64(r, "rdb_changes_since_last_save");
    assert_eq!(changes(&mut p.ours), 3);
    assert_eq!(changes(&mut p.ours), changes(&mut p.theirs));
    p.same(&["LTRIM", "l", "1", "9223372036854775807"]);
    assert_eq!(changes(&mut p.ours), 4);
    assert_eq!(changes(&mut p.ours), changes(&mut p.theirs));
}
