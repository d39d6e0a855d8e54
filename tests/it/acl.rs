//! ACL users, rules and permission checks, side by side with redis-server.
//!
//! Redis lists single-command rules (`+get -set`) in its command table's
//! hash order, which changes with every process; replies are compared with
//! each run of such rules sorted.

use crate::support::{spawn_redis_with, start_with, Pair, Raw};

/// Sorts each run of single-command rules (`+cmd`, `-cmd`, not
/// categories) in every line of a reply. Rules naming ferrokv's own
/// commands (CL.THROTTLE, CLOCK), which Redis lacks, are left out, and so
/// are bulk lengths.
fn normalized(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply);
    let mut out = Vec::new();
    for line in text.split("\r\n") {
        if line.starts_with('$') {
            out.push("$".to_string());
            continue;
        }
        let own = |t: &&str| matches!(*t, "+cl.throttle" | "-cl.throttle" | "+clock" | "-clock");
        let mut tokens: Vec<&str> = line.split(' ').filter(|t| !own(t)).collect();
        let single = |t: &str| {
            (t.starts_with('+') || t.starts_with('-')) && !t[1..].starts_with('@') && t.len() > 1
        };
        let mut i = 0;
        while i < tokens.len() {
            if single(tokens[i]) {
                let start = i;
                while i < tokens.len() && single(tokens[i]) {
                    i += 1;
                }
                tokens[start..i].sort_unstable();
            } else {
                i += 1;
            }
        }
        out.push(tokens.join(" "));
    }
    out.join("\r\n")
}

/// Sends `args` to both and compares the normalized replies.
fn same_rules(p: &mut Pair, args: &[&str]) -> String {
    let (ours, theirs) = p.both(args);
    let (ours, theirs) = (normalized(&ours), normalized(&theirs));
    assert_eq!(ours, theirs, "reply differs for {args:?}");
    ours
}

/// Runs each command through [`same_rules`].
fn same_all(p: &mut Pair, cmds: &[&[&str]]) {
    for c in cmds {
        same_rules(p, c);
    }
}

/// A restricted user with every kind of rule.
const ALICE: &[&str] = &[
    "ACL",
    "SETUSER",
    "alice",
    "on",
    ">p1",
    "~app:*",
    "%R~ro:*",
    "%W~wo:*",
    "&news*",
    "-@all",
    "+@read",
    "+@write",
    "-flushall",
    "+client|list",
    "+select|0",
    "+publish",
    "+subscribe",
    "+psubscribe",
];

#[test]
fn setuser_rules_and_their_errors_match_redis() {
    let mut p = Pair::new();
    same_all(
        &mut p,
        &[
            ALICE,
            &["ACL", "GETUSER", "alice"],
            &["ACL", "SETUSER", "bob"],
            &[
                "ACL",
                "SETUSER",
                "carol",
                "on",
                "nopass",
                "allkeys",
                "allchannels",
                "+@all",
                "-@dangerous",
            ],
            &[
                "ACL",
                "SETUSER",
                "dave",
                "on",
                ">x",
                "(~z* +zadd)",
                "(%W~w*",
                "+set)",
            ],
            &["ACL", "SETUSER", "eve", "on", "#aaa"],
            &[
                "ACL",
                "SETUSER",
                "eve",
                "#0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "!0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            ],
            &["ACL", "SETUSER", "eve", "<nope"],
            &["ACL", "SETUSER", "eve", "+nosuch"],
            &["ACL", "SETUSER", "eve", "+@nosuch"],
            &["ACL", "SETUSER", "eve", "~*", "~a"],
            &["ACL", "SETUSER", "eve", "&*", "&a"],
            &["ACL", "SETUSER", "eve", "+config|get|x"],
            &["ACL", "SETUSER", "eve", "+select|"],
            &["ACL", "SETUSER", "eve", "+client|nosuch"],
            &["ACL", "SETUSER", "eve", "-select|0"],
            &["ACL", "SETUSER", "eve", "(+get", "~x"],
            &["ACL", "SETUSER", "eve", "foo"],
            &["ACL", "SETUSER", "eve", "~a b"],
            &["ACL", "SETUSER", "a b"],
            &[
                "ACL",
                "SETUSER",
                "frank",
                "on",
                "resetchannels",
                "+@all",
                "-@all",
                "+get",
                "reset",
            ],
            &[
                "ACL", "SETUSER", "gina", "%RW~k*", "%R~k*", "%r~l*", "%W~m*",
            ],
            &["ACL", "SETUSER", "gina", "%X~a"],
            &["ACL", "SETUSER", "gina", "%RR~a"],
            &["ACL", "SETUSER", "gina", "%R"],
            &["ACL", "SETUSER", "h1", "on", "-@all", "+@all", "-get"],
            &["ACL", "SETUSER", "h2", "on", "+@read", "+@hash", "-hgetall"],
            &[
                "ACL",
                "SETUSER",
                "h3",
                "on",
                "-@all",
                "+@set",
                "+@sortedset",
                "+@list",
                "-lpush",
                "+debug",
                "+config|get",
            ],
            &[
                "ACL",
                "SETUSER",
                "h4",
                "on",
                "+@all",
                "-config",
                "+config|get",
                "-client|kill",
            ],
            &[
                "ACL",
                "SETUSER",
                "h5",
                "on",
                "skip-sanitize-payload",
                "+@all",
                "clearselectors",
                "(+get ~x)",
                "clearselectors",
            ],
            &[
                "ACL",
                "SETUSER",
                "h6",
                "on",
                "sanitize-payload",
                "ALLCOMMANDS",
                "ALLKEYS",
                "NOCOMMANDS",
                "RESETKEYS",
                "~x",
                ">a",
                ">a",
                ">b",
                "<a",
            ],
            &["ACL", "SETUSER", "h7", "", "on"],
            &["ACL", "LIST"],
            &["ACL", "USERS"],
            &["ACL", "GETUSER", "dave"],
            &["ACL", "GETUSER", "h6"],
            &["ACL", "GETUSER", "nobody"],
            &["ACL", "DELUSER", "default"],
            &["ACL", "DELUSER", "bob", "nobody", "bob"],
            &["ACL", "USERS"],
            &["ACL", "WHOAMI"],
        ],
    );
    p.both(&["HELLO", "3"]);
    same_all(
        &mut p,
        &[
            &["ACL", "GETUSER", "alice"],
            &["ACL", "GETUSER", "dave"],
            &["ACL", "GETUSER", "nobody"],
            &["ACL", "LIST"],
        ],
    );
}

