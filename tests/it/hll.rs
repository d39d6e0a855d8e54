//! HyperLogLog commands against redis-server: errors and odd arguments,
//! then random PFADD/PFMERGE/PFCOUNT sequences (small and large enough to
//! turn dense, with corrupting writes mixed in) comparing every reply and
//! the raw bytes of the values (GET, DUMP, PFDEBUG).

use crate::support::*;
use proptest::prelude::*;

#[test]
fn errors_and_edges_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "PFADD h",
        "GET h",
        "OBJECT ENCODING h",
        "PFCOUNT h",
        "PFADD h",
        "PFADD h a b c a",
        "PFADD h a",
        "GET h",
        "PFCOUNT h",
        "GET h",
        "PFCOUNT h nokey",
        "PFCOUNT nokey",
        "PFDEBUG ENCODING h",
        "PFDEBUG DECODE h",
        "PFDEBUG FOO h",
        "PFDEBUG FOO nokey",
        "PFDEBUG ENCODING nokey",
        "PFDEBUG TODENSE h",
        "PFDEBUG TODENSE h",
        "PFDEBUG ENCODING h",
        "PFDEBUG DECODE h",
        "PFCOUNT h",
        "SET s hello",
        "PFADD s a",
        "PFCOUNT s",
        "PFCOUNT h s",
        "PFMERGE s h",
        "PFMERGE h s",
        "PFDEBUG ENCODING s",
        "SET i 12345678901234567",
        "PFADD i x",
        "LPUSH l a",
        "PFADD l a",
        "PFCOUNT l",
        "PFCOUNT h l",
        "PFMERGE d l",
        "PFDEBUG ENCODING l",
        "PFMERGE m",
        "GET m",
        "PFMERGE m2 nokey nokey2",
        "GET m2",
        "PFADD a 1 2 3",
        "PFADD b 3 4 5",
        "PFMERGE c a b",
        "GET c",
        "PFCOUNT a b c",
        "PFMERGE a h",
        "PFDEBUG ENCODING a",
        "GET a",
        "PFSELFTEST x",
        "PFDEBUG GETREG",
    ]);
    // Corruptions: a sparse HLL with an extra opcode, and a dense HLL of
    // the wrong length.
    p.script(&[
        "PFADD bad x y",
        "APPEND bad z",
        "PFCOUNT bad",
        "PFADD bad q",
        "PFCOUNT bad h",
        "PFMERGE bad2 bad",
        "PFDEBUG TODENSE bad",
        "PFDEBUG GETREG bad",
        "APPEND h z",
        "PFCOUNT h",
        "PFADD h k",
    ]);
    // A header and an XZERO opcode cut short: Redis reads its second byte
    // from the string's terminating NUL, then (on later writes) from
    // whatever its buffer held; the first write and what it leaves agree,
    // and nothing after it brings the server down.
    let truncated: &[u8] = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0\x7f";
    p.same_bytes(&[b"SET", b"t", truncated]);
    p.same(&["PFADD", "t", "a"]);
    p.same(&["GET", "t"]);
    for cmd in [
        &["PFADD", "t", "b", "c", "d"][..],
        &["PFCOUNT", "t"],
        &["PFCOUNT", "t", "h2"],
        &["PFMERGE", "t2", "t"],
        &["PFDEBUG", "DECODE", "t"],
        &["PFDEBUG", "TODENSE", "t"],
    ] {
        p.both(cmd);
    }
    p.same(&["PING"]);
}

#[test]
fn selftest_and_getreg_match_redis() {
    let mut p = Pair::new();
    p.same(&["PFSELFTEST"]);
    p.same(&["PFADD", "h", "a", "b", "c"]);
    p.same(&["PFDEBUG", "GETREG", "h"]);
    p.same(&["GET", "h"]);
    p.same(&["DUMP", "h"]);
}

#[test]
fn sparse_limit_follows_the_config() {
    let mut p = Pair::new();
    for limit in ["0", "30", "200"] {
        p.same(&["CONFIG", "SET", "hll-sparse-max-bytes", limit]);
        p.same(&["DEL", "h"]);
        for i in 0..40 {
            let e = format!("e{i}");
            p.same(&["PFADD", "h", &e]);
            p.same(&["PFDEBUG", "ENCODING", "h"]);
        }
        p.same(&["GET", "h"]);
    }
}

const KEYS: &[&str] = &["a", "b", "c"];

fn key() -> impl Strategy<Value = String> + Clone {
    proptest::sample::select(KEYS).prop_map(str::to_string)
}

fn command() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        4 => (key(), proptest::collection::vec(0..60u32, 0..6)).prop_map(|(k, es)| {
            let mut x = vec!["PFADD".to_string(), k];
            x.extend(es.into_iter().map(|e| format!("m{e}")));
            x
        }),
        // Runs of fresh elements, enough to go past the sparse limit.
        2 => (key(), 0..20_000u32, 1..400u32).prop_map(|(k, start, n)| {
            let mut x = vec!["PFADD".to_string(), k];
            x.extend((start..start + n).map(|e| format!("e{e}")));
            x
        }),
        3 => proptest::collection::vec(key(), 1..4).prop_map(|ks| {
            let mut x = vec!["PFCOUNT".to_string()];
            x.extend(ks);
            x
        }),
        2 => proptest::collection::vec(key(), 1..4).prop_map(|ks| {
            let mut x = vec!["PFMERGE".to_string()];
            x.extend(ks);
            x
        }),
        2 => (key(), proptest::sample::select(vec!["ENCODING", "DECODE", "TODENSE"]))
            .prop_map(|(k, s)| vec!["PFDEBUG".into(), s.into(), k]),
        3 => (key(), proptest::sample::select(vec!["GET", "DUMP", "STRLEN", "DEL"]))
            .prop_map(|(k, c)| vec![c.into(), k]),
        1 => key().prop_map(|k| vec!["OBJECT".into(), "ENCODING".into(), k]),
        1 => (key(), proptest::sample::select(vec!["z", "\u{1}"]))
            .prop_map(|(k, v)| vec!["APPEND".into(), k, v.into()]),
        1 => (key(), proptest::sample::select(vec!["16", "17", "20"]))
            .prop_map(|(k, o)| vec!["SETRANGE".into(), k, o.into(), "\u{7f}".into()]),
        1 => key().prop_map(|k| vec!["SET".into(), k, "plain".into()]),
    ]
}

#[test]
fn random_hll_sequences_match_redis() {
    same_random_sequences(Pair::new(), 96, proptest::collection::vec(command(), 1..30));
}
