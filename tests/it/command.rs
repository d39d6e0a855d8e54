//! COMMAND and its subcommands against redis-server: for every command
//! ferrokv implements, INFO and DOCS must match byte for byte.

use crate::support::*;

/// Splits a flat RESP array of bulk strings into its items.
fn bulk_items(reply: &[u8]) -> Vec<String> {
    let s = String::from_utf8_lossy(reply);
    let mut lines = s.split("\r\n");
    let header = lines.next().expect("header");
    assert!(header.starts_with('*'), "not an array: {s}");
    let mut out = Vec::new();
    while let Some(l) = lines.next() {
        if l.starts_with('$') {
            out.push(lines.next().expect("bulk body").to_string());
        }
    }
    out
}

/// ferrokv's own commands, which Redis does not have (tested in
/// `throttle.rs` and `clock.rs`).
const OWN: &[&str] = &["cl.throttle", "clock"];

/// Top-level Redis commands ferrokv implements that are not containers
/// (whose info/docs list only the implemented subcommands).
fn plain_commands(p: &mut Pair) -> Vec<String> {
    let names = bulk_items(&p.ours.cmd_str(&["COMMAND", "LIST"]));
    names
        .iter()
        .filter(|n| !n.contains('|') && !names.iter().any(|m| m.starts_with(&format!("{n}|"))))
        .filter(|n| !OWN.contains(&n.as_str()))
        .cloned()
        .collect()
}

#[test]
fn info_and_docs_match_for_every_command() {
    let mut p = Pair::new();
    let plain = plain_commands(&mut p);
    assert!(plain.len() > 5, "{plain:?}");
    let subs: Vec<String> = bulk_items(&p.ours.cmd_str(&["COMMAND", "LIST"]))
        .into_iter()
        .filter(|n| n.contains('|'))
        .collect();
    for resp3 in [false, true] {
        if resp3 {
            p.both(&["HELLO", "3"]);
        }
        for name in plain.iter().chain(&subs) {
            p.same(&["COMMAND", "INFO", name]);
            p.same(&["COMMAND", "DOCS", name]);
        }
        p.same(&[
            "COMMAND",
            "INFO",
            "get",
            "set",
            "nosuch",
            "GET",
            "get|x",
            "client|list|x",
        ]);
        p.same(&["COMMAND", "DOCS", "get", "nosuch", "client|list", "set"]);
        p.same(&["COMMAND", "DOCS", "nosuch"]);
    }
}

#[test]
fn count_and_list_are_consistent() {
    let mut p = Pair::new();
    let count = p.ours.cmd_str(&["COMMAND", "COUNT"]);
    let n: usize = String::from_utf8_lossy(&count)[1..]
        .trim()
        .parse()
        .expect("count");
    let all = p.ours.cmd_str(&["COMMAND"]);
    assert!(all.starts_with(format!("*{n}\r\n").as_bytes()));
    let info = p.ours.cmd_str(&["COMMAND", "INFO"]);
    assert_eq!(all, info);
    let docs = p.ours.cmd_str(&["COMMAND", "DOCS"]);
    assert!(docs.starts_with(format!("*{}\r\n", 2 * n).as_bytes()));
    let all_ours = bulk_items(&p.ours.cmd_str(&["COMMAND", "LIST"]));
    let ours = all_ours.clone();
    let theirs = bulk_items(&p.theirs.cmd_str(&["COMMAND", "LIST"]));
    assert_eq!(ours.iter().filter(|c| !c.contains('|')).count(), n);
    let extra: Vec<&String> = ours.iter().filter(|c| !theirs.contains(c)).collect();
    assert_eq!(extra, OWN, "commands Redis does not have");
    for (kind, arg) in [
        ("PATTERN", "client*"),
        ("PATTERN", "G?T"),
        ("ACLCAT", "connection"),
        ("ACLCAT", "STRING"),
    ] {
        let args = ["COMMAND", "LIST", "FILTERBY", kind, arg];
        let ours = bulk_items(&p.ours.cmd_str(&args));
        let theirs = bulk_items(&p.theirs.cmd_str(&args));
        assert!(!ours.is_empty(), "{args:?}");
        for c in ours.iter().filter(|c| !OWN.contains(&c.as_str())) {
            assert!(theirs.contains(c), "{c} not in Redis's {args:?}");
        }
        // Whatever Redis lists that we implement, we list too.
        for c in theirs.iter().filter(|c| all_ours.contains(c)) {
            assert!(ours.contains(c), "{c} missing from {args:?}");
        }
    }
    p.script(&[
        "COMMAND LIST FILTERBY MODULE x",
        "COMMAND LIST FILTERBY ACLCAT nosuch",
        "COMMAND LIST FILTERBY PATTERN nosuch*",
        "COMMAND LIST FILTERBY foo x",
        "COMMAND LIST foo",
        "COMMAND LIST FILTERBY PATTERN a b",
        "COMMAND HELP",
        "COMMAND NOSUCH",
        "COMMAND COUNT x",
    ]);
}