#[test]
fn cat_genpass_dryrun_load_save_and_help_match_redis() {
    let mut p = Pair::new();
    same_all(
        &mut p,
        &[
            ALICE,
            &[
                "ACL",
                "SETUSER",
                "dave",
                "on",
                ">x",
                "(~z* +zadd)",
                "(%W~w* +set)",
            ],
            &["ACL", "CAT"],
            &["ACL", "CAT", "nosuch"],
            &["ACL", "CAT", "a", "b"],
            &["ACL", "GENPASS", "0"],
            &["ACL", "GENPASS", "5000"],
            &["ACL", "GENPASS", "x"],
            &["ACL", "GENPASS", "1", "2"],
            &["ACL", "DRYRUN", "alice", "get", "app:1"],
            &["ACL", "DRYRUN", "alice", "get", "other"],
            &["ACL", "DRYRUN", "alice", "set", "ro:1", "v"],
            &["ACL", "DRYRUN", "alice", "get", "ro:1"],
            &["ACL", "DRYRUN", "alice", "get", "wo:1"],
            &["ACL", "DRYRUN", "alice", "set", "wo:1", "x"],
            &["ACL", "DRYRUN", "alice", "exists", "wo:1"],
            &["ACL", "DRYRUN", "alice", "mset", "app:1", "x", "zz", "y"],
            &["ACL", "DRYRUN", "alice", "flushall"],
            &["ACL", "DRYRUN", "alice", "publish", "news1", "x"],
            &["ACL", "DRYRUN", "alice", "publish", "other", "x"],
            &["ACL", "DRYRUN", "alice", "subscribe", "news1", "other"],
            &["ACL", "DRYRUN", "alice", "psubscribe", "news*"],
            &["ACL", "DRYRUN", "alice", "psubscribe", "news1*"],
            &["ACL", "DRYRUN", "alice", "client", "list"],
            &["ACL", "DRYRUN", "alice", "client", "info"],
            &["ACL", "DRYRUN", "alice", "client", "nosuch"],
            &["ACL", "DRYRUN", "alice", "select", "0"],
            &["ACL", "DRYRUN", "alice", "select", "1"],
            &["ACL", "DRYRUN", "alice", "auth", "x"],
            &["ACL", "DRYRUN", "nobody", "get", "x"],
            &["ACL", "DRYRUN", "alice", "nosuch"],
            &["ACL", "DRYRUN", "alice", "get"],
            &["ACL", "DRYRUN", "alice", "sort", "app:1", "store", "zz"],
            &["ACL", "DRYRUN", "alice", "eval", "return 1", "1", "zz"],
            &["ACL", "DRYRUN", "alice", "eval", "return 1", "9", "zz"],
            &["ACL", "DRYRUN", "dave", "zadd", "zz", "1", "a"],
            &["ACL", "DRYRUN", "dave", "set", "ww", "1"],
            &["ACL", "DRYRUN", "dave", "get", "ww"],
            &["ACL", "DRYRUN", "dave", "set", "zz", "1"],
            &["ACL", "LOAD"],
            &["ACL", "SAVE"],
            &["ACL", "LOG", "x"],
            &["ACL", "LOG", "-1"],
            &["ACL", "LOG", "1", "2"],
            &["ACL", "HELP"],
            &["ACL", "FOO"],
            &["ACL"],
            &["ACL", "WHOAMI", "x"],
        ],
    );
    for cat in ferrokv::server::acl::universe::CATEGORIES {
        let (ours, theirs) = p.both(&["ACL", "CAT", cat]);
        // ferrokv's own commands are in their categories too.
        let mut ours: Vec<String> = lines(&ours)
            .into_iter()
            .filter(|c| c != "cl.throttle" && c != "clock")
            .collect();
        let mut theirs = lines(&theirs);
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs, "ACL CAT {cat}");
    }
    let (ours, _) = p.both(&["ACL", "GENPASS"]);
    assert_eq!(&ours[..5], b"$64\r\n");
    let (ours, _) = p.both(&["ACL", "GENPASS", "5"]);
    assert_eq!(&ours[..4], b"$2\r\n");
}

