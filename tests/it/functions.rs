//! Redis 7.0 functions (`functions.tcl` unit): FUNCTION LOAD and friends,
//! FCALL/FCALL_RO, DUMP/RESTORE across ferrokv and redis-server.

use std::time::Duration;

use crate::support::*;

const LIB1: &str = "#!lua name=lib1\nredis.register_function{function_name='f2', callback=function(keys, args) return redis.call('set', keys[1], args[1]) end, flags={'no-writes'}, description='desc'}";
const LIB3: &str = "#!lua name=lib3\nredis.register_function('f1', function(keys, args) return {keys[1], args[1], redis.call('ping')} end)";

#[test]
fn function_load_errors_match_redis() {
    let mut p = Pair::new();
    for code in [
        "return 1",
        "#!lua\nreturn 1",
        "#!lua name=\nreturn 1",
        "#!lua name=a-b\nreturn 1",
        "#!lua name=x foo=bar\nreturn 1",
        "#!js name=x\nreturn 1",
        "#!lua name=x\nreturn 1",
        "#!lua name=x\nreturn +",
        "#!lua name=x\nerror('boom')",
        "#!lua name=x\nredis.register_function()",
        "#!lua name=x\nredis.register_function('f')",
        "#!lua name=x\nredis.register_function('f', 1)",
        "#!lua name=x\nredis.register_function('f-g', function() end)",
        "#!lua name=x\nredis.register_function('f', function() end) redis.register_function('f', function() end)",
        "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags={'bogus'}}",
        "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags='no-writes'}",
        "#!lua name=x\nredis.register_function{function_name='f', callback=function() end, foo=1}",
        "#!lua name=x\nredis.register_function{callback=function() end}",
        "#!lua name=x\nredis.call('ping')",
        "#!lua name=x\nreturn redis.setresp(3)",
        "#!lua name=x\nredis.register_function('f', function() end, 3)",
        "#!lua name=x\nlocal a = string",
        "#!lua name=x\nwhile true do end",
    ] {
        p.same(&["FUNCTION", "LOAD", code]);
    }
    p.same(&["FUNCTION", "LOAD", "#!lua name=ok\nlocal v = redis.REDIS_VERSION_NUM redis.log(redis.LOG_NOTICE, 'loading') redis.register_function('ok_fn', function() return v end)"]);
    p.same(&["FCALL", "ok_fn", "0"]);
}

