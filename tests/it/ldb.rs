//! The Lua debugger (SCRIPT DEBUG, `redis-cli --ldb`) against redis-server:
//! every byte of whole debugging sessions compared, forked and
//! synchronous, and redis-cli's transcript of the same session.

use std::process::Command;

use crate::support::{encode, output_with_input, Pair, Raw};

const SCRIPT: &str = "local key = KEYS[1]
local n = tonumber(ARGV[1])
redis.call('set', key, n)
local t = {1,2,'x', {a={b={c=1}}}, nested = {true, false}}
redis.debug('value is', n, t, nil, 'a\\nb')
for i=1,2 do
  redis.call('incr', key)
end
local function twice(v)
  local doubled = v * 2
  return doubled
end
redis.breakpoint()
local r = twice(n)
return {redis.call('get', key), r}
";

/// What one session returns: each reply, until the connection closed.
fn session(port: u16, mode: &str, script: &str, keys_args: &[&str], cmds: &[&str]) -> Vec<String> {
    let mut raw = Raw::connect(port);
    let mut seen = Vec::new();
    seen.push(raw.cmd_str(&["SCRIPT", "DEBUG", mode]));
    let mut eval: Vec<&str> = vec!["EVAL", script];
    eval.extend_from_slice(keys_args);
    raw.send(&encode(
        &eval.iter().map(|s| s.as_bytes()).collect::<Vec<_>>(),
    ));
    let mut ended = false;
    let read = |raw: &mut Raw, seen: &mut Vec<Vec<u8>>| {
        let r = raw.read_reply();
        let end = String::from_utf8_lossy(&r).contains("+<endsession>\r\n");
        seen.push(r);
        if end {
            // The script's reply follows, then the server closes.
            seen.push(raw.read_reply());
            assert!(raw.is_closed(), "the session's connection stays open");
        }
        end
    };
    ended |= read(&mut raw, &mut seen);
    for c in cmds {
        if ended {
            break;
        }
        let args: Vec<&[u8]> = c.split(' ').map(str::as_bytes).collect();
        raw.send(&encode(&args));
        ended |= read(&mut raw, &mut seen);
    }
    assert!(ended, "the session did not end");
    seen.into_iter()
        .map(|r| String::from_utf8_lossy(&r).into_owned())
        .collect()
}

fn same_session(pair: &Pair, mode: &str, script: &str, keys_args: &[&str], cmds: &[&str]) {
    let (ours, theirs) = pair.ports();
    let a = session(ours, mode, script, keys_args, cmds);
    let b = session(theirs, mode, script, keys_args, cmds);
    assert_eq!(a, b, "session differs (mode {mode}, commands {cmds:?})");
}

const COMMANDS: &[&str] = &[
    "help",
    "s",
    "step",
    "print",
    "p n",
    "p KEYS",
    "p ARGV",
    "p nothing",
    "list",
    "l 0",
    "l 2 1",
    "l 100",
    "whole",
    "b",
    "b 7",
    "b 99",
    "b -3",
    "b x",
    "b 3 5",
    "b -5",
    "b",
    "next",
    "c",
    "t",
    "e n*2",
    "e local x = 1",
    "e error('boom')",
    "e {1,{a=1},nil,'x\\n'}",
    "e (",
    "r get foo",
    "r incr foo",
    "r foo",
    "r set x",
    "r get nokey",
    "r hgetall nokey",
    "r lpush foo 1",
    "r mget a b c d e f g h i j k l m",
    "m",
    "m 10",
    "r set big xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "r get big",
    "p t",
    "m 0",
    "p t",
    "unknown",
    "r",
    "c",
    "s",
    "p",
    "trace",
    "s",
    "s",
    "b 0",
    "c",
    "c",
];

#[test]
fn debugging_sessions_match_redis() {
    let mut pair = Pair::new();
    for mode in ["yes", "sync"] {
        pair.same(&["FLUSHALL"]);
        same_session(&pair, mode, SCRIPT, &["1", "foo", "5"], COMMANDS);
        // A forked session's writes go with its child; a synchronous
        // one's stay.
        pair.same(&["GET", "foo"]);
        pair.same(&["DBSIZE"]);
    }
    // Abort, an error in the script, a protocol error, a script that does
    // not compile, EVAL_RO, wrong numkeys.
    same_session(&pair, "sync", SCRIPT, &["1", "foo", "5"], &["s", "a"]);
    same_session(
        &pair,
        "yes",
        "return redis.call('incr', KEYS[1])",
        &["1", "foo"],
        &["s", "s"],
    );
    same_session(&pair, "yes", "local x = 1\nerror('no')\n", &["0"], &["c"]);
    same_session(&pair, "yes", "return 1 +", &["0"], &[]);
    same_session(
        &pair,
        "sync",
        "return redis.call('set', 'k', 'v')",
        &["0"],
        &["c"],
    );
    same_session(&pair, "yes", "return 1", &["2", "a"], &[]);
    same_session(
        &pair,
        "yes",
        "redis.debug(1)\nreturn 1",
        &["0"],
        &["foo", "s", "s"],
    );
    // An empty script has no source line: its first stop and `list` show
    // Redis's "<out of range source code line>" (ferrokv listed one empty
    // line; found by the command fuzzer).
    same_session(&pair, "sync", "", &["0"], &["l", "s"]);
}