/// The bulk strings of a flat array reply.
fn lines(reply: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(reply)
        .split("\r\n")
        .filter(|l| !l.is_empty() && !l.starts_with('$') && !l.starts_with('*'))
        .map(str::to_string)
        .collect()
}

/// Connects to both servers as `user`.
fn login(p: &Pair, user: &str, pass: &str) -> (Raw, Raw) {
    let (mut a, mut b) = p.connect_again();
    assert_eq!(a.cmd_str(&["AUTH", user, pass]), b"+OK\r\n");
    assert_eq!(b.cmd_str(&["AUTH", user, pass]), b"+OK\r\n");
    (a, b)
}

/// Sends to both connections and asserts the replies are identical.
fn same_on(a: &mut Raw, b: &mut Raw, args: &[&str]) -> Vec<u8> {
    let (x, y) = (a.cmd_str(args), b.cmd_str(args));
    assert_eq!(
        String::from_utf8_lossy(&x),
        String::from_utf8_lossy(&y),
        "reply differs for {args:?}"
    );
    x
}

#[test]
fn restricted_users_are_refused_where_redis_refuses() {
    let mut p = Pair::new();
    same_all(
        &mut p,
        &[
            &[
                "ACL",
                "SETUSER",
                "app",
                "on",
                ">pw",
                "~app:*",
                "%R~shared:*",
                "&chat:*",
                "-@all",
                "+@read",
                "+@write",
                "+@connection",
                "+@transaction",
                "+@pubsub",
                "+eval",
                "+evalsha",
                "+fcall",
                "+select|0",
                "-info",
            ],
            &["SET", "shared:1", "s"],
            &["FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('getk', function(keys) return redis.call('get', keys[1]) end)\nredis.register_function('wipe', function() return redis.call('flushall') end)"],
        ],
    );
    let (mut a, mut b) = login(&p, "app", "pw");
    for cmd in [
        &["FCALL", "getk", "1", "app:1"][..],
        &["FCALL", "getk", "1", "other"],
        &["FCALL", "wipe", "0"],
        &["FUNCTION", "FLUSH"],
    ] {
        same_on(&mut a, &mut b, cmd);
    }
    for cmd in [
        &["SET", "app:1", "v"][..],
        &["GET", "app:1"],
        &["GET", "shared:1"],
        &["SET", "shared:1", "x"],
        &["GET", "other"],
        &["MSET", "app:2", "a", "other", "b"],
        &["MGET", "app:1", "app:2"],
        &["FLUSHALL"],
        &["INFO"],
        &["CONFIG", "GET", "port"],
        &["SELECT", "0"],
        &["SELECT", "1"],
        &["PUBLISH", "chat:1", "hi"],
        &["PUBLISH", "news", "hi"],
        &["ACL", "WHOAMI"],
        &["ACL", "LIST"],
        &["PING"],
        &["COPY", "shared:1", "app:copy"],
        &["COPY", "app:1", "shared:copy"],
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "app:1"],
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "other"],
        &["EVAL", "return redis.call('get', 'other')", "0"],
        &["EVAL", "return redis.call('flushall')", "0"],
        &["EVAL", "return redis.pcall('set', 'shared:1', 'x')", "0"],
        &["EVAL", "return redis.pcall('publish', 'news', 'x')", "0"],
        &["MULTI"],
        &["SET", "app:3", "v"],
        &["FLUSHALL"],
        &["EXEC"],
        &["MULTI"],
        &["GET", "app:1"],
        &["GET", "other"],
        &["EXEC"],
        &["SUBSCRIBE", "news"],
        &["PSUBSCRIBE", "chat:*"],
    ] {
        same_on(&mut a, &mut b, cmd);
    }
    // Permissions change between MULTI and EXEC.
    same_on(&mut a, &mut b, &["MULTI"]);
    same_on(&mut a, &mut b, &["SET", "app:4", "v"]);
    same_on(&mut a, &mut b, &["GET", "app:4"]);
    p.same(&["ACL", "SETUSER", "app", "-set"]);
    same_on(&mut a, &mut b, &["EXEC"]);
    p.same(&["ACL", "SETUSER", "app", "resetkeys", "~x"]);
    same_on(&mut a, &mut b, &["MULTI"]);
    same_on(&mut a, &mut b, &["GET", "x"]);
    p.same(&["ACL", "SETUSER", "app", "resetkeys"]);
    same_on(&mut a, &mut b, &["EXEC"]);
    same_on(&mut a, &mut b, &["RESET"]);
    same_on(&mut a, &mut b, &["ACL", "WHOAMI"]);
    // The log: newest first, its fields as Redis writes them.
    let (ours, theirs) = p.both(&["ACL", "LOG"]);
    assert_eq!(masked_log(&ours), masked_log(&theirs));
    p.same(&["ACL", "LOG", "RESET"]);
    p.same(&["ACL", "LOG"]);
}