#[test]
fn fcall_and_function_subcommands_match_redis() {
    let mut p = Pair::new();
    p.same(&["FUNCTION", "LOAD", LIB1]);
    p.same(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=lib2\nredis.register_function('f2', function() end)",
    ]);
    p.same(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=lib1\nredis.register_function('g', function() end)",
    ]);
    p.same(&["FUNCTION", "LOAD", LIB3]);
    p.same(&["FCALL", "f1", "1", "k", "a"]);
    p.same(&["FCALL", "f2", "1", "k", "a"]);
    p.same(&["FCALL_RO", "f1", "1", "k", "a"]);
    p.same(&["FCALL_RO", "f2", "1", "k", "a"]);
    p.same(&["FCALL", "nope", "0"]);
    p.same(&["FCALL", "f1", "5", "k"]);
    p.same(&["FCALL", "f1", "-1"]);
    p.same(&["FUNCTION", "LIST", "LIBRARYNAME", "lib1"]);
    p.same(&["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "lib3"]);
    p.same(&["FUNCTION", "LIST", "LIBRARYNAME", "nomatch"]);
    p.same(&["FUNCTION", "LIST", "bogus"]);
    p.same(&["FUNCTION", "LIST", "LIBRARYNAME"]);
    p.same(&["FUNCTION", "LIST", "WITHCODE", "withcode"]);
    p.same(&["FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b"]);
    p.same(&["FUNCTION", "LOAD", "REPLACE", "a", "b"]);
    p.same(&["FUNCTION", "LOAD", "foo", "a"]);
    p.same(&["FUNCTION", "STATS"]);
    p.same(&["FUNCTION", "DELETE", "nope"]);
    p.same(&["FUNCTION", "KILL"]);
    p.same(&["FUNCTION", "HELP"]);
    p.same(&[
        "FUNCTION",
        "LOAD",
        "REPLACE",
        "#!lua name=lib3\nredis.register_function('f1', function(keys, args) error('inner') end)",
    ]);
    p.same(&["FCALL", "f1", "0"]);
    p.same(&["FUNCTION", "DELETE", "lib3"]);
    p.same(&["FCALL", "f1", "0"]);
    p.same(&["FUNCTION", "FLUSH", "bad"]);
    p.same(&["FUNCTION", "RESTORE", "abc"]);
    // SCRIPT FLUSH leaves functions alone.
    p.same(&["SCRIPT", "FLUSH"]);
    p.same(&["FCALL_RO", "f2", "1", "k", "a"]);
    p.same(&["FUNCTION", "FLUSH"]);
    p.same(&["FUNCTION", "STATS"]);
    p.same(&["FCALL", "f2", "0"]);
}

fn bulk_payload(reply: &[u8]) -> Vec<u8> {
    let nl = reply.iter().position(|&b| b == b'\n').expect("header");
    reply[nl + 1..reply.len() - 2].to_vec()
}

#[test]
fn function_dump_restores_both_ways() {
    let mut p = Pair::new();
    // A library long enough for Redis to LZF-compress it in DUMP.
    let long = format!(
        "#!lua name=big\n-- {}\nredis.register_function('big', function() return 'big' end)",
        "padding ".repeat(40)
    );
    p.same(&["FUNCTION", "LOAD", &long]);
    p.same(&["FUNCTION", "LOAD", LIB3]);
    let ours = bulk_payload(&p.ours.cmd_str(&["FUNCTION", "DUMP"]));
    let theirs = bulk_payload(&p.theirs.cmd_str(&["FUNCTION", "DUMP"]));
    p.same(&["FUNCTION", "FLUSH"]);
    // Each side restores the other's payload.
    assert_eq!(
        p.ours.cmd(&[b"FUNCTION", b"RESTORE", &theirs]),
        b"+OK\r\n".to_vec()
    );
    assert_eq!(
        p.theirs.cmd(&[b"FUNCTION", b"RESTORE", &ours]),
        b"+OK\r\n".to_vec()
    );
    p.same(&["FCALL", "big", "0"]);
    p.same(&["FCALL", "f1", "1", "k", "a"]);
    p.same(&["FUNCTION", "LIST", "LIBRARYNAME", "big"]);
    p.same(&["FUNCTION", "DELETE", "big"]);
    // Redis reports the first colliding library in its dict order, so
    // only one may collide here.
    p.same_bytes(&[b"FUNCTION", b"RESTORE", &ours]);
    p.same(&["FCALL", "big", "0"]);
    p.same_bytes(&[b"FUNCTION", b"RESTORE", &ours, b"BOGUS"]);
    p.same_bytes(&[b"FUNCTION", b"RESTORE", &ours, b"REPLACE"]);
    p.same_bytes(&[b"FUNCTION", b"RESTORE", &ours, b"FLUSH"]);
    let mut corrupt = ours.clone();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 1;
    p.same_bytes(&[b"FUNCTION", b"RESTORE", &corrupt]);
}

#[test]
fn runaway_function_gets_busy_then_function_kill() {
    let server = start_with(|c| c.busy_reply_threshold = 100);
    let mut raw = server.raw();
    assert_eq!(
        raw.cmd_str(&[
            "FUNCTION",
            "LOAD",
            "#!lua name=spin\nredis.register_function('spin', function() while true do end end)"
        ]),
        b"$4\r\nspin\r\n"
    );
    raw.send(&encode(&[b"FCALL", b"spin", b"0"]));
    let mut other = server.raw();
    let mut last = Vec::new();
    assert!(wait_until(std::time::Duration::from_secs(5), || {
        last = other.cmd_str(&["PING"]);
        last.starts_with(b"-BUSY")
    }));
    assert_eq!(
        last,
        b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n"
    );
    assert!(other.cmd_str(&["SCRIPT", "KILL"]).starts_with(b"-BUSY"));
    let stats = String::from_utf8_lossy(&other.cmd_str(&["FUNCTION", "STATS"])).into_owned();
    assert!(
        stats.starts_with("*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*3\r\n$5\r\nFCALL\r\n$4\r\nspin\r\n$1\r\n0\r\n$11\r\nduration_ms\r\n:"),
        "{stats}"
    );
    assert!(
        stats.ends_with("$15\r\nlibraries_count\r\n:1\r\n$15\r\nfunctions_count\r\n:1\r\n"),
        "{stats}"
    );
    assert_eq!(
        other.cmd_str(&["NOSUCH"]),
        b"-ERR unknown command 'NOSUCH', with args beginning with: \r\n"
    );
    assert_eq!(other.cmd_str(&["FUNCTION", "KILL"]), b"+OK\r\n");
    let reply = raw.read_reply();
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n"
    );
    assert_eq!(other.cmd_str(&["PING"]), b"+PONG\r\n");
}

