//! SORT and SORT_RO against redis-server: numeric and ALPHA orders, BY
//! keys and hash fields, GET (with `#`), LIMIT, DESC, STORE and errors.

use crate::support::Pair;

fn sort_script(p: &mut Pair) {
    p.script(&[
        "RPUSH l 3 1 2 10 -5 2.5",
        "SORT l",
        "SORT l DESC",
        "SORT l ALPHA",
        "SORT l ALPHA DESC",
        "SORT l LIMIT 1 3",
        "SORT l LIMIT -1 2",
        "SORT l LIMIT 2 -1",
        "SORT l LIMIT 10 5",
        "SORT l LIMIT 0 0",
        "SORT_RO l DESC LIMIT 0 2",
        "MSET w_3 30 w_1 10 w_2 20 w_10 5 w_-5 7",
        "SORT l BY w_*",
        "SORT l BY w_* DESC",
        "SORT l BY nosort",
        "SORT l BY nosort DESC",
        "SORT l BY nosort LIMIT 1 2",
        "SORT l BY nosort DESC LIMIT 1 2",
        "MSET o_3 three o_1 one o_2 two",
        "SORT l GET o_* GET #",
        "SORT l BY w_* GET o_*",
        "SORT l BY o_* ALPHA",
        "HSET h_1 f a",
        "HSET h_2 f b",
        "SORT l BY h_*->f ALPHA GET h_*->f GET #",
        "SORT l GET h_*->",
        "SORT l GET nostar",
        "SORT l STORE dst",
        "LRANGE dst 0 -1",
        "SORT l GET o_* STORE dst",
        "LRANGE dst 0 -1",
        "SORT nokey STORE dst",
        "EXISTS dst",
        "SORT nokey",
        "SADD s 5 3 9 1",
        "SORT s",
        "SORT s DESC LIMIT 1 2",
        "SADD words banana apple cherry",
        "SORT words ALPHA",
        "SORT words",
        "SORT words BY nosort STORE dst",
        "LRANGE dst 0 -1",
        "ZADD z 1 c 2 a 3 b",
        "SORT z ALPHA",
        "SORT z BY nosort",
        "SORT z BY nosort DESC",
        "SORT z BY nosort LIMIT 1 1",
        "SET str x",
        "SORT str",
        "SORT l FOO",
        "SORT l LIMIT 1",
        "SORT l LIMIT a 1",
        "SORT_RO l STORE dst",
        "SORT l BY",
        "SORT l GET",
        "RPUSH bad 1 x",
        "SORT bad",
        "SORT bad BY nosort",
        "SET w_x notnum",
        "RPUSH l2 x",
        "SORT l2 BY w_*",
        "SORT l2 BY missing_*",
        "SORT l2 BY missing_* GET #",
    ]);
}

#[test]
fn sort_resp2() {
    let mut p = Pair::new();
    sort_script(&mut p);
}

#[test]
fn sort_resp3() {
    let mut p = Pair::new();
    p.both(&["HELLO", "3"]);
    sort_script(&mut p);
}

/// SORT of a set BY a constant has no order of its own: inside a script it
/// sorts lexicographically, as Redis does to keep scripts deterministic;
/// lists and sorted sets keep their order.
#[test]
fn sort_by_constant_inside_a_script_matches_redis() {
    let mut p = Pair::new();
    p.script(&["SADD s c a b 10 2", "RPUSH l c a b", "ZADD z 3 c 1 a 2 b"]);
    for key in ["s", "l", "z"] {
        let script = format!("return redis.call('sort','{key}','by','nosort')");
        p.same(&["EVAL", &script, "0"]);
        let script = format!("return redis.call('sort','{key}','by','nosort','desc')");
        p.same(&["EVAL", &script, "0"]);
        let script = format!("return redis.call('sort_ro','{key}','by','nosort','limit','1','2')");
        p.same(&["EVAL", &script, "0"]);
    }
}

/// A sorted set that SORT or SORT_RO read is a skiplist from then on, as
/// Redis's sortCommandGeneric converts it, whatever the outcome.
#[test]
fn sort_leaves_a_sorted_set_a_skiplist() {
    let mut p = Pair::new();
    for sort in [
        "SORT z1",
        "SORT_RO z2 BY nosort LIMIT 0 1",
        "SORT z3 BY w_* GET # STORE d",
        "SORT z4 LIMIT 5 0",
    ] {
        let key = sort.split(' ').nth(1).unwrap_or_default();
        p.same(&["ZADD", key, "1", "a", "2", "b"]);
        p.same(&["OBJECT", "ENCODING", key]);
        p.script(&[sort]);
        assert_eq!(p.same(&["OBJECT", "ENCODING", key]), b"$8\r\nskiplist\r\n");
        p.same(&["ZRANGE", key, "0", "-1", "WITHSCORES"]);
    }
}

/// Weights and elements are read as Redis's sortCommand reads them, by C
/// strtod over the whole C string: "" is 0, leading spaces and hex count,
/// trailing text, NaN and out-of-range values refuse the sort. (Redis
/// checks errno without clearing it first, so after an out-of-range weight
/// it may refuse sorts that follow; those come last here.)
#[test]
fn sort_reads_weights_with_strtod() {
    let mut p = Pair::new();
    p.same(&["RPUSH", "n", "", " 5", "0x10", "-1", "3"]);
    p.same(&["SORT", "n"]);
    p.same(&["SORT", "n", "DESC"]);
    p.same(&["RPUSH", "l", "a", "b", "c", "d", "e"]);
    p.same(&[
        "MSET", "w_a", "", "w_b", " 5", "w_c", "0x10", "w_d", "-1", "w_e", "2",
    ]);
    p.same(&["SORT", "l", "BY", "w_*"]);
    for weight in [&b"inf"[..], b"-2.5e1", b"2 ", b"nan", b"7\0x", b"1e400"] {
        p.same_bytes(&[b"SET", b"w_e", weight]);
        p.same(&["SORT", "l", "BY", "w_*"]);
    }
}
