//! Sorted-set commands (Redis's `unit/type/zset.tcl`), compared byte for
//! byte with redis-server (sorted order is deterministic), except ZSCAN of
//! a skiplist (compared as sets) and ZRANDMEMBER (invariants).

use std::collections::HashMap;

use crate::support::*;
use crate::unordered::*;

#[test]
fn zadd_flags_and_errors() {
    let mut p = Pair::new();
    p.script(&[
        "ZADD z NX XX 1 a",
        "ZADD z GT NX 1 a",
        "ZADD z LT NX 1 a",
        "ZADD z GT LT 1 a",
        "ZADD z INCR 1 a 2 b",
        "ZADD z 1 a 2",
        "ZADD z x a",
        "ZADD z nan a",
        "ZADD z  a",
        "ZADD z",
        "ZADD z NX",
        "ZADD z NX CH",
        "EXISTS z",
        "ZADD z XX 1 a",
        "ZADD z XX INCR 1 a",
        "EXISTS z",
        "ZADD z 1 a 2 b 3 c",
        "ZADD z 1 a 5 b",
        "ZADD z CH 1 a 6 b 7 d",
        "ZADD z NX 10 a 11 e",
        "ZADD z XX CH 10 a 11 f",
        "ZADD z GT CH 5 a 20 b",
        "ZADD z LT CH 5 a 30 b",
        "ZADD z GT 100 new",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZADD z INCR 2.5 a",
        "ZADD z INCR NX 1 a",
        "ZADD z INCR XX 1 zz",
        "ZADD z INCR GT -1 a",
        "ZADD z INCR LT -1 a",
        "ZADD z incr inf a",
        "ZADD z incr -inf a",
        "ZSCORE z a",
        "ZADD z 0.1 f 1e200 g 123456789012345678 h -1.5e-7 i +inf j -inf k",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZINCRBY z 1.5 a",
        "ZINCRBY z x a",
        "ZINCRBY z 1 newmember",
        "ZINCRBY nokey 2 m",
        "ZSCORE nokey m",
        "ZINCRBY z -inf j",
        "ZCARD z",
        "ZCARD nokey",
        "TYPE z",
        "OBJECT ENCODING z",
    ]);
}