/// An ACL LOG reply with its age and client info masked, as they differ
/// between any two servers.
fn masked_log(reply: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(reply);
    let lines: Vec<&str> = text.split("\r\n").collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l == "age-seconds" || l == "client-info" {
            out.push(l.to_string());
            // Skip the length line and the value.
            i += 3;
            out.push("<masked>".into());
            continue;
        }
        out.push(l.to_string());
        i += 1;
    }
    out
}

/// An ACL LOG reply with the fields that differ between any two
/// connections masked: the entry's age, and the client info's addresses,
/// descriptor, age and allocation sizes. What the client info says of the
/// refused command (`cmd=`, `qbuf=`, `argv-mem=`, flags, user) stays.
fn log_with_client_info(reply: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(reply);
    let mut out = Vec::new();
    let mut lines = text.split("\r\n").peekable();
    while let Some(l) = lines.next() {
        if l == "age-seconds" {
            lines.next();
            lines.next();
            continue;
        }
        if l.starts_with('$') && lines.peek().is_some_and(|v| v.starts_with("id=")) {
            continue;
        }
        let masked = ["addr=", "laddr=", "fd=", "age=", "qbuf-free=", "tot-mem="];
        let kept: Vec<&str> = l
            .split(' ')
            .filter(|f| !masked.iter().any(|m| f.starts_with(m)))
            .collect();
        out.push(kept.join(" "));
    }
    out
}

#[test]
fn acl_log_client_info_describes_the_refused_command() {
    let mut p = Pair::new();
    for c in [
        &["CLIENT", "SETNAME", "me"][..],
        &[
            "ACL", "SETUSER", "u", "on", ">p", "+get", "+eval", "+fcall", "+multi", "+exec", "~k*",
            "&ch",
        ],
        &["AUTH", "u", "bad"],
        &["AUTH", "u", "p"],
        &["SET", "k", "v"],
        &["GET", "x"],
        &["EVAL", "return redis.call('get','x')", "0"],
        &["EVAL", "return redis.call('set','k','v')", "0"],
        &["MULTI"],
        &["GET", "zz"],
        &["EXEC"],
        &["PUBLISH", "x", "y"],
        &["HELLO", "3", "AUTH", "u", "wrong"],
        &["AUTH", "default", "x"],
    ] {
        p.same(c);
    }
    let (ours, theirs) = p.both(&["ACL", "LOG"]);
    let ours = log_with_client_info(&ours);
    assert!(ours.iter().any(|l| l.contains("cmd=eval")), "{ours:?}");
    assert_eq!(ours, log_with_client_info(&theirs));
}

