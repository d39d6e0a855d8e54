//! The encoding directives against redis-server 7.0.15 started with the
//! same ones: random command sequences under random thresholds
//! (`hash-max-listpack-*`, `zset-max-listpack-*`, `set-max-intset-entries`,
//! `list-max-listpack-size`, `list-compress-depth`), set at start and by
//! CONFIG SET, with every reply, OBJECT ENCODING and (for the compact
//! encodings) DUMP compared after each step, and again after DEBUG RELOAD.

use crate::support::{
    spawn_ferrokv_process_with, spawn_redis_with, unique_temp_path, FerrokvProcess, Raw,
};

/// ferrokv in a directory of its own (DEBUG RELOAD writes dump.rdb there).
fn spawn_ours(args: &[&str]) -> (FerrokvProcess, std::path::PathBuf) {
    let dir = unique_temp_path("ferrokv-encodings");
    std::fs::create_dir_all(&dir).expect("test dir");
    let dir_arg = dir.display().to_string();
    let mut all = vec!["--dir", &dir_arg];
    all.extend_from_slice(args);
    (spawn_ferrokv_process_with(&all), dir)
}

/// A small deterministic generator (tests repeat exactly).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// Both servers, one connection each.
struct Both {
    ours: Raw,
    theirs: Raw,
}

impl Both {
    fn same(&mut self, args: &[&str]) -> Vec<u8> {
        let a = self.ours.cmd_str(args);
        let b = self.theirs.cmd_str(args);
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "reply to {args:?}"
        );
        a
    }

    /// OBJECT ENCODING agrees, and so does DUMP where the encoding lays
    /// out its elements in a defined order.
    fn same_encoding(&mut self, key: &str) {
        let enc = self.same(&["OBJECT", "ENCODING", key]);
        let text = String::from_utf8_lossy(&enc);
        if text.contains("listpack") || text.contains("intset") {
            self.same(&["DUMP", key]);
        }
    }
}

fn random_run(seed: u64, args: &[String]) {
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--enable-debug-command", "yes"]);
    let (ours_srv, _dir) = spawn_ours(&args);
    let theirs_srv = spawn_redis_with(&args);
    let mut both = Both {
        ours: Raw::connect(ours_srv.port),
        theirs: Raw::connect(theirs_srv.port),
    };
    let mut r = Lcg(seed);
    for step in 0..600 {
        let member = if r.below(3) == 0 {
            "x".repeat(r.below(80) as usize)
        } else {
            r.below(40).to_string()
        };
        let value = "v".repeat(r.below(70) as usize);
        let score = (r.below(100) as i64 - 50).to_string();
        let (key, cmd): (&str, Vec<&str>) = match r.below(12) {
            0 | 1 => ("h", vec!["HSET", "h", &member, &value]),
            2 => ("h", vec!["HDEL", "h", &member]),
            3 | 4 => ("z", vec!["ZADD", "z", &score, &member]),
            5 => ("z", vec!["ZREM", "z", &member]),
            6 => ("zs", vec!["ZUNIONSTORE", "zs", "1", "z"]),
            7 | 8 => ("s", vec!["SADD", "s", &member]),
            9 => ("s", vec!["SREM", "s", &member]),
            10 => ("l", vec!["RPUSH", "l", &member, &value]),
            _ => ("l", vec!["LPUSH", "l", &value]),
        };
        both.same(&cmd);
        both.same_encoding(key);
        if step % 150 == 149 {
            both.same(&["DEBUG", "RELOAD"]);
            for k in ["h", "z", "zs", "s", "l"] {
                both.same_encoding(k);
            }
        }
    }
    // (A table's order is its own: compare what is order-free.)
    both.same(&["HLEN", "h"]);
    for f in 0..40 {
        both.same(&["HGET", "h", &f.to_string()]);
    }
    both.same(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]);
    both.same(&["SORT", "s", "ALPHA"]);
    both.same(&["LRANGE", "l", "0", "-1"]);
}

#[test]
fn random_commands_under_random_thresholds_match_redis() {
    let mut r = Lcg(7);
    for seed in 0..4u64 {
        let args: Vec<String> = [
            ("--hash-max-listpack-entries", r.below(20)),
            ("--hash-max-listpack-value", r.below(70)),
            ("--zset-max-listpack-entries", r.below(20)),
            ("--zset-max-listpack-value", r.below(70)),
            ("--set-max-intset-entries", r.below(20)),
        ]
        .iter()
        .flat_map(|(k, v)| [k.to_string(), v.to_string()])
        .collect();
        random_run(seed, &args);
    }
}

