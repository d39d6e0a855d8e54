//! SLOWLOG GET [count] | LEN | RESET | HELP (Redis's `slowlogCommand`);
//! the log itself is `server/slowlog.rs`, filled by the command path.

use super::args;
use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};

/// Handlers of this family.
pub(super) const COMMANDS: &[(&str, super::Handler)] = &[
    ("slowlog|get", get),
    ("slowlog|len", len),
    ("slowlog|reset", reset),
    ("slowlog|help", help),
];

const HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
];

fn help(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    super::client::write_help(ctx, HELP);
    Ok(())
}

fn len(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.int(ctx.server.slowlog.entries.len() as i64);
    Ok(())
}

fn reset(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.server.slowlog.reset();
    ctx.reply.ok();
    Ok(())
}

/// GET [count]: the newest `count` entries (10 by default, -1 for all).
fn get(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    if argv.len() > 3 {
        return Err(Error::err_owned(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
            args::lossy(argv.get(1))
        )));
    }
    let count = match argv.try_get(2) {
        None => 10,
        Some(a) => match args::int(a) {
            Ok(-1) => usize::MAX,
            Ok(n) if n >= 0 => n as usize,
            _ => return Err(Error::err("count should be greater than or equal to -1")),
        },
    };
    let entries = &ctx.server.slowlog.entries;
    let r = &mut ctx.reply;
    r.array(count.min(entries.len()));
    for e in entries.iter().take(count) {
        r.array(6);
        r.int(e.id as i64);
        r.int(e.time as i64);
        r.int(e.duration as i64);
        r.array(e.argv.len());
        for a in &e.argv {
            r.bulk(a);
        }
        r.bulk(e.peer.as_bytes());
        r.bulk(&e.name);
    }
    Ok(())
}
