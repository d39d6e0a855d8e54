//! MONITOR (Redis's `monitorCommand` and `replicationFeedMonitors`): every
//! command that runs is shown to the monitoring clients as a status line,
//! `+<unix time>.<µs> [<db> <client address>|lua] "arg" ...`, after it ran
//! (EVAL and FCALL before, so a script's own commands follow them).
//! Administrative commands are not shown, and the secrets of AUTH and
//! HELLO appear as `"(redacted)"`, as the slow log shows them
//! ([`is_redacted`]). With no monitor attached this costs a length check
//! per command.

use super::client::Client;
use super::table::CommandId;
use super::ServerState;
use crate::net::request::Argv;
use crate::util::clock;
use crate::util::repr::repr;

/// True when argument `i` of command `name` is a secret, shown as
/// `(redacted)` (redactClientCommandArgument's callers: AUTH, HELLO
/// AUTH, ACL SETUSER, CONFIG SET of a sensitive parameter).
pub fn is_redacted(name: &str, argv: Argv<'_>, i: usize) -> bool {
    match name {
        // Only the forms AUTH accepts are redacted.
        "auth" => argv.len() <= 3 && i >= 1,
        "hello" => {
            let mut j = 2;
            while j < argv.len() {
                let more = argv.len() - 1 - j;
                let opt = argv.get(j);
                if opt.eq_ignore_ascii_case(b"auth") && more >= 2 {
                    if i == j + 1 || i == j + 2 {
                        return true;
                    }
                    j += 3;
                } else if opt.eq_ignore_ascii_case(b"setname") && more >= 1 {
                    j += 2;
                } else {
                    return false;
                }
            }
            false
        }
        "acl|setuser" => argv.len() >= 3 && i >= 2,
        // MIGRATE's AUTH password and AUTH2 username password, as its
        // option parser meets them (it stops at KEYS).
        "migrate" => {
            let mut j = 6;
            while j < argv.len() {
                let more = argv.len() - 1 - j;
                let opt = argv.get(j);
                if opt.eq_ignore_ascii_case(b"copy") || opt.eq_ignore_ascii_case(b"replace") {
                    j += 1;
                } else if opt.eq_ignore_ascii_case(b"auth") && more >= 1 {
                    if i == j + 1 {
                        return true;
                    }
                    j += 2;
                } else if opt.eq_ignore_ascii_case(b"auth2") && more >= 2 {
                    if i == j + 1 || i == j + 2 {
                        return true;
                    }
                    j += 3;
                } else {
                    return false;
                }
            }
            false
        }
        "config|set" => {
            i >= 3 && i % 2 == 1 && {
                let param = argv.get(i - 1);
                [&b"requirepass"[..], b"masterauth", b"masteruser"]
                    .iter()
                    .any(|p| param.eq_ignore_ascii_case(p))
            }
        }
        _ => false,
    }
}

/// The line monitors get for `argv` run by a client known as `source` in
/// database `db` at `now_us`.
fn line(now_us: u64, db: usize, source: &str, name: &str, argv: Argv<'_>) -> Vec<u8> {
    let mut s = Vec::with_capacity(
        48 + source.len() + argv.iter_from(0).map(|a| a.len() + 3).sum::<usize>(),
    );
    s.push(b'+');
    s.extend_from_slice(
        format!(
            "{}.{:06} [{db} {source}] ",
            now_us / 1_000_000,
            now_us % 1_000_000
        )
        .as_bytes(),
    );
    for i in 0..argv.len() {
        if i > 0 {
            s.push(b' ');
        }
        if is_redacted(name, argv, i) {
            s.extend_from_slice(b"\"(redacted)\"");
        } else {
            repr(argv.get(i), &mut s);
        }
    }
    s.extend_from_slice(b"\r\n");
    s
}

/// Shows command `id` run by `client` to every monitor. A monitor that
/// runs the command itself gets its line in `own`, after its reply, when
/// the command is its own (not one of EXEC's or a script's).
pub fn feed(
    server: &ServerState,
    client: &Client,
    id: CommandId,
    argv: Argv<'_>,
    own: &mut Vec<u8>,
) {
    let source = match &client.addr {
        _ if client.script => "lua".to_string(),
        crate::net::addr::PeerAddr::Unix(path) => format!("unix:{path}"),
        addr => addr.to_string(),
    };
    let name = &server.table.commands[id].name;
    let line = line(clock::real_now_us(), client.db, &source, name, argv);
    let top = server.propagation.depth == 0 && !client.script;
    for &m in &server.monitors {
        if m == client.id {
            if top {
                own.extend_from_slice(&line);
            }
        } else if let Some(c) = server.clients.get(&m) {
            super::pubsub::deliver(c, &line, &server.obuf_limits);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::request::OwnedArgv;

    fn argv(words: &[&str]) -> OwnedArgv {
        OwnedArgv::from_slices(words.iter().map(|w| w.as_bytes()))
    }

    #[test]
    fn formats_and_redacts_as_redis() {
        let a = argv(&["SET", "k", "a b\"c\n\x01"]);
        assert_eq!(
            line(1_700_000_000_000_123, 3, "127.0.0.1:5000", "set", a.argv()),
            b"+1700000000.000123 [3 127.0.0.1:5000] \"SET\" \"k\" \"a b\\\"c\\n\\x01\"\r\n"
                .to_vec()
        );
        let a = argv(&["HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"]);
        let shown: Vec<bool> = (0..7).map(|i| is_redacted("hello", a.argv(), i)).collect();
        assert_eq!(shown, [false, false, false, true, true, false, false]);
        let a = argv(&["AUTH", "a", "b", "c"]);
        assert!(!is_redacted("auth", a.argv(), 1));
        let a = argv(&["CONFIG", "SET", "maxmemory", "1", "requirepass", "x"]);
        let shown: Vec<bool> = (0..6)
            .map(|i| is_redacted("config|set", a.argv(), i))
            .collect();
        assert_eq!(shown, [false, false, false, false, false, true]);
    }
}
