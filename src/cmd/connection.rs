//! Connection commands: PING, ECHO, QUIT, SELECT, HELLO, AUTH, CLIENT...

use super::args;
use super::{Argv, Ctx, Handler};
use crate::error::{CmdResult, Error};

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[
    ("ping", ping),
    ("echo", echo),
    ("quit", quit),
    ("select", select),
];

fn ping(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    match argv.len() {
        1 => ctx.reply.simple("PONG"),
        2 => ctx.reply.bulk(argv.get(1)),
        _ => return Err(Error::WrongArity("ping".into())),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    ctx.reply.bulk(argv.get(1));
    Ok(())
}

fn quit(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    ctx.reply.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn select(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = args::db_index(argv.get(1), ctx.store.dbs.len())?;
    ctx.client.db = db;
    ctx.reply.ok();
    Ok(())
}