/// The corners of FUNCTION and FCALL found by outside suites: function
/// names in any case, FCALL's own numkeys texts (after the lookup), the
/// too-many-arguments error of FLUSH and RESTORE, and the shebang split as
/// Redis splits it.
#[test]
fn function_corners_match_redis() {
    let mut p = Pair::new();
    for code in [
        "#! name=x\nreturn 1",
        "#!lua name=x",
        "#!lua name=a name=b\nreturn 1",
        "#!lua NAME=\"quoted\"\nredis.register_function('qf', function() return 7 end)",
        "#!lua name=b@d foo\nreturn 1",
        "#!nosuch name=b@d\nreturn 1",
        "#!lua name=a \"unbalanced\nreturn 1",
        "#!lua name=MyLib\nredis.register_function('MyFunc', function() return 1 end)",
        "#!lua name=lib3\nredis.register_function('myfunc', function() return 1 end)",
    ] {
        p.same(&["FUNCTION", "LOAD", code]);
    }
    p.script(&[
        "FCALL myfunc 0",
        "FCALL MYFUNC 0",
        "FCALL_RO MyFunc 0",
        "FCALL QF 0",
        "FCALL MyFunc x",
        "FCALL nosuch x",
        "FCALL MyFunc 5",
        "FCALL MyFunc -1",
        "FUNCTION RESTORE a b c",
        "FUNCTION FLUSH a b",
        "FUNCTION FLUSH foo",
        "FUNCTION DELETE mylib",
        "FUNCTION DELETE MyLib",
        "FCALL myfunc 0",
    ]);
}

/// A library registering 10,000 functions (more than Lua 5.1's reference
/// stack holds) loads, its last function runs, FUNCTION FLUSH drops them.
#[test]
fn ten_thousand_functions_register_and_run() {
    let server = crate::support::start();
    let mut c = server.raw();
    let mut code = String::from("#!lua name=many\n");
    for j in 0..10_000 {
        code.push_str(&format!(
            "redis.register_function('f{j}', function() return {j} end)\n"
        ));
    }
    assert_eq!(c.cmd_str(&["FUNCTION", "LOAD", &code]), b"$4\r\nmany\r\n");
    assert_eq!(c.cmd_str(&["FCALL", "f9999", "0"]), b":9999\r\n");
    assert_eq!(c.cmd_str(&["FCALL", "f0", "0"]), b":0\r\n");
    assert_eq!(c.cmd_str(&["FUNCTION", "FLUSH"]), b"+OK\r\n");
    assert!(c
        .cmd_str(&["FCALL", "f0", "0"])
        .starts_with(b"-ERR Function not found"));
}