#[test]
fn getkeys_and_flags() {
    let mut p = Pair::new();
    p.script(&[
        "COMMAND GETKEYS get k",
        "COMMAND GETKEYS set k v",
        "COMMAND GETKEYS SET k v EX 10 GET",
        "COMMAND GETKEYSANDFLAGS set k v",
        "COMMAND GETKEYSANDFLAGS set k v get",
        "COMMAND GETKEYSANDFLAGS get k",
        "COMMAND GETKEYS nosuch a",
        "COMMAND GETKEYS get",
        "COMMAND GETKEYS get a b",
        "COMMAND GETKEYS ping x",
        "COMMAND GETKEYS client list",
        "COMMAND GETKEYS client nosuch",
        "COMMAND GETKEYS client",
    ]);
    for resp3 in [false, true] {
        if resp3 {
            p.both(&["HELLO", "3"]);
        }
        p.same(&["COMMAND", "GETKEYSANDFLAGS", "set", "k", "v", "GET"]);
        p.same(&["COMMAND", "GETKEYSANDFLAGS", "get", "k"]);
    }
    // Multi-key commands, when implemented, follow their key specs.
    let names = bulk_items(&p.ours.cmd_str(&["COMMAND", "LIST"]));
    let cases: &[&[&str]] = &[
        &["mget", "a", "b", "c"],
        &["mset", "a", "1", "b", "2"],
        &["del", "a", "b"],
        &["rename", "a", "b"],
        &["lmove", "a", "b", "left", "right"],
        &["eval", "return 1", "2", "a", "b", "x"],
        &["eval", "return 1", "5", "a"],
        &["blpop", "a", "b", "0"],
        &["zunionstore", "d", "2", "a", "b"],
        &["bitfield", "k", "get", "u8", "0"],
        &["bitfield", "k", "set", "u8", "0", "1"],
        &["evalsha", "x", "1", "a"],
        &["fcall", "f", "2", "a", "b", "x"],
        &["fcall_ro", "f", "0"],
        &["xread", "count", "2", "streams", "a", "b", "0", "0"],
        &["lmpop", "2", "a", "b", "left"],
        &["blmpop", "0", "2", "a", "b", "left", "count", "2"],
        &["zmpop", "1", "a", "min"],
        &["bzmpop", "0", "2", "a", "b", "max"],
        &["sintercard", "2", "a", "b", "limit", "1"],
        &["zintercard", "2", "a", "b"],
        &["zunion", "2", "a", "b", "withscores"],
        &["zdiffstore", "d", "2", "a", "b"],
        &["sort", "a", "by", "w_*", "store", "d"],
        &["sort_ro", "a", "get", "#"],
    ];
    for c in cases {
        if names.iter().any(|n| n == c[0]) {
            let mut args = vec!["COMMAND", "GETKEYSANDFLAGS"];
            args.extend_from_slice(c);
            p.same(&args);
        }
    }
}

/// COMMAND GETKEYS and GETKEYSANDFLAGS for SORT and SORT_RO find the keys
/// as Redis's sortGetKeys does: the key, and the last STORE target,
/// skipping LIMIT, GET and BY arguments.
#[test]
fn sort_keys_match_redis() {
    let mut p = Pair::new();
    for line in [
        "sort abc store def",
        "sort_ro abc get # get x_*",
        "sort abc by nosort get x store dst",
        "sort abc store a store b",
        "sort abc limit 0 store get store x",
        "sort abc store",
        "sort_ro abc store def",
        "sort abc limit 0 10 by w_* get # get h_*->f store out",
    ] {
        for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
            let mut args = vec!["COMMAND", sub];
            args.extend(line.split(' '));
            p.same(&args);
        }
    }
}

/// An unknown subcommand, or ACL CAT's unknown category, longer than the
/// 128 bytes Redis quotes, cut inside a UTF-8 character: the error as
/// Redis's (its cut byte shown as U+FFFD), and the connection still served.
/// (Once a panic: the text was cut, not the bytes.)
#[test]
fn long_non_ascii_subcommands_are_cut_as_redis_cuts_them() {
    let mut p = Pair::new();
    let long = format!("a{}", "é".repeat(100));
    for cmd in ["XGROUP", "XINFO", "CONFIG", "OBJECT", "CLIENT"] {
        let (ours, theirs) = p.both(&[cmd, &long]);
        assert!(ours.starts_with(b"-ERR unknown subcommand 'a"), "{cmd}");
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "{cmd}"
        );
    }
    let (ours, theirs) = p.both(&["ACL", "CAT", &long]);
    assert!(ours.starts_with(b"-ERR Unknown category 'a"));
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs)
    );
    p.same(&["PING"]);
}
