//! String commands (Redis's `unit/type/string.tcl`), compared byte for byte
//! with redis-server: GET/SET and every SET option combination, the GET*
//! and SET* variants, MGET/MSET, ranges, LCS and RESP3 shapes. Random
//! command sequences live in `string_random.rs`.

use crate::support::*;

/// Unix time in seconds and milliseconds, for EXAT/PXAT arguments that
/// must lie in the future.
fn now_s_ms() -> (u64, u64) {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    (d.as_secs(), d.as_millis() as u64)
}

#[test]
fn get_set_basics_and_binary_values() {
    let mut p = Pair::new();
    p.script(&[
        "GET k",
        "SET k v",
        "GET k",
        "SET k 12345",
        "GET k",
        "SET k -0",
        "GET k",
        "SET k 007",
        "GET k",
        "SET k 9223372036854775808",
        "GET k",
        "SET",
        "SET k",
        "GET",
        "GET a b",
        "set K lower",
        "GET K",
    ]);
    let values: [&[u8]; 6] = [
        b"",
        b"\x00",
        b"a\r\nb",
        b"\xff\xfe\x00\x01",
        b"\r\n",
        b" 1 ",
    ];
    for v in values {
        p.same_bytes(&[b"SET", b"bin", v]);
        p.same_bytes(&[b"GET", b"bin"]);
        p.same_bytes(&[b"STRLEN", b"bin"]);
        p.same_bytes(&[b"APPEND", b"bin", v]);
        p.same_bytes(&[b"GET", b"bin"]);
        p.same_bytes(&[b"SET", v, b"key is binary"]);
        p.same_bytes(&[b"GET", v]);
    }
    let big = vec![b'z'; 100_000];
    p.same_bytes(&[b"SET", b"big", &big]);
    p.same_bytes(&[b"GET", b"big"]);
    p.same_bytes(&[b"STRLEN", b"big"]);
}

/// The option tokens SET combinations are built from.
fn set_option_tokens() -> Vec<Vec<String>> {
    let (s, ms) = now_s_ms();
    let mut t: Vec<Vec<String>> = [
        &["NX"][..],
        &["XX"],
        &["GET"],
        &["KEEPTTL"],
        &["EX", "100"],
        &["PX", "100000"],
        &["EX", "0"],
        &["PX", "-5"],
        &["EX", "abc"],
        &["EXAT", "1"],
        &["px"],
        &["FOO"],
        &["PERSIST"],
    ]
    .iter()
    .map(|v| v.iter().map(|s| s.to_string()).collect())
    .collect();
    t.push(vec!["EXAT".into(), (s + 1000).to_string()]);
    t.push(vec!["PXAT".into(), (ms + 1_000_000).to_string()]);
    t
}

/// Sends `cmds` to both servers as one pipeline and asserts the replies
/// are identical, command by command.
fn same_pipelined(p: &mut Pair, cmds: &[Vec<String>]) {
    let mut wire = Vec::new();
    for c in cmds {
        let args: Vec<&[u8]> = c.iter().map(|s| s.as_bytes()).collect();
        wire.extend_from_slice(&encode(&args));
    }
    p.ours.send(&wire);
    p.theirs.send(&wire);
    for c in cmds {
        let (a, b) = (p.ours.read_reply(), p.theirs.read_reply());
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "reply differs for {c:?}"
        );
    }
}

/// Runs `SET k new <opts>` against a missing, a string and an integer key
/// and compares the reply and the resulting value.
fn check_set(p: &mut Pair, opts: &[&Vec<String>]) {
    let mut cmd: Vec<String> = vec!["SET".into(), "k".into(), "new".into()];
    for o in opts {
        cmd.extend(o.iter().cloned());
    }
    let line = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
    let mut cmds = Vec::new();
    for setup in [None, Some("old"), Some("7")] {
        cmds.push(line("DEL k"));
        if let Some(v) = setup {
            cmds.push(line(&format!("SET k {v}")));
        }
        cmds.push(cmd.clone());
        cmds.push(line("GET k"));
        cmds.push(line("EXISTS k"));
    }
    same_pipelined(p, &cmds);
}

#[test]
fn set_every_option_combination() {
    let mut p = Pair::new();
    let tokens = set_option_tokens();
    let n = tokens.len();
    check_set(&mut p, &[]);
    // Every ordered pair (order matters when an argument is missing).
    for i in 0..n {
        check_set(&mut p, &[&tokens[i]]);
        for j in 0..n {
            if i != j {
                check_set(&mut p, &[&tokens[i], &tokens[j]]);
            }
        }
    }
    // Every triple, in one order.
    for i in 0..n {
        for j in i + 1..n {
            for k in j + 1..n {
                check_set(&mut p, &[&tokens[i], &tokens[j], &tokens[k]]);
            }
        }
    }
}