#[test]
fn zset_negative_zero_and_encodings() {
    let mut p = Pair::new();
    let long = "x".repeat(65);
    p.script(&[
        "ZADD n -0 a",
        "ZSCORE n a",
        "ZINCRBY n -0 b",
        "ZADD n 1 d",
        "ZINCRBY n -1 d",
        "ZRANGE n 0 -1 WITHSCORES",
        "OBJECT ENCODING n",
    ]);
    p.same(&["ZADD", "big", "1", &long]);
    p.same(&["OBJECT", "ENCODING", "big"]);
    p.script(&[
        "ZADD big -0 a",
        "ZINCRBY big -0 b",
        "ZRANGE big 0 -1 WITHSCORES",
        "ZUNIONSTORE o 1 big",
        "OBJECT ENCODING o",
        "ZRANGE o 0 -1 WITHSCORES",
        "ZRANGESTORE o2 big 0 1",
        "OBJECT ENCODING o2",
        "ZRANGE o2 0 -1 WITHSCORES",
    ]);
    // 128 members stay listpack; the 129th converts, for good.
    for i in 0..128 {
        p.same(&["ZADD", "c", &i.to_string(), &format!("m{i}")]);
    }
    p.same(&["OBJECT", "ENCODING", "c"]);
    p.same(&["ZADD", "c", "1000", "m128"]);
    p.same(&["OBJECT", "ENCODING", "c"]);
    p.same(&["ZREM", "c", "m128", "m0"]);
    p.same(&["OBJECT", "ENCODING", "c"]);
    p.same(&["ZRANGE", "c", "0", "-1", "WITHSCORES"]);
    // A first ZADD with many members starts as a skiplist.
    let mut args: Vec<String> = vec!["ZADD".into(), "d".into()];
    for i in 0..130 {
        args.push(i.to_string());
        args.push(format!("m{i}"));
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    p.same(&refs);
    p.same(&["OBJECT", "ENCODING", "d"]);
    // Many pairs naming one member stay a listpack.
    let mut args: Vec<&str> = vec!["ZADD", "dup"];
    for _ in 0..200 {
        args.extend(["1", "a"]);
    }
    p.same(&args);
    p.same(&["OBJECT", "ENCODING", "dup"]);
    let mut args: Vec<&str> = vec!["HSET", "hdup"];
    for _ in 0..600 {
        args.extend(["f", "v"]);
    }
    p.same(&args);
    p.same(&["OBJECT", "ENCODING", "hdup"]);
    p.same(&["ZUNIONSTORE", "e", "1", "d"]);
    p.same(&["OBJECT", "ENCODING", "e"]);
    p.same(&["ZRANGESTORE", "e", "d", "0", "9"]);
    p.same(&["OBJECT", "ENCODING", "e"]);
}

#[test]
fn zset_single_member_commands() {
    let mut p = Pair::new();
    p.script(&[
        "ZADD z 1 a 2 b 3 c 3 cc",
        "ZSCORE z a",
        "ZSCORE z zz",
        "ZSCORE nokey a",
        "ZMSCORE z a zz c",
        "ZMSCORE nokey a b",
        "ZMSCORE z",
        "ZRANK z a",
        "ZRANK z cc",
        "ZRANK z zz",
        "ZRANK nokey a",
        "ZREVRANK z a",
        "ZREVRANK z cc",
        "ZREVRANK z zz",
        "ZRANK z a WITHSCORE",
        "ZREM z a zz a",
        "ZREM nokey a",
        "ZREM z",
        "ZRANGE z 0 -1",
        "ZREM z b c cc",
        "EXISTS z",
        "SET str x",
    ]);
    for line in [
        "ZADD str 1 a",
        "ZINCRBY str 1 a",
        "ZREM str a",
        "ZCARD str",
        "ZSCORE str a",
        "ZMSCORE str a",
        "ZRANK str a",
        "ZREVRANK str a",
        "ZCOUNT str 0 1",
        "ZLEXCOUNT str - +",
        "ZRANGE str 0 1",
        "ZRANGESTORE d str 0 1",
        "ZREVRANGE str 0 1",
        "ZRANGEBYSCORE str 0 1",
        "ZREVRANGEBYSCORE str 1 0",
        "ZRANGEBYLEX str - +",
        "ZREVRANGEBYLEX str + -",
        "ZREMRANGEBYRANK str 0 1",
        "ZREMRANGEBYSCORE str 0 1",
        "ZREMRANGEBYLEX str - +",
        "ZPOPMIN str",
        "ZPOPMAX str 2",
        "ZRANDMEMBER str",
        "ZRANDMEMBER str 2",
        "ZSCAN str 0",
        "ZUNION 1 str",
        "ZINTERSTORE d 1 str",
        "ZDIFF 2 nokey str",
        "ZINTERCARD 1 str",
    ] {
        p.script(&[line]);
    }
    p.script(&["GET str", "EXISTS d"]);
}

#[test]
fn zrange_family() {
    let mut p = Pair::new();
    p.script(&["ZADD z 1 a 2 b 3 c 4 d 5 e 5 f -inf g +inf h 2.5 i"]);
    for line in [
        "ZRANGE z 0 -1",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZRANGE z 2 4 withscores",
        "ZRANGE z -3 -1",
        "ZRANGE z -100 100",
        "ZRANGE z 5 2",
        "ZRANGE z 100 200",
        "ZRANGE z 0 0 REV",
        "ZRANGE z 1 3 REV WITHSCORES",
        "ZRANGE z x 1",
        "ZRANGE z 0 1 foo",
        "ZRANGE z 0 -1 LIMIT 0 1",
        "ZRANGE z 0 -1 LIMIT 0 -1",
        "ZRANGE z 0 1 LIMIT 0",
        "ZRANGE z 0 1 BYSCORE BYLEX",
        "ZRANGE z 0 1 REV REV",
        "ZRANGE z 2 4 BYSCORE",
        "ZRANGE z (2 4 BYSCORE WITHSCORES",
        "ZRANGE z 2 (4 BYSCORE",
        "ZRANGE z -inf +inf BYSCORE WITHSCORES",
        "ZRANGE z 4 2 BYSCORE REV",
        "ZRANGE z +inf -inf BYSCORE REV LIMIT 1 3",
        "ZRANGE z -inf +inf BYSCORE LIMIT 2 2",
        "ZRANGE z -inf +inf BYSCORE LIMIT 2 -1",
        "ZRANGE z -inf +inf BYSCORE LIMIT -1 2",
        "ZRANGE z -inf +inf BYSCORE LIMIT 100 2",
        "ZRANGE z -inf +inf BYSCORE LIMIT 0 0",
        "ZRANGE z -inf +inf BYSCORE LIMIT x 1",
        "ZRANGE z 5 1 BYSCORE",
        "ZRANGE z (5 5 BYSCORE",
        "ZRANGE z x 5 BYSCORE",
        "ZRANGE z ((1 5 BYSCORE",
        "ZRANGE z [1 5 BYSCORE",
        "ZRANGE z - + BYLEX WITHSCORES",
        "ZREVRANGE z 0 2",
        "ZREVRANGE z 0 2 WITHSCORES",
        "ZREVRANGE z -2 -1",
        "ZREVRANGE z 0 1 BYSCORE",
        "ZREVRANGE z 0 1 LIMIT 0 1",
        "ZRANGEBYSCORE z 2 4",
        "ZRANGEBYSCORE z 2 4 WITHSCORES LIMIT 1 1",
        "ZRANGEBYSCORE z -inf +inf LIMIT 1 2 WITHSCORES",
        "ZRANGEBYSCORE z x 1",
        "ZRANGEBYSCORE z 0 1 LIMIT 0",
        "ZRANGEBYSCORE z 0 1 REV",
        "ZREVRANGEBYSCORE z 4 2",
        "ZREVRANGEBYSCORE z +inf -inf WITHSCORES",
        "ZREVRANGEBYSCORE z 2 4",
        "ZCOUNT z 2 4",
        "ZCOUNT z (2 (4",
        "ZCOUNT z -inf +inf",
        "ZCOUNT z 4 2",
        "ZCOUNT z x 1",
        "ZCOUNT nokey 0 1",
        "ZRANGE nokey 0 -1",
        "ZRANGE nokey 0 -1 BYSCORE",
        "ZRANGEBYSCORE nokey 0 1",
    ] {
        p.script(&[line]);
    }
}

#[test]
fn zrange_by_lex() {
    let mut p = Pair::new();
    p.script(&["ZADD l 0 a 0 b 0 c 0 d 0 e 0 ff 0 g"]);
    for line in [
        "ZRANGEBYLEX l - +",
        "ZRANGEBYLEX l [b (d",
        "ZRANGEBYLEX l (b [d",
        "ZRANGEBYLEX l [f +",
        "ZRANGEBYLEX l - (c",
        "ZRANGEBYLEX l + -",
        "ZRANGEBYLEX l [d [b",
        "ZRANGEBYLEX l - + LIMIT 2 3",
        "ZRANGEBYLEX l - + LIMIT -1 3",
        "ZRANGEBYLEX l a b",
        "ZRANGEBYLEX l - + WITHSCORES",
        "ZREVRANGEBYLEX l + -",
        "ZREVRANGEBYLEX l (e [b",
        "ZREVRANGEBYLEX l + - LIMIT 1 2",
        "ZRANGE l [b [e BYLEX",
        "ZRANGE l [e [b BYLEX REV LIMIT 0 2",
        "ZLEXCOUNT l - +",
        "ZLEXCOUNT l (a [c",
        "ZLEXCOUNT l [c (a",
        "ZLEXCOUNT l a b",
        "ZLEXCOUNT nokey - +",
        "ZRANGESTORE dst l [b [d BYLEX",
        "ZRANGE dst 0 -1 WITHSCORES",
        "ZRANGESTORE dst l 0 -1 WITHSCORES",
        "ZRANGESTORE dst l 5 1",
        "EXISTS dst",
        "ZRANGESTORE dst l 0 1 REV",
        "ZRANGE dst 0 -1",
        "ZRANGESTORE dst nokey 0 -1",
        "EXISTS dst",
        "ZREMRANGEBYLEX l [b [c",
        "ZREMRANGEBYLEX l x y",
        "ZRANGE l 0 -1",
        "ZREMRANGEBYRANK l -1 -1",
        "ZREMRANGEBYRANK l 5 1",
        "ZREMRANGEBYRANK l x 1",
        "ZRANGE l 0 -1",
        "ZADD s 1 a 2 b 3 c 4 d",
        "ZREMRANGEBYSCORE s (1 3",
        "ZREMRANGEBYSCORE s x 3",
        "ZRANGE s 0 -1 WITHSCORES",
        "ZREMRANGEBYSCORE s -inf +inf",
        "EXISTS s",
        "ZREMRANGEBYRANK nokey 0 -1",
    ] {
        p.script(&[line]);
    }
}

#[test]
fn zpop_and_zrandmember() {
    let mut p = Pair::new();
    p.script(&[
        "ZPOPMIN nokey",
        "ZPOPMIN nokey 3",
        "ZADD z 1 a 2 b 3 c 4 d",
        "ZPOPMIN z -1",
        "ZPOPMIN z x",
        "ZPOPMIN z 1 2",
        "ZPOPMIN z",
        "ZPOPMAX z",
        "ZPOPMIN z 0",
        "ZPOPMAX z 10",
        "EXISTS z",
        "ZRANDMEMBER nokey",
        "ZRANDMEMBER nokey 3",
        "ZADD r 1 a 2 b 3 c",
        "ZRANDMEMBER r 0",
        "ZRANDMEMBER r x",
        "ZRANDMEMBER r 1 foo",
        "ZRANDMEMBER r 1 WITHSCORES x",
        "ZRANDMEMBER r -9223372036854775808",
        "ZRANDMEMBER r -9223372036854775807 WITHSCORES",
        "ZADD m 1 a 2 b 3 c",
        "ZMPOP 2 nokey m MIN",
        "ZMPOP 1 m MAX COUNT 5",
        "EXISTS m",
        "ZMPOP 1 m MIN",
        "ZADD m 1 a 2 b 3 c",
        "ZMPOP 0 m MIN",
        "ZMPOP x m MIN",
        "ZMPOP 2 m MIN",
        "ZMPOP 1 m FOO",
        "ZMPOP 1 m MIN COUNT 0",
        "ZMPOP 1 m MIN COUNT -1",
        "ZMPOP 1 m MIN COUNT x",
        "ZMPOP 1 m MIN COUNT 1 COUNT 2",
        "ZMPOP 1 m MIN COUNT",
        "ZMPOP 1 m MIN FOO",
        "ZMPOP 1 m",
        "SET str x",
        "ZMPOP 2 str m MIN",
        "ZMPOP 2 nokey str MIN",
        "ZMPOP 2 m str max count 2",
    ]);
    for i in 0..300 {
        p.same(&["ZADD", "big", &i.to_string(), &format!("m{i}")]);
    }
    for key in ["r", "big"] {
        check_zrandmember(&mut p.ours, key);
        check_zrandmember(&mut p.theirs, key);
    }
}

/// ZRANDMEMBER shapes, membership and scores on one server.
fn check_zrandmember(conn: &mut Raw, key: &str) {
    let all = Resp::parse(&conn.cmd_str(&["ZRANGE", key, "0", "-1", "WITHSCORES"]));
    let scores: HashMap<Vec<u8>, Vec<u8>> = all
        .items()
        .chunks(2)
        .map(|c| (c[0].bulk().expect("member"), c[1].bulk().expect("score")))
        .collect();
    let len = scores.len();
    let one = Resp::parse(&conn.cmd_str(&["ZRANDMEMBER", key]))
        .bulk()
        .expect("bulk");
    assert!(scores.contains_key(&one));
    for count in [1i64, 2, 5, -1, -7, len as i64 - 1, len as i64 + 3] {
        let c = count.to_string();
        let want = if count < 0 {
            count.unsigned_abs() as usize
        } else {
            (count as usize).min(len)
        };
        let r = Resp::parse(&conn.cmd_str(&["ZRANDMEMBER", key, &c]));
        let got: Vec<Vec<u8>> = r.items().iter().map(|e| e.bulk().expect("bulk")).collect();
        assert_eq!(got.len(), want, "ZRANDMEMBER {key} {count}");
        assert!(got.iter().all(|m| scores.contains_key(m)));
        if count > 0 {
            let distinct: std::collections::HashSet<_> = got.iter().collect();
            assert_eq!(distinct.len(), got.len());
        }
        let r = Resp::parse(&conn.cmd_str(&["ZRANDMEMBER", key, &c, "WITHSCORES"]));
        assert_eq!(r.items().len(), want * 2);
        for pair in r.items().chunks(2) {
            let m = pair[0].bulk().expect("member");
            assert_eq!(scores.get(&m), Some(&pair[1].bulk().expect("score")));
        }
    }
}

#[test]
fn zset_union_inter_diff() {
    let mut p = Pair::new();
    p.script(&[
        "ZADD a 1 x 2 y 3 z",
        "ZADD b 10 y 20 z 30 w",
        "SADD s x w q",
        "ZUNION 2 a b",
        "ZUNION 2 a b WITHSCORES",
        "ZUNION 3 a b s WITHSCORES",
        "ZUNION 2 a b WEIGHTS 2 0.5 WITHSCORES",
        "ZUNION 2 a b AGGREGATE MIN WITHSCORES",
        "ZUNION 2 a b AGGREGATE max WITHSCORES",
        "ZUNION 2 a nokey WITHSCORES",
        "ZINTER 2 a b WITHSCORES",
        "ZINTER 2 a s WITHSCORES",
        "ZINTER 2 a b WEIGHTS 1 -1 AGGREGATE SUM WITHSCORES",
        "ZINTER 2 a nokey",
        "ZDIFF 2 a b WITHSCORES",
        "ZDIFF 2 b s",
        "ZDIFF 2 nokey a",
        "ZDIFF 1 a WITHSCORES",
        "ZUNIONSTORE out 2 a b",
        "ZRANGE out 0 -1 WITHSCORES",
        "ZINTERSTORE out 2 a b WEIGHTS 1 2",
        "ZRANGE out 0 -1 WITHSCORES",
        "ZDIFFSTORE out 2 a b",
        "ZRANGE out 0 -1 WITHSCORES",
        "ZINTERSTORE out 2 a nokey",
        "EXISTS out",
        "SET out x",
        "ZUNIONSTORE out 1 a",
        "TYPE out",
        "ZINTERCARD 2 a b",
        "ZINTERCARD 2 a b LIMIT 1",
        "ZINTERCARD 2 a b LIMIT 0",
        "ZINTERCARD 3 a b s",
        "ZINTERCARD 2 a nokey",
        "ZINTERCARD 0 a",
        "ZINTERCARD 1 a LIMIT -1",
        "ZINTERCARD 1 a LIMIT x",
        "ZINTERCARD 1 a WITHSCORES",
        "ZINTERCARD 3 a b",
        "ZUNIONSTORE d 0 a",
        "ZUNIONSTORE d 2 a",
        "ZUNIONSTORE d x a",
        "ZUNION 1 a WEIGHTS x",
        "ZUNION 1 a WEIGHTS 1 2",
        "ZUNION 2 a b WEIGHTS 1",
        "ZUNION 1 a AGGREGATE foo",
        "ZUNION 1 a WITHSCORES AGGREGATE",
        "ZUNIONSTORE d 1 a WITHSCORES",
        "ZDIFF 1 a WEIGHTS 1",
        "ZDIFF 1 a AGGREGATE SUM",
        "ZINTER 0 a",
        "ZADD inf 1 p +inf q",
        "ZADD ninf 1 p -inf q",
        "ZUNION 2 inf ninf WITHSCORES",
        "ZINTER 2 inf ninf WITHSCORES",
        "ZUNION 1 inf WEIGHTS 0 WITHSCORES",
    ]);
}

#[test]
fn zscan_small_and_large() {
    let mut p = Pair::new();
    p.script(&[
        "ZSCAN nokey 0",
        "ZADD z 1 a 2.5 b -inf c 0.1 d",
        "ZSCAN z 0",
        "ZSCAN z 0 MATCH [ab]",
        "ZSCAN z 0 COUNT 0",
        "ZSCAN z 0 TYPE zset",
        "ZSCAN z x",
    ]);
    for i in 0..500 {
        p.same(&["ZADD", "big", &format!("{i}.5"), &format!("m{i}")]);
    }
    let ours = full_scan(&mut p.ours, "ZSCAN", "big", &[], 2);
    assert_eq!(ours.len(), 500);
    assert_eq!(ours, full_scan(&mut p.theirs, "ZSCAN", "big", &[], 2));
    let extra = ["MATCH", "m4*", "COUNT", "5"];
    let ours = full_scan(&mut p.ours, "ZSCAN", "big", &extra, 2);
    assert_eq!(ours.len(), 111);
    assert_eq!(ours, full_scan(&mut p.theirs, "ZSCAN", "big", &extra, 2));
}

#[test]
fn zset_large_ranks_match() {
    // Many members with colliding scores: ranks and ranges through the
    // tree agree with Redis's skiplist.
    let mut p = Pair::new();
    for i in 0..1500 {
        p.same(&["ZADD", "z", &(i % 37).to_string(), &format!("m{i}")]);
    }
    for i in (0..1500).step_by(97) {
        p.same(&["ZRANK", "z", &format!("m{i}")]);
        p.same(&["ZREVRANK", "z", &format!("m{i}")]);
    }
    p.script(&[
        "ZRANGE z 700 710 WITHSCORES",
        "ZRANGE z 700 710 REV",
        "ZRANGE z 10 (12 BYSCORE LIMIT 5 10",
        "ZRANGE z (30 3 BYSCORE REV LIMIT 7 5 WITHSCORES",
        "ZCOUNT z 5 9",
        "ZREMRANGEBYRANK z 100 199",
        "ZREMRANGEBYSCORE z 20 (22",
        "ZCARD z",
        "ZRANGE z 95 105",
        "ZPOPMAX z 3",
        "ZPOPMIN z 3",
        "ZRANGE z -5 -1 WITHSCORES",
    ]);
}

#[test]
fn zset_with_generic_key_commands() {
    let mut p = Pair::new();
    p.script(&[
        "ZADD z 1 a 2 b",
        "TYPE z",
        "COPY z z2",
        "ZADD z2 3 c",
        "ZRANGE z 0 -1",
        "ZRANGE z2 0 -1",
        "RENAME z z3",
        "ZRANGE z3 0 -1 WITHSCORES",
        "DEL z3 z2",
        "EXISTS z3 z2",
        "ZADD y 1 a",
    ]);
    same_scan_unordered(&mut p, &["SCAN", "0", "TYPE", "zset"]);
}

#[test]
fn zset_resp3() {
    let mut p = Pair::new();
    if !try_resp3(&mut p) {
        return;
    }
    p.script(&[
        "ZADD z 1 a 2.5 b +inf c",
        "ZSCORE z b",
        "ZSCORE z c",
        "ZMSCORE z a zz",
        "ZINCRBY z 1 a",
        "ZADD z INCR 1 a",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZRANGE z 0 -1",
        "ZRANGEBYSCORE z -inf +inf WITHSCORES",
        "ZUNION 1 z WITHSCORES",
        "ZSCAN z 0",
        "ZPOPMIN z",
        "ZPOPMIN z 1",
        "ZPOPMAX z 5",
        "ZPOPMIN nokey",
        "ZRANDMEMBER nokey",
        "ZADD m 1 a 2 b",
        "ZMPOP 1 m MIN COUNT 5",
        "ZMPOP 1 m MIN",
    ]);
}

/// Score bounds are read as Redis's zslParseRange reads them, by C strtod
/// over the whole C string: "" is 0 and "(" an exclusive 0, leading spaces
/// and hex count, overflow is infinity; NaN and trailing text are refused.
#[test]
fn score_bounds_are_read_with_strtod() {
    let mut p = Pair::new();
    p.same(&["ZADD", "z", "-1", "n", "0", "a", "1", "b", "16", "h"]);
    for (min, max) in [
        ("", ""),
        ("(", "1"),
        ("(", "("),
        (" 1", "+inf"),
        ("0x1", "0x10"),
        ("-1e400", "1e400"),
        (" ", "1"),
        ("1 ", "2"),
        ("nan", "1"),
        ("(nan", "1"),
    ] {
        p.same(&["ZRANGEBYSCORE", "z", min, max]);
        p.same(&["ZREVRANGEBYSCORE", "z", max, min]);
        p.same(&["ZRANGE", "z", min, max, "BYSCORE"]);
        p.same(&["ZCOUNT", "z", min, max]);
    }
    p.same_bytes(&[b"ZCOUNT", b"z", b"0\0junk", b"1"]);
    p.same(&["ZREMRANGEBYSCORE", "z", "", "("]);
    p.same(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]);
}

/// Lex ranges are first checked against the first and last members, as
/// Redis's zslIsInLexRange does: on a set whose scores differ (so not in
/// lex order) that check alone decides these replies.
#[test]
fn lex_ranges_outside_the_first_and_last_members() {
    let mut p = Pair::new();
    p.script(&[
        "ZADD z 3 c 4 d 0 x 0 y 0 w",
        "ZRANGEBYLEX z [w [x",
        "ZREVRANGEBYLEX z [x [w",
        "ZLEXCOUNT z [w [x",
        "ZRANGE z [w [x BYLEX",
        "ZRANGEBYLEX z - [a",
        "ZREMRANGEBYLEX z [w [x",
        "ZRANGE z 0 -1",
    ]);
}