/// Function libraries are saved with the keys (RDB_OPCODE_FUNCTION2): a
/// DEBUG RELOAD, a restart, redis-server reading ferrokv's file and an
/// AOF rewrite without the RDB preamble all keep them, as in Redis.
#[test]
fn function_libraries_persist_with_the_data_set_as_redis() {
    let lib1 = "#!lua name=lib1\nredis.register_function('func1', function() return 123 end)";
    let lib2 = "#!lua name=lib2\nredis.register_function('func2', function() return 456 end)";
    let ours = unique_temp_path("ferrokv-fn-reload");
    std::fs::create_dir_all(&ours).expect("dir");
    let ours_dir = ours.display().to_string();
    let mut p = Pair::new_with(
        |c| {
            c.dir = ours_dir;
            if let Some((param, _)) = ferrokv::config::params::lookup(b"enable-debug-command") {
                let _ = c.set_args(param, &[b"yes"], false);
            }
        },
        &["--enable-debug-command", "yes"],
    );
    p.same(&["FUNCTION", "LOAD", lib1]);
    p.same(&["SET", "k", "v"]);
    p.same(&["DEBUG", "RELOAD"]);
    p.same(&["FUNCTION", "LIST"]);
    p.same(&["FCALL", "func1", "0"]);
    // Loaded after the save: a reload without saving drops it.
    p.same(&["FUNCTION", "LOAD", lib2]);
    p.same(&["DEBUG", "RELOAD", "NOSAVE"]);
    p.same(&["FUNCTION", "LIST"]);
    p.same(&["FCALL", "func2", "0"]);

    // A restart of the binary, then redis-server reading the same file.
    let dir = unique_temp_path("ferrokv-fn-persist");
    std::fs::create_dir_all(&dir).expect("dir");
    let d = dir.display().to_string();
    let mut f = spawn_ferrokv_process_with(&["--dir", &d]);
    let mut c = Raw::connect(f.port);
    assert_eq!(c.cmd_str(&["FUNCTION", "LOAD", lib1]), b"$4\r\nlib1\r\n");
    assert_eq!(c.cmd_str(&["SAVE"]), b"+OK\r\n");
    drop(c);
    drop(f);
    f = spawn_ferrokv_process_with(&["--dir", &d]);
    let mut c = Raw::connect(f.port);
    assert_eq!(c.cmd_str(&["FCALL", "func1", "0"]), b":123\r\n");
    let r = spawn_redis_with(&["--dir", &d]);
    let mut rc = Raw::connect(r.port);
    assert_eq!(rc.cmd_str(&["FCALL", "func1", "0"]), b":123\r\n");
    // The command form of an AOF base (no RDB preamble) loads them first.
    let aof_dir = unique_temp_path("ferrokv-fn-aof");
    std::fs::create_dir_all(&aof_dir).expect("dir");
    let ad = aof_dir.display().to_string();
    let args = [
        "--dir",
        &ad,
        "--appendonly",
        "yes",
        "--aof-use-rdb-preamble",
        "no",
    ];
    let f = spawn_ferrokv_process_with(&args);
    let mut c = Raw::connect(f.port);
    assert_eq!(c.cmd_str(&["FUNCTION", "LOAD", lib1]), b"$4\r\nlib1\r\n");
    assert!(c.cmd_str(&["BGREWRITEAOF"]).starts_with(b"+"));
    assert!(wait_until(Duration::from_secs(10), || {
        String::from_utf8_lossy(&c.cmd_str(&["INFO", "persistence"]))
            .contains("aof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0")
    }));
    let base = std::fs::read_dir(aof_dir.join("appendonlydir"))
        .expect("aof dir")
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().contains(".base.aof"))
        .map(|e| std::fs::read(e.path()).expect("base"))
        .expect("a base file");
    assert!(base.starts_with(b"*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n"));
    drop(c);
    drop(f);
    let f = spawn_ferrokv_process_with(&args);
    let mut c = Raw::connect(f.port);
    assert_eq!(c.cmd_str(&["FCALL", "func1", "0"]), b":123\r\n");
    let _ = std::fs::remove_dir_all(&aof_dir);
    let _ = std::fs::remove_dir_all(&ours);
    let _ = std::fs::remove_dir_all(&dir);
}

