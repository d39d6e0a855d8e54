//! MONITOR (Redis's `monitorCommand`): the client becomes a monitor and
//! from then on receives every command the server runs; what it receives
//! is written by `server/monitor.rs` from the command path.

use super::{Argv, Ctx};
use crate::error::{CmdResult, Error};
use crate::server::client::ClientKind;

/// Handlers of this family.
pub(super) const COMMANDS: &[(&str, super::Handler)] = &[("monitor", monitor)];

/// MONITOR: refused where a reply per command is expected (inside EXEC or
/// a script); a replica or a monitor already gets no answer.
fn monitor(ctx: &mut Ctx<'_>, _argv: Argv<'_>) -> CmdResult {
    if ctx.client.deny_blocking {
        return Err(Error::err("MONITOR isn't allowed for DENY BLOCKING client"));
    }
    if matches!(ctx.client.kind, ClientKind::Replica | ClientKind::Monitor) {
        return Ok(());
    }
    ctx.client.kind = ClientKind::Monitor;
    ctx.server.monitors.push(ctx.client.id);
    ctx.reply.ok();
    Ok(())
}