#[test]
fn set_expiry_errors_and_edges() {
    let mut p = Pair::new();
    p.script(&[
        "SET k v EX 9223372036854775807",
        "SET k v EX 9223372036854775",
        "SET k v EX 9223372036854774",
        "SET k v PX 9223372036854775807",
        "SET k v EXAT 9223372036854775",
        "SET k v PXAT 9223372036854775807",
        "SET k v EX -9223372036854775808",
        "SET k v EX 1.5",
        "SET k v EX 10 EX 20",
        "SET k v EX 10 PX 20",
        "SET k v NX XX",
        "SET k v XX NX",
        "SET k v KEEPTTL EX 10",
        "SET k v EX 10 KEEPTTL",
        "SET k v EX",
        "SET k v NX NX",
        "SET k v GET GET",
        "GET k",
        "SET k v PXAT 1",
        "GET k",
        "EXISTS k",
    ]);
    // An option with an embedded NUL byte matches as a C string does.
    p.same_bytes(&[b"SET", b"k", b"v", b"NX\x00junk"]);
    p.same_bytes(&[b"SET", b"k2", b"v", b"XX\x00"]);
    p.same_bytes(&[b"SET", b"k2", b"v", b"XXjunk"]);
}

#[test]
fn setnx_setex_psetex_getset_getdel() {
    let mut p = Pair::new();
    p.script(&[
        "SETNX k a",
        "SETNX k b",
        "GET k",
        "SETEX k 100 c",
        "GET k",
        "SETEX k 0 c",
        "SETEX k -1 c",
        "SETEX k abc c",
        "SETEX k 9223372036854775807 c",
        "PSETEX k 100000 d",
        "GET k",
        "PSETEX k 0 d",
        "PSETEX k 9223372036854775807 d",
        "SETEX k 100",
        "GETSET k e",
        "GETSET missing f",
        "GET missing",
        "GETDEL k",
        "GETDEL k",
        "EXISTS k",
        "SET n 12",
        "GETDEL n",
        "GETSET n 13",
        "GETSET n",
    ]);
}

#[test]
fn getex_options() {
    let mut p = Pair::new();
    let (s, ms) = now_s_ms();
    let fut_s = (s + 1000).to_string();
    let fut_ms = (ms + 1_000_000).to_string();
    p.script(&[
        "GETEX missing",
        "GETEX missing EX abc",
        "GETEX missing FOO",
        "SET k v",
        "GETEX k",
        "GETEX k EX 100",
        "GETEX k PX 100000",
        "GETEX k PERSIST",
        "GETEX k EX 0",
        "GETEX k EX -1",
        "GETEX k EX abc",
        "GETEX k PX 9223372036854775807",
        "GETEX k EX 9223372036854775807",
        "GETEX k EX 10 PX 10",
        "GETEX k PERSIST EX 10",
        "GETEX k EX 10 PERSIST",
        "GETEX k PERSIST PERSIST",
        "GETEX k KEEPTTL",
        "GETEX k NX",
        "GETEX k GET",
        "GETEX k EX",
        "GETEX k EX 10 EX 20",
        "GET k",
        "GETEX k EXAT 1",
        "EXISTS k",
        "GETEX k",
        "SET k 5",
        "GETEX k PXAT 1",
        "GET k",
    ]);
    p.same(&["SET", "k", "v"]);
    p.same(&["GETEX", "k", "EXAT", &fut_s]);
    p.same(&["GETEX", "k", "PXAT", &fut_ms]);
    p.same(&["GET", "k"]);
}

#[test]
fn mget_mset_msetnx() {
    let mut p = Pair::new();
    p.script(&[
        "MSET a 1 b 2 c 3",
        "MGET a b c d",
        "MSET a",
        "MSET a 1 b",
        "MSET",
        "MSETNX a 1",
        "MSETNX x 1 y",
        "MSETNX a 10 z 26",
        "MGET a z",
        "MSETNX y 1 z 2",
        "MGET y z",
        "MSETNX dup 1 dup 2",
        "GET dup",
        "MSET dup 3 dup 4",
        "GET dup",
        "MGET missing",
        "MGET",
    ]);
}

#[test]
fn append_strlen() {
    let mut p = Pair::new();
    p.script(&[
        "STRLEN k",
        "APPEND k hello",
        "APPEND k world",
        "GET k",
        "STRLEN k",
        "SET n 123",
        "STRLEN n",
        "APPEND n 4",
        "GET n",
        "INCR n",
        "SET m -9223372036854775808",
        "STRLEN m",
        "APPEND m 0",
        "INCR m",
        "APPEND new 42",
        "INCR new",
        "STRLEN",
    ]);
    p.same_bytes(&[b"APPEND", b"k", b""]);
    p.same_bytes(&[b"APPEND", b"e", b""]);
    p.same_bytes(&[b"EXISTS", b"e"]);
    p.same_bytes(&[b"STRLEN", b"e"]);
}