#[test]
fn auth_and_hello_with_usernames() {
    let mut p = Pair::new();
    same_all(
        &mut p,
        &[
            &["ACL", "SETUSER", "u1", "on", ">secret", "+@all", "~*"],
            &["ACL", "SETUSER", "off1", "off", ">secret", "+@all", "~*"],
            &["ACL", "SETUSER", "free", "on", "nopass", "+acl"],
            &["AUTH", "secret"],
            &["AUTH", "u1", "wrong"],
            &["AUTH", "off1", "secret"],
            &["AUTH", "nobody", "x"],
            &["AUTH", "a", "b", "c"],
            &["HELLO", "2", "AUTH", "u1", "wrong"],
        ],
    );
    // HELLO's reply holds the connection id.
    let (ours, theirs) = p.both(&["HELLO", "2", "AUTH", "u1", "secret", "SETNAME", "me"]);
    assert_eq!(ours[..40], theirs[..40]);
    same_all(
        &mut p,
        &[
            &["ACL", "WHOAMI"],
            &["AUTH", "free", "anything"],
            &["ACL", "WHOAMI"],
            &["GET", "x"],
            &["AUTH", "default", "whatever"],
            &["ACL", "WHOAMI"],
        ],
    );
    let (ours, theirs) = p.both(&["ACL", "LOG"]);
    assert_eq!(masked_log(&ours), masked_log(&theirs));
    // requirepass is the default user's password.
    same_all(
        &mut p,
        &[
            &["CONFIG", "SET", "requirepass", "pw"],
            &["ACL", "LIST"],
            &["ACL", "GETUSER", "default"],
        ],
    );
    let (mut a, mut b) = p.connect_again();
    same_on(&mut a, &mut b, &["GET", "x"]);
    same_on(&mut a, &mut b, &["ACL", "WHOAMI"]);
    same_on(&mut a, &mut b, &["AUTH", "pw"]);
    same_on(&mut a, &mut b, &["ACL", "WHOAMI"]);
    // A client that never authenticated may run commands once the password
    // is gone, but HELLO still wants it authenticated (Redis's
    // authRequired and helloCommand).
    let (mut c, mut d) = p.connect_again();
    same_on(&mut c, &mut d, &["GET", "x"]);
    same_on(&mut a, &mut b, &["CONFIG", "SET", "requirepass", ""]);
    same_on(&mut c, &mut d, &["GET", "x"]);
    same_on(&mut c, &mut d, &["HELLO", "2"]);
    let (mut a, mut b) = p.connect_again();
    same_on(&mut a, &mut b, &["ACL", "WHOAMI"]);
    same_on(&mut a, &mut b, &["AUTH", "x"]);
}

#[test]
fn deleting_a_user_disconnects_its_clients() {
    let mut p = Pair::new();
    p.same(&["ACL", "SETUSER", "gone", "on", ">pw", "+@all", "~*"]);
    let (mut a, mut b) = login(&p, "gone", "pw");
    same_on(&mut a, &mut b, &["CLIENT", "SETNAME", "victim"]);
    let (ours, theirs) = p.both(&["CLIENT", "LIST"]);
    for list in [&ours, &theirs] {
        assert!(String::from_utf8_lossy(list).contains("name=victim"));
        assert!(String::from_utf8_lossy(list).contains("user=gone"));
    }
    p.same(&["CLIENT", "KILL", "USER", "nobody"]);
    p.same(&["ACL", "DELUSER", "gone"]);
    assert!(a.is_closed());
    assert!(b.is_closed());
    // A user deleting itself gets its reply, then the connection closes.
    p.same(&["ACL", "SETUSER", "self", "on", ">pw", "+@all", "~*"]);
    let (mut a, mut b) = login(&p, "self", "pw");
    same_on(&mut a, &mut b, &["ACL", "DELUSER", "self"]);
    assert!(a.is_closed());
    assert!(b.is_closed());
    // CLIENT KILL USER.
    p.same(&["ACL", "SETUSER", "k", "on", ">pw", "+@all", "~*"]);
    let (mut a, mut b) = login(&p, "k", "pw");
    p.same(&["CLIENT", "KILL", "USER", "k"]);
    assert!(a.is_closed());
    assert!(b.is_closed());
    // Losing a channel disconnects the user's subscribers to it.
    p.same(&[
        "ACL",
        "SETUSER",
        "sub",
        "on",
        ">pw",
        "+@all",
        "~*",
        "resetchannels",
        "&a",
        "&b",
    ]);
    let (mut a, mut b) = login(&p, "sub", "pw");
    same_on(&mut a, &mut b, &["SUBSCRIBE", "a"]);
    p.same(&["ACL", "SETUSER", "sub", "&c"]);
    same_on(&mut a, &mut b, &["PING"]);
    p.same(&["ACL", "SETUSER", "sub", "resetchannels", "&b"]);
    assert!(a.is_closed());
    assert!(b.is_closed());
}

