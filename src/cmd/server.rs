//! Server commands: INFO, CONFIG, DBSIZE, FLUSHDB/FLUSHALL, TIME, SHUTDOWN,
//! LASTSAVE.

use super::{Argv, Ctx, Handler};
use crate::error::CmdResult;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[("dbsize", dbsize), ("flushall", flushall)];

fn dbsize(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let n = ctx.store.dbs[ctx.db()].len();
    ctx.reply.int(n as i64);
    Ok(())
}

fn flushall(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    for db in 0..ctx.store.dbs.len() {
        drop(ctx.store.flush_db(db));
    }
    ctx.reply.ok();
    Ok(())
}