#[test]
fn getrange_and_substr() {
    let mut p = Pair::new();
    p.script(&["SET k hello", "SET n 12345", "SET e x", "APPEND z x"]);
    let idx = [
        "0",
        "1",
        "4",
        "5",
        "100",
        "-1",
        "-2",
        "-5",
        "-6",
        "-100",
        "9223372036854775807",
        "-9223372036854775808",
    ];
    for key in ["k", "n", "missing", "z"] {
        for a in idx {
            for b in idx {
                p.same(&["GETRANGE", key, a, b]);
            }
        }
    }
    p.script(&[
        "SUBSTR k 1 3",
        "SUBSTR k -3 -1",
        "GETRANGE k a 1",
        "GETRANGE k 1 b",
        "GETRANGE missing a 1",
        "GETRANGE k 1.5 2",
        "GETRANGE k 9223372036854775808 1",
        "GETRANGE k 0",
    ]);
    p.same_bytes(&[b"SET", b"empty", b""]);
    p.same_bytes(&[b"GETRANGE", b"empty", b"0", b"-1"]);
    p.same_bytes(&[b"GETRANGE", b"empty", b"-1", b"0"]);
}

#[test]
fn setrange_cases() {
    let mut p = Pair::new();
    p.script(&[
        "SETRANGE k 0 hello",
        "GET k",
        "SETRANGE k 3 LO!!",
        "GET k",
        "SETRANGE k 10 x",
        "GET k",
        "SETRANGE new 5 abc",
        "GET new",
        "SETRANGE k -1 x",
        "SETRANGE k abc x",
        "SETRANGE k 536870912 x",
        "SETRANGE k 536870911 xy",
        "SETRANGE k 9223372036854775807 x",
        "SETRANGE missing 536870912 x",
        "EXISTS missing",
        "SET n 1234",
        "SETRANGE n 1 x",
        "GET n",
        "SET n 1234",
        "SETRANGE n 1 9",
        "INCR n",
        "SETRANGE k",
    ]);
    for key in [&b"k"[..], b"missing", b"n"] {
        p.same_bytes(&[b"SETRANGE", key, b"0", b""]);
        p.same_bytes(&[b"SETRANGE", key, b"536870912", b""]);
        p.same_bytes(&[b"EXISTS", key]);
    }
    p.same_bytes(&[b"SETRANGE", b"bin", b"3", b"\x00\xff"]);
    p.same_bytes(&[b"GET", b"bin"]);
}

/// A ferrokv and a redis-server both started with a 1mb
/// proto-max-bulk-len, to reach the length limits without huge values.
fn small_limit_pair() -> (Ferrokv, RedisServer, Raw, Raw) {
    let ours = start_with(|c| c.proto_max_bulk_len = 1024 * 1024);
    let theirs = spawn_redis_with(&["--proto-max-bulk-len", "1mb"]);
    let (a, b) = (ours.raw(), Raw::connect(theirs.port));
    (ours, theirs, a, b)
}

#[test]
fn length_limits_follow_proto_max_bulk_len() {
    let (_s, _r, mut ours, mut theirs) = small_limit_pair();
    let mut same = |args: &[&[u8]]| {
        let (a, b) = (ours.cmd(args), theirs.cmd(args));
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{args:?}"
        );
    };
    let half = vec![b'a'; 600 * 1024];
    same(&[b"SETRANGE", b"k", b"1048575", b"x"]);
    same(&[b"SETRANGE", b"k", b"1048576", b"x"]);
    same(&[b"SETRANGE", b"k", b"1048575", b"xy"]);
    same(&[b"STRLEN", b"k"]);
    same(&[b"SET", b"h", &half]);
    same(&[b"APPEND", b"h", &half]);
    same(&[b"APPEND", b"h", &half[..1024 * 1024 - half.len()]]);
    same(&[b"APPEND", b"h", b"x"]);
    same(&[b"STRLEN", b"h"]);
    // LCS refuses a table bigger than the limit: 600x600 cells of 4 bytes.
    let a = vec![b'a'; 600];
    let b = vec![b'b'; 600];
    same(&[b"SET", b"la", &a]);
    same(&[b"SET", b"lb", &b]);
    same(&[b"LCS", b"la", b"lb"]);
    same(&[b"LCS", b"la", b"lb", b"LEN", b"IDX"]);
    same(&[b"LCS", b"la", b"missing"]);
}

