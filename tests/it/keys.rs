//! Keyspace commands against redis-server (Redis's `unit/keyspace.tcl`,
//! `unit/scan.tcl`, OBJECT from `unit/introspection-2.tcl`).

use std::collections::HashSet;

use crate::support::*;

/// The elements of a flat RESP array of bulk strings.
pub(crate) fn bulks(reply: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let n = frame_len(reply).expect("complete reply");
    assert_eq!(n, reply.len(), "one reply");
    assert_eq!(
        reply[0],
        b'*',
        "array reply: {:?}",
        String::from_utf8_lossy(reply)
    );
    let mut pos = reply.iter().position(|&c| c == b'\n').expect("header") + 1;
    while pos < reply.len() {
        let len = frame_len(&reply[pos..]).expect("element");
        let item = &reply[pos..pos + len];
        let nl = item.iter().position(|&c| c == b'\n').expect("bulk header");
        out.push(item[nl + 1..item.len() - 2].to_vec());
        pos += len;
    }
    out
}

/// A SCAN reply: the next cursor and the keys.
pub(crate) fn scan_reply(reply: &[u8]) -> (u64, Vec<Vec<u8>>) {
    assert!(
        reply.starts_with(b"*2\r\n"),
        "{:?}",
        String::from_utf8_lossy(reply)
    );
    let rest = &reply[4..];
    let n = frame_len(rest).expect("cursor");
    let cursor_frame = &rest[..n];
    let nl = cursor_frame
        .iter()
        .position(|&c| c == b'\n')
        .expect("header");
    let cursor = std::str::from_utf8(&cursor_frame[nl + 1..n - 2])
        .expect("utf8")
        .parse()
        .expect("cursor number");
    (cursor, bulks(&rest[n..]))
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

/// Sends to both servers and compares the replies as sorted key lists.
fn same_keys(p: &mut Pair, args: &[&str]) -> Vec<Vec<u8>> {
    let (a, b) = p.both(args);
    let (a, b) = (sorted(bulks(&a)), sorted(bulks(&b)));
    assert_eq!(a, b, "{args:?}");
    a
}

#[test]
fn del_unlink_exists_type_touch() {
    let mut p = Pair::new();
    p.script(&[
        "SET a 1",
        "SET b hello",
        "SET c x",
        "EXISTS a b nokey a",
        "EXISTS nokey",
        "TYPE a",
        "TYPE nokey",
        "TOUCH a b nokey",
        "DEL a nokey a",
        "UNLINK b c b",
        "UNLINK nokey",
        "EXISTS a b c",
        "DEL",
        "EXISTS",
        "TYPE",
        "TYPE a b",
        "TOUCH",
        "DBSIZE",
    ]);
}

#[test]
fn rename_and_renamenx() {
    let mut p = Pair::new();
    p.script(&[
        "RENAME nokey other",
        "RENAMENX nokey other",
        "RENAME nokey nokey",
        "RENAMENX nokey nokey",
        "SET k v",
        "RENAME k k",
        "RENAMENX k k",
        "GET k",
        "RENAME k k2",
        "GET k",
        "GET k2",
        "SET k3 other",
        "RENAMENX k2 k3",
        "RENAME k2 k3",
        "GET k3",
        "EXISTS k2",
        "SET n 5 EX 100",
        "RENAMENX n m",
        "TTL m",
        "EXISTS n",
        "RENAME",
        "RENAME a",
        "RENAME a b c",
    ]);
}

#[test]
fn rename_keeps_ttl_and_drops_target_ttl() {
    let mut p = Pair::new();
    p.script(&[
        "SET src v PX 100000",
        "SET dst w EX 5000",
        "RENAME src dst",
        "EXISTS src",
        "SET plain x",
        "SET dst2 y EX 100",
        "RENAME plain dst2",
        "TTL dst2",
    ]);
    let (a, b) = p.both(&["PTTL", "dst"]);
    let (a, b) = (int_of(&a), int_of(&b));
    assert!(
        (99_000..=100_000).contains(&a) && (99_000..=100_000).contains(&b),
        "{a} {b}"
    );
}

pub(crate) fn int_of(reply: &[u8]) -> i64 {
    let s = std::str::from_utf8(reply).expect("utf8");
    assert!(s.starts_with(':'), "integer reply: {s:?}");
    s[1..].trim_end().parse().expect("integer")
}

#[test]
fn copy_within_and_across_databases() {
    let mut p = Pair::new();
    p.script(&[
        "COPY nokey x",
        "SET k v",
        "COPY k k",
        "COPY k k DB 0",
        "COPY k k DB 1",
        "COPY k k2",
        "COPY k k2",
        "SET k hello",
        "COPY k k2",
        "COPY k k2 REPLACE",
        "GET k2",
        "COPY k k2 REPLACE REPLACE",
        "COPY k k2 DB",
        "COPY k k2 FOO",
        "COPY k k2 DB abc",
        "COPY k k2 DB 16",
        "COPY k k2 DB -1",
        "COPY k k2 DB 99999999999",
        "COPY k k2 db 3 replace",
        "COPY k k2 replace db 3",
        "SELECT 3",
        "GET k2",
        "GET k",
        "SELECT 0",
        "SET n 42 EX 1000",
        "COPY n n DB 2",
        "SELECT 2",
        "GET n",
        "TTL n",
        "OBJECT ENCODING n",
        "SELECT 0",
        "COPY",
        "COPY a",
    ]);
}

#[test]
fn move_and_swapdb() {
    let mut p = Pair::new();
    p.script(&[
        "SET k v",
        "MOVE k 0",
        "MOVE k abc",
        "MOVE k 16",
        "MOVE k -1",
        "MOVE k 99999999999",
        "MOVE nokey 1",
        "MOVE k 1",
        "EXISTS k",
        "SET k again",
        "MOVE k 1",
        "SELECT 1",
        "GET k",
        "SELECT 0",
        "SET t 1 EX 100",
        "MOVE t 2",
        "SELECT 2",
        "TTL t",
        "SELECT 0",
        "SWAPDB 0 1",
        "GET k",
        "SWAPDB 0 0",
        "GET k",
        "SWAPDB a 1",
        "SWAPDB 1 b",
        "SWAPDB a b",
        "SWAPDB 0 16",
        "SWAPDB -1 0",
        "SWAPDB 0 99999999999",
        "SWAPDB 99999999999 0",
        "SWAPDB 1 0",
        "DBSIZE",
        "MOVE",
        "SWAPDB 0",
    ]);
}

#[test]
fn keys_patterns() {
    let mut p = Pair::new();
    for k in [
        "foo", "fao", "fxo", "f*o", "f?o", "f[o", "f\\o", "bar", "FOO", "hello", "hallo", "hllo",
        "a-b", "abc", "abd", "x]y", "",
    ] {
        p.same(&["SET", k, "1"]);
    }
    for pat in [
        "*",
        "f?o",
        "f*",
        "*o",
        "f\\*o",
        "f\\?o",
        "f\\[o",
        "f\\\\o",
        "h[ae]llo",
        "h[^e]llo",
        "h[a-b]llo",
        "h[b-a]llo",
        "h*llo",
        "[a-c]b?",
        "ab[^c]",
        "x]y",
        "x[]]y",
        "[",
        "[a",
        "f[",
        "*[",
        "\\",
        "nomatch*",
        "",
        "FOO",
        "?",
        "???",
        "h[",
        "[^",
        "a[-]b",
        "a\\-b",
    ] {
        same_keys(&mut p, &["KEYS", pat]);
    }
    p.script(&["KEYS", "KEYS a b"]);
}

#[test]
fn keys_and_scan_skip_expired_keys() {
    let mut p = Pair::new();
    p.script(&["SET live 1", "SET gone 1 PX 1", "SET gone2 2 PX 1"]);
    // Both servers must see the keys expire; poll with a side-effect-free
    // command (KEYS does not delete).
    assert!(wait_until(std::time::Duration::from_secs(2), || {
        let (a, b) = p.both(&["KEYS", "*"]);
        bulks(&a).len() == 1 && bulks(&b).len() == 1
    }));
    same_keys(&mut p, &["KEYS", "*"]);
    let (a, b) = p.both(&["SCAN", "0", "COUNT", "100"]);
    assert_eq!(scan_reply(&a), scan_reply(&b));
    assert_eq!(scan_reply(&a).1, vec![b"live".to_vec()]);
}

/// Runs a full SCAN with extra arguments on one connection; returns every
/// key seen (with duplicates) and the number of calls.
fn full_scan(raw: &mut Raw, extra: &[&str]) -> (Vec<Vec<u8>>, usize) {
    let mut cursor = "0".to_string();
    let mut all = Vec::new();
    let mut calls = 0;
    loop {
        let mut args = vec!["SCAN", &cursor];
        args.extend_from_slice(extra);
        let (next, keys) = scan_reply(&raw.cmd_str(&args));
        all.extend(keys);
        calls += 1;
        if next == 0 {
            return (all, calls);
        }
        cursor = next.to_string();
    }
}

#[test]
fn scan_options_and_errors() {
    let mut p = Pair::new();
    p.script(&[
        "SCAN 0",
        "SCAN abc",
        "SCAN -",
        "SCAN +",
        "SCAN 1.5",
        "SCAN 18446744073709551616",
        "SCAN 0 COUNT 0",
        "SCAN 0 COUNT -1",
        "SCAN 0 COUNT abc",
        "SCAN 0 COUNT",
        "SCAN 0 MATCH",
        "SCAN 0 TYPE",
        "SCAN 0 FOO bar",
        "SCAN 0 COUNT 10 MATCH * TYPE string extra",
        "SCAN",
    ]);
    // Cursors Redis reads with strtoul: signs, empty, huge.
    for c in ["", "+0", "-0", "-1", "18446744073709551615", " 1", "1 "] {
        let (a, b) = p.both(&["SCAN", c]);
        assert_eq!(a.starts_with(b"-"), b.starts_with(b"-"), "cursor {c:?}");
        if a.starts_with(b"-") {
            assert_eq!(a, b, "cursor {c:?}");
        }
    }
    for i in 0..200 {
        p.same(&["SET", &format!("key:{i}"), "v"]);
        p.same(&["SET", &format!("other:{i}"), "12"]);
    }
    for extra in [
        vec![],
        vec!["COUNT", "7"],
        vec!["MATCH", "key:1*"],
        vec!["MATCH", "*"],
        vec!["MATCH", "other:?", "COUNT", "1000"],
        vec!["TYPE", "string"],
        vec!["TYPE", "STRING"],
        vec!["TYPE", "list"],
        vec!["TYPE", "nosuchtype"],
        vec!["count", "3", "match", "key:[0-4]", "type", "string"],
    ] {
        let (ours, calls) = full_scan(&mut p.ours, &extra);
        let (theirs, _) = full_scan(&mut p.theirs, &extra);
        let o: HashSet<_> = ours.iter().cloned().collect();
        let t: HashSet<_> = theirs.iter().cloned().collect();
        assert_eq!(o, t, "SCAN {extra:?}");
        assert!(calls >= 1);
    }
    // COUNT bounds the work per call: 400 keys at COUNT 10 take many calls.
    let (_, calls) = full_scan(&mut p.ours, &["COUNT", "10"]);
    assert!(calls >= 20, "{calls} calls");
}

#[test]
fn scan_returns_every_key_present_throughout_despite_resizes() {
    let server = start();
    let mut c = server.raw();
    let n = 1000;
    for i in 0..n {
        c.cmd_str(&["SET", &format!("orig:{i}"), "v"]);
    }
    let mut seen = HashSet::new();
    let mut cursor = "0".to_string();
    let mut round = 0u32;
    loop {
        let (next, keys) = scan_reply(&c.cmd_str(&["SCAN", &cursor, "COUNT", "20"]));
        seen.extend(keys);
        round += 1;
        // Grow the table several times over, then shrink it back, between
        // calls.
        match round % 6 {
            1 | 2 => {
                for j in 0..1500 {
                    c.cmd_str(&["SET", &format!("tmp:{round}:{j}"), "v"]);
                }
            }
            4 => {
                let (tmp, _) = full_scan(&mut server.raw(), &["MATCH", "tmp:*", "COUNT", "1000"]);
                for k in tmp {
                    c.cmd(&[b"DEL", k.as_slice()]);
                }
            }
            _ => {}
        }
        if next == 0 {
            break;
        }
        cursor = next.to_string();
    }
    for i in 0..n {
        assert!(
            seen.contains(format!("orig:{i}").as_bytes()),
            "orig:{i} missed"
        );
    }
}

#[test]
fn randomkey() {
    let mut p = Pair::new();
    p.script(&["RANDOMKEY", "SET only 1", "RANDOMKEY", "RANDOMKEY extra"]);
    let server = start();
    let mut c = server.raw();
    for i in 0..50 {
        c.cmd_str(&["SET", &format!("k{i}"), "v"]);
    }
    let mut seen = HashSet::new();
    for _ in 0..500 {
        seen.insert(c.cmd_str(&["RANDOMKEY"]));
    }
    assert!(seen.len() > 25, "only {} distinct keys", seen.len());
}

#[test]
fn randomkey_skips_and_deletes_expired_keys() {
    let (server, clock) = start_with_clock(|c| c.hz = 1);
    let mut c = server.raw();
    for i in 0..100 {
        c.cmd_str(&["SET", &format!("v{i}"), "x", "PX", "1"]);
    }
    c.cmd_str(&["SET", "survivor", "x"]);
    // Past the millisecond the TTLs name.
    clock.advance(std::time::Duration::from_millis(2));
    for _ in 0..20 {
        assert_eq!(c.cmd_str(&["RANDOMKEY"]), b"$8\r\nsurvivor\r\n");
    }
    // All expired: null.
    c.cmd_str(&["SET", "survivor", "x", "PX", "1"]);
    clock.advance(std::time::Duration::from_millis(2));
    assert_eq!(c.cmd_str(&["RANDOMKEY"]), b"$-1\r\n");
}

#[test]
fn object_subcommands() {
    let mut p = Pair::new();
    p.script(&[
        "SET int 123",
        "SET shared 9999",
        "SET notshared 10000",
        "SET neg -1",
        "SET zero 0",
        "SET emb hello",
        "SET long 012345678901234567890123456789012345678901234",
        "SET long2 01234567890123456789012345678901234567890123",
        "SET bigint 12345678901234567890",
        "OBJECT ENCODING int",
        "OBJECT ENCODING emb",
        "OBJECT ENCODING long",
        "OBJECT ENCODING long2",
        "OBJECT ENCODING bigint",
        "OBJECT ENCODING nokey",
        "OBJECT REFCOUNT int",
        "OBJECT REFCOUNT shared",
        "OBJECT REFCOUNT notshared",
        "OBJECT REFCOUNT neg",
        "OBJECT REFCOUNT zero",
        "OBJECT REFCOUNT emb",
        "OBJECT REFCOUNT nokey",
        "OBJECT IDLETIME nokey",
        "OBJECT FREQ emb",
        "OBJECT FREQ nokey",
        "OBJECT HELP",
        "OBJECT help",
        "OBJECT",
        "OBJECT ENCODING",
        "OBJECT ENCODING a b",
        "OBJECT NOSUCH x",
        "OBJECT HELP extra",
        "INCR int",
        "OBJECT ENCODING int",
    ]);
    let (a, b) = p.both(&["OBJECT", "IDLETIME", "emb"]);
    assert!(int_of(&a) <= 1 && int_of(&b) <= 1);
}

#[test]
fn resp3_replies_match() {
    let mut p = Pair::new();
    let ours = p.ours.cmd_str(&["HELLO", "3"]);
    if ours.starts_with(b"-ERR unknown command") {
        // HELLO is not part of this build yet; RESP2 is covered above.
        assert!(ours.ends_with(b"\r\n"));
        return;
    }
    p.theirs.cmd_str(&["HELLO", "3"]);
    p.script(&[
        "SET k v",
        "OBJECT ENCODING nokey",
        "OBJECT ENCODING k",
        "OBJECT HELP",
        "RANDOMKEY",
        "TYPE k",
        "SCAN 0",
        "KEYS k",
        "DEL k",
        "RANDOMKEY",
        "TTL k",
        "COPY k x",
    ]);
}

#[test]
fn binary_keys() {
    let mut p = Pair::new();
    let k1: &[u8] = b"bin\x00key\xff";
    let k2: &[u8] = b"\r\n*";
    p.same_bytes(&[b"SET", k1, b"v"]);
    p.same_bytes(&[b"SET", k2, b"v"]);
    p.same_bytes(&[b"EXISTS", k1, k2]);
    p.same_bytes(&[b"RENAME", k1, b"plain"]);
    p.same_bytes(&[b"COPY", b"plain", k1]);
    p.same_bytes(&[b"TYPE", k1]);
    p.same_bytes(&[b"KEYS", b"\r\n?"]);
    p.same_bytes(&[b"KEYS", b"bin\x00*"]);
    p.same_bytes(&[b"DEL", k1, k2, b"plain"]);
    p.same_bytes(&[b"SCAN", b"0", b"MATCH", b"\x00*"]);
}

/// RANDOMKEY draws every key equally often (chi-square over 26 keys, 25
/// degrees of freedom; 60 is beyond the 0.01% tail). Redis's own pick
/// favours keys in short hash chains (64.7 in one run here).
#[test]
fn randomkey_is_uniform() {
    let server = start();
    let mut r = server.raw();
    for c in 'a'..='z' {
        r.cmd_str(&["SET", &c.to_string(), "1"]);
    }
    let counts = crate::set::draw(&mut r, &["RANDOMKEY"], 5200);
    let chi = crate::set::chi_square(&counts, 26, 5200);
    assert!(chi < 60.0, "chi-square {chi:.1}");
}

/// RESTORE's FREQ sets the LFU counter under an LFU policy and IDLETIME
/// the idle time under the others; each is ignored where it does not
/// apply, as in Redis.
#[test]
fn restore_freq_and_idletime_follow_the_policy_as_redis() {
    let mut p = Pair::new();
    p.same(&["SET", "foo", "bar"]);
    // The same payload from both: `$N\r\n<payload>\r\n`.
    let reply = p.same(&["DUMP", "foo"]);
    let start = reply.iter().position(|&c| c == b'\n').expect("bulk header") + 1;
    let payload = reply[start..reply.len() - 2].to_vec();
    let (ours, theirs) = (payload.clone(), payload);
    for policy in ["allkeys-lfu", "allkeys-lru", "volatile-lfu", "noeviction"] {
        p.same(&["CONFIG", "SET", "maxmemory-policy", policy]);
        for opts in [&["FREQ", "100"][..], &["IDLETIME", "1000"], &["FREQ", "0"]] {
            let run = |raw: &mut Raw, payload: &[u8]| {
                let mut args: Vec<&[u8]> = vec![b"RESTORE", b"k", b"0", payload, b"REPLACE"];
                args.extend(opts.iter().map(|o| o.as_bytes()));
                raw.cmd(&args)
            };
            assert_eq!(
                run(&mut p.ours, &ours),
                run(&mut p.theirs, &theirs),
                "{policy} {opts:?}"
            );
            let probe = if policy.contains("lfu") {
                "FREQ"
            } else {
                "IDLETIME"
            };
            p.same(&["OBJECT", probe, "k"]);
        }
    }
}

/// OBJECT REFCOUNT of a small integer: shared (INT_MAX) unless maxmemory
/// is set with an LRU or LFU policy, as in Redis.
#[test]
fn small_integers_are_shared_unless_an_lru_or_lfu_limit_is_set_as_redis() {
    let mut p = Pair::new();
    p.script(&[
        "SET a 1",
        "OBJECT REFCOUNT a",
        "SET big 10000",
        "OBJECT REFCOUNT big",
        "CONFIG SET maxmemory 1073741824",
        "CONFIG SET maxmemory-policy allkeys-lru",
        "SET a 1",
        "CONFIG SET maxmemory-policy volatile-lru",
        "SET b 1",
        "OBJECT REFCOUNT a",
        "OBJECT REFCOUNT b",
        "CONFIG SET maxmemory-policy allkeys-random",
        "SET c 1",
        "OBJECT REFCOUNT c",
        "CONFIG SET maxmemory 0",
    ]);
}
