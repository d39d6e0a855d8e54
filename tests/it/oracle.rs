//! An independent check of the reply writer: replies to a spread of
//! commands, in RESP2 and RESP3, must decode as exactly one complete frame
//! with the redis-protocol crate's decoders.

use crate::support::*;

const COMMANDS: &[&[&str]] = &[
    &["SET", "s", "v"],
    &["GET", "s"],
    &["GET", "missing"],
    &["INCR", "n"],
    &["INCRBYFLOAT", "f", "1.5"],
    &["RPUSH", "l", "a", "b"],
    &["LRANGE", "l", "0", "-1"],
    &["LPOP", "missing", "2"],
    &["HSET", "h", "a", "1"],
    &["HGETALL", "h"],
    &["SADD", "set", "x"],
    &["SMEMBERS", "set"],
    &["ZADD", "z", "1.5", "m"],
    &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
    &["ZSCORE", "z", "m"],
    &["LCS", "s", "s", "IDX"],
    &["EXISTS", "s", "n"],
    &["TTL", "s"],
    &["NOSUCHCOMMAND"],
    &["CONFIG", "GET", "maxmemory*"],
    &["INFO", "keyspace"],
    &["CLIENT", "INFO"],
    &["EVAL", "return {1, 'two', {3}}", "0"],
    &["SCAN", "0"],
];

#[test]
fn replies_decode_as_single_frames_in_both_protocols() {
    let server = start();
    let mut c = server.raw();
    for resp3 in [false, true] {
        if resp3 {
            let hello = c.cmd_str(&["HELLO", "3"]);
            assert!(
                hello.starts_with(b"%"),
                "{}",
                String::from_utf8_lossy(&hello)
            );
        }
        for args in COMMANDS {
            let reply = c.cmd_str(args);
            let used = if resp3 {
                redis_protocol::resp3::decode::complete::decode(&reply).map(|f| f.map(|(_, n)| n))
            } else {
                redis_protocol::resp2::decode::decode(&reply).map(|f| f.map(|(_, n)| n))
            };
            assert_eq!(
                used.ok().flatten(),
                Some(reply.len()),
                "{args:?} (RESP{}) replied {:?}",
                if resp3 { 3 } else { 2 },
                String::from_utf8_lossy(&reply)
            );
        }
    }
}
