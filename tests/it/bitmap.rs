//! Bitmap commands against redis-server: the error paths and odd
//! arguments one by one, then random sequences of SETBIT, BITFIELD, BITOP,
//! BITCOUNT and BITPOS mixed with the string commands that see the same
//! bytes, comparing every reply and the values' DUMP payloads.

use crate::support::*;
use proptest::prelude::*;

#[test]
fn errors_and_edges_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "SETBIT k 4294967296 1",
        "SETBIT k 4294967295 2",
        "SETBIT k -1 1",
        "SETBIT k x 1",
        "SETBIT k 0 -1",
        "SETBIT k 0 1.0",
        "GETBIT k 4294967296",
        "GETBIT k -1",
        "GETBIT nokey 7",
        "SET n 123",
        "GETBIT n 2",
        "GETBIT n 3",
        "OBJECT ENCODING n",
        "SETBIT n 3 1",
        "GET n",
        "OBJECT ENCODING n",
        "SETBIT n 100 0",
        "STRLEN n",
        "SET s hello",
        "SETBIT s 0 0",
        "OBJECT ENCODING s",
        "SETBIT new 9 1",
        "OBJECT ENCODING new",
        "DUMP new",
        "BITCOUNT s 0",
        "BITCOUNT s 0 1 foo",
        "BITCOUNT s 0 1 BIT",
        "BITCOUNT s -1 -2 foo",
        "BITCOUNT s 0 x",
        "BITCOUNT nokey x y",
        "BITCOUNT s 5 100 bit",
        "BITCOUNT s -100 -1 BYTE",
        "BITPOS s 2",
        "BITPOS s x",
        "BITPOS nokey 1",
        "BITPOS nokey 0",
        "BITPOS s 1 0 1 foo",
        "BITPOS s 0 0 -1 bit",
        "BITPOS s 0 1",
        "BITPOS s 1 3 2",
        "BITPOS s 1 0 1 2 3",
        "SET ones \u{7f}",
        "BITPOS ones 0",
        "BITPOS ones 1 0 -1 bit",
        "SET empty \"\"",
        "BITOP foo d s",
        "BITOP NOT d s n",
        "BITOP AND d",
        "BITOP and d s n nokey",
        "GET d",
        "OBJECT ENCODING d",
        "BITOP or d nokey nokey2",
        "EXISTS d",
        "BITOP xor d s s",
        "GET d",
        "BITOP not d n",
        "GET d",
        "LPUSH l a",
        "SETBIT l 0 1",
        "GETBIT l 0",
        "BITCOUNT l",
        "BITPOS l 1",
        "BITOP AND d s l",
        "BITFIELD l GET u8 0",
        "BITFIELD_RO l GET u8 0",
        "BITFIELD k GET u64 0",
        "BITFIELD k GET i65 0",
        "BITFIELD k GET i0 0",
        "BITFIELD k GET I8 0",
        "BITFIELD k GET x8 0",
        "BITFIELD k GET u8",
        "BITFIELD k FOO u8 0",
        "BITFIELD k OVERFLOW bad GET u8 0",
        "BITFIELD k OVERFLOW",
        "BITFIELD k SET u8 0 x",
        "BITFIELD k SET u8 #x 1",
        "BITFIELD k SET u8 # 1",
        "BITFIELD k GET u8 #536870912",
        "BITFIELD k GET u8 #536870911",
        "BITFIELD_RO k SET u8 0 1",
        "BITFIELD_RO k GET u8 0 GET i4 #3",
        "BITFIELD k",
        "BITFIELD_RO nokey GET u8 0",
        "BITFIELD f SET i8 0 200 GET i8 0 SET u8 8 -1 GET u8 8",
        "BITFIELD f OVERFLOW SAT INCRBY i8 0 1000 INCRBY u8 8 -1000 OVERFLOW FAIL INCRBY i8 0 1",
        "BITFIELD f OVERFLOW WRAP INCRBY i64 16 9223372036854775807 INCRBY i64 16 1",
        "BITFIELD f INCRBY u63 0 -1 GET u63 0 GET i64 #1",
        "BITFIELD g OVERFLOW FAIL SET u2 100 5",
        "EXISTS g",
        "STRLEN g",
        "GET f",
        "BITFIELD f SET i5 #3 -1 GET i5 #3 GET u5 #3",
    ]);
}

