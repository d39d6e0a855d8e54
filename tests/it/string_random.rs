//! Random string-command sequences over a small keyspace (4 keys, values
//! from a small alphabet of integers, floats and text), sent to ferrokv and
//! redis-server and compared byte for byte. The generator is seeded
//! deterministically; proptest shrinks any mismatch to a minimal sequence.

use crate::support::*;
use proptest::prelude::*;

const KEYS: &[&str] = &["a", "b", "c", "d"];
const VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "-1",
    "10",
    "007",
    "3.5",
    "-2.25",
    "1e3",
    "abc",
    "hello world",
    " 1",
    "9223372036854775807",
    "-9223372036854775808",
    "inf",
    "1.0",
    "0x10",
    "a\0b",
    "x",
    "5e-3",
    "99999999999999999999",
];
const INTS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "5",
    "-1",
    "-3",
    "100",
    "-100",
    "x",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
];
const FLOATS: &[&str] = &[
    "0", "1", "-1", "0.1", "1.5e2", "-3.25", "abc", "inf", "1e308", "5.0e3", "nan", "+1",
];

fn key() -> impl Strategy<Value = String> {
    proptest::sample::select(KEYS).prop_map(str::to_string)
}
fn value() -> impl Strategy<Value = String> {
    proptest::sample::select(VALUES).prop_map(str::to_string)
}
fn int() -> impl Strategy<Value = String> {
    proptest::sample::select(INTS).prop_map(str::to_string)
}
fn float() -> impl Strategy<Value = String> {
    proptest::sample::select(FLOATS).prop_map(str::to_string)
}
fn set_opts() -> impl Strategy<Value = Vec<String>> {
    proptest::sample::subsequence(
        vec!["NX", "XX", "GET", "KEEPTTL", "EX 100", "PX 100000"],
        0..=3,
    )
    .prop_map(|v| {
        v.iter()
            .flat_map(|s| s.split(' '))
            .map(str::to_string)
            .collect()
    })
}

/// One command line as its arguments.
fn command() -> impl Strategy<Value = Vec<String>> {
    let c = |name: &str| vec![name.to_string()];
    let one = |name: &'static str| key().prop_map(move |k| vec![name.to_string(), k]);
    prop_oneof![
        one("GET"),
        (key(), value(), set_opts()).prop_map(move |(k, v, o)| {
            let mut x = c("SET");
            x.extend([k, v]);
            x.extend(o);
            x
        }),
        (key(), value()).prop_map(|(k, v)| vec!["SETNX".into(), k, v]),
        (key(), value()).prop_map(|(k, v)| vec!["GETSET".into(), k, v]),
        one("GETDEL"),
        (
            key(),
            proptest::sample::select(vec!["", "PERSIST", "EX 100", "PX 0", "FOO"])
        )
            .prop_map(|(k, o)| {
                let mut x = vec!["GETEX".to_string(), k];
                x.extend(o.split(' ').filter(|s| !s.is_empty()).map(str::to_string));
                x
            }),
        proptest::collection::vec(key(), 1..4).prop_map(|ks| {
            let mut x = vec!["MGET".to_string()];
            x.extend(ks);
            x
        }),
        proptest::collection::vec((key(), value()), 1..3).prop_map(|kv| {
            let mut x = vec!["MSET".to_string()];
            x.extend(kv.into_iter().flat_map(|(k, v)| [k, v]));
            x
        }),
        proptest::collection::vec((key(), value()), 1..3).prop_map(|kv| {
            let mut x = vec!["MSETNX".to_string()];
            x.extend(kv.into_iter().flat_map(|(k, v)| [k, v]));
            x
        }),
        (key(), value()).prop_map(|(k, v)| vec!["APPEND".into(), k, v]),
        one("STRLEN"),
        (key(), int(), int()).prop_map(|(k, a, b)| vec!["GETRANGE".into(), k, a, b]),
        (key(), int(), int()).prop_map(|(k, a, b)| vec!["SUBSTR".into(), k, a, b]),
        (
            key(),
            proptest::sample::select(vec!["0", "1", "3", "7", "-1", "x"]),
            value()
        )
            .prop_map(|(k, o, v)| vec!["SETRANGE".into(), k, o.into(), v]),
        one("INCR"),
        one("DECR"),
        (key(), int()).prop_map(|(k, n)| vec!["INCRBY".into(), k, n]),
        (key(), int()).prop_map(|(k, n)| vec!["DECRBY".into(), k, n]),
        (key(), float()).prop_map(|(k, f)| vec!["INCRBYFLOAT".into(), k, f]),
        (
            key(),
            key(),
            proptest::sample::select(vec![
                "",
                "LEN",
                "IDX",
                "IDX WITHMATCHLEN",
                "IDX MINMATCHLEN 2"
            ])
        )
            .prop_map(|(a, b, o)| {
                let mut x = vec!["LCS".to_string(), a, b];
                x.extend(o.split(' ').filter(|s| !s.is_empty()).map(str::to_string));
                x
            }),
        one("DEL"),
        one("EXISTS"),
    ]
}

/// Runs 128 deterministic random sequences through `p`.
fn run_random(p: Pair) {
    same_random_sequences(p, 128, proptest::collection::vec(command(), 1..40));
}

#[test]
fn random_sequences_match_redis() {
    run_random(Pair::new());
}

#[test]
fn random_sequences_match_redis_resp3() {
    let mut p = Pair::new();
    let theirs = p.theirs.cmd_str(&["HELLO", "3"]);
    assert!(theirs.starts_with(b"%"), "redis-server speaks RESP3");
    // HELLO belongs to the connection family; without it there is no RESP3
    // to compare yet.
    if !p.ours.cmd_str(&["HELLO", "3"]).starts_with(b"%") {
        return;
    }
    run_random(p);
}
