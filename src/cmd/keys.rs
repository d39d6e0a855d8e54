//! Keyspace commands (Redis's `db.c` and the command half of `expire.c`):
//! DEL, EXISTS, TYPE, RENAME, SCAN, EXPIRE and friends.

use super::{Argv, Ctx, Handler};
use crate::error::CmdResult;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[("del", del), ("exists", exists)];

fn del(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let n = argv
        .iter_from(1)
        .filter(|k| ctx.store.remove(db, k).is_some())
        .count();
    ctx.reply.int(n as i64);
    Ok(())
}

fn exists(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let db = ctx.db();
    let n = argv
        .iter_from(1)
        .filter(|k| ctx.store.get_read(db, k).is_some())
        .count();
    ctx.reply.int(n as i64);
    Ok(())
}