/// The thresholds change at run time with CONFIG SET (with the `ziplist`
/// aliases) and apply to the next conversion, on both servers alike.
#[test]
fn config_set_thresholds_apply_to_the_next_write() {
    let (ours_srv, _dir) = spawn_ours(&[]);
    let theirs_srv = spawn_redis_with(&[]);
    let mut both = Both {
        ours: Raw::connect(ours_srv.port),
        theirs: Raw::connect(theirs_srv.port),
    };
    both.same(&["HSET", "h", "a", "1", "b", "2"]);
    both.same(&["CONFIG", "SET", "hash-max-ziplist-entries", "2"]);
    both.same(&["CONFIG", "GET", "hash-max-listpack-entries"]);
    both.same_encoding("h");
    both.same(&["HSET", "h", "c", "3"]);
    both.same_encoding("h");
    both.same(&["CONFIG", "SET", "zset-max-ziplist-value", "3"]);
    both.same(&["ZADD", "z", "1", "abc"]);
    both.same_encoding("z");
    both.same(&["ZADD", "z", "1", "abcd"]);
    both.same_encoding("z");
    both.same(&["CONFIG", "SET", "set-max-intset-entries", "1"]);
    both.same(&["SADD", "s", "1"]);
    both.same_encoding("s");
    both.same(&["SADD", "s", "2"]);
    both.same_encoding("s");
    // Redis's range checks and errors.
    both.same(&["CONFIG", "SET", "hash-max-listpack-entries", "-1"]);
    both.same(&["CONFIG", "SET", "list-max-listpack-size", "x"]);
}

/// Lists with compressed interior nodes and small node sizes answer every
/// list command as redis-server does.
#[test]
fn compressed_lists_match_redis() {
    for (fill, depth) in [("1", "1"), ("4", "2"), ("-1", "1"), ("-2", "3")] {
        let args = [
            "--list-max-listpack-size",
            fill,
            "--list-compress-depth",
            depth,
            "--enable-debug-command",
            "yes",
        ];
        let (ours_srv, _dir) = spawn_ours(&args);
        let theirs_srv = spawn_redis_with(&args);
        let mut both = Both {
            ours: Raw::connect(ours_srv.port),
            theirs: Raw::connect(theirs_srv.port),
        };
        let mut r = Lcg(fill.len() as u64 * 31 + depth.len() as u64);
        for i in 0..400 {
            let v = format!("{}:{}", r.below(30), "abc".repeat(r.below(40) as usize));
            let idx = (r.below(300) as i64 - 150).to_string();
            let n = i.to_string();
            let cmd: Vec<&str> = match r.below(10) {
                0..=2 => vec!["RPUSH", "l", &v],
                3 => vec!["LPUSH", "l", &v],
                4 => vec!["LINDEX", "l", &idx],
                5 => vec!["LSET", "l", &idx, &n],
                6 => vec!["LINSERT", "l", "BEFORE", &v, &n],
                7 => vec!["LREM", "l", "1", &v],
                8 => vec!["LRANGE", "l", &idx, "-1"],
                _ => vec!["LPOS", "l", &v, "COUNT", "0"],
            };
            both.same(&cmd);
        }
        both.same(&["LRANGE", "l", "0", "-1"]);
        both.same(&["OBJECT", "ENCODING", "l"]);
        both.same(&["DEBUG", "RELOAD"]);
        both.same(&["LRANGE", "l", "0", "-1"]);
    }
}

/// A list made by RPUSH is saved in the nodes Redis's quicklist would
/// have, under every `list-max-listpack-size`, with elements that encode
/// as integers (whose estimate differs from their listpack size), long
/// strings, and PLAIN nodes past DEBUG QUICKLIST-PACKED-THRESHOLD: DUMP
/// reads byte for byte as Redis's.
#[test]
fn rpush_built_lists_dump_in_redis_nodes() {
    let args = ["--enable-debug-command", "yes"];
    let (ours_srv, _dir) = spawn_ours(&args);
    let theirs_srv = spawn_redis_with(&args);
    let mut both = Both {
        ours: Raw::connect(ours_srv.port),
        theirs: Raw::connect(theirs_srv.port),
    };
    let lists: Vec<Vec<String>> = vec![
        (1000..4000).map(|i| i.to_string()).collect(),
        (0..3000).map(|i| (-i * 1000).to_string()).collect(),
        (0..2000)
            .map(|i| {
                if i % 3 == 0 {
                    "abc".repeat(i % 90)
                } else {
                    i.to_string()
                }
            })
            .collect(),
        vec!["x".repeat(200); 100],
        vec![String::new(); 20000],
    ];
    for fill in ["-2", "-1", "-3", "-5", "0", "1", "3", "100"] {
        both.same(&["CONFIG", "SET", "list-max-listpack-size", fill]);
        for items in &lists {
            both.same(&["DEL", "l"]);
            let mut cmd = vec!["RPUSH", "l"];
            cmd.extend(items.iter().map(String::as_str));
            both.same(&cmd);
            both.same(&["DUMP", "l"]);
        }
    }
    both.same(&["CONFIG", "SET", "list-max-listpack-size", "-2"]);
    both.same(&["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "100"]);
    let (a, c, d) = ("a".repeat(150), "c".repeat(99), "d".repeat(100));
    both.same(&["RPUSH", "p", &a, "b", &c, &d, "e"]);
    both.same(&["DUMP", "p"]);
}