const KEYS: &[&str] = &["a", "b", "c"];
const OFFSETS: &[&str] = &[
    "0", "1", "3", "7", "8", "9", "15", "16", "31", "63", "64", "100", "-1", "x",
];
const RANGES: &[&str] = &[
    "0", "1", "2", "-1", "-2", "-3", "3", "7", "10", "-20", "100",
];
const VALUES: &[&str] = &["", "1", "123", "-9", "abc", "\u{ff}\u{0}", "hello world"];
const TYPES: &[&str] = &[
    "u1", "u3", "u8", "u16", "u63", "i1", "i5", "i8", "i32", "i64",
];
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "100",
    "-100",
    "255",
    "9223372036854775807",
    "-9223372036854775808",
];

fn pick(from: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    proptest::sample::select(from).prop_map(str::to_string)
}

fn field_op() -> impl Strategy<Value = Vec<String>> {
    let offset = prop_oneof![pick(OFFSETS), pick(&["#0", "#1", "#2", "#5"])];
    prop_oneof![
        (pick(TYPES), offset.clone()).prop_map(|(t, o)| vec!["GET".into(), t, o]),
        (pick(&["SET", "INCRBY"]), pick(TYPES), offset, pick(NUMBERS))
            .prop_map(|(c, t, o, n)| vec![c, t, o, n]),
        pick(&["WRAP", "SAT", "FAIL"]).prop_map(|w| vec!["OVERFLOW".into(), w]),
    ]
}

fn with_range(base: Vec<String>, tail: (Option<(String, String)>, Option<String>)) -> Vec<String> {
    let mut x = base;
    if let Some((s, e)) = tail.0 {
        x.extend([s, e]);
        x.extend(tail.1);
    }
    x
}

fn command() -> impl Strategy<Value = Vec<String>> {
    let unit = proptest::option::of(pick(&["BIT", "BYTE", "bit"]));
    let range = (proptest::option::of((pick(RANGES), pick(RANGES))), unit);
    prop_oneof![
        (pick(KEYS), pick(OFFSETS), pick(&["0", "1", "1", "2"])).prop_map(|(k, o, v)| vec![
            "SETBIT".into(),
            k,
            o,
            v
        ]),
        (pick(KEYS), pick(OFFSETS)).prop_map(|(k, o)| vec!["GETBIT".into(), k, o]),
        (pick(KEYS), range.clone()).prop_map(|(k, r)| with_range(vec!["BITCOUNT".into(), k], r)),
        (pick(KEYS), pick(&["0", "1"]), pick(RANGES), range).prop_map(|(k, b, s, r)| {
            let mut x = with_range(vec!["BITPOS".into(), k, b], r);
            if x.len() == 3 && s != "100" {
                x.push(s);
            }
            x
        }),
        (
            pick(&["AND", "OR", "XOR", "NOT"]),
            pick(KEYS),
            proptest::collection::vec(pick(KEYS), 1..4)
        )
            .prop_map(|(op, d, srcs)| {
                let mut x = vec!["BITOP".into(), op, d];
                x.extend(srcs);
                x
            }),
        (
            pick(&["BITFIELD", "BITFIELD_RO"]),
            pick(KEYS),
            proptest::collection::vec(field_op(), 0..4)
        )
            .prop_map(|(c, k, ops)| {
                let mut x = vec![c, k];
                x.extend(ops.into_iter().flatten());
                x
            }),
        (pick(KEYS), pick(VALUES)).prop_map(|(k, v)| vec!["SET".into(), k, v]),
        (pick(KEYS), pick(VALUES)).prop_map(|(k, v)| vec!["APPEND".into(), k, v]),
        (pick(KEYS), pick(&["0", "3", "9"]), pick(VALUES)).prop_map(|(k, o, v)| vec![
            "SETRANGE".into(),
            k,
            o,
            v
        ]),
        (pick(KEYS), pick(&["GET", "DUMP", "STRLEN", "DEL"])).prop_map(|(k, c)| vec![c, k]),
        pick(KEYS).prop_map(|k| vec!["OBJECT".into(), "ENCODING".into(), k]),
        pick(KEYS).prop_map(|k| vec!["RPUSH".into(), k, "x".into()]),
    ]
}