#[test]
fn debugger_refusals_match_redis() {
    let mut pair = Pair::new();
    pair.same(&["SCRIPT", "DEBUG", "maybe"]);
    pair.same(&["SCRIPT", "DEBUG", "no"]);
    pair.same(&["SCRIPT", "DEBUG", "yes"]);
    pair.same(&["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"]);
    pair.same(&["EVALSHA", "abc", "0"]);
    pair.same(&["SCRIPT", "DEBUG", "no"]);
    // Not inside a pipeline: the reply of the PING before is pending.
    let piped = [encode(&[b"PING"]), encode(&[b"SCRIPT", b"DEBUG", b"yes"])].concat();
    pair.ours.send(&piped);
    pair.theirs.send(&piped);
    for _ in 0..2 {
        let (a, b) = (pair.ours.read_reply(), pair.theirs.read_reply());
        assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
    }
    // After SCRIPT DEBUG NO, EVAL runs normally.
    pair.same(&["EVAL", "return 7", "0"]);
}

#[test]
fn a_script_that_never_stops_is_stopped_by_the_debugger() {
    let pair = Pair::new();
    let (ours, theirs) = pair.ports();
    for port in [ours, theirs] {
        Raw::connect(port).cmd_str(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    }
    let script = "local i = 0\nwhile true do\n  i = i + 1\nend\n";
    let cmds = ["b 0", "c", "p", "a"];
    let run = |port| {
        let mut s = session(port, "sync", script, &["0"], &cmds);
        // The loop stops wherever the count hook finds it: line 2 or 3.
        for r in s.iter_mut() {
            *r = r
                .replace("Stopped at 2,", "Stopped at N,")
                .replace("Stopped at 3,", "Stopped at N,")
                .replace("-> 2   while true do", "-> N")
                .replace("-> 3     i = i + 1", "-> N");
            if r.contains("<value> i = ") {
                *r = "<value> i = ...".into();
            }
            if r.contains("script aborted") {
                *r = r
                    .replace("@user_script:2.", "@user_script:N.")
                    .replace("@user_script:3.", "@user_script:N.");
            }
        }
        s
    };
    let (a, b) = (run(ours), run(theirs));
    assert!(
        a.iter()
            .any(|r| r.contains("timeout reached, infinite loop?")),
        "{a:?}"
    );
    assert_eq!(a, b);
}

/// `redis-cli --ldb` as a user drives it: the transcript is the same
/// against both servers (colours stripped).
#[test]
fn redis_cli_ldb_transcript_matches_redis() {
    let pair = Pair::new();
    let (ours, theirs) = pair.ports();
    let dir = crate::support::unique_temp_path("ldb");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("limiter.lua");
    std::fs::write(
        &file,
        "local key = KEYS[1]\nlocal limit = tonumber(ARGV[1])\nlocal n = redis.call('incr', key)\nif n == 1 then\n  redis.call('expire', key, 60)\nend\nredis.debug('count', n)\nreturn n <= limit\n",
    )
    .expect("script");
    let input = "s\ns\np\ns\nr ttl rate:1\nc\n";
    let transcript = |port: u16, sync: bool| {
        let mut cmd = Command::new("redis-cli");
        cmd.args(["-p", &port.to_string()]);
        cmd.arg(if sync { "--ldb-sync-mode" } else { "--ldb" });
        cmd.args(["--eval", file.to_str().expect("path"), "rate:1", ",", "10"]);
        let text = output_with_input(&mut cmd, input.as_bytes());
        // Strip the ANSI colours.
        let mut plain = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                plain.push(c);
            }
        }
        plain
    };
    for sync in [false, true] {
        let a = transcript(ours, sync);
        let b = transcript(theirs, sync);
        assert!(a.contains("<debug> line 7: \"count\", 1"), "{a}");
        assert!(a.contains("<redis> ttl rate:1\n<reply> -1"), "{a}");
        assert_eq!(a, b);
    }
    // Only the synchronous session kept its INCR.
    for port in [ours, theirs] {
        assert_eq!(
            Raw::connect(port).cmd_str(&["GET", "rate:1"]),
            b"$1\r\n1\r\n"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