/// DEBUG RELOAD NOFLUSH over a data set that holds the file's keys and
/// libraries fails; MERGE lets the file's replace them and keeps the rest
/// (Redis's RDBFLAGS_ALLOW_DUP), side by side with redis-server.
#[test]
fn debug_reload_noflush_and_merge_as_redis() {
    let ours = unique_temp_path("ferrokv-fn-merge");
    std::fs::create_dir_all(&ours).expect("dir");
    let ours_dir = ours.display().to_string();
    let mut p = Pair::new_with(
        |c| {
            c.dir = ours_dir;
            if let Some((param, _)) = ferrokv::config::params::lookup(b"enable-debug-command") {
                let _ = c.set_args(param, &[b"yes"], false);
            }
        },
        &["--enable-debug-command", "yes"],
    );
    let test1 = "#!lua name=test1\nredis.register_function('test1', function() return 'hello' end)";
    let test2 = "#!lua name=test2\nredis.register_function('test2', function() return 'hello' end)";
    p.same(&["SET", "x", "1"]);
    p.same(&["FUNCTION", "LOAD", test1]);
    p.same(&["DEBUG", "RELOAD"]);
    p.same(&["SET", "x", "2"]);
    p.same(&["SET", "y", "3"]);
    p.same(&["FUNCTION", "LOAD", test2]);
    let failed = p.same(&["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH"]);
    assert!(failed.starts_with(b"-ERR Error trying to load the RDB dump"));
    p.same(&["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"]);
    p.same(&["GET", "x"]);
    p.same(&["GET", "y"]);
    p.same(&["FCALL", "test1", "0"]);
    p.same(&["FCALL", "test2", "0"]);
    // FUNCTION LIST's order is Redis's dict order; the counts compare.
    p.same(&["FUNCTION", "STATS"]);
    let _ = std::fs::remove_dir_all(&ours);
}

/// FUNCTION LOAD, DELETE and FLUSH change the data set as Redis counts
/// it: they reach a redis-server replica and a ferrokv replica, and the
/// AOF, which a restart replays.
#[test]
fn function_changes_reach_replicas_and_the_aof() {
    let lib = "#!lua name=test\nredis.register_function{function_name='test', callback=function() return 'hello' end, flags={'no-writes'}}";
    let dir = unique_temp_path("ferrokv-fn-aof-repl");
    std::fs::create_dir_all(&dir).expect("dir");
    let d = dir.display().to_string();
    let args = ["--dir", d.as_str(), "--appendonly", "yes"];
    let master = spawn_ferrokv_process_with(&args);
    let port = master.port.to_string();
    let theirs = spawn_redis_with(&["--replicaof", "127.0.0.1", &port]);
    let ours = spawn_ferrokv_process_with(&["--replicaof", "127.0.0.1", &port]);
    let mut m = Raw::connect(master.port);
    let mut replicas = [Raw::connect(theirs.port), Raw::connect(ours.port)];
    for r in &mut replicas {
        assert!(wait_until(Duration::from_secs(20), || {
            String::from_utf8_lossy(&r.cmd_str(&["INFO", "replication"]))
                .contains("master_link_status:up")
        }));
    }
    assert_eq!(m.cmd_str(&["FUNCTION", "LOAD", lib]), b"$4\r\ntest\r\n");
    for r in &mut replicas {
        assert!(wait_until(Duration::from_secs(10), || r
            .cmd_str(&["FCALL", "test", "0"])
            == b"$5\r\nhello\r\n"));
    }
    assert_eq!(m.cmd_str(&["FUNCTION", "DELETE", "test"]), b"+OK\r\n");
    for r in &mut replicas {
        assert!(wait_until(Duration::from_secs(10), || r
            .cmd_str(&["FCALL", "test", "0"])
            .starts_with(b"-ERR Function not found")));
    }
    // The AOF has the load again; a restart replays it.
    assert_eq!(m.cmd_str(&["FUNCTION", "LOAD", lib]), b"$4\r\ntest\r\n");
    drop(m);
    drop(master);
    let master = spawn_ferrokv_process_with(&args);
    let mut m = Raw::connect(master.port);
    assert_eq!(m.cmd_str(&["FCALL", "test", "0"]), b"$5\r\nhello\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}