#[test]
fn lcs_cases() {
    let mut p = Pair::new();
    p.script(&[
        "MSET a ohmytext b mynewtext",
        "LCS a b",
        "LCS a b LEN",
        "LCS a b IDX",
        "LCS a b IDX WITHMATCHLEN",
        "LCS a b IDX MINMATCHLEN 4",
        "LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN",
        "LCS a b IDX MINMATCHLEN -5 WITHMATCHLEN",
        "LCS a b WITHMATCHLEN",
        "LCS a b MINMATCHLEN 2",
        "LCS a b LEN IDX",
        "LCS a b IDX LEN",
        "LCS a b MINMATCHLEN",
        "LCS a b MINMATCHLEN x",
        "LCS a b FOO",
        "lcs a b idx len",
        "LCS a missing",
        "LCS missing a IDX",
        "LCS missing missing2 LEN",
        "LCS a a IDX WITHMATCHLEN",
        "LCS a",
        "MSET x 1234567 y 24680",
        "LCS x y IDX WITHMATCHLEN",
        "MSET p abcabcabc q cbacbacba",
        "LCS p q",
        "LCS p q IDX WITHMATCHLEN",
        "LCS q p IDX",
        "MSET u aaaa v aa",
        "LCS u v IDX WITHMATCHLEN",
        "LCS v u IDX WITHMATCHLEN",
    ]);
    let rna1 = "CACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTTCGTCCGGGTGTG";
    let rna2 = "ATTAAAGGTTTATACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAGATCTGTTCTCTAAACGAACTTTAAAATCTGTGTGGCTGTCACTCGGCTGCATGCTTAGTGCACTCACGCAGTATAATTAATAACTAATTACTGTCGTTGACAGGACACGAGTAACTCGTCTATCTTCTGCAGGCTGCTTACGGTTTCGTCCGTGTTGCAGCCGATCATCAGCACATCTAGGTTT";
    p.same(&["MSET", "r1", rna1, "r2", rna2]);
    p.same(&["LCS", "r1", "r2"]);
    p.same(&["LCS", "r1", "r2", "LEN"]);
    p.same(&["LCS", "r1", "r2", "IDX", "MINMATCHLEN", "5", "WITHMATCHLEN"]);
    p.same(&["LCS", "r1", "r2", "IDX"]);
}

/// Sends HELLO 3 to both sides; false when ferrokv does not speak RESP3
/// yet (HELLO lives in another command family).
fn hello3(p: &mut Pair) -> bool {
    let theirs = p.theirs.cmd_str(&["HELLO", "3"]);
    assert!(theirs.starts_with(b"%"), "redis-server speaks RESP3");
    let ours = p.ours.cmd_str(&["HELLO", "3"]);
    ours.starts_with(b"%")
}

#[test]
fn resp3_replies() {
    let mut p = Pair::new();
    if !hello3(&mut p) {
        return;
    }
    p.script(&[
        "GET missing",
        "SET k v XX",
        "SET k v NX",
        "SET k v NX GET",
        "SET k w GET",
        "MGET k missing",
        "GETEX missing",
        "GETDEL missing",
        "GETSET missing v",
        "INCRBYFLOAT f 1.5",
        "GETRANGE missing 0 -1",
        "MSET a ohmytext b mynewtext",
        "LCS a b",
        "LCS a b LEN",
        "LCS a b IDX",
        "LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN",
        "LCS missing missing2 IDX",
    ]);
}

#[test]
fn in_place_writes_keep_the_ttl() {
    let (server, clock) = start_with_clock(|_| {});
    let mut raw = server.raw();
    // Each write below must keep the 150 ms TTL, so every key expires.
    let writes: [&[&str]; 6] = [
        &["SET", "k0", "v", "KEEPTTL"],
        &["INCR", "k1"],
        &["INCRBYFLOAT", "k2", "1.5"],
        &["APPEND", "k3", "x"],
        &["SETRANGE", "k4", "0", "x"],
        &["DECRBY", "k5", "2"],
    ];
    for (i, w) in writes.iter().enumerate() {
        let key = format!("k{i}");
        assert_eq!(raw.cmd_str(&["SET", &key, "1", "PX", "150"]), b"+OK\r\n");
        let reply = raw.cmd_str(w);
        assert!(
            !reply.starts_with(b"-"),
            "{w:?}: {}",
            String::from_utf8_lossy(&reply)
        );
    }
    // GETEX EX sets a TTL on a persistent key too.
    assert_eq!(raw.cmd_str(&["SET", "k6", "v"]), b"+OK\r\n");
    assert_eq!(raw.cmd_str(&["GETEX", "k6", "PX", "150"]), b"$1\r\nv\r\n");
    clock.advance(std::time::Duration::from_millis(149));
    for i in 0..7 {
        let key = format!("k{i}");
        assert_eq!(raw.cmd_str(&["PTTL", &key]), b":1\r\n", "{key}");
    }
    // Past the millisecond the TTLs name.
    clock.advance(std::time::Duration::from_millis(2));
    for i in 0..7 {
        let key = format!("k{i}");
        assert_eq!(raw.cmd_str(&["EXISTS", &key]), b":0\r\n", "{key}");
    }
}
