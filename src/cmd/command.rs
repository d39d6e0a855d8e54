//! COMMAND and its subcommands, answered from the command table.

use super::{Argv, Ctx, Handler};
use crate::error::CmdResult;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[("command|count", count)];

fn count(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    let n = ctx.server.table.top_level().count();
    ctx.reply.int(n as i64);
    Ok(())
}