#[test]
fn random_bitmap_sequences_match_redis() {
    same_random_sequences(
        Pair::new(),
        160,
        proptest::collection::vec(command(), 1..40),
    );
}

#[test]
fn random_bitmap_sequences_match_redis_resp3() {
    let mut p = Pair::new();
    assert!(p.theirs.cmd_str(&["HELLO", "3"]).starts_with(b"%"));
    assert!(p.ours.cmd_str(&["HELLO", "3"]).starts_with(b"%"));
    same_random_sequences(p, 48, proptest::collection::vec(command(), 1..30));
}

#[test]
fn bitmaps_in_multi_lua_and_notifications() {
    let mut p = Pair::new();
    p.script(&[
        "MULTI",
        "SETBIT m 7 1",
        "BITFIELD m INCRBY u8 8 3",
        "BITCOUNT m",
        "EXEC",
        "EVAL return{redis.call('setbit',KEYS[1],1,1),redis.call('bitpos',KEYS[1],1),redis.call('bitfield',KEYS[1],'get','u4',0)} 1 m",
        "EVAL_RO return{redis.call('getbit',KEYS[1],1),redis.call('bitfield_ro',KEYS[1],'get','u4',0)} 1 m",
        "EVAL_RO return redis.call('setbit',KEYS[1],1,1) 1 m",
        "CONFIG SET notify-keyspace-events KEA",
    ]);
    let events = p.same_keyevents(&[
        &["SETBIT", "n", "1", "1"][..],
        &["SETBIT", "n", "1", "1"],
        &["BITFIELD", "n", "SET", "u8", "0", "1"],
        &[
            "BITFIELD", "n", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1000",
        ],
        &["BITOP", "OR", "o", "n"],
        &["BITOP", "OR", "o", "missing"],
    ]);
    assert_eq!(
        events,
        ["setbit:n", "setbit:n", "set:o", "del:o", "set:done"]
    );
}

/// SETBIT and BITFIELD count a change per bit or field whose value
/// changed (or that grew the string), as Redis's dirty counter does.
#[test]
fn setbit_and_bitfield_count_changes_as_redis() {
    let mut p = Pair::new();
    let steps: &[&[&str]] = &[
        &["SETBIT", "foo", "0", "0"],
        &["BITFIELD", "foo2", "SET", "i5", "0", "0"],
        &["SETBIT", "foo", "0", "0"],
        &["BITFIELD", "foo2", "SET", "i5", "0", "0"],
        &[
            "BITFIELD", "foo2", "SET", "i5", "0", "1", "SET", "i5", "5", "1", "GET", "u4", "0",
        ],
        &[
            "BITFIELD", "foo2", "SET", "i5", "0", "1", "INCRBY", "u2", "100", "1",
        ],
        &[
            "BITFIELD", "foo3", "SET", "u8", "0", "1", "SET", "u8", "8", "2",
        ],
        &[
            "BITFIELD", "foo2", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9",
        ],
        &["BITFIELD", "foo2", "INCRBY", "u2", "0", "4"],
        &["SETBIT", "foo", "100", "0"],
    ];
    let mut last = (0, 0);
    for args in steps {
        p.same(args);
        let now = (
            info_u64(&mut p.ours, "rdb_changes_since_last_save"),
            info_u64(&mut p.theirs, "rdb_changes_since_last_save"),
        );
        assert_eq!(
            now.0 - last.0,
            now.1 - last.1,
            "changes counted by {args:?}"
        );
        last = now;
    }
}