#[test]
fn acl_file_load_save_and_config_users() {
    let dir = crate::support::unique_temp_path("aclfile");
    std::fs::create_dir_all(&dir).expect("dir");
    let ours_file = dir.join("ours.acl");
    let theirs_file = dir.join("theirs.acl");
    let content = "user alice on #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~app:* resetchannels -@all +get\nuser default on nopass ~* &* +@all\n";
    std::fs::write(&ours_file, content).expect("write");
    std::fs::write(&theirs_file, content).expect("write");
    let ours_path = ours_file.display().to_string();
    let theirs_path = theirs_file.display().to_string();
    let server = start_with(|c| {
        let (param, _) = ferrokv::config::params::lookup(b"aclfile").expect("aclfile parameter");
        c.set_value(param, ours_path.as_bytes()).expect("aclfile");
    });
    let redis = spawn_redis_with(&["--aclfile", &theirs_path]);
    let (mut a, mut b) = (server.raw(), Raw::connect(redis.port));
    same_on(&mut a, &mut b, &["ACL", "LIST"]);
    same_on(&mut a, &mut b, &["AUTH", "alice", "secret"]);
    same_on(&mut a, &mut b, &["GET", "app:1"]);
    same_on(&mut a, &mut b, &["AUTH", "default", "x"]);
    same_on(
        &mut a,
        &mut b,
        &["ACL", "SETUSER", "bob", "on", ">b", "~b*", "+@string"],
    );
    same_on(&mut a, &mut b, &["ACL", "SAVE"]);
    let saved_ours = std::fs::read_to_string(&ours_file).expect("read");
    let saved_theirs = std::fs::read_to_string(&theirs_file).expect("read");
    assert_eq!(
        normalized(saved_ours.as_bytes()),
        normalized(saved_theirs.as_bytes())
    );
    // A restart reads the saved users back.
    let restarted = start_with(|c| {
        let (param, _) = ferrokv::config::params::lookup(b"aclfile").expect("aclfile parameter");
        c.set_value(param, ours_path.as_bytes()).expect("aclfile");
    });
    let mut r = restarted.raw();
    assert_eq!(
        r.cmd_str(&["ACL", "USERS"]),
        b"*3\r\n$5\r\nalice\r\n$3\r\nbob\r\n$7\r\ndefault\r\n"
    );
    assert_eq!(r.cmd_str(&["AUTH", "bob", "b"]), b"+OK\r\n");
    drop(restarted);
    // A broken file changes nothing and names every problem.
    let broken =
        "user carol on +nosuch ~x\nnotuser x\nuser carol on\nuser dan on ~* ~a\nuser eve (+get\n";
    std::fs::write(&ours_file, broken).expect("write");
    std::fs::write(&theirs_file, broken).expect("write");
    let (ours, theirs) = (a.cmd_str(&["ACL", "LOAD"]), b.cmd_str(&["ACL", "LOAD"]));
    assert_eq!(
        String::from_utf8_lossy(&ours).replace(&ours_path, "PATH"),
        String::from_utf8_lossy(&theirs).replace(&theirs_path, "PATH")
    );
    same_on(&mut a, &mut b, &["ACL", "USERS"]);
    // A good file replaces the users; their clients are disconnected.
    let (mut a2, mut b2) = (server.raw(), Raw::connect(redis.port));
    same_on(&mut a2, &mut b2, &["AUTH", "bob", "b"]);
    std::fs::write(&ours_file, content).expect("write");
    std::fs::write(&theirs_file, content).expect("write");
    same_on(&mut a, &mut b, &["ACL", "LOAD"]);
    same_on(&mut a, &mut b, &["ACL", "LIST"]);
    assert!(a2.is_closed());
    assert!(b2.is_closed());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn users_from_config_lines() {
    let p = Pair::new_with(
        |c| {
            c.users = vec![
                ["worker", "on", ">w", "~queue:*", "+@list", "+@connection"]
                    .iter()
                    .map(|s| s.as_bytes().to_vec())
                    .collect(),
                ["default", "on", ">admin", "+@all", "~*"]
                    .iter()
                    .map(|s| s.as_bytes().to_vec())
                    .collect(),
            ];
        },
        &[
            "--user",
            "worker",
            "on",
            ">w",
            "~queue:*",
            "+@list",
            "+@connection",
            "--user",
            "default",
            "on",
            ">admin",
            "+@all",
            "~*",
        ],
    );
    let (mut a, mut b) = p.connect_again();
    same_on(&mut a, &mut b, &["PING"]);
    same_on(&mut a, &mut b, &["AUTH", "worker", "w"]);
    same_on(&mut a, &mut b, &["LPUSH", "queue:1", "job"]);
    same_on(&mut a, &mut b, &["LPUSH", "other", "job"]);
    same_on(&mut a, &mut b, &["SET", "queue:2", "x"]);
    same_on(&mut a, &mut b, &["AUTH", "admin"]);
    let (ours, theirs) = (a.cmd_str(&["ACL", "LIST"]), b.cmd_str(&["ACL", "LIST"]));
    assert_eq!(normalized(&ours), normalized(&theirs));
}

/// Runs redis-cli against `port` with `args` and returns what it printed.
fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn redis_cli_with_user_and_pass() {
    let mut p = Pair::new();
    p.same(&[
        "ACL",
        "SETUSER",
        "ops",
        "on",
        ">opspw",
        "~*",
        "+@read",
        "+acl|whoami",
    ]);
    let (ours, theirs) = p.ports();
    for args in [
        &[
            "--user",
            "ops",
            "--pass",
            "opspw",
            "--no-auth-warning",
            "ACL",
            "WHOAMI",
        ][..],
        &[
            "--user",
            "ops",
            "--pass",
            "opspw",
            "--no-auth-warning",
            "SET",
            "k",
            "v",
        ],
        &[
            "--user",
            "ops",
            "--pass",
            "opspw",
            "--no-auth-warning",
            "GET",
            "k",
        ],
        &[
            "--user",
            "ops",
            "--pass",
            "bad",
            "--no-auth-warning",
            "GET",
            "k",
        ],
        &[
            "--user",
            "nobody",
            "--pass",
            "x",
            "--no-auth-warning",
            "PING",
        ],
    ] {
        let (a, b) = (redis_cli(ours, args), redis_cli(theirs, args));
        assert_eq!(a, b, "redis-cli {args:?}");
    }
    assert_eq!(
        redis_cli(
            ours,
            &[
                "--user",
                "ops",
                "--pass",
                "opspw",
                "--no-auth-warning",
                "ACL",
                "WHOAMI"
            ]
        ),
        "ops\n"
    );
}

#[test]
fn acl_pubsub_default_allchannels_gives_new_users_every_channel() {
    let mut p = Pair::new();
    same_all(
        &mut p,
        &[
            &["ACL", "SETUSER", "before"],
            &["CONFIG", "SET", "acl-pubsub-default", "allchannels"],
            &["ACL", "SETUSER", "after"],
            &["ACL", "SETUSER", "after2", "reset"],
            &["ACL", "SETUSER", "after3", "(+get)"],
            &["ACL", "LIST"],
        ],
    );
}

/// Random ACL SETUSER sequences: every reply, ACL LIST's descriptions and
/// DRYRUN's verdicts as Redis gives them.
#[test]
fn random_rule_sequences_match_redis() {
    use proptest::prelude::*;
    const RULES: &[&str] = &[
        "on",
        "off",
        "nopass",
        "resetpass",
        ">pw",
        "<pw",
        ">other",
        "#5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
        "!5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
        "~k*",
        "%R~r*",
        "%W~w*",
        "%RW~x",
        "allkeys",
        "resetkeys",
        "~*",
        "&c*",
        "allchannels",
        "resetchannels",
        "&*",
        "+get",
        "-get",
        "+set",
        "-set",
        "+@read",
        "-@read",
        "+@write",
        "-@write",
        "+@string",
        "-@string",
        "+@hash",
        "-@list",
        "+@all",
        "-@all",
        "+client|list",
        "-client",
        "+client",
        "+config|get",
        "-config|set",
        "+select|0",
        "+select|1",
        "+debug",
        "-flushall",
        "nocommands",
        "allcommands",
        "(+get ~s*)",
        "(%R~r* +@read)",
        "(&c* +publish)",
        "clearselectors",
        "reset",
        "+@dangerous",
        "-@keyspace",
        "+@admin",
        "+@pubsub",
        "-@slow",
        "+@fast",
        "+@scripting",
        "-@connection",
        "+@geo",
        "+@stream",
        "+@sortedset",
        "+@set",
        "-@bitmap",
        "+@hyperloglog",
        "+@transaction",
        "+@blocking",
        "sanitize-payload",
        "skip-sanitize-payload",
        "+nosuch",
        "~a b",
        "",
    ];
    const PROBES: &[&[&str]] = &[
        &["get", "k1"],
        &["set", "w1", "v"],
        &["get", "r1"],
        &["set", "r1", "v"],
        &["get", "s1"],
        &["publish", "c1", "m"],
        &["publish", "d1", "m"],
        &["subscribe", "c1", "d1"],
        &["psubscribe", "c*"],
        &["flushall"],
        &["client", "list"],
        &["client", "kill", "id", "1"],
        &["select", "0"],
        &["select", "1"],
        &["config", "get", "port"],
        &["config", "set", "port", "1"],
        &["mget", "k1", "r1"],
        &["lpush", "w2", "x"],
        &["hset", "x", "f", "v"],
        &["ping"],
    ];
    let rule = proptest::sample::select(RULES);
    let user = proptest::sample::select(&["u1", "u2"][..]);
    let setuser = (user.clone(), proptest::collection::vec(rule, 1..6)).prop_map(|(u, rules)| {
        let mut c = vec!["ACL".to_string(), "SETUSER".into(), u.to_string()];
        c.extend(rules.iter().map(|r| r.to_string()));
        c
    });
    let dryrun = (user.clone(), proptest::sample::select(PROBES)).prop_map(|(u, probe)| {
        let mut c = vec!["ACL".to_string(), "DRYRUN".into(), u.to_string()];
        c.extend(probe.iter().map(|a| a.to_string()));
        c
    });
    let getuser = user.prop_map(|u| vec!["ACL".into(), "GETUSER".into(), u.to_string()]);
    let list = Just(vec!["ACL".to_string(), "LIST".into()]);
    let cmd = prop_oneof![4 => setuser, 3 => dryrun, 1 => getuser, 1 => list];
    let sequences = proptest::collection::vec(cmd, 1..12).prop_map(|mut cmds| {
        cmds.insert(
            0,
            vec!["ACL".into(), "DELUSER".into(), "u1".into(), "u2".into()],
        );
        cmds
    });
    crate::support::same_random_sequences_by(Pair::new(), 300, sequences, |_, reply| {
        normalized(reply)
    });
}

/// MIGRATE's keys (after KEYS, past AUTH and AUTH2 values) and SORT's BY
/// and GET patterns, which read keys no argument names, are checked as
/// Redis checks them.
#[test]
fn migrate_keys_and_sort_patterns_are_checked_as_redis() {
    let mut p = Pair::new();
    same_all(
        &mut p,
        &[
            &[
                "ACL",
                "SETUSER",
                "odd",
                "on",
                "nopass",
                "+@all",
                "%R~read*",
                "%W~write*",
                "%RW~rw*",
            ],
            &[
                "ACL", "SETUSER", "sorter", "on", "nopass", "+sort", "~mylist",
            ],
            &[
                "ACL", "SETUSER", "reader", "on", "nopass", "+sort", "~mylist", "%R~*",
            ],
            &[
                "ACL",
                "SETUSER",
                "sel",
                "on",
                "nopass",
                "(+sort ~mylist %W~*)",
                "(+sort %R~*)",
            ],
            &["RPUSH", "mylist", "1", "2"],
            &["SET", "v1", "9"],
        ],
    );
    let migrate = |tail: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["MIGRATE", "h", "1"];
        v.extend_from_slice(tail);
        v
    };
    for tail in [
        &["rw", "0", "500"][..],
        &["read", "0", "500"],
        &["write", "0", "500"],
        &["", "0", "500", "KEYS", "rw", "read"],
        &["", "0", "500", "KEYS", "write"],
        &["", "0", "500", "AUTH", "KEYS", "KEYS", "read"],
        &["", "0", "500", "AUTH2", "KEYS", "123", "KEYS", "write"],
        &["", "0", "500", "AUTH2", "USER", "KEYS", "KEYS", "rw"],
        &["", "0", "500", "COPY", "REPLACE", "KEYS", "rw", "read"],
        &["rw", "0", "500", "KEYS", "read"],
        &["", "0", "500", "KEYS"],
    ] {
        let mut dry = vec!["ACL", "DRYRUN", "odd"];
        dry.extend(migrate(tail));
        p.same(&dry);
        let mut keys = vec!["COMMAND", "GETKEYS"];
        keys.extend(migrate(tail));
        p.same(&keys);
    }
    for user in ["sorter", "reader", "sel", "default"] {
        let (mut a, mut b) = login(&p, user, "x");
        for args in [
            &["SORT", "mylist"][..],
            &["SORT", "mylist", "BY", "v*"],
            &["SORT", "mylist", "BY", "nosort"],
            &["SORT", "mylist", "GET", "v*"],
            &["SORT", "mylist", "GET", "#"],
            &["SORT_RO", "mylist", "BY", "v*", "GET", "v*"],
            &["SORT", "mylist", "LIMIT", "0", "1", "BY", "v*"],
        ] {
            same_on(&mut a, &mut b, args);
        }
    }
}
